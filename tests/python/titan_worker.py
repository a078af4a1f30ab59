"""One rank of the torchtitan test (`torchrun --nproc-per-node 2 titan_worker.py OUT`).

For each case, torchtitan 0.3.0's own schedule builder (`_build_pipeline_schedule`, what
`pipeline_llm` calls) gets a ParallelismConfig whose `pipeline_parallel_schedule_csv` is a CSV
pipeweave exported; it builds PyTorch's `_PipelineScheduleRuntime` from the file, and one training
step runs on this rank's `PipelineStage`s (CPU, gloo). The rank saves its stages' gradients and the
losses it computed to OUT/CASE-rankR.pt for the test to compare with the unpipelined model.
"""

import os
import sys

import pipeweave as pw
import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage
from torchtitan.config.configs import ParallelismConfig
from torchtitan.distributed.pipeline_parallel import _build_pipeline_schedule

# (case, schedule, compile's arguments, micro-batch size): the batch is M micro-batches.
CASES = [
    ("1f1b", "1f1b", {"ranks": 2, "microbatches": 4}, 2),
    ("zb-v", "zb-v", {"ranks": 2, "microbatches": 4}, 2),
    ("interleaved-1f1b", "interleaved-1f1b", {"ranks": 2, "microbatches": 4, "stages_per_rank": 2}, 1),
]
WIDTH = 8


def part(q):
    """Model part q, the same on every rank and in the test's reference (seeded by q)."""
    torch.manual_seed(q)
    return torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh())


def batch(m, size):
    torch.manual_seed(1000)
    return torch.randn(m * size, WIDTH), torch.randn(m * size, WIDTH)


def loss_fn(output, target):
    """torchtitan's loss functions return (loss, what it was averaged over)."""
    return torch.nn.functional.mse_loss(output, target), output.shape[0]


def run(case, schedule, kwargs, size, out, rank):
    plan = pw.compile(schedule, **kwargs)
    csv = os.path.join(out, f"{case}.csv")
    if rank == 0:
        with open(csv, "w") as f:
            f.write(plan.to_csv("pytorch"))
    dist.barrier()
    stages_per_pipeline = plan.stages_per_pipeline
    (placement,) = plan.placement
    mine = [s for s, r in enumerate(placement) if r == rank]
    parts = {s: part(s) for s in mine}
    stages = [
        PipelineStage(parts[s], s, stages_per_pipeline, torch.device("cpu"), group=dist.group.WORLD) for s in mine
    ]
    parallelism = ParallelismConfig(
        pipeline_parallel_degree=plan.ranks,
        pipeline_parallel_schedule_csv=csv,
        pipeline_parallel_microbatch_size=size,
    )
    x, y = batch(plan.microbatches, size)
    built = _build_pipeline_schedule(parallelism=parallelism, local_batch_size=x.shape[0], stages=stages, loss_fn=loss_fn)
    losses = []
    first, last = 0 in mine, stages_per_pipeline - 1 in mine
    args = (x,) if first else ()
    built.step(*args, target=y if last else None, losses=losses if last else None)
    grads = {s: [p.grad.clone() for p in parts[s].parameters()] for s in mine}
    result = {"class": type(built).__name__, "grads": grads, "losses": [loss.detach() for loss in losses]}
    torch.save(result, os.path.join(out, f"{case}-rank{rank}.pt"))


def main():
    out = sys.argv[1]
    torch.set_default_dtype(torch.float64)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    try:
        for case in CASES:
            run(*case, out, rank)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
