"""One step of one rank: the rank's lowered steps executed in order, training or evaluating.

Receives are posted where the plan posts them, sends follow the action that computes their data,
waits stand where the plan puts them. A training step keeps each forward's activations until its
backward; an evaluation step runs its forwards without a graph and keeps the last part's outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
import torch.distributed as dist

from ._backward import WeightWork, backward_input
from ._comm import Comm, Meta, PartReduction, as_tensors, differentiable, metas
from ._layout import CheckedStep, Compute, Layout, Op, Reduce, transfer_cell
from ._saved import SavedBytes, SavedCounter
from ._streams import Streams

# The span of a receive's posting, at its place in the lowered program; the receive's own span
# ("pw " + its cell) is the wait for the data, right before the action that uses it.
POST_PREFIX = "pw post "

Tensors = tuple[torch.Tensor, ...]


@dataclass
class Setting:
    """What a step of the runner uses, read once per step."""

    layout: Layout
    comm: Comm
    parts: Mapping[int, torch.nn.Module]
    params: Mapping[int, list[torch.nn.Parameter]]
    loss_fn: Callable[..., torch.Tensor]
    out_metas: Mapping[int, tuple[Meta, ...]]
    scale: int
    device: torch.device
    # Under a profiler: every step is a `record_function` span named "pw " + its cell (a receive's
    # posting "pw post " + its cell: its "pw " span is the wait for the data).
    traced: bool = False
    # While profiling: counts the saved bytes; one record per compute action goes to `Run.saved_bytes`.
    counter: SavedCounter | None = None


class Run:
    """The state of one step on one rank, and what each lowered step does."""

    def __init__(self, setting: Setting, x_mbs: list[Tensors] | None, y_mbs: list[Tensors] | None, keep_outputs: bool):
        self.s = setting
        self.layout = setting.layout
        self.comm = setting.comm
        self.x_mbs = x_mbs
        self.y_mbs = y_mbs
        self.keep_outputs = keep_outputs
        self.evaluation = self.layout.forward_only
        self.received: dict[tuple[str, int, int], tuple[list[dist.Work], Tensors]] = {}
        self.posted: dict[tuple[str, int, int], tuple[list[dist.Work], Tensors]] = {}
        self.outbox: dict[tuple[str, int, int], Tensors] = {}
        self.handed: dict[tuple[str, int, int], Tensors] = {}
        self.saved: dict[tuple[int, int], tuple[Tensors, Tensors]] = {}
        self.deferred: dict[tuple[int, int], WeightWork] = {}
        self.losses: dict[int, torch.Tensor] = {}
        self.outputs: dict[int, Tensors] = {}
        self.streams = Streams(setting.device)
        self.reductions = {
            r.part: PartReduction(setting.params[r.part], self.comm.part_groups.get(r.part), setting.scale)
            for r in self.layout.reductions
        }
        self.launch_at = {r.launch: r.part for r in self.layout.reductions}
        self.wait_at: dict[int, list[int]] = {}
        for r in self.layout.reductions:
            self.wait_at.setdefault(r.wait, []).append(r.part)
        # Where the step is, for the words of a failure.
        self.at = "before its first step"
        self.saved_bytes: list[SavedBytes] = []
        # Set by the runner when the ranks' check of the step is still in flight: called once,
        # before the first step that is not a forward the rank runs on its own (`_alone`).
        self.settle: Callable[[], None] | None = None

    def release(self) -> None:
        """Drops every transfer and reduction in flight (after a failure)."""
        self.received.clear()
        self.posted.clear()
        for reduction in self.reductions.values():
            reduction.works.clear()
            reduction.buckets.clear()

    def execute(self) -> None:
        counter = self.s.counter
        if counter is not None:
            with counter.hooks():
                self._execute()
        else:
            self._execute()

    def _execute(self) -> None:
        if self.evaluation:
            with torch.no_grad():
                self._steps()
            return
        stash: dict[torch.nn.Parameter, torch.Tensor | None] = {}
        for params in self.s.params.values():
            for p in params:
                stash[p] = p.grad
                p.grad = None
        try:
            self._steps()
        finally:
            for p, old in stash.items():
                if old is not None:
                    if p.grad is not None:
                        old.add_(p.grad)
                    p.grad = old

    def _steps(self) -> None:
        places = self.layout.places()
        if self.s.traced or self.s.counter is not None:
            self._traced_steps(places)
        else:
            for i, step in enumerate(self.layout.steps):
                self.at = places[i]
                if self.settle is not None and not self._alone(step):
                    self._settle()
                if isinstance(step, Compute):
                    self.compute(step)
                else:
                    self.run_step(i, step)
        if self.settle is not None:
            self._settle()
        self.finish()

    def _alone(self, step: CheckedStep) -> bool:
        """Whether `step` is a forward this rank can run before the ranks' check of the step is
        settled: one that sends, receives and reduces nothing and computes no loss."""
        if not isinstance(step, Compute):
            return False
        action = self.layout.actions[step.action]
        if isinstance(action, tuple) or action.kind != "F" or self.layout.is_last(action.stage):
            return False
        return self.layout.is_first(action.stage) or self.layout.local(action.stage - 1)

    def _settle(self) -> None:
        settle, self.settle = self.settle, None
        if settle is not None:
            settle()

    def _traced_steps(self, places: list[str]) -> None:
        """The steps, each in a profiler span named "pw " + its cell, with the saved bytes after each action.

        The wait for a received tensor is its receive's span, right before the action that uses
        it; where the plan posts the receive, the posting is the span "pw post " + its cell.
        """
        cells = self.layout.cells()
        counter = self.s.counter
        cuda = self.s.device.type == "cuda"
        traced = self.s.traced
        for i, step in enumerate(self.layout.steps):
            self.at = places[i]
            if self.settle is not None and not self._alone(step):
                self._settle()
            if isinstance(step, Compute):
                self.compute(step, cells[i] if traced else None)
                if counter is not None:
                    peak = torch.cuda.max_memory_allocated(self.s.device) if cuda else None
                    self.saved_bytes.append(SavedBytes(cells[i], counter.live, counter.peak, peak))
            elif not traced:
                self.run_step(i, step)
            elif step.kind == "recv":
                with torch.profiler.record_function(POST_PREFIX + cells[i]):
                    self.run_step(i, step)
            else:
                with torch.profiler.record_function("pw " + cells[i]):
                    self.run_step(i, step)

    def compute(self, step: Compute, cell: str | None = None) -> None:
        """A compute action; under a profiler `cell` names its span, and its receives are waited for first."""
        action = self.layout.actions[step.action]
        if isinstance(action, tuple):
            self.pair(action[0], action[1], cell)
            return
        if cell is None:
            self.op(action)
            return
        self.wait_inputs(action)
        with torch.profiler.record_function("pw " + cell):
            self.op(action)

    def wait_inputs(self, op: Op) -> None:
        """Waits, in the receive's span, for the tensor `op` uses from another rank (if any)."""
        layout = self.layout
        if op.kind == "F":
            if layout.is_first(op.stage) or layout.local(op.stage - 1):
                return
            key = ("fwd", op.stage, op.mb)
        elif op.kind in ("B", "I"):
            if layout.is_last(op.stage) or layout.local(op.stage + 1):
                return
            key = ("bwd", op.stage, op.mb)
        else:
            return
        got = self.received.get(key)
        if got is None:
            return
        with torch.profiler.record_function("pw " + transfer_cell("recv", *key)):
            self.comm.wait(got[0])
        self.received[key] = ([], got[1])

    def run_step(self, i: int, step: CheckedStep) -> None:
        if isinstance(step, Compute):
            self.compute(step)
            return
        if isinstance(step, Reduce):
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
                meta = self.s.out_metas[step.stage - 1]
            else:
                meta = differentiable(self.s.out_metas[step.stage])
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
            self.comm.wait(self.posted.pop(key)[0])

    def op(self, op: Op) -> None:
        if op.kind == "F":
            self.forward(op.stage, op.mb)
        elif op.kind in ("B", "I"):
            self.backward(op.stage, op.mb, op.kind == "B")
        else:
            self.weight(op.stage, op.mb)

    def pair(self, f: Op, b: Op, cell: str | None = None) -> None:
        """An overlapped F&B: on CUDA the halves go to two streams, on CPU they run in turn.

        Under a profiler (`cell` given) the receives of both halves are waited for first, each
        from its half's stream, and the pair is one span.
        """
        with self.streams.pair(b.stage, b.mb) as (f_stream, b_stream):
            if cell is None:
                with self.streams.use(f_stream):
                    self.forward(f.stage, f.mb)
                with self.streams.use(b_stream):
                    self.backward(b.stage, b.mb, b.kind == "B")
                return
            with self.streams.use(f_stream):
                self.wait_inputs(f)
            with self.streams.use(b_stream):
                self.wait_inputs(b)
            with torch.profiler.record_function("pw " + cell):
                with self.streams.use(f_stream):
                    self.forward(f.stage, f.mb)
                with self.streams.use(b_stream):
                    self.backward(b.stage, b.mb, b.kind == "B")

    def take(self, direction: str, stage: int, mb: int, local: bool) -> Tensors:
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
        self.comm.wait(works)
        return self.streams.adopt(buffers)

    def forward(self, s: int, mb: int) -> None:
        layout = self.layout
        q = layout.part(s)
        if layout.is_first(s):
            if self.x_mbs is None:
                raise RuntimeError(f"rank {layout.rank}: stage {s} runs part 0 without inputs")
            args = self.streams.adopt(self.x_mbs[mb])
        else:
            got = self.take("fwd", s, mb, layout.local(s - 1))
            if self.evaluation:
                args = got
            else:
                args = tuple(a.detach().requires_grad_(a.is_floating_point()) for a in got)
        out = self.s.parts[q](*args)
        self.streams.record_forward(s, mb)
        if layout.is_last(s):
            if self.keep_outputs:
                self.outputs[mb] = tuple(o.detach() for o in as_tensors(out, f"the output of model part {q}"))
            if self.y_mbs is None:
                # An evaluation without targets: no loss.
                return
            loss = self.s.loss_fn(out, _one(self.streams.adopt(self.y_mbs[mb])))
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                what = f"a tensor of shape {list(loss.shape)}" if isinstance(loss, torch.Tensor) else type(loss).__name__
                raise TypeError(
                    f"loss_fn returned {what} for micro-batch {mb}; it must return one number per micro-batch "
                    "(a tensor with one element)"
                )
            self.losses[mb] = loss.detach().reshape(())
            if not self.evaluation:
                self.saved[(s, mb)] = (args, (loss,))
            return
        outs = as_tensors(out, f"the output of model part {q}")
        want = self.s.out_metas[s]
        if metas(outs) != want:
            raise RuntimeError(
                f"rank {layout.rank}: model part {q} returned {_show(metas(outs))} for micro-batch "
                f"{mb}, the first micro-batch gave {_show(want)}: micro-batches must have one shape"
            )
        if not self.evaluation:
            self.saved[(s, mb)] = (args, outs)
        data = tuple(o.detach().contiguous() for o in outs)
        if layout.local(s + 1):
            self.handed[("fwd", s + 1, mb)] = data
        else:
            self.outbox[("fwd", s, mb)] = data

    def output_grads(self, s: int, mb: int, outs: Tensors) -> tuple[list[torch.Tensor], list[torch.Tensor | None]]:
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
        params = self.s.params[self.layout.part(s)]
        input_grads: list[torch.Tensor | None]
        if full:
            if ts and (inputs or params):
                torch.autograd.backward(ts, gs, inputs=[*inputs, *params])
            input_grads = [a.grad for a in inputs]
            del self.saved[key]
        else:
            input_grads, self.deferred[key] = backward_input(ts, gs, inputs, params)
            # The graph's outputs are no longer needed as tensors: W starts inside the graph.
            self.saved[key] = ((), ())
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
        self.deferred.pop(key).run()
        del self.saved[key]

    def finish(self) -> None:
        rank = self.layout.rank
        self.at = "the end of the step"
        for works, _ in self.posted.values():
            self.comm.wait(works)
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


def _one(targets: Tensors) -> torch.Tensor | Tensors:
    return targets[0] if len(targets) == 1 else targets


def _key(key: tuple[str, int, int]) -> str:
    direction, stage, mb = key
    return f"{stage}{'F' if direction == 'fwd' else 'B'}{mb}"


def _show(meta: tuple[Meta, ...]) -> str:
    return ", ".join(f"{list(shape)} {str(dtype).removeprefix('torch.')}" for shape, dtype in meta)
