"""One rank of the recipes' test (`torchrun --nproc-per-node 2 recipes_worker.py OUT`).

Runs each Python block of docs/python.md's "Recipes" as written, on DualPipe at P = 2, M = 4,
with a fresh runner each, and saves what the test compares with the unpipelined model: the
autocast loss, the accumulated gradients, the restored weights of every copy, the clipped norm
and gradients (owned parts, by the full model's names).
"""

import os
import re
import sys

import pipeweave as pw
import pipeweave.torch
import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WIDTH, BLOCKS = 16, 4


def recipes():
    with open(os.path.join(ROOT, "docs", "python.md"), encoding="utf-8") as f:
        text = f.read()
    start = text.index("### Recipes")
    end = text.index("\n## ", start)
    return re.findall(r"^```python\n(.*?)^```$", text[start:end], re.S | re.M)


def whole_model():
    """The model the parts are cut from: `blocks`, each Linear then GELU."""
    torch.manual_seed(7)
    model = torch.nn.Module()
    model.blocks = torch.nn.Sequential(
        *[torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.GELU()) for _ in range(BLOCKS)]
    )
    return model


def part(q):
    """Part q: blocks 2q and 2q + 1 of the whole model, with its weights."""
    blocks = whole_model().blocks
    return torch.nn.Sequential(blocks[2 * q], blocks[2 * q + 1])


def full_names(q, module):
    return {f"blocks.{2 * q + int(k.split('.', 1)[0])}.{k.split('.', 1)[1]}": v for k, v in module.named_parameters()}


def main():
    out = sys.argv[1]
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    os.chdir(out)
    plan = pw.compile("dualpipe", ranks=2, microbatches=4)
    torch.manual_seed(100)
    x, y = torch.randn(64, WIDTH), torch.randn(64, WIDTH)
    results = []
    for i, code in enumerate(recipes()):
        parts = {q: part(q) for q in pw.torch.parts_of(plan, rank)}
        runner = pw.torch.PlanRunner(plan, rank, parts, torch.nn.functional.mse_loss)
        opt = torch.optim.SGD([p for m in parts.values() for p in m.parameters()], lr=0.1)
        if i == 2:
            # The copies that are not the owner's start apart: the restore must make them equal.
            with torch.no_grad():
                for q in set(parts) - set(runner.owned_parts):
                    for p in parts[q].parameters():
                        p.add_(1.0)
        scope = {"torch": torch, "dist": dist, "plan": plan, "rank": rank, "parts": parts, "runner": runner}
        scope.update({"opt": opt, "x": x, "y": y})
        if i in (1, 3):
            # Gradients before the optimizer's step are what the test compares.
            opt.step = lambda: None
        exec(compile(code, f"docs/python.md recipe {i + 1}", "exec"), scope)
        result = {"loss": scope.get("loss"), "norm": scope.get("norm")}
        result["grads"] = {
            n: p.grad.clone() for q in runner.owned_parts for n, p in full_names(q, parts[q]).items() if p.grad is not None
        }
        result["params"] = [{n: p.detach().clone() for n, p in full_names(q, m).items()} for q, m in parts.items()]
        results.append(result)
        runner.close()
    torch.save(results, os.path.join(out, f"recipes-rank{rank}.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
