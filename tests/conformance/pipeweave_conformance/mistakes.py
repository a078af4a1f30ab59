"""A mistake on one rank must raise the same exception on every rank, quickly, and leave no rank waiting.

Each case makes one mistake on one rank (a batch, a part, a loss, a copy of a part, a failure in the
middle of a step, a batch changed after a good step); every rank runs one step (two for the last:
a good one, then the mistake) and reports what it raised and how long it took. The driver checks
that every rank raised the same exception type with the same words, containing the expected ones,
within `BOUND_SECONDS`, and that the pool's process group still works afterwards (the runner's
messages travel in a process group of its own).
"""

import time

import torch

from . import model

BOUND_SECONDS = 15.0

# (name, plan, world, exception type name, words every rank's message must contain)
CASES = [
    ("targets whose rows differ from the inputs'", "1f1b-p2-m3/json", 2, "ValueError", "different numbers of rows"),
    (
        "parts whose shapes do not chain",
        "1f1b-p2-m3/json",
        2,
        "ValueError",
        "rank 1, model part 1 (stage 1): cannot run on the output of model part 0 ([2, 8] float64 per micro-batch)",
    ),
    (
        "a loss that is not one number",
        "zb-v-p2-m3/json",
        2,
        "ValueError",
        "rank 0, model part 3 (stage 3): loss_fn returned a tensor of shape [2, 8]",
    ),
    (
        "no inputs on the rank of part 0",
        "1f1b-p2-m3/json",
        2,
        "ValueError",
        "rank 0 hosts model part 0 (stage 0) and was given no inputs",
    ),
    ("copies of a part that differ", "dualpipe-p2-m4/json", 2, "ValueError", "model part 0 has copies that differ"),
    ("one rank evaluating, one training", "1f1b-p2-m3/json", 2, "ValueError", "do not run the same kind of step"),
    # After a good step: rank 0's batch is unchanged, so it checks the step behind its first forward
    # (the deferred check), rank 1's targets changed, so it checks first; both find the mistake.
    (
        "targets that change on one rank after a good step",
        "1f1b-p2-m3/json",
        2,
        "ValueError",
        "different numbers of rows",
    ),
    (
        "a loss that fails in the middle of a step",
        "1f1b-p2-m3/json",
        2,
        "PipelineError",
        "rank 1 failed at 1F1: ValueError: the loss of micro-batch 1 is broken",
    ),
    (
        "a middle part that fails in the middle of a step",
        "1f1b-p4-m8/json",
        4,
        "PipelineError",
        "rank 1 failed at 1F2: RuntimeError: part 1 is broken on its third forward",
    ),
    (
        "a part whose output changes shape in the middle of a step",
        "dualpipe-p2-m4/json",
        2,
        "PipelineError",
        "micro-batches must have one shape",
    ),
]


class _Failing(torch.nn.Module):
    """A part that raises on its `at`-th call."""

    def __init__(self, inner, at, words):
        super().__init__()
        self.inner = inner
        self.at = at
        self.words = words
        self.calls = 0

    def forward(self, x):
        if x.device.type != "meta":
            self.calls += 1
            if self.calls == self.at:
                raise RuntimeError(self.words)
        return self.inner(x)


class _Reshaping(torch.nn.Module):
    """A part whose output loses a row from its second real call on."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.calls = 0

    def forward(self, x):
        out = self.inner(x)
        if x.device.type == "meta":
            return out
        self.calls += 1
        return out if self.calls < 2 else out[1:]


def run(rank, task):
    """One step with the mistake; {"raised": (type, message) or None, "seconds", "world_ok"}."""
    import torch.distributed as dist
    from pipeweave.torch import JsonPlan, PlanRunner, parts_of

    name = task["mistake"]
    plan = JsonPlan.load(task["path"])
    s_per, m = plan.stages_per_pipeline, plan.microbatches
    built = model.build_parts(s_per)
    parts = {q: built[q] for q in parts_of(plan, rank)}
    loss_fn = model.loss_fn
    x, y = model.batch(m)
    hosts_first = 0 in parts
    hosts_last = s_per - 1 in parts
    inputs = x if hosts_first else None
    targets = y if hosts_last else None
    grad = torch.enable_grad()
    # A good step run first, for the mistakes made after one.
    good: tuple[object, object] | None = None
    if name == "targets that change on one rank after a good step":
        good = (inputs, targets)
        targets = y[:m] if hosts_last else None
    elif name == "targets whose rows differ from the inputs'":
        targets = y[: m] if hosts_last else None
    elif name == "parts whose shapes do not chain" and rank == 1:
        torch.manual_seed(0)
        parts[1] = torch.nn.Sequential(torch.nn.Linear(model.WIDTH - 1, model.WIDTH), torch.nn.Tanh())
    elif name == "a loss that is not one number":

        def loss_fn(out, target):
            return torch.nn.functional.mse_loss(out, target, reduction="none")

    elif name == "no inputs on the rank of part 0":
        inputs = None
    elif name == "copies of a part that differ" and rank == 1:
        with torch.no_grad():
            next(parts[0].parameters()).add_(1e-3)
    elif name == "one rank evaluating, one training" and rank == 0:
        grad = torch.no_grad()
    elif name == "a loss that fails in the middle of a step":
        calls = []

        def loss_fn(out, target):
            if out.device.type != "meta":
                calls.append(1)
                if len(calls) == 2:
                    raise ValueError("the loss of micro-batch 1 is broken")
            return model.loss_fn(out, target)

    elif name == "a middle part that fails in the middle of a step" and 1 in parts:
        parts[1] = _Failing(parts[1], 3, "part 1 is broken on its third forward")
    elif name == "a part whose output changes shape in the middle of a step" and rank == 0:
        parts[0] = _Reshaping(parts[0])
    runner = PlanRunner(plan, rank, parts, loss_fn)
    raised = None
    t0 = time.monotonic()
    try:
        with grad:
            if good is not None:
                runner.step(*good)
            runner.step(inputs, targets)
    except Exception as e:
        raised = (type(e).__name__, str(e))
    seconds = time.monotonic() - t0
    runner.close()
    # The caller's process group still works: only the runner's own was torn down.
    t = torch.ones(1)
    dist.all_reduce(t)
    return {"raised": raised, "seconds": seconds, "world_ok": t.item() == dist.get_world_size()}


def judge(name, results, kind, words):
    """None when every rank raised the same `kind` with `words`, in bounded time; else why not."""
    first = results[0]["raised"]
    for rank, res in enumerate(results):
        got = res["raised"]
        if got is None:
            return f"rank {rank} raised nothing, expected {kind} with '{words}'"
        if got[0] != kind or words not in got[1]:
            return f"rank {rank} raised {got[0]}: {got[1][:300]}; expected {kind} with '{words}'"
        if got != first:
            return f"rank {rank} raised {got[1][:200]!r}, rank 0 {first[1][:200]!r}: the words differ"
        if res["seconds"] > BOUND_SECONDS:
            return f"rank {rank} took {res['seconds']:.1f}s to raise (bound {BOUND_SECONDS:.0f}s)"
        if not res["world_ok"]:
            return f"rank {rank}: the world's process group no longer works after the failure"
    return None
