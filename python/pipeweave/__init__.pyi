from ._native import (
    Error as Error,
    Plan as Plan,
    PlanError as PlanError,
    SpecError as SpecError,
    UsageError as UsageError,
    compile as compile,
    list_schedules as list_schedules,
    load as load,
    validate as validate,
)
from ._plan import (
    Action as Action,
    ActionProtocol as ActionProtocol,
    JsonPlan as JsonPlan,
    PlanProtocol as PlanProtocol,
    Step as Step,
    StepProtocol as StepProtocol,
)
from ._types import ComparisonRow as ComparisonRow, ScheduleInfo as ScheduleInfo, Simulation as Simulation

__all__ = [
    "Action",
    "ActionProtocol",
    "ComparisonRow",
    "Error",
    "JsonPlan",
    "Plan",
    "PlanError",
    "PlanProtocol",
    "ScheduleInfo",
    "Simulation",
    "SpecError",
    "Step",
    "StepProtocol",
    "UsageError",
    "compile",
    "list_schedules",
    "load",
    "validate",
]
