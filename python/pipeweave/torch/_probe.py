"""What `profile` adds about the plan's transfers: the bytes of its messages and gradients, and a
probe that times the links the plan uses.

`sizes` is what the plan moves, from the shapes the ranks agreed on (`Agreed.out_metas`) and the
parameters of the rank's parts: every point-to-point message between two ranks (per sending stage
and direction, per micro-batch) and each part's gradient bytes on this rank (what `PartReduction`
all-reduces among the part's copies).

`probe` times, after the profiled steps, every pair of ranks that the plan's pipelines connect
(consecutive ranks of a pipeline): a round trip of a message at each of a few sizes (the plan's
message sizes and a geometric range up to the largest part's gradient bytes, at most `MAX_BYTES`),
halved, and an all-reduce of the two ranks at each part's gradient bytes and the same sizes (at
most `MAX_BYTES`; none when no part has gradients);
each point the least of `REPEATS` timings after one untimed (timeit's rule: on a shared machine the
least disturbed timing is the link's own). Every rank runs the same sequence,
pair by pair in order, so the blocking transfers meet; the lower rank of a pair records its
points. A rank whose probe fails aborts the runner's process groups, as a failed step does, and
every rank raises the same `PipelineError`.
"""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

from ._comm import Broken, Meta, PipelineError, _transfer, differentiable

# Timings per point, after one untimed (which also lines the two ranks up); the least is kept.
REPEATS = 5
# The largest buffer the probe sends or reduces: a model's gradients can be gigabytes, and a line
# fitted up to 64 MiB carries a link's bandwidth to them.
MAX_BYTES = 1 << 26
# The smallest size probed, and the ratio between consecutive sizes of the geometric range.
MIN_BYTES = 1 << 10
RATIO = 4


def _bytes(meta: tuple[Meta, ...]) -> int:
    total = 0
    for shape, dtype in meta:
        n = 1
        for d in shape:
            n *= d
        total += n * _itemsize(dtype)
    return total


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def messages(stage_rank: dict[int, int], s_per: int, out_metas: dict[int, tuple[Meta, ...]]) -> list[dict[str, object]]:
    """Every message between two ranks of the plan, per micro-batch: the sending stage, the
    direction, the ranks and the bytes (a forward sends stage s's output to s + 1, a backward the
    gradient of its floating-point tensors back)."""
    out: list[dict[str, object]] = []
    for s in sorted(stage_rank):
        if s % s_per == s_per - 1 or s not in out_metas:
            continue
        a, b = stage_rank[s], stage_rank[s + 1]
        if a == b:
            continue
        meta = out_metas[s]
        out.append({"stage": s, "dir": "F", "from": a, "to": b, "bytes": _bytes(meta)})
        out.append({"stage": s + 1, "dir": "B", "from": b, "to": a, "bytes": _bytes(differentiable(meta))})
    return out


def gradient_bytes(params: dict[int, list[torch.nn.Parameter]]) -> list[dict[str, int]]:
    """Each part's gradient bytes on this rank: its parameters that take a gradient."""
    return [
        {"part": q, "bytes": sum(p.numel() * p.element_size() for p in ps)} for q, ps in sorted(params.items())
    ]


def pairs(stage_rank: dict[int, int], s_per: int) -> list[tuple[int, int]]:
    """The pairs of ranks (lower first) that consecutive stages of a pipeline join, in order."""
    found = {
        (min(stage_rank[s], stage_rank[s + 1]), max(stage_rank[s], stage_rank[s + 1]))
        for s in stage_rank
        if s % s_per != s_per - 1 and stage_rank[s] != stage_rank[s + 1]
    }
    return sorted(found)


def probe_sizes(message_bytes: list[int], gradients: list[int]) -> tuple[list[int], list[int]]:
    """The sizes of the point-to-point probe and of the all-reduce probe, ascending, in bytes
    (multiples of 4: the probe moves float32)."""

    def whole(n: int) -> int:
        return max(4, min(MAX_BYTES, (n + 3) // 4 * 4))

    top = whole(max([*gradients, *message_bytes, MIN_BYTES]))
    p2p = {whole(n) for n in message_bytes if n > 0} | {top}
    n = MIN_BYTES
    while n < top:
        p2p.add(n)
        n *= RATIO
    # The all-reduce at each part's gradient bytes, and along the same range, so that a line
    # through its points is not drawn between two sizes close together.
    reduce = {whole(n) for n in gradients if n > 0}
    if reduce:
        reduce |= p2p
    return sorted(p2p), sorted(reduce)


def run(runner: object) -> dict[str, object]:
    """Runs the probe on this rank (every rank of the plan calls it); returns this rank's record.
    Raises `PipelineError` on every rank when it fails on any."""
    from ._runner import PlanRunner

    assert isinstance(runner, PlanRunner)
    comm = runner._comm
    layout = runner._layout
    broken: str | None = None
    error: Exception | None = None
    record: dict[str, object] = {}
    made: list[dist.ProcessGroup] = []
    try:
        record = _run(runner, made)
        # Every rank's probe ended: a rank whose probe failed has aborted the groups by now.
        comm.all_gather_object(None)
    except Broken as e:
        broken = str(e)
    except Exception as e:
        error = e
    if error is None and broken is None:
        for g in made:
            dist.destroy_process_group(g)
        return record
    made.clear()
    if error is not None:
        words = str(error).strip().splitlines()
        first = words[0][:500] if words else ""
        runner._failure = comm.fail(f"rank {layout.rank} failed in the link probe: {type(error).__name__}: {first}")
        raise PipelineError(runner._failure) from error
    runner._failure = comm.cause(broken or "")
    raise PipelineError(runner._failure)


def _run(runner: object, made: list[dist.ProcessGroup]) -> dict[str, object]:
    from ._runner import PlanRunner

    assert isinstance(runner, PlanRunner)
    comm = runner._comm
    layout = runner._layout
    agreed = runner._agreed
    out_metas = agreed.out_metas if agreed is not None else {}
    sent = messages(layout.stage_rank, layout.s_per, out_metas)
    grads = comm.all_gather_object([g["bytes"] for g in gradient_bytes(runner._params)])
    all_grads = [int(n) for per_rank in grads if isinstance(per_rank, list) for n in per_rank]
    p2p_sizes, reduce_sizes = probe_sizes([int(m["bytes"]) for m in sent], all_grads)  # type: ignore[call-overload]
    group = comm._pg()
    device = runner._device
    cuda = device.type == "cuda"
    me = layout.rank
    p2p: list[dict[str, object]] = []
    reduces: list[dict[str, object]] = []
    for a, b in pairs(layout.stage_rank, layout.s_per):
        if me not in (a, b):
            continue
        peer = b if me == a else a
        for n in p2p_sizes:
            buf = torch.zeros(n // 4, dtype=torch.float32, device=device)
            times = []
            for i in range(REPEATS + 1):
                start = time.perf_counter()
                with _transfer():
                    if me == a:
                        dist.send(buf, group=group, group_dst=peer)
                        dist.recv(buf, group=group, group_src=peer)
                    else:
                        dist.recv(buf, group=group, group_src=peer)
                        dist.send(buf, group=group, group_dst=peer)
                if cuda:
                    torch.cuda.synchronize(device)
                if i > 0:
                    times.append((time.perf_counter() - start) / 2)
            if me == a:
                p2p.append({"from": a, "to": b, "bytes": n, "time": round(min(times), 9)})
        if not reduce_sizes:
            continue
        if layout.ranks == 2:
            pair_group = group
        else:
            with _transfer():
                g = dist.new_group(
                    [comm.global_rank(a), comm.global_rank(b)],
                    backend=dist.get_backend(group),
                    use_local_synchronization=True,
                    group_desc=f"pipeweave_probe_{a}_{b}",
                )
            if not isinstance(g, dist.ProcessGroup):
                raise RuntimeError(f"rank {me} is not in the probe's group of ranks {a} and {b}")
            made.append(g)
            pair_group = g
        for n in reduce_sizes:
            buf = torch.zeros(n // 4, dtype=torch.float32, device=device)
            times = []
            for i in range(REPEATS + 1):
                start = time.perf_counter()
                with _transfer():
                    dist.all_reduce(buf, group=pair_group)
                if cuda:
                    torch.cuda.synchronize(device)
                if i > 0:
                    times.append(time.perf_counter() - start)
            if me == a:
                reduces.append({"ranks": [a, b], "bytes": n, "time": round(min(times), 9)})
    return {"repeats": REPEATS, "p2p": p2p, "all_reduce": reduces}
