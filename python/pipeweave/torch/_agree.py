"""What the ranks agree on before a step exchanges anything: the batch, the shapes, the model copies.

A mistake on one rank (targets whose rows differ from the inputs', parts whose shapes do not chain,
a loss that is not one number, no inputs where part 0 runs, copies of a part that start from
different weights) must raise the same exception on every rank, not leave the others waiting.
So before the first step, and whenever the batch or the kind of step changes, the ranks:

1. walk the stages in global order, each host running its part on meta tensors (no data, no effect
   on the part) and passing the output's shapes to the next stage's host; a part that fails passes
   its failure along instead, so every transfer of the walk still happens;
2. gather what each rank knows (its batch, the shapes of its stages, its failures, a checksum of
   each replicated part) in one `all_gather_object`;
3. check the gathered facts, the same on every rank, and raise the same `ValueError` everywhere.

Every step starts with one all-reduce of a few fingerprints (the kind of step, the batch's shapes)
so that every rank learns when another one's batch changed, even a rank that is given no batch.
A rank whose own fingerprints are those it last agreed on starts that all-reduce and waits for it
only before the step's first transfer or backward (`Pending`): the forwards it can run on its own
batch first hide the all-reduce, and nothing travels between ranks before every rank knows that
all agree. When they do not, the ranks agree again there, as at a step's start.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
import warnings
import zlib
from dataclasses import dataclass
from typing import Literal, TypeAlias, TypedDict, cast

import torch
import torch.distributed as dist

from ._comm import Comm, Meta, meta_forward, metas, wire, unwire
from ._layout import Layout

# A tensor's shape and dtype name, as they travel: (shape, dtype name).
WireMetas: TypeAlias = list[tuple[list[int], str]]

# The fingerprint of what a rank does not know (a middle rank given no batch).
_UNKNOWN = -(2**62)


class StageFacts(TypedDict):
    """What the host of one stage found: the output's metas per micro-batch, or why not."""

    out: WireMetas | None
    error: str | None
    loss_error: str | None


class Facts(TypedDict):
    """What one rank tells the others in the agreement."""

    rank: int
    token: str
    mode: str
    inputs: WireMetas | None
    targets: WireMetas | None
    stages: dict[int, StageFacts]
    owns: dict[int, list[int]]
    sums: dict[int, list[float]] | None


@dataclass(frozen=True)
class Agreed:
    """What every rank knows after the agreement."""

    token: str
    evaluation: bool
    out_metas: dict[int, tuple[Meta, ...]]
    # Whether the step computes losses (training always; evaluation when targets were given).
    with_loss: bool
    # The rank holding each micro-batch's last output (and its loss).
    owner: dict[int, int]


def fingerprint(mode: str, inputs: WireMetas | None, targets: WireMetas | None) -> list[int]:
    """Six numbers whose maximum over the ranks shows whether the ranks agree and what changed."""
    out: list[int] = []
    for value in (mode, inputs, targets):
        if value is None:
            out += [_UNKNOWN, _UNKNOWN]
        else:
            h = zlib.crc32(repr(value).encode())
            out += [h, -h]
    return out


def quick_check(comm: Comm, local: list[int]) -> tuple[int, ...]:
    """The maxima of every rank's fingerprints: equal pairs mean the ranks that know agree."""
    t = torch.tensor(local, dtype=torch.int64, device=comm.collective_device())
    comm.all_reduce_max(t)
    return tuple(int(v) for v in t.tolist())


def quick_check_start(comm: Comm, local: list[int]) -> Pending:
    """Starts the all-reduce of `quick_check`; `Pending.maxima` waits for it."""
    t = torch.tensor(local, dtype=torch.int64, device=comm.collective_device())
    return Pending(comm.all_reduce_max_async(t), t)


@dataclass
class Pending:
    """A fingerprint all-reduce in flight: its handle and the tensor it reduces in place."""

    work: dist.Work
    values: torch.Tensor

    def maxima(self, comm: Comm) -> tuple[int, ...]:
        """Waits for the all-reduce; the maxima of every rank's fingerprints."""
        comm.wait([self.work])
        return tuple(int(v) for v in self.values.tolist())


def settled(maxima: tuple[int, ...]) -> bool:
    """True when every fingerprint is known by some rank and the ranks that know agree."""
    pairs = [(maxima[i], maxima[i + 1]) for i in range(0, len(maxima), 2)]
    return all(a == -b for a, b in pairs[:2]) and (pairs[2][0] == _UNKNOWN or pairs[2][0] == -pairs[2][1])


def agree(
    comm: Comm,
    layout: Layout,
    modules: dict[int, torch.nn.Module],
    loss_fn: Callable[..., object],
    mode: str,
    inputs: tuple[torch.Tensor, ...] | None,
    targets: tuple[torch.Tensor, ...] | None,
    check_copies: bool,
) -> Agreed:
    """The agreement of every rank on one kind of step; raises the same ValueError on every rank."""
    m = layout.microbatches
    in_wire = wire(metas(inputs)) if inputs is not None else None
    tgt_wire = wire(metas(targets)) if targets is not None else None
    first_input: tuple[Meta, ...] | None = None
    if inputs is not None and all(t.dim() > 0 and t.shape[0] % m == 0 for t in inputs):
        first_input = tuple(((t.shape[0] // m, *t.shape[1:]), t.dtype) for t in inputs)
    first_target: tuple[Meta, ...] | None = None
    if targets is not None and all(t.dim() > 0 and t.shape[0] % m == 0 for t in targets):
        first_target = tuple(((t.shape[0] // m, *t.shape[1:]), t.dtype) for t in targets)
    stages = _walk(comm, layout, modules, loss_fn, first_input, first_target)
    owns: dict[int, list[int]] = {}
    for work in layout.actions:
        for op in work if isinstance(work, tuple) else (work,):
            if op.kind == "F" and layout.is_last(op.stage):
                owns.setdefault(op.stage, []).append(op.mb)
    facts: Facts = {
        "rank": layout.rank,
        "token": uuid.uuid4().hex,
        "mode": mode,
        "inputs": in_wire,
        "targets": tgt_wire,
        "stages": stages,
        "owns": {s: sorted(mbs) for s, mbs in owns.items()},
        "sums": _checksums(layout, modules) if check_copies else None,
    }
    # Every rank's facts, made by this function on each rank.
    gathered = [cast(Facts, f) for f in comm.all_gather_object(facts)]
    problems = _problems(layout, gathered)
    if problems:
        shown = problems[:4] + ([f"and {len(problems) - 4} more"] if len(problems) > 4 else [])
        raise ValueError("; ".join(shown))
    out_metas: dict[int, tuple[Meta, ...]] = {}
    owner: dict[int, int] = {}
    for f in gathered:
        for s, st in f["stages"].items():
            if st["out"] is not None:
                out_metas[s] = unwire(st["out"])
        for mbs in f["owns"].values():
            for mb in mbs:
                owner[mb] = f["rank"]
    with_loss = mode == "train" or all(f["targets"] is not None for f in gathered if f["owns"])
    return Agreed(gathered[0]["token"], mode == "eval", out_metas, with_loss, owner)


def _walk(
    comm: Comm,
    layout: Layout,
    modules: dict[int, torch.nn.Module],
    loss_fn: Callable[..., object],
    first_input: tuple[Meta, ...] | None,
    first_target: tuple[Meta, ...] | None,
) -> dict[int, StageFacts]:
    """Every stage's output on the meta device, along each pipeline; this rank's stages' facts.

    Every rank walks the stages in the same global order and each transfer blocks, so the walk
    cannot deadlock (the earliest unfinished transfer always has both sides at it).
    """
    facts: dict[int, StageFacts] = {}
    # What each stage received: metas, or None when something before it failed.
    given: dict[int, tuple[Meta, ...] | None] = {}
    for s in range(layout.num_stages):
        host = layout.stage_rank[s]
        nxt = layout.stage_rank.get(s + 1) if not layout.is_last(s) else None
        if host == layout.rank:
            q = layout.part(s)
            inp = first_input if layout.is_first(s) else given.get(s)
            fact: StageFacts = {"out": None, "error": None, "loss_error": None}
            out: tuple[Meta, ...] | None = None
            if inp is not None:
                try:
                    out = meta_forward(modules[q], inp, comm.device)
                    fact["out"] = wire(out)
                except Exception as e:
                    what = "the inputs" if layout.is_first(s) else f"the output of model part {q - 1}"
                    fact["error"] = (
                        f"rank {layout.rank}, model part {q} (stage {s}): cannot run on {what} "
                        f"({_show(inp)} per micro-batch): {_first_line(e)}"
                    )
            if out is not None and layout.is_last(s) and first_target is not None:
                fact["loss_error"] = _loss_problem(loss_fn, out, first_target, layout.rank, q, s)
            facts[s] = fact
            if nxt is not None:
                if nxt == layout.rank:
                    given[s + 1] = out
                else:
                    comm.send_object(wire(out) if out is not None else None, nxt)
        elif nxt == layout.rank:
            got = comm.recv_object(host)
            given[s + 1] = unwire(got) if got is not None else None
    return facts


def _loss_problem(
    loss_fn: Callable[..., object], out: tuple[Meta, ...], target: tuple[Meta, ...], rank: int, q: int, s: int
) -> str | None:
    """Why the loss of the meta output is not one number, or None (also when it cannot be told)."""
    outs = [torch.empty(shape, dtype=dtype, device="meta") for shape, dtype in out]
    tgts = [torch.empty(shape, dtype=dtype, device="meta") for shape, dtype in target]
    try:
        # Quiet: a loss may warn about shapes here, and it will warn again when it runs.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss = loss_fn(outs[0] if len(outs) == 1 else tuple(outs), tgts[0] if len(tgts) == 1 else tuple(tgts))
    except Exception:
        # A loss that cannot run on meta tensors (one that reads values) is checked when it runs.
        return None
    if isinstance(loss, torch.Tensor) and loss.numel() == 1:
        return None
    got = f"a tensor of shape {list(loss.shape)}" if isinstance(loss, torch.Tensor) else type(loss).__name__
    return (
        f"rank {rank}, model part {q} (stage {s}): loss_fn returned {got}; it must return one number "
        "per micro-batch (a tensor with one element)"
    )


def _checksums(layout: Layout, modules: dict[int, torch.nn.Module]) -> dict[int, list[float]]:
    """A checksum of each replicated part this rank holds: count, sum, sum of squares, weighted sum."""
    out: dict[int, list[float]] = {}
    for q in layout.parts:
        if len(layout.copies[q]) < 2:
            continue
        values = [t.detach().reshape(-1).double() for t in modules[q].state_dict().values() if t.is_floating_point()]
        if not values:
            out[q] = [0.0, 0.0, 0.0, 0.0]
            continue
        flat = torch.cat([v.to("cpu") for v in values])
        weights = torch.arange(1, flat.numel() + 1, dtype=torch.float64)
        out[q] = [float(flat.numel()), flat.sum().item(), (flat * flat).sum().item(), (flat * weights).sum().item()]
    return out


def _problems(layout: Layout, gathered: list[Facts]) -> list[str]:
    """Every mistake the gathered facts show, in one order on every rank."""
    problems: list[str] = []
    modes = sorted({f["mode"] for f in gathered})
    if len(modes) > 1:
        how = ", ".join(f"rank {f['rank']} {'evaluates' if f['mode'] == 'eval' else 'trains'}" for f in gathered)
        problems.append(
            f"the ranks do not run the same kind of step ({how}): every rank trains, or every rank evaluates "
            "(under torch.no_grad() or with its parts in eval())"
        )
    training = modes == ["train"]
    s_per = layout.s_per
    for f in gathered:
        r = f["rank"]
        hosted = [s for s, rank in layout.stage_rank.items() if rank == r]
        if f["inputs"] is None and any(s % s_per == 0 for s in hosted):
            s = min(s for s in hosted if s % s_per == 0)
            problems.append(
                f"rank {r} hosts model part 0 (stage {s}) and was given no inputs: "
                "the ranks that host part 0 need the whole batch's inputs"
            )
        if training and f["targets"] is None and any(s % s_per == s_per - 1 for s in hosted):
            s = min(s for s in hosted if s % s_per == s_per - 1)
            problems.append(
                f"rank {r} computes the loss (model part {s_per - 1}, stage {s}) and was given no targets: "
                "the ranks that host the last part need the whole batch's targets"
            )
    keys: tuple[Literal["inputs"], Literal["targets"]] = ("inputs", "targets")
    for key in keys:
        given = [(f["rank"], f[key]) for f in gathered if f[key] is not None]
        for r, w in given[1:]:
            if w != given[0][1]:
                problems.append(
                    f"ranks {given[0][0]} and {r} were given different {key}: {_show_wire(given[0][1])} "
                    f"and {_show_wire(w)}; every rank passes the same batch (or None where it needs none)"
                )
                break
    m = layout.microbatches
    rows: list[tuple[str, int]] = []
    for key in keys:
        w = next((f[key] for f in gathered if f[key] is not None), None)
        for shape, _ in w or []:
            rows.append((key, shape[0] if shape else -1))
    for what, n in rows:
        if n < 0 or n % m != 0:
            problems.append(f"{what}: a batch of {n if n >= 0 else 'no'} rows does not split into {m} micro-batches")
            break
    if len({n for _, n in rows}) > 1:
        shown = ", ".join(f"{what} {n}" for what, n in rows)
        problems.append(
            f"the batch's tensors have different numbers of rows ({shown}): inputs and targets split into the "
            "same micro-batches, so each has the same rows"
        )
    by_stage = sorted(((s, st) for f in gathered for s, st in f["stages"].items()), key=lambda x: x[0])
    for _, st in by_stage:
        problems += [text for text in (st["error"], st["loss_error"]) if text is not None]
    if all(f["sums"] is not None for f in gathered):
        for q in range(layout.s_per):
            sums = [(f["rank"], f["sums"][q]) for f in gathered if f["sums"] is not None and q in f["sums"]]
            for r, value in sums[1:]:
                if value != sums[0][1]:
                    problems.append(
                        f"model part {q} has copies that differ: rank {sums[0][0]}'s weights are not rank {r}'s; "
                        "the copies of a part (one per pipeline) must start equal "
                        "(PlanRunner(..., check_copies=False) skips this check)"
                    )
                    break
    return problems


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:300]


def _show(meta: tuple[Meta, ...]) -> str:
    return ", ".join(f"{list(shape)} {str(dtype).removeprefix('torch.')}" for shape, dtype in meta)


def _show_wire(w: WireMetas | None) -> str:
    return ", ".join(f"{shape} {dtype}" for shape, dtype in w or [])
