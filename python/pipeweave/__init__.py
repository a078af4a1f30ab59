"""pipeweave: pipeline-parallel training schedules, compiled, checked, simulated and run.

The compiler, its checks and the simulator come with the native extension (`pipeweave._native`,
built from the Rust workspace with maturin: `pip install ./python`), each function the command
line's command through the same application layer:

- `compile(schedule, ranks=, microbatches=, stages_per_rank=, **params)` builds a validated `Plan`
  from a library schedule, a plugin (DualPipe, Chimera), a `.weave` file or a plan file;
- `load(path)` reads a plan file, `validate(text_or_path)` checks a plan given as text or a path;
- `list_schedules()` lists every schedule by name, with its parameters; `check(path)` checks a
  `.weave` file as `pipeweave check` does;
- `compare`, `sweep`, `recommend`, `synthesize` and `diff` return what the command line prints
  with `--format json`, as typed dicts (`Comparison`, `Sweep`, `Recommendation`,
  `SynthesisReport`, `PlanDiff`; `Plan.simulate()` a `Simulation`); `render` the SVG and `report`
  the HTML page; `calibrate(traces, plan=None)` the text of the costs file a run's profiler
  traces measure (what `costs_from=` reads);
- every failure is a `pipeweave.Error`: `UsageError`, `PlanError` or `SpecError`, whose text is
  what the command line prints.

The pure-Python parts need no extension: `pipeweave.torch` runs a plan in `torch.distributed`
(it needs torch, nothing else here does), and `JsonPlan` reads the JSON plan
`pipeweave export --to json` writes. `PlanProtocol` is what `pipeweave.torch` runs (the native
`Plan` and `JsonPlan` implement it). The typed dicts are generated from the JSON Schemas in
`schemas/` (`pipeweave._results`).
"""

from ._plan import Action, ActionProtocol, JsonPlan, PlanProtocol, Step, StepProtocol
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
    SynthesisReport,
)

_NATIVE = (
    "Error",
    "Plan",
    "PlanError",
    "SpecError",
    "UsageError",
    "calibrate",
    "check",
    "compare",
    "compile",
    "diff",
    "list_schedules",
    "load",
    "recommend",
    "render",
    "report",
    "sweep",
    "synthesize",
    "validate",
)
_PURE = ("Action", "ActionProtocol", "JsonPlan", "PlanProtocol", "Step", "StepProtocol")
_TYPES = (
    "CheckResult",
    "Comparison",
    "ComparisonRow",
    "MeasuredRecommendation",
    "PlanDiff",
    "Recommendation",
    "ScheduleListingSchedule",
    "Simulation",
    "Sweep",
    "Synthesis",
    "SynthesisReport",
)

__all__ = [*_PURE, *_TYPES, *_NATIVE]


def __getattr__(name: str) -> object:
    # The native names load the extension on first use, so that `pipeweave.torch` and `JsonPlan`
    # work from a source tree without it.
    if name not in _NATIVE:
        raise AttributeError(f"module 'pipeweave' has no attribute {name!r}")
    try:
        from . import _native
    except ImportError as e:
        raise ImportError(
            f"pipeweave.{name} needs the native extension, which is not built here: "
            "install the package with `pip install ./python` from the repository"
        ) from e
    value = getattr(_native, name)
    globals()[name] = value
    return value
