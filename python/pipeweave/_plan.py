"""The plan protocol, its objects, and a reader of the JSON plan (no torch needed).

`PlanProtocol` is what `pipeweave.torch` runs: the shape of a plan and every rank's actions and
lowered steps (`ActionProtocol`, `StepProtocol`). The native `Plan` and `JsonPlan` implement it, and
so may any object with the same attributes.
`Action` and `Step` are the small objects `plan.actions(rank)` and `plan.steps(rank)` return;
`JsonPlan` implements the plan protocol from a JSON plan, version 1, as `pipeweave export --to json`
writes it (docs/plan-format.md).
The reader checks the shape of the file and the facts the runtime relies on (placement, micro-batch
numbering, steps naming actions that exist); whether the schedule is correct is the validator's
question (`pipeweave validate`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn, Protocol, runtime_checkable

COMPUTE_KINDS = ("F", "B", "I", "W")
TRANSFER_KINDS = ("recv", "send", "wait_send")
REDUCE_KINDS = ("reduce_grad", "wait_reduce_grad")


@runtime_checkable
class ActionProtocol(Protocol):
    """One entry of a rank's compute program, as the plan protocol gives it (`Action` is one).

    `kind` is "F", "B", "I" or "W" with `stage` (global) and `mb` (global micro-batch), or "pair"
    (an overlapped F&B) with `pair` = (forward, backward) and `stage` and `mb` None.
    """

    @property
    def kind(self) -> str: ...
    @property
    def stage(self) -> int | None: ...
    @property
    def mb(self) -> int | None: ...
    @property
    def pair(self) -> tuple[ActionProtocol, ActionProtocol] | None: ...


@runtime_checkable
class StepProtocol(Protocol):
    """One entry of a rank's lowered program, as the plan protocol gives it (`Step` is one).

    `kind` and the fields that kind uses, the others None: "compute" (`action`, an index into the
    rank's actions); "recv", "send", "wait_send" (`dir` "fwd" or "bwd", `stage`, `mb`, `peer`);
    "reduce_grad", "wait_reduce_grad" (`stage`).
    """

    @property
    def kind(self) -> str: ...
    @property
    def action(self) -> int | None: ...
    @property
    def dir(self) -> str | None: ...
    @property
    def stage(self) -> int | None: ...
    @property
    def mb(self) -> int | None: ...
    @property
    def peer(self) -> int | None: ...


@runtime_checkable
class PlanProtocol(Protocol):
    """The plan protocol: what `pipeweave.torch.schedule` and `PlanRunner` take.

    The native `pipeweave.Plan` and `JsonPlan` implement it, and so does any object with these
    attributes and methods (docs/python.md, "The plan protocol"):

    - `ranks`: P; `pipelines` and `model_copies`: K, each pipeline one copy of the model;
    - `stages_per_pipeline`: S (pipeline j's position q is the global stage j*S + q and computes
      model part q); `microbatches`: M over all pipelines, numbered 0..M-1;
    - `placement`: K sequences of S ranks, `placement[j][q]` hosts position q of pipeline j;
    - `forward_only`: True for an evaluation step (forwards only, `--forward-only`); `PlanRunner`
      reads a plan without it as a training step;
    - `actions(rank)`: the rank's compute actions in order; `steps(rank)`: its lowered program in
      order (the JSON plan's `steps`). Between two ranks, receives stand in the order of the
      matching sends, so transports that match messages in posting order deliver every message
      where it belongs.

    `PlanRunner` checks every value before it runs anything, so a plan that breaks the protocol at
    run time fails with a `TypeError` or `ValueError` naming what is wrong.
    """

    @property
    def ranks(self) -> int: ...
    @property
    def pipelines(self) -> int: ...
    @property
    def model_copies(self) -> int: ...
    @property
    def stages_per_pipeline(self) -> int: ...
    @property
    def microbatches(self) -> int: ...
    @property
    def placement(self) -> Sequence[Sequence[int]]: ...
    @property
    def forward_only(self) -> bool: ...
    def actions(self, rank: int, /) -> Sequence[ActionProtocol]: ...
    def steps(self, rank: int, /) -> Sequence[StepProtocol]: ...


@dataclass(frozen=True, slots=True)
class Action:
    """One entry of a rank's compute program.

    `kind` is "F", "B", "I" or "W" with `stage` (global) and `mb` (global micro-batch id), or
    "pair" for an overlapped F&B with `pair = (forward, backward)` (a B or an I) and no stage or mb.
    """

    kind: str
    stage: int | None = None
    mb: int | None = None
    pair: tuple[Action, Action] | None = None

    def __str__(self) -> str:
        if self.pair is not None:
            return f"({self.pair[0]};{self.pair[1]})OVERLAP_F_B"
        return f"{self.stage}{self.kind}{self.mb}"


@dataclass(frozen=True, slots=True)
class Step:
    """One entry of a rank's lowered program, mirroring the JSON plan's `steps`.

    - "compute": run `actions(rank)[action]`;
    - "recv" / "send" / "wait_send": `dir` ("fwd" activations, "bwd" gradients), `stage` (the
      receiving stage for recv, the sending stage otherwise), `mb` and `peer` (the other rank);
    - "reduce_grad" / "wait_reduce_grad": `stage`.
    Fields a kind does not use are None.
    """

    kind: str
    action: int | None = None
    dir: str | None = None
    stage: int | None = None
    mb: int | None = None
    peer: int | None = None

    def __str__(self) -> str:
        if self.kind == "compute":
            return f"compute actions[{self.action}]"
        if self.kind in REDUCE_KINDS:
            return f"{self.stage}{self.kind.upper()}"
        d = "F" if self.dir == "fwd" else "B"
        return f"{self.stage}{self.kind.upper()}_{d}{self.mb}"


class JsonPlan:
    """A plan read from pipeweave's JSON plan format, version 1, implementing the plan protocol."""

    def __init__(self, data: dict[str, object]):
        r = _Reader()
        r.check(isinstance(data, dict), "", "a JSON plan is an object")
        r.check(data.get("format") == "pipeweave-plan", "format", 'expected "pipeweave-plan"')
        r.check(data.get("version") == 1, "version", "only version 1 is supported")
        self.ranks = r.count(data, "ranks")
        self.stages_per_pipeline = r.count(data, "stages_per_pipeline")
        pipelines = r.array(data, "pipelines", nonempty=True)
        s_per = self.stages_per_pipeline
        self.placement: list[list[int]] = []
        self._pipeline_mbs: list[list[int]] = []
        for j, p in enumerate(pipelines):
            where = f"pipelines[{j}]"
            placement = [r.id(x, f"{where}.placement[{q}]") for q, x in enumerate(r.array(p, "placement", where))]
            r.check(len(placement) == s_per, f"{where}.placement", f"has {len(placement)} ranks, expected {s_per}")
            for q, rank in enumerate(placement):
                r.check(rank < self.ranks, f"{where}.placement[{q}]", f"rank {rank} out of range (ranks: {self.ranks})")
            mbs = [r.id(x, f"{where}.microbatches[{i}]") for i, x in enumerate(r.array(p, "microbatches", where))]
            r.check(mbs == sorted(set(mbs)), f"{where}.microbatches", "must be strictly ascending")
            self.placement.append(placement)
            self._pipeline_mbs.append(mbs)
        self.pipelines = len(self.placement)
        self.model_copies = self.pipelines
        all_mbs = sorted(mb for mbs in self._pipeline_mbs for mb in mbs)
        self.microbatches = len(all_mbs)
        r.check(
            all_mbs == list(range(self.microbatches)),
            "pipelines",
            f"the micro-batches must be 0..{self.microbatches - 1}, each in one pipeline",
        )
        step = data.get("step", "training")
        r.check(step in ("training", "evaluation"), "step", f'expected "training" or "evaluation", got {step!r}')
        self.forward_only = step == "evaluation"
        programs = r.array(data, "programs")
        r.check(len(programs) == self.ranks, "programs", f"has {len(programs)} programs, expected {self.ranks}")
        self._actions: list[list[Action]] = []
        self._steps: list[list[Step]] = []
        for rank, prog in enumerate(programs):
            where = f"programs[{rank}]"
            r.check(isinstance(prog, dict) and prog.get("rank") == rank, f"{where}.rank", f"expected {rank}")
            actions = [r.action(a, f"{where}.actions[{i}]") for i, a in enumerate(r.array(prog, "actions", where))]
            steps = [
                r.step(s, f"{where}.steps[{i}]", len(actions)) for i, s in enumerate(r.array(prog, "steps", where))
            ]
            self._actions.append(actions)
            self._steps.append(steps)
        # the split, when the parts carry it (`parts[q].layers`, on every part or none): layers per part
        self.split: list[int] | None = None
        parts = data.get("parts")
        if isinstance(parts, list) and any(isinstance(p, dict) and "layers" in p for p in parts):
            split: list[int] = []
            at = 0
            for q, part in enumerate(parts):
                layers = part.get("layers") if isinstance(part, dict) else None
                ok = (
                    isinstance(layers, list)
                    and len(layers) == 2
                    and all(isinstance(x, int) and not isinstance(x, bool) for x in layers)
                )
                r.check(ok, f"parts[{q}].layers", "expected [start, end), on every part or none")
                assert isinstance(layers, list)
                start, end = layers
                r.check(start == at and end >= start, f"parts[{q}].layers", f"must start at layer {at}, where part {q - 1} ends")
                split.append(end - start)
                at = end
            r.check(len(split) == s_per, "parts", f"has {len(split)} parts, expected {s_per}")
            self.split = split
        self._data = data

    @classmethod
    def load(cls, source: str | os.PathLike[str] | dict[str, object]) -> JsonPlan:
        """Reads a plan from a file path or from an already parsed JSON object."""
        if isinstance(source, dict):
            return cls(source)
        with open(source, encoding="utf-8") as f:
            try:
                data = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{os.fspath(source)}: not JSON: {e}") from None
        return cls(data)

    def actions(self, rank: int) -> list[Action]:
        """Rank `rank`'s compute actions, in order."""
        return list(self._actions[self._rank(rank)])

    def steps(self, rank: int) -> list[Step]:
        """Rank `rank`'s lowered program: what a launcher executes, in order."""
        return list(self._steps[self._rank(rank)])

    def to_dict(self) -> dict[str, object]:
        """The JSON object the plan was read from."""
        return self._data

    def _rank(self, rank: int) -> int:
        if not isinstance(rank, int) or not 0 <= rank < self.ranks:
            raise ValueError(f"rank {rank!r} out of range: the plan has ranks 0..{self.ranks - 1}")
        return rank

    def __repr__(self) -> str:
        return (
            f"JsonPlan(ranks={self.ranks}, pipelines={self.pipelines}, "
            f"stages_per_pipeline={self.stages_per_pipeline}, microbatches={self.microbatches}"
            + (", forward_only=True)" if self.forward_only else ")")
        )


class _Reader:
    """Checks of the JSON plan's fields; every failure names the field."""

    @staticmethod
    def fail(where: str, message: str) -> NoReturn:
        raise ValueError(f"invalid JSON plan: {where}: {message}" if where else f"invalid JSON plan: {message}")

    @classmethod
    def check(cls, ok: bool, where: str, message: str) -> None:
        if not ok:
            cls.fail(where, message)

    def id(self, value: object, where: str) -> int:
        if type(value) is not int or value < 0:
            self.fail(where, f"expected a non-negative integer, got {value!r}")
        return value

    def count(self, obj: dict[str, object], key: str) -> int:
        value = obj.get(key)
        if type(value) is not int or value < 1:
            self.fail(key, f"expected a positive integer, got {value!r}")
        return value

    def array(self, obj: object, key: str, where: str = "", nonempty: bool = False) -> list[object]:
        path = f"{where}.{key}" if where else key
        if not isinstance(obj, dict):
            self.fail(where or key, "expected an object")
        value = obj.get(key)
        if not isinstance(value, list):
            self.fail(path, "expected an array")
        self.check(not nonempty or len(value) > 0, path, "must not be empty")
        return value

    def op(self, a: object, where: str, kinds: tuple[str, ...]) -> Action:
        if not isinstance(a, dict):
            self.fail(where, "expected an object")
        kind = a.get("kind")
        if kind not in kinds:
            self.fail(f"{where}.kind", f"expected one of {', '.join(kinds)}, got {kind!r}")
        return Action(kind, self.id(a.get("stage"), f"{where}.stage"), self.id(a.get("mb"), f"{where}.mb"))

    def action(self, a: object, where: str) -> Action:
        if isinstance(a, dict) and a.get("kind") == "pair":
            f = self.op(a.get("f"), f"{where}.f", ("F",))
            b = self.op(a.get("b"), f"{where}.b", ("B", "I"))
            return Action("pair", pair=(f, b))
        return self.op(a, where, COMPUTE_KINDS)

    def step(self, s: object, where: str, num_actions: int) -> Step:
        if not isinstance(s, dict):
            self.fail(where, "expected an object")
        kind = s.get("kind")
        if kind == "compute":
            index = self.id(s.get("action"), f"{where}.action")
            self.check(index < num_actions, f"{where}.action", f"no action {index} (the program has {num_actions})")
            return Step("compute", action=index)
        if kind in REDUCE_KINDS:
            return Step(kind, stage=self.id(s.get("stage"), f"{where}.stage"))
        if kind not in TRANSFER_KINDS:
            self.fail(f"{where}.kind", f"unknown step kind {kind!r}")
        direction = s.get("dir")
        if direction not in ("fwd", "bwd"):
            self.fail(f"{where}.dir", f'expected "fwd" or "bwd", got {direction!r}')
        return Step(
            kind,
            dir=direction,
            stage=self.id(s.get("stage"), f"{where}.stage"),
            mb=self.id(s.get("mb"), f"{where}.mb"),
            peer=self.id(s.get("peer"), f"{where}.peer"),
        )
