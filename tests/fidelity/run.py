#!/usr/bin/env python3
"""`cargo xtask fidelity`: plan against actual on this machine, a few minutes, never in CI.

1. Makes sure the conformance suite's environment has pipeweave installed (tests/python/run.py's
   steps: the venv with torch 2.15.0, `pip install ./python` of the workspace's build).
2. Profiles 1F1B at P = 2, M = 8 (two processes, gloo, one thread each; the transformer of
   tests/fidelity/model.py) and calibrates from its traces:
   `pipeweave calibrate TRACES --plan PLAN -o costs.toml`.
3. For every schedule that runs at P = 2, exports its plan under the measured costs
   (`pipeweave export SCHEDULE -p 2 -m 8 --to json`, with `--costs-from costs.toml` for a
   synthesized schedule, so that it is searched under them), predicts it (`pipeweave simulate PLAN --costs-from costs.toml
   --format json`), runs it under `pipeweave.torch.profile` and measures the median step time
   (over ranks, the slower rank's) and the peak saved-activation bytes of each rank.
4. Prints the table: schedule, predicted, measured, error, for time and for memory, and whether
   every row meets its target (time within 10%, memory within 5%, the order of two schedules kept
   wherever their measured times differ by more than 10%). Exit code 1 when one does not.

Options: `--steps N` (profiled steps per schedule, default 6), `--only NAME...`, `--keep DIR`
(keeps every run's traces and results there).
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


def profile_run(python, plan, out, steps):
    """Runs the JSON plan at P = 2 under `profile`; returns both ranks' results."""
    cmd = [python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", WORKER,
           "--plan", plan, "--size", "fidelity", "--steps", str(steps), "--warmup", "2", "--out", out]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=out)
    if done.returncode != 0:
        sys.exit(f"error: the run of {plan} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    results = []
    for rank in range(2):
        with open(os.path.join(out, f"result-rank{rank}.json")) as f:
            results.append(json.load(f))
    return results


def traces(out):
    return sorted(os.path.join(out, f) for f in os.listdir(out) if ".pt.trace.json" in f)


def measured(results):
    """The step time (the median over steps of the slower rank's time) and each rank's peak saved bytes."""
    steps = len(results[0]["step_times"])
    per_step = [max(r["step_times"][i] for r in results) for i in range(steps)]
    return statistics.median(per_step), [r["peak_saved_bytes"] for r in results]


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--keep")
    ap.add_argument("--measure-only", action="store_true", help="no calibration or prediction: the measured columns only")
    args = ap.parse_args()
    python, binary = setup()
    work = args.keep or tempfile.mkdtemp(prefix="pipeweave-fidelity-")
    os.makedirs(work, exist_ok=True)
    try:
        calib = os.path.join(work, "calibration")
        os.makedirs(calib, exist_ok=True)
        plan = os.path.join(calib, "plan.json")
        cli(binary, "export", "1f1b", "-p", 2, "-m", MICROBATCHES, "--to", "json", "-o", plan)
        costs = os.path.join(work, "costs.toml")
        if not args.measure_only:
            print(f"profiling 1f1b at P = 2, M = {MICROBATCHES} ...", flush=True)
            profile_run(python, plan, calib, args.steps)
            cli(binary, "calibrate", *traces(calib), "--plan", plan, "-o", costs)
        rows = []
        for name, extra in SCHEDULES.items():
            if args.only and name not in args.only:
                continue
            out = os.path.join(work, name.replace(":", "-"))
            os.makedirs(out, exist_ok=True)
            plan = os.path.join(out, "plan.json")
            # A synthesized schedule is searched under the measured costs; the library's do not depend on them.
            searched = ["--costs-from", costs] if name.startswith("synth:") and not args.measure_only else []
            cli(binary, "export", name, "-p", 2, "-m", MICROBATCHES, *extra, *searched, "--to", "json", "-o", plan)
            print(f"running {name} ...", flush=True)
            time_meas, mem_meas = measured(profile_run(python, plan, out, args.steps))
            if args.measure_only:
                time_pred, mem_pred = None, [None, None]
            else:
                simulation = json.loads(cli(binary, "simulate", plan, "--costs-from", costs, "--format", "json"))
                time_pred, mem_pred = predicted(simulation)
            rows.append((name, time_pred, time_meas, mem_pred, mem_meas))
        return report(rows, args.measure_only)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def report(rows, measure_only=False):
    print()
    print("| schedule | predicted step (ms) | measured step (ms) | error | predicted peak saved (KiB) | measured (KiB) | error (worst rank) |")
    print("|---|---|---|---|---|---|---|")
    ok = True
    for name, tp, tm, mp, mm in rows:
        te = error(tp, tm)
        errors = [error(p, m) for p, m in zip(mp, mm)]
        worst = None if any(e is None for e in errors) else max(errors, key=abs)
        ok &= te is not None and abs(te) <= TIME_TARGET
        ok &= worst is not None and abs(worst) <= MEMORY_TARGET
        mem_p = " / ".join("n/a" if p is None else f"{p / 1024:.0f}" for p in mp)
        mem_m = " / ".join(f"{m / 1024:.0f}" for m in mm)
        shown = ("n/a", "n/a") if tp is None else (f"{tp * 1e3:.1f}", f"{te:+.1%}")
        print(f"| {name} | {shown[0]} | {tm * 1e3:.1f} | {shown[1]} | {mem_p} | {mem_m} | "
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
