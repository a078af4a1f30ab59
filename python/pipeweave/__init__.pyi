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

__all__ = [
    "Action",
    "ActionProtocol",
    "Error",
    "JsonPlan",
    "Plan",
    "PlanError",
    "PlanProtocol",
    "SpecError",
    "Step",
    "StepProtocol",
    "UsageError",
    "compile",
    "list_schedules",
    "load",
    "validate",
]
