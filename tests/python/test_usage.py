"""The documented code runs as written: the usage block of docs/python.md ("The package") and
the README's DualPipe training script (under torchrun, whose first step's losses must be the
unpipelined model's)."""

import math
import os
import re
import shutil
import subprocess
import sys

import pipeweave as pw
import pytest
from conftest import DATA, ROOT


def block(path, after, language="python"):
    """The first fenced code block of `language` after the line `after` in `path`."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        text = f.read()
    start = text.index(after)
    match = re.compile(rf"^```{language}\n(.*?)^```$", re.S | re.M).search(text, start)
    assert match, f"no {language} block after {after!r} in {path}"
    return match.group(1)


@pytest.mark.parametrize("csv", ["pytorch", "pytorch-comms"])
def test_the_usage_block_runs_as_written(tmp_path, monkeypatch, csv):
    code = block("docs/python.md", "## The package")
    # `"pytorch" | "pytorch-comms"` says "one of": each runs in turn.
    alternatives = '"pytorch" | "pytorch-comms"'
    assert alternatives in code
    code = code.replace(alternatives, f'"{csv}"')
    shutil.copy(os.path.join(DATA, "my.weave"), tmp_path / "my.weave")
    plan = pw.compile("1f1b", ranks=2, microbatches=4)
    (tmp_path / "plan.json").write_text(plan.to_json())
    monkeypatch.chdir(tmp_path)
    scope = {"rank": 3, "text_or_path": plan.to_actions()}
    exec(compile(code, "docs/python.md", "exec"), scope)
    last = scope["plan"]
    assert (last.ranks, last.stages_per_pipeline, last.microbatches) == (8, 16, 32)


def test_the_readme_training_script_trains_with_dualpipe(tmp_path):
    pytest.importorskip("torch")
    script = block("README.md", "A training script with DualPipe")
    assert len(script.strip().splitlines()) == 13
    (tmp_path / "train.py").write_text(script)
    ranks = 2
    # Each rank's output in a file of its own (the ranks print at the same time).
    logs = tmp_path / "logs"
    run = ["--standalone", "--nproc-per-node", str(ranks), "--log-dir", str(logs), "--redirects", "3"]
    cmd = [sys.executable, "-m", "torch.distributed.run", *run, "train.py"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    printed = "".join(p.read_text() for p in sorted(logs.rglob("stdout.log")))
    assert done.returncode == 0, done.stdout + done.stderr + "".join(p.read_text() for p in logs.rglob("stderr.log"))
    lines = re.findall(r"^step (\d+): rank (\d+): loss (\S+)$", printed, re.M)
    plan = pw.compile("dualpipe", ranks=ranks, microbatches=8)
    # Every rank prints the whole step's loss, ten steps each.
    assert sorted({int(r) for _, r, _ in lines}) == list(range(ranks))
    assert len(lines) == 10 * ranks and all(math.isfinite(float(v)) for _, _, v in lines)
    # The evaluation: the same loss on every rank, every micro-batch's output on every rank.
    evals = re.findall(r"^eval: rank (\d+): loss (\S+), (\d+) outputs$", printed, re.M)
    assert sorted(int(r) for r, _, _ in evals) == list(range(ranks))
    assert len({v for _, v, _ in evals}) == 1 and all(int(n) == plan.microbatches for _, _, n in evals)
    # Step 0: every rank reports the mean loss of every micro-batch, as the unpipelined model
    # computes them.
    import torch

    def part(q):
        torch.manual_seed(q)
        return torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU())

    assert torch.get_default_dtype() == torch.float32  # as in the script
    parts = [part(q) for q in range(plan.stages_per_pipeline)]
    torch.manual_seed(100)
    x, y = torch.randn(64, 16), torch.randn(64, 16)
    size = 64 // plan.microbatches
    with torch.no_grad():
        per_mb = []
        for k in range(plan.microbatches):
            out = x[k * size : (k + 1) * size]
            for p in parts:
                out = p(out)
            per_mb.append(torch.nn.functional.mse_loss(out, y[k * size : (k + 1) * size]).item())
    for step, _, value in lines:
        if step == "0":
            assert abs(float(value) - sum(per_mb) / len(per_mb)) < 1e-4


def test_the_readme_commands_block_runs_as_written():
    code = block("README.md", "Every command is a function of the package")
    scope = {"pw": pw}
    for line in code.strip().splitlines():
        value = eval(compile(line, "README.md", "eval"), scope)
        assert isinstance(value, float) and value > 0, line


def test_the_recipes_run_as_written(tmp_path):
    torch = pytest.importorskip("torch")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import recipes_worker as w

    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recipes_worker.py")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", worker, str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    got = [torch.load(tmp_path / f"recipes-rank{r}.pt") for r in range(2)]
    assert all(len(g) == 4 for g in got)
    torch.manual_seed(100)
    x, y = torch.randn(64, w.WIDTH), torch.randn(64, w.WIDTH)

    def model_loss(model, xs, ys):
        return torch.nn.functional.mse_loss(model.blocks(xs), ys)

    def owned(i):
        seen = {}
        for g in got:
            seen.update(g[i]["grads"])
        return seen

    # Autocast: the loss of bfloat16 activations, on every rank, near the float32 one.
    want = model_loss(w.whole_model(), x, y).item()
    for g in got:
        assert abs(g[0]["loss"].item() - want) < 0.05
    # Accumulation: the mean gradient over the two half-batches.
    model = w.whole_model()
    ((model_loss(model, x[:32], y[:32]) + model_loss(model, x[32:], y[32:])) / 2).backward()
    grads = owned(1)
    assert sorted(grads) == sorted(n for n, _ in model.named_parameters())
    for n, p in model.named_parameters():
        assert (grads[n] - p.grad).abs().max().item() < 1e-5, n
    # Checkpoint and restore: every copy holds the saved owner's weights.
    initial = dict(w.whole_model().named_parameters())
    for g in got:
        for copy in g[2]["params"]:
            for n, v in copy.items():
                assert torch.equal(v, initial[n].detach()), n
    # Clipping: the whole model's norm, every part counted once, and its clipped gradients.
    model = w.whole_model()
    model_loss(model, x, y).backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    for g in got:
        assert abs(g[3]["norm"].item() - norm.item()) < 1e-5
    grads = owned(3)
    for n, p in model.named_parameters():
        assert (grads[n] - p.grad).abs().max().item() < 1e-5, n
