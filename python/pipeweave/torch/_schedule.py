"""`schedule`: PyTorch's own `_PipelineScheduleRuntime` with a pipeweave plan loaded from memory.

PyTorch 2.15 reads a schedule from a CSV file (`_PipelineScheduleRuntime._load_csv`): each cell
becomes an `_Action` (`_Action.from_str`), the compute-only rows go to `pipeline_order` and through
`_validate_and_set_stage_mapping`, then `_prepare_schedule_with_comms` lowers them (compute_only)
or takes the rows as they are (compute_comms). `schedule` builds the same `_Action`s from the
plan's cells and makes the same calls, so no file is involved.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.distributed.pipelining.schedules import _Action, _ComputationType, _PipelineScheduleRuntime

_COMPUTE = {
    "F": _ComputationType.FORWARD,
    "B": _ComputationType.FULL_BACKWARD,
    "I": _ComputationType.BACKWARD_INPUT,
    "W": _ComputationType.BACKWARD_WEIGHT,
}
_TRANSFER = {
    ("recv", "fwd"): _ComputationType.RECV_F,
    ("recv", "bwd"): _ComputationType.RECV_B,
    ("send", "fwd"): _ComputationType.SEND_F,
    ("send", "bwd"): _ComputationType.SEND_B,
    ("wait_send", "fwd"): _ComputationType.WAIT_SEND_F,
    ("wait_send", "bwd"): _ComputationType.WAIT_SEND_B,
}
_REDUCE = {
    "reduce_grad": _ComputationType.REDUCE_GRAD,
    "wait_reduce_grad": _ComputationType.WAIT_REDUCE_GRAD,
}


def schedule(
    plan: Any,
    stages: list[Any],
    loss_fn: Callable[[Any, Any], Any] | None = None,
    scale_grads: bool = True,
    *,
    format: str = "compute_only",
    **runtime_options: Any,
) -> _PipelineScheduleRuntime:
    """PyTorch's `_PipelineScheduleRuntime` for this rank's `stages`, running `plan`.

    `stages` are the rank's `PipelineStage`s, as for any PyTorch schedule; `loss_fn` and
    `scale_grads` are PyTorch's. With `format="compute_only"` (the default) PyTorch lowers the
    plan's compute actions itself, as it does for the CSV torchtitan loads; with
    `format="compute_comms"` it runs the plan's own lowered steps (the `pytorch-comms` export).
    Other keyword arguments go to the runtime (e.g. `max_active_stages`).
    Only single-pipeline plans fit PyTorch's runtime (one rank per stage, no replicas); run the
    others with `PlanRunner`.
    """
    if plan.pipelines != 1:
        raise ValueError(
            f"PyTorch's runtime runs single-pipeline plans; this plan has {plan.pipelines} pipelines "
            "(replicated model parts): run it with pipeweave.torch.PlanRunner"
        )
    if format not in ("compute_only", "compute_comms"):
        raise ValueError(f'format must be "compute_only" or "compute_comms", got {format!r}')
    if not stages:
        raise ValueError("stages must hold the PipelineStages of this rank")
    (placement,) = plan.placement
    rank = stages[0].group_rank
    want = [s for s, r in enumerate(placement) if r == rank]
    got = sorted(stage.stage_index for stage in stages)
    if got != want:
        raise ValueError(f"rank {rank} runs stages {want} of the plan, the PipelineStages given are {got}")
    if stages[0].num_stages != plan.stages_per_pipeline:
        raise ValueError(
            f"the plan has {plan.stages_per_pipeline} stages, the PipelineStages were built for {stages[0].num_stages}"
        )
    runtime = _PipelineScheduleRuntime(
        stages, plan.microbatches, loss_fn=loss_fn, scale_grads=scale_grads, **runtime_options
    )
    ranks = range(plan.ranks)
    if format == "compute_only":
        # PipelineScheduleMulti._load_csv, then _PipelineScheduleRuntime._load_csv.
        for r in ranks:
            runtime.pipeline_order[r] = [_compute(a) for a in plan.actions(r)]
        runtime._validate_and_set_stage_mapping(runtime.pipeline_order)
        runtime._prepare_schedule_with_comms(runtime.pipeline_order)
    else:
        lowered = {}
        for r in ranks:
            actions = [_compute(a) for a in plan.actions(r)]
            lowered[r] = [_step(step, actions) for step in plan.steps(r)]
        runtime._prepare_schedule_with_comms(lowered, format="compute_comms")
    return runtime


def _compute(action: Any) -> _Action:
    """The `_Action` `_Action.from_str` makes of the action's CSV cell."""
    if action.kind == "pair":
        f, b = action.pair
        return _Action(-1, _ComputationType.OVERLAP_F_B, None, (_compute(f), _compute(b)))
    return _Action(action.stage, _COMPUTE[action.kind], action.mb)


def _step(step: Any, actions: list[_Action]) -> _Action:
    """The `_Action` of one lowered step's cell in the compute_comms CSV."""
    if step.kind == "compute":
        return actions[step.action]
    if step.kind in _REDUCE:
        return _Action(step.stage, _REDUCE[step.kind], None)
    return _Action(step.stage, _TRANSFER[(step.kind, step.dir)], step.mb)
