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
from ._plan import Action as Action, JsonPlan as JsonPlan, Step as Step

__all__ = [
    "Action",
    "Error",
    "JsonPlan",
    "Plan",
    "PlanError",
    "SpecError",
    "Step",
    "UsageError",
    "compile",
    "list_schedules",
    "load",
    "validate",
]
