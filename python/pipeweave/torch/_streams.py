"""Where a rank's compute runs: on CPU in program order, on CUDA the ambient stream and a side stream."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from types import TracebackType

import torch


class Streams:
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
    def __init__(self, streams: Streams, b_stage: int, b_mb: int):
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
