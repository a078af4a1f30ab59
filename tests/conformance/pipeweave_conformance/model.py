"""The conformance model: a small MLP cut into model parts, its data, and the one-process reference.

Everything is float64 and seeded, so every process builds the same weights and batches.
The training loss of a step is the mean over micro-batches of the per-micro-batch MSE, which is
what PyTorch's runtime computes (it sums per-micro-batch gradients and divides by M).
Training over several steps uses SGD with momentum, so a copy whose gradients went astray in one
step stays off in every later one.
"""

import torch

WIDTH = 8
ROWS_PER_MICROBATCH = 2
SEED = 1234


def setup_torch():
    torch.set_default_dtype(torch.float64)
    # One thread: the suite forks worker processes, and several threads per process on a
    # two-core machine only slow it down.
    torch.set_num_threads(1)


def build_parts(num_parts):
    """Model part q is Linear(WIDTH, WIDTH) followed by tanh, seeded identically everywhere."""
    gen = torch.Generator().manual_seed(SEED)
    parts = []
    for _ in range(num_parts):
        lin = torch.nn.Linear(WIDTH, WIDTH)
        with torch.no_grad():
            lin.weight.copy_(torch.randn(WIDTH, WIDTH, generator=gen) * 0.5)
            lin.bias.copy_(torch.randn(WIDTH, generator=gen) * 0.1)
        parts.append(torch.nn.Sequential(lin, torch.nn.Tanh()))
    return parts


def batch(microbatches, step=0):
    """The whole batch of training step `step` (inputs, targets), M micro-batches of equal rows."""
    gen = torch.Generator().manual_seed(SEED + 1 + step)
    rows = microbatches * ROWS_PER_MICROBATCH
    x = torch.randn(rows, WIDTH, generator=gen)
    y = torch.randn(rows, WIDTH, generator=gen)
    return x, y


def chunk(t, mb):
    return t[mb * ROWS_PER_MICROBATCH : (mb + 1) * ROWS_PER_MICROBATCH]


def loss_fn(output, target):
    return torch.nn.functional.mse_loss(output, target)


def optimizer(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def reference(num_parts, microbatches, steps=1):
    """The unpipelined run: per-step micro-batch losses, the first step's gradients, the final weights.

    Returns {"losses": [[loss of micro-batch k] per step], "grads": [[tensor] per part],
    "params": [[tensor] per part]}.
    """
    parts = build_parts(num_parts)
    opt = optimizer([p for part in parts for p in part.parameters()])
    out = {"losses": [], "grads": None, "params": None}
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        x, y = batch(microbatches, step)
        losses = []
        for mb in range(microbatches):
            h = chunk(x, mb)
            for part in parts:
                h = part(h)
            losses.append(loss_fn(h, chunk(y, mb)))
        torch.stack(losses).mean().backward()
        out["losses"].append([loss.item() for loss in losses])
        if step == 0:
            out["grads"] = [[p.grad.detach().clone() for p in part.parameters()] for part in parts]
        opt.step()
    out["params"] = [[p.detach().clone() for p in part.parameters()] for part in parts]
    return out


def outputs(num_parts, microbatches):
    """The unpipelined model's last output for each micro-batch of step 0, without a graph."""
    parts = build_parts(num_parts)
    x, _ = batch(microbatches)
    out = []
    with torch.no_grad():
        for mb in range(microbatches):
            h = chunk(x, mb)
            for part in parts:
                h = part(h)
            out.append(h)
    return out


class TupleStep(torch.nn.Module):
    """Part q of a second model whose activation is a pair: floats and an integer tensor of ids.

    The ids travel along the pipeline unchanged and select an embedding added in every part, so the
    runner must carry a tuple between ranks and send gradients back only for its floating tensor.
    """

    def __init__(self, last, gen):
        super().__init__()
        self.last = last
        self.lin = torch.nn.Linear(WIDTH, WIDTH)
        self.emb = torch.nn.Embedding(IDS, WIDTH)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=gen) * 0.3)

    def forward(self, h, ids):
        h = torch.tanh(self.lin(h) + self.emb(ids))
        return h if self.last else (h, ids)


IDS = 5


def build_tuple_parts(num_parts):
    gen = torch.Generator().manual_seed(SEED + 2)
    return [TupleStep(q == num_parts - 1, gen) for q in range(num_parts)]


def tuple_batch(microbatches, step=0):
    """((inputs, ids), targets) of step `step` for the tuple model."""
    gen = torch.Generator().manual_seed(SEED + 100 + step)
    rows = microbatches * ROWS_PER_MICROBATCH
    x = torch.randn(rows, WIDTH, generator=gen)
    ids = torch.randint(0, IDS, (rows,), generator=gen)
    return (x, ids), torch.randn(rows, WIDTH, generator=gen)


def tuple_reference(num_parts, microbatches, steps):
    """The tuple model unpipelined: losses summed over micro-batches (scale_grads=False), gradients
    accumulated over `steps` steps without zeroing; {"losses", "grads" after the last step}."""
    parts = build_tuple_parts(num_parts)
    out = {"losses": [], "grads": None, "params": None}
    for step in range(steps):
        (x, ids), y = tuple_batch(microbatches, step)
        losses = []
        for mb in range(microbatches):
            h, i = chunk(x, mb), chunk(ids, mb)
            for part in parts:
                h = part(h, i)
                h = h[0] if isinstance(h, tuple) else h
            losses.append(loss_fn(h, chunk(y, mb)))
        torch.stack(losses).sum().backward()
        out["losses"].append([loss.item() for loss in losses])
    out["grads"] = [[p.grad.detach().clone() for p in part.parameters()] for part in parts]
    return out
