"""The bytes autograd keeps saved for the backward, counted through `saved_tensors_hooks`.

Installed only while a step is profiled (`pipeweave.torch.profile`): a step without it runs no hook.
A saved tensor counts its storage's bytes once however many saved tensors share that storage (a
view, an input saved by two operations, a stage's output that the next stage on the same rank
saves as its input), from the moment the first is saved until the last is released. Storages
that a step holds whatever the backward needs are not counted: the parameters and buffers of the
rank's parts, and the batch the caller passed in.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True, slots=True)
class SavedBytes:
    """What one action of a profiled step left saved for the backward on its rank.

    `action` is the action's cell (`3F2`, `(0F3;7B5)OVERLAP_F_B`); `bytes` the bytes saved for
    the backward and still held right after the action, over every stage of the rank; `peak` the
    most held at any moment of the step so far, this action included. On CUDA
    `max_memory_allocated` is `torch.cuda.max_memory_allocated` of the rank's device right after
    the action (its peak is reset when the profiled step starts); None on the CPU.
    """

    action: str
    bytes: int
    peak: int
    max_memory_allocated: int | None = None


class _Held:
    """A saved tensor as autograd stores it while the hooks are on; releases its bytes when dropped."""

    __slots__ = ("counter", "key", "tensor")

    def __init__(self, tensor: torch.Tensor, key: int, counter: SavedCounter):
        self.tensor = tensor
        self.key = key
        self.counter = counter

    def __del__(self) -> None:
        self.counter.release(self.key)


class SavedCounter:
    """Counts the live saved bytes of one rank and their peak; one per runner, reset per step."""

    def __init__(self) -> None:
        self.live = 0
        self.peak = 0
        self._held: dict[int, list[int]] = {}
        self._ignored: set[int] = set()

    def start(self, ignored: set[int]) -> None:
        """A new step: the storages in `ignored` (data pointers) are never counted."""
        self._ignored = ignored
        self.peak = self.live

    def hooks(self) -> torch.autograd.graph.saved_tensors_hooks:
        return torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)

    def release(self, key: int) -> None:
        entry = self._held.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            del self._held[key]
            self.live -= entry[0]

    def _pack(self, tensor: torch.Tensor) -> object:
        if tensor.layout != torch.strided:
            return tensor
        storage = tensor.untyped_storage()
        key = storage.data_ptr()
        size = storage.nbytes()
        if size == 0 or key in self._ignored:
            return tensor
        entry = self._held.get(key)
        if entry is None:
            self._held[key] = [size, 1]
            self.live += size
            if self.live > self.peak:
                self.peak = self.live
        else:
            entry[1] += 1
        # Detached: a saved output would otherwise hold its own node (a cycle that outlives the step).
        return _Held(tensor.detach(), key, self)

    @staticmethod
    def _unpack(packed: object) -> torch.Tensor:
        if isinstance(packed, _Held):
            return packed.tensor
        assert isinstance(packed, torch.Tensor)
        return packed


def storages(tensors: object) -> set[int]:
    """The data pointers of the storages of the tensors in `tensors` (nested tuples, lists, modules)."""
    found: set[int] = set()
    stack = [tensors]
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            if item.layout == torch.strided:
                found.add(item.untyped_storage().data_ptr())
        elif isinstance(item, torch.nn.Module):
            stack.extend(item.parameters())
            stack.extend(item.buffers())
        elif isinstance(item, (tuple, list)):
            stack.extend(item)
    return found
