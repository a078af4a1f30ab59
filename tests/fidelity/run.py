#!/usr/bin/env python3
"""`cargo xtask fidelity`: plan against actual on this machine, about ten minutes, never in CI.

1. Makes sure the conformance suite's environment has pipeweave installed (tests/python/run.py's
   steps: the venv with torch 2.15.0, `pip install ./python` of the workspace's build).
2. Runs every plan in one pair of processes (two processes, gloo, one thread each; the transformer
   of tests/fidelity/model.py; worker.py --plans), in rounds (`--rounds`, default 12): every round
   runs the two calibrating plans, 1F1B and ZB-H1 at P = 2, M = 8, and every schedule that runs at
   P = 2, each under `pipeweave.torch.profile` for `--warmup` steps (default 1) and then `--steps`
   profiled ones (default 3), in an order shuffled anew each round (seeded, so that no plan always follows the same one), with
   a garbage collection after each plan (its trace's export leaves garbage that would otherwise be
   collected in the next plan's steps).
   This virtual machine slows down in spells of one to a few seconds (the same part's forward and
   backward in a loop on an otherwise idle machine: 8.5 ms, then 12.6 ms for two seconds, then 8.7
   ms), and a process's start takes seconds; one run per process put each schedule in a spell of
   its own, minutes from the runs it was compared with (the same 1F1B plan measured 120 to 184 ms
   per step in runs a minute apart). In rounds of one process, every plan meets the spells alike,
   a few seconds apart, and a round takes seconds instead of minutes.
   1F1B is the schedule a user runs today; ZB-H1 is one step of a schedule that splits its
   backward, which a run of 1F1B cannot time: PlanRunner's I and W (a W re-runs the graph once per
   weight group) cost more than half a B each, and on the first part I is next to nothing and W a
   whole B (docs/plan-vs-actual.md). Looped BFS (none of the schedules measured) cuts the model into
   4 parts, as every plan of 2 stages per rank does: a part of 2 blocks costs more than half of one
   of 4, and the part that holds the head more still, which 1F1B's parts alone cannot say.
   A synthesized schedule is searched under the costs of a short run of the calibrating plans
   alone before the rounds (`pipeweave export synth:... --costs-from`).
3. Calibrates from every round's calibrating runs together (`pipeweave calibrate TRACES --plan 1F1B
   --plan ZB-H1 --plan LOOPED-BFS ... -o costs.toml`, one `--plan` per run: every cost is a
   statistic over all of them, the looped runs' kept as their own cut of the model), then predicts every schedule with the costs (`pipeweave simulate PLAN --costs-from
   costs.toml --format json`).
4. Measures each schedule: its step time is the median over every profiled step of every round
   of the slower rank's time, the same statistic the calibration takes, printed with the spread of
   the rounds' medians; its peak saved-activation bytes per rank the median over rounds.
5. Prints the table: schedule, predicted, measured with its spread, error, for time and for
   memory, and whether every row meets its target (time within 10%, memory within 5%, the order of
   two schedules kept wherever their measured times differ by more than 10%). Exit code 1 when one
   does not.

Options: `--rounds N` (default 12), `--steps N` (profiled steps per schedule and round, default 3),
`--warmup N` (default 1), `--only
NAME...` (the schedules to measure; the calibrating runs always run), `--keep DIR` (keeps every
run's traces and results there), `--measure-only` (no calibration or prediction).
"""

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "worker.py")
# tests/python/run.py (the environment and the install), under a name of its own: it imports the
# conformance suite's run.py as `run`.
_spec = importlib.util.spec_from_file_location("python_tests", os.path.join(ROOT, "tests", "python", "run.py"))
python_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(python_tests)

MICROBATCHES = 8
# name: extra arguments of `pipeweave export` (the plan's shape at P = 2)
SCHEDULES = {
    "1f1b": [],
    "gpipe": [],
    "zb-h1": [],
    "zb-h2": [],
    "interleaved-1f1b": ["--stages-per-rank", "2"],
    "interleaved-zb": ["--stages-per-rank", "2"],
    "zb-v": [],
    "dualpipev": [],
    "dualpipe": [],
    "chimera": [],
    "synth:loop": [],
    "synth:v": [],
    "synth:bidirectional": [],
}
TIME_TARGET = 0.10
MEMORY_TARGET = 0.05


def setup():
    """The environment's python with pipeweave installed, and the `pipeweave` binary."""
    python = python_tests.venv_python()
    subprocess.run(["cargo", "build", "--quiet", "--workspace", "--locked"], cwd=ROOT, check=True)
    env = dict(os.environ, MATURIN_PEP517_ARGS="--profile dev")
    install = [python, "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps", os.path.join(ROOT, "python")]
    subprocess.run(install, cwd=ROOT, env=env, check=True)
    return python, os.path.join(python_tests.target_dir(), "debug", "pipeweave")


def cli(binary, *args):
    done = subprocess.run([binary, *map(str, args)], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"error: pipeweave {' '.join(map(str, args))} failed:\n{done.stderr}")
    return done.stdout


def profile_rounds(python, plans, work, rounds, steps, warmup):
    """Profiles the JSON plans {name: path} at P = 2 in one pair of processes, in `rounds` rounds
    (worker.py --plans): every round runs each plan for `warmup` steps, then `steps` profiled, in
    an order shuffled anew each round, into WORK/round{K}/{name}/. Returns the results
    {name: [(folder, both ranks' results) per round]}."""
    cmd = [python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", WORKER,
           "--plans", *[f"{name}={path}" for name, path in plans.items()], "--rounds", str(rounds),
           "--size", "fidelity", "--steps", str(steps), "--warmup", str(warmup), "--out", work,
           "--gzip", "--no-operators"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=work)
    if done.returncode != 0:
        sys.exit(f"error: the runs failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    out = {}
    for name in plans:
        out[name] = []
        for r in range(rounds):
            folder = os.path.join(work, f"round{r + 1}", name)
            results = []
            for rank in range(2):
                with open(os.path.join(folder, f"result-rank{rank}.json")) as f:
                    results.append(json.load(f))
            out[name].append((folder, results))
    return out


def traces(out):
    """The run's trace files, rank 0 first."""
    return sorted(os.path.join(out, f) for f in os.listdir(out) if ".pt.trace.json" in f)


def slower_rank_steps(results):
    """A run's step times: per step, the slower rank's."""
    steps = len(results[0]["step_times"])
    return [max(r["step_times"][i] for r in results) for i in range(steps)]


def over_rounds(runs):
    """A schedule's figures over its rounds [(folder, both ranks' results)]: the median step over
    every profiled step of every round (the slower rank's), the lowest and highest of the rounds'
    medians, and each rank's median peak saved bytes."""
    pooled = [t for _, results in runs for t in slower_rank_steps(results)]
    per_round = [statistics.median(slower_rank_steps(results)) for _, results in runs]
    ranks = len(runs[0][1])
    memory = [statistics.median_low([results[r]["peak_saved_bytes"] for _, results in runs]) for r in range(ranks)]
    return statistics.median(pooled), (min(per_round), max(per_round)), memory


def predicted(simulation):
    """The predicted step time (s) and each rank's predicted peak saved bytes (None where not given).

    The step is `step_time`: the makespan with the run's time outside the actions (the host's gaps
    between actions, and the step's time before its first action and after its last, as the
    calibrating run measured them); the makespan alone where the costs hold none.
    """
    memory = [rank.get("peak_saved_bytes") for rank in simulation["ranks"]]
    return simulation.get("step_time", simulation["makespan"]), memory


def error(pred, meas):
    return None if pred is None or not meas else (pred - meas) / meas


# The calibrating plans and their arguments of `pipeweave export`: 1F1B, the schedule a user runs
# today; ZB-H1, whose split backward times I and W; looped BFS with 2 stages per rank, which cuts
# the model into 4 parts, as the plans of 2 stages per rank do (none of the schedules measured).
CALIBRATING = {"1f1b": [], "zb-h1": [], "looped-bfs": ["--stages-per-rank", "2"]}
# Rounds of the calibrating runs alone that the synthesized schedules are searched under.
SEARCH_ROUNDS = 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=12, help="rounds, every schedule once a round (default 12)")
    ap.add_argument("--steps", type=int, default=3, help="profiled steps per schedule and round (default 3)")
    ap.add_argument("--warmup", type=int, default=1, help="steps before each profiled run (default 1)")
    ap.add_argument("--only", nargs="*", help="the schedules to measure (the calibrating runs always run)")
    ap.add_argument("--keep", help="keep every run's traces and results in this folder")
    ap.add_argument("--measure-only", action="store_true", help="no calibration or prediction: the measured columns only")
    args = ap.parse_args()
    if args.rounds < 1 or args.steps < 1 or args.warmup < 0:
        ap.error("--rounds and --steps take a whole number of at least 1, --warmup of at least 0")
    unknown = [n for n in args.only or [] if n not in SCHEDULES]
    if unknown:
        ap.error(f"--only: no schedule {', '.join(unknown)} (the schedules: {', '.join(SCHEDULES)})")
    python, binary = setup()
    work = args.keep or tempfile.mkdtemp(prefix="pipeweave-fidelity-")
    os.makedirs(work, exist_ok=True)
    started = time.monotonic()
    try:
        names = [n for n in SCHEDULES if not args.only or n in args.only]
        calibrating = [] if args.measure_only else list(CALIBRATING)
        plans = {}  # folder name: plan file, in the order of the rounds
        for name in calibrating:
            plans["calibrate-" + name] = export(binary, work, "calibrate-" + name, name, CALIBRATING[name])
        synthesized = [n for n in names if n.startswith("synth:") and not args.measure_only]
        if synthesized:
            # The synthesized schedules are searched under the costs of a short run of the
            # calibrating plans alone, before the rounds.
            search = os.path.join(work, "search")
            os.makedirs(search, exist_ok=True)
            print(f"calibrating for the synthesized schedules: {SEARCH_ROUNDS} rounds ...", flush=True)
            first = profile_rounds(python, dict(plans), search, SEARCH_ROUNDS, args.steps, args.warmup)
            search_costs = os.path.join(work, "costs-search.toml")
            calibrate(binary, [(plans[c], folder) for c in first for folder, _ in first[c]], search_costs)
        for name in names:
            extra = ["--costs-from", search_costs] if name in synthesized else []
            plans[name.replace(":", "-")] = export(binary, work, name.replace(":", "-"), name, SCHEDULES[name], extra)
        print(f"{args.rounds} rounds of {len(plans)} plans, {args.steps} profiled steps each ...", flush=True)
        runs = profile_rounds(python, plans, work, args.rounds, args.steps, args.warmup)
        costs = os.path.join(work, "costs.toml")
        if not args.measure_only:
            calibrate(binary, [(plans["calibrate-" + c], folder) for c in calibrating
                               for folder, _ in runs["calibrate-" + c]], costs)
        rows = []
        for name in names:
            key = name.replace(":", "-")
            time_meas, spread, mem_meas = over_rounds(runs[key])
            if args.measure_only:
                time_pred, mem_pred = None, [None, None]
            else:
                simulation = json.loads(cli(binary, "simulate", plans[key], "--costs-from", costs, "--format", "json"))
                time_pred, mem_pred = predicted(simulation)
            rows.append((name, time_pred, time_meas, spread, mem_pred, mem_meas))
        print(f"\n{args.rounds} rounds of {args.steps} profiled steps per schedule after {args.warmup} of warm-up, "
              f"calibrated from every round's 1F1B, ZB-H1 and looped BFS runs, {time.monotonic() - started:.0f} s in all")
        return report(rows, args.measure_only)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def export(binary, work, folder, name, extra, searched=()):
    """The JSON plan of `name` at P = 2, M = 8, in its own folder under `work`."""
    out = os.path.join(work, "plans", folder)
    os.makedirs(out, exist_ok=True)
    plan = os.path.join(out, "plan.json")
    cli(binary, "export", name, "-p", 2, "-m", MICROBATCHES, *extra, *searched, "--to", "json", "-o", plan)
    return plan


def calibrate(binary, runs, costs):
    """`pipeweave calibrate` from the runs [(plan, folder)] together, one `--plan` per run."""
    files, plan_args = [], []
    for plan, folder in runs:
        files.extend(traces(folder))
        plan_args.extend(["--plan", plan])
    cli(binary, "calibrate", *files, *plan_args, "-o", costs)


def report(rows, measure_only=False):
    print()
    print("| schedule | predicted step (ms) | measured step (ms) | spread over rounds (ms) | error "
          "| predicted peak saved (KiB) | measured (KiB) | error (worst rank) |")
    print("|---|---|---|---|---|---|---|---|")
    ok = True
    for name, tp, tm, (lo, hi), mp, mm in rows:
        te = error(tp, tm)
        errors = [error(p, m) for p, m in zip(mp, mm)]
        worst = None if any(e is None for e in errors) else max(errors, key=abs)
        ok &= te is not None and abs(te) <= TIME_TARGET
        ok &= worst is not None and abs(worst) <= MEMORY_TARGET
        mem_p = " / ".join("n/a" if p is None else f"{p / 1024:.0f}" for p in mp)
        mem_m = " / ".join(f"{m / 1024:.0f}" for m in mm)
        shown = ("n/a", "n/a") if tp is None else (f"{tp * 1e3:.1f}", f"{te:+.1%}")
        print(f"| {name} | {shown[0]} | {tm * 1e3:.1f} | {lo * 1e3:.1f}–{hi * 1e3:.1f} | {shown[1]} | {mem_p} | {mem_m} | "
              + ("n/a" if worst is None else f"{worst:+.1%}") + " |")
    swapped = []
    for a in rows:
        for b in rows:
            if a[1] is not None and b[1] is not None and a[2] < b[2] / (1 + TIME_TARGET) and not a[1] < b[1]:
                swapped.append(f"{a[0]} ran faster than {b[0]} by more than 10% but was not predicted faster")
    print()
    for s in swapped:
        print(f"order: {s}")
    print(f"{len(swapped)} pairs of schedules whose measured times differ by more than 10% are not predicted in that order")
    ok &= not swapped
    if measure_only:
        print("\nmeasured only (--measure-only): nothing was predicted")
        return 0
    print(f"\n{'every row meets its target' if ok else 'some rows miss their target'} "
          f"(time within {TIME_TARGET:.0%}, memory within {MEMORY_TARGET:.0%}, order kept beyond 10%)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
