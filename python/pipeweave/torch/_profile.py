"""`profile`: runs steps of a `PlanRunner` under `torch.profiler` and writes one trace per rank.

The trace is the Chrome/Kineto JSON that `torch.profiler.profile.export_chrome_trace` writes, with
the runner's spans ("pw " + each step's cell), and pipeweave's additions:
- one instant event "pw saved" after every compute action (the saved bytes, `SavedBytes`),
- "distributedInfo" (rank and world size) where PyTorch did not write it,
- "pipeweave": the plan's rank and size, the profiled steps and their wall times, the bytes of the
  plan's messages and of this rank's gradients per part, and the link probe's timings (`_probe.py`).
"""

from __future__ import annotations

import gzip as gzip_module
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from ._comm import Broken, PipelineError
from . import _probe
from ._layout import Compute
from ._runner import Batch, PlanRunner
from ._saved import SavedBytes, SavedCounter

# Events kept by `operators=False`: the metadata, the profiler's step spans and pipeweave's own.
_KEPT_PREFIXES = ("pw ", "ProfilerStep#")


@dataclass(frozen=True)
class Profiled:
    """What `profile` measured on this rank.

    `trace` is the path of the trace it wrote; `step_times` the wall time of each profiled step on
    this rank, in seconds (`time.perf_counter`, after a CUDA synchronisation on CUDA);
    `saved_bytes` one list per profiled step of one `SavedBytes` per compute action, in order.
    """

    rank: int
    trace: str
    step_times: list[float] = field(default_factory=list)
    saved_bytes: list[list[SavedBytes]] = field(default_factory=list)

    @property
    def median_step_time(self) -> float:
        """The median of `step_times`, in seconds."""
        return statistics.median(self.step_times)

    @property
    def peak_saved_bytes(self) -> int:
        """The most bytes saved for the backward at once on this rank, over the profiled steps."""
        return max((r.peak for records in self.saved_bytes for r in records), default=0)


def profile(
    runner: PlanRunner,
    inputs: Batch | None,
    targets: Batch | None = None,
    *,
    steps: int = 3,
    dir: str | os.PathLike[str],
    warmup: int = 1,
    after_step: Callable[[], object] | None = None,
    gzip: bool = False,
    operators: bool = True,
    probe: bool = True,
) -> Profiled:
    """Runs `warmup` steps, then `steps` steps, under `torch.profiler`; writes this rank's trace of the `steps` into `dir`.

    Call it on every rank of the plan, as `runner.step`: every step is `runner.step(inputs,
    targets)`, followed by `after_step()` when given (an optimizer's step and `zero_grad`, say),
    warm-up steps included. The trace is `dir/rank{R}.pt.trace.json` (`.json.gz` with `gzip=True`),
    R the runner's rank in the plan, written whole or not at all; with `operators=False` it keeps
    only the profiler's step spans and pipeweave's events (PyTorch's operators dropped, a much
    smaller file). Every step counts the bytes autograd saves for the backward (hooks that only a
    profiled step installs); the runner's `saved_bytes` holds the last step's records.
    The trace's "pipeweave" object holds the bytes of every message between two ranks and of each
    part's gradients on this rank; with `probe=True` (the default), after the profiled steps,
    every rank times the links the plan uses (round trips at a few sizes and a two-rank
    all-reduce at each part's gradient bytes, outside the profiler) and its trace holds the times
    it took (`pipeweave calibrate` fits each link's latency and bandwidth to them). A probe that
    fails on one rank raises the same `PipelineError` on every rank, as a failed step does.
    """
    if not isinstance(runner, PlanRunner):
        raise TypeError(f"profile needs a pipeweave.torch.PlanRunner, got {type(runner).__name__}")
    if type(steps) is not int or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if type(warmup) is not int or warmup < 0:
        raise ValueError(f"warmup must be a non-negative integer, got {warmup!r}")
    if after_step is not None and not callable(after_step):
        raise TypeError("after_step must be callable with no argument, or None")
    if type(probe) is not bool:
        raise TypeError(f"probe must be True or False, got {probe!r}")
    if not isinstance(dir, (str, os.PathLike)):
        raise TypeError(f"dir must be a path, got {type(dir).__name__}")
    rank = runner._layout.rank
    folder = os.fspath(dir)
    suffix = ".json.gz" if gzip else ".json"
    path = os.path.join(folder, f"rank{rank}.pt.trace{suffix}")
    _agree_on(runner, _unwritable(folder))

    cuda = runner._device.type == "cuda"
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    times: list[float] = []
    records: list[list[SavedBytes]] = []
    # A schedule, so that each step is a "ProfilerStep#N" span; its warm-up steps are not recorded.
    plan = torch.profiler.schedule(wait=0, warmup=warmup, active=steps, repeat=1)
    try:
        with torch.profiler.profile(activities=activities, schedule=plan) as prof:
            for i in range(warmup + steps):
                active = i >= warmup
                if active and runner._counter is None:
                    runner._counter = SavedCounter()
                start = time.perf_counter()
                runner.step(inputs, targets)
                if cuda:
                    torch.cuda.synchronize(runner._device)
                if active:
                    times.append(time.perf_counter() - start)
                    records.append(runner.saved_bytes)
                if after_step is not None:
                    after_step()
                prof.step()
    finally:
        runner._counter = None
    probed = _probe.run(runner) if probe else None
    with tempfile.TemporaryDirectory(dir=folder, prefix=".pw-trace-") as scratch:
        raw = os.path.join(scratch, "raw.json")
        prof.export_chrome_trace(raw)
        with open(raw, encoding="utf-8") as f:
            trace = json.load(f)
    _annotate(trace, runner, records, times, operators, probed)
    _write(path, trace, gzip)
    return Profiled(rank=rank, trace=path, step_times=times, saved_bytes=records)


def _unwritable(folder: str) -> str | None:
    """Why traces cannot be written into `folder` (made if missing), or None."""
    try:
        os.makedirs(folder, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".pw-check-"):
            pass
    except OSError as e:
        return f"cannot write the traces into {folder}: {e.strerror or e}"
    return None


def _agree_on(runner: PlanRunner, problem: str | None) -> None:
    """Raises on every rank when `problem` is set on any (before any step, so no rank is left waiting)."""
    try:
        runner._comm.open()
        problems = runner._comm.all_gather_object(problem)
    except Broken as e:
        raise PipelineError(runner._comm.cause(str(e))) from None
    mine = problems[runner._layout.rank]
    if mine is not None:
        raise OSError(str(mine))
    for r, p in enumerate(problems):
        if p is not None:
            raise OSError(f"rank {r} {p}")


def _annotate(
    trace: dict[str, object],
    runner: PlanRunner,
    records: list[list[SavedBytes]],
    times: list[float],
    operators: bool,
    probed: dict[str, object] | None,
) -> None:
    raw_events = trace.get("traceEvents")
    if not isinstance(raw_events, list):
        raise RuntimeError("torch.profiler wrote a trace without traceEvents")
    events: list[dict[str, object]] = [e for e in raw_events if isinstance(e, dict)]
    cells = set(runner._layout.cells()) | set(runner._step_layout(True).cells())
    computes = {
        c for layout in (runner._layout, runner._step_layout(True))
        for c, s in zip(layout.cells(), layout.steps, strict=True) if isinstance(s, Compute)
    }
    spans = [
        e for e in events
        if e.get("ph") == "X" and isinstance(e.get("name"), str) and str(e["name"]).startswith("pw ")
        and str(e["name"])[3:] in cells and e.get("cat") == "user_annotation"
    ]
    spans.sort(key=lambda e: _number(e.get("ts")))
    actions = [e for e in spans if str(e["name"])[3:] in computes]
    flat = [r for step in records for r in step]
    if len(actions) != len(flat) or any(str(e["name"])[3:] != r.action for e, r in zip(actions, flat)):
        raise RuntimeError(
            f"rank {runner._layout.rank}: the trace holds {len(actions)} spans of compute actions, "
            f"the profiled steps ran {len(flat)}: the trace does not follow the runner"
        )
    added: list[dict[str, object]] = []
    for e, r in zip(actions, flat):
        args: dict[str, object] = {"action": r.action, "bytes": r.bytes, "peak": r.peak}
        if r.max_memory_allocated is not None:
            args["max_memory_allocated"] = r.max_memory_allocated
        end = round(_number(e.get("ts")) + _number(e.get("dur")), 3)
        added.append({"ph": "i", "s": "t", "cat": "pipeweave", "name": "pw saved", "pid": e.get("pid"),
                      "tid": e.get("tid"), "ts": end, "args": args})
    if not operators:
        events = [
            e for e in events
            if e.get("ph") == "M" or str(e.get("name", "")).startswith(_KEPT_PREFIXES)
        ]
    trace["traceEvents"] = events + added
    if not isinstance(trace.get("distributedInfo"), dict):
        world = dist.get_world_size()
        trace["distributedInfo"] = {"backend": dist.get_backend(), "rank": dist.get_rank(), "world_size": world}
    layout = runner._layout
    agreed = runner._agreed
    meta: dict[str, object] = {
        "rank": layout.rank,
        "ranks": layout.ranks,
        "microbatches": layout.microbatches,
        "steps": len(times),
        "step_times_s": [round(t, 9) for t in times],
        "messages": _probe.messages(layout.stage_rank, layout.s_per, agreed.out_metas if agreed is not None else {}),
        "gradients": _probe.gradient_bytes(runner._params),
    }
    if probed is not None:
        meta["probe"] = probed
    trace["pipeweave"] = meta


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def _write(path: str, trace: dict[str, object], gzip: bool) -> None:
    """Writes `trace` to `path` whole or not at all (a file beside it, then renamed)."""
    folder = os.path.dirname(path) or "."
    fd, scratch = tempfile.mkstemp(dir=folder, prefix=".pw-trace-")
    try:
        # mkstemp makes the file private; a trace gets the modes of any file the user writes.
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(scratch, 0o666 & ~mask)
        with os.fdopen(fd, "wb") as f:
            data = json.dumps(trace, separators=(",", ":")).encode("utf-8")
            if gzip:
                # mtime=0: the same trace gives the same bytes.
                with gzip_module.GzipFile(fileobj=f, mode="wb", mtime=0) as z:
                    z.write(data)
            else:
                f.write(data)
        os.replace(scratch, path)
    except BaseException:
        if os.path.exists(scratch):
            os.unlink(scratch)
        raise
