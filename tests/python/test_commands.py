"""Every command of the command line is a function of the package, through the same application
layer: the results are the command line's JSON as typed dicts (SVG and HTML as text), twins share
a row from Python as on the command line, and bad arguments are the command line's errors in
Python's words."""

import json

import pipeweave as pw
import pytest


def test_compare_is_the_command_lines_and_merges_twins(cli):
    args = ("dualpipev", "plugin:dualpipev", "zb-v")
    got = pw.compare(list(args), ranks=4, microbatches=8)
    assert got == cli.json("compare", *args, "-p", 4, "-m", 8, "--format", "json")
    names = [row["schedule"] for row in got["rows"]]
    assert names == ["dualpipev = plugin:dualpipev", "zb-v"]
    assert "both build this same plan" in got["rows"][0]["notes"]
    # A plan compiled from the schedule merges with the plugin the same way.
    plan = pw.compile("dualpipev", ranks=4, microbatches=8)
    rows = plan.compare(["plugin:dualpipev", "zb-v"])
    assert rows == got["rows"]
    # A schedule's own parameters go to those that declare them, on a spec with its rule.
    spec = "dense-70b-h100-pp8"
    got = pw.compare(["dualpipe", "1f1b"], spec=spec, ranks=4, global_batch=True, weight_split=False)
    want = cli.json("compare", "dualpipe", "1f1b", "-p", 4, "--spec", spec, "--global-batch", "--set", "weight_split=false", "--format", "json")
    assert got == want


def test_sweep_render_and_report_are_the_command_lines(cli):
    got = pw.sweep(["1f1b", "zb-h1", "dualpipe"], "m=4..8:2", ranks=4)
    assert got == cli.json("sweep", "1f1b", "zb-h1", "dualpipe", "-p", 4, "--over", "m=4..8:2", "--format", "json")
    assert got["series"][2]["points"][0]["reason"]
    step = pw.sweep(["1f1b", "dualpipe"], "overlap=true,false", metric="step_time", ranks=4, microbatches=8, costs={"F": 1, "B": 2.5})
    assert step["metric"] == "step_time"
    assert step == cli.json("sweep", "1f1b", "dualpipe", "-p", 4, "-m", 8, "--over", "overlap=true,false", "--metric", "step-time", "--costs", "F=1,B=2.5", "--format", "json")
    svg = pw.render(["1f1b", "zb-v"], ranks=4, microbatches=8, comms=True, start=2.0)
    assert svg == cli.out("render", "1f1b", "zb-v", "-p", 4, "-m", 8, "--comms", "--from", 2, "--svg", "-")
    assert svg.startswith("<svg")
    html = pw.report(["1f1b", "zb-h1"], ranks=4, microbatches=8, over="m=4,8")
    assert html == cli.out("report", "1f1b", "zb-h1", "-p", 4, "-m", 8, "--over", "m=4,8", "-o", "-")


def test_recommend_and_list_are_the_command_lines(cli):
    assert pw.recommend("unit") == cli.json("recommend", "--spec", "unit", "--format", "json")
    listed = pw.list_schedules()
    # The package's plugins sit beside its native module, the command line's beside the binary.
    def located(rows):
        return [{**row, "file": None} if row["source"] == "plugin" else row for row in rows]

    assert located(listed) == located(cli.json("list", "--format", "json")["schedules"])
    dualpipev = next(s for s in listed if s["name"] == "dualpipev")
    assert dualpipev["same_plans_as"] == "plugin:dualpipev"
    assert pw.check("1f1b") == {"name": "schedules/1f1b.weave", "combinations": 70, "nothing_compiled": None}


def test_synthesize_is_the_command_lines(cli, tmp_path):
    found = pw.synthesize(ranks=4, microbatches=8, placement="v", evaluations=300, exact_nodes=0, time_limit=600)
    assert isinstance(found, pw.Synthesis) and isinstance(found.plan, pw.Plan)
    out = tmp_path / "plan.json"
    args = ("synthesize", "-p", 4, "-m", 8, "--placement", "v", "--evaluations", 300, "--exact-nodes", 0, "--time-limit", "10m")
    report = cli.json(*args, "--format", "json", "-o", out)
    assert found.report == report
    assert found.plan.to_json() == out.read_text()
    assert found.report["cost_source"] == "unit" and found.elapsed_s >= 0
    on_spec = pw.synthesize(spec="unit", evaluations=50, time_limit=600)
    assert on_spec.report["cost_source"] == "spec" and on_spec.report["time_unit"] == "seconds"


def raised(call):
    with pytest.raises(pw.Error) as info:
        call()
    return info.value


def test_calibrate_and_diff_are_the_command_lines(cli, tmp_path):
    import os

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    folder = os.path.join(root, "tests", "data", "traces", "1f1b")
    traces = [os.path.join(folder, f"rank{r}.pt.trace.json.gz") for r in range(2)]
    costs = pw.calibrate(traces)
    assert costs == cli.out("calibrate", *traces, "-o", "-")
    assert pw.calibrate(traces, "1f1b", ranks=2, microbatches=8) == cli.out("calibrate", *traces, "--plan", "1f1b", "-p", 2, "-m", 8, "-o", "-")
    got = pw.diff("1f1b", traces, ranks=2, microbatches=8)
    assert got == cli.json("diff", "1f1b", "-p", 2, "-m", 8, *traces, "--format", "json")
    assert [r["measured_peak_saved_bytes"] for r in got["ranks"]] == [r["predicted_peak_saved_bytes"] for r in got["ranks"]]
    path = tmp_path / "costs.toml"
    path.write_text(costs)
    measured = pw.diff("gpipe", [os.path.join(root, "tests", "data", "traces", "gpipe", f"rank{r}.pt.trace.json.gz") for r in range(2)], ranks=2, microbatches=8, costs_from=path)
    assert measured["costs"] == f"measured, from {path}"
    compared = pw.compare(["1f1b", "zb-h1"], ranks=2, microbatches=8, costs_from=str(path))
    assert compared == cli.json("compare", "1f1b", "zb-h1", "-p", 2, "-m", 8, "--costs-from", path, "--format", "json")
    assert compared["rows"][0]["figures"]["measured"]["peak_saved_bytes"] == max(r["measured_peak_saved_bytes"] for r in got["ranks"])
    recommended = pw.recommend(costs_from=str(path))
    assert recommended == cli.json("recommend", "--costs-from", path, "--format", "json")
    times = [c["step_time_s"] for c in recommended["candidates"]]
    assert times == sorted(times) and recommended["choice"] == recommended["candidates"][0]
    one = next(c for c in recommended["candidates"] if c["schedule"] == "1f1b")
    assert one["step_time_s"] == pw.compile("1f1b", ranks=2, microbatches=8).simulate(costs_from=str(path))["step_time"]
    with pytest.raises(TypeError, match="not both"):
        pw.recommend("default", costs_from=str(path))
    with pytest.raises(pw.PlanError, match="differs from the plan"):
        pw.calibrate(traces, "gpipe", ranks=2, microbatches=8)
    # Two runs measured together: a list of plans, one per run, the traces each run's in turn.
    zb = [os.path.join(root, "tests", "data", "traces", "zb-h1", f"rank{r}.pt.trace.json.gz") for r in range(2)]
    both = pw.calibrate(traces + zb, ["1f1b", "zb-h1"], ranks=2, microbatches=8)
    assert both == cli.out("calibrate", *traces, *zb, "--plan", "1f1b", "--plan", "zb-h1", "-p", 2, "-m", 8, "-o", "-")
    assert "[[measured.run]]" in both and "[part.measured_in]" in both
    with pytest.raises(pw.UsageError, match="2 plans take 4 traces"):
        pw.calibrate(traces, ["1f1b", "zb-h1"], ranks=2, microbatches=8)


def test_bad_arguments_are_the_command_lines_errors_in_pythons_words(cli):
    e = raised(lambda: pw.synthesize(spec="unit", memory_limit=1e308))
    assert type(e) is pw.UsageError and "memory_limit=1e308 is not a memory size" in str(e)
    e = raised(lambda: pw.synthesize(ranks=4))
    assert type(e) is pw.UsageError and "needs ranks= and microbatches=" in str(e)
    e = raised(lambda: pw.synthesize(ranks=4, microbatches=8, placement="v", stages_per_rank=2))
    assert "stages_per_rank=2 is for the loop placement" in str(e)
    e = raised(lambda: pw.sweep(["1f1b"], "m=8..4", ranks=4))
    assert type(e) is pw.UsageError and "runs backwards" in str(e)
    e = raised(lambda: pw.render(["1f1b"], ranks=4, microbatches=8, start=5.0, end=1.0))
    assert type(e) is pw.UsageError and "start=5 end=1: the window must end after it starts" in str(e)
    e = raised(lambda: pw.compare(["1f1b"], ranks=4, microbatches=8, nope=2))
    assert type(e) is pw.UsageError and "nope=2: none of the schedules has a parameter `nope`" in str(e)
    # A bool is no count, and an int beyond any range says so (not that it is not an int).
    with pytest.raises(TypeError, match="expected an int, not bool"):
        pw.compile("1f1b", ranks=True, microbatches=8)
    with pytest.raises(ValueError, match="is not a whole number from 0 to"):
        pw.synthesize(ranks=4, microbatches=8, evaluations=2**80)
    e = raised(lambda: pw.compile("synth:v", ranks=4, microbatches=8, evaluations=2**80))
    assert type(e) is pw.UsageError and "evaluations" in str(e) and "1208925819614629174706176" in str(e)
    assert "expected" not in str(e)


def test_results_are_json_values():
    # Dicts of the JSON the command line prints: they dump and load unchanged.
    got = pw.compare(["1f1b"], ranks=2, microbatches=4, units=True)
    assert json.loads(json.dumps(got)) == got
