"""torchtitan 0.3.0 drives pipeweave's plans: its own schedule builder reads pipeweave's CSV
(`--parallelism.pipeline_parallel_schedule_csv`), and `pipeweave.torch.titan.pipelining_fn(plan)`
(a model spec's `pipelining_fn`) trains any plan, DualPipe and Chimera included; on CPU with gloo
both give the unpipelined model's loss and gradients (docs/torchtitan.md)."""

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
torchtitan = pytest.importorskip("torchtitan")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import titan_plan_worker  # noqa: E402
import titan_worker  # noqa: E402

TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("titan")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", os.path.join(HERE, "titan_worker.py"), str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def reference(stages, m, size):
    """The unpipelined model: parts in a chain, each micro-batch's loss backward (torchtitan's
    builder keeps PyTorch's `scale_grads=False`: the step's gradient is the sum)."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        parts = [titan_worker.part(s) for s in range(stages)]
        x, y = titan_worker.batch(m, size)
    finally:
        torch.set_default_dtype(before)
    losses = []
    for k in range(m):
        out = x[k * size : (k + 1) * size]
        for p in parts:
            out = p(out)
        loss, _ = titan_worker.loss_fn(out, y[k * size : (k + 1) * size])
        loss.backward()
        losses.append(loss.detach())
    return {s: [p.grad for p in parts[s].parameters()] for s in range(stages)}, losses


@pytest.mark.parametrize("case, schedule, kwargs, size", titan_worker.CASES, ids=[c[0] for c in titan_worker.CASES])
def test_torchtitans_builder_runs_the_exported_csv(results, case, schedule, kwargs, size):
    import pipeweave as pw

    plan = pw.compile(schedule, **kwargs)
    got = [torch.load(results / f"{case}-rank{r}.pt") for r in range(plan.ranks)]
    assert {g["class"] for g in got} == {"_PipelineScheduleRuntime"}
    # The file torchtitan read is the command line's export.
    assert (results / f"{case}.csv").read_text() == plan.to_csv("pytorch")
    grads, losses = reference(plan.stages_per_pipeline, plan.microbatches, size)
    seen = {}
    for g in got:
        seen.update(g["grads"])
    assert sorted(seen) == list(range(plan.stages_per_pipeline))
    for s, want in grads.items():
        for a, b in zip(seen[s], want, strict=True):
            assert (a - b).abs().max().item() < TOLERANCE, f"stage {s}"
    (computed,) = [g["losses"] for g in got if g["losses"]]
    assert len(computed) == plan.microbatches
    for a, b in zip(computed, losses, strict=True):
        assert abs(a.item() - b.item()) < TOLERANCE


def test_torchtitans_trainer_needs_an_accelerator():
    # What stops torchtitan's training loop on a CPU: `Trainer.__init__` calls
    # `utils.device_module.set_device(...)`, and `utils.device_type` is `"cuda"` when no
    # accelerator is found (torchtitan/tools/utils.py), so on a machine without one it fails.
    if torch.cuda.is_available():
        pytest.skip("an accelerator is here: torchtitan's trainer would run, this checks the CPU case")
    from torchtitan.tools import utils

    assert utils.device_type == "cuda" and utils.device_module is torch.cuda
    with pytest.raises(RuntimeError):
        utils.device_module.set_device(torch.device("cuda", 0))


@pytest.fixture(scope="module")
def adapter_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("titan-plan")
    worker = os.path.join(HERE, "titan_plan_worker.py")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", worker, str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def adapter_reference(m):
    """The whole model: each step's loss (token losses summed over the batch's tokens) and its
    gradients by name after the first step, and the weights after two SGD steps."""
    w = titan_plan_worker
    model = w.model(0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses, grads = [], None
    for step in range(2):
        opt.zero_grad()
        tokens, labels = w.batch(m, step)
        loss, _ = w.loss_fn(model(tokens), labels, torch.tensor(labels.numel()))
        loss.backward()
        losses.append(loss.item())
        if step == 0:
            grads = {n: p.grad.clone() for n, p in model.named_parameters()}
        opt.step()
    return losses, grads, {n: p.detach().clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize(
    "case, schedule, kwargs", titan_plan_worker.CASES, ids=[c[0] for c in titan_plan_worker.CASES]
)
def test_torchtitans_pipelining_fn_trains_any_plan(adapter_results, case, schedule, kwargs):
    import pipeweave as pw

    plan = pw.compile(schedule, **kwargs)
    got = [torch.load(adapter_results / f"{case}-rank{r}.pt") for r in range(plan.ranks)]
    losses, grads, params = adapter_reference(plan.microbatches)
    seen = {}
    for g in got:
        for part in g["grads"].values():
            seen.update(part)
    # Every parameter of the model, once (from its owner copy), named as in the whole model.
    assert sorted(seen) == sorted(grads)
    for name, want in grads.items():
        assert (seen[name] - want).abs().max().item() < 1e-5, name
    logged = [g["losses"] for g in got if g["last"]]
    assert logged
    for steps in logged:
        assert steps == pytest.approx(losses, abs=1e-5)
    # Every copy of every part, after two steps: the whole model's weights.
    for g in got:
        for part in g["params"].values():
            for name, value in part.items():
                assert (value - params[name]).abs().max().item() < 1e-5, name
