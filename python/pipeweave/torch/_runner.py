"""`PlanRunner`: trains and evaluates with any pipeweave plan over torch.distributed point-to-point.

One runner per rank. `step` splits the batch into the plan's micro-batches and executes the rank's
lowered steps in order (receives, sends, waits, compute, gradient reductions), so the messages on
every pair of ranks are posted in the order the plan's lowering chose: that order is what keeps a
blocking, untagged transport such as NCCL from deadlocking or mis-delivering.
Before a step exchanges anything the ranks agree on the batch, the shapes and the model copies
(`_agree.py`), and a step that fails on one rank is abandoned on every rank (`_comm.py`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TypeAlias

import torch
import torch.distributed as dist

from .._plan import PlanProtocol
from ._agree import Agreed, Pending, agree, fingerprint, quick_check, quick_check_start, settled
from ._comm import Broken, Comm, PipelineError, as_tensors, metas, wire
from ._layout import Layout
from ._run import Run, Setting
from ._saved import SavedBytes, SavedCounter, storages

# `loss_fn(output, target)`: the output is whatever the last model part returns (torch types
# `nn.Module.__call__` as returning anything), the target a tensor or a tuple of tensors; the type
# is PyTorch's own for a pipeline schedule's `loss_fn`.
LossFn: TypeAlias = Callable[..., torch.Tensor]

# A batch: a tensor, or a tuple (or list) of tensors, split along the first dimension.
Batch: TypeAlias = torch.Tensor | Sequence[torch.Tensor]

# What the last model part returns for one micro-batch: a tensor or a tuple of tensors.
Output: TypeAlias = torch.Tensor | tuple[torch.Tensor, ...]


class PlanRunner:
    """Runs rank `rank`'s share of `plan` with the model parts it hosts.

    `parts` maps every model part the rank hosts (a stage position q in
    `0..plan.stages_per_pipeline`) to its `nn.Module`; a part hosted by several ranks is a replica,
    and every copy must start from the same weights (checked on the first step unless
    `check_copies=False`).
    `loss_fn(output, target)` is applied to the last part's output for each micro-batch.
    `group` is the process group whose ranks are the plan's ranks (default: the whole world).
    With `scale_grads=True` (PyTorch's default) gradients are those of the loss averaged over the
    micro-batches; with False, of their sum.

    Under a profiler every step it executes is a `record_function` span named "pw " + its cell
    (`pipeweave.torch.profile`); after a step run by `profile`, `saved_bytes` holds the bytes
    autograd kept saved for the backward after each compute action (`SavedBytes`).
    """

    def __init__(
        self,
        plan: PlanProtocol,
        rank: int,
        parts: Mapping[int, torch.nn.Module],
        loss_fn: LossFn,
        group: dist.ProcessGroup | None = None,
        *,
        scale_grads: bool = True,
        check_copies: bool = True,
    ):
        self._layout = layout = Layout(plan, rank)
        if not isinstance(parts, Mapping):
            raise TypeError(f"parts must be a dict from model part to nn.Module, got {type(parts).__name__}")
        wrong = sorted(set(parts) - set(layout.parts), key=str)
        missing = sorted(set(layout.parts) - set(parts))
        if wrong or missing:
            raise ValueError(
                f"rank {rank} hosts model parts {layout.parts} (stages {layout.stages}); "
                + "; ".join(
                    ([f"parts has {wrong}, which it does not host"] if wrong else [])
                    + ([f"parts lacks {missing}"] if missing else [])
                )
            )
        for q, module in parts.items():
            if not isinstance(module, torch.nn.Module):
                raise TypeError(f"parts[{q}] must be an nn.Module, got {type(module).__name__}")
        if not callable(loss_fn):
            raise TypeError("loss_fn must be callable as loss_fn(output, target)")
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("torch.distributed is not initialized: call init_process_group first")
        world = dist.get_world_size(group)
        if world != layout.ranks:
            raise ValueError(f"the plan has {layout.ranks} ranks, the process group has {world}")
        if dist.get_rank(group) != rank:
            raise ValueError(f"rank {rank} is rank {dist.get_rank(group)} of the process group")
        devices = {p.device for m in parts.values() for p in m.parameters()}
        if len(devices) > 1:
            raise ValueError(f"the parts of one rank must be on one device, got {sorted(map(str, devices))}")
        self._device = devices.pop() if devices else torch.device("cpu")
        self._parts = dict(parts)
        self._params = {q: [p for p in m.parameters() if p.requires_grad] for q, m in parts.items()}
        self._loss_fn = loss_fn
        self._scale = layout.microbatches if scale_grads else 1
        self._check_copies = check_copies
        self._comm = Comm(layout, group, self._device)
        self._evaluation_layout: Layout | None = None
        self._groups_made = False
        self._agreed: Agreed | None = None
        self._agreed_key: tuple[int, ...] | None = None
        # This rank's fingerprints of the last step the ranks agreed on.
        self._agreed_local: list[int] | None = None
        self._failure: str | None = None
        self.losses: dict[int, torch.Tensor] = {}
        self.outputs: dict[int, Output] = {}
        # Set by `pipeweave.torch.profile` while it runs: the saved bytes of each action are counted.
        self._counter: SavedCounter | None = None
        self.saved_bytes: list[SavedBytes] = []

    @property
    def stages(self) -> list[int]:
        """The global stages this rank runs."""
        return list(self._layout.stages)

    @property
    def owned_parts(self) -> list[int]:
        """The parts whose first copy this rank holds: each part is owned by one rank of the plan.

        Save a checkpoint of these parts only, and count them once in a norm over the model.
        """
        return [q for q in self._layout.parts if self._layout.copies[q][0] == self._layout.rank]

    def step(self, inputs: Batch | None, targets: Batch | None = None) -> torch.Tensor | None:
        """Runs one step on the whole batch; returns the step's loss on every rank.

        Training, it adds the step's gradient to every parameter's `.grad`, as `loss.backward()`
        does; under `torch.no_grad()`, with every part of the rank in `eval()` mode, or with an
        evaluation plan, it runs the evaluation form of the plan (its forwards in each rank's order,
        no backward, no gradient) and keeps the last part's outputs in `self.outputs`.

        `inputs` (a tensor or a tuple of tensors, the first part's positional arguments) and
        `targets` hold the whole batch; their first dimension must split into the plan's M
        micro-batches, and micro-batch k (the k-th slice) goes to the pipeline that carries k.
        A rank that hosts no part 0 may pass None as `inputs`, one that computes no loss None as
        `targets`; an evaluation without targets computes no loss.
        Returns the loss of the step, the mean of every micro-batch's loss as the unpipelined model
        computes it, on every rank (each micro-batch's loss is in `self.losses`), or None for an
        evaluation without targets.
        """
        return self._step(inputs, targets, keep_outputs=True)

    def forward(self, inputs: Batch | None, targets: Batch | None = None, *, gather: bool = False) -> dict[int, Output]:
        """Evaluates the batch (an evaluation step, under `torch.no_grad()`); returns the outputs.

        Returns the last part's output for each micro-batch this rank computes it for (all of them
        on the last rank of a single-pipeline plan, one pipeline's in DualPipe), keyed by
        micro-batch; with `gather=True`, every micro-batch's output on every rank.
        With `targets`, the step's loss is in `self.losses` as after `step`.
        """
        with torch.no_grad():
            self._step(inputs, targets, keep_outputs=True)
        if gather:
            self._gather_outputs()
        return dict(self.outputs)

    def clip_grad_norm_(self, max_norm: float, norm_type: float = 2.0) -> torch.Tensor:
        """Clips the gradients of the whole model, every copy alike; returns the total norm.

        The norm is the unpipelined model's: every part counted once, whatever its copies, over
        every rank of the plan (call it on every rank). Every copy is scaled by the same factor.
        """
        if self._failure is not None:
            raise PipelineError(self._failure)
        p = float(norm_type)
        grads = [
            prm.grad.detach() for q in self.owned_parts for prm in self._params[q] if prm.grad is not None
        ]
        device = self._comm.collective_device()
        if math.isinf(p):
            local = max((g.abs().max().to(device, torch.float64) for g in grads), default=torch.zeros((), dtype=torch.float64, device=device))
            total = local.clone()
            self._collective(lambda: self._comm.all_reduce_max(total))
        else:
            total = torch.zeros((), dtype=torch.float64, device=device)
            for g in grads:
                total += torch.linalg.vector_norm(g.to(torch.float64), p).to(device) ** p
            self._collective(lambda: self._comm.all_reduce_sum(total))
            total = total ** (1.0 / p)
        coef = float(max_norm) / (total.item() + 1e-6)
        if coef < 1.0:
            for params in self._params.values():
                for prm in params:
                    if prm.grad is not None:
                        prm.grad.detach().mul_(coef)
        return total

    def sync_copies(self) -> None:
        """Makes every copy of a replicated part equal to its first copy (the owner's); call on every rank.

        For models whose copies are initialised apart (a seed per rank, as torchtitan does): the
        owner's parameters and buffers are broadcast to the other copies before training.
        """
        if self._failure is not None:
            raise PipelineError(self._failure)
        broken: str | None = None
        try:
            self._comm.open()
            if not self._groups_made:
                self._make_part_groups()
                self._groups_made = True
            for q in self._layout.parts:
                group = self._comm.part_groups.get(q)
                if group is None:
                    continue
                src = self._comm.global_rank(self._layout.copies[q][0])
                for t in [*self._parts[q].parameters(), *self._parts[q].buffers()]:
                    with torch.no_grad():
                        self._comm.broadcast_in(t.data, src, group)
        except Broken as e:
            broken = str(e)
        if broken is not None:
            self._failure = self._comm.cause(broken)
            raise PipelineError(self._failure)

    def close(self) -> None:
        """Destroys the process groups the runner created (for its messages and its reductions)."""
        self._comm.destroy_groups()
        self._groups_made = False
        self._agreed = self._agreed_key = None
        self._agreed_local = None

    def _make_part_groups(self) -> None:
        self._comm.make_part_groups()

    def _step(self, inputs: Batch | None, targets: Batch | None, keep_outputs: bool) -> torch.Tensor | None:
        if self._failure is not None:
            raise PipelineError(self._failure)
        layout = self._layout
        m = layout.microbatches
        evaluation = (
            layout.forward_only
            or not torch.is_grad_enabled()
            or all(not module.training for module in self._parts.values())
        )
        mode = "eval" if evaluation else "train"
        x = as_tensors(inputs, "inputs") if inputs is not None else None
        y = as_tensors(targets, "targets") if targets is not None else None
        # Autocast changes the dtypes that travel: a change of it is a change of the step's shapes.
        cast = [f"{d}:{torch.get_autocast_dtype(d)}" for d in ("cpu", "cuda") if torch.is_autocast_enabled(d)]
        local = fingerprint(" ".join([mode, *cast]), wire(metas(x)) if x is not None else None, wire(metas(y)) if y is not None else None)
        broken: str | None = None
        pending: Pending | None = None
        try:
            self._comm.open()
            if (
                self._agreed is not None
                and local == self._agreed_local
                and (self._groups_made or layout.forward_only)
            ):
                # This rank's batch and kind of step are those the ranks last agreed on: the check
                # that every other rank's are too runs behind the forwards this rank can run
                # alone, and is settled before anything travels (`Run.settle`).
                pending = quick_check_start(self._comm, local)
            else:
                maxima = quick_check(self._comm, local)
                if self._agreed is None or maxima != self._agreed_key or not settled(maxima):
                    check = self._check_copies and self._agreed is None
                    found = agree(self._comm, layout, self._parts, self._loss_fn, mode, x, y, check)
                    if self._agreed is None:
                        self._comm.token = found.token
                    self._agreed, self._agreed_key = found, maxima
                self._agreed_local = local
            if not self._groups_made and not layout.forward_only:
                self._make_part_groups()
                self._groups_made = True
        except Broken as e:
            broken = str(e)
        if broken is not None:
            self._failure = self._comm.cause(broken)
            raise PipelineError(self._failure)
        agreed = self._agreed
        assert agreed is not None
        x_mbs = _split(x, m) if x is not None else None
        y_mbs = _split(y, m) if y is not None and agreed.with_loss else None
        setting = Setting(
            layout=self._step_layout(evaluation),
            comm=self._comm,
            parts=self._parts,
            params=self._params,
            loss_fn=self._loss_fn,
            out_metas=agreed.out_metas,
            scale=self._scale,
            device=self._device,
        )
        setting.traced = torch._C._autograd._profiler_enabled()
        counter = self._counter
        if counter is not None:
            setting.counter = counter
            counter.start(storages((x, y, list(self._parts.values()))))
            if self._device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(self._device)
        run = Run(setting, x_mbs, y_mbs, keep_outputs=keep_outputs and evaluation)
        if pending is not None:
            run.settle = self._settler(pending, run, mode, x, y)
        loss: torch.Tensor | None = None
        error: Exception | None = None
        disagreed: ValueError | None = None
        try:
            run.execute()
            agreed = self._agreed
            assert agreed is not None
            loss = self._share_losses(run) if agreed.with_loss else None
        except Broken as e:
            broken = str(e)
        except _Disagreed as e:
            disagreed = e.error
        except Exception as e:
            error = e
        if disagreed is not None:
            # Every rank found the same disagreement before anything travelled: the same
            # ValueError everywhere, as when the ranks agree at a step's start.
            run.release()
            raise disagreed
        # Out of the handlers, so that nothing holds the failed transfers (they hold the process
        # group open, and the peers wait until it closes).
        if broken is not None or error is not None:
            run.release()
            if error is not None:
                words = str(error).strip().splitlines()
                first = words[0][:500] if words else ""
                self._failure = self._comm.fail(
                    f"rank {layout.rank} failed at {run.at}: {type(error).__name__}: {first}"
                )
                raise PipelineError(self._failure) from error
            self._failure = self._comm.cause(broken or "")
            raise PipelineError(self._failure)
        self.outputs = {mb: (out[0] if len(out) == 1 else out) for mb, out in sorted(run.outputs.items())}
        if counter is not None:
            self.saved_bytes = run.saved_bytes
        return loss

    def _settler(
        self, pending: Pending, run: Run, mode: str, x: tuple[torch.Tensor, ...] | None, y: tuple[torch.Tensor, ...] | None
    ) -> Callable[[], None]:
        """What `run` calls before its first transfer or backward: waits for the fingerprint
        all-reduce; when another rank's batch or kind of step changed, the ranks agree again (all
        of them are at this point, none has sent anything) and the run goes on with what they
        agreed. A disagreement is the same ValueError on every rank (`_Disagreed`)."""

        def settle() -> None:
            maxima = pending.maxima(self._comm)
            if maxima == self._agreed_key and settled(maxima):
                return
            layout = self._layout
            try:
                found = agree(self._comm, layout, self._parts, self._loss_fn, mode, x, y, False)
            except ValueError as e:
                raise _Disagreed(e) from None
            self._agreed, self._agreed_key = found, maxima
            # This rank's batch did not change, so neither did the forwards it ran already (their
            # shapes come from it); what the others changed reaches the rest of the step.
            run.s.out_metas = found.out_metas
            m = layout.microbatches
            run.y_mbs = _split(y, m) if y is not None and found.with_loss else None

        return settle

    def _step_layout(self, evaluation: bool) -> Layout:
        if not evaluation:
            return self._layout
        if self._evaluation_layout is None:
            self._evaluation_layout = self._layout.evaluation()
        return self._evaluation_layout

    def _share_losses(self, run: Run) -> torch.Tensor:
        """Every micro-batch's loss on every rank (each is computed on one rank); their mean."""
        m = self._layout.microbatches
        device = self._comm.collective_device()
        t = torch.zeros(m, dtype=torch.float64, device=device)
        for mb, loss in run.losses.items():
            t[mb] = loss.detach().to(device, torch.float64)
        self._comm.all_reduce_sum(t)
        self.losses = {mb: t[mb] for mb in range(m)}
        return t.mean()

    def _gather_outputs(self) -> None:
        """Every micro-batch's last output on every rank, broadcast by the rank that computed it."""
        agreed = self._agreed
        if agreed is None:
            return
        s_per = self._layout.s_per
        last = next(metas for s, metas in sorted(agreed.out_metas.items()) if s % s_per == s_per - 1)
        device = self._comm.collective_device()
        mine = {mb: as_tensors(out, "the output") for mb, out in self.outputs.items()}
        gathered: dict[int, tuple[torch.Tensor, ...]] = {}
        for owner in sorted(set(agreed.owner.values())):
            mbs = sorted(mb for mb, r in agreed.owner.items() if r == owner)
            columns: list[torch.Tensor] = []
            for t, (shape, dtype) in enumerate(last):
                if owner == self._layout.rank:
                    buf = torch.stack([mine[mb][t] for mb in mbs]).to(device)
                else:
                    buf = torch.empty((len(mbs), *shape), dtype=dtype, device=device)
                self._broadcast(buf, owner)
                columns.append(buf.to(self._device))
            for i, mb in enumerate(mbs):
                gathered[mb] = tuple(c[i] for c in columns)
        self.outputs = {mb: (out[0] if len(out) == 1 else out) for mb, out in sorted(gathered.items())}

    def _broadcast(self, buf: torch.Tensor, owner: int) -> None:
        self._collective(lambda: self._comm.broadcast(buf, owner))

    def _collective(self, call: Callable[[], None]) -> None:
        broken: str | None = None
        try:
            call()
        except Broken as e:
            broken = str(e)
        if broken is not None:
            self._failure = self._comm.cause(broken)
            raise PipelineError(self._failure)


class _Disagreed(Exception):
    """The ranks disagreed when they agreed again inside a step: `error` is raised on every rank."""

    def __init__(self, error: ValueError):
        super().__init__(str(error))
        self.error = error


def parts_of(plan: PlanProtocol, rank: int) -> list[int]:
    """The model parts rank `rank` hosts (the keys `PlanRunner` expects in `parts`), ascending."""
    return list(Layout(plan, rank).parts)


def _split(tensors: tuple[torch.Tensor, ...], m: int) -> list[tuple[torch.Tensor, ...]]:
    pieces = [t.tensor_split(m) for t in tensors]
    return [tuple(p[k] for p in pieces) for k in range(m)]
