"""What a user's typed code may write with pipeweave, and what it may not: checked by
`mypy --strict` (tests/python/run.py), never run (pytest collects no test from it).

Every line marked `# type: ignore[CODE]` is code the package's types must refuse: under `--strict`
mypy reports an ignore that silences nothing, so the check fails if the types ever accept it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pipeweave as pw
import pipeweave.torch as pwt
import torch
from pipeweave import Action, ActionProtocol, JsonPlan, PlanProtocol, Step, StepProtocol
from torch.distributed.pipelining import PipelineStage
from typing_extensions import assert_type


def both_plans_are_plans(path: str) -> list[PlanProtocol]:
    native: PlanProtocol = pw.compile("dualpipe", ranks=4, microbatches=8, weight_split=True)
    exported: PlanProtocol = JsonPlan.load(path)
    loaded: PlanProtocol = pw.load(path)
    return [native, exported, loaded, pw.validate("0F0,0B0\n")]


def what_a_plan_gives(plan: PlanProtocol) -> None:
    assert_type(plan.ranks, int)
    for rank in range(plan.ranks):
        for action in plan.actions(rank):
            assert_type(action.kind, str)
            assert_type(action.stage, int | None)
            if action.pair is not None:
                forward, backward = action.pair
                assert_type(forward.mb, int | None)
        for step in plan.steps(rank):
            assert_type(step.peer, int | None)
    first: int = plan.placement[0][0]
    print(first)


@dataclass
class OwnPlan:
    """A plan of the user's own: any object with the protocol's attributes and methods."""

    ranks: int = 1
    pipelines: int = 1
    model_copies: int = 1
    stages_per_pipeline: int = 1
    microbatches: int = 1
    placement: tuple[tuple[int, ...], ...] = ((0,),)
    forward_only: bool = False
    programs: list[list[Action]] = field(default_factory=lambda: [[Action("F", 0, 0), Action("B", 0, 0)]])

    def actions(self, rank: int) -> list[Action]:
        return self.programs[rank]

    def steps(self, rank: int) -> tuple[Step, ...]:
        return (Step("compute", action=0), Step("compute", action=1))


@dataclass
class NoSteps:
    ranks: int = 1
    pipelines: int = 1
    model_copies: int = 1
    stages_per_pipeline: int = 1
    microbatches: int = 1
    placement: tuple[tuple[int, ...], ...] = ((0,),)

    def actions(self, rank: int) -> list[Action]:
        return []


@dataclass(frozen=True)
class TextAction:
    kind: str
    stage: str
    mb: int | None = None
    pair: None = None


def own_plans() -> list[PlanProtocol]:
    own: PlanProtocol = OwnPlan()
    no_steps: PlanProtocol = NoSteps()  # type: ignore[assignment]
    text: ActionProtocol = TextAction("F", "0")  # type: ignore[assignment]
    step: StepProtocol = Step("reduce_grad", stage=0)
    print(no_steps, text, step)
    return [own]


def typed_results(plan: pw.Plan) -> float:
    simulated = plan.simulate(spec="default")
    assert_type(simulated, pw.Simulation)
    assert_type(simulated["ranks"][0]["peak_activations"], int)
    fitted: list[str] = simulated.get("fitted", [])
    spec = simulated.get("spec")
    seconds = spec["step_time_s"] if spec is not None else simulated["makespan"]
    print(fitted, simulated["makespam"])  # type: ignore[typeddict-item]
    for row in plan.compare(["zb-v"]):
        assert_type(row, pw.ComparisonRow)
        figures = row.get("figures")
        if figures is not None:
            assert_type(figures["makespan_units"], float | None)
            assert_type(figures["breakdown_per_rank_mean_s"]["bubble_s"], float)
    for schedule in pw.list_schedules():
        assert_type(schedule["file"], str | None)
        assert_type(schedule["params"][0]["default"], str | None)
    return seconds


def plan_against_actual(traces: list[str]) -> int | None:
    costs = pw.calibrate(traces, "1f1b", ranks=2, microbatches=8)
    assert_type(costs, str)
    diffed = pw.diff("1f1b", traces, ranks=2, microbatches=8, costs_from="costs.toml")
    assert_type(diffed, pw.PlanDiff)
    assert_type(diffed["ranks"][0]["measured_peak_saved_bytes"], int | None)
    pw.diff("1f1b", traces, costs_from=3)  # type: ignore[arg-type]
    simulated = pw.compile("zb-h1", ranks=2, microbatches=8).simulate(costs_from="costs.toml")
    compared = pw.compare(["1f1b"], ranks=2, microbatches=8, costs_from="costs.toml")
    figures = compared["rows"][0].get("figures")
    if figures is not None and "measured" in figures:
        assert_type(figures["measured"]["makespan_s"], float)
    return simulated["ranks"][0].get("peak_saved_bytes")


def train(path: str, rank: int) -> torch.Tensor | None:
    plan = JsonPlan.load(path)
    parts = {q: torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU()) for q in pwt.parts_of(plan, rank)}
    runner = pwt.PlanRunner(plan, rank, parts, torch.nn.functional.mse_loss)
    x, y = torch.randn(64, 16), torch.randn(64, 16)
    assert_type(runner.step((x,), y), torch.Tensor | None)
    pwt.PlanRunner(plan, rank, [torch.nn.Linear(16, 16)], torch.nn.functional.mse_loss)  # type: ignore[arg-type]
    pwt.PlanRunner(plan, rank, parts, torch.nn.functional.mse_loss, group="world")  # type: ignore[arg-type]
    runner.step("x", y)  # type: ignore[arg-type]
    return runner.step(x, y)


def profile(runner: pwt.PlanRunner, x: torch.Tensor, y: torch.Tensor) -> int:
    profiled = pwt.profile(runner, x, y, steps=2, dir="traces", gzip=True, after_step=lambda: None)
    assert_type(profiled, pwt.Profiled)
    assert_type(profiled.trace, str)
    assert_type(profiled.step_times, list[float])
    assert_type(profiled.median_step_time, float)
    record = profiled.saved_bytes[-1][0]
    assert_type(record, pwt.SavedBytes)
    assert_type(record.max_memory_allocated, int | None)
    assert_type(runner.saved_bytes, list[pwt.SavedBytes])
    pwt.profile(runner, x, y, dir="traces", probe=False)
    pwt.profile(runner, x, y, dir="traces", probe=1)  # type: ignore[arg-type]
    pwt.profile(runner, x, y, steps="2", dir="traces")  # type: ignore[arg-type]
    pwt.profile(runner, x, y)  # type: ignore[call-arg]
    return record.bytes + profiled.peak_saved_bytes


def run_in_pytorch(plan: pw.Plan, stage: PipelineStage) -> None:
    runtime = pwt.schedule(plan, [stage], torch.nn.functional.mse_loss, format="compute_comms", max_active_stages=2)
    runtime.step(torch.randn(8, 16), target=torch.randn(8, 16))
    pwt.schedule(plan, [stage], format="compute_comm")  # type: ignore[arg-type]
    pwt.schedule(plan, [stage], max_active_stage=2)  # type: ignore[call-arg]
    pwt.schedule(pw, [stage])  # type: ignore[arg-type]
