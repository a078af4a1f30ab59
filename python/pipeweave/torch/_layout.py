"""What one rank of a plan does, read through the plan protocol and checked before anything runs.

Pure Python (no torch): the checks a runner needs before it touches a device or a process group,
so that a wrong plan or a wrong rank fails on every rank alike, with the action or step named.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_FIELDS = ("ranks", "pipelines", "stages_per_pipeline", "microbatches", "model_copies", "placement")


def _int(plan: Any, name: str) -> int:
    value = getattr(plan, name)
    if type(value) is not int or value < 1:
        raise ValueError(f"plan.{name} must be a positive integer, got {value!r}")
    return value


@dataclass(frozen=True)
class Reduction:
    """When a rank reduces one model part: the step indices that launch and wait, the copies' ranks."""

    part: int
    launch: int
    wait: int
    copies: tuple[int, ...]


class Layout:
    """The plan's shape and rank `rank`'s checked program."""

    def __init__(self, plan: Any, rank: int):
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
        self.actions = list(plan.actions(rank))
        self.steps = list(plan.steps(rank))
        for i, action in enumerate(self.actions):
            self._check_action(i, action)
        self.reductions = self._check_steps()

    def part(self, stage: int) -> int:
        return stage % self.s_per

    def is_first(self, stage: int) -> bool:
        return stage % self.s_per == 0

    def is_last(self, stage: int) -> bool:
        return stage % self.s_per == self.s_per - 1

    def local(self, stage: int) -> bool:
        return self.stage_rank.get(stage) == self.rank

    def _where(self, i: int, action: Any) -> str:
        return f"rank {self.rank}, action {i + 1} ({action})"

    def _check_op(self, i: int, action: Any, op: Any, kinds: tuple[str, ...]) -> None:
        if getattr(op, "kind", None) not in kinds:
            raise ValueError(
                f"{self._where(i, action)}: expected a kind in {'/'.join(kinds)}, got {getattr(op, 'kind', None)!r}"
            )
        if op.stage not in self.stage_rank:
            raise ValueError(f"{self._where(i, action)}: the plan has no stage {op.stage}")
        if self.stage_rank[op.stage] != self.rank:
            raise ValueError(
                f"{self._where(i, action)}: stage {op.stage} runs on rank {self.stage_rank[op.stage]}, not here"
            )
        if type(op.mb) is not int or not 0 <= op.mb < self.microbatches:
            raise ValueError(f"{self._where(i, action)}: micro-batch {op.mb!r} out of range 0..{self.microbatches - 1}")

    def _check_action(self, i: int, action: Any) -> None:
        if getattr(action, "kind", None) == "pair":
            pair = getattr(action, "pair", None)
            if pair is None or len(pair) != 2:
                raise ValueError(f"{self._where(i, action)}: a pair needs a forward and a backward")
            self._check_op(i, action, pair[0], ("F",))
            self._check_op(i, action, pair[1], ("B", "I"))
        else:
            self._check_op(i, action, action, ("F", "B", "I", "W"))

    def _peer(self, step: Any) -> int | None:
        """The rank a transfer step must name, or None when the stage has no such neighbour."""
        if step.kind == "recv":
            other = step.stage - 1 if step.dir == "fwd" else step.stage + 1
        else:
            other = step.stage + 1 if step.dir == "fwd" else step.stage - 1
        if step.stage // self.s_per != other // self.s_per or other not in self.stage_rank:
            return None
        return self.stage_rank[other]

    def _check_steps(self) -> list[Reduction]:
        computed = [0] * len(self.actions)
        reduce_at: dict[int, int] = {}
        wait_at: dict[int, int] = {}
        for i, step in enumerate(self.steps):
            where = f"rank {self.rank}, step {i + 1} ({step})"
            kind = getattr(step, "kind", None)
            if kind == "compute":
                if type(step.action) is not int or not 0 <= step.action < len(self.actions):
                    raise ValueError(f"{where}: no action {step.action!r} (the rank has {len(self.actions)})")
                computed[step.action] += 1
                continue
            if kind not in ("recv", "send", "wait_send", "reduce_grad", "wait_reduce_grad"):
                raise ValueError(f"{where}: unknown step kind {kind!r}")
            if not self.local(step.stage):
                raise ValueError(f"{where}: stage {step.stage} is not on rank {self.rank}")
            if kind in ("reduce_grad", "wait_reduce_grad"):
                seen = reduce_at if kind == "reduce_grad" else wait_at
                if step.stage in seen:
                    raise ValueError(f"{where}: stage {step.stage} has a second {kind}")
                seen[step.stage] = i
                continue
            if step.dir not in ("fwd", "bwd"):
                raise ValueError(f"{where}: dir must be fwd or bwd, got {step.dir!r}")
            peer = self._peer(step)
            if peer is None or peer == self.rank:
                raise ValueError(f"{where}: stage {step.stage} exchanges nothing with another rank in that direction")
            if step.peer != peer:
                raise ValueError(f"{where}: the peer is rank {peer} (placement), not {step.peer!r}")
            if type(step.mb) is not int or not 0 <= step.mb < self.microbatches:
                raise ValueError(f"{where}: micro-batch {step.mb!r} out of range 0..{self.microbatches - 1}")
        for i, n in enumerate(computed):
            if n != 1:
                raise ValueError(f"{self._where(i, self.actions[i])}: computed by {n} steps, expected 1")
        reductions = []
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
