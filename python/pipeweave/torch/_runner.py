"""`PlanRunner`: trains with any pipeweave plan over torch.distributed point-to-point.

One runner per rank. `step` splits the batch into the plan's micro-batches and executes the rank's
lowered steps in order (receives, sends, waits, compute, gradient reductions), so the messages on
every pair of ranks are posted in the order the plan's lowering chose: that order is what keeps a
blocking, untagged transport such as NCCL from deadlocking or mis-delivering.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from types import TracebackType
from typing import TypeAlias

import torch
import torch.distributed as dist

from .._plan import PlanProtocol
from ._comm import Comm, Meta, PartReduction, as_tensors, differentiable, metas
from ._layout import CheckedStep, Compute, Layout, Op, Reduce

# `loss_fn(output, target)`: the output is whatever the last model part returns (torch types
# `nn.Module.__call__` as returning anything), the target a tensor or a tuple of tensors; the type
# is PyTorch's own for a pipeline schedule's `loss_fn`.
LossFn: TypeAlias = Callable[..., torch.Tensor]

# A batch: a tensor, or a tuple (or list) of tensors, split along the first dimension.
Batch: TypeAlias = torch.Tensor | Sequence[torch.Tensor]


class PlanRunner:
    """Runs rank `rank`'s share of `plan` with the model parts it hosts.

    `parts` maps every model part the rank hosts (a stage position q in
    `0..plan.stages_per_pipeline`) to its `nn.Module`; a part hosted by several ranks is a replica,
    and every copy must start from the same weights.
    `loss_fn(output, target)` is applied to the last part's output for each micro-batch.
    `group` is the process group whose ranks are the plan's ranks (default: the whole world).
    With `scale_grads=True` (PyTorch's default) gradients are those of the loss averaged over the
    micro-batches; with False, of their sum.
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
        self._comm = Comm(layout, group, self._device)
        self._ready = False
        self._input_key: tuple[Meta, ...] | None = None
        self._out_metas: dict[int, tuple[Meta, ...]] = {}
        self.losses: dict[int, torch.Tensor] = {}

    @property
    def stages(self) -> list[int]:
        """The global stages this rank runs."""
        return list(self._layout.stages)

    def step(self, inputs: Batch, targets: Batch) -> torch.Tensor | None:
        """Runs one training step on the whole batch; returns this rank's loss, or None.

        `inputs` (a tensor or a tuple of tensors, the first part's positional arguments) and
        `targets` hold the whole batch; their first dimension must split into the plan's M
        micro-batches, and micro-batch k (the k-th slice) goes to the pipeline that carries k.
        Every rank passes the same batch (a rank uses what its stages need), so that misuse fails
        on every rank alike instead of leaving the others waiting.
        The step's gradient is added to every parameter's `.grad`, as `loss.backward()` does;
        replicated parts end with the sum over their copies, so every copy holds the full gradient.
        Returns the mean loss over the micro-batches whose loss this rank computed (their losses are
        in `self.losses`), or None on a rank that computes none.
        """
        layout = self._layout
        m = layout.microbatches
        x = as_tensors(inputs, "inputs")
        x_mbs = _split(x, m, "inputs")
        if targets is None:
            raise ValueError("targets is None: every rank passes the whole batch, inputs and targets")
        y_mbs = _split(as_tensors(targets, "targets"), m, "targets")
        key = metas(x_mbs[0])
        if not self._ready:
            self._make_part_groups()
            self._ready = True
        if key != self._input_key:
            self._out_metas = self._comm.infer_metas(self._parts, key)
            self._input_key = key
        run = _Run(self, x_mbs, y_mbs)
        run.execute()
        self.losses = run.losses
        if not run.losses:
            return None
        return torch.stack([run.losses[k] for k in sorted(run.losses)]).mean()

    def close(self) -> None:
        """Destroys the process groups the runner created for its gradient reductions."""
        self._comm.destroy_part_groups()
        self._ready = False

    def _make_part_groups(self) -> None:
        self._comm.make_part_groups()


def parts_of(plan: PlanProtocol, rank: int) -> list[int]:
    """The model parts rank `rank` hosts (the keys `PlanRunner` expects in `parts`), ascending."""
    return list(Layout(plan, rank).parts)


def _split(tensors: tuple[torch.Tensor, ...], m: int, what: str) -> list[tuple[torch.Tensor, ...]]:
    for t in tensors:
        if t.dim() == 0 or t.shape[0] % m != 0:
            rows = t.shape[0] if t.dim() else "no"
            raise ValueError(f"{what}: a batch of {rows} rows does not split into {m} micro-batches")
    pieces = [t.tensor_split(m) for t in tensors]
    return [tuple(p[k] for p in pieces) for k in range(m)]


class _Run:
    """The state of one step on one rank, and what each lowered step does."""

    def __init__(
        self, runner: PlanRunner, x_mbs: list[tuple[torch.Tensor, ...]], y_mbs: list[tuple[torch.Tensor, ...]]
    ):
        self.runner = runner
        self.layout = runner._layout
        self.comm = runner._comm
        self.x_mbs = x_mbs
        self.y_mbs = y_mbs
        self.received: dict[tuple[str, int, int], tuple[list[dist.Work], tuple[torch.Tensor, ...]]] = {}
        self.posted: dict[tuple[str, int, int], tuple[list[dist.Work], tuple[torch.Tensor, ...]]] = {}
        self.outbox: dict[tuple[str, int, int], tuple[torch.Tensor, ...]] = {}
        self.handed: dict[tuple[str, int, int], tuple[torch.Tensor, ...]] = {}
        self.saved: dict[tuple[int, int], tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]] = {}
        self.deferred: dict[tuple[int, int], tuple[list[torch.Tensor], list[torch.Tensor | None]]] = {}
        self.losses: dict[int, torch.Tensor] = {}
        self.streams = _Streams(runner._device)
        self.reductions = {
            r.part: PartReduction(runner._params[r.part], self.comm.part_groups.get(r.part), runner._scale)
            for r in self.layout.reductions
        }
        self.launch_at = {r.launch: r.part for r in self.layout.reductions}
        self.wait_at: dict[int, list[int]] = {}
        for r in self.layout.reductions:
            self.wait_at.setdefault(r.wait, []).append(r.part)

    def execute(self) -> None:
        stash: dict[torch.nn.Parameter, torch.Tensor | None] = {}
        for params in self.runner._params.values():
            for p in params:
                stash[p] = p.grad
                p.grad = None
        try:
            for i, step in enumerate(self.layout.steps):
                self.run_step(i, step)
            self.finish()
        finally:
            for p, old in stash.items():
                if old is not None:
                    if p.grad is not None:
                        old.add_(p.grad)
                    p.grad = old

    def run_step(self, i: int, step: CheckedStep) -> None:
        if isinstance(step, Compute):
            action = self.layout.actions[step.action]
            if isinstance(action, tuple):
                self.pair(*action)
            else:
                self.op(action)
        elif isinstance(step, Reduce):
            if step.kind == "reduce_grad":
                if i in self.launch_at:
                    self.reductions[self.launch_at[i]].launch()
            else:
                for q in self.wait_at.get(i, ()):
                    self.reductions[q].wait()
        elif step.kind == "recv":
            key = (step.dir, step.stage, step.mb)
            if key in self.received:
                raise RuntimeError(f"rank {self.layout.rank}: {step.shown} posted twice")
            if step.dir == "fwd":
                meta = self.runner._out_metas[step.stage - 1]
            else:
                meta = differentiable(self.runner._out_metas[step.stage])
            self.received[key] = self.comm.recv(meta, step.peer)
        elif step.kind == "send":
            key = (step.dir, step.stage, step.mb)
            if key not in self.outbox:
                raise RuntimeError(f"rank {self.layout.rank}: {step.shown} before the data was computed")
            tensors = self.outbox.pop(key)
            self.posted[key] = (self.comm.send(tensors, step.peer), tensors)
        else:
            key = (step.dir, step.stage, step.mb)
            if key not in self.posted:
                raise RuntimeError(f"rank {self.layout.rank}: {step.shown} without its send")
            for work in self.posted.pop(key)[0]:
                work.wait()

    def op(self, op: Op) -> None:
        if op.kind == "F":
            self.forward(op.stage, op.mb)
        elif op.kind in ("B", "I"):
            self.backward(op.stage, op.mb, op.kind == "B")
        else:
            self.weight(op.stage, op.mb)

    def pair(self, f: Op, b: Op) -> None:
        """An overlapped F&B: on CUDA the halves go to two streams, on CPU they run in turn."""
        with self.streams.pair(b.stage, b.mb) as (f_stream, b_stream):
            with self.streams.use(f_stream):
                self.forward(f.stage, f.mb)
            with self.streams.use(b_stream):
                self.backward(b.stage, b.mb, b.kind == "B")

    def take(self, direction: str, stage: int, mb: int, local: bool) -> tuple[torch.Tensor, ...]:
        """The input of a forward (fwd) or the output gradient of a backward (bwd), waited for."""
        key = (direction, stage, mb)
        if local:
            if key not in self.handed:
                raise RuntimeError(
                    f"rank {self.layout.rank}: stage {stage} needs the {direction} data of "
                    f"micro-batch {mb} from its neighbour on this rank, which has not run yet"
                )
            return self.handed.pop(key)
        if key not in self.received:
            raise RuntimeError(
                f"rank {self.layout.rank}: stage {stage} uses the {direction} data of micro-batch "
                f"{mb} before it was received"
            )
        works, buffers = self.received.pop(key)
        for work in works:
            work.wait()
        return self.streams.adopt(buffers)

    def forward(self, s: int, mb: int) -> None:
        layout = self.layout
        q = layout.part(s)
        if layout.is_first(s):
            args = self.streams.adopt(self.x_mbs[mb])
        else:
            got = self.take("fwd", s, mb, layout.local(s - 1))
            args = tuple(a.detach().requires_grad_(a.is_floating_point()) for a in got)
        out = self.runner._parts[q](*args)
        self.streams.record_forward(s, mb)
        if layout.is_last(s):
            loss = self.runner._loss_fn(out, _one(self.streams.adopt(self.y_mbs[mb])))
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                raise TypeError(f"loss_fn must return a tensor with one element, got {type(loss).__name__}")
            self.losses[mb] = loss.detach().reshape(())
            self.saved[(s, mb)] = (args, (loss,))
            return
        outs = as_tensors(out, f"the output of model part {q}")
        want = self.runner._out_metas[s]
        if metas(outs) != want:
            raise RuntimeError(
                f"rank {layout.rank}: model part {q} returned {_show(metas(outs))} for micro-batch "
                f"{mb}, the first micro-batch gave {_show(want)}: micro-batches must have one shape"
            )
        self.saved[(s, mb)] = (args, outs)
        data = tuple(o.detach().contiguous() for o in outs)
        if layout.local(s + 1):
            self.handed[("fwd", s + 1, mb)] = data
        else:
            self.outbox[("fwd", s, mb)] = data

    def output_grads(
        self, s: int, mb: int, outs: tuple[torch.Tensor, ...]
    ) -> tuple[list[torch.Tensor], list[torch.Tensor | None]]:
        """The outputs to differentiate and their gradients (None for the loss)."""
        if self.layout.is_last(s):
            return list(outs), [None]
        grads = self.take("bwd", s, mb, self.layout.local(s + 1))
        floating = [o for o in outs if o.is_floating_point()]
        pairs = [(o, g) for o, g in zip(floating, grads, strict=True) if o.requires_grad]
        return [o for o, _ in pairs], [g for _, g in pairs]

    def backward(self, s: int, mb: int, full: bool) -> None:
        key = (s, mb)
        if key not in self.saved or key in self.deferred:
            raise RuntimeError(f"rank {self.layout.rank}: backward of stage {s}, micro-batch {mb} without its forward")
        args, outs = self.saved[key]
        ts, gs = self.output_grads(s, mb, outs)
        inputs = [a for a in args if a.requires_grad]
        params = self.runner._params[self.layout.part(s)]
        input_grads: list[torch.Tensor | None]
        if full:
            if ts and (inputs or params):
                torch.autograd.backward(ts, gs, inputs=[*inputs, *params])
            input_grads = [a.grad for a in inputs]
            del self.saved[key]
        else:
            input_grads = [None] * len(inputs)
            if ts and inputs:
                input_grads = list(torch.autograd.grad(ts, inputs, gs, retain_graph=True, allow_unused=True))
            self.deferred[key] = (ts, gs)
        if self.layout.is_first(s):
            return
        # A gradient travels back for every floating input; zeros where the part did not use it.
        by_id = {id(a): g for a, g in zip(inputs, input_grads, strict=True)}
        data = tuple(_or_zeros(by_id.get(id(a)), a) for a in args if a.is_floating_point())
        if self.layout.local(s - 1):
            self.handed[("bwd", s - 1, mb)] = data
        else:
            self.outbox[("bwd", s, mb)] = data

    def weight(self, s: int, mb: int) -> None:
        key = (s, mb)
        if key not in self.deferred:
            raise RuntimeError(f"rank {self.layout.rank}: {s}W{mb} without its {s}I{mb}")
        ts, gs = self.deferred.pop(key)
        params = self.runner._params[self.layout.part(s)]
        if ts and params:
            torch.autograd.backward(ts, gs, inputs=params)
        del self.saved[key]

    def finish(self) -> None:
        rank = self.layout.rank
        for works, _ in self.posted.values():
            for work in works:
                work.wait()
        left = [
            ("receives never used", [_key(k) for k in self.received]),
            ("sends never waited for", [_key(k) for k in self.posted]),
            ("outputs never sent", [_key(k) for k in self.outbox]),
            ("data handed over but never used", [_key(k) for k in self.handed]),
            ("forwards without their backward", [f"{s}F{mb}" for s, mb in self.saved if (s, mb) not in self.deferred]),
            ("input gradients without their W", [f"{s}I{mb}" for s, mb in self.deferred]),
        ]
        problems = [f"{what}: {', '.join(keys[:4])}" for what, keys in left if keys]
        if problems:
            raise RuntimeError(f"rank {rank}: the plan's steps left work undone: {'; '.join(problems)}")
        self.streams.join()


def _or_zeros(grad: torch.Tensor | None, like: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(like) if grad is None else grad.detach().contiguous()


def _one(targets: tuple[torch.Tensor, ...]) -> torch.Tensor | tuple[torch.Tensor, ...]:
    return targets[0] if len(targets) == 1 else targets


def _key(key: tuple[str, int, int]) -> str:
    direction, stage, mb = key
    return f"{stage}{'F' if direction == 'fwd' else 'B'}{mb}"


def _show(meta: tuple[Meta, ...]) -> str:
    return ", ".join(f"{list(shape)} {str(dtype).removeprefix('torch.')}" for shape, dtype in meta)


class _Streams:
    """Where compute runs. CPU: in program order. CUDA: the ambient stream and one side stream.

    In an F&B pair the backward runs on the stream its forward ran on (autograd runs backward ops
    there) and the forward on the other one, so the two halves are independent on the GPU; the
    waits for their received data are made from their own streams, so communication for one half
    never holds the other back. The ambient stream joins the side stream after every pair.
    """

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        if self.cuda:
            self.ambient = torch.cuda.current_stream(device)
            self.side = _side_stream(device)
            self.forward_stream: dict[tuple[int, int], torch.cuda.Stream] = {}

    def pair(self, b_stage: int, b_mb: int) -> _PairStreams:
        return _PairStreams(self, b_stage, b_mb)

    def use(self, stream: torch.cuda.Stream | None) -> AbstractContextManager[object]:
        return torch.cuda.stream(stream) if self.cuda else nullcontext()

    def record_forward(self, stage: int, mb: int) -> None:
        if self.cuda:
            self.forward_stream[(stage, mb)] = torch.cuda.current_stream(self.ambient.device)

    def adopt(self, tensors: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        """Marks tensors made on the ambient stream as used by the side stream when it is current."""
        if self.cuda and torch.cuda.current_stream(self.ambient.device) == self.side:
            for t in tensors:
                if t.is_cuda:
                    t.record_stream(self.side)
        return tensors

    def join(self) -> None:
        if self.cuda:
            self.ambient.wait_stream(self.side)


class _PairStreams:
    def __init__(self, streams: _Streams, b_stage: int, b_mb: int):
        self.streams = streams
        self.key = (b_stage, b_mb)

    def __enter__(self) -> tuple[torch.cuda.Stream | None, torch.cuda.Stream | None]:
        s = self.streams
        if not s.cuda:
            return None, None
        b_stream = s.forward_stream.get(self.key, s.ambient)
        f_stream = s.side if b_stream == s.ambient else s.ambient
        s.side.wait_stream(s.ambient)
        return f_stream, b_stream

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self.streams.cuda:
            self.streams.ambient.wait_stream(self.streams.side)


_SIDE: dict[torch.device, torch.cuda.Stream] = {}


def _side_stream(device: torch.device) -> torch.cuda.Stream:
    if device not in _SIDE:
        # torch declares `Stream.__new__` without types.
        _SIDE[device] = torch.cuda.Stream(device)  # type: ignore[no-untyped-call]
    return _SIDE[device]
