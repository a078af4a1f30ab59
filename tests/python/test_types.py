"""The package's types at run time: both plans are `PlanProtocol`s to `isinstance`, and the typed
dicts of `simulate`, `compare` and `list_schedules` describe exactly what those return (mypy
checks the same from a user's side: tests/python/typed_usage.py, run by tests/python/run.py)."""

import os
import tempfile
import types
import typing

import pipeweave as pw
import pytest
from pipeweave import _results as _types


def problems(value, hint, where="result"):
    """Where `value` does not have the type `hint` (a typed dict, a list, a union, a scalar)."""
    if typing.is_typeddict(hint):
        if not isinstance(value, dict):
            return [f"{where}: {value!r} is not a dict"]
        hints = typing.get_type_hints(hint)
        found = [f"{where}: no {k!r}" for k in sorted(hint.__required_keys__ - value.keys())]
        found += [f"{where}: {k!r} is not a key of {hint.__name__}" for k in sorted(value.keys() - hints.keys())]
        for k in sorted(value.keys() & hints.keys()):
            found += problems(value[k], hints[k], f"{where}[{k!r}]")
        return found
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {value!r} is not a list"]
        return [p for i, item in enumerate(value) for p in problems(item, args[0], f"{where}[{i}]")]
    if origin in (typing.Union, types.UnionType):
        fits = any(not problems(value, arg, where) for arg in args)
        return [] if fits else [f"{where}: {value!r} is none of {hint}"]
    if origin is typing.Literal:
        return [] if value in args else [f"{where}: {value!r} is not one of {args}"]
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif hint is int:
        ok = type(value) is int
    elif hint is type(None):
        ok = value is None
    else:
        ok = type(value) is hint
    return [] if ok else [f"{where}: {value!r} is not a {hint.__name__}"]


def keys_seen(value, hint, seen):
    """Adds (typed dict, key) for every key `value` holds, walking its typed dicts."""
    if typing.is_typeddict(hint):
        hints = typing.get_type_hints(hint)
        for k, v in value.items():
            seen.add((hint.__name__, k))
            keys_seen(v, hints[k], seen)
    elif typing.get_origin(hint) is list:
        for item in value:
            keys_seen(item, typing.get_args(hint)[0], seen)
    elif typing.get_origin(hint) in (typing.Union, types.UnionType):
        for arg in typing.get_args(hint):
            if not problems(value, arg):
                keys_seen(value, arg, seen)
                break


def every_key(hint, seen=None):
    """Every (typed dict, key) reachable from `hint`."""
    seen = set() if seen is None else seen
    if typing.is_typeddict(hint):
        for k, h in typing.get_type_hints(hint).items():
            seen.add((hint.__name__, k))
            every_key(h, seen)
    for arg in typing.get_args(hint):
        every_key(arg, seen)
    return seen


def test_both_plans_implement_the_plan_protocol(tmp_path):
    plan = pw.compile("dualpipe", ranks=4, microbatches=8, weight_split=True)
    (tmp_path / "plan.json").write_text(plan.to_json())
    for implementation in [plan, pw.JsonPlan.load(tmp_path / "plan.json"), pw.load(tmp_path / "plan.json")]:
        assert isinstance(implementation, pw.PlanProtocol), implementation
        for r in range(implementation.ranks):
            actions = implementation.actions(r)
            assert actions and all(isinstance(a, pw.ActionProtocol) for a in actions)
            pairs = [a.pair for a in actions if a.pair is not None]
            assert all(isinstance(half, pw.ActionProtocol) for pair in pairs for half in pair)
            steps = implementation.steps(r)
            assert steps and all(isinstance(s, pw.StepProtocol) for s in steps)


def test_what_lacks_a_member_of_the_protocol_is_no_plan(tmp_path):
    plan = pw.compile("1f1b", ranks=2, microbatches=4)
    members = ["ranks", "pipelines", "model_copies", "stages_per_pipeline", "microbatches", "placement", "forward_only"]
    for left_out in [*members, "actions", "steps"]:
        attributes = {m: getattr(plan, m) for m in members if m != left_out}
        attributes.update({m: getattr(plan, m) for m in ["actions", "steps"] if m != left_out})
        partial = type("Partial", (), {})()
        partial.__dict__.update(attributes)
        assert not isinstance(partial, pw.PlanProtocol), left_out
        full = type("Full", (), {})()
        full.__dict__.update(attributes, **{left_out: getattr(plan, left_out)})
        assert isinstance(full, pw.PlanProtocol), left_out
    assert not isinstance(pw.Action("F", 0, 0), pw.StepProtocol)
    assert not isinstance(pw.Step("compute", action=0), pw.ActionProtocol)


def measured_costs():
    """The costs measured in the recorded 1F1B run (tests/data/traces/1f1b), in a file."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    traces = [os.path.join(root, "tests", "data", "traces", "1f1b", f"rank{r}.pt.trace.json.gz") for r in range(2)]
    path = os.path.join(tempfile.mkdtemp(prefix="pipeweave-types-"), "costs.toml")
    with open(path, "w") as f:
        f.write(pw.calibrate(traces))
    return path


def simulations():
    yield pw.compile("zb-v", ranks=4, microbatches=8).simulate()
    yield pw.compile("zb-h1", ranks=2, microbatches=8).simulate(costs_from=measured_costs())
    yield pw.compile("1f1b", ranks=4, microbatches=8).simulate(costs={"F": 1, "B": 2.5})
    yield pw.compile("dualpipe", ranks=16, microbatches=120).simulate(spec="deepseek-v3-h800-pp16-ep64")
    yield pw.compile("1f1b", ranks=4, microbatches=10).simulate(spec="deepseek-v3-h800-pp16-ep64")


def comparisons():
    yield pw.compile("1f1b", ranks=8, microbatches=16).compare(["zb-v", "dualpipe"], spec="dense-70b-h100-pp8")
    yield pw.compile("1f1b", ranks=4, microbatches=7).compare(["dualpipe", "zb-v"], units=True)
    yield pw.compare(["1f1b", "dualpipev"], ranks=2, microbatches=8, costs_from=measured_costs())["rows"]


@pytest.mark.parametrize(
    "what, results, hint",
    [
        ("simulate", lambda: list(simulations()), _types.Simulation),
        ("compare", lambda: list(comparisons()), list[_types.ComparisonRow]),
        ("list_schedules", lambda: [pw.list_schedules()], list[_types.ScheduleListingSchedule]),
    ],
)
def test_the_typed_dicts_are_what_the_functions_return(what, results, hint):
    seen = set()
    for result in results():
        assert problems(result, hint, what) == []
        keys_seen(result, hint, seen)
    # Every key the types name comes back from one of the calls above, so none is made up.
    assert every_key(hint) - seen == set()


def test_a_value_of_another_type_is_a_problem():
    simulated = pw.compile("1f1b", ranks=2, microbatches=4).simulate()
    assert problems(simulated, _types.Simulation) == []
    assert problems({**simulated, "makespam": 1.0}, _types.Simulation) == [
        "result: 'makespam' is not a key of Simulation"
    ]
    broken = {**simulated, "num_ranks": 2.0, "ranks": [{**simulated["ranks"][0], "busy": "1"}]}
    del broken["plan"]
    assert problems(broken, _types.Simulation) == [
        "result: no 'plan'",
        "result['num_ranks']: 2.0 is not a int",
        "result['ranks'][0]['busy']: '1' is not a float",
    ]
