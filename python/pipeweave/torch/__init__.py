"""Run pipeweave plans in PyTorch: `schedule` (PyTorch's own runtime) and `PlanRunner` (every plan).

Importing this module needs torch; nothing else in the `pipeweave` package imports torch.

- `schedule(plan, stages, loss_fn=..., scale_grads=True)` returns PyTorch 2.15's
  `_PipelineScheduleRuntime` for a single-pipeline plan, loaded from memory.
- `PlanRunner(plan, rank, parts, loss_fn, group=None)` runs any plan, DualPipe and Chimera
  included, over torch.distributed point-to-point; `runner.step(inputs, targets)` trains one step.
- `JsonPlan.load(path_or_dict)` reads the JSON plan `pipeweave export --to json` writes.
- `parts_of(plan, rank)` lists the model parts a rank hosts.
- `split(model, plan, rank)` cuts a `Sequential`/`ModuleList` (embedding, layers, head) into the
  parts a rank hosts by the plan's layer split: `PlanRunner`'s `parts`, with no table by hand.
- `profile(runner, inputs, targets, steps=..., dir=...)` runs steps under `torch.profiler` and
  writes one trace per rank, every step a span named "pw " + its cell, with the bytes autograd
  saved for the backward after every action (`SavedBytes`), the bytes of the plan's messages and
  gradients, and (`probe=True`, the default) the times of a probe of the links the plan uses;
  it returns a `Profiled`.

The plan protocol
-----------------
Both take a `PlanProtocol` (a `typing.Protocol`, runtime-checkable): any object with these
attributes and methods, such as the native `pipeweave.compile` and `pipeweave.load` plans and
`JsonPlan`; its actions and steps are `ActionProtocol`s and `StepProtocol`s (`Action`, `Step`):

`plan.ranks`
    P, the number of ranks.
`plan.pipelines`, `plan.model_copies`
    K, the number of pipelines; each pipeline is one copy of the model.
`plan.stages_per_pipeline`
    S; stage (position) q of every pipeline computes model part q, and pipeline j's position q is
    the global stage j*S + q.
`plan.microbatches`
    M, the micro-batches of a step over all pipelines, numbered 0..M-1.
`plan.placement`
    K sequences of S ranks: `placement[j][q]` hosts position q of pipeline j.
`plan.actions(rank)`
    The rank's compute actions in order: objects with `kind` ("F", "B", "I", "W" or "pair"),
    `stage` (global), `mb` (global micro-batch) and, for a pair (an overlapped F&B), `pair` =
    (forward, backward) with stage and mb None on the pair itself.
`plan.steps(rank)`
    The rank's lowered program in order, what a launcher executes (the JSON plan's `steps`):
    objects with `kind` and the fields that kind uses, the others None:
    "compute" (`action`: index into `actions(rank)`);
    "recv", "send", "wait_send" (`dir` "fwd" or "bwd", `stage`, `mb`, `peer`; the stage of a recv
    is the receiving one, of a send the sending one);
    "reduce_grad", "wait_reduce_grad" (`stage`).
    Between two ranks, receives stand in the order of the matching sends, so transports that match
    messages in posting order (NCCL, untagged) deliver every message where it belongs.
"""

try:
    import torch as _torch  # noqa: F401 (only to say how to install it when it is missing)
except ModuleNotFoundError as _missing:
    if _missing.name != "torch":
        raise
    raise ModuleNotFoundError(
        "pipeweave.torch needs PyTorch 2.15 or later, which is not installed: "
        '`pip install "torch>=2.15"` (on Linux PyPI\'s torch pulls NVIDIA\'s CUDA wheels, several GB), '
        'or for the CPU only `pip install "torch>=2.15" --index-url https://download.pytorch.org/whl/cpu` '
        "(PyTorch's own index of CPU wheels)",
        name="torch",
    ) from None

from .._plan import Action, ActionProtocol, JsonPlan, PlanProtocol, Step, StepProtocol
from ._comm import PipelineError
from ._profile import Profiled, profile
from ._runner import Batch, LossFn, Output, PlanRunner, parts_of
from ._saved import SavedBytes
from ._schedule import RuntimeOptions, schedule
from ._split import even_split, split

__all__ = [
    "Action",
    "ActionProtocol",
    "Batch",
    "JsonPlan",
    "LossFn",
    "Output",
    "PipelineError",
    "PlanProtocol",
    "PlanRunner",
    "Profiled",
    "RuntimeOptions",
    "SavedBytes",
    "Step",
    "StepProtocol",
    "even_split",
    "parts_of",
    "profile",
    "schedule",
    "split",
]

# Shown as `pipeweave.torch.PipelineError` in tracebacks, where users catch it.
PipelineError.__module__ = __name__
