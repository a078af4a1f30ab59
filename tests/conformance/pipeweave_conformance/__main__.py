"""Runs every conformance case: `python -m pipeweave_conformance PLANS_DIR`.

PLANS_DIR holds the exported plans and `manifest.json` (written by the `conformance_plans` example
of pipeweave-export). The cases, each compared with the unpipelined model (every gradient, every
micro-batch's loss and, after several steps, every weight, within 1e-5):
- every JSON plan through `pipeweave.torch.PlanRunner`, trained over several steps with an
  optimizer (the first step's gradients, every step's losses, the final weights of every copy,
  which must also equal each other to the bit);
- a few plans through PlanRunner with a process group that is not the world (two data-parallel
  copies of the pipeline group) and with a model whose activations are tuples holding integer ids;
- a plan whose uneven split `pipeweave export --split auto` searched (EVAL_PLANS_DIR's
  `split-searched.json`), trained through PlanRunner with its parts cut from the whole model
  (embedding, layers, head) by `pipeweave.torch.split`;
- every single-pipeline JSON plan through `pipeweave.torch.schedule()`, PyTorch's own runtime
  (lowered by PyTorch, and with the plan's own lowering), one step;
- the exported CSVs loaded by PyTorch's runtime itself (`_load_csv`), one step;
- misuse of `pipeweave.torch`, which must raise clear exceptions;
- negative cases, broken on purpose, which must fail.
Cases run in pools of worker processes (gloo, CPU), one pool per world size.
PIPEWEAVE_CONFORMANCE_ONLY=TEXT keeps the cases whose name contains TEXT; selecting none fails.
The last line of the output is `N passed, N failed`; the exit code is 1 when anything failed.
"""

import json
import os
import sys
import tempfile
import time

import torch

from . import errors, mistakes, model, negative
from .pool import CaseError, Pools

TOLERANCE = 1e-5
TIMEOUT_SECONDS = float(os.environ.get("PIPEWEAVE_CONFORMANCE_TIMEOUT", "60"))
TRAIN_STEPS = 3


class Case:
    def __init__(self, name, manifest, task, expect_failure=False, what=None):
        self.name = name
        self.manifest = manifest
        self.task = task
        self.expect_failure = expect_failure
        self.what = what

    @property
    def world(self):
        return self.manifest["ranks"] * self.task.get("replicas", 1)


# PlanRunner beyond the suite's model: (plan, what the case shows, task changes).
DATA_PARALLEL = ("in 2 data-parallel copies of the pipeline group (group=)", {"replicas": 2})
TUPLES = (
    "with tuple activations holding integer ids, scale_grads=False, 2 steps accumulated",
    {"model": "tuple", "steps": 2},
)
SPARSE = ("with inputs and targets only on the ranks that use them (None elsewhere)", {"sparse": True})
FEATURES = [
    ("1f1b-p4-m8/json", *SPARSE),
    ("zb-v-p2-m3/json", *SPARSE),
    ("dualpipe-p4-m8/json", *SPARSE),
    ("dualpipe-p2-m4/json", *DATA_PARALLEL),
    ("chimera-k2-p2-m4/json", *DATA_PARALLEL),
    ("zb-v-p2-m3/json", *TUPLES),
    ("dualpipe-p2-m4/json", *TUPLES),
    ("chimera-k4-p4-m5/json", *TUPLES),
]


def positive_cases(plans_dir, manifest):
    out = []
    for entry in manifest:
        path = os.path.join(plans_dir, entry["file"])
        fmt = entry["format"]
        if fmt == "json":
            runner = {"kind": "runner", "path": path, "steps": TRAIN_STEPS}
            out.append(Case(f"{entry['name']} PlanRunner, {TRAIN_STEPS} steps", entry, runner))
            if entry["pipelines"] == 1:
                for lowering in ("compute_only", "compute_comms"):
                    task = {"kind": "schedule", "path": path, "format": lowering}
                    out.append(Case(f"{entry['name']} schedule(format={lowering})", entry, task))
            for name, label, changes in FEATURES:
                if name == entry["name"]:
                    out.append(Case(f"{name} PlanRunner {label}", entry, dict(runner, **changes)))
        else:
            lowering = "compute_comms" if fmt == "pytorch-comms" else "compute_only"
            task = {
                "kind": "csv",
                "path": path,
                "format": lowering,
                "placements": entry["placements"],
                "microbatches": entry["microbatches"],
            }
            out.append(Case(f"{entry['name']} _load_csv", entry, task))
    return out


# Evaluation through PlanRunner: (plan, how). "plan" runs the plan's evaluation form exported by
# `pipeweave export PLAN --forward-only --to json`; "no_grad" and "eval" run the training plan
# under torch.no_grad() and with its parts in eval().
EVALUATIONS = [
    ("1f1b-p2-m4/json", "plan"),
    ("zb-v-p2-m4/json", "plan"),
    ("dualpipe-p2-m4/json", "plan"),
    ("chimera-k2-p2-m4/json", "plan"),
    ("dualpipev-p4-m8/json", "plan"),
    ("1f1b-p4-m8/json", "no_grad"),
    ("zb-v-p2-m3/json", "no_grad"),
    ("zb-v-p2-m3/json", "eval"),
    ("dualpipe-p4-m8/json", "no_grad"),
    ("chimera-k4-p4-m8/json", "eval"),
]


def evaluation_cases(manifest, eval_dir):
    by_name = {entry["name"]: entry for entry in manifest}
    out = []
    for name, how in EVALUATIONS:
        entry = by_name[name]
        path = entry["path"] if how != "plan" else os.path.join(eval_dir, os.path.basename(entry["file"]))
        label = {"plan": "its evaluation plan", "no_grad": "torch.no_grad()", "eval": "parts in eval()"}[how]
        out.append(Case(f"{name} PlanRunner evaluates ({label})", entry, {"kind": "evaluate", "path": path, "how": how}))
    return out


# PyTorch 2.15's own schedules evaluating with eval(): the V schedules fail (README, docs/python.md).
TORCH_EVAL = [
    ("ScheduleGPipe", None),
    ("Schedule1F1B", None),
    ("ScheduleInterleaved1F1B", None),
    ("ScheduleLoopedBFS", None),
    ("ScheduleInterleavedZeroBubble", None),
    ("ScheduleZBVZeroBubble", "can't steal_bwd_input if this stage doesn't have backward"),
    ("ScheduleDualPipeV", "can't steal_bwd_input if this stage doesn't have backward"),
]


def torch_eval_cases(manifest):
    entry = {"ranks": 2, "stages_per_pipeline": 4, "microbatches": 4, "pipelines": 1}
    out = []
    for name, fails in TORCH_EVAL:
        what = "fails" if fails else "evaluates"
        task = {"kind": "torch_eval", "schedule": name, "fails": fails}
        out.append(Case(f"torch eval(): PyTorch's {name} {what}", entry, task))
    return out


def compare_torch_eval(case, results, references):
    fails = case.task["fails"]
    errors = [r["error"] for r in results if r["error"] is not None]
    if fails is not None:
        if not any(fails in e for e in errors):
            return f"expected eval() to fail with '{fails}' (PyTorch may have fixed it: update the docs), got {errors or 'no error'}"
        return None
    if errors:
        return f"eval() failed: {errors[0]}"
    n = results[0]["stages"]
    want = model.reference(n, 4)["losses"][0]
    got = [r["losses"] for r in results if r["losses"]]
    if len(got) != 1 or any(abs(a - b) > TOLERANCE for a, b in zip(got[0], want, strict=True)):
        return f"eval()'s losses {got} are not the unpipelined model's {want}"
    return None


def mistake_cases(manifest):
    by_name = {entry["name"]: entry for entry in manifest}
    out = []
    for what, name, world, kind, words in mistakes.CASES:
        entry = by_name[name]
        assert entry["ranks"] == world
        task = {"kind": "mistake", "path": entry["path"], "mistake": what, "expect": (kind, words)}
        out.append(Case(f"mistake on one rank: {what} ({name})", entry, task))
    return out


def negative_cases(plans_dir, manifest, work_dir):
    by_name = {entry["name"]: entry for entry in manifest}
    out = []
    for name, source, path, changes, what in negative.derive(plans_dir, by_name, work_dir):
        entry = by_name[source]
        base = positive_cases(plans_dir, [entry])[0]
        task = dict(base.task, **changes)
        if path is not None:
            task["path"] = path
        if task["kind"] == "runner":
            task["steps"] = 1
        out.append(Case(name, entry, task, expect_failure=True, what=what))
    return out


def compare(case, results, references):
    """None when the results are the unpipelined model's, else the first difference."""
    if case.task["kind"] == "mistake":
        kind, words = case.task["expect"]
        return mistakes.judge(case.task["mistake"], results, kind, words)
    if case.task["kind"] == "torch_eval":
        return compare_torch_eval(case, results, references)
    if case.task["kind"] == "evaluate":
        return compare_evaluation(case, results, references)
    by_replica = {}
    for res in results:
        by_replica.setdefault(res.get("replica", 0), []).append(res)
    for replica, group in sorted(by_replica.items()):
        why = compare_replica(case, group, references)
        if why is not None:
            return why if len(by_replica) == 1 else f"pipeline group {replica}: {why}"
    return None


def split_cases(eval_dir):
    """PlanRunner on a plan whose split the search chose, the whole model cut by pw.torch.split."""
    path = os.path.join(eval_dir, "split-searched.json")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        data = json.load(f)
    cut = [end - start for start, end in (part["layers"] for part in data["parts"])]
    entry = {
        "name": "split-searched",
        "ranks": data["ranks"],
        "pipelines": len(data["pipelines"]),
        "stages_per_pipeline": data["stages_per_pipeline"],
        "microbatches": sum(len(p["microbatches"]) for p in data["pipelines"]),
        "path": path,
    }
    task = {"kind": "runner", "path": path, "steps": TRAIN_STEPS, "cut": cut}
    name = f"split-searched 1f1b-p4-m8 PlanRunner, parts from pw.torch.split by the searched split {cut}"
    return [Case(name, entry, task)]


def cut_reference(split, microbatches, steps):
    """The unpipelined run of the whole model (embedding, layers, head), its gradients and weights
    grouped by the parts pw.torch.split makes of it."""
    layers = sum(split)
    ref = model.reference(layers + 2, microbatches, steps)
    groups, at = [], 1
    for q, n in enumerate(split):
        modules = ([0] if q == 0 else []) + list(range(at, at + n)) + ([layers + 1] if q == len(split) - 1 else [])
        groups.append(modules)
        at += n
    regroup = lambda per_layer: [[t for i in g for t in per_layer[i]] for g in groups]  # noqa: E731
    return dict(ref, grads=regroup(ref["grads"]), params=regroup(ref["params"]))


def reference(case, references):
    """The unpipelined run a case must match, built once per shape in this process."""
    entry, task = case.manifest, case.task
    if task.get("cut"):
        key = ("cut", tuple(task["cut"]), entry["microbatches"], task.get("steps", 1))
        if key not in references:
            model.setup_torch()
            references[key] = cut_reference(task["cut"], entry["microbatches"], task.get("steps", 1))
        return references[key]
    key = (entry["stages_per_pipeline"], entry["microbatches"], task.get("steps", 1), task.get("model"))
    if key not in references:
        # Built exactly as the workers build their parts (float64, same seeds).
        model.setup_torch()
        build = model.tuple_reference if task.get("model") == "tuple" else model.reference
        references[key] = build(*key[:3])
    return references[key]


def compare_evaluation(case, results, references):
    entry = case.manifest
    s_per, m = entry["stages_per_pipeline"], entry["microbatches"]
    ref = reference(case, references)
    key = ("outputs", s_per, m)
    if key not in references:
        references[key] = model.outputs(s_per, m)
    want_out = references[key]
    want_losses = ref["losses"][0]
    want_loss = sum(want_losses) / m
    computed = set()
    for rank, res in enumerate(results):
        if not res["untouched"]:
            return f"rank {rank}: the evaluation left gradients"
        if abs(res["loss"] - want_loss) > TOLERANCE:
            return f"rank {rank}: the step's loss is {res['loss']:.9g}, the unpipelined model's {want_loss:.9g}"
        if sorted(res["losses"]) != list(range(m)):
            return f"rank {rank}: losses for micro-batches {sorted(res['losses'])}, expected 0..{m - 1}"
        for mb, loss in res["losses"].items():
            if abs(loss - want_losses[mb]) > TOLERANCE:
                return f"rank {rank}: the loss of micro-batch {mb} differs: {loss:.9g} vs {want_losses[mb]:.9g}"
        if sorted(res["gathered"]) != list(range(m)):
            return f"rank {rank}: gathered outputs of micro-batches {sorted(res['gathered'])}, expected 0..{m - 1}"
        for where in ("local", "gathered"):
            for mb, out in res[where].items():
                diff = (out - want_out[mb]).abs().max().item()
                if diff > TOLERANCE:
                    return f"rank {rank}: the {where} output of micro-batch {mb} is off by {diff:.3g}"
        computed |= set(res["local"])
    if sorted(computed) != list(range(m)):
        return f"the ranks computed the outputs of micro-batches {sorted(computed)}, expected 0..{m - 1}"
    return None


def compare_replica(case, results, references):
    entry = case.manifest
    s_per, m = entry["stages_per_pipeline"], entry["microbatches"]
    steps = case.task.get("steps", 1)
    ref = reference(case, references)
    grads, params, losses = {}, {}, [{} for _ in range(steps)]
    for res in results:
        # Every rank returns the step's loss: the mean of every micro-batch's.
        for step, got in enumerate(res.get("step_losses", [])):
            want = sum(ref["losses"][step]) / m
            if abs(got - want) > TOLERANCE:
                return f"step {step + 1}: a rank returned the loss {got:.9g}, the unpipelined model's is {want:.9g}"
        grads.update(res["grads"])
        params.update(res["params"] or {})
        for step, got in enumerate(res["losses"]):
            losses[step].update(got)
    stages = range(entry["pipelines"] * s_per)
    missing = [s for s in stages if s not in grads]
    if missing:
        return f"no gradients for stages {missing}"
    worst = _worst(grads, ref["grads"], s_per)
    if worst[0] > TOLERANCE:
        return f"gradients differ: {worst[1]} is off by {worst[0]:.3g}"
    for step, got in enumerate(losses):
        if sorted(got) != list(range(m)):
            return f"step {step + 1}: losses reported for micro-batches {sorted(got)}, expected 0..{m - 1}"
        for mb, loss in got.items():
            want = ref["losses"][step][mb]
            if abs(loss - want) > TOLERANCE:
                return f"step {step + 1}: the loss of micro-batch {mb} differs: {loss:.9g} vs {want:.9g}"
    if ref["params"] is not None and case.task["kind"] == "runner":
        worst = _worst(params, ref["params"], s_per)
        if sorted(params) != list(stages) or worst[0] > TOLERANCE:
            return f"weights after {steps} steps differ: {worst[1]} is off by {worst[0]:.3g}"
        # The copies of a part receive one summed gradient: they must stay equal to the bit.
        for s in stages:
            first = params[s % s_per]
            for i, (a, b) in enumerate(zip(params[s], first, strict=True)):
                if not torch.equal(a, b):
                    diff = (a - b).abs().max().item()
                    copy = s % s_per
                    return f"after {steps} steps stage {s} parameter {i} is off its copy on stage {copy} by {diff:.3g}"
    return None


def _worst(got_by_stage, want_by_part, s_per):
    worst = (0.0, None)
    for s, got in got_by_stage.items():
        if len(got) != len(want_by_part[s % s_per]):
            return (float("inf"), f"stage {s} (with {len(got)} parameters, not {len(want_by_part[s % s_per])})")
        for i, (g, want) in enumerate(zip(got, want_by_part[s % s_per], strict=True)):
            diff = (g - want).abs().max().item()
            if diff > worst[0]:
                worst = (diff, f"stage {s} parameter {i}")
    return worst


def main():
    if len(sys.argv) != 3:
        print("usage: python -m pipeweave_conformance PLANS_DIR EVAL_PLANS_DIR", file=sys.stderr)
        return 2
    plans_dir, eval_dir = sys.argv[1], sys.argv[2]
    model.setup_torch()
    with open(os.path.join(plans_dir, "manifest.json")) as f:
        manifest = json.load(f)
    only = os.environ.get("PIPEWEAVE_CONFORMANCE_ONLY")
    refused = [e for e in manifest if e.get("refused")]
    manifest = [e for e in manifest if not e.get("refused")]
    for entry in manifest:
        entry["path"] = os.path.join(plans_dir, entry["file"])
    by_name = {e["name"]: e for e in manifest}
    error_paths = {
        "single": os.path.join(plans_dir, by_name["1f1b-p2-m3/json"]["file"]),
        "dual": os.path.join(plans_dir, by_name["dualpipe-p2-m4/json"]["file"]),
        "wide": os.path.join(plans_dir, by_name["dualpipe-p4-m8/json"]["file"]),
    }
    error_names = [name for name, _, _, _ in errors.checks(0, error_paths)] + [errors.IMPORT_CHECK]
    passed = failed = 0
    start = time.monotonic()
    pools = Pools(TIMEOUT_SECONDS)
    with tempfile.TemporaryDirectory() as work_dir:
        cases = positive_cases(plans_dir, manifest) + evaluation_cases(manifest, eval_dir)
        cases += torch_eval_cases(manifest) + mistake_cases(manifest) + negative_cases(plans_dir, manifest, work_dir)
        cases += split_cases(eval_dir)
        cases = [c for c in cases if not only or only in c.name]
        chosen_errors = [n for n in error_names if not only or only in f"errors: {n}"]
        chosen_refused = [e for e in refused if not only or only in e["name"]]
        if not cases and not chosen_errors and not chosen_refused:
            print(f"error: no case matches PIPEWEAVE_CONFORMANCE_ONLY={only!r}")
            print("0 passed, 1 failed")
            return 1
        for entry in chosen_refused:
            # The exporter refused a case the suite is meant to run: the proof does not hold.
            failed += 1
            print(f"FAILED  {entry['name']}: the export refused it: {entry['refused']}", flush=True)
        if chosen_errors:
            ok, bad = run_errors(pools, error_paths, set(chosen_errors))
            passed, failed = passed + ok, failed + bad
        references = {}
        try:
            # One world size at a time: a single pool alive, the others' processes gone.
            for world in sorted({c.world for c in cases}):
                for case in [c for c in cases if c.world == world]:
                    if run_case(pools, case, references):
                        passed += 1
                    else:
                        failed += 1
                pools.close()
        finally:
            pools.close()
    print(f"took {time.monotonic() - start:.0f}s")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def run_case(pools, case, references):
    t0 = time.monotonic()
    try:
        why = compare(case, pools.run(case.world, case.task), references)
    except CaseError as e:
        why = f"error: {e}"
    took = time.monotonic() - t0
    if case.expect_failure:
        if why is None:
            print(f"FAILED  {case.name}: the broken plan ({case.what}) trained like the reference", flush=True)
            return False
        print(f"ok      {case.name}: caught ({why}) ({took:.1f}s)", flush=True)
        return True
    if why is None:
        print(f"ok      {case.name} ({took:.1f}s)", flush=True)
        return True
    print(f"FAILED  {case.name}: {why}", flush=True)
    return False


def run_errors(pools, paths, names):
    t0 = time.monotonic()
    try:
        results = pools.run(2, {"kind": "errors", "paths": paths})
        verdicts = errors.judge(results, paths)
    except CaseError as e:
        verdicts = [(name, f"error: {e}") for name in names if name != errors.IMPORT_CHECK]
    verdicts.append((errors.IMPORT_CHECK, errors.import_check()))
    took = time.monotonic() - t0
    ok = bad = 0
    for name, why in verdicts:
        if name not in names:
            continue
        if why is None:
            ok += 1
            print(f"ok      errors: {name}", flush=True)
        else:
            bad += 1
            print(f"FAILED  errors: {name}: {why}", flush=True)
    print(f"        (the misuse checks took {took:.1f}s)", flush=True)
    return ok, bad


if __name__ == "__main__":
    sys.exit(main())
