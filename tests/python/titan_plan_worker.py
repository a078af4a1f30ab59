"""One rank of the torchtitan adapter's test (`torchrun --nproc-per-node 2 titan_plan_worker.py OUT`).

For each case, `pipeweave.torch.titan.pipelining_fn(plan)` builds the rank's model parts and its
schedule from torchtitan 0.3.0's own configs (`ParallelismConfig`, `TrainingConfig`) and a pipeline
mesh, as `Trainer.__init__` calls a model spec's `pipelining_fn`; every rank then initialises its
parts with its own seed (as torchtitan does, so the copies of DualPipe and Chimera start apart) and
two training steps run through `schedule.step(...)` exactly as `Trainer.pp_forward_backward_step`
calls it (split micro-batches, `loss_kwargs={"global_valid_tokens": ...}`, `return_outputs=False`),
with torchtitan's loss convention (`(sum of the token losses / global valid tokens, count)`).
The rank saves, for the owner copy of each part, its gradients after the first step (named as in
the whole model: torchtitan's cut keeps the names), the summed losses torchtitan would log, and
every copy's weights after the second step (SGD).
"""

import os
import sys

import pipeweave as pw
import torch
import torch.distributed as dist
from pipeweave.torch.titan import pipelining_fn
from torch.distributed.device_mesh import init_device_mesh
from torchtitan.config.configs import ParallelismConfig, TrainingConfig

# (case, schedule, compile's arguments)
CASES = [
    ("1f1b", "1f1b", {"ranks": 2, "microbatches": 4}),
    ("zb-v", "zb-v", {"ranks": 2, "microbatches": 4}),
    ("dualpipe", "dualpipe", {"ranks": 2, "microbatches": 4}),
    ("chimera", "chimera", {"ranks": 2, "microbatches": 4}),
]
VOCAB, DIM, LAYERS, SEQ, MB_ROWS = 32, 16, 4, 6, 2


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ff = torch.nn.Sequential(torch.nn.Linear(DIM, 2 * DIM), torch.nn.GELU(), torch.nn.Linear(2 * DIM, DIM))

    def forward(self, h):
        return h + self.ff(h)


class TinyLM(torch.nn.Module):
    """torchtitan's shape of a language model (`tok_embeddings`, `layers`, `norm`, `lm_head`), whose
    forward skips the pieces a pipeline cut removed (set to None), as torchtitan's models do."""

    def __init__(self):
        super().__init__()
        self.tok_embeddings = torch.nn.Embedding(VOCAB, DIM)
        self.layers = torch.nn.ModuleDict({str(i): Block() for i in range(LAYERS)})
        self.norm = torch.nn.LayerNorm(DIM)
        self.lm_head = torch.nn.Linear(DIM, VOCAB)

    def forward(self, h):
        h = self.tok_embeddings(h) if self.tok_embeddings is not None else h
        for layer in self.layers.values():
            h = layer(h)
        h = self.norm(h) if self.norm is not None else h
        return self.lm_head(h) if self.lm_head is not None else h


class Config:
    layers = list(range(LAYERS))


def model(seed):
    torch.manual_seed(seed)
    return TinyLM()


def loss_fn(pred, labels, global_valid_tokens):
    """torchtitan's convention: the sum of the token losses over the step's valid tokens, and a count."""
    loss = torch.nn.functional.cross_entropy(pred.flatten(0, 1), labels.flatten(0, 1), reduction="sum")
    return loss / global_valid_tokens, labels.numel()


def batch(m, step):
    gen = torch.Generator().manual_seed(500 + step)
    tokens = torch.randint(0, VOCAB, (m * MB_ROWS, SEQ), generator=gen)
    labels = torch.randint(0, VOCAB, (m * MB_ROWS, SEQ), generator=gen)
    return tokens, labels


class Dims:
    def __init__(self, mesh):
        self.mesh = mesh

    def get_mesh(self, name):
        assert name == "pp"
        return self.mesh


def run(case, schedule_name, kwargs, out, rank, mesh):
    plan = pw.compile(schedule_name, **kwargs)
    m = plan.microbatches
    parallelism = ParallelismConfig(pipeline_parallel_degree=plan.ranks, pipeline_parallel_microbatch_size=MB_ROWS)
    training = TrainingConfig(local_batch_size=m * MB_ROWS)
    build = pipelining_fn(plan)
    schedule, parts, first, last = build(
        model(0),
        parallel_dims=Dims(mesh),
        training=training,
        parallelism=parallelism,
        compile_config=None,
        ac_config=None,
        dump_folder=out,
        device=torch.device("cpu"),
        model_config=Config(),
        parallelize_fn=lambda module, **_: module,
        loss_fn=loss_fn,
    )
    hosted = pw.torch.parts_of(plan, rank)
    by_part = dict(zip(hosted, parts, strict=True))
    # torchtitan initialises each rank's parts with the rank's own seed: the copies that are not
    # the owner's start apart from it.
    torch.manual_seed(1000 + rank)
    with torch.no_grad():
        for q, part in by_part.items():
            if q not in schedule.runner.owned_parts:
                for p in part.parameters():
                    p.add_(0.01 * torch.randn_like(p))
    opt = torch.optim.SGD([p for part in parts for p in part.parameters()], lr=0.1)
    result = {"grads": {}, "losses": [], "params": {}, "first": first, "last": last}
    for step in range(2):
        opt.zero_grad()
        tokens, labels = batch(m, step)
        tokens_mbs, labels_mbs = tokens.tensor_split(m), labels.tensor_split(m)
        losses = [] if last else None
        schedule.step(
            arg_mbs=[(t,) for t in tokens_mbs] if first else None,
            kwarg_mbs=[{} for _ in range(m)],
            target_mbs=list(labels_mbs) if last else None,
            losses=losses,
            loss_kwargs={"global_valid_tokens": torch.tensor(labels.numel())},
            return_outputs=False,
        )
        if losses is not None:
            result["losses"].append(torch.sum(torch.stack(losses)).item())
        if step == 0:
            for q in schedule.runner.owned_parts:
                result["grads"][q] = {n: p.grad.clone() for n, p in by_part[q].named_parameters()}
        opt.step()
    result["params"] = {q: {n: p.detach().clone() for n, p in part.named_parameters()} for q, part in by_part.items()}
    schedule.runner.close()
    torch.save(result, os.path.join(out, f"{case}-rank{rank}.pt"))


def main():
    out = sys.argv[1]
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (dist.get_world_size(),), mesh_dim_names=("pp",))
    try:
        for case in CASES:
            run(*case, out, rank, mesh)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
