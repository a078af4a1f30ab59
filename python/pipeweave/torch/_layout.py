"""What one rank of a plan does, read through the plan protocol and checked before anything runs.

Pure Python (no torch): the checks a runner needs before it touches a device or a process group,
so that a wrong plan or a wrong rank fails on every rank alike, with the action or step named.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

from .._plan import ActionProtocol, PlanProtocol, StepProtocol

_FIELDS = ("ranks", "pipelines", "stages_per_pipeline", "microbatches", "model_copies", "placement")
_TRAINING_KINDS = ("F", "B", "I", "W")


def _int(plan: PlanProtocol, name: str) -> int:
    value: object = getattr(plan, name)
    if type(value) is not int or value < 1:
        raise ValueError(f"plan.{name} must be a positive integer, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class Op:
    """A checked F, B, I or W of this rank: a stage it hosts and a micro-batch of the plan."""

    kind: str
    stage: int
    mb: int

    @property
    def cell(self) -> str:
        """The action's cell in pipeweave's actions format, e.g. `3F2`."""
        return f"{self.stage}{self.kind}{self.mb}"


# One checked compute action: an op, or an overlapped F&B pair (forward, backward).
Work: TypeAlias = Op | tuple[Op, Op]


@dataclass(frozen=True, slots=True)
class Compute:
    """A checked "compute" step: runs `actions[action]` of the layout."""

    action: int


@dataclass(frozen=True, slots=True)
class Transfer:
    """A checked "recv", "send" or "wait_send" step; `shown` is the plan's step, for messages."""

    kind: str
    dir: str
    stage: int
    mb: int
    peer: int
    shown: StepProtocol


@dataclass(frozen=True, slots=True)
class Reduce:
    """A checked "reduce_grad" or "wait_reduce_grad" step of a stage this rank hosts."""

    kind: str
    stage: int


CheckedStep: TypeAlias = Compute | Transfer | Reduce


def work_cell(work: Work) -> str:
    """The cell of a compute action, e.g. `3F2` or `(0F3;7B5)OVERLAP_F_B` for an overlapped pair."""
    if isinstance(work, tuple):
        return f"({work[0].cell};{work[1].cell})OVERLAP_F_B"
    return work.cell


def transfer_cell(kind: str, direction: str, stage: int, mb: int) -> str:
    """The cell of a transfer in PyTorch's compute_comms format, e.g. `1SEND_F0`, `0RECV_B1`."""
    name = {"recv": "RECV_", "send": "SEND_", "wait_send": "WAIT_SEND_"}[kind]
    return f"{stage}{name}{'F' if direction == 'fwd' else 'B'}{mb}"


def step_cell(actions: Sequence[Work], step: CheckedStep) -> str:
    """The cell of a lowered step as pipeweave's exports write it (`docs/plan-format.md`)."""
    if isinstance(step, Compute):
        return work_cell(actions[step.action])
    if isinstance(step, Reduce):
        return f"{step.stage}{'REDUCE_GRAD' if step.kind == 'reduce_grad' else 'WAIT_REDUCE_GRAD'}"
    return transfer_cell(step.kind, step.dir, step.stage, step.mb)


@dataclass(frozen=True)
class Reduction:
    """When a rank reduces one model part: the step indices that launch and wait, the copies' ranks."""

    part: int
    launch: int
    wait: int
    copies: tuple[int, ...]


class Layout:
    """The plan's shape and rank `rank`'s checked program."""

    def __init__(self, plan: PlanProtocol, rank: int):
        missing = [f for f in _FIELDS if not hasattr(plan, f)]
        missing += [f"{m}()" for m in ("actions", "steps") if not callable(getattr(plan, m, None))]
        if missing:
            raise TypeError(f"not a pipeweave plan: it has no {', '.join(missing)}")
        self.ranks = _int(plan, "ranks")
        self.pipelines = _int(plan, "pipelines")
        self.s_per = _int(plan, "stages_per_pipeline")
        self.microbatches = _int(plan, "microbatches")
        if type(rank) is not int or not 0 <= rank < self.ranks:
            raise ValueError(f"rank {rank!r} out of range: the plan has ranks 0..{self.ranks - 1}")
        self.rank = rank
        placement = [list(p) for p in plan.placement]
        if len(placement) != self.pipelines or any(len(p) != self.s_per for p in placement):
            raise ValueError(
                f"plan.placement must list {self.pipelines} pipelines of {self.s_per} ranks, "
                f"got {[len(p) for p in placement]}"
            )
        self.stage_rank: dict[int, int] = {}
        for j, p in enumerate(placement):
            for q, r in enumerate(p):
                if type(r) is not int or not 0 <= r < self.ranks:
                    raise ValueError(f"plan.placement[{j}][{q}] is {r!r}, not a rank of the plan")
                self.stage_rank[j * self.s_per + q] = r
        self.num_stages = self.pipelines * self.s_per
        self.stages = sorted(s for s, r in self.stage_rank.items() if r == rank)
        self.parts = sorted({s % self.s_per for s in self.stages})
        # The ranks holding a copy of each part; a rank hosting a part twice holds one copy.
        self.copies = [
            tuple(sorted({self.stage_rank[j * self.s_per + q] for j in range(self.pipelines)}))
            for q in range(self.s_per)
        ]
        # A plan without the member is a training step (plans of the protocol before it existed).
        forward_only: object = getattr(plan, "forward_only", False)
        if type(forward_only) is not bool:
            raise ValueError(f"plan.forward_only must be a bool, got {forward_only!r}")
        self.forward_only = forward_only
        actions = list(plan.actions(rank))
        steps = list(plan.steps(rank))
        self.actions: list[Work] = [self._check_action(i, action) for i, action in enumerate(actions)]
        self.steps: list[CheckedStep] = []
        self.reductions = self._check_steps(steps, actions)
        self._cells: list[str] | None = None
        self._places: list[str] | None = None

    def cells(self) -> list[str]:
        """The cell of every step (`step_cell`), what the profiler shows (made once)."""
        if self._cells is None:
            self._cells = [step_cell(self.actions, step) for step in self.steps]
        return self._cells

    def places(self) -> list[str]:
        """Where each step is, in the words of a failure: its cell, or the plan's step (made once)."""
        if self._places is None:
            self._places = [
                str(step.shown) if isinstance(step, Transfer) else str(step) if isinstance(step, Reduce) else cell
                for step, cell in zip(self.steps, self.cells(), strict=True)
            ]
        return self._places

    def evaluation(self) -> Layout:
        """This rank's evaluation form: its forwards in their order, every backward and reduction dropped.

        An overlapped pair keeps its forward. The transfers of activations keep their order, so the
        receives between two ranks still stand in the order of the sends; dropping work only removes
        waits from a program that could not deadlock, so it cannot deadlock either.
        """
        if self.forward_only:
            return self
        kept: dict[int, int] = {}
        actions: list[Work] = []
        for i, work in enumerate(self.actions):
            forward = work[0] if isinstance(work, tuple) else work
            if forward.kind == "F":
                kept[i] = len(actions)
                actions.append(forward)
        steps: list[CheckedStep] = []
        for step in self.steps:
            if isinstance(step, Compute):
                if step.action in kept:
                    steps.append(Compute(kept[step.action]))
            elif isinstance(step, Transfer) and step.dir == "fwd":
                steps.append(step)
        form = copy.copy(self)
        form.forward_only = True
        form.actions = actions
        form.steps = steps
        form.reductions = []
        form._cells = form._places = None
        return form

    def part(self, stage: int) -> int:
        return stage % self.s_per

    def is_first(self, stage: int) -> bool:
        return stage % self.s_per == 0

    def is_last(self, stage: int) -> bool:
        return stage % self.s_per == self.s_per - 1

    def local(self, stage: int | None) -> bool:
        return self.stage_rank.get(stage) == self.rank if stage is not None else False

    def _where(self, i: int, action: ActionProtocol) -> str:
        return f"rank {self.rank}, action {i + 1} ({action})"

    def _check_op(self, i: int, action: ActionProtocol, op: ActionProtocol, kinds: tuple[str, ...]) -> Op:
        kind = getattr(op, "kind", None)
        if kind not in kinds:
            if self.forward_only and kind in _TRAINING_KINDS:
                raise ValueError(f"{self._where(i, action)}: an evaluation plan runs forwards only, not {kind}")
            raise ValueError(f"{self._where(i, action)}: expected a kind in {'/'.join(kinds)}, got {kind!r}")
        stage, mb = op.stage, op.mb
        if stage is None or stage not in self.stage_rank:
            raise ValueError(f"{self._where(i, action)}: the plan has no stage {stage}")
        if self.stage_rank[stage] != self.rank:
            raise ValueError(
                f"{self._where(i, action)}: stage {stage} runs on rank {self.stage_rank[stage]}, not here"
            )
        if type(mb) is not int or not 0 <= mb < self.microbatches:
            raise ValueError(f"{self._where(i, action)}: micro-batch {mb!r} out of range 0..{self.microbatches - 1}")
        return Op(op.kind, stage, mb)

    def _check_action(self, i: int, action: ActionProtocol) -> Work:
        if getattr(action, "kind", None) == "pair":
            pair: Sequence[ActionProtocol] | None = getattr(action, "pair", None)
            if pair is None or len(pair) != 2:
                raise ValueError(f"{self._where(i, action)}: a pair needs a forward and a backward")
            if self.forward_only:
                raise ValueError(f"{self._where(i, action)}: an evaluation plan runs forwards only, not a pair")
            return self._check_op(i, action, pair[0], ("F",)), self._check_op(i, action, pair[1], ("B", "I"))
        return self._check_op(i, action, action, ("F",) if self.forward_only else _TRAINING_KINDS)

    def _peer(self, kind: str, direction: str, stage: int) -> int | None:
        """The rank a transfer step must name, or None when the stage has no such neighbour."""
        if kind == "recv":
            other = stage - 1 if direction == "fwd" else stage + 1
        else:
            other = stage + 1 if direction == "fwd" else stage - 1
        if stage // self.s_per != other // self.s_per or other not in self.stage_rank:
            return None
        return self.stage_rank[other]

    def _check_steps(self, steps: list[StepProtocol], actions: list[ActionProtocol]) -> list[Reduction]:
        """Checks the plan's steps into `self.steps`; returns when each hosted part is reduced."""
        computed = [0] * len(actions)
        reduce_at: dict[int, int] = {}
        wait_at: dict[int, int] = {}
        for i, step in enumerate(steps):
            where = f"rank {self.rank}, step {i + 1} ({step})"
            kind = getattr(step, "kind", None)
            if kind == "compute":
                index = step.action
                if type(index) is not int or not 0 <= index < len(actions):
                    raise ValueError(f"{where}: no action {index!r} (the rank has {len(actions)})")
                computed[index] += 1
                self.steps.append(Compute(index))
                continue
            if kind not in ("recv", "send", "wait_send", "reduce_grad", "wait_reduce_grad"):
                raise ValueError(f"{where}: unknown step kind {kind!r}")
            stage = step.stage
            if stage is None or not self.local(stage):
                raise ValueError(f"{where}: stage {stage} is not on rank {self.rank}")
            if self.forward_only and (kind in ("reduce_grad", "wait_reduce_grad") or step.dir == "bwd"):
                raise ValueError(f"{where}: an evaluation plan sends no gradients and reduces none")
            if kind in ("reduce_grad", "wait_reduce_grad"):
                seen = reduce_at if kind == "reduce_grad" else wait_at
                if stage in seen:
                    raise ValueError(f"{where}: stage {stage} has a second {kind}")
                seen[stage] = i
                self.steps.append(Reduce(step.kind, stage))
                continue
            direction = step.dir
            if direction is None or direction not in ("fwd", "bwd"):
                raise ValueError(f"{where}: dir must be fwd or bwd, got {direction!r}")
            peer = self._peer(step.kind, direction, stage)
            if peer is None or peer == self.rank:
                raise ValueError(f"{where}: stage {stage} exchanges nothing with another rank in that direction")
            if step.peer != peer:
                raise ValueError(f"{where}: the peer is rank {peer} (placement), not {step.peer!r}")
            mb = step.mb
            if type(mb) is not int or not 0 <= mb < self.microbatches:
                raise ValueError(f"{where}: micro-batch {mb!r} out of range 0..{self.microbatches - 1}")
            self.steps.append(Transfer(step.kind, direction, stage, mb, peer, step))
        for i, n in enumerate(computed):
            if n != 1:
                raise ValueError(f"{self._where(i, actions[i])}: computed by {n} steps, expected 1")
        reductions: list[Reduction] = []
        if self.forward_only:
            return reductions
        for q in self.parts:
            mine = [s for s in self.stages if self.part(s) == q]
            for s in mine:
                if s not in reduce_at or s not in wait_at or wait_at[s] < reduce_at[s]:
                    raise ValueError(
                        f"rank {self.rank}: the steps must reduce the gradients of stage {s} "
                        "(a reduce_grad, then its wait_reduce_grad)"
                    )
            # A rank hosting a part twice reduces its one copy once both stages are done.
            launch = max(reduce_at[s] for s in mine)
            wait = max(wait_at[s] for s in mine)
            if wait < launch:
                raise ValueError(f"rank {self.rank}: part {q} is waited for before its last reduce_grad")
            reductions.append(Reduction(q, launch, wait, self.copies[q]))
        return reductions
