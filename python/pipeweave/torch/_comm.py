"""Communication of the runner: point-to-point transfers, shapes of what travels, gradient reductions,
and what a rank does when a step fails.

Pipeline transfers are untagged and matched in posting order between two ranks, as NCCL matches
them, so the order of the plan's lowered steps is the order on the wire.
Replicated parts reduce their gradients with one all-reduce per part in a process group of its
own, so reductions never mix with the pipeline's messages nor with each other.

Every wait goes through `Comm`, which turns a failed transfer into `Broken`: the step failed
because another rank did. A rank whose own work fails writes why in the process group's store
(the first failure of a runner wins) and aborts its process groups, so that the transfers its
peers wait for fail at once; they read the cause from the store and raise the same error.
"""

from __future__ import annotations

import atexit
import datetime
from collections.abc import Sequence
from typing import TypeAlias

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Store

from ._layout import Layout

Meta: TypeAlias = tuple[tuple[int, ...], torch.dtype]

# What travels to say a stage's output shapes: (shape, dtype name) per tensor.
Wire: TypeAlias = list[tuple[list[int], str]]

# How long a rank whose transfer failed waits for the failing rank's words in the store.
_CAUSE_WAIT = datetime.timedelta(seconds=10)


class Broken(Exception):
    """A transfer or collective failed: another rank failed, or the connection to it was lost."""


class PipelineError(RuntimeError):
    """A step failed on one rank and was abandoned on every rank; the message names the rank and why.

    The runner's process groups are aborted (so that no rank waits for a timeout); build a new
    process group and runner to go on.
    """


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
    """Point-to-point transfers, collectives and reductions in process groups of the runner's own.

    The runner's messages travel in a process group it creates over the ranks of the caller's
    group (`open`, on the first step), so that a failure can tear it down without touching the
    caller's group: gloo's `abort()` leaves the connections open (torch 2.15), and only a process
    group that is dropped closes them, which is what makes the peers' transfers fail at once.
    """

    def __init__(self, layout: Layout, group: dist.ProcessGroup | None, device: torch.device):
        self.layout = layout
        self.user_group = group
        self.group: dist.ProcessGroup | None = None
        self.device = device
        self.part_groups: dict[int, dist.ProcessGroup] = {}
        self.token = ""
        self.aborted = False
        self._store: Store | None = None

    def global_rank(self, rank: int) -> int:
        if self.user_group is None or self.user_group is dist.GroupMember.WORLD:
            return rank
        return dist.get_global_rank(self.user_group, rank)

    def open(self) -> None:
        """Creates the runner's process group (once); every rank of the plan calls it."""
        if self.group is not None:
            return
        backend = None if self.user_group is None else dist.get_backend(self.user_group)
        ranks = [self.global_rank(r) for r in range(self.layout.ranks)]
        with _transfer():
            g = dist.new_group(ranks, backend=backend, use_local_synchronization=True, group_desc="pipeweave")
        if not isinstance(g, dist.ProcessGroup):
            raise RuntimeError("this rank is not in the plan's process group")
        self.group = g
        self._store = _store_of(g)
        atexit.register(self.destroy_groups)

    def _pg(self) -> dist.ProcessGroup:
        if self.group is None:
            raise Broken("the runner's process group is gone (a step failed before)")
        return self.group

    def send(self, tensors: tuple[torch.Tensor, ...], peer: int) -> list[dist.Work]:
        g = self._pg()
        with _transfer():
            return [_posted(dist.isend(t, group=g, group_dst=peer)) for t in tensors]

    def recv(self, meta: tuple[Meta, ...], peer: int) -> tuple[list[dist.Work], tuple[torch.Tensor, ...]]:
        g = self._pg()
        buffers = tuple(torch.empty(shape, dtype=dtype, device=self.device) for shape, dtype in meta)
        with _transfer():
            return [_posted(dist.irecv(b, group=g, group_src=peer)) for b in buffers], buffers

    @staticmethod
    def wait(works: list[dist.Work]) -> None:
        with _transfer():
            for work in works:
                work.wait()

    def collective_device(self) -> torch.device:
        """Where the tensors of collectives live: the rank's device for NCCL, else the CPU."""
        return self.device if dist.get_backend(self._pg()) == "nccl" else torch.device("cpu")

    def all_reduce_max(self, t: torch.Tensor) -> None:
        g = self._pg()
        with _transfer():
            dist.all_reduce(t, op=dist.ReduceOp.MAX, group=g)

    def all_reduce_max_async(self, t: torch.Tensor) -> dist.Work:
        """Starts an all-reduce (max) of `t` in place; wait for its handle with `wait`."""
        g = self._pg()
        with _transfer():
            return _posted(dist.all_reduce(t, op=dist.ReduceOp.MAX, group=g, async_op=True))

    def all_reduce_sum(self, t: torch.Tensor) -> None:
        g = self._pg()
        with _transfer():
            dist.all_reduce(t, group=g)

    def broadcast(self, t: torch.Tensor, src: int) -> None:
        g = self._pg()
        with _transfer():
            dist.broadcast(t, group=g, group_src=src)

    @staticmethod
    def broadcast_in(t: torch.Tensor, src: int, group: dist.ProcessGroup) -> None:
        """Broadcasts `t` from global rank `src` in `group` (a part's group)."""
        with _transfer():
            dist.broadcast(t, src=src, group=group)

    def all_gather_object(self, obj: object) -> list[object]:
        g = self._pg()
        out: list[object] = [None] * self.layout.ranks
        with _transfer():
            dist.all_gather_object(out, obj, group=g)
        return out

    def send_object(self, obj: object, peer: int) -> None:
        g = self._pg()
        with _transfer():
            dist.send_object_list([obj], group=g, group_dst=peer, device=self._object_device())

    def recv_object(self, peer: int) -> object:
        g = self._pg()
        box: list[object] = [None]
        with _transfer():
            dist.recv_object_list(box, group=g, group_src=peer, device=self._object_device())
        return box[0]

    def make_part_groups(self) -> None:
        """One process group per replicated part; every rank of the plan creates them in part order."""
        backend = dist.get_backend(self._pg())
        for q, copies in enumerate(self.layout.copies):
            if len(copies) < 2:
                continue
            with _transfer():
                g = dist.new_group(
                    [self.global_rank(r) for r in copies],
                    backend=backend,
                    use_local_synchronization=True,
                    group_desc=f"pipeweave_part_{q}",
                )
            # `new_group` answers a rank outside the group with a marker that is no ProcessGroup.
            if self.layout.rank in copies and isinstance(g, dist.ProcessGroup):
                self.part_groups[q] = g

    def destroy_part_groups(self) -> None:
        if dist.is_initialized() and not self.aborted:
            for g in self.part_groups.values():
                dist.destroy_process_group(g)
        self.part_groups.clear()

    def destroy_groups(self) -> None:
        """Destroys the runner's process groups (its own and the parts')."""
        # Process groups left to the interpreter's shutdown can abort it (seen with gloo in torch
        # 2.15: "terminate called without an active exception", about one run in five).
        atexit.unregister(self.destroy_groups)
        self.destroy_part_groups()
        if dist.is_initialized() and not self.aborted and self.group is not None:
            dist.destroy_process_group(self.group)
        self.group = None

    def fail(self, message: str) -> str:
        """This rank's work failed: records why (unless a failure is recorded already), aborts, and
        returns the words every rank raises."""
        if self._store is not None and self.token:
            try:
                # The first failure of the runner wins: a rank failing after it reads it instead.
                got = self._store.compare_set(self._failure_key(), "", message)
                message = got.decode() if isinstance(got, bytes) else str(got)
            except Exception:
                pass
        self.abort()
        return message

    def cause(self, broken: str) -> str:
        """Why a transfer of this rank failed: the failing rank's words from the store, or the error."""
        self.abort()
        if self._store is not None and self.token:
            try:
                self._store.wait([self._failure_key()], _CAUSE_WAIT)
                return str(self._store.get(self._failure_key()).decode())
            except Exception:
                pass
        return (
            f"rank {self.layout.rank}: a transfer failed and no rank said why (a rank lost or killed?): "
            f"{broken.strip().splitlines()[0][:300] if broken.strip() else 'no message'}"
        )

    def abort(self) -> None:
        """Aborts and drops the runner's process groups: every transfer a peer waits for fails now."""
        if self.aborted:
            return
        self.aborted = True
        atexit.unregister(self.destroy_groups)
        groups = [*self.part_groups.values(), *([self.group] if self.group is not None else [])]
        self.part_groups.clear()
        self.group = None
        for g in groups:
            try:
                dist.distributed_c10d._abort_process_group(g)
            except Exception:
                pass
        groups.clear()

    def _failure_key(self) -> str:
        return f"pipeweave/{self.token}/failure"

    def _object_device(self) -> torch.device | None:
        return self.device if self.device.type == "cuda" else None


def _store_of(group: dist.ProcessGroup) -> Store | None:
    try:
        return dist.distributed_c10d._get_process_group_store(group)
    except Exception:
        return None


class _transfer:
    """Turns a failure of a transfer or collective into `Broken`."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        if error is not None and isinstance(error, (RuntimeError, ValueError)) and not isinstance(error, Broken):
            # Only the words: the error's frames hold the transfers, which hold the process group open.
            raise Broken(str(error)) from None


def _posted(work: dist.Work | None) -> dist.Work:
    """The handle of a transfer just posted; torch gives None only to a rank outside the group."""
    if work is None:
        raise RuntimeError("a transfer was posted by a rank outside the plan's process group")
    return work


def wire(meta: tuple[Meta, ...]) -> Wire:
    return [(list(shape), str(dtype).removeprefix("torch.")) for shape, dtype in meta]


def unwire(w: object) -> tuple[Meta, ...]:
    if not isinstance(w, list):
        raise RuntimeError(f"expected a list of (shape, dtype), got {type(w).__name__}")
    return tuple((tuple(shape), _dtype(name)) for shape, name in w)


def _dtype(name: str) -> torch.dtype:
    """The dtype `str(dtype)` names without its `torch.` (what `wire` sends)."""
    dtype = getattr(torch, name)
    if not isinstance(dtype, torch.dtype):
        raise RuntimeError(f"{name!r} names no torch dtype")
    return dtype


def meta_forward(module: torch.nn.Module, inp: tuple[Meta, ...], device: torch.device) -> tuple[Meta, ...]:
    """Runs `module` without data (no effect on its state) and returns its output's metas.

    On meta tensors; under `torch.autocast` for the part's device, on fake tensors of that device
    instead, since autocast acts by device and leaves meta tensors in their dtype.
    """
    if torch.is_autocast_enabled(device.type):
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode(), torch.no_grad():
            return _run_empty(module, inp, device)
    with torch.no_grad():
        return _run_empty(module, inp, torch.device("meta"))


def _run_empty(module: torch.nn.Module, inp: tuple[Meta, ...], device: torch.device) -> tuple[Meta, ...]:
    args = tuple(torch.empty(shape, dtype=dtype, device=device) for shape, dtype in inp)
    state = {name: torch.empty(t.shape, dtype=t.dtype, device=device) for name, t in module.named_parameters()}
    state.update({name: torch.empty(t.shape, dtype=t.dtype, device=device) for name, t in module.named_buffers()})
    out = torch.func.functional_call(module, state, args)
    return metas(as_tensors(out, "the part's output"))


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
            with _transfer():
                self.works.append(dist.all_reduce(flat, group=self.group, async_op=True))

    def wait(self) -> None:
        with _transfer():
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
