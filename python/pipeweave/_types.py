"""The typed dicts of the native functions' results, each the mirror of the JSON it is parsed from.

`Plan.simulate()` returns a `Simulation` (schemas/pipeweave-simulate.v2.schema.json),
`Plan.compare()` a list of `ComparisonRow`s (the `rows` of schemas/pipeweave-compare.v2.schema.json)
and `list_schedules()` a list of `ScheduleInfo`s (`pipeweave list` as dicts).
The keys and their meaning are the schemas' and docs/json-output.md's; this module adds only types.
JSON numbers are `float` (a whole number may come back as an `int`, which a `float` accepts);
counts are `int`.

Keys the JSON holds only in some cases (with a spec, with a plan built) are optional keys: a
TypedDict of the required keys with a `total=False` subclass adding the others, which works on
every Python the package supports (`NotRequired` needs 3.11).
"""

from __future__ import annotations

from typing import Literal, TypedDict


class Breakdown(TypedDict):
    """Where a rank's step goes, in seconds; the terms add up to the step time."""

    compute_s: float
    overlap_slowdown_s: float
    exposed_tp_s: float
    exposed_all_to_all_s: float
    exposed_p2p_s: float
    bubble_s: float
    exposed_dp_s: float
    optimizer_s: float


class Volumes(TypedDict):
    """Bytes sent per step, by kind."""

    p2p: float
    tp: float
    all_to_all: float
    dp: float


class GpuMemory(TypedDict):
    """The most loaded GPU's memory by what holds it, in bytes."""

    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    buffers_bytes: float
    reserve_bytes: float
    total_bytes: float


class RankMemory(TypedDict):
    """With a spec: the bytes one GPU of a rank holds."""

    params_bytes: float
    grads_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    buffers_bytes: float
    reserve_bytes: float
    total_bytes: float
    fraction_of_gpu: float
    out_of_memory: bool


class _SimulatedRankTimes(TypedDict):
    rank: int
    busy: float
    idle: float
    longest_idle: float
    peak_activations: int
    exposed_comm: float


class SimulatedRank(_SimulatedRankTimes, total=False):
    """One rank of a simulated step; `breakdown_s` and `memory` are there with a spec."""

    breakdown_s: Breakdown
    memory: RankMemory


class SpecFigures(TypedDict):
    """With a spec: the step's figures on the spec's cluster (`simulate`'s `spec`)."""

    name: str
    gpu: str
    gpus: int
    step_time_s: float
    pipeline_makespan_s: float
    breakdown_per_rank_mean_s: Breakdown
    bubble_fraction: float
    exposed_comm_per_rank_mean_s: float
    exposed_comm_per_rank_max_s: float
    exposed_comm_total_s: float
    volume_per_gpu_bytes: Volumes
    volume_total_bytes: Volumes
    tokens_per_step: float
    tokens_per_s: float
    model_flops_per_token: float
    achieved_fraction_of_peak: float
    gpu_memory_bytes: float
    memory_limit_bytes: float
    memory_per_gpu: GpuMemory
    memory_fraction: float
    out_of_memory: bool
    gpu_hours_per_million_tokens: float
    bubble_gpu_hours_per_million_tokens: float
    run_tokens: float
    run_steps: float
    run_gpu_hours: float
    bubble_gpu_hours_run: float


class _SimulationStep(TypedDict):
    plan: str
    num_ranks: int
    pipelines: int
    stages_per_pipeline: int
    microbatches: int
    model_copies: int
    makespan: float
    bubble_fraction: float
    exposed_comm_per_rank_mean: float
    exposed_comm_per_rank_max: float
    exposed_comm_total: float
    ranks: list[SimulatedRank]


class Simulation(_SimulationStep, total=False):
    """One simulated step, as `pipeweave simulate --format json` prints it.

    `time_unit` ("s"), `spec` and `fitted` are there together, when the step was simulated on a
    spec; without one, times are in abstract units.
    """

    time_unit: Literal["s"]
    spec: SpecFigures
    fitted: list[str]


class ComparisonFigures(TypedDict):
    """One compared schedule's step on the spec adapted to its plan."""

    step_time_s: float
    makespan_units: float | None
    bubble_fraction: float
    idle_worst_s: float
    idle_best_s: float
    peak_activations: int
    activation_bytes: float
    weight_bytes: float
    memory_bytes: float
    memory_per_gpu: GpuMemory
    memory_fraction: float
    gpu_memory_bytes: float
    memory_limit_bytes: float
    out_of_memory: bool
    exposed_comm_per_rank_mean_s: float
    exposed_comm_per_rank_max_s: float
    exposed_comm_total_s: float
    breakdown_per_rank_mean_s: Breakdown
    volume_per_gpu_bytes: Volumes
    tokens_per_s: float
    gpu_hours_per_million_tokens: float
    bubble_gpu_hours_per_million_tokens: float


class Traits(TypedDict):
    """What a compared schedule is, read from its plan."""

    model_copies: int
    pipelines: int
    stages_per_rank: int
    weight_split: bool
    overlap: bool


class _ComparisonRowNames(TypedDict):
    schedule: str
    requires: str
    notes: list[str]


class ComparisonRow(_ComparisonRowNames, total=False):
    """One row of `pipeweave compare --format json`: `figures`, or the `error` that kept it from
    running; `traits` whenever a plan was built."""

    figures: ComparisonFigures
    error: str
    traits: Traits


class ScheduleParam(TypedDict):
    """A parameter a schedule declares: its type in words (`bool`, `int 1..=8`, a choice), its
    default as written (None: it must be set) and its help."""

    name: str
    type: str
    default: str | None
    help: str | None


class ScheduleInfo(TypedDict):
    """A schedule available by name, as `pipeweave list` shows it; `file` is a folder's `.weave`
    file or a plugin's library, None for the library's own."""

    name: str
    source: Literal["library", "folder", "plugin"]
    file: str | None
    description: str
    requires: str
    params: list[ScheduleParam]
