"""`pipeweave.torch.profile` in real runs at P = 2 (gloo, one thread per rank; tests/fidelity/worker.py):
the profiler's spans name every step of the plan, the saved bytes are what autograd keeps, and
profiling changes no gradient."""

import gzip
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(ROOT, "tests", "fidelity", "worker.py")
sys.path.insert(0, os.path.join(ROOT, "tests", "fidelity"))
import model  # noqa: E402

RUNS = {
    # name: (schedule, worker arguments)
    "1f1b": ("1f1b", ["--size", "small", "--microbatches", "4", "--steps", "2", "--warmup", "1"]),
    "zb-h1": ("zb-h1", ["--size", "small", "--microbatches", "4", "--steps", "1", "--warmup", "1"]),
    "dualpipe": ("dualpipe", ["--size", "small", "--microbatches", "4", "--steps", "1", "--warmup", "1", "--gzip"]),
    "mlp": ("gpipe", ["--size", "mlp", "--microbatches", "4", "--steps", "1", "--grads", "--misuse"]),
    "probe-fails": ("1f1b", ["--size", "mlp", "--microbatches", "2", "--probe-fails"]),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    for name, (schedule, args) in RUNS.items():
        folder = tmp_path_factory.mktemp(f"profile-{name}")
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", WORKER,
               "--schedule", schedule, *args, "--out", str(folder)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        out[name] = folder
    return out


def load_trace(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def result(folder, rank):
    with open(folder / f"result-rank{rank}.json") as f:
        return json.load(f)


def cell(a):
    if a.kind == "pair":
        f, b = a.pair
        return f"({cell(f)};{cell(b)})OVERLAP_F_B"
    return f"{a.stage}{a.kind}{a.mb}"


def expected_spans(plan, rank, posts=True):
    """The spans of one step, from the plan alone: each step's cell; a receive from another rank is
    its wait, right before the action that uses the data, and its posting "post " + its cell where
    the lowered program posts it (`posts`: traces recorded before PlanRunner timed the postings
    have none)."""
    placement = plan.placement
    s_per = plan.stages_per_pipeline
    where = {j * s_per + q: r for j, p in enumerate(placement) for q, r in enumerate(p)}
    actions = plan.actions(rank)
    names = []
    for step in plan.steps(rank):
        if step.kind == "compute":
            a = actions[step.action]
            for op in a.pair if a.kind == "pair" else (a,):
                if op.kind == "F" and op.stage % s_per != 0 and where[op.stage - 1] != rank:
                    names.append(f"{op.stage}RECV_F{op.mb}")
                if op.kind in "BI" and op.stage % s_per != s_per - 1 and where[op.stage + 1] != rank:
                    names.append(f"{op.stage}RECV_B{op.mb}")
            names.append(cell(a))
        elif step.kind == "recv":
            if posts:
                names.append(f"post {step.stage}RECV_{'F' if step.dir == 'fwd' else 'B'}{step.mb}")
        elif step.kind in ("reduce_grad", "wait_reduce_grad"):
            names.append(f"{step.stage}{step.kind.upper()}")
        else:
            kind = {"send": "SEND_", "wait_send": "WAIT_SEND_"}[step.kind]
            names.append(f"{step.stage}{kind}{'F' if step.dir == 'fwd' else 'B'}{step.mb}")
    return names


@pytest.mark.parametrize("name", ["1f1b", "zb-h1", "dualpipe"])
def test_every_step_of_the_plan_is_a_span_named_by_its_cell(runs, name):
    import pipeweave as pw

    schedule, args = RUNS[name]
    steps = int(args[args.index("--steps") + 1])
    plan = pw.compile(schedule, ranks=2, microbatches=4)
    for rank in range(2):
        got = result(runs[name], rank)
        trace = load_trace(runs[name] / got["trace"])
        assert got["trace"] == f"rank{rank}.pt.trace.json" + (".gz" if "--gzip" in args else "")
        assert trace["distributedInfo"]["rank"] == rank and trace["distributedInfo"]["world_size"] == 2
        assert trace["pipeweave"]["rank"] == rank and trace["pipeweave"]["steps"] == steps
        events = trace["traceEvents"]
        spans = sorted(
            (e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation" and e["name"].startswith("pw ")),
            key=lambda e: e["ts"],
        )
        assert [e["name"][3:] for e in spans] == expected_spans(plan, rank) * steps
        # On the rank's main thread, and one span never inside another.
        assert {(e["pid"], e["tid"]) for e in spans} == {(spans[0]["pid"], spans[0]["tid"])}
        for a, b in zip(spans, spans[1:]):
            assert a["ts"] + a["dur"] <= b["ts"] + 1e-3
        profiler_steps = [e for e in events if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")]
        assert len(profiler_steps) == steps
        # A "pw saved" instant at the end of every compute action, with the runner's records.
        computes = [e for e in spans if e["name"][3:] in {cell(a) for a in plan.actions(rank)}]
        saved = sorted((e for e in events if e.get("name") == "pw saved"), key=lambda e: e["ts"])
        assert len(saved) == len(computes) == len(plan.actions(rank)) * steps
        for span, mark in zip(computes, saved):
            assert mark["ph"] == "i" and (mark["pid"], mark["tid"]) == (span["pid"], span["tid"])
            assert mark["ts"] == pytest.approx(span["ts"] + span["dur"], abs=1e-3)
            assert mark["args"]["action"] == span["name"][3:]
        last = saved[-len(plan.actions(rank)):]
        assert [[m["args"][k] for k in ("action", "bytes", "peak")] for m in last] == got["saved_bytes"]
        # Every saved tensor is released by the end of the step.
        assert got["saved_bytes"][-1][1] == 0 or plan.actions(rank)[-1].kind == "F"


def test_saved_bytes_are_what_autograd_keeps_for_the_backward(runs):
    # GPipe at P = 2, M = 4 on the MLP: part q is Linear then tanh (float64, 2 rows of 8).
    # Rank 0 keeps tanh's output (2 x 8 x 8 bytes) per micro-batch: Linear's input is the batch
    # (the caller's, not counted) and its weight a parameter (not counted).
    # Rank 1 keeps its received input (saved by Linear) and tanh's output, which the MSE saves
    # again (one storage, counted once); the target is the batch's: 256 bytes per micro-batch.
    per = model.MLP_ROWS * model.MLP_WIDTH * 8
    for rank, bytes_per_mb in ((0, per), (1, 2 * per)):
        got = result(runs["mlp"], rank)
        live = [bytes_per_mb * k for k in (1, 2, 3, 4, 3, 2, 1, 0)]
        peaks = [bytes_per_mb * k for k in (1, 2, 3, 4, 4, 4, 4, 4)]
        names = [f"{rank}{kind}{mb}" for kind in "FB" for mb in range(4)]
        assert got["saved_bytes"] == [list(r) for r in zip(names, live, peaks)]
        assert got["peak_saved_bytes"] == 4 * bytes_per_mb


def test_profiling_changes_no_gradient(runs):
    for rank in range(2):
        grads = torch.load(runs["mlp"] / f"grads-rank{rank}.pt")
        assert grads["plain"].keys() == grads["profiled"].keys() and grads["plain"]
        for name, g in grads["plain"].items():
            assert torch.equal(g, grads["profiled"][name]), name


def test_misuse_is_refused_with_clear_words_on_every_rank(runs):
    for rank in range(2):
        errors = result(runs["mlp"], rank)["errors"]
        assert errors["not_a_runner"] == ["TypeError", "profile needs a pipeweave.torch.PlanRunner, got object"]
        assert errors["steps_zero"] == ["ValueError", "steps must be a positive integer, got 0"]
        assert errors["steps_bool"] == ["ValueError", "steps must be a positive integer, got True"]
        assert errors["warmup_negative"] == ["ValueError", "warmup must be a non-negative integer, got -1"]
        assert errors["probe_not_bool"] == ["TypeError", "probe must be True or False, got 1"]
        bad = str(runs["mlp"] / f"file-rank{rank}" / "traces")
        assert errors["dir_is_a_file"] == ["OSError", f"cannot write the traces into {bad}: Not a directory"]
        bad1 = str(runs["mlp"] / "file-rank1" / "traces")
        want = f"cannot write the traces into {bad1}: Not a directory"
        assert errors["dir_bad_on_rank_1"] == ["OSError", want if rank == 1 else f"rank 1 {want}"]
    # The runner still trains after the refusals (the profiled step ran after them).
    assert (runs["mlp"] / "rank0.pt.trace.json").exists()


def _records():
    import importlib.util

    spec = importlib.util.spec_from_file_location("record_traces", os.path.join(ROOT, "tests", "data", "traces", "record.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RECORD = _records()


def _option(args, name, default=None):
    """The last value of `name` in the worker's arguments (as argparse reads them)."""
    found = [args[i + 1] for i, a in enumerate(args) if a == name]
    return found[-1] if found else default


def step_cell(step, actions):
    """A lowered step's cell, as PyTorch's compute_comms CSV writes it."""
    if step.kind == "compute":
        return cell(actions[step.action])
    if step.kind in ("reduce_grad", "wait_reduce_grad"):
        return f"{step.stage}{step.kind.upper()}"
    kind = {"recv": "RECV_", "send": "SEND_", "wait_send": "WAIT_SEND_"}[step.kind]
    return f"{step.stage}{kind}{'F' if step.dir == 'fwd' else 'B'}{step.mb}"


@pytest.mark.parametrize("folder", sorted(RECORD.RECORDS))
def test_the_recorded_traces_follow_their_plans(folder):
    import pipeweave as pw

    args = RECORD.COMMON + RECORD.RECORDS[folder]
    kwargs = {"ranks": 2, "microbatches": int(_option(args, "--microbatches"))}
    if _option(args, "--stages-per-rank"):
        kwargs["stages_per_rank"] = int(_option(args, "--stages-per-rank"))
    plan = pw.compile(_option(args, "--schedule"), **kwargs)
    steps = int(_option(args, "--steps"))
    pytorch = _option(args, "--runtime") == "pytorch"
    for rank in range(2):
        name = f"{'pytorch-' if pytorch else ''}rank{rank}.pt.trace.json.gz"
        trace = load_trace(os.path.join(ROOT, "tests", "data", "traces", folder, name))
        assert trace["distributedInfo"]["rank"] == rank and trace["distributedInfo"]["world_size"] == 2
        events = trace["traceEvents"]
        assert len([e for e in events if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")]) == steps
        if pytorch:
            # PyTorch 2.15's runtime: `PP:` + every step of its lowering, which for one pipeline is
            # pipeweave's, plus an UNSHARD and a RESHARD of every stage (no-ops without FSDP).
            spans = sorted((e for e in events if e.get("ph") == "X" and e["name"].startswith("PP:")), key=lambda e: e["ts"])
            names = [e["name"][3:] for e in spans if not e["name"].endswith(("UNSHARD", "RESHARD"))]
            actions = plan.actions(rank)
            assert names == [step_cell(s, actions) for s in plan.steps(rank)] * steps
            hosted = [s for s, r in enumerate(plan.placement[0]) if r == rank]
            assert len(spans) - len(names) == 2 * steps * len(hosted)
            continue
        assert trace["pipeweave"]["steps"] == steps == len(trace["pipeweave"]["step_times_s"])
        spans = sorted((e for e in events if e.get("ph") == "X" and e["name"].startswith("pw ")), key=lambda e: e["ts"])
        posts = folder in RECORD.POSTED
        assert [e["name"][3:] for e in spans] == expected_spans(plan, rank, posts) * steps
        saved = [e for e in events if e.get("name") == "pw saved"]
        assert len(saved) == len(plan.actions(rank)) * steps
        if "--no-operators" not in args:
            assert any(e.get("cat") == "cpu_op" for e in events)


@pytest.mark.parametrize("name", ["1f1b", "dualpipe"])
def test_the_trace_holds_the_message_and_gradient_bytes_and_the_link_probe(runs, name):
    import pipeweave as pw
    import pipeweave.torch as pwt
    import pipeweave.torch._probe as probe

    schedule, args = RUNS[name]
    plan = pw.compile(schedule, ranks=2, microbatches=4)
    size = model.SIZES["small"]
    # A part's output is (rows, seq, width) float32 per micro-batch, its gradient the same.
    per_mb = size.rows * size.seq * size.width * 4
    grads = {q: sum(p.numel() * 4 for p in m.parameters()) for q, m in model.parts(size, 2, [0, 1]).items()}
    if name == "1f1b":
        messages = [(0, "F", 0, 1), (1, "B", 1, 0)]
    else:
        # DualPipe: pipeline 0 runs ranks 0 -> 1, pipeline 1 ranks 1 -> 0; each rank hosts both parts.
        messages = [(0, "F", 0, 1), (1, "B", 1, 0), (2, "F", 1, 0), (3, "B", 0, 1)]
    want_messages = [{"stage": s, "dir": d, "from": a, "to": b, "bytes": per_mb} for s, d, a, b in messages]
    p2p_sizes, reduce_sizes = probe.probe_sizes([per_mb], list(grads.values()))
    assert p2p_sizes == [1024, 4096, 16384, max(grads.values())]
    assert reduce_sizes == sorted({*p2p_sizes, *grads.values()})
    for rank in range(2):
        meta = load_trace(runs[name] / result(runs[name], rank)["trace"])["pipeweave"]
        assert meta["messages"] == want_messages
        assert meta["gradients"] == [{"part": q, "bytes": grads[q]} for q in pwt.parts_of(plan, rank)]
        got = meta["probe"]
        assert got["repeats"] == probe.REPEATS
        if rank == 1:
            # The lower rank of a pair records its points.
            assert got["p2p"] == [] and got["all_reduce"] == []
            continue
        assert [(p["from"], p["to"], p["bytes"]) for p in got["p2p"]] == [(0, 1, n) for n in p2p_sizes]
        assert [(p["ranks"], p["bytes"]) for p in got["all_reduce"]] == [([0, 1], n) for n in reduce_sizes]
        for point in got["p2p"] + got["all_reduce"]:
            assert isinstance(point["time"], float) and 0 < point["time"] < 1


def test_a_probe_that_fails_on_one_rank_raises_the_same_error_on_every_rank(runs):
    want = ["PipelineError", "rank 0 failed in the link probe: RuntimeError: injected failure"]
    for rank in range(2):
        assert result(runs["probe-fails"], rank)["errors"]["probe"] == want
    assert not list(runs["probe-fails"].glob("*.pt.trace.json"))


def test_probe_sizes_are_the_messages_and_a_geometric_range_up_to_the_gradients():
    import pipeweave.torch._probe as probe

    assert probe.probe_sizes([65536, 65536], [881664, 866816]) == (
        [1024, 4096, 16384, 65536, 262144, 881664],
        [1024, 4096, 16384, 65536, 262144, 866816, 881664],
    )
    # Capped at 64 MiB; sizes rounded up to whole float32s.
    assert probe.probe_sizes([6], [1 << 40]) == (
        [8, *[1024 * 4**k for k in range(8)], 1 << 26],
        [8, *[1024 * 4**k for k in range(8)], 1 << 26],
    )
    # No gradients (an evaluation, or frozen parts): no all-reduce.
    assert probe.probe_sizes([4096], [0]) == ([1024, 4096], [])
    assert probe.probe_sizes([], []) == ([1024], [])
