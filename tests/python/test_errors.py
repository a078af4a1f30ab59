"""Errors are exceptions, never a crash of the interpreter: each carries the text the command line
prints on standard error for the same input, without its `error: ` (the exception's class says
that) and in Python's words where the command line names a flag; its class says what went wrong
(UsageError where the command line exits with 2)."""

import os

import pipeweave as pw
import pytest
from conftest import DEBUG


def python(text):
    """The command line's error text as an exception carries it: without `error: ` in front."""
    assert text.startswith("error: "), text
    return text[len("error: "):]


def raised(call):
    with pytest.raises(pw.Error) as info:
        call()
    return info.value


# (schedule, compile's keyword arguments, the same on the command line, the exception, and the
# command line's flags as Python names them in the message)
@pytest.mark.parametrize(
    "schedule, kwargs, cli_args, kind, words",
    [
        ("no-such-schedule", {"ranks": 2, "microbatches": 2}, ["-p", "2", "-m", "2"], pw.PlanError, {}),
        ("dualpipe", {"ranks": 4, "microbatches": 7}, ["-p", "4", "-m", "7"], pw.PlanError, {}),
        ("dualpipe", {"ranks": 4, "microbatches": 8, "weight_split": 1}, ["-p", "4", "-m", "8", "--set", "weight_split=1"], pw.UsageError, {}),
        ("1f1b", {"ranks": 4, "microbatches": 8, "lag": 1}, ["-p", "4", "-m", "8", "--set", "lag=1"], pw.UsageError, {}),
        ("1f1b", {"ranks": 4, "microbatches": 8, "stages_per_rank": 2}, ["-p", "4", "-m", "8", "-v", "2"], pw.UsageError, {"-v": "stages_per_rank="}),
        ("1f1b", {}, [], pw.UsageError, {"--ranks/-p": "ranks=", "--microbatches/-m": "microbatches="}),
        ("dualpipev", {"ranks": 4, "microbatches": 3}, ["-p", "4", "-m", "3"], pw.PlanError, {}),
    ],
)
def test_schedules_fail_as_the_command_line_does(cli, schedule, kwargs, cli_args, kind, words):
    e = raised(lambda: pw.compile(schedule, **kwargs))
    text, code = cli.error("validate", schedule, *cli_args)
    assert type(e) is kind and (code == 2) == (kind is pw.UsageError)
    for flag, keyword in words.items():
        assert flag in text
        text = text.replace(flag, keyword)
    assert str(e) == python(text)


def test_arguments_out_of_range_are_usage_errors_naming_them():
    e = raised(lambda: pw.compile("1f1b", ranks=0, microbatches=8))
    assert type(e) is pw.UsageError and str(e) == "ranks=0: the number of ranks is a whole number of at least 1"
    e = raised(lambda: pw.compile("1f1b", ranks=70000, microbatches=8))
    assert type(e) is pw.UsageError and str(e) == "ranks=70000: the number of ranks is at most 65536"
    with pytest.raises(TypeError, match="expected an int, not bool"):
        pw.compile("1f1b", ranks=True, microbatches=8)
    e = raised(lambda: pw.load("no/such/plan.json"))
    assert type(e) is pw.PlanError and str(e) == "cannot read `no/such/plan.json`: there is no such file"


def test_a_requirement_says_which_m_would_meet_it():
    e = raised(lambda: pw.compile("interleaved-1f1b", ranks=4, microbatches=9))
    assert "max(1, M / P), 2 here" in str(e) and "help: M = 8 or M = 10 would meet it" in str(e)


def test_a_bad_plan_file_is_located(cli, tmp_path):
    bad = tmp_path / "deadlock.actions"
    bad.write_text("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n")
    e = raised(lambda: pw.load(bad))
    assert type(e) is pw.PlanError
    assert str(e) == python(cli.error("validate", bad)[0])
    assert "wait for each other in a cycle" in str(e) and "deadlock.actions:1:5" in str(e)
    # The same text given in memory is called <string>.
    text = raised(lambda: pw.validate(bad.read_text()))
    assert str(text) == str(e).replace(str(bad), "<string>")
    garbled = raised(lambda: pw.validate("0F0,0Q0\n"))
    assert "<string>:1:6" in str(garbled)
    assert type(raised(lambda: pw.load(tmp_path / "missing.json"))) is pw.PlanError
    assert "is a schedule, not a plan file" in str(raised(lambda: pw.load("1f1b")))


def test_a_bad_schedule_file_is_located(cli, tmp_path):
    bad = tmp_path / "bad.weave"
    bad.write_text("stages P\nplace loop\nprogram { F[nope] }\n")
    e = raised(lambda: pw.compile(bad, ranks=2, microbatches=2))
    assert type(e) is pw.PlanError
    assert str(e) == python(cli.error("validate", bad, "-p", "2", "-m", "2")[0])


def test_specs_fail_as_the_command_line_does(cli, tmp_path):
    spec = "deepseek-v3-h800-pp16-ep64"
    # A spec that cannot be fitted to the plan (2048 GPUs in pipelines of 3 ranks).
    odd = pw.compile("1f1b", ranks=3, microbatches=8)
    e = raised(lambda: odd.simulate(spec=spec))
    assert type(e) is pw.SpecError and "cannot be fitted to 1f1b" in str(e)
    assert str(e) == python(cli.error("simulate", "1f1b", "-p", "3", "-m", "8", "--spec", spec)[0])
    # strict_spec refuses a plan of another shape at the spec's keys, as --strict-spec does.
    plan = pw.compile("1f1b", ranks=4, microbatches=8)
    e = raised(lambda: plan.simulate(spec=spec, strict_spec=True))
    assert type(e) is pw.SpecError and "strict_spec refuses" in str(e)
    text = cli.error("simulate", "1f1b", "-p", "4", "-m", "8", "--spec", spec, "--strict-spec")[0]
    assert str(e) == python(text).replace("--strict-spec refuses", "strict_spec refuses")
    e = raised(lambda: plan.simulate(keep_dp=True))
    assert type(e) is pw.UsageError and "give one with spec=" in str(e)
    broken = tmp_path / "broken.toml"
    broken.write_text("[cluster]\ngpu = 3\n")
    e = raised(lambda: plan.compare(["zb-v"], spec=str(broken)))
    assert type(e) is pw.SpecError
    assert str(e) == python(cli.error("compare", "1f1b", "zb-v", "-p", "4", "-m", "8", "--spec", broken)[0])


def test_costs_and_formats_fail_with_the_reason(cli):
    plan = pw.compile("1f1b", ranks=2, microbatches=4)
    e = raised(lambda: plan.simulate(costs={"F": 0, "B": 1}))
    assert type(e) is pw.UsageError and "F must be greater than 0" in str(e)
    assert type(raised(lambda: plan.simulate(costs="Q=1"))) is pw.UsageError
    assert type(raised(lambda: plan.simulate(spec="default", costs="F=1"))) is pw.UsageError
    dual = pw.compile("dualpipe", ranks=4, microbatches=8)
    e = raised(lambda: dual.to_csv("pytorch"))
    assert type(e) is pw.PlanError
    assert str(e) == python(cli.error("export", "dualpipe", "-p", "4", "-m", "8", "--to", "pytorch")[0])
    with pytest.raises(ValueError, match="pytorch-comms"):
        plan.to_csv("torchtitan")
    with pytest.raises(TypeError, match="parameter `weight_split`"):
        pw.compile("dualpipe", ranks=4, microbatches=8, weight_split=1.5)


@pytest.mark.parametrize("fault", ["segfault", "abort", "panic", "garbage", "broken_plan", "wrong_shape"])
def test_a_plugin_that_crashes_is_an_exception(cli, fault):
    library = os.path.join(DEBUG, f"libpipeweave_fixture_{fault}.so")
    assert os.path.isfile(library), f"{library}: run `cargo build --workspace`"
    e = raised(lambda: pw.compile(f"plugin:{library}", ranks=2, microbatches=2))
    assert type(e) is pw.PlanError
    assert str(e) == python(cli.error("validate", f"plugin:{library}", "-p", "2", "-m", "2")[0])
    # The interpreter lives on, and so does every other plugin.
    assert pw.compile("dualpipe", ranks=2, microbatches=4).pipelines == 2
