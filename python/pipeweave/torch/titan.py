"""torchtitan with any pipeweave plan, DualPipe and Chimera included (tested with torchtitan 0.3.0).

torchtitan builds a model's pipeline through its model spec's `pipelining_fn` (`pipeline_llm` for
its language models), which returns the schedule the trainer calls, the rank's model parts and
whether the rank has the first and the last stage. `pipelining_fn(plan)` is a drop-in replacement:

    spec = dataclasses.replace(model_registry("debugmodel"), pipelining_fn=pipelining_fn(plan))

It cuts the model into the plan's S parts (`parallelism.module_fqns_per_model_part`, else
torchtitan's own cut of an LLM into S parts), keeps the parts the rank hosts (two copies' worth in
DualPipe and Chimera), parallelizes each with the spec's `parallelize_fn`, and returns a
`PlanSchedule` over them, which `Trainer.train_step` calls as it calls PyTorch's schedules.

`PlanSchedule` speaks torchtitan's conventions so that nothing is scaled by hand: its loss
function returns `(loss, count)` with the loss already divided by the step's valid tokens
(`loss_kwargs={"global_valid_tokens": ...}`), so the micro-batches' gradients are summed
(`scale_grads=False`, as torchtitan's builder sets it for PyTorch's schedules); `losses` receives
every micro-batch's loss on every rank that passes a list. The copies of a replicated part are
made equal to the first copy before the first step (torchtitan initialises each rank's parts with
the rank's own seed), so DualPipe's and Chimera's copies start, and stay, equal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch
import torch.distributed as dist

from .._plan import PlanProtocol
from ._runner import PlanRunner, parts_of

# torchtitan's loss: `loss_fn(pred, labels, **loss_kwargs)` returns `(loss, count)` (or a loss).
TitanLoss = Callable[..., object]


class PlanSchedule:
    """A pipeline schedule with the calls of PyTorch's (`step`, `eval`) running a pipeweave plan."""

    def __init__(
        self,
        plan: PlanProtocol,
        rank: int,
        parts: Mapping[int, torch.nn.Module],
        loss_fn: TitanLoss,
        group: dist.ProcessGroup | None = None,
        *,
        sync_copies: bool = True,
        check_copies: bool = True,
    ):
        self._loss_fn = loss_fn
        self._loss_kwargs: dict[str, object] = {}
        self._sync = sync_copies
        self.runner = PlanRunner(plan, rank, parts, self._loss, group, scale_grads=False, check_copies=check_copies)

    def _loss(self, output: object, target: object) -> torch.Tensor:
        value = self._loss_fn(output, target, **self._loss_kwargs)
        loss = value[0] if isinstance(value, tuple) else value
        if not isinstance(loss, torch.Tensor):
            raise TypeError(f"loss_fn must return a tensor or (tensor, count), got {type(value).__name__}")
        return loss

    def step(
        self,
        *args: torch.Tensor,
        target: torch.Tensor | None = None,
        losses: list[torch.Tensor] | None = None,
        return_outputs: bool = True,
        loss_kwargs: Mapping[str, object] | None = None,
        arg_mbs: Sequence[tuple[torch.Tensor, ...]] | None = None,
        kwarg_mbs: Sequence[Mapping[str, object]] | None = None,
        target_mbs: Sequence[torch.Tensor] | None = None,
        **kwargs: object,
    ) -> torch.Tensor | None:
        """One training step, as PyTorch's `_PipelineSchedule.step` takes it (torchtitan's calls).

        Inputs come whole (`*args`, `target`) or split (`arg_mbs`, `target_mbs`, one entry per
        micro-batch); keyword inputs are not carried (the first part takes positional tensors).
        Returns the last part's outputs merged over the micro-batches when `return_outputs`, on
        the ranks that have them after an evaluation; None otherwise.
        """
        inputs, targets = self._batch(args, target, arg_mbs, kwarg_mbs, target_mbs, kwargs)
        if self._sync:
            self.runner.sync_copies()
            self._sync = False
        self._loss_kwargs = dict(loss_kwargs or {})
        self.runner.step(inputs, targets)
        if losses is not None and self.runner.losses:
            losses.extend(self.runner.losses[mb] for mb in sorted(self.runner.losses))
        return self._merged() if return_outputs else None

    def eval(
        self,
        *args: torch.Tensor,
        target: torch.Tensor | None = None,
        losses: list[torch.Tensor] | None = None,
        arg_mbs: Sequence[tuple[torch.Tensor, ...]] | None = None,
        kwarg_mbs: Sequence[Mapping[str, object]] | None = None,
        target_mbs: Sequence[torch.Tensor] | None = None,
        **kwargs: object,
    ) -> torch.Tensor | None:
        """One evaluation step (the plan's forwards, no backward), as PyTorch's `eval` takes it."""
        inputs, targets = self._batch(args, target, arg_mbs, kwarg_mbs, target_mbs, kwargs)
        self.runner.forward(inputs, targets)
        if losses is not None and self.runner.losses:
            losses.extend(self.runner.losses[mb] for mb in sorted(self.runner.losses))
        return self._merged()

    def _batch(
        self,
        args: tuple[torch.Tensor, ...],
        target: torch.Tensor | None,
        arg_mbs: Sequence[tuple[torch.Tensor, ...]] | None,
        kwarg_mbs: Sequence[Mapping[str, object]] | None,
        target_mbs: Sequence[torch.Tensor] | None,
        kwargs: Mapping[str, object],
    ) -> tuple[tuple[torch.Tensor, ...] | None, torch.Tensor | None]:
        if kwargs or any(kwarg_mbs or ()):
            names = sorted({*kwargs, *(k for mb in kwarg_mbs or () for k in mb)})
            raise ValueError(
                f"PlanSchedule passes positional inputs to the first part only; got keyword inputs {names}"
            )
        if args and arg_mbs:
            raise ValueError("pass the inputs whole (*args) or split (arg_mbs), not both")
        inputs: tuple[torch.Tensor, ...] | None = tuple(args) if args else None
        if arg_mbs:
            inputs = tuple(torch.cat([mb[i] for mb in arg_mbs]) for i in range(len(arg_mbs[0])))
        targets = target
        if target_mbs:
            targets = torch.cat(list(target_mbs))
        return inputs, targets

    def _merged(self) -> torch.Tensor | None:
        outputs = self.runner.outputs
        m = self.runner._layout.microbatches
        if sorted(outputs) != list(range(m)):
            return None
        first = outputs[0]
        if not isinstance(first, torch.Tensor):
            return None
        return torch.cat([outputs[mb] for mb in range(m)])  # type: ignore[misc]


def pipelining_fn(plan: PlanProtocol, *, sync_copies: bool = True) -> Callable[..., object]:
    """torchtitan's `pipelining_fn` for a model spec, running `plan` (see the module's docs).

    The returned function takes `pipeline_llm`'s keyword arguments and returns what it returns:
    `(schedule, model_parts, has_first_stage, has_last_stage)`.
    """
    # torchtitan ships no types; its cut of a model into parts is used as torchtitan's own builder uses it.
    from torchtitan.distributed.pipeline_parallel import (  # type: ignore[import-untyped]
        _generate_llm_fqn_per_model_part,
        _split_module,
    )

    def build(model: torch.nn.Module, **kw: object) -> tuple[PlanSchedule, list[torch.nn.Module], bool, bool]:
        parallel_dims, parallelism, training = kw["parallel_dims"], kw["parallelism"], kw["training"]
        pp_mesh = parallel_dims.get_mesh("pp")  # type: ignore[attr-defined]
        rank = pp_mesh.get_local_rank()
        group = pp_mesh.get_group()
        s_per = plan.stages_per_pipeline
        names = parallelism.module_fqns_per_model_part  # type: ignore[attr-defined]
        if names is None:
            layers = getattr(kw["model_config"], "layers", None)
            if layers is None:
                raise ValueError("the model config has no layers: set parallelism.module_fqns_per_model_part")
            names = _generate_llm_fqn_per_model_part(
                s_per,
                len(layers),
                parallelism.pipeline_parallel_first_stage_less_layers,  # type: ignore[attr-defined]
                parallelism.pipeline_parallel_last_stage_less_layers,  # type: ignore[attr-defined]
            )
        if len(names) != s_per:
            raise ValueError(f"the plan has {s_per} model parts, module_fqns_per_model_part lists {len(names)}")
        size = parallelism.pipeline_parallel_microbatch_size  # type: ignore[attr-defined]
        batch = training.local_batch_size  # type: ignore[attr-defined]
        if batch % size != 0 or batch // size != plan.microbatches:
            raise ValueError(
                f"the plan has {plan.microbatches} micro-batches: set training.local_batch_size "
                f"({batch}) to {plan.microbatches} x parallelism.pipeline_parallel_microbatch_size ({size})"
            )
        parallelize: Callable[..., torch.nn.Module] = kw["parallelize_fn"]  # type: ignore[assignment]
        passed = ("parallel_dims", "training", "parallelism", "compile_config", "ac_config", "dump_folder")
        parts: dict[int, torch.nn.Module] = {}
        for q in parts_of(plan, rank):
            chunk = _split_module(model, names[q])
            parts[q] = parallelize(chunk, **{k: kw[k] for k in passed if k in kw})
        schedule = PlanSchedule(plan, rank, parts, kw["loss_fn"], group, sync_copies=sync_copies)  # type: ignore[arg-type]
        return schedule, list(parts.values()), 0 in parts, s_per - 1 in parts

    return build
