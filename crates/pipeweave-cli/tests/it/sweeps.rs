//! `sweep` over any parameter: the ranks at a fixed GPU count, a fixed data parallelism or a fixed
//! global batch, stages per rank, a declared parameter of a schedule file, a bool; titles that
//! name the spec, P and M; usage errors for names and values the schedules do not take.

use crate::draw::{pipeweave, read, scratch};
use std::path::Path;

/// ZB-H1 with at most `lag` weight gradients deferred per rank: 1F1B's bubble at 0, ZB-H1's from
/// P − 1 on.
const LAGGED: &str = r#"doc "ZB-H1 with at most lag weight gradients deferred per rank"
param lag: int in 0..=3 = 0 "weight gradients deferred to the end, at most, per rank"
stages P
place loop
program {
  let warmup = min(P - 1 - r, M)
  let d = min(r, lag)
  repeat warmup { F }
  for i in 0..M - warmup {
    F I
    if i >= d { W }
  }
  for i in M - warmup..M {
    I
    if i >= d { W }
  }
  repeat min(d, M) { W }
}
"#;

/// `pipeweave ARGS`'s exit code and standard output, standard error marked with `!`.
fn run(dir: &Path, args: &[&str]) -> String {
    let (code, out, err) = pipeweave(dir, args);
    let mut text = format!("$ pipeweave {}\nexit {code}\n{out}", args.join(" "));
    for line in err.lines() {
        text.push_str(&format!("! {line}\n"));
    }
    text
}

/// Over the ranks on DeepSeek-V3's spec: by default the 2,048 GPUs stay and dp follows P; with
/// `--keep-dp` dp 128 stays and the GPUs follow; with `--global-batch` (no `-m`) the 15,360
/// sequences stay and M follows P (60 at P = 8, 240 at P = 32). Each title says which.
#[test]
fn over_the_ranks_the_gpus_dp_or_the_global_batch_stay() {
    let dir = scratch("sweep-ranks");
    let base = [
        "sweep",
        "1f1b",
        "--spec",
        "deepseek-v3-h800-pp16-ep64",
        "--over",
        "ranks=8,16,32",
        "--metric",
        "step-time",
    ];
    let mut text = String::new();
    for extra in [
        &["-m", "64"][..],
        &["-m", "64", "--keep-dp"],
        &["--global-batch"],
        &["--global-batch", "--keep-dp", "--svg", "kept.svg"],
    ] {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        text.push_str(&run(&dir, &args));
    }
    insta::assert_snapshot!(text);
    let svg = read(&dir.join("kept.svg"));
    assert!(svg.contains(
        "step time against ranks: spec deepseek-v3-h800-pp16-ep64, dp kept (the GPUs follow P), \
         M follows P (the global batch kept)"
    ));
}

/// The step times of a sweep over the ranks on DeepSeek-V3's spec at M = 64, as JSON, with `extra`.
fn step_times(dir: &Path, extra: &[&str]) -> Vec<f64> {
    let mut args = vec![
        "sweep",
        "1f1b",
        "--spec",
        "deepseek-v3-h800-pp16-ep64",
        "--over",
        "ranks=8,16,32",
        "-m",
        "64",
        "--metric",
        "step-time",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = pipeweave(dir, &args);
    assert_eq!((code, err.as_str()), (0, ""), "{args:?}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("the sweep is JSON");
    doc["series"][0]["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| p["value"].as_f64().expect("a step time"))
        .collect()
}

/// The cost model prices the data parallelism (the gradient reduction over dp replicas and the
/// optimizer on its ZeRO shard), so keeping dp instead of the GPUs gives another step time
/// wherever P is not the spec's: at P = 8 dp 128 (kept) instead of 256 reduces over half the
/// replicas and is faster; at P = 32 dp 128 (kept) instead of 64 is not the same step either. At
/// the spec's own P = 16 both rules give the spec itself.
#[test]
fn keeping_dp_changes_the_step_time_where_p_changes() {
    let dir = scratch("sweep-keep-dp");
    let gpus = step_times(&dir, &[]);
    let dp = step_times(&dir, &["--keep-dp"]);
    assert_eq!(gpus[1], dp[1], "P = 16 is the spec's own shape");
    assert!(
        dp[0] < gpus[0],
        "P = 8: dp 128 {} vs dp 256 {}",
        dp[0],
        gpus[0]
    );
    assert_ne!(dp[2], gpus[2], "P = 32: dp 128 vs dp 64");
}

/// Over micro-batches at a fixed global batch the micro-batch size follows M; a size that is not
/// whole is a gap with the reason.
#[test]
fn over_the_microbatches_at_a_fixed_global_batch_the_size_follows() {
    let dir = scratch("sweep-global");
    let text = run(
        &dir,
        &[
            "sweep",
            "1f1b",
            "--spec",
            "deepseek-v3-h800-pp16-ep64",
            "-p",
            "8",
            "--over",
            "m=30,60,61",
            "--global-batch",
            "--metric",
            "step-time",
            "--format",
            "csv",
        ],
    );
    insta::assert_snapshot!(text);
}

/// Stages per rank (`v`, `-v`), a declared int of a schedule file, and a bool of the library's,
/// each swept by its name; a schedule without the parameter has gaps with the reason.
#[test]
fn any_declared_parameter_is_swept_by_its_name() {
    let dir = scratch("sweep-params");
    std::fs::write(dir.join("lagged.weave"), LAGGED).expect("schedule written");
    let mut text = String::new();
    for args in [
        &[
            "sweep",
            "interleaved-1f1b",
            "1f1b",
            "-p",
            "4",
            "-m",
            "8",
            "--over",
            "stages_per_rank=1..4",
        ][..],
        &[
            "sweep",
            "lagged.weave",
            "-p",
            "4",
            "-m",
            "8",
            "--over",
            "lag=0..3",
            "--svg",
            "lag.svg",
        ],
        &[
            "sweep",
            "dualpipev",
            "-p",
            "4",
            "-m",
            "8",
            "--over",
            "overlap=true,false",
            "--metric",
            "step-time",
            "--svg",
            "overlap.svg",
        ],
    ] {
        text.push_str(&run(&dir, args));
    }
    insta::assert_snapshot!(text);
    // A bool has one place per value on the x axis, labelled with it.
    let svg = read(&dir.join("overlap.svg"));
    assert!(
        svg.contains(">true</text>") && svg.contains(">false</text>"),
        "{svg}"
    );
    assert!(read(&dir.join("lag.svg")).contains("bubble fraction against lag: P = 4, M = 8"));
}

/// Names no schedule declares and values their types do not take are usage errors (exit 2) that
/// say what can be swept or what the parameter takes.
#[test]
fn unknown_names_and_bad_values_are_usage_errors() {
    let dir = scratch("sweep-usage");
    std::fs::write(dir.join("lagged.weave"), LAGGED).expect("schedule written");
    let mut text = String::new();
    for args in [
        &[
            "sweep",
            "lagged.weave",
            "1f1b",
            "-p",
            "4",
            "-m",
            "8",
            "--over",
            "lags=0..3",
        ][..],
        &[
            "sweep",
            "lagged.weave",
            "-p",
            "4",
            "-m",
            "8",
            "--over",
            "lag=0..4",
        ],
        &[
            "sweep",
            "lagged.weave",
            "-p",
            "4",
            "-m",
            "8",
            "--over",
            "lag=x",
        ],
        &[
            "sweep",
            "dualpipev",
            "-p",
            "4",
            "-m",
            "8",
            "--over",
            "overlap=yes",
        ],
        &["sweep", "1f1b", "-p", "4", "-m", "8", "--over", "v=1,2"],
        &["sweep", "1f1b", "-p", "4", "--over", "m=4..x"],
        &["sweep", "1f1b", "-p", "4", "--over", "m 4"],
    ] {
        let (code, _, _) = pipeweave(&dir, args);
        assert_eq!(code, 2, "{args:?}");
        text.push_str(&run(&dir, args));
    }
    insta::assert_snapshot!(text);
}
