"""Worker of a CSV case: loads the exported CSV into PyTorch's `_PipelineScheduleRuntime` and runs one step."""

import torch
from torch.distributed.pipelining import PipelineStage
from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime

from . import model


def run(rank, case, csv_path):
    """Returns {stage: [grads]} for this rank's stages and the per-micro-batch losses it computed."""
    (placement,) = case["placements"]
    num_stages = len(placement)
    m = case["microbatches"]
    parts = model.build_parts(num_stages)
    x, y = model.batch(m)
    mine = [s for s, r in enumerate(placement) if r == rank]
    # Shapes are inferred by the runtime on the first step.
    stages = [PipelineStage(parts[s], s, num_stages, torch.device("cpu")) for s in mine]
    schedule = _PipelineScheduleRuntime(stages, m, loss_fn=model.loss_fn)
    fmt = "compute_comms" if case["format"] == "pytorch-comms" else "compute_only"
    schedule._load_csv(csv_path, format=fmt)
    losses = []
    args = (x,) if 0 in mine else ()
    kwargs = {"target": y, "losses": losses} if num_stages - 1 in mine else {}
    schedule.step(*args, **kwargs)
    grads = {s: [p.grad.detach().clone() for p in parts[s].parameters()] for s in mine}
    # PyTorch returns the losses of the micro-batches in order 0..M-1.
    return grads, {mb: l.detach().item() for mb, l in enumerate(losses)}
