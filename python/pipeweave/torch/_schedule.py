"""`schedule`: PyTorch's own `_PipelineScheduleRuntime` with a pipeweave plan loaded from memory.

PyTorch 2.15 reads a schedule from a CSV file (`_PipelineScheduleRuntime._load_csv`): each cell
becomes an `_Action` (`_Action.from_str`), the compute-only rows go to `pipeline_order` and through
`_validate_and_set_stage_mapping`, then `_prepare_schedule_with_comms` lowers them (compute_only)
or takes the rows as they are (compute_comms). `schedule` builds the same `_Action`s from the
plan's cells and makes the same calls, so no file is involved.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, TypedDict, TypeVar

from torch.distributed.pipelining.microbatch import TensorChunkSpec
from torch.distributed.pipelining.schedules import _Action, _ComputationType, _PipelineScheduleRuntime
from torch.distributed.pipelining.stage import _PipelineStageBase

from .._plan import ActionProtocol, PlanProtocol, StepProtocol
from ._runner import LossFn

if TYPE_CHECKING:
    # `typing.Unpack` is Python 3.11's; annotations are never evaluated here (`from __future__`).
    from typing_extensions import Unpack

_T = TypeVar("_T")

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


class RuntimeOptions(TypedDict, total=False):
    """The keyword arguments of PyTorch 2.15's `_PipelineScheduleRuntime` that `schedule` passes on,
    with PyTorch's types (`object` where PyTorch says `Any`)."""

    args_chunk_spec: tuple[TensorChunkSpec, ...] | None
    kwargs_chunk_spec: dict[str, TensorChunkSpec] | None
    output_merge_spec: dict[str, object] | tuple[object, ...] | None
    use_full_backward: bool | None
    backward_requires_autograd: bool
    defer_pp_recv: bool
    max_active_stages: int
    unshard_lookahead: Literal["full", "auto"] | tuple[int, ...]
    defer_reduce_grad_wait: bool
    max_outstanding_sends: int | None


def schedule(
    plan: PlanProtocol,
    stages: Sequence[_PipelineStageBase],
    loss_fn: LossFn | None = None,
    scale_grads: bool = True,
    *,
    format: Literal["compute_only", "compute_comms"] = "compute_only",
    **runtime_options: Unpack[RuntimeOptions],
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
    if getattr(plan, "forward_only", False) is True:
        raise ValueError(
            "PyTorch's runtime loads training plans only (its loader wants every stage's backwards): load the "
            "training plan and call the schedule's eval() (not on ZB-V or DualPipeV in PyTorch 2.15), or run "
            "this evaluation plan with pipeweave.torch.PlanRunner"
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
    # torch declares the runtime's `__init__(*args, **kwargs)` without types.
    runtime = _PipelineScheduleRuntime(  # type: ignore[no-untyped-call]
        list(stages), plan.microbatches, loss_fn=loss_fn, scale_grads=scale_grads, **runtime_options
    )
    ranks = range(plan.ranks)
    if format == "compute_only":
        # PipelineScheduleMulti._load_csv, then _PipelineScheduleRuntime._load_csv.
        for r in ranks:
            runtime.pipeline_order[r] = [_compute(a) for a in plan.actions(r)]
        runtime._validate_and_set_stage_mapping(runtime.pipeline_order)
        runtime._prepare_schedule_with_comms(runtime.pipeline_order)
    else:
        lowered: dict[int, list[_Action | None]] = {}
        for r in ranks:
            actions = [_compute(a) for a in plan.actions(r)]
            lowered[r] = [_step(step, actions) for step in plan.steps(r)]
        runtime._prepare_schedule_with_comms(lowered, format="compute_comms")
    return runtime


def _compute(action: ActionProtocol) -> _Action:
    """The `_Action` `_Action.from_str` makes of the action's CSV cell."""
    if action.kind == "pair":
        if action.pair is None:
            raise ValueError(f"the plan's action {action} is a pair without its forward and backward")
        f, b = action.pair
        return _Action(-1, _ComputationType.OVERLAP_F_B, None, (_compute(f), _compute(b)))
    return _Action(_given(action.stage, "stage", action), _COMPUTE[action.kind], action.mb)


def _step(step: StepProtocol, actions: list[_Action]) -> _Action:
    """The `_Action` of one lowered step's cell in the compute_comms CSV."""
    if step.kind == "compute":
        return actions[_given(step.action, "action", step)]
    stage = _given(step.stage, "stage", step)
    if step.kind in _REDUCE:
        return _Action(stage, _REDUCE[step.kind], None)
    return _Action(stage, _TRANSFER[(step.kind, _given(step.dir, "dir", step))], step.mb)


def _given(value: _T | None, field: str, item: ActionProtocol | StepProtocol) -> _T:
    """`value`, the `field` of the plan's action or step `item`, which PyTorch's `_Action` needs."""
    if value is None:
        raise ValueError(f"the plan's {item} has no {field}")
    return value
