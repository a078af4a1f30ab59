#!/usr/bin/env python3
"""Benchmarks of pipeweave.torch against PyTorch's own pipelining, run by hand (never in CI).

    python tests/bench_runtime.py backward [--repeats N]
    torchrun --standalone --nproc-per-node 2 tests/bench_runtime.py runtime [--repeats N]

`backward`: one model part (an MLP block of width 256, float32, one thread); the median time of
a whole backward, of PyTorch's split backward (`stage_backward_input`, then
`stage_backward_weight`) and of pipeweave's (`_backward.backward_input`, then its W), each from
the same forward, interleaved so that the machine's load touches them alike.
`runtime`: ZB-V at P = 2, M = 8 on two processes (gloo, one thread each), four such parts per
rank; the median step of `pipeweave.torch.schedule()` (PyTorch's `_PipelineScheduleRuntime` on
the plan) and of `PlanRunner` on the same plan, interleaved step by step.
Both print one line per contender: the median in ms and the ratio to PyTorch's.
"""

import argparse
import os
import statistics
import sys
import time

import torch

WIDTH = 256
ROWS = 64


def block(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(WIDTH, 4 * WIDTH), torch.nn.GELU(), torch.nn.Linear(4 * WIDTH, WIDTH), torch.nn.LayerNorm(WIDTH)
    )


def part(seed, blocks=2):
    return torch.nn.Sequential(*[block(seed * 10 + i) for i in range(blocks)])


def bench_backward(repeats):
    from pipeweave.torch._backward import backward_input
    from torch.distributed.pipelining._backward import stage_backward_input, stage_backward_weight

    module = part(0)
    params = list(module.parameters())
    x0 = torch.randn(ROWS, WIDTH)
    grad = torch.randn(ROWS, WIDTH)

    def forward():
        x = x0.clone().requires_grad_(True)
        return x, module(x)

    def whole():
        x, out = forward()
        t = time.perf_counter()
        torch.autograd.backward([out], [grad], inputs=[x, *params])
        return time.perf_counter() - t

    def pytorch_split():
        x, out = forward()
        t = time.perf_counter()
        _, groups = stage_backward_input([out], [grad], [x], iter(params))
        stage_backward_weight(iter(params), groups)
        return time.perf_counter() - t

    def pipeweave_split():
        x, out = forward()
        t = time.perf_counter()
        _, work = backward_input([out], [grad], [x], params)
        work.run()
        return time.perf_counter() - t

    contenders = [("whole backward", whole), ("PyTorch I+W", pytorch_split), ("pipeweave I+W", pipeweave_split)]
    report(contenders, repeats, "PyTorch I+W")


def report(contenders, repeats, base):
    times = {name: [] for name, _ in contenders}
    for _ in range(3):
        for _, fn in contenders:
            fn()
    for _ in range(repeats):
        for name, fn in contenders:
            times[name].append(fn())
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    for name, med in medians.items():
        print(f"{name:>28}: {med * 1e3:8.2f} ms  ({med / medians[base]:.3f} of {base})", flush=True)


def bench_runtime(repeats):
    import torch.distributed as dist
    from pipeweave.torch import JsonPlan, PlanRunner, parts_of, schedule
    from torch.distributed.pipelining import PipelineStage

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    plan = JsonPlan.load(os.environ["PIPEWEAVE_BENCH_PLAN"])
    s_per, m = plan.stages_per_pipeline, plan.microbatches
    mine = parts_of(plan, rank)
    torch.manual_seed(100)
    x, y = torch.randn(m * ROWS, WIDTH), torch.randn(m * ROWS, WIDTH)
    loss_fn = torch.nn.functional.mse_loss

    ours = {q: part(q) for q in mine}
    runner = PlanRunner(plan, rank, ours, loss_fn)
    theirs = {q: part(q) for q in mine}
    stages = [PipelineStage(theirs[q], q, s_per, torch.device("cpu")) for q in mine]
    runtime = schedule(plan, stages, loss_fn=loss_fn)

    def pipeweave_step():
        dist.barrier()
        t = time.perf_counter()
        runner.step(x if 0 in mine else None, y if s_per - 1 in mine else None)
        return time.perf_counter() - t

    def pytorch_step():
        dist.barrier()
        t = time.perf_counter()
        args = (x,) if 0 in mine else ()
        runtime.step(*args, target=y if s_per - 1 in mine else None, losses=[] if s_per - 1 in mine else None)
        return time.perf_counter() - t

    contenders = [("PyTorch _PipelineScheduleRuntime", pytorch_step), ("pipeweave PlanRunner", pipeweave_step)]
    if rank == 0:
        report(contenders, repeats, "PyTorch _PipelineScheduleRuntime")
    else:
        # The same calls in the same order, unreported.
        for _ in range(3 + repeats):
            for _, fn in contenders:
                fn()
    runner.close()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["backward", "runtime"])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.what == "backward":
        bench_backward(args.repeats)
    else:
        if "PIPEWEAVE_BENCH_PLAN" not in os.environ:
            sys.exit("set PIPEWEAVE_BENCH_PLAN to a JSON plan: pipeweave export zb-v -p 2 -m 8 --to json -o zbv.json")
        bench_runtime(args.repeats)


if __name__ == "__main__":
    main()
