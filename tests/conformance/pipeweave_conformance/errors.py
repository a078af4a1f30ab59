"""Misuse of `pipeweave.torch` must fail with a clear exception, on every rank alike, before any message.

Each check runs on every rank of the two-rank pool; the driver compares what was raised with the
expected exception type and words.
"""

import copy
import json
import subprocess
import sys

import torch

from . import model


def _parts(plan, rank):
    built = model.build_parts(plan.stages_per_pipeline)
    return {q: built[q] for placement in plan.placement for q, r in enumerate(placement) if r == rank}


def checks(rank, paths):
    """(name, what to run, exception type, words the message must contain)."""
    import pipeweave.torch as pwt
    from torch.distributed.pipelining import PipelineStage

    single = pwt.JsonPlan.load(paths["single"])
    dual = pwt.JsonPlan.load(paths["dual"])
    wide = pwt.JsonPlan.load(paths["wide"])
    with open(paths["single"]) as f:
        raw = json.load(f)
    m = single.microbatches
    x, y = model.batch(m)

    def runner(plan=single, parts=None, r=rank):
        return pwt.PlanRunner(plan, r, _parts(plan, r) if parts is None else parts, model.loss_fn)

    def doctored(edit):
        data = copy.deepcopy(raw)
        for program in data["programs"]:
            edit(program)
        return pwt.JsonPlan.load(data)

    def wrong_peer(program):
        step = next(s for s in program["steps"] if s["kind"] == "send")
        step["peer"] = program["rank"]

    def no_reduction(program):
        program["steps"] = [s for s in program["steps"] if s["kind"] not in ("reduce_grad", "wait_reduce_grad")]

    other = 1 - rank
    return [
        ("PlanRunner: parts lack a part the rank hosts", lambda: runner(parts={}), ValueError, "parts lacks"),
        (
            "PlanRunner: parts hold a part the rank does not host",
            lambda: runner(parts={**_parts(single, rank), **_parts(single, other)}),
            ValueError,
            "which it does not host",
        ),
        (
            "PlanRunner: a part that is not a module",
            lambda: runner(parts={q: "weights" for q in _parts(single, rank)}),
            TypeError,
            "must be an nn.Module",
        ),
        ("PlanRunner: another rank's share", lambda: runner(r=other), ValueError, "of the process group"),
        ("PlanRunner: a plan for four ranks on two", lambda: runner(plan=wide), ValueError, "the process group has 2"),
        ("PlanRunner: not a plan", lambda: runner(plan=object(), parts={}), TypeError, "not a pipeweave plan"),
        (
            "PlanRunner: a plan whose step names the wrong peer",
            lambda: runner(plan=doctored(wrong_peer)),
            ValueError,
            "(placement), not",
        ),
        (
            "PlanRunner: a plan that never reduces a stage",
            lambda: runner(plan=doctored(no_reduction)),
            ValueError,
            "must reduce the gradients of stage",
        ),
        (
            "PlanRunner.step: a batch the micro-batches do not divide",
            lambda: runner().step(x[:-1], y[:-1]),
            ValueError,
            f"a batch of {len(x) - 1} rows does not split into {m} micro-batches",
        ),
        ("PlanRunner.step: no targets", lambda: runner().step(x, None), ValueError, "targets"),
        ("schedule: a plan of two pipelines", lambda: pwt.schedule(dual, []), ValueError, "PlanRunner"),
        (
            "schedule: the stages of another rank",
            lambda: pwt.schedule(single, [_stage(PipelineStage, single, other)], loss_fn=model.loss_fn),
            ValueError,
            "the PipelineStages given are",
        ),
        ("JsonPlan: another format", lambda: pwt.JsonPlan.load({"format": "x"}), ValueError, "format"),
        (
            "JsonPlan: a placement naming a rank the plan lacks",
            lambda: pwt.JsonPlan.load({**raw, "pipelines": [{**raw["pipelines"][0], "placement": [0, 7]}]}),
            ValueError,
            "rank 7 out of range",
        ),
    ]


def _stage(stage_class, plan, rank):
    (placement,) = plan.placement
    s = placement.index(rank)
    return stage_class(model.build_parts(len(placement))[s], s, len(placement), torch.device("cpu"))


def run(rank, task):
    """{name: None when nothing was raised, else (exception type name, message)}."""
    results = {}
    for name, fn, _, _ in checks(rank, task["paths"]):
        try:
            fn()
            results[name] = None
        except Exception as e:
            results[name] = (type(e).__name__, str(e))
    return results


def judge(rank_results, paths):
    """(name, None when every rank raised what it should, else why not) per check."""
    out = []
    for name, _, exc, words in checks(0, paths):
        why = None
        for rank, results in enumerate(rank_results):
            got = results.get(name)
            if got is None:
                why = f"rank {rank} raised nothing, expected {exc.__name__}"
            elif got[0] != exc.__name__ or words not in got[1]:
                why = f"rank {rank} raised {got[0]}: {got[1][:200]}; expected {exc.__name__} with '{words}'"
            if why:
                break
        out.append((name, why))
    return out


IMPORT_CHECK = "package: importing pipeweave and its JSON plan reader loads no torch"


def import_check():
    """None when `import pipeweave` (and `pipeweave._plan`) leaves torch unloaded, else why not."""
    code = "import sys, pipeweave, pipeweave._plan; sys.exit(3 if 'torch' in sys.modules else 0)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode == 3:
        return "torch was imported"
    if done.returncode != 0:
        return f"the import failed: {done.stderr.strip().splitlines()[-1:]}"
    return None
