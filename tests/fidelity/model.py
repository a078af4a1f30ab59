"""The transformer of the fidelity runs and the profiling tests: embedding, blocks, head, cut into parts.

float32, seeded: every process builds the same weights and batches. The model is `BLOCKS` pre-norm
blocks (causal self-attention, then an MLP of 4x the width) between a token embedding with
learned positions and a head (a final norm and a linear layer to the vocabulary); the loss is
the cross-entropy of the next token. Cut into S parts for a plan of S stages per pipeline: part 0
holds the embedding, part S-1 the head, and the blocks are split evenly (BLOCKS is a multiple of
every S used: 2 and 4).
"""

from dataclasses import dataclass

import torch

SEED = 1234


@dataclass(frozen=True)
class Size:
    """How big the model and its micro-batches are."""

    width: int
    heads: int
    blocks: int
    vocab: int
    seq: int
    rows: int  # sequences per micro-batch


# One forward of a part of two blocks at 1 thread takes several milliseconds on this machine.
FIDELITY = Size(width=64, heads=4, blocks=8, vocab=256, seq=64, rows=4)
# For the tests: small and quick, the same structure.
SMALL = Size(width=16, heads=2, blocks=4, vocab=32, seq=8, rows=2)
SIZES = {"fidelity": FIDELITY, "small": SMALL}


class Block(torch.nn.Module):
    def __init__(self, size: Size):
        super().__init__()
        self.heads = size.heads
        self.norm1 = torch.nn.LayerNorm(size.width)
        self.qkv = torch.nn.Linear(size.width, 3 * size.width)
        self.proj = torch.nn.Linear(size.width, size.width)
        self.norm2 = torch.nn.LayerNorm(size.width)
        self.up = torch.nn.Linear(size.width, 4 * size.width)
        self.down = torch.nn.Linear(4 * size.width, size.width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm2(x))))


class Part(torch.nn.Module):
    """Part q of S: the embedding (q = 0), its blocks, the head (q = S - 1)."""

    def __init__(self, size: Size, q: int, parts: int):
        super().__init__()
        gen_state = torch.random.get_rng_state()
        torch.manual_seed(SEED + q * 1000 + parts)
        per = size.blocks // parts
        self.embed = torch.nn.Embedding(size.vocab, size.width) if q == 0 else None
        self.pos = torch.nn.Parameter(torch.randn(size.seq, size.width) * 0.02) if q == 0 else None
        self.blocks = torch.nn.Sequential(*[Block(size) for _ in range(per)])
        self.norm = torch.nn.LayerNorm(size.width) if q == parts - 1 else None
        self.head = torch.nn.Linear(size.width, size.vocab) if q == parts - 1 else None
        torch.random.set_rng_state(gen_state)

    def forward(self, x):
        if self.embed is not None:
            x = self.embed(x) + self.pos
        x = self.blocks(x)
        if self.head is not None:
            x = self.head(self.norm(x))
        return x


def parts(size: Size, count: int, which) -> dict:
    """The parts `which` of a cut into `count`, as `PlanRunner` takes them."""
    if size.blocks % count:
        raise ValueError(f"{size.blocks} blocks do not split into {count} parts")
    return {q: Part(size, q, count) for q in which}


def batch(size: Size, microbatches: int, step: int = 0):
    """The tokens and their next tokens, `microbatches * size.rows` sequences."""
    gen = torch.Generator().manual_seed(SEED + 1 + step)
    tokens = torch.randint(0, size.vocab, (microbatches * size.rows, size.seq + 1), generator=gen)
    return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def loss_fn(logits, targets):
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


# The tests' model whose saved bytes are counted by hand: part q is Linear(MLP_WIDTH, MLP_WIDTH)
# then tanh, float64, MLP_ROWS rows per micro-batch, the loss an MSE.
MLP_WIDTH = 8
MLP_ROWS = 2


def mlp_parts(which) -> dict:
    gen = torch.Generator().manual_seed(SEED)
    built = {}
    for q in range(max(which) + 1):
        lin = torch.nn.Linear(MLP_WIDTH, MLP_WIDTH, dtype=torch.float64)
        with torch.no_grad():
            lin.weight.copy_(torch.randn(MLP_WIDTH, MLP_WIDTH, generator=gen, dtype=torch.float64) * 0.5)
            lin.bias.copy_(torch.randn(MLP_WIDTH, generator=gen, dtype=torch.float64) * 0.1)
        built[q] = torch.nn.Sequential(lin, torch.nn.Tanh())
    return {q: built[q] for q in which}


def mlp_batch(microbatches: int):
    gen = torch.Generator().manual_seed(SEED + 1)
    rows = microbatches * MLP_ROWS
    return (torch.randn(rows, MLP_WIDTH, generator=gen, dtype=torch.float64),
            torch.randn(rows, MLP_WIDTH, generator=gen, dtype=torch.float64))


def mlp_loss(output, target):
    return torch.nn.functional.mse_loss(output, target)
