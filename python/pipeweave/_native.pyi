"""Type stubs of the native extension (crates/pipeweave-py)."""

import os
from collections.abc import Sequence
from typing import ClassVar, Literal, final, overload

from ._plan import Action, Step
from ._records import CheckResult, Synthesis
from ._results import (
    Comparison,
    ComparisonRow,
    MeasuredRecommendation,
    PlanDiff,
    Recommendation,
    ScheduleListingSchedule,
    Simulation,
    Sweep,
)

__all__ = [
    "Error",
    "UsageError",
    "PlanError",
    "SpecError",
    "Plan",
    "compile",
    "load",
    "validate",
    "list_schedules",
    "check",
    "compare",
    "sweep",
    "render",
    "report",
    "recommend",
    "synthesize",
    "calibrate",
    "diff",
    "_serve_worker",
]

_Path = str | os.PathLike[str]
_Costs = str | dict[str, float]

class Error(Exception):
    """Every error pipeweave raises; its text is what the command line prints."""

class UsageError(Error):
    """A call the schedule cannot take (a parameter it does not declare, a bad value, no P or M)."""

class PlanError(Error):
    """No valid plan: unknown name, a file with errors, unmet requirements, an invalid plan, a failed plugin."""

class SpecError(Error):
    """A cluster spec that cannot be read, or that does not fit the plan."""

@final
class Plan:
    """A plan that passed the validator; it implements the plan protocol of `pipeweave.torch`."""

    # Plans compare equal by their actions and placement, and are not hashable.
    __hash__: ClassVar[None]  # type: ignore[assignment]

    @property
    def name(self) -> str: ...
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
    def placement(self) -> list[list[int]]: ...
    @property
    def forward_only(self) -> bool: ...
    @property
    def pipeline_microbatches(self) -> list[list[int]]: ...
    def actions(self, rank: int) -> list[Action]:
        """The rank's compute actions in order."""
    def steps(self, rank: int) -> list[Step]:
        """The rank's lowered program in order (the JSON plan's `steps`)."""
    def simulate(
        self,
        spec: str | None = None,
        costs: _Costs | None = None,
        *,
        costs_from: str | None = None,
        strict_spec: bool = False,
        keep_dp: bool = False,
        global_batch: bool = False,
        split: str | None = None,
        recompute: str | None = None,
    ) -> Simulation:
        """One simulated step, as `pipeweave simulate --format json` prints it (a spec fitted to the plan, `"fitted"` says how)."""
    def compare(
        self,
        schedules: list[str],
        spec: str | None = None,
        units: bool = False,
        *,
        costs: _Costs | None = None,
        strict_spec: bool = False,
        keep_dp: bool = False,
        global_batch: bool = False,
        split: str | None = None,
        recompute: str | None = None,
        plugin_dirs: list[_Path] = ...,
        schedule_dirs: list[_Path] = ...,
    ) -> list[ComparisonRow]:
        """This plan and `schedules` at its P and M on a spec: the rows of `pipeweave compare --format json`."""
    def to_csv(self, format: Literal["pytorch", "pytorch-comms"] = "pytorch") -> str:
        """`pipeweave export --to pytorch` or `--to pytorch-comms`."""
    def to_json(
        self,
        spec: str | None = None,
        costs: _Costs | None = None,
        *,
        costs_from: str | None = None,
        strict_spec: bool = False,
        keep_dp: bool = False,
        global_batch: bool = False,
        split: str | None = None,
        recompute: str | None = None,
    ) -> str:
        """`pipeweave export --to json` (with the simulated timeline when `spec` or `costs` is given)."""
    def to_trace(
        self,
        spec: str | None = None,
        costs: _Costs | None = None,
        *,
        costs_from: str | None = None,
        strict_spec: bool = False,
        keep_dp: bool = False,
        global_batch: bool = False,
        split: str | None = None,
        recompute: str | None = None,
    ) -> str:
        """`pipeweave export --to chrome-trace` (on `spec`, or under `costs`; unit costs by default)."""
    def to_actions(self) -> str:
        """`pipeweave export --to actions`."""
    @property
    def requires(self) -> str:
        """What the schedule requires of P and M, in its own words (empty for a plan file)."""
    def __eq__(self, other: object, /) -> bool: ...

def compile(
    schedule: _Path,
    *,
    ranks: int | None = None,
    microbatches: int | None = None,
    stages_per_rank: int | None = None,
    forward_only: bool = False,
    plugin_dirs: list[_Path] = ...,
    schedule_dirs: list[_Path] = ...,
    **params: bool | int | str,
) -> Plan:
    """Compiles a schedule (name, `.weave` file, plugin, `synth:loop|v|bidirectional`) or reads a plan file, and validates the plan."""

def load(path: _Path, *, pipelines: int | None = None, forward_only: bool = False) -> Plan:
    """Reads a plan file (JSON plan, compute_comms CSV, or the actions text with `pipelines` pipelines) and validates it."""

def validate(text_or_path: str | os.PathLike[str], *, pipelines: int | None = None, forward_only: bool = False) -> Plan:
    """Validates a plan given as text or read from a path; raises PlanError with every problem."""

def list_schedules(*, plugin_dirs: list[_Path] = ..., schedule_dirs: list[_Path] = ...) -> list[ScheduleListingSchedule]:
    """Every schedule available by name, as `pipeweave list` shows them."""

def check(schedule: _Path, *, schedule_dirs: list[_Path] = ...) -> CheckResult:
    """Checks a `.weave` schedule as `pipeweave check` does; raises PlanError with its first problem."""

_Param = bool | int | str

def compare(
    schedules: list[str],
    *,
    spec: str | None = None,
    ranks: int | None = None,
    microbatches: int | None = None,
    stages_per_rank: int | None = None,
    units: bool = False,
    costs: _Costs | None = None,
    costs_from: str | None = None,
    strict_spec: bool = False,
    keep_dp: bool = False,
    global_batch: bool = False,
    split: str | None = None,
    recompute: str | None = None,
    plugin_dirs: list[_Path] = ...,
    schedule_dirs: list[_Path] = ...,
    **params: _Param,
) -> Comparison:
    """`pipeweave compare --format json`: the schedules on a spec (twins share a row)."""

def sweep(
    schedules: list[str],
    over: str,
    *,
    metric: Literal["bubble", "step_time"] = "bubble",
    spec: str | None = None,
    costs: _Costs | None = None,
    costs_from: str | None = None,
    ranks: int | None = None,
    microbatches: int | None = None,
    stages_per_rank: int | None = None,
    strict_spec: bool = False,
    keep_dp: bool = False,
    global_batch: bool = False,
    split: str | None = None,
    recompute: str | None = None,
    plugin_dirs: list[_Path] = ...,
    schedule_dirs: list[_Path] = ...,
    **params: _Param,
) -> Sweep:
    """`pipeweave sweep --format json`: one metric of the schedules against `over` (as `--over` takes it)."""

def render(
    schedules: list[str],
    *,
    spec: str | None = None,
    costs: _Costs | None = None,
    costs_from: str | None = None,
    ranks: int | None = None,
    microbatches: int | None = None,
    stages_per_rank: int | None = None,
    comms: bool = False,
    start: float | None = None,
    end: float | None = None,
    strict_spec: bool = False,
    keep_dp: bool = False,
    global_batch: bool = False,
    split: str | None = None,
    recompute: str | None = None,
    plugin_dirs: list[_Path] = ...,
    schedule_dirs: list[_Path] = ...,
    **params: _Param,
) -> str:
    """`pipeweave render`: the simulated timelines as one SVG."""

def report(
    schedules: list[str],
    *,
    spec: str | None = None,
    costs: _Costs | None = None,
    costs_from: str | None = None,
    ranks: int | None = None,
    microbatches: int | None = None,
    stages_per_rank: int | None = None,
    over: str | None = None,
    metric: Literal["bubble", "step_time"] = "bubble",
    comms: bool = False,
    start: float | None = None,
    end: float | None = None,
    strict_spec: bool = False,
    keep_dp: bool = False,
    global_batch: bool = False,
    split: str | None = None,
    recompute: str | None = None,
    plugin_dirs: list[_Path] = ...,
    schedule_dirs: list[_Path] = ...,
    **params: _Param,
) -> str:
    """`pipeweave report`: one self-contained HTML page."""

@overload
def recommend(
    spec: str | None = None,
    *,
    split: Literal["auto", "even"] = "auto",
    costs_from: None = None,
    plugin_dirs: list[_Path] = ...,
    schedule_dirs: list[_Path] = ...,
) -> Recommendation:
    """`pipeweave recommend --format json`: the search on a spec."""

@overload
def recommend(
    spec: None = None,
    *,
    split: Literal["auto"] = "auto",
    costs_from: str,
    plugin_dirs: list[_Path] = ...,
    schedule_dirs: list[_Path] = ...,
) -> MeasuredRecommendation:
    """`pipeweave recommend --costs-from FILE --format json`: every schedule priced with measured costs."""

def calibrate(
    traces: Sequence[_Path],
    plan: _Path | Sequence[_Path] | None = None,
    *,
    ranks: int | None = None,
    microbatches: int | None = None,
    stages_per_rank: int | None = None,
    plugin_dirs: list[_Path] = ...,
    schedule_dirs: list[_Path] = ...,
    **params: _Param,
) -> str:
    """`pipeweave calibrate`: the costs measured in a run's traces, as the costs file's text."""

def diff(
    plan: _Path,
    traces: Sequence[_Path],
    *,
    ranks: int | None = None,
    microbatches: int | None = None,
    stages_per_rank: int | None = None,
    costs_from: _Path | None = None,
    plugin_dirs: list[_Path] = ...,
    schedule_dirs: list[_Path] = ...,
    **params: _Param,
) -> PlanDiff:
    """`pipeweave diff --format json`: a plan set beside the traces of a run of it."""

def synthesize(
    *,
    ranks: int | None = None,
    microbatches: int | None = None,
    placement: Literal["loop", "v", "bidirectional"] = "loop",
    stages_per_rank: int | None = None,
    spec: str | None = None,
    costs: _Costs | None = None,
    costs_from: str | None = None,
    memory_limit: float | None = None,
    activations: int | None = None,
    library_memory: bool = False,
    weight_split: bool = True,
    pairs: bool = True,
    time_limit: float = 10.0,
    evaluations: int | None = None,
    exact_nodes: int | None = None,
    seed: int | None = None,
    strict_spec: bool = False,
    keep_dp: bool = False,
    global_batch: bool = False,
    split: str | None = None,
    recompute: str | None = None,
    plugin_dirs: list[_Path] = ...,
    schedule_dirs: list[_Path] = ...,
) -> Synthesis:
    """`pipeweave synthesize`: the plan found, its report and the seconds the search took."""

def _serve_worker(path: _Path) -> int: ...
