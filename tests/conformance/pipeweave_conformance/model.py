"""The conformance model: a small MLP cut into model parts, its data, and the one-process reference.

Everything is float64 and seeded, so every process builds the same weights and batches.
The training loss of a step is the mean over micro-batches of the per-micro-batch MSE, which is
what PyTorch's runtime computes (it sums per-micro-batch gradients and divides by M).
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


def batch(microbatches):
    gen = torch.Generator().manual_seed(SEED + 1)
    rows = microbatches * ROWS_PER_MICROBATCH
    x = torch.randn(rows, WIDTH, generator=gen)
    y = torch.randn(rows, WIDTH, generator=gen)
    return x, y


def chunk(t, mb):
    return t[mb * ROWS_PER_MICROBATCH : (mb + 1) * ROWS_PER_MICROBATCH]


def loss_fn(output, target):
    return torch.nn.functional.mse_loss(output, target)


def reference(num_parts, microbatches):
    """Loss and per-part parameter gradients of one unpipelined step."""
    parts = build_parts(num_parts)
    x, y = batch(microbatches)
    losses = []
    for mb in range(microbatches):
        out = chunk(x, mb)
        for part in parts:
            out = part(out)
        losses.append(loss_fn(out, chunk(y, mb)))
    loss = torch.stack(losses).mean()
    loss.backward()
    grads = [[p.grad.detach().clone() for p in part.parameters()] for part in parts]
    return loss.item(), grads
