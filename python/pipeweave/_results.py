"""The results of pipeweave's commands as typed dicts, generated from the JSON Schemas in
`schemas/` by `cargo xtask typed` (do not edit: a test checks this file against them).

Each document type is what the command line prints with `--format json` and the package
returns: `Simulation` (`simulate`), `Comparison` (`compare`), `Sweep` (`sweep`),
`Recommendation` (`recommend`), `SynthesisReport` (`synthesize`), `ScheduleListing`
(`list`).
"""

from typing import Literal, TypedDict

__all__ = [
    "SimulationBreakdown",
    "SimulationVolumes",
    "SimulationMemory",
    "SimulationSpec",
    "SimulationRankMemory",
    "SimulationRank",
    "Simulation",
    "ComparisonFiguresMeasured",
    "ComparisonMemory",
    "ComparisonBreakdown",
    "ComparisonVolumes",
    "ComparisonFigures",
    "ComparisonTraits",
    "ComparisonRow",
    "Comparison",
    "SweepFit",
    "SweepPoint",
    "SweepSeriesItem",
    "Sweep",
    "RecommendationMemory",
    "RecommendationBreakdown",
    "RecommendationVolumes",
    "RecommendationFigures",
    "RecommendationCandidate",
    "RecommendationVerdictLostOn",
    "RecommendationVerdict",
    "RecommendationRejectedShape",
    "Recommendation",
    "MeasuredRecommendationCandidate",
    "MeasuredRecommendationUnmetItem",
    "MeasuredRecommendation",
    "SynthesisReportExact",
    "SynthesisReportLibrary",
    "SynthesisReport",
    "ScheduleListingParam",
    "ScheduleListingSchedule",
    "ScheduleListingUnreached",
    "ScheduleListing",
    "PlanDiffRankWaitedOnItem",
    "PlanDiffRankAction",
    "PlanDiffRank",
    "PlanDiffWait",
    "PlanDiffSlowestAction",
    "PlanDiff",
]


class SimulationBreakdown(TypedDict):
    """Where a rank's step goes, in seconds; the terms add up to the step time."""

    compute_s: float
    """Compute at full rate: GEMMs, attention, element-wise kernels."""
    overlap_slowdown_s: float
    """Extra compute time while communication takes SMs (training.comm_sms): overlapped F&B pairs, tensor-parallel collectives beside the GEMMs, data-parallel collectives beside the backward and the next forward."""
    exposed_tp_s: float
    """Tensor- and sequence-parallel collectives no compute hides."""
    exposed_all_to_all_s: float
    """Expert dispatch and combine no compute hides."""
    exposed_p2p_s: float
    """Waiting for point-to-point transfers between stages."""
    bubble_s: float
    """Waiting for other ranks."""
    exposed_dp_s: float
    """Data-parallel gradient reduction and parameter all-gather after the rank's last action."""
    optimizer_s: float
    """The optimizer step."""


class SimulationVolumes(TypedDict):
    """Bytes sent per step, by kind."""

    p2p: float
    """Boundary activations and gradients between pipeline stages."""
    tp: float
    """Tensor- and sequence-parallel collectives."""
    all_to_all: float
    """Expert dispatch and combine."""
    dp: float
    """Data-parallel gradient reduction and parameter all-gather."""


class SimulationMemory(TypedDict):
    """The most loaded GPU's memory by what holds it."""

    weights_bytes: float
    """Weights of every stage it hosts (replicas count)."""
    gradients_bytes: float
    optimizer_bytes: float
    """Master weights and moments, sharded with ZeRO."""
    activations_bytes: float
    """Activations at its peak."""
    buffers_bytes: float
    """The tensor-parallel all-gather's output and boundary activations in flight."""
    reserve_bytes: float
    """The CUDA context and the communication buffers."""
    total_bytes: float


class SimulationSpec(TypedDict):
    """With --spec: the step's figures on the spec's cluster."""

    name: str
    """The spec's name."""
    gpu: str
    """The GPU's name."""
    gpus: int
    """GPUs of the cluster."""
    recompute_per_part: list[Literal["none", "selective", "full"]]
    """Each model part's activation recomputation, as layers_per_part: none, selective (the attention core, Korthikanti et al. 2022) or full (each layer's input kept, its forward run again before its backward); parts may differ (AdaPipe)."""
    layers_per_part: list[int]
    """Layers of each model part (position in a pipeline): the split the step ran with; the first part also holds the embedding, the last the output head."""
    step_time_s: float
    """The step: the pipeline, then the data-parallel synchronisation and the optimizer."""
    pipeline_makespan_s: float
    """The simulated pipeline's makespan (the step before its synchronisation)."""
    breakdown_per_rank_mean_s: SimulationBreakdown
    """Where the step goes, the mean over the pipeline ranks."""
    bubble_fraction: float
    """The ranks' mean bubble over the step time."""
    exposed_comm_per_rank_mean_s: float
    """Communication a pipeline rank cannot hide per step, the mean over the ranks."""
    exposed_comm_per_rank_max_s: float
    """The same, the worst rank."""
    exposed_comm_total_s: float
    """The same summed over the pipeline ranks."""
    volume_per_gpu_bytes: SimulationVolumes
    """Bytes one GPU sends per step, the mean over the GPUs."""
    volume_total_bytes: SimulationVolumes
    """Bytes the whole cluster sends per step."""
    tokens_per_step: float
    """Tokens of one step over all data-parallel replicas."""
    tokens_per_s: float
    model_flops_per_token: float
    """F + I + W of every layer (causal attention) and the head, without recomputation."""
    achieved_fraction_of_peak: float
    """Model FLOPs utilisation against the peak of the activation format."""
    gpu_memory_bytes: float
    """Memory of one GPU as PyTorch sees it."""
    memory_limit_bytes: float
    """What a plan may use of it: less training.memory_headroom."""
    memory_per_gpu: SimulationMemory
    memory_fraction: float
    """The most loaded GPU's total over its memory."""
    out_of_memory: bool
    """Whether any rank needs more than the limit."""
    gpu_hours_per_million_tokens: float
    bubble_gpu_hours_per_million_tokens: float
    """The part of them lost to bubbles."""
    run_tokens: float
    """training.total_tokens."""
    run_steps: float
    run_gpu_hours: float
    bubble_gpu_hours_run: float


class SimulationRankMemory(TypedDict):
    """With --spec: the bytes one GPU of the rank holds."""

    params_bytes: float
    """Weights of every stage the rank hosts."""
    grads_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    """Activations at the rank's peak."""
    buffers_bytes: float
    """The tensor-parallel all-gather's output and boundary activations in flight."""
    reserve_bytes: float
    """The CUDA context and the communication buffers."""
    total_bytes: float
    fraction_of_gpu: float
    """total_bytes over the GPU's memory as PyTorch sees it; above 1 when it does not fit at all."""
    out_of_memory: bool
    """Whether total_bytes exceeds that memory less training.memory_headroom."""


class _SimulationRankRequired(TypedDict):
    rank: int
    busy: float
    """Time computing (and on exposed communication)."""
    idle: float
    """Time idle; busy + idle = makespan."""
    longest_idle: float
    """The longest idle stretch."""
    peak_activations: int
    """The most live activations at any time, in stage-micro-batch units."""
    exposed_comm: float
    """Communication no compute hides (on a spec: tensor-parallel, all-to-all, point-to-point and data-parallel, in the step)."""


class SimulationRank(_SimulationRankRequired, total=False):
    breakdown_s: SimulationBreakdown
    """With --spec: where the rank's step goes."""
    peak_saved_bytes: int
    """With --costs-from costs that recorded saved bytes: the rank's predicted peak of saved-activation bytes in the step, from the bytes measured per stage and micro-batch (a deferred W keeping its share until it runs); absent otherwise."""
    memory: SimulationRankMemory
    """With --spec: the bytes one GPU of the rank holds."""


class _SimulationRequired(TypedDict):
    plan: str
    """The plan's name: a file, a schedule, or plugin:NAME."""
    num_ranks: int
    """Ranks P."""
    pipelines: int
    """Pipelines K."""
    stages_per_pipeline: int
    """Stages S of every pipeline."""
    microbatches: int
    """Micro-batches M over all pipelines."""
    model_copies: int
    """Model copies (pipelines in opposite directions hold one each)."""
    makespan: float
    """The simulated step's length; on a spec the pipeline's, before the data-parallel synchronisation and the optimizer (spec.step_time_s)."""
    bubble_fraction: float
    """Share of rank-time spent idle."""
    exposed_comm_per_rank_mean: float
    """Communication a rank cannot hide (on a spec: tensor-parallel, all-to-all, point-to-point, data-parallel), the mean over the ranks."""
    exposed_comm_per_rank_max: float
    """The same, the worst rank."""
    exposed_comm_total: float
    """The same summed over the ranks."""
    ranks: list[SimulationRank]
    """One entry per rank, in rank order."""


class Simulation(_SimulationRequired, total=False):
    """pipeweave simulate --format json, version 2"""

    time_unit: Literal["s"]
    """Present with --spec: every time is in seconds. Absent: abstract units (F = I = W = 1 unless --costs says otherwise)."""
    step_time: float
    """With --costs-from: the predicted step, in seconds: the makespan (the latest end of a rank's actions plus, where the plan keeps a part on several ranks and the costs hold the link probe, each rank's all-reduce of those parts' gradients after its last action) and the profiled run's time before its first action and after its last (overhead.head and overhead.tail of the costs file)."""
    spec: SimulationSpec
    fitted: list[str]
    """With --spec: how the spec was fitted to the plan's shape, one sentence per change (the pipeline degree with the data parallelism or the GPUs, the cut of the model into parts, the micro-batches, the micro-batch size), then one per default the spec relies on that moves its figures (the attention kernel, when it names none); empty when the plan has the spec's shape and the spec names them all."""


class ComparisonFiguresMeasured(TypedDict):
    """With --costs-from: what the measured costs predict for this plan (absent when they cannot price it; the row's notes say why)."""

    makespan_s: float
    """The simulated makespan under the measured costs, in seconds."""
    step_time_s: float
    """The predicted step under the measured costs: the makespan (the latest end of a rank's actions plus, where the plan keeps a part on several ranks and the costs hold the link probe, each rank's all-reduce of those parts' gradients after its last action) and the profiled run's time before its first action and after its last (overhead.head and overhead.tail of the costs file), in seconds."""
    peak_saved_bytes: int | None
    """The largest predicted peak of saved-activation bytes of any rank, from the bytes measured per stage and micro-batch; null when the run recorded none."""

ComparisonMemory = SimulationMemory

ComparisonBreakdown = SimulationBreakdown

ComparisonVolumes = SimulationVolumes


class _ComparisonFiguresRequired(TypedDict):
    recompute_per_part: list[Literal["none", "selective", "full"]]
    """Each model part's activation recomputation, as layers_per_part: none, selective (the attention core, Korthikanti et al. 2022) or full (each layer's input kept, its forward run again before its backward); parts may differ (AdaPipe)."""
    layers_per_part: list[int]
    """Layers of each model part (position in a pipeline): the split the step ran with; the first part also holds the embedding, the last the output head."""
    step_time_s: float
    """The step: the simulated pipeline, then the data-parallel synchronisation and the optimizer."""
    makespan_units: float | None
    """The makespan with unit costs (F = I = W = 1, B = 2) with --units, else null."""
    bubble_fraction: float
    """The ranks' mean bubble over the step time."""
    idle_worst_s: float
    """The most time a rank waits in the step (bubble and point-to-point)."""
    idle_best_s: float
    """The least time a rank waits."""
    peak_activations: int
    """The most live activations of any rank, in stage-micro-batch units."""
    activation_bytes: float
    """The largest activation bytes of any GPU."""
    weight_bytes: float
    """The largest weight bytes of any GPU (replicas count)."""
    memory_bytes: float
    """The largest total of any GPU."""
    memory_per_gpu: SimulationMemory
    memory_fraction: float
    """memory_bytes over gpu_memory_bytes; above 1 when it does not fit at all."""
    gpu_memory_bytes: float
    """Memory of one GPU as PyTorch sees it (the GPU table's memory_gib)."""
    memory_limit_bytes: float
    """What a plan may use of it: less training.memory_headroom."""
    out_of_memory: bool
    """Whether any GPU needs more than the limit."""
    exposed_comm_per_rank_mean_s: float
    """Communication a pipeline rank cannot hide per step (tensor-parallel, all-to-all, point-to-point, data-parallel), the mean over the ranks."""
    exposed_comm_per_rank_max_s: float
    """The same, the worst rank."""
    exposed_comm_total_s: float
    """The same summed over the pipeline ranks."""
    breakdown_per_rank_mean_s: SimulationBreakdown
    volume_per_gpu_bytes: SimulationVolumes
    """Bytes one GPU sends per step, the mean over the GPUs."""
    tokens_per_s: float
    gpu_hours_per_million_tokens: float
    bubble_gpu_hours_per_million_tokens: float


class ComparisonFigures(_ComparisonFiguresRequired, total=False):
    """The step on the spec adapted to the plan; per rank figures are the mean, the worst or the best over the pipeline ranks as named; totals are named as totals."""

    measured: ComparisonFiguresMeasured
    """With --costs-from: what the measured costs predict for this plan (absent when they cannot price it; the row's notes say why)."""


class ComparisonTraits(TypedDict):
    """What the schedule is, read from its plan (present whenever a plan was built)."""

    model_copies: int
    pipelines: int
    stages_per_rank: int
    """Stages the busiest rank hosts over all pipelines."""
    weight_split: bool
    """Backwards split into I and W."""
    overlap: bool
    """Overlapped F&B pairs."""


class _ComparisonRowRequired(TypedDict):
    schedule: str
    """As named on the command line."""
    requires: str
    """What the schedule requires of P and M, in words; empty when unknown (a plan file)."""
    notes: list[str]
    """How the spec was adapted to this plan (pipeline degree, the model cut into more parts)."""


class ComparisonRow(_ComparisonRowRequired, total=False):
    figures: ComparisonFigures
    error: str
    """Why the schedule has no figures: its own error message."""
    traits: ComparisonTraits


class _ComparisonRequired(TypedDict):
    spec: str
    """The spec's name."""
    default_spec: bool
    """Whether it is the built-in default (no --spec)."""
    gpus: int
    """GPUs of the cluster."""
    gpu: str
    """The GPU's name."""
    ranks: int
    """P the schedules were built for."""
    microbatches: int
    """M the schedules were built for."""
    spec_microbatches: int
    """The spec's own micro-batches per step."""
    rows: list[ComparisonRow]
    """One row per schedule, in the order given."""


class Comparison(_ComparisonRequired, total=False):
    """pipeweave compare --format json, version 2"""

    costs_from: str
    """With --costs-from: the file of measured costs every row is also priced with."""


class SweepFit(TypedDict):
    strict: bool
    """A plan of another shape than the spec's is refused."""
    keep_dp: bool
    """Where P is not the spec's, the data parallelism stays and the GPU count follows (else the GPUs stay)."""
    global_batch: bool
    """The spec's global batch stays: the micro-batch size follows M, and M follows P where not given."""
    split: str
    """How the layers are split over each point's parts (--split): spec (a plan's own split, else the spec's layers_per_stage where it has the point's parts, else even), even, auto (searched at each point, each part's recomputation with it), or layers per part like 1,8,8,7."""
    recompute: None | list[Literal["none", "selective", "full"]]
    """Each part's activation recomputation as given (--recompute): one setting for every part or one per part; null for the spec's own (chosen per part with the split under auto)."""


class _SweepPointRequired(TypedDict):
    x: int | bool | str
    """The swept parameter's value: a whole number (of at least 1 for microbatches, ranks and stages_per_rank), true or false, or an option's name."""
    value: float | None
    """The metric, or null where the schedule cannot take x."""


class SweepPoint(_SweepPointRequired, total=False):
    reason: str
    """Why value is null: a requirement not met, a plan file's fixed shape, a parameter the schedule does not have, a spec that cannot take the plan."""


class SweepSeriesItem(TypedDict):
    schedule: str
    """As named on the command line."""
    points: list[SweepPoint]
    """One point per swept value, in the order swept (numbers ascending)."""


class Sweep(TypedDict):
    """pipeweave sweep --format json, version 2"""

    parameter: str
    """The swept parameter: microbatches, ranks, stages_per_rank, or the name of a parameter the schedules declare."""
    metric: Literal["bubble_fraction", "step_time"]
    """What was measured."""
    unit: Literal["fraction", "units", "seconds"]
    """The unit of the values: fraction for the bubble, units (unit costs) or seconds (--spec) for the step time."""
    spec: str | None
    """The spec's name when the times are a spec's (--spec), else null."""
    fit: None | SweepFit
    """With --spec, how it meets each point's shape (the flags --strict-spec, --keep-dp, --global-batch, --split, --recompute); else null."""
    ranks: None | int
    """P of every point, when one P serves them all; null when P is swept."""
    microbatches: None | int
    """M of every point, when one M serves them all; null when M is swept or follows P."""
    series: list[SweepSeriesItem]
    """One series per schedule, in the order given."""

RecommendationMemory = SimulationMemory

RecommendationBreakdown = SimulationBreakdown

RecommendationVolumes = SimulationVolumes


class RecommendationFigures(TypedDict):
    """The step on the spec adapted to the candidate, as compare gives them (makespan_units is null)."""

    recompute_per_part: list[Literal["none", "selective", "full"]]
    """Each model part's activation recomputation, as layers_per_part: none, selective (the attention core, Korthikanti et al. 2022) or full (each layer's input kept, its forward run again before its backward); parts may differ (AdaPipe)."""
    layers_per_part: list[int]
    """Layers of each model part (position in a pipeline): the split the step ran with; the first part also holds the embedding, the last the output head."""
    step_time_s: float
    """The step: the simulated pipeline, then the data-parallel synchronisation and the optimizer."""
    makespan_units: float | None
    """The makespan with unit costs (F = I = W = 1, B = 2) with --units, else null."""
    bubble_fraction: float
    """The ranks' mean bubble over the step time."""
    idle_worst_s: float
    """The most time a rank waits in the step (bubble and point-to-point)."""
    idle_best_s: float
    """The least time a rank waits."""
    peak_activations: int
    """The most live activations of any rank, in stage-micro-batch units."""
    activation_bytes: float
    """The largest activation bytes of any GPU."""
    weight_bytes: float
    """The largest weight bytes of any GPU (replicas count)."""
    memory_bytes: float
    """The largest total of any GPU."""
    memory_per_gpu: SimulationMemory
    memory_fraction: float
    """memory_bytes over gpu_memory_bytes; above 1 when it does not fit at all."""
    gpu_memory_bytes: float
    """Memory of one GPU as PyTorch sees it (the GPU table's memory_gib)."""
    memory_limit_bytes: float
    """What a plan may use of it: less training.memory_headroom."""
    out_of_memory: bool
    """Whether any GPU needs more than the limit."""
    exposed_comm_per_rank_mean_s: float
    """Communication a pipeline rank cannot hide per step (tensor-parallel, all-to-all, point-to-point, data-parallel), the mean over the ranks."""
    exposed_comm_per_rank_max_s: float
    """The same, the worst rank."""
    exposed_comm_total_s: float
    """The same summed over the pipeline ranks."""
    breakdown_per_rank_mean_s: SimulationBreakdown
    volume_per_gpu_bytes: SimulationVolumes
    """Bytes one GPU sends per step, the mean over the GPUs."""
    tokens_per_s: float
    gpu_hours_per_million_tokens: float
    bubble_gpu_hours_per_million_tokens: float


class RecommendationCandidate(TypedDict):
    """One configuration of the search, costed: simulated when it fits in memory."""

    schedule: str
    """A library schedule's name, a plugin's, or plugin:NAME when a library schedule has the same name."""
    settings: list[str]
    """Its settings besides the defaults, NAME=VALUE (a variant, e.g. joins=doubling)."""
    pp: int
    """Pipeline degree P."""
    tp: int
    """Tensor-parallel degree."""
    dp: int
    """Data-parallel degree."""
    microbatches: int
    """Micro-batches M per step and replica."""
    micro_batch_size: int
    """Sequences per micro-batch."""
    stages_per_rank: int
    """Stages per rank and model copy."""
    v: int | None
    """v as given to a schedule that takes it, else null."""
    model_copies: int
    recompute: Literal["none", "selective", "full"]
    """Activation recomputation: every part's, or where the parts differ the heaviest part's (recompute_per_part gives each)."""
    recompute_per_part: list[Literal["none", "selective", "full"]]
    """Each model part's activation recomputation, as layers_per_part: none, selective (the attention core, Korthikanti et al. 2022) or full (each layer's input kept, its forward run again before its backward); parts may differ (AdaPipe)."""
    layers_per_part: list[int]
    """Layers of each model part (position in a pipeline): the split the step ran with; the first part also holds the embedding, the last the output head."""
    split_searched: bool
    """Whether the split was searched with this configuration (else it is the even split)."""
    step_time_s: float | None
    """The step's time; null when not simulated (it does not fit in memory)."""
    memory_fraction: float
    """The most loaded GPU's memory over the GPU's memory as PyTorch sees it."""
    memory_bytes: float
    """The most loaded GPU's memory."""
    memory_limit_bytes: float
    """What a plan may use: the GPU's memory less training.memory_headroom."""
    out_of_memory: bool
    """Whether it needs more than the limit."""
    figures: RecommendationFigures | None
    """The step's figures when simulated, else null."""
    run_gpu_hours: float | None
    """GPU-hours of the whole run when simulated, else null."""


class RecommendationVerdictLostOn(TypedDict):
    term: Literal["compute", "overlap slowdown", "exposed TP", "exposed all-to-all", "exposed p2p", "bubble", "exposed DP", "optimizer"]
    more_s: float
    """Its seconds more than the choice's."""


class RecommendationVerdict(TypedDict):
    schedule: str
    """The schedule family: the schedule, with (v N) and its settings."""
    best: RecommendationCandidate | None
    """Its fastest candidate that fits."""
    lost_on: RecommendationVerdictLostOn | None
    """The term of the step it loses most on against the choice (per rank, mean), or null."""
    least_memory: RecommendationCandidate | None
    """Its candidate that needs the least memory."""
    unmet: str | None
    """Why it could not be built in some or all shapes (the reason at the spec's own shape when there is one)."""


class RecommendationRejectedShape(TypedDict):
    pp: int | None
    """The pipeline degree; null when the tensor-parallel degree is left out for every one."""
    tp: int
    reason: str


class Recommendation(TypedDict):
    """pipeweave recommend --format json, version 2"""

    spec: str
    """The spec's name."""
    default_spec: bool
    """Whether it is the built-in default (no --spec)."""
    gpus: int
    """GPUs of the cluster (kept)."""
    gpu: str
    """The GPU's name."""
    ep: int
    """Expert parallelism (kept)."""
    global_sequences: int
    """Sequences per step over all data-parallel replicas (kept)."""
    sequence_length: int
    """Tokens per sequence."""
    total_tokens: float
    """Tokens of the whole run."""
    memory_headroom: float
    """The share of a GPU's memory kept free (training.memory_headroom)."""
    choice: RecommendationCandidate | None
    """The fastest candidate that fits in GPU memory under the headroom; null when none does."""
    runners_up: list[RecommendationCandidate]
    """The fastest candidate that fits of up to five other schedule families, fastest first."""
    verdicts: list[RecommendationVerdict]
    """One per schedule family: fastest first, then those that need the least memory."""
    rejected_shapes: list[RecommendationRejectedShape]
    """Shapes (pipeline and tensor-parallel degrees) left out before any schedule was tried."""
    same_shape_1f1b: RecommendationCandidate | None
    """1F1B at the choice's shape, for the savings."""
    spec_1f1b: RecommendationCandidate | None
    """1F1B as the spec has it."""
    spec_pp: int
    spec_tp: int
    spec_microbatches: int
    split_searched: bool
    """Whether recommend searched the layers' split with every configuration (--split auto, the default) or kept the even split (--split even)."""
    simulated: int
    """Candidates simulated."""
    out_of_memory: int
    """Candidates that fit in memory in no way (not simulated)."""
    unmet: int
    """Configurations that could not be built or costed."""


class MeasuredRecommendationCandidate(TypedDict):
    """One schedule family priced with the measured costs."""

    schedule: str
    """The schedule family: its name with its v and settings (interleaved-1f1b (v 4))."""
    name: str
    """The schedule's name."""
    settings: list[str]
    """Its settings besides the defaults, NAME=VALUE."""
    v: int | None
    """v as given to the schedule; null for its default."""
    stages_per_rank: int
    """Stages per rank and model copy, from the plan."""
    step_time_s: float
    """The predicted step: the makespan (the latest end of a rank's actions plus, where the plan keeps a part on several ranks and the costs hold the link probe, each rank's all-reduce of those parts' gradients after its last action) and the run's time before its first action and after its last (overhead.head and overhead.tail of the costs file), seconds."""
    makespan_s: float
    """The simulated makespan under the measured costs, seconds."""
    peak_saved_bytes: int | None
    """The largest predicted peak of saved-activation bytes of any rank; null when the run recorded none."""
    notes: list[str]
    """How the measured costs were carried to this plan, one sentence each."""


class MeasuredRecommendationUnmetItem(TypedDict):
    schedule: str
    """The schedule family: its name with its v and settings."""
    reason: str
    """Why, in words."""


class MeasuredRecommendation(TypedDict):
    """pipeweave recommend --costs-from FILE --format json, version 1"""

    costs_from: str
    """The costs file, as given."""
    measured_when: str | None
    """When the costs were measured (UTC, from the traces' clock); null when the traces did not say."""
    ranks: int
    """The profiled run's ranks P, kept."""
    microbatches: int
    """The profiled run's micro-batches M, kept."""
    choice: MeasuredRecommendationCandidate | None
    """The fastest candidate; null when none could be priced."""
    candidates: list[MeasuredRecommendationCandidate]
    """Every candidate priced, fastest first (the choice first)."""
    unmet: list[MeasuredRecommendationUnmetItem]
    """The schedule families that could not be built or priced at this shape."""


class SynthesisReportExact(TypedDict):
    nodes: int
    proved: bool
    makespan: float | None
    ended_by: Literal["complete", "node_budget", "time_limit", "zero_duration", "cost_range"]
    """complete: every plan searched (proved); node_budget: --exact-nodes ran out; time_limit: --time-limit stopped it; zero_duration, cost_range: it did not run (a duration of zero; costs spanning too wide a range to compare times exactly)."""


class SynthesisReportLibrary(TypedDict):
    schedule: str
    makespan: float | None
    peaks: list[int]


class SynthesisReport(TypedDict):
    """pipeweave synthesize --format json, version 1"""

    placement: str
    """loop, loop (v N), v or bidirectional"""
    ranks: int
    microbatches: int
    costs: str
    """unit, uniform (--costs) or the spec's name"""
    cost_source: Literal["unit", "uniform", "spec", "measured"]
    """Where the costs come from: unit costs, --costs, the spec `costs` names (a spec may be called unit), or the measured-costs file `costs` names (--costs-from)."""
    time_unit: Literal["units", "seconds"]
    limits: list[int]
    """The most activation units each rank may hold, one entry per rank."""
    unit_bytes: float | None
    """Bytes per unit of limits on a spec; null when a unit is one stage-micro-batch activation."""
    started_from_library: bool
    limits_from: str
    makespan: float | None
    """The synthesized plan's simulated makespan, per step, in time_unit."""
    heuristic_makespan: float | None
    """The constructive heuristic's best, or null when none of its constructions met the limits."""
    policies: int
    """Constructions the heuristic ran: list-scheduler policies and periodic blocks, one per period tried."""
    policies_within_limits: int
    evaluations: int
    """Plans the local search tried."""
    stopped_by_time_limit: bool
    exact: None | SynthesisReportExact
    lower_bound: float | None
    gap: float | None
    """makespan / lower_bound - 1, a fraction."""
    proved_optimal: bool
    """The makespan meets the lower bound, or the exact method finished, both compared exactly."""
    exact_arithmetic: bool
    """Whether times could be compared exactly, as whole numbers of one tick; false where the costs span too wide a range, and then nothing is proved."""
    proof_slack: float | None
    """What the proofs leave out, in time_unit: a plan shorter by this much or less. 0 (strict proofs) for costs of a few binary digits; else a millionth of the shortest duration."""
    library: None | SynthesisReportLibrary
    change_vs_library: float | None
    """makespan / library makespan - 1, a fraction; negative is faster."""


class ScheduleListingParam(TypedDict):
    """One declared parameter."""

    name: str
    """Its name (v is set with -v)."""
    type: str
    """Its type as a .weave file declares it: bool, int with its range, or choice(a, b)."""
    default: str | None
    """Its default as written; null: it must be given."""
    help: str | None


class ScheduleListingSchedule(TypedDict):
    """One schedule available by name."""

    name: str
    """The name that resolves to it (plugin:NAME where a schedule takes the plugin's name)."""
    source: Literal["library", "folder", "plugin", "synthesized"]
    """Where it comes from: the library, a schedule folder, a plugin, or a schedule synthesized for its placement (synth:loop, synth:v, synth:bidirectional)."""
    file: str | None
    """A folder's file or a plugin's library; null for the library."""
    description: str
    requires: str
    """What it requires of P and M, in its own words; empty: nothing."""
    same_plans_as: str | None
    """The schedule or plugin that builds the same plans (its twin), if any."""
    params: list[ScheduleListingParam]


class ScheduleListingUnreached(TypedDict):
    """A file of the user's schedule folders that its name does not reach."""

    name: str
    path: str
    by: str
    """What the name means instead."""


class ScheduleListing(TypedDict):
    """pipeweave list --format json, version 1"""

    schedules: list[ScheduleListingSchedule]
    unreached: list[ScheduleListingUnreached]


class PlanDiffRankWaitedOnItem(TypedDict):
    rank: int
    seconds: float


class PlanDiffRankAction(TypedDict):
    action: str
    predicted_start: float
    measured_start: float
    predicted: float
    """Predicted duration, seconds."""
    measured: float
    """Measured duration, seconds."""


class PlanDiffRank(TypedDict):
    rank: int
    predicted: float
    """When its last action ends, predicted, seconds."""
    measured: float
    """When its last action ends, measured, seconds."""
    unpredicted_wait: float
    """Its waits the plan did not predict, in total, seconds."""
    waited_on: list[PlanDiffRankWaitedOnItem]
    """On whom those waits were: the rank it received from before the action (or that sends the action's input), seconds each, by rank."""
    predicted_peak_saved_bytes: int | None
    """Its peak of saved-activation bytes, predicted from the bytes measured per stage and micro-batch (a deferred W keeping its share until it runs); null when the costs recorded none."""
    measured_peak_saved_bytes: int | None
    """Its peak of saved-activation bytes in the step, from its trace's `pw saved` records; null when it has none."""
    actions: list[PlanDiffRankAction]
    """Each action of its program, in order."""


class PlanDiffWait(TypedDict):
    rank: int
    action: str
    seconds: float
    on: None | int
    """The rank waited on; null when the action's inputs are the rank's own."""


class PlanDiffSlowestAction(TypedDict):
    """The action that took longest beyond its prediction."""

    rank: int
    action: str
    predicted: float
    measured: float


class PlanDiff(TypedDict):
    """pipeweave diff --format json, version 1"""

    plan: str
    """The plan, as named on the command line."""
    costs: str
    """Where the predicted costs come from, in words."""
    step: int
    """The step compared, 1-based: the run's median step by time."""
    steps: int
    """The steps the traces hold."""
    predicted: float
    """The predicted step: the simulated makespan, seconds."""
    measured: float
    """The measured step: the first action's start on any rank to the last action's end on any rank, seconds."""
    predicted_step: float
    """The predicted whole step: the makespan (the latest end of a rank's actions plus, where the plan keeps a part on several ranks and the costs hold the link probe, each rank's all-reduce of those parts' gradients after its last action) and the profiled run's time before its first action and after its last (overhead.head and overhead.tail of the costs), seconds."""
    measured_step: float | None
    """The measured whole step: the earliest start of a profiler step span (ProfilerStep#N) on any rank to the latest end of one, seconds; null when the traces have none."""
    error: float
    """(measured − predicted) / predicted, a fraction."""
    ranks: list[PlanDiffRank]
    """Each rank, in rank order."""
    waits: list[PlanDiffWait]
    """The longest waits the plan did not predict (the measured gap before an action beyond the predicted one, by more than 2% of the measured step), longest first, at most 20."""
    slowest_rank: int
    """The rank whose last action ends last."""
    slowest_action: PlanDiffSlowestAction
    """The action that took longest beyond its prediction."""
