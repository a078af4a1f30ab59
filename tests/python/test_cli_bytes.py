"""Round trips against the command line's bytes: every export of a plan equals
`pipeweave export`'s output, and `plan.simulate()` and `plan.compare()` equal the JSON of
`pipeweave simulate` and `pipeweave compare`."""

import json

import pipeweave as pw
import pytest

# (schedule, compile's keyword arguments, the same on the command line)
PLANS = [
    ("1f1b", {"ranks": 4, "microbatches": 8}, ["-p", "4", "-m", "8"]),
    ("gpipe", {"ranks": 2, "microbatches": 3}, ["-p", "2", "-m", "3"]),
    ("interleaved-1f1b", {"ranks": 4, "microbatches": 8, "stages_per_rank": 2}, ["-p", "4", "-m", "8", "-v", "2"]),
    ("zb-h2", {"ranks": 4, "microbatches": 8}, ["-p", "4", "-m", "8"]),
    ("zb-v", {"ranks": 4, "microbatches": 8}, ["-p", "4", "-m", "8"]),
    ("dualpipev", {"ranks": 4, "microbatches": 10, "weight_split": False}, ["-p", "4", "-m", "10", "--set", "weight_split=false"]),
    ("dualpipe", {"ranks": 4, "microbatches": 8}, ["-p", "4", "-m", "8"]),
    ("chimera", {"ranks": 4, "microbatches": 8}, ["-p", "4", "-m", "8"]),
]
SINGLE = [p for p in PLANS if p[0] not in ("dualpipe", "chimera")]


def ids(plans):
    return [p[0] for p in plans]


@pytest.mark.parametrize("schedule, kwargs, args", PLANS, ids=ids(PLANS))
def test_json_and_actions_are_the_exported_bytes(cli, schedule, kwargs, args):
    plan = pw.compile(schedule, **kwargs)
    assert plan.to_json() == cli.out("export", schedule, *args, "--to", "json")
    assert plan.to_actions() == cli.out("export", schedule, *args, "--to", "actions")
    assert plan.to_json(costs="F=1,B=2.5,transfer=0.25") == cli.out(
        "export", schedule, *args, "--to", "json", "--costs", "F=1,B=2.5,transfer=0.25"
    )


@pytest.mark.parametrize("schedule, kwargs, args", SINGLE, ids=ids(SINGLE))
def test_the_pytorch_csvs_are_the_exported_bytes(cli, schedule, kwargs, args):
    plan = pw.compile(schedule, **kwargs)
    assert plan.to_csv() == plan.to_csv("pytorch") == cli.out("export", schedule, *args, "--to", "pytorch")
    assert plan.to_csv("pytorch-comms") == cli.out("export", schedule, *args, "--to", "pytorch-comms")


@pytest.mark.parametrize("schedule, kwargs, args", PLANS, ids=ids(PLANS))
def test_simulate_is_the_command_lines_json(cli, schedule, kwargs, args):
    plan = pw.compile(schedule, **kwargs)
    assert plan.simulate() == cli.json("simulate", schedule, *args, "--format", "json")
    costs = {"F": 1.0, "B": 3.0, "pair": 3.5, "transfer": 0.5}
    text = ",".join(f"{k}={v}" for k, v in costs.items())
    assert plan.simulate(costs=costs) == cli.json("simulate", schedule, *args, "--format", "json", "--costs", text)
    assert plan.simulate(costs=text) == plan.simulate(costs=costs)


def test_simulate_on_a_spec_is_the_command_lines_json(cli):
    for schedule, spec, ranks, m in [
        ("dualpipe", "deepseek-v3-h800-pp16-ep64", 16, 120),
        ("zb-h1", "dense-70b-h100-pp8", 8, 16),
        ("1f1b", "dense-70b-h100-pp8", 8, 16),
    ]:
        plan = pw.compile(schedule, ranks=ranks, microbatches=m)
        want = cli.json("simulate", schedule, "-p", ranks, "-m", m, "--spec", spec, "--format", "json")
        assert plan.simulate(spec=spec) == want
        assert plan.to_json(spec=spec) == cli.out("export", schedule, "-p", ranks, "-m", m, "--to", "json", "--spec", spec)


def test_a_spec_of_another_shape_is_fitted_as_the_command_line_fits_it(cli):
    # P and M differ from the spec's: the spec is fitted to the plan by the command line's one
    # rule, and `fitted` says how, under every flag of that rule.
    for schedule, spec, ranks, m in [
        ("dualpipe", "deepseek-v3-h800-pp16-ep64", 8, 20),
        ("1f1b", "deepseek-v3-h800-pp16-ep64", 4, 10),
        ("zb-v", "dense-70b-h100-pp8", 4, 8),
    ]:
        plan = pw.compile(schedule, ranks=ranks, microbatches=m)
        args = ("simulate", schedule, "-p", ranks, "-m", m, "--spec", spec, "--format", "json")
        want = cli.json(*args)
        assert want["fitted"] and any("instead of the spec's" in note for note in want["fitted"])
        assert plan.simulate(spec=spec) == want
        assert plan.simulate(spec=spec, global_batch=True) == cli.json(*args, "--global-batch")
        assert plan.simulate(spec=spec, keep_dp=True) == cli.json(*args, "--keep-dp")
        export = ("export", schedule, "-p", ranks, "-m", m, "--to", "json", "--spec", spec)
        assert plan.to_json(spec=spec) == cli.out(*export)
        assert plan.to_json(spec=spec, global_batch=True) == cli.out(*export, "--global-batch")


def test_compare_rows_are_the_command_lines(cli):
    plan = pw.compile("1f1b", ranks=8, microbatches=16)
    spec = "dense-70b-h100-pp8"
    rows = plan.compare(["zb-v", "interleaved-1f1b", "dualpipe"], spec=spec, units=True)
    want = cli.json("compare", "1f1b", "zb-v", "interleaved-1f1b", "dualpipe", "-p", 8, "-m", 16, "--spec", spec, "--units", "--format", "json")
    assert rows == want["rows"]
    # A schedule that cannot be built keeps its row with the reason.
    odd = pw.compile("1f1b", ranks=4, microbatches=7).compare(["dualpipe"])
    assert odd[1]["schedule"] == "dualpipe" and "even number of micro-batches" in odd[1]["error"]
    default = cli.json("compare", "1f1b", "dualpipe", "-p", 4, "-m", 7, "--format", "json")
    assert odd == default["rows"]
