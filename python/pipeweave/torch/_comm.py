"""Communication of the runner: point-to-point transfers, shapes of what travels, gradient reductions.

Pipeline transfers are untagged and matched in posting order between two ranks, as NCCL matches
them, so the order of the plan's lowered steps is the order on the wire.
Replicated parts reduce their gradients with one all-reduce per part in a process group of its
own, so reductions never mix with the pipeline's messages nor with each other.
"""

from __future__ import annotations

import atexit
from collections.abc import Sequence
from typing import TypeAlias

import torch
import torch.distributed as dist

from ._layout import Layout

Meta: TypeAlias = tuple[tuple[int, ...], torch.dtype]

# What travels to say a stage's output shapes: (shape, dtype name) per tensor.
_Wire: TypeAlias = list[tuple[list[int], str]]


def as_tensors(value: object, what: str) -> tuple[torch.Tensor, ...]:
    """A part's output (a tensor or a tuple of tensors) as a tuple."""
    items: Sequence[object] = value if isinstance(value, (tuple, list)) else (value,)
    tensors = tuple(t for t in items if isinstance(t, torch.Tensor))
    if not items or len(tensors) != len(items):
        raise TypeError(f"{what} must be a tensor or a tuple of tensors, got {type(value).__name__}")
    return tensors


def metas(tensors: tuple[torch.Tensor, ...]) -> tuple[Meta, ...]:
    return tuple((tuple(t.shape), t.dtype) for t in tensors)


def differentiable(meta: tuple[Meta, ...]) -> tuple[Meta, ...]:
    """The tensors of an activation that carry a gradient back: the floating-point ones."""
    return tuple(m for m in meta if m[1].is_floating_point)


class Comm:
    """Point-to-point transfers and reductions over the plan's process group."""

    def __init__(self, layout: Layout, group: dist.ProcessGroup | None, device: torch.device):
        self.layout = layout
        self.group = group
        self.device = device
        self.part_groups: dict[int, dist.ProcessGroup] = {}

    def global_rank(self, rank: int) -> int:
        if self.group is None or self.group is dist.GroupMember.WORLD:
            return rank
        return dist.get_global_rank(self.group, rank)

    def send(self, tensors: tuple[torch.Tensor, ...], peer: int) -> list[dist.Work]:
        return [_posted(dist.isend(t, group=self.group, group_dst=peer)) for t in tensors]

    def recv(self, meta: tuple[Meta, ...], peer: int) -> tuple[list[dist.Work], tuple[torch.Tensor, ...]]:
        buffers = tuple(torch.empty(shape, dtype=dtype, device=self.device) for shape, dtype in meta)
        return [_posted(dist.irecv(b, group=self.group, group_src=peer)) for b in buffers], buffers

    def make_part_groups(self) -> None:
        """One process group per replicated part; every rank of the plan creates them in part order."""
        backend = dist.get_backend(self.group)
        for q, copies in enumerate(self.layout.copies):
            if len(copies) < 2:
                continue
            g = dist.new_group(
                [self.global_rank(r) for r in copies],
                backend=backend,
                use_local_synchronization=True,
                group_desc=f"pipeweave_part_{q}",
            )
            # `new_group` answers a rank outside the group with a marker that is no ProcessGroup.
            if self.layout.rank in copies and isinstance(g, dist.ProcessGroup):
                self.part_groups[q] = g
        # Process groups left to the interpreter's shutdown can abort it (seen with gloo in torch
        # 2.15: "terminate called without an active exception", about one run in five).
        atexit.register(self.destroy_part_groups)

    def destroy_part_groups(self) -> None:
        atexit.unregister(self.destroy_part_groups)
        if dist.is_initialized():
            for g in self.part_groups.values():
                dist.destroy_process_group(g)
        self.part_groups.clear()

    def infer_metas(self, modules: dict[int, torch.nn.Module], first: tuple[Meta, ...]) -> dict[int, tuple[Meta, ...]]:
        """The shape and dtype of every stage's output, computed on the meta device along each pipeline.

        The rank hosting a stage runs its part on meta tensors and sends the result to the rank of
        the next stage. Every rank walks the stages in the same global order and the transfers block,
        so the walk cannot deadlock (the earliest unfinished transfer always has both sides at it).
        """
        layout = self.layout
        out: dict[int, tuple[Meta, ...]] = {}
        for s in range(layout.num_stages):
            if layout.is_last(s):
                continue
            host, nxt = layout.stage_rank[s], layout.stage_rank[s + 1]
            if host == layout.rank:
                inp = first if layout.is_first(s) else out[s - 1]
                out[s] = meta_forward(modules[layout.part(s)], inp, layout.part(s))
                if nxt != host:
                    dist.send_object_list(
                        [_wire(out[s])], group=self.group, group_dst=nxt, device=self._object_device()
                    )
            elif nxt == layout.rank:
                box: list[_Wire | None] = [None]
                dist.recv_object_list(box, group=self.group, group_src=host, device=self._object_device())
                out[s] = _unwire(box[0], host)
        return out

    def _object_device(self) -> torch.device | None:
        return self.device if self.device.type == "cuda" else None


def _posted(work: dist.Work | None) -> dist.Work:
    """The handle of a transfer just posted; torch gives None only to a rank outside the group."""
    if work is None:
        raise RuntimeError("a transfer was posted by a rank outside the plan's process group")
    return work


def _wire(meta: tuple[Meta, ...]) -> _Wire:
    return [(list(shape), str(dtype).removeprefix("torch.")) for shape, dtype in meta]


def _unwire(wire: _Wire | None, host: int) -> tuple[Meta, ...]:
    if wire is None:
        raise RuntimeError(f"rank {host} sent no output shapes")
    return tuple((tuple(shape), _dtype(name)) for shape, name in wire)


def _dtype(name: str) -> torch.dtype:
    """The dtype `str(dtype)` names without its `torch.` (what `_wire` sends)."""
    dtype = getattr(torch, name)
    if not isinstance(dtype, torch.dtype):
        raise RuntimeError(f"{name!r} names no torch dtype")
    return dtype


def meta_forward(module: torch.nn.Module, inp: tuple[Meta, ...], part: int) -> tuple[Meta, ...]:
    """Runs `module` on meta tensors (no data, no effect on its state) and returns its output's metas."""
    args = tuple(torch.empty(shape, dtype=dtype, device="meta") for shape, dtype in inp)
    state = {name: torch.empty_like(t, device="meta") for name, t in module.named_parameters()}
    state.update({name: torch.empty_like(t, device="meta") for name, t in module.named_buffers()})
    try:
        with torch.no_grad():
            out = torch.func.functional_call(module, state, args)
    except Exception as e:
        raise RuntimeError(
            f"cannot infer the output shape of model part {part} on the meta device "
            f"(input {[(list(s), str(d)) for s, d in inp]}): {e}"
        ) from e
    return metas(as_tensors(out, f"the output of model part {part}"))


class PartReduction:
    """The gradient reduction of one model part on this rank: scaled, then summed over its copies."""

    def __init__(self, params: list[torch.nn.Parameter], group: dist.ProcessGroup | None, divisor: int):
        self.params = params
        self.group = group
        self.divisor = divisor
        self.works: list[dist.Work] = []
        self.buckets: list[tuple[torch.Tensor, list[torch.nn.Parameter]]] = []

    def launch(self) -> None:
        for p in self.params:
            if p.grad is not None and self.divisor != 1:
                p.grad.div_(self.divisor)
        if self.group is None:
            return
        by_kind: dict[tuple[torch.dtype, torch.device], list[torch.nn.Parameter]] = {}
        for p in self.params:
            by_kind.setdefault((p.dtype, p.device), []).append(p)
        for params in by_kind.values():
            # A copy that computed nothing for a parameter contributes zeros.
            grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
            flat = torch.cat([g.reshape(-1) for g in grads])
            self.buckets.append((flat, params))
            self.works.append(dist.all_reduce(flat, group=self.group, async_op=True))

    def wait(self) -> None:
        for work in self.works:
            work.wait()
        for flat, params in self.buckets:
            at = 0
            for p in params:
                piece = flat[at : at + p.numel()].view_as(p)
                at += p.numel()
                if p.grad is None:
                    p.grad = piece.clone()
                else:
                    p.grad.copy_(piece)
        self.works.clear()
        self.buckets.clear()
