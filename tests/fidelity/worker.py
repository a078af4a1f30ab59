"""One rank of a profiled run (`torchrun --standalone --nproc-per-node 2 tests/fidelity/worker.py ...`).

Compiles SCHEDULE at P = 2, builds the transformer's parts of this rank (tests/fidelity/model.py),
and runs it with `pipeweave.torch.PlanRunner` under `pipeweave.torch.profile` (the traces go to
OUT/rank{R}.pt.trace.json[.gz]), or with PyTorch's `_PipelineScheduleRuntime` on the same plan
(`--runtime pytorch`, timed only). Writes OUT/result-rank{R}.json: the step times (seconds), the
saved bytes of every action of the last step and their peak. Gloo on the CPU, one thread.

`--runtime both` times PlanRunner and PyTorch's runtime on the same plan and model, step by step
in turn (so the machine's load touches both alike), and writes their step times: each from a
barrier to a barrier, so that a step lasts until its last rank is done.
`--plans NAME=PLAN ... --rounds N` profiles several JSON plans in one pair of processes, in rounds: every
round runs each plan under `profile` (`--warmup` steps, then `--steps` profiled), in an order shuffled
anew each round (seeded by the round, the same on every rank; after each plan a garbage collection), into OUT/round{K}/NAME/ (its trace and result-rank{R}.json, as a single run
writes them). So every plan meets the machine's slow and fast spells alike, a few seconds apart,
instead of each in a run of its own minutes away from the others.
`--grads` also saves OUT/grads-rank{R}.pt: the gradients of one step without the profiler and of
the same step under it.
"""

import argparse
import gc
import json
import os
import random
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model  # noqa: E402

import pipeweave as pw  # noqa: E402
import pipeweave.torch as pwt  # noqa: E402


def plan_of(schedule, microbatches, stages_per_rank):
    kwargs = {"ranks": 2, "microbatches": microbatches}
    if stages_per_rank:
        kwargs["stages_per_rank"] = stages_per_rank
    return pw.compile(schedule, **kwargs)


def grads_of(parts):
    return {f"{q}.{n}": p.grad.detach().clone() for q, m in parts.items() for n, p in m.named_parameters() if p.grad is not None}


def zero(parts):
    for m in parts.values():
        for p in m.parameters():
            p.grad = None


def pytorch_runtime(plan, rank, make_parts, loss_fn):
    from torch.distributed.pipelining import PipelineStage

    (placement,) = plan.placement
    stages = [s for s, r in enumerate(placement) if r == rank]
    built = make_parts(stages)
    pipeline_stages = [PipelineStage(built[s], s, plan.stages_per_pipeline, torch.device("cpu")) for s in stages]
    return pwt.schedule(plan, pipeline_stages, loss_fn=loss_fn), built


def pytorch_trace(runtime, built, first, last, x, y, args, rank):
    """PyTorch's runtime under `torch.profiler` for `--steps` steps after `--warmup` (the profiler's),
    its trace as `export_chrome_trace` writes it, to OUT/pytorch-rank{R}.pt.trace.json[.gz]; with
    `--no-operators` only the metadata, the `ProfilerStep#` spans and the runtime's `PP:` spans."""
    import gzip

    schedule = torch.profiler.schedule(wait=0, warmup=args.warmup, active=args.steps, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule) as prof:
        for _ in range(args.warmup + args.steps):
            runtime.step(x if first else None, target=y if last else None, losses=[] if last else None)
            zero(built)
            prof.step()
    raw = os.path.join(args.out, f".raw-{rank}.json")
    prof.export_chrome_trace(raw)
    with open(raw) as f:
        trace = json.load(f)
    os.unlink(raw)
    if args.no_operators:
        trace["traceEvents"] = [
            e for e in trace["traceEvents"]
            if e.get("ph") == "M" or str(e.get("name", "")).startswith(("PP:", "ProfilerStep#"))
        ]
    name = f"pytorch-rank{rank}.pt.trace.json" + (".gz" if args.gzip else "")
    data = json.dumps(trace, separators=(",", ":")).encode()
    with open(os.path.join(args.out, name), "wb") as f:
        if args.gzip:
            with gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as z:
                z.write(data)
        else:
            f.write(data)
    return name


def misuse(runner, x, y, out, rank):
    """The words of each misuse of `profile` on this rank (type, message); the runner stays usable."""
    errors = {}
    bad_dir = os.path.join(out, f"file-rank{rank}")
    with open(bad_dir, "w") as f:
        f.write("a file, not a folder")
    cases = {
        "not_a_runner": lambda: pwt.profile(object(), x, y, dir=out),
        "steps_zero": lambda: pwt.profile(runner, x, y, steps=0, dir=out),
        "steps_bool": lambda: pwt.profile(runner, x, y, steps=True, dir=out),
        "warmup_negative": lambda: pwt.profile(runner, x, y, warmup=-1, dir=out),
        "probe_not_bool": lambda: pwt.profile(runner, x, y, probe=1, dir=out),
        # Unwritable on every rank, then on rank 1 only: both ranks raise, neither waits.
        "dir_is_a_file": lambda: pwt.profile(runner, x, y, dir=os.path.join(bad_dir, "traces")),
        "dir_bad_on_rank_1": lambda: pwt.profile(runner, x, y, dir=os.path.join(bad_dir, "traces") if rank == 1 else out),
    }
    for name, call in cases.items():
        try:
            call()
            errors[name] = None
        except Exception as e:
            errors[name] = [type(e).__name__, str(e)]
    return errors


def rounds(args, rank):
    """`--plans`: every plan profiled once a round, in an order shuffled anew each round."""
    size = model.SIZES[args.size]
    named = []
    for item in args.plans:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            sys.exit(f"--plans takes NAME=PLAN, got {item!r}")
        named.append((name, pwt.JsonPlan.load(path)))
    runners = {}
    for name, plan in named:
        x, y = model.batch(size, plan.microbatches)
        parts = model.parts(size, plan.stages_per_pipeline, pwt.parts_of(plan, rank))
        runners[name] = (pwt.PlanRunner(plan, rank, parts, model.loss_fn), parts, x, y, plan.microbatches)
    names = [n for n, _ in named]
    for r in range(args.rounds):
        # A new order every round, the same on every rank (a seeded shuffle): no plan always
        # follows the same one.
        for name in random.Random(r).sample(names, len(names)):
            runner, parts, x, y, microbatches = runners[name]
            out = os.path.join(args.out, f"round{r + 1}", name)
            os.makedirs(out, exist_ok=True)
            profiled = pwt.profile(
                runner, x, y, steps=args.steps, warmup=args.warmup, dir=out,
                after_step=lambda parts=parts: zero(parts), gzip=args.gzip, operators=not args.no_operators,
            )
            result = {"schedule": name, "rank": rank, "runtime": "pipeweave", "size": args.size,
                      "microbatches": microbatches,
                      "torch": torch.__version__, "round": r + 1,
                      "trace": os.path.basename(profiled.trace), "step_times": profiled.step_times,
                      "peak_saved_bytes": profiled.peak_saved_bytes,
                      "saved_bytes": [[s.action, s.bytes, s.peak] for s in profiled.saved_bytes[-1]]}
            with open(os.path.join(out, f"result-rank{rank}.json"), "w") as f:
                json.dump(result, f, indent=1)
            # The trace just written leaves garbage: collected here, not in the next plan's steps.
            gc.collect()


def probe_fails(runner, x, y, out, rank):
    """`profile`'s link probe failing on rank 0 while rank 1 waits for its next message: the words
    each rank raises (type, message)."""
    import pipeweave.torch._probe as probe

    import builtins

    def failing(*args):
        if len(args) == 1 and isinstance(args[0], list):
            raise RuntimeError("injected failure")
        return builtins.min(*args)

    if rank == 0:
        # The probe keeps the least of its timings (a list): rank 0 fails taking its first point's.
        probe.min = failing
    try:
        pwt.profile(runner, x, y, steps=1, warmup=0, dir=out)
    except Exception as e:
        return {"probe": [type(e).__name__, str(e)]}
    return {"probe": None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--schedule", default="1f1b")
    ap.add_argument("--plan", help="a JSON plan (`pipeweave export PLAN --to json`), instead of --schedule")
    ap.add_argument("--plans", nargs="+", metavar="NAME=PLAN", help="several JSON plans, profiled in rounds (see above)")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of --plans (default 1)")
    ap.add_argument("--stages-per-rank", type=int, default=0)
    ap.add_argument("--microbatches", type=int, default=8)
    ap.add_argument("--size", choices=[*sorted(model.SIZES), "mlp"], default="fidelity")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--runtime", choices=["pipeweave", "pytorch", "both"], default="pipeweave")
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--no-operators", action="store_true")
    ap.add_argument("--grads", action="store_true")
    ap.add_argument("--misuse", action="store_true")
    ap.add_argument("--probe-fails", action="store_true", help="rank 0's link probe fails after its first round trip")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if args.plans:
        rounds(args, rank)
        dist.destroy_process_group()
        return
    if args.plan:
        plan = pwt.JsonPlan.load(args.plan)
    else:
        plan = plan_of(args.schedule, args.microbatches, args.stages_per_rank)
    if args.size == "mlp":
        size = None
        x, y = model.mlp_batch(plan.microbatches)
        make_parts, loss_fn = (lambda which: model.mlp_parts(which)), model.mlp_loss
    else:
        size = model.SIZES[args.size]
        x, y = model.batch(size, plan.microbatches)
        make_parts, loss_fn = (lambda which: model.parts(size, plan.stages_per_pipeline, which)), model.loss_fn
    result = {"schedule": args.schedule, "rank": rank, "runtime": args.runtime, "size": args.size,
              "microbatches": plan.microbatches, "torch": torch.__version__}
    os.makedirs(args.out, exist_ok=True)
    if args.runtime in ("pytorch", "both"):
        runtime, built = pytorch_runtime(plan, rank, make_parts, loss_fn)
        first = 0 in built
        last = plan.stages_per_pipeline - 1 in built
        runner = None
        if args.runtime == "both":
            parts = make_parts(pwt.parts_of(plan, rank))
            runner = pwt.PlanRunner(plan, rank, parts, loss_fn)
        times = {"pytorch": [], "pipeweave": []}
        for i in range(args.warmup + args.steps):
            for who in ("pytorch", "pipeweave") if i % 2 == 0 else ("pipeweave", "pytorch"):
                if who == "pipeweave" and runner is None:
                    continue
                dist.barrier()
                start = time.perf_counter()
                if who == "pytorch":
                    runtime.step(x if first else None, target=y if last else None, losses=[] if last else None)
                    zero(built)
                else:
                    runner.step(x, y)
                    zero(parts)
                # Until every rank is done: the pipeline's step, whichever rank ends it.
                dist.barrier()
                if i >= args.warmup:
                    times[who].append(time.perf_counter() - start)
        result["step_times"] = times
        if args.runtime == "pytorch":
            result["trace"] = pytorch_trace(runtime, built, first, last, x, y, args, rank)
    else:
        parts = make_parts(pwt.parts_of(plan, rank))
        runner = pwt.PlanRunner(plan, rank, parts, loss_fn)
        if args.misuse:
            result["errors"] = misuse(runner, x, y, args.out, rank)
        profiled = None
        if args.probe_fails:
            result["errors"] = probe_fails(runner, x, y, args.out, rank)
        elif args.grads:
            # One step without the profiler, then the same step under it, from the same weights.
            runner.step(x, y)
            plain = grads_of(parts)
            zero(parts)
            profiled = pwt.profile(runner, x, y, steps=1, warmup=0, dir=args.out, gzip=args.gzip)
            torch.save({"plain": plain, "profiled": grads_of(parts)}, os.path.join(args.out, f"grads-rank{rank}.pt"))
        else:
            profiled = pwt.profile(
                runner, x, y, steps=args.steps, warmup=args.warmup, dir=args.out,
                after_step=lambda: zero(parts), gzip=args.gzip, operators=not args.no_operators,
            )
        if profiled is not None:
            result["trace"] = os.path.basename(profiled.trace)
            result["step_times"] = profiled.step_times
            result["peak_saved_bytes"] = profiled.peak_saved_bytes
            result["saved_bytes"] = [[r.action, r.bytes, r.peak] for r in profiled.saved_bytes[-1]]
    with open(os.path.join(args.out, f"result-rank{rank}.json"), "w") as f:
        json.dump(result, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
