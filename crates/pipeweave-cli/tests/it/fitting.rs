//! One rule for specs on every command: each command that takes `--spec` fits it to the plan's
//! shape (P, M, the cut of the layers into the plan's stages) and says so in a note, or with
//! `--strict-spec` refuses, pointing at the spec's keys; `--keep-dp` and `--global-batch` change
//! what stays.

use crate::draw::{pipeweave, read, scratch};
use std::path::Path;

/// Runs every command on `args` (a plan, its parameters and the spec's flags) in `dir` and writes
/// what each printed: its exit code, standard output (the first `lines` lines and the last, where
/// `compare` puts its notes) and standard error.
fn transcript(dir: &Path, extra: &[&str], lines: usize) -> String {
    let commands: [&[&str]; 7] = [
        &["simulate", "zb-v"],
        &["show", "zb-v", "--width", "60"],
        &["export", "zb-v", "--to", "json", "-o", "plan.json"],
        &["compare", "zb-v"],
        &["render", "zb-v", "--svg", "zb-v.svg"],
        &["sweep", "zb-v", "--over", "m=4,8", "--metric", "step-time"],
        &["report", "zb-v", "--over", "m=4", "-o", "report.html"],
    ];
    let mut text = String::new();
    for command in commands {
        let args: Vec<&str> = command.iter().chain(extra).copied().collect();
        let (code, out, err) = pipeweave(dir, &args);
        text.push_str(&format!("$ pipeweave {}\nexit {code}\n", args.join(" ")));
        let out: Vec<&str> = out.lines().collect();
        for line in out.iter().take(lines) {
            text.push_str(&format!("  {line}\n"));
        }
        if out.len() > lines + 1 {
            text.push_str(&format!("  … {} lines\n", out.len() - lines - 1));
        }
        if let Some(last) = out.get(lines.max(out.len().saturating_sub(1))) {
            text.push_str(&format!("  {last}\n"));
        }
        for line in err.lines() {
            text.push_str(&format!("! {line}\n"));
        }
    }
    text
}

/// ZB-V at P = 2, M = 4 on the unit spec (P = 4, one stage per rank, M = 8): every command fits
/// the spec (P 2 with dp 2 on its 4 GPUs, 4 parts, 4 micro-batches) and says what it fitted.
#[test]
fn every_command_fits_the_spec_and_says_so() {
    let dir = scratch("fits");
    let text = transcript(&dir, &["-p", "2", "-m", "4", "--spec", "unit"], 12);
    insta::assert_snapshot!(text);
    let plan: serde_json::Value =
        serde_json::from_str(&read(&dir.join("plan.json"))).expect("the plan is JSON");
    assert!(
        plan["timeline"].is_object(),
        "the export carries its timeline"
    );
    assert!(read(&dir.join("report.html")).contains("pp 2 instead of the spec&apos;s 4"));
}

/// With `--strict-spec` the same commands refuse the plan: the one-plan commands with the spec's
/// keys, `compare` and `sweep` in the row or the point, as any schedule that cannot run.
#[test]
fn strict_spec_refuses_on_every_command() {
    let dir = scratch("strict");
    let text = transcript(
        &dir,
        &["-p", "2", "-m", "4", "--spec", "unit", "--strict-spec"],
        12,
    );
    insta::assert_snapshot!(text);
    assert!(!dir.join("plan.json").exists());
    assert!(!dir.join("zb-v.svg").exists());
}

/// The README's example: DualPipe at P = 8, M = 20 on DeepSeek-V3's spec (P = 16, M = 120).
#[test]
fn the_readme_export_on_deepseek_v3_runs() {
    let dir = scratch("readme-export");
    let args = [
        "export",
        "dualpipe",
        "-p",
        "8",
        "-m",
        "20",
        "--to",
        "json",
        "-o",
        "dualpipe.json",
        "--spec",
        "deepseek-v3-h800-pp16-ep64",
    ];
    let (code, out, err) = pipeweave(&dir, &args);
    assert_eq!((code, out.as_str()), (0, ""));
    insta::assert_snapshot!(err, @"note: spec deepseek-v3-h800-pp16-ep64 fitted to plugin:dualpipe: pp 8 instead of the spec's 16 (dp 256 instead of 128); the model cut into 8 parts (1 per rank): 7–8 layers each; 20 micro-batches instead of the spec's 120");
    let plan: serde_json::Value =
        serde_json::from_str(&read(&dir.join("dualpipe.json"))).expect("the plan is JSON");
    assert!(plan["timeline"].is_object());
}

/// What stays when P changes: by default the GPUs (dp follows P), with `--keep-dp` the data
/// parallelism (the GPUs follow); with `--global-batch` the micro-batch size follows M, and M
/// follows P where `-m` leaves it out.
#[test]
fn keep_dp_and_global_batch_say_what_they_kept() {
    let dir = scratch("keep");
    let spec = ["--spec", "deepseek-v3-h800-pp16-ep64"];
    let mut text = String::new();
    for extra in [
        &["-p", "8", "-m", "20"][..],
        &["-p", "8", "-m", "20", "--keep-dp"],
        &["-p", "8", "-m", "20", "--global-batch"],
        &["-p", "8", "--global-batch"],
        &["-p", "8", "-m", "7", "--global-batch"],
    ] {
        let args: Vec<&str> = ["simulate", "1f1b"]
            .iter()
            .chain(extra)
            .chain(&spec)
            .copied()
            .collect();
        let (code, out, err) = pipeweave(&dir, &args);
        text.push_str(&format!("$ pipeweave {}\nexit {code}\n", args.join(" ")));
        for line in out.lines().filter(|l| l.starts_with("spec ")) {
            text.push_str(&format!("  {line}\n"));
        }
        for line in err.lines() {
            text.push_str(&format!("! {line}\n"));
        }
    }
    insta::assert_snapshot!(text);
}

/// The rule's flags need a spec where the command has none by default, and `--strict-spec` fits
/// nothing, so it takes neither of the others.
#[test]
fn the_rule_without_a_spec_is_a_usage_error() {
    let dir = scratch("rule-usage");
    for args in [
        &["simulate", "1f1b", "-p", "2", "-m", "4", "--keep-dp"][..],
        &[
            "render",
            "1f1b",
            "-p",
            "2",
            "-m",
            "4",
            "--strict-spec",
            "--svg",
            "x.svg",
        ],
        &[
            "sweep",
            "1f1b",
            "-p",
            "2",
            "--over",
            "m=2,4",
            "--global-batch",
        ],
        &[
            "simulate",
            "1f1b",
            "--spec",
            "unit",
            "--strict-spec",
            "--keep-dp",
        ],
    ] {
        let (code, _, err) = pipeweave(&dir, args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("--"), "{args:?}: {err}");
    }
    // compare has a spec by default: the built-in one.
    let (code, out, _) = pipeweave(&dir, &["compare", "1f1b", "-p", "4", "--strict-spec"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("the plan has 4 ranks but the spec has a pipeline of 8 ranks"));
}
