"""Results of the package's own shape (the command line's JSON ones are in `_results`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, TypedDict

from ._results import SynthesisReport

if TYPE_CHECKING:
    from ._native import Plan


class Synthesis(NamedTuple):
    """What `pipeweave.synthesize` found: the plan, its report (`pipeweave synthesize --format
    json`) and the seconds the search took."""

    plan: Plan
    report: SynthesisReport
    elapsed_s: float


class CheckResult(TypedDict):
    """What `pipeweave.check` found in a schedule without problems."""

    name: str
    """The schedule's file, as messages name it."""
    combinations: int
    """How many (P, M) of the grid (P = 2…8, M ≤ 2P) it compiled and validated."""
    nothing_compiled: str | None
    """Why no plan was compiled, when none was."""
