"""Runs every conformance case: `python -m pipeweave_conformance PLANS_DIR`.

PLANS_DIR holds the exported plans and `manifest.json` (written by the `conformance_plans` example
of pipeweave-export). Each case spawns one process per rank (gloo, CPU), runs one training step as
the exported plan says, and compares every parameter gradient and the loss with the unpipelined
model (tolerance 1e-5). Negative cases break an export on purpose and must be caught.
The last line of the output is `N passed, N failed`; the exit code is 1 when anything failed.
"""

import json
import multiprocessing
import os
import sys
import tempfile
import time
import traceback

TOLERANCE = 1e-5
TIMEOUT_SECONDS = float(os.environ.get("PIPEWEAVE_CONFORMANCE_TIMEOUT", "120"))


def worker(rank, world, store, kind, case, path, out_dir):
    import torch
    import torch.distributed as dist

    from . import executor, model, torch_runtime

    model.setup_torch()
    try:
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
        if kind == "json":
            with open(path) as f:
                plan = json.load(f)
            grads, losses = executor.run(rank, plan)
        else:
            grads, losses = torch_runtime.run(rank, case, path)
        torch.save({"grads": grads, "losses": losses}, os.path.join(out_dir, f"rank{rank}.pt"))
        dist.barrier()
        dist.destroy_process_group()
    except BaseException:
        with open(os.path.join(out_dir, f"error{rank}.txt"), "w") as f:
            f.write(traceback.format_exc())
        os._exit(1)
    os._exit(0)


def run_case(case, path):
    """Runs one case; returns None when it trains exactly like the reference, else the reason."""
    import torch

    from . import model

    kind = "json" if case["format"] == "json" else "csv"
    world = case["ranks"]
    ctx = multiprocessing.get_context("fork")
    with tempfile.TemporaryDirectory() as out_dir:
        store = os.path.join(out_dir, "store")
        procs = [
            ctx.Process(target=worker, args=(r, world, store, kind, case, path, out_dir)) for r in range(world)
        ]
        for p in procs:
            p.start()
        deadline = time.monotonic() + TIMEOUT_SECONDS
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
        hung = [r for r, p in enumerate(procs) if p.is_alive()]
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
        errors = []
        for r in range(world):
            err = os.path.join(out_dir, f"error{r}.txt")
            if os.path.exists(err):
                with open(err) as f:
                    lines = [line.strip() for line in f.read().splitlines() if line.strip()]
                # The first exception line of the traceback (the root cause, before any chaining).
                found = [line for line in lines if line.split(":")[0].endswith(("Error", "Exception"))]
                errors.append(f"rank {r}: {(found or lines or ['failed'])[0][:300]}")
        if errors:
            return "error: " + "; ".join(errors[:2])
        if hung:
            return f"timed out after {TIMEOUT_SECONDS:.0f}s (ranks {hung} still running: a deadlock?)"
        if any(p.exitcode != 0 for p in procs):
            return f"a worker exited with {[p.exitcode for p in procs]}"
        results = [torch.load(os.path.join(out_dir, f"rank{r}.pt")) for r in range(world)]

    s_per = case["stages_per_pipeline"]
    k = case["pipelines"]
    m = case["microbatches"]
    # The reference must be built exactly as the workers build their parts (float64, same seeds),
    # whatever cases ran before in this process.
    model.setup_torch()
    ref_loss, ref_grads = model.reference(s_per, m)
    grads, losses = {}, {}
    for res in results:
        grads.update(res["grads"])
        losses.update(res["losses"])
    missing = [s for s in range(k * s_per) if s not in grads]
    if missing:
        return f"no gradients for stages {missing}"
    worst = (0.0, None)
    for s, got in grads.items():
        for i, (g, want) in enumerate(zip(got, ref_grads[s % s_per])):
            diff = (g - want).abs().max().item()
            if diff > worst[0]:
                worst = (diff, f"stage {s} parameter {i}")
    if worst[0] > TOLERANCE:
        return f"gradients differ: {worst[1]} is off by {worst[0]:.3g}"
    if sorted(losses) != list(range(m)):
        return f"losses reported for micro-batches {sorted(losses)}, expected 0..{m - 1}"
    loss = sum(losses.values()) / m
    if abs(loss - ref_loss) > TOLERANCE:
        return f"loss differs: {loss:.9g} vs {ref_loss:.9g}"
    return None


def negative_cases(plans_dir, cases, work_dir):
    """Exports broken on purpose. Each returns (name, case, path, what was broken)."""
    by_name = {c["name"]: c for c in cases}
    out = []

    def derive(name, source, suffix, edit, what):
        case = dict(by_name[source])
        with open(os.path.join(plans_dir, case["file"])) as f:
            text = f.read()
        broken = edit(text)
        if broken == text:
            raise RuntimeError(f"the mutation for {name} changed nothing")
        path = os.path.join(work_dir, case["file"] + suffix)
        with open(path, "w") as f:
            f.write(broken)
        case["name"] = name
        out.append((case, path, what))

    def swap_cells(row, a, b):
        def edit(text):
            rows = text.split("\n")
            cells = rows[row].split(",")
            i, j = cells.index(a), cells.index(b)
            cells[i], cells[j] = cells[j], cells[i]
            rows[row] = ",".join(cells)
            return "\n".join(rows)

        return edit

    def move_before(row, cell, anchor):
        def edit(text):
            rows = text.split("\n")
            cells = rows[row].split(",")
            cells.remove(cell)
            cells.insert(cells.index(anchor), cell)
            rows[row] = ",".join(cells)
            return "\n".join(rows)

        return edit

    def drop_cell(row, cell):
        def edit(text):
            rows = text.split("\n")
            cells = rows[row].split(",")
            cells.remove(cell)
            rows[row] = ",".join(cells)
            return "\n".join(rows)

        return edit

    def drop_json_action(rank, wanted):
        def edit(text):
            plan = json.loads(text)
            prog = plan["programs"][rank]
            index = next(i for i, a in enumerate(prog["actions"]) if a == wanted)
            del prog["actions"][index]
            steps = []
            for s in prog["steps"]:
                if s["kind"] == "compute":
                    if s["action"] == index:
                        continue
                    if s["action"] > index:
                        s = dict(s, action=s["action"] - 1)
                steps.append(s)
            prog["steps"] = steps
            return json.dumps(plan)

        return edit

    derive(
        "negative: 1f1b-p2/pytorch with a forward and a backward swapped",
        "1f1b-p2/pytorch",
        ".swapped",
        swap_cells(1, "1F1", "1B1"),
        "rank 1 runs 1B1 before 1F1",
    )
    derive(
        "negative: gpipe-p2/pytorch-comms with two receives swapped",
        "gpipe-p2/pytorch-comms",
        ".swapped",
        move_before(1, "1RECV_F1", "1RECV_F0"),
        "rank 1 posts the receive of micro-batch 1 before that of micro-batch 0",
    )
    derive(
        "negative: zb-h1-p2/pytorch with a missing backward",
        "zb-h1-p2/pytorch",
        ".missing",
        drop_cell(0, "0W3"),
        "rank 0 never runs 0W3",
    )
    derive(
        "negative: dualpipe-p4/json with a missing backward",
        "dualpipe-p4/json",
        ".missing",
        drop_json_action(0, next(
            a for a in json.load(open(os.path.join(plans_dir, by_name["dualpipe-p4/json"]["file"])))["programs"][0]["actions"]
            if a["kind"] == "W"
        )),
        "rank 0 drops its first W (a weight gradient) and the step that runs it",
    )
    return out


def main():
    if len(sys.argv) != 2:
        print("usage: python -m pipeweave_conformance PLANS_DIR", file=sys.stderr)
        return 2
    plans_dir = sys.argv[1]
    from . import model

    model.setup_torch()
    with open(os.path.join(plans_dir, "manifest.json")) as f:
        cases = json.load(f)
    only = os.environ.get("PIPEWEAVE_CONFORMANCE_ONLY")
    passed = failed = 0
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as work_dir:
        for case in cases:
            if only and only not in case["name"]:
                continue
            if case.get("refused"):
                # The exporter refused a case the suite is meant to run: the proof does not hold.
                failed += 1
                print(f"FAILED  {case['name']}: the export refused it: {case['refused']}", flush=True)
                continue
            t0 = time.monotonic()
            why = run_case(case, os.path.join(plans_dir, case["file"]))
            took = time.monotonic() - t0
            if why is None:
                passed += 1
                print(f"ok      {case['name']} ({took:.1f}s)", flush=True)
            else:
                failed += 1
                print(f"FAILED  {case['name']}: {why}", flush=True)
        for case, path, what in negative_cases(plans_dir, cases, work_dir):
            if only and only not in case["name"]:
                continue
            t0 = time.monotonic()
            why = run_case(case, path)
            took = time.monotonic() - t0
            if why is None:
                failed += 1
                print(f"FAILED  {case['name']}: the broken plan ({what}) trained like the reference", flush=True)
            else:
                passed += 1
                print(f"ok      {case['name']}: caught ({why}) ({took:.1f}s)", flush=True)
    print(f"took {time.monotonic() - start:.0f}s")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
