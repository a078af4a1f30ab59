"""`split`: a model's modules cut into a plan's parts by its layer split, embedding and head included,
so that `PlanRunner` needs no hand-written part table."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .._plan import PlanProtocol
from ._runner import parts_of


def even_split(layers: int, parts: int) -> list[int]:
    """`layers` over `parts` as evenly as possible, the extra layers to the middle parts (so the
    first and last parts, which also hold the embedding and the head, are the lighter ones): the
    rule of `pipeweave --split even`."""
    base, extra = divmod(layers, parts)
    lo = (parts - extra) // 2
    return [base + (1 if lo <= q < lo + extra else 0) for q in range(parts)]


def split(
    model: torch.nn.Sequential | torch.nn.ModuleList | Sequence[torch.nn.Module],
    plan: PlanProtocol,
    rank: int | None = None,
    *,
    layers: Sequence[int] | None = None,
    embedding: bool = True,
    head: bool = True,
) -> dict[int, torch.nn.Module]:
    """Cuts `model`'s modules into `plan`'s model parts: `{part: nn.Sequential}` for the parts
    `rank` hosts (every part when `rank` is None), the keys `PlanRunner` expects.

    `model` is an `nn.Sequential`, an `nn.ModuleList` or a sequence of modules: with `embedding`
    its first module is the embedding (it goes before the first part's layers), with `head` its
    last is the head (after the last part's layers, the final norm with it if the model has one
    there), and the modules between are the layers, in order. The split is `layers` (layers per
    part), else the plan's own (a JSON plan written on a spec carries it, `plan.split`), else even.
    The modules are not copied: each part holds the model's own modules.
    """
    modules = list(model.children()) if isinstance(model, torch.nn.Module) else list(model)
    for i, m in enumerate(modules):
        if not isinstance(m, torch.nn.Module):
            raise TypeError(f"model[{i}] is a {type(m).__name__}, not a torch.nn.Module")
    first = 1 if embedding else 0
    last = len(modules) - (1 if head else 0)
    if last < first:
        raise ValueError(
            f"model has {len(modules)} modules, fewer than the embedding and the head it is said to hold"
        )
    body = modules[first:last]
    parts = plan.stages_per_pipeline
    if layers is not None:
        cut = [int(n) for n in layers]
        source = "layers="
    elif getattr(plan, "split", None) is not None:
        cut = list(getattr(plan, "split"))
        source = "the plan's split"
    else:
        cut = even_split(len(body), parts)
        source = "the even split"
    if len(cut) != parts:
        raise ValueError(f"{source} has {len(cut)} parts but the plan has {parts} stages per pipeline")
    if any(n < 0 for n in cut):
        raise ValueError(f"{source} has a negative layer count: {cut}")
    if sum(cut) != len(body):
        raise ValueError(
            f"{source} holds {sum(cut)} layers but the model has {len(body)} between its "
            f"{'embedding' if embedding else 'start'} and its {'head' if head else 'end'}"
        )
    if any(n == 0 for n in cut[1:-1]):
        q = next(i for i, n in enumerate(cut) if n == 0 and 0 < i < parts - 1)
        raise ValueError(f"{source} leaves part {q} without a layer; only the first and the last part may hold none")
    wanted = range(parts) if rank is None else parts_of(plan, rank)
    out: dict[int, torch.nn.Module] = {}
    starts = [sum(cut[:q]) for q in range(parts)]
    for q in wanted:
        pieces: list[torch.nn.Module] = []
        if q == 0 and embedding:
            pieces.append(modules[0])
        pieces.extend(body[starts[q] : starts[q] + cut[q]])
        if q == parts - 1 and head:
            pieces.append(modules[-1])
        out[q] = torch.nn.Sequential(*pieces)
    return out
