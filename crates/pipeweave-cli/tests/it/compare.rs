//! `--spec` on `simulate` and `show`, and `compare`: tables on shipped specs, rows that cannot run,
//! exit codes, and bad specs rendered with file:line:column. The plugins must be built
//! (`cargo build --workspace`); the binary finds them next to itself.

use std::path::PathBuf;
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `pipeweave` in the crate's folder with no plugin path from the environment; returns
/// (exit code, stdout, stderr).
fn pipeweave(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(args)
        .current_dir(crate_dir())
        .env_remove("PIPEWEAVE_PLUGIN_PATH")
        .output()
        .expect("the pipeweave binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).expect("valid JSON")
}

/// The figure `key` of the row for `schedule` in `compare --format json` output.
fn figure(v: &serde_json::Value, schedule: &str, key: &str) -> f64 {
    let rows = v["rows"].as_array().expect("rows");
    let row = rows
        .iter()
        .find(|r| r["schedule"] == schedule)
        .expect("a row for the schedule");
    row["figures"][key].as_f64().expect("a number")
}

#[test]
fn simulate_with_a_shipped_spec() {
    let (code, out, err) = pipeweave(&["simulate", "1f1b", "--spec", "unit"]);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out);
}

#[test]
fn simulate_json_keeps_the_unit_keys_and_adds_the_spec() {
    let (code, out, _) = pipeweave(&["simulate", "1f1b", "--spec", "unit", "--format", "json"]);
    assert_eq!(code, 0);
    let v = json(&out);
    let makespan = v["makespan"].as_f64().expect("makespan");
    assert_eq!(v["spec"]["pipeline_makespan_s"].as_f64(), Some(makespan));
    // The step ends after the optimizer.
    assert!(v["spec"]["step_time_s"].as_f64().expect("step time") > makespan);
    assert!(v["bubble_fraction"].as_f64().is_some());
    let ranks = v["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), 4);
    for r in ranks {
        let (busy, idle) = (r["busy"].as_f64(), r["idle"].as_f64());
        assert!((busy.expect("busy") + idle.expect("idle") - makespan).abs() < 1e-9);
        assert!(r["peak_activations"].as_u64().is_some());
        assert!(r["memory"]["total_bytes"].as_f64().is_some());
    }
}

#[test]
fn spec_file_by_path_gives_the_same_figures_as_by_name() {
    let by_name = pipeweave(&["simulate", "zb-h1", "--spec", "unit", "--format", "json"]);
    let by_path = pipeweave(&[
        "simulate",
        "zb-h1",
        "--spec",
        "../../specs/unit.toml",
        "--format",
        "json",
    ]);
    assert_eq!(by_name.0, 0);
    assert_eq!(by_name.1, by_path.1);
}

#[test]
fn show_with_a_spec_draws_seconds() {
    let (code, out, err) = pipeweave(&["show", "gpipe", "--spec", "unit", "-m", "8"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(out.starts_with("spec unit: step time "), "{out}");
}

/// With `--strict-spec` a plan of another shape is refused at the spec's key (without it the spec
/// is fitted: `fitting.rs`).
#[test]
fn a_plan_that_does_not_fit_the_spec_points_at_the_key() {
    let args = [
        "simulate",
        "1f1b",
        "--spec",
        "unit",
        "-m",
        "4",
        "--strict-spec",
    ];
    let (code, out, err) = pipeweave(&args);
    assert_eq!((code, out.as_str()), (1, ""));
    insta::assert_snapshot!(err);
}

#[test]
fn a_bad_spec_is_rendered_with_its_places() {
    let (code, out, err) = pipeweave(&[
        "simulate",
        "1f1b",
        "--spec",
        "tests/fixtures/specs/bad-spec.toml",
    ]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.contains("bad-spec.toml:6:17"), "{err}");
    insta::assert_snapshot!(err);
}

#[test]
fn unknown_spec_and_conflicting_costs() {
    let (code, _, err) = pipeweave(&["simulate", "1f1b", "--spec", "nowhere"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!(err);
    let (code, _, _) = pipeweave(&["simulate", "1f1b", "--spec", "unit", "--costs", "F=2"]);
    assert_eq!(code, 2);
}

#[test]
fn compare_issue5_line_on_the_default_spec() {
    let (code, out, err) = pipeweave(&["compare", "chimera", "dualpipe", "dualpipev", "1f1b"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(out.starts_with("spec dense-70b-h100-pp8 (built-in default)"));
    insta::assert_snapshot!(out);
}

/// The showcase: on DeepSeek-V3's cluster DualPipe hides the expert all-to-all that Chimera pays
/// in full, and fills more of its bubble.
#[test]
fn compare_chimera_and_dualpipe_on_deepseek_v3() {
    let args = [
        "compare",
        "chimera",
        "dualpipe",
        "--spec",
        "deepseek-v3-h800-pp16-ep64",
        "--units",
    ];
    let (code, out, err) = pipeweave(&args);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out);
    let (_, out, _) = pipeweave(&[&args[..], &["--format", "json"]].concat());
    let v = json(&out);
    let f = |s: &str, k: &str| figure(&v, s, k);
    assert!(f("dualpipe", "step_time_s") < 0.7 * f("chimera", "step_time_s"));
    assert!(
        f("dualpipe", "exposed_comm_per_rank_mean_s")
            < 0.25 * f("chimera", "exposed_comm_per_rank_mean_s")
    );
    assert!(f("dualpipe", "bubble_fraction") < f("chimera", "bubble_fraction"));
    // Both hold two model copies: the same weights per GPU.
    assert_eq!(f("dualpipe", "weight_bytes"), f("chimera", "weight_bytes"));
}

#[test]
fn compare_formats_on_the_unit_spec() {
    for format in ["markdown", "csv", "json"] {
        let (code, out, err) = pipeweave(&[
            "compare",
            "1f1b",
            "zb-h1",
            "dualpipev",
            "--spec",
            "unit",
            "--format",
            format,
        ]);
        assert_eq!((code, err.as_str()), (0, ""), "{format}");
        insta::assert_snapshot!(format!("compare_unit_{format}"), out);
    }
}

/// Every library schedule and every plugin on every shipped spec at the spec's own P and M (and
/// its stages per rank for the schedules that take `v`): the five tables, and for each schedule
/// that cannot run its reason. DualPipeV's schedule and plugin build the same plans: one row.
#[test]
fn compare_every_schedule_on_every_shipped_spec() {
    const ALL: [&str; 14] = [
        "gpipe",
        "1f1b",
        "interleaved-1f1b",
        "megatron-interleaved",
        "megatron-a2a-overlap",
        "interleaved-zb",
        "looped-bfs",
        "zb-h1",
        "zb-h2",
        "zb-v",
        "dualpipev",
        "chimera",
        "dualpipe",
        "plugin:dualpipev",
    ];
    for shipped in pipeweave_spec::SHIPPED_SPECS {
        let (spec, _) = pipeweave_spec::parse(shipped.source, pipeweave_diagnostics::FileId(0));
        let v = spec.expect("a shipped spec").parallelism.stages_per_rank;
        let v = v.to_string();
        let mut args = vec!["compare"];
        args.extend(ALL);
        args.extend(["--spec", shipped.name]);
        if v != "1" {
            args.extend(["-v", &v]);
        }
        let (code, out, err) = pipeweave(&args);
        assert_eq!((code, err.as_str()), (0, ""), "{}", shipped.name);
        // Each schedule has its rows, or a line with the reason it did not run; DualPipeV and
        // its twin plugin are one.
        let shown =
            ALL[..10]
                .iter()
                .chain(&["chimera", "dualpipe", "dualpipev = plugin:dualpipev"]);
        for s in shown {
            assert!(
                out.lines().any(|l| l.starts_with(&format!("{s} ")))
                    || out.contains(&format!("\n{s}: not run: ")),
                "{}: {s}",
                shipped.name
            );
        }
        insta::assert_snapshot!(format!("compare_every_schedule_{}", shipped.name), out);
    }
}

#[test]
fn compare_keeps_schedules_whose_requirements_fail() {
    let (code, out, err) = pipeweave(&[
        "compare",
        "1f1b",
        "dualpipev",
        "dualpipe",
        "--spec",
        "unit",
        "-m",
        "6",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(
        out.contains("dualpipev: not run: DualPipeV needs M ≥ 2P micro-batches (with P = 4, M = 6")
    );
    assert!(out.contains("dualpipe: not run: dualpipe needs at least twice as many"));
    insta::assert_snapshot!(out);
}

#[test]
fn compare_fails_when_nothing_runs() {
    let (code, out, err) = pipeweave(&["compare", "dualpipe", "--spec", "unit", "-m", "2"]);
    assert_eq!(code, 1);
    assert!(out.contains("not run"));
    assert_eq!(err, "error: none of the schedules could be simulated\n");
}

#[test]
fn compare_usage_errors() {
    let (code, _, err) = pipeweave(&["compare", "1f1b", "no-such-schedule"]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "error: no schedule, plugin or plan file named `no-such-schedule`\n"
    );
    let (code, _, err) = pipeweave(&["compare", "1f1b", "dualpipe", "--set", "bogus=1"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("none of the schedules has a parameter `bogus`"),
        "{err}"
    );
}

#[test]
fn compare_gives_set_only_to_schedules_that_declare_it() {
    let (code, out, err) = pipeweave(&[
        "compare",
        "1f1b",
        "dualpipe",
        "--spec",
        "unit",
        "--set",
        "overlap=false",
        "--format",
        "json",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    let v = json(&out);
    let rows = v["rows"].as_array().expect("rows");
    assert!(rows.iter().all(|r| r.get("figures").is_some()));
    assert_eq!(rows[1]["traits"]["overlap"], false);
}

#[test]
fn recommend_on_the_unit_spec() {
    let (code, out, err) = pipeweave(&["recommend", "--spec", "unit"]);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out);
}

#[test]
fn recommend_without_spec_says_it_used_the_default() {
    let (code, out, err) = pipeweave(&["recommend"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(out.starts_with(
        "(no --spec: the built-in default spec)\nrecommendation for spec dense-70b-h100-pp8:"
    ));
    assert!(out.contains("\nchoice "));
}

#[test]
fn recommend_renders_a_bad_spec() {
    let (code, out, err) =
        pipeweave(&["recommend", "--spec", "tests/fixtures/specs/bad-spec.toml"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.contains("bad-spec.toml:20:1"), "{err}");
}
