"""The package's surface: what `import pipeweave` offers, the Plan's properties and the plan
protocol, equal to the JSON plan the command line exports."""

import json
import os
import threading
import time

import pipeweave as pw
import pytest
from pipeweave import JsonPlan


def test_the_names_of_the_package():
    for name in ["compile", "load", "validate", "list_schedules", "Plan", "Action", "Step", "JsonPlan"]:
        assert hasattr(pw, name), name
    for name in ["UsageError", "PlanError", "SpecError"]:
        assert issubclass(getattr(pw, name), pw.Error)
    assert issubclass(pw.Error, Exception)
    with pytest.raises(AttributeError):
        pw.no_such_thing  # noqa: B018
    # Typed: stubs and the marker ship with the package.
    folder = os.path.dirname(pw.__file__)
    for name in ["py.typed", "__init__.pyi", "_native.pyi"]:
        assert os.path.isfile(os.path.join(folder, name)), name
    assert "ranks" in pw.compile.__doc__ and "simulate" in pw.Plan.simulate.__doc__


def test_dualpipe_has_two_pipelines_of_copies():
    plan = pw.compile("dualpipe", ranks=4, microbatches=8, weight_split=True)
    assert (plan.ranks, plan.pipelines, plan.stages_per_pipeline, plan.microbatches, plan.model_copies) == (4, 2, 4, 8, 2)
    assert plan.placement == [[0, 1, 2, 3], [3, 2, 1, 0]]
    assert plan.name == "plugin:dualpipe"
    assert sorted(mb for mbs in plan.pipeline_microbatches for mb in mbs) == list(range(8))
    pair = next(a for r in range(4) for a in plan.actions(r) if a.kind == "pair")
    assert pair.stage is None and pair.mb is None
    forward, backward = pair.pair
    assert forward.kind == "F" and backward.kind in ("B", "I")
    assert str(pair).endswith("OVERLAP_F_B")
    with pytest.raises(ValueError, match="rank 4 out of range"):
        plan.actions(4)
    with pytest.raises(ValueError, match="rank -1 out of range"):
        plan.steps(-1)


@pytest.mark.parametrize(
    "schedule, args",
    [
        ("1f1b", ["-p", "4", "-m", "8"]),
        ("interleaved-1f1b", ["-p", "2", "-m", "4", "-v", "2"]),
        ("zb-v", ["-p", "4", "-m", "8"]),
        ("dualpipe", ["-p", "4", "-m", "8", "--set", "weight_split=false"]),
        ("chimera", ["-p", "4", "-m", "8", "--set", "pipelines=4"]),
        ("synth:v", ["-p", "4", "-m", "8", "--set", "activations=4"]),
        ("synth:bidirectional", ["-p", "4", "-m", "8"]),
    ],
)
def test_the_plan_protocol_is_the_exported_json_plan(cli, schedule, args):
    kwargs = {"ranks": int(args[1]), "microbatches": int(args[3])}
    if "-v" in args:
        kwargs["stages_per_rank"] = int(args[5])
    if "--set" in args:
        name, value = args[-1].split("=")
        kwargs[name] = {"true": True, "false": False}.get(value, int(value) if value.isdigit() else value)
    plan = pw.compile(schedule, **kwargs)
    exported = JsonPlan(json.loads(cli.out("export", schedule, *args, "--to", "json")))
    for name in ["ranks", "pipelines", "stages_per_pipeline", "microbatches", "model_copies", "placement"]:
        assert getattr(plan, name) == getattr(exported, name), name
    for r in range(plan.ranks):
        assert plan.actions(r) == exported.actions(r)
        assert plan.steps(r) == exported.steps(r)


def test_a_plan_round_trips_through_every_reader(tmp_path):
    plan = pw.compile("zb-v", ranks=2, microbatches=4)
    (tmp_path / "p.json").write_text(plan.to_json())
    (tmp_path / "p.actions").write_text(plan.to_actions())
    assert pw.load(tmp_path / "p.json") == plan
    assert pw.load(str(tmp_path / "p.actions")) == plan
    assert pw.validate(plan.to_json()) == plan
    assert pw.validate(plan.to_actions()) == plan
    assert pw.compile(tmp_path / "p.json") == plan
    assert pw.load(tmp_path / "p.json").name == str(tmp_path / "p.json")
    dual = pw.compile("dualpipe", ranks=2, microbatches=4)
    (tmp_path / "d.actions").write_text(dual.to_actions())
    assert pw.load(tmp_path / "d.actions", pipelines=2) == dual
    assert pw.validate(dual.to_actions(), pipelines=2) == dual
    assert plan != dual and plan != "zb-v"


def test_list_schedules_is_pipeweave_list(cli):
    listed = pw.list_schedules()
    names = [s["name"] for s in listed]
    for name in ["1f1b", "gpipe", "zb-v", "dualpipev", "dualpipe", "chimera", "synth:loop", "synth:v", "synth:bidirectional"]:
        assert name in names
    shown = cli.out("list")
    for s in listed:
        assert s["name"] in shown and s["description"] in shown
        assert s["source"] in ("library", "folder", "plugin", "synthesized")
    synth = next(s for s in listed if s["name"] == "synth:v")
    assert synth["source"] == "synthesized" and any(p["name"] == "activations" for p in synth["params"])
    dual = next(s for s in listed if s["name"] == "dualpipe")
    assert dual["source"] == "plugin" and os.path.isfile(dual["file"])
    assert {"name": "weight_split", "type": "bool"}.items() <= next(p for p in dual["params"] if p["name"] == "weight_split").items()


def test_schedule_folders_and_their_names(tmp_path, data):
    plan = pw.compile("my", ranks=4, microbatches=8, schedule_dirs=[data])
    assert plan.name == "my" and plan.stages_per_pipeline == 8
    assert "my" in [s["name"] for s in pw.list_schedules(schedule_dirs=[data])]


@pytest.mark.parametrize("work", ["compile", "simulate"])
def test_compiling_and_simulating_release_the_interpreter(work):
    # While another thread compiles or simulates a large plan, this one keeps running: with the
    # interpreter's lock held for the call, it would stand still for the whole call.
    big = pw.compile("zb-v", ranks=64, microbatches=2048) if work == "simulate" else None
    call = {"compile": lambda: pw.compile("zb-v", ranks=64, microbatches=2048), "simulate": lambda: big.simulate()}[work]
    span = {}

    def timed():
        span["start"] = time.perf_counter()
        call()
        span["end"] = time.perf_counter()

    thread = threading.Thread(target=timed)
    ticks = []
    thread.start()
    while thread.is_alive():
        ticks.append(time.perf_counter())
    thread.join()
    inside = [t for t in ticks if span["start"] <= t <= span["end"]]
    took = span["end"] - span["start"]
    gaps = [b - a for a, b in zip([span["start"], *inside], [*inside, span["end"]])]
    assert took > 0.02, f"the call took {took:.3f} s, too short to tell"
    assert max(gaps) < took / 2, f"this thread stood still for {max(gaps):.3f} s of the {took:.3f} s call"


def test_pipeweave_torch_without_torch_says_how_to_install_it():
    import subprocess
    import sys

    # `None` in sys.modules makes `import torch` fail as it does where torch is not installed.
    code = "import sys; sys.modules['torch'] = None\nimport pipeweave.torch"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: pipeweave.torch needs PyTorch 2.15 or later"), last
    assert "https://download.pytorch.org/whl/cpu" in last and "CUDA" in last
