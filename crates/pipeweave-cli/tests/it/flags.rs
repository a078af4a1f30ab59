//! No flag is accepted and ignored: every flag each command's `--help` lists has a row in [`ROWS`]
//! that runs the command without it and with it, and what the user sees (exit code, standard
//! output and error, the files written) must differ. A flag added to a command without a row here,
//! or one that stops doing anything, fails the test.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every command with its own flags (`--help` and `--max-diagnostics` are everyone's).
const COMMANDS: [&str; 16] = [
    "validate",
    "simulate",
    "show",
    "list",
    "check",
    "compile",
    "render",
    "sweep",
    "report",
    "compare",
    "recommend",
    "synthesize",
    "export",
    "convert",
    "calibrate",
    "diff",
];

/// (command, flag as `--help` names it, the run without it, what adding it adds). Paths are
/// relative to the test's folder: `folder/` holds `mine.weave` (one activation per rank),
/// `plugins/` the plugin `flagzz`, `broken/` a plugin that cannot load, `plan.txt` an actions
/// plan, `two.actions` one of two pipelines, `out/` where files are written, `r0.json` and
/// `r1.json` the hand-made traces of 1F1B (P = 2, M = 4) and `costs.toml` their calibration.
type Row = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

#[rustfmt::skip]
const ROWS: &[Row] = &[
    // The parameters every command that builds a plan takes, on `validate` and its kin.
    ("validate", "--ranks", &["validate", "1f1b", "-m", "4"], &["-p", "2"]),
    ("validate", "--microbatches", &["validate", "1f1b", "-p", "2"], &["-m", "4"]),
    ("validate", "--stages-per-rank", SCHEDULE_V, &["-v", "3"]),
    ("validate", "--set", &["validate", "dualpipe", "-p", "2", "-m", "4"], &["--set", "weight_split=false"]),
    ("validate", "--pipelines", &["validate", "two.actions"], &["--pipelines", "1"]),
    ("validate", "--plan-format", &["validate", "plan.txt"], &["--plan-format", "json"]),
    ("validate", "--forward-only", &["validate", "1f1b", "-p", "2", "-m", "4"], &["--forward-only"]),
    ("validate", "--plugin-dir", &["validate", "flagzz", "-p", "2", "-m", "4"], &["--plugin-dir", "plugins"]),
    ("validate", "--schedule-dir", &["validate", "mine", "-p", "2", "-m", "4"], &["--schedule-dir", "folder"]),
    ("simulate", "--ranks", &["simulate", "1f1b", "-m", "4"], &["-p", "2"]),
    ("simulate", "--microbatches", &["simulate", "1f1b", "-p", "2"], &["-m", "4"]),
    ("simulate", "--stages-per-rank", SIMULATE_V, &["-v", "3"]),
    ("simulate", "--set", &["simulate", "dualpipe", "-p", "2", "-m", "4", "--costs", "pair=2.5"], &["--set", "overlap=false"]),
    ("simulate", "--pipelines", &["simulate", "two.actions"], &["--pipelines", "1"]),
    ("simulate", "--plan-format", &["simulate", "plan.txt"], &["--plan-format", "json"]),
    ("simulate", "--forward-only", &["simulate", "1f1b", "-p", "2", "-m", "4"], &["--forward-only"]),
    ("simulate", "--plugin-dir", &["simulate", "flagzz", "-p", "2", "-m", "4"], &["--plugin-dir", "plugins"]),
    ("simulate", "--schedule-dir", &["simulate", "mine", "-p", "2", "-m", "4"], &["--schedule-dir", "folder"]),
    ("simulate", "--costs", &["simulate", "1f1b", "-p", "2", "-m", "4"], &["--costs", "F=2"]),
    ("simulate", "--spec", &["simulate", "1f1b", "-p", "2", "-m", "4"], &["--spec", "unit"]),
    ("simulate", "--strict-spec", ON_SPEC, &["--strict-spec"]),
    ("simulate", "--keep-dp", ON_SPEC, &["--keep-dp"]),
    ("simulate", "--global-batch", &["simulate", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8"], &["--global-batch"]),
    ("simulate", "--split", &["simulate", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8"], &["--split", "19,21,21,19"]),
    ("simulate", "--recompute", &["simulate", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8"], &["--recompute", "full,none,none,none"]),
    ("simulate", "--format", &["simulate", "1f1b", "-p", "2", "-m", "4"], &["--format", "json"]),
    ("simulate", "--costs-from", &["simulate", "1f1b", "-p", "2", "-m", "4"], &["--costs-from", "costs.toml"]),
    ("show", "--costs-from", &["show", "1f1b", "-p", "2", "-m", "4"], &["--costs-from", "costs.toml"]),
    ("export", "--costs-from", &["export", "1f1b", "-p", "2", "-m", "4", "--to", "json"], &["--costs-from", "costs.toml"]),
    ("render", "--costs-from", RENDER, &["--costs-from", "costs.toml"]),
    ("sweep", "--costs-from", SWEEP, &["--costs-from", "costs.toml"]),
    ("report", "--costs-from", REPORT, &["--costs-from", "costs.toml"]),
    ("synthesize", "--costs-from", SYNTH, &["--costs-from", "costs.toml"]),
    ("compare", "--costs-from", &["compare", "1f1b", "-p", "2", "-m", "4"], &["--costs-from", "costs.toml"]),
    // Calibration of the hand-made traces.
    ("calibrate", "--plan", CALIBRATE, &["--plan", "plan.txt"]),
    ("calibrate", "--ranks", &["calibrate", "r0.json", "r1.json", "-o", "-", "--plan", "1f1b", "-m", "4"], &["-p", "2"]),
    ("calibrate", "--microbatches", &["calibrate", "r0.json", "r1.json", "-o", "-", "--plan", "1f1b", "-p", "2"], &["-m", "4"]),
    ("calibrate", "--output", &["calibrate", "r0.json", "r1.json"], &["-o", "out/costs.toml"]),
    ("diff", "--ranks", &["diff", "1f1b", "r0.json", "r1.json", "-m", "4"], &["-p", "2"]),
    ("diff", "--microbatches", &["diff", "1f1b", "r0.json", "r1.json", "-p", "2"], &["-m", "4"]),
    ("diff", "--costs-from", DIFF, &["--costs-from", "costs.toml"]),
    ("diff", "--format", DIFF, &["--format", "json"]),
    ("diff", "--svg", DIFF, &["--svg", "out/d.svg"]),
    ("show", "--ranks", &["show", "1f1b", "-m", "4"], &["-p", "2"]),
    ("show", "--microbatches", &["show", "1f1b", "-p", "2"], &["-m", "4"]),
    ("show", "--stages-per-rank", &["show", "interleaved-1f1b", "-p", "2", "-m", "4"], &["-v", "3"]),
    ("show", "--set", &["show", "dualpipe", "-p", "2", "-m", "4"], &["--set", "overlap=false"]),
    ("show", "--pipelines", &["show", "two.actions"], &["--pipelines", "1"]),
    ("show", "--plan-format", &["show", "plan.txt"], &["--plan-format", "json"]),
    ("show", "--forward-only", &["show", "1f1b", "-p", "2", "-m", "4"], &["--forward-only"]),
    ("show", "--plugin-dir", &["show", "flagzz", "-p", "2", "-m", "4"], &["--plugin-dir", "plugins"]),
    ("show", "--schedule-dir", &["show", "mine", "-p", "2", "-m", "4"], &["--schedule-dir", "folder"]),
    ("show", "--costs", &["show", "1f1b", "-p", "2", "-m", "4"], &["--costs", "F=2"]),
    ("show", "--spec", &["show", "1f1b", "-p", "2", "-m", "4"], &["--spec", "unit"]),
    ("show", "--strict-spec", &["show", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8"], &["--strict-spec"]),
    ("show", "--keep-dp", &["show", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8"], &["--keep-dp"]),
    ("show", "--global-batch", &["show", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8"], &["--global-batch"]),
    ("show", "--split", &["show", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8"], &["--split", "19,21,21,19"]),
    ("show", "--recompute", &["show", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8"], &["--recompute", "full,none,none,none"]),
    ("show", "--rank-range", &["show", "1f1b", "-p", "4", "-m", "4"], &["--rank-range", "1..2"]),
    ("show", "--from", &["show", "1f1b", "-p", "2", "-m", "4"], &["--from", "3"]),
    ("show", "--to", &["show", "1f1b", "-p", "2", "-m", "4"], &["--to", "3"]),
    ("show", "--width", &["show", "1f1b", "-p", "2", "-m", "4"], &["--width", "60"]),
    ("list", "--plugin-dir", &["list"], &["--plugin-dir", "plugins"]),
    ("list", "--schedule-dir", &["list"], &["--schedule-dir", "folder"]),
    ("list", "--format", &["list"], &["--format", "json"]),
    ("check", "--schedule-dir", &["check", "mine"], &["--schedule-dir", "folder"]),
    ("compile", "--ranks", &["compile", "1f1b", "-m", "4"], &["-p", "2"]),
    ("compile", "--microbatches", &["compile", "1f1b", "-p", "2"], &["-m", "4"]),
    ("compile", "--stages-per-rank", &["compile", "interleaved-1f1b", "-p", "2", "-m", "4"], &["-v", "3"]),
    ("compile", "--set", &["compile", "dualpipe", "-p", "2", "-m", "4", "--to", "json"], &["--set", "overlap=false"]),
    ("compile", "--pipelines", &["compile", "two.actions"], &["--pipelines", "1"]),
    ("compile", "--plan-format", &["compile", "plan.txt"], &["--plan-format", "json"]),
    ("compile", "--forward-only", &["compile", "1f1b", "-p", "2", "-m", "4"], &["--forward-only"]),
    ("compile", "--plugin-dir", &["compile", "flagzz", "-p", "2", "-m", "4"], &["--plugin-dir", "plugins"]),
    ("compile", "--schedule-dir", &["compile", "mine", "-p", "2", "-m", "4"], &["--schedule-dir", "folder"]),
    ("compile", "--to", &["compile", "1f1b", "-p", "2", "-m", "4"], &["--to", "json"]),
    ("compile", "--output", &["compile", "1f1b", "-p", "2", "-m", "4"], &["-o", "out/plan.txt"]),
    ("convert", "--ranks", &["convert", "1f1b", "-m", "4", "--to", "json"], &["-p", "2"]),
    ("convert", "--microbatches", &["convert", "1f1b", "-p", "2", "--to", "json"], &["-m", "4"]),
    ("convert", "--stages-per-rank", &["convert", "interleaved-1f1b", "-p", "2", "-m", "4", "--to", "json"], &["-v", "3"]),
    ("convert", "--set", &["convert", "dualpipe", "-p", "2", "-m", "4", "--to", "json"], &["--set", "overlap=false"]),
    ("convert", "--pipelines", &["convert", "two.actions", "--to", "json"], &["--pipelines", "1"]),
    ("convert", "--plan-format", &["convert", "plan.txt", "--to", "json"], &["--plan-format", "json"]),
    ("convert", "--forward-only", &["convert", "1f1b", "-p", "2", "-m", "4", "--to", "json"], &["--forward-only"]),
    ("convert", "--plugin-dir", &["convert", "flagzz", "-p", "2", "-m", "4", "--to", "json"], &["--plugin-dir", "plugins"]),
    ("convert", "--schedule-dir", &["convert", "mine", "-p", "2", "-m", "4", "--to", "json"], &["--schedule-dir", "folder"]),
    ("convert", "--to", &["convert", "1f1b", "-p", "2", "-m", "4", "--to", "actions"], &["--to", "json"]),
    ("convert", "--output", &["convert", "1f1b", "-p", "2", "-m", "4", "--to", "json"], &["-o", "out/plan.json"]),
    ("export", "--ranks", &["export", "1f1b", "-m", "4", "--to", "json"], &["-p", "2"]),
    ("export", "--microbatches", &["export", "1f1b", "-p", "2", "--to", "json"], &["-m", "4"]),
    ("export", "--stages-per-rank", &["export", "interleaved-1f1b", "-p", "2", "-m", "4", "--to", "json"], &["-v", "3"]),
    ("export", "--set", &["export", "dualpipe", "-p", "2", "-m", "4", "--to", "json"], &["--set", "overlap=false"]),
    ("export", "--pipelines", &["export", "two.actions", "--to", "json"], &["--pipelines", "1"]),
    ("export", "--plan-format", &["export", "plan.txt", "--to", "json"], &["--plan-format", "json"]),
    ("export", "--forward-only", &["export", "1f1b", "-p", "2", "-m", "4", "--to", "json"], &["--forward-only"]),
    ("export", "--plugin-dir", &["export", "flagzz", "-p", "2", "-m", "4", "--to", "json"], &["--plugin-dir", "plugins"]),
    ("export", "--schedule-dir", &["export", "mine", "-p", "2", "-m", "4", "--to", "json"], &["--schedule-dir", "folder"]),
    ("export", "--to", &["export", "1f1b", "-p", "2", "-m", "4", "--to", "actions"], &["--to", "chrome-trace"]),
    ("export", "--costs", &["export", "1f1b", "-p", "2", "-m", "4", "--to", "json"], &["--costs", "F=2"]),
    ("export", "--spec", &["export", "1f1b", "-p", "2", "-m", "4", "--to", "json"], &["--spec", "unit"]),
    ("export", "--strict-spec", &["export", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8", "--to", "json"], &["--strict-spec"]),
    ("export", "--keep-dp", &["export", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8", "--to", "json"], &["--keep-dp"]),
    ("export", "--global-batch", &["export", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8", "--to", "json"], &["--global-batch"]),
    ("export", "--split", &["export", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8", "--to", "json"], &["--split", "19,21,21,19"]),
    ("export", "--recompute", &["export", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8", "--to", "json"], &["--recompute", "full,none,none,none"]),
    ("export", "--output", &["export", "1f1b", "-p", "2", "-m", "4", "--to", "json"], &["-o", "out/plan.json"]),
    // Several schedules: compare, render, sweep, report.
    ("compare", "--spec", &["compare", "1f1b", "-p", "2", "-m", "4"], &["--spec", "unit"]),
    ("compare", "--strict-spec", &["compare", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8"], &["--strict-spec"]),
    ("compare", "--keep-dp", &["compare", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8"], &["--keep-dp"]),
    ("compare", "--global-batch", &["compare", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8"], &["--global-batch"]),
    ("compare", "--split", &["compare", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8"], &["--split", "19,21,21,19"]),
    ("compare", "--recompute", &["compare", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8"], &["--recompute", "full,none,none,none"]),
    ("compare", "--ranks", &["compare", "1f1b", "-m", "8"], &["-p", "2"]),
    ("compare", "--microbatches", &["compare", "1f1b", "-p", "2"], &["-m", "4"]),
    ("compare", "--stages-per-rank", &["compare", "interleaved-1f1b", "-p", "2", "-m", "4"], &["-v", "3"]),
    ("compare", "--set", &["compare", "dualpipe", "-p", "2", "-m", "4"], &["--set", "overlap=false"]),
    ("compare", "--pipelines", &["compare", "two.actions"], &["--pipelines", "1"]),
    ("compare", "--plan-format", &["compare", "plan.txt"], &["--plan-format", "json"]),
    ("compare", "--forward-only", &["compare", "1f1b", "-p", "2", "-m", "4"], &["--forward-only"]),
    ("compare", "--plugin-dir", &["compare", "flagzz", "-p", "2", "-m", "4"], &["--plugin-dir", "plugins"]),
    ("compare", "--schedule-dir", &["compare", "mine", "-p", "2", "-m", "4"], &["--schedule-dir", "folder"]),
    ("compare", "--units", &["compare", "1f1b", "-p", "2", "-m", "4"], &["--units"]),
    ("compare", "--costs", &["compare", "1f1b", "-p", "2", "-m", "4"], &["--costs", "F=2"]),
    ("compare", "--format", &["compare", "1f1b", "-p", "2", "-m", "4"], &["--format", "csv"]),
    ("render", "--costs", RENDER, &["--costs", "F=2"]),
    ("render", "--spec", RENDER, &["--spec", "unit"]),
    ("render", "--strict-spec", &["render", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8", "--svg", "out/t.svg"], &["--strict-spec"]),
    ("render", "--keep-dp", &["render", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8", "--svg", "out/t.svg"], &["--keep-dp"]),
    ("render", "--global-batch", &["render", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8", "--svg", "out/t.svg"], &["--global-batch"]),
    ("render", "--split", &["render", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8", "--svg", "out/t.svg"], &["--split", "19,21,21,19"]),
    ("render", "--recompute", &["render", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8", "--svg", "out/t.svg"], &["--recompute", "full,none,none,none"]),
    ("render", "--ranks", &["render", "1f1b", "-m", "4", "--svg", "out/t.svg"], &["-p", "2"]),
    ("render", "--microbatches", &["render", "1f1b", "-p", "2", "--svg", "out/t.svg"], &["-m", "4"]),
    ("render", "--stages-per-rank", &["render", "interleaved-1f1b", "-p", "2", "-m", "4", "--svg", "out/t.svg"], &["-v", "3"]),
    ("render", "--set", &["render", "dualpipe", "-p", "2", "-m", "4", "--svg", "out/t.svg"], &["--set", "overlap=false"]),
    ("render", "--pipelines", &["render", "two.actions", "--svg", "out/t.svg"], &["--pipelines", "1"]),
    ("render", "--plan-format", &["render", "plan.txt", "--svg", "out/t.svg"], &["--plan-format", "json"]),
    ("render", "--forward-only", RENDER, &["--forward-only"]),
    ("render", "--plugin-dir", &["render", "flagzz", "-p", "2", "-m", "4", "--svg", "out/t.svg"], &["--plugin-dir", "plugins"]),
    ("render", "--schedule-dir", &["render", "mine", "-p", "2", "-m", "4", "--svg", "out/t.svg"], &["--schedule-dir", "folder"]),
    ("render", "--svg", &["render", "1f1b", "-p", "2", "-m", "4", "--svg", "-"], &["--svg", "out/t.svg"]),
    ("render", "--comms", RENDER, &["--comms"]),
    ("render", "--from", RENDER, &["--from", "3"]),
    ("render", "--to", RENDER, &["--to", "3"]),
    ("sweep", "--costs", &["sweep", "1f1b", "-p", "2", "--over", "m=4,8", "--metric", "step-time"], &["--costs", "F=2"]),
    ("sweep", "--spec", SWEEP, &["--spec", "unit"]),
    ("sweep", "--strict-spec", &["sweep", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8", "--over", "m=8,16"], &["--strict-spec"]),
    ("sweep", "--keep-dp", &["sweep", "1f1b", "--spec", "dense-70b-h100-pp8", "--over", "p=4,8"], &["--keep-dp"]),
    ("sweep", "--global-batch", &["sweep", "1f1b", "--spec", "dense-70b-h100-pp8", "--over", "p=4,8"], &["--global-batch"]),
    ("sweep", "--split", &["sweep", "1f1b", "--spec", "dense-70b-h100-pp8", "--over", "p=4,8"], &["--split", "19,21,21,19"]),
    ("sweep", "--recompute", &["sweep", "1f1b", "--spec", "dense-70b-h100-pp8", "--over", "p=4,8"], &["--recompute", "full"]),
    ("sweep", "--ranks", &["sweep", "1f1b", "--over", "m=2,4"], &["-p", "2"]),
    ("sweep", "--microbatches", &["sweep", "1f1b", "--over", "p=2,4"], &["-m", "4"]),
    ("sweep", "--stages-per-rank", &["sweep", "interleaved-1f1b", "-p", "2", "--over", "m=4,8"], &["-v", "3"]),
    ("sweep", "--set", &["sweep", "dualpipe", "-p", "2", "--over", "m=4,8", "--costs", "pair=2.5", "--metric", "step-time"], &["--set", "overlap=false"]),
    ("sweep", "--pipelines", &["sweep", "two.actions", "--over", "m=4,8"], &["--pipelines", "1"]),
    ("sweep", "--plan-format", &["sweep", "plan.txt", "--over", "m=4,8"], &["--plan-format", "json"]),
    ("sweep", "--forward-only", &["sweep", "1f1b", "-p", "2", "--over", "m=4,8", "--metric", "step-time"], &["--forward-only"]),
    ("sweep", "--plugin-dir", &["sweep", "flagzz", "-p", "2", "--over", "m=4,8"], &["--plugin-dir", "plugins"]),
    ("sweep", "--schedule-dir", &["sweep", "mine", "-p", "2", "--over", "m=4,8"], &["--schedule-dir", "folder"]),
    ("sweep", "--over", &["sweep", "1f1b", "-p", "2", "--over", "m=4,8"], &["--over", "m=2,4"]),
    ("sweep", "--metric", SWEEP, &["--metric", "step-time"]),
    ("sweep", "--svg", SWEEP, &["--svg", "out/s.svg"]),
    ("sweep", "--format", SWEEP, &["--format", "csv"]),
    ("report", "--costs", REPORT, &["--costs", "F=2"]),
    ("report", "--spec", REPORT, &["--spec", "unit"]),
    ("report", "--strict-spec", &["report", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8", "-o", "-"], &["--strict-spec"]),
    ("report", "--keep-dp", &["report", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8", "-o", "-"], &["--keep-dp"]),
    ("report", "--global-batch", &["report", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8", "-o", "-"], &["--global-batch"]),
    ("report", "--split", &["report", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8", "-o", "-"], &["--split", "19,21,21,19"]),
    ("report", "--recompute", &["report", "1f1b", "-p", "4", "--spec", "dense-70b-h100-pp8", "-o", "-"], &["--recompute", "full,none,none,none"]),
    ("report", "--ranks", &["report", "1f1b", "-m", "4", "-o", "-"], &["-p", "2"]),
    ("report", "--microbatches", &["report", "1f1b", "-p", "2", "-o", "-"], &["-m", "4"]),
    ("report", "--stages-per-rank", &["report", "interleaved-1f1b", "-p", "2", "-m", "4", "-o", "-"], &["-v", "3"]),
    ("report", "--set", &["report", "dualpipe", "-p", "2", "-m", "4", "-o", "-"], &["--set", "overlap=false"]),
    ("report", "--pipelines", &["report", "two.actions", "-o", "-"], &["--pipelines", "1"]),
    ("report", "--plan-format", &["report", "plan.txt", "-o", "-"], &["--plan-format", "json"]),
    ("report", "--forward-only", REPORT, &["--forward-only"]),
    ("report", "--plugin-dir", &["report", "flagzz", "-p", "2", "-m", "4", "-o", "-"], &["--plugin-dir", "plugins"]),
    ("report", "--schedule-dir", &["report", "mine", "-p", "2", "-m", "4", "-o", "-"], &["--schedule-dir", "folder"]),
    ("report", "--output", &["report", "1f1b", "-p", "2", "-m", "4", "-o", "-"], &["-o", "out/r.html"]),
    ("report", "--over", REPORT, &["--over", "m=2,4"]),
    ("report", "--metric", REPORT, &["--metric", "step-time"]),
    ("report", "--comms", REPORT, &["--comms"]),
    ("report", "--from", REPORT, &["--from", "3"]),
    ("report", "--to", REPORT, &["--to", "3"]),
    // The searches.
    ("recommend", "--spec", &["recommend"], &["--spec", "unit"]),
    ("recommend", "--costs-from", &["recommend"], &["--costs-from", "costs.toml"]),
    ("recommend", "--plugin-dir", &["recommend", "--spec", "unit"], &["--plugin-dir", "broken"]),
    ("recommend", "--schedule-dir", &["recommend", "--spec", "unit"], &["--schedule-dir", "folder"]),
    ("recommend", "--format", &["recommend", "--spec", "unit"], &["--format", "json"]),
    ("recommend", "--split", &["recommend", "--spec", "gpt2-1.3b-p100-32"], &["--split", "even"]),
    ("synthesize", "--ranks", &["synthesize", "-m", "4", "--evaluations", "10"], &["-p", "2"]),
    ("synthesize", "--microbatches", &["synthesize", "-p", "2", "--evaluations", "10"], &["-m", "4"]),
    ("synthesize", "--stages-per-rank", SYNTH, &["-v", "3"]),
    ("synthesize", "--placement", SYNTH, &["--placement", "v"]),
    ("synthesize", "--memory-limit", SYNTH_SPEC, &["--memory-limit", "70"]),
    ("synthesize", "--activations", SYNTH, &["--activations", "1"]),
    ("synthesize", "--library-memory", &["synthesize", "-p", "2", "-m", "4", "--evaluations", "10", "--activations", "1"], &["--library-memory"]),
    ("synthesize", "--format", SYNTH, &["--format", "json"]),
    ("synthesize", "--no-weight-split", SYNTH, &["--no-weight-split"]),
    ("synthesize", "--no-pairs", &["synthesize", "-p", "2", "-m", "4", "--evaluations", "10", "--placement", "bidirectional", "--format", "json"], &["--no-pairs"]),
    ("synthesize", "--time-limit", SYNTH, &["--time-limit", "0s"]),
    ("synthesize", "--evaluations", TIGHT, &["--evaluations", "3"]),
    ("synthesize", "--exact-nodes", SYNTH, &["--exact-nodes", "0"]),
    ("synthesize", "--seed", TIGHT, &["--seed", "7"]),
    ("synthesize", "--output", SYNTH, &["-o", "out/plan.json"]),
    ("synthesize", "--costs", SYNTH, &["--costs", "F=2"]),
    ("synthesize", "--spec", SYNTH, &["--spec", "unit"]),
    ("synthesize", "--strict-spec", SYNTH_SPEC, &["--strict-spec"]),
    ("synthesize", "--keep-dp", &["synthesize", "-p", "4", "--spec", "dense-70b-h100-pp8", "--evaluations", "10", "--format", "json"], &["--keep-dp"]),
    ("synthesize", "--global-batch", SYNTH_SPEC, &["--global-batch"]),
    ("synthesize", "--split", SYNTH_SPEC, &["--split", "19,21,21,19"]),
    ("synthesize", "--recompute", SYNTH_SPEC, &["--recompute", "full"]),
    ("synthesize", "--plugin-dir", SYNTH, &["--plugin-dir", "broken"]),
    ("synthesize", "--schedule-dir", &["synthesize", "-p", "2", "-m", "4", "--evaluations", "10", "--activations", "1", "--library-memory"], &["--schedule-dir", "folder"]),
];

const SCHEDULE_V: &[&str] = &["validate", "interleaved-1f1b", "-p", "2", "-m", "4"];
const CALIBRATE: &[&str] = &["calibrate", "r0.json", "r1.json", "-o", "-"];
const DIFF: &[&str] = &["diff", "1f1b", "r0.json", "r1.json", "-p", "2", "-m", "4"];
const TIGHT: &[&str] = &[
    "synthesize",
    "-p",
    "4",
    "-m",
    "8",
    "--placement",
    "v",
    "--activations",
    "5",
    "--exact-nodes",
    "0",
    "--costs",
    "F=1,I=1.5,W=0.5,transfer=0.25",
    "--format",
    "json",
    "--evaluations",
    "300",
];
const SIMULATE_V: &[&str] = &["simulate", "interleaved-1f1b", "-p", "2", "-m", "4"];
const ON_SPEC: &[&str] = &[
    "simulate",
    "1f1b",
    "-p",
    "4",
    "--spec",
    "dense-70b-h100-pp8",
];
const RENDER: &[&str] = &["render", "1f1b", "-p", "2", "-m", "4", "--svg", "-"];
const SWEEP: &[&str] = &["sweep", "1f1b", "-p", "2", "--over", "m=4,8"];
const REPORT: &[&str] = &["report", "1f1b", "-p", "2", "-m", "4", "-o", "-"];
const SYNTH: &[&str] = &["synthesize", "-p", "2", "-m", "4", "--evaluations", "10"];
const SYNTH_SPEC: &[&str] = &[
    "synthesize",
    "-p",
    "4",
    "--spec",
    "dense-70b-h100-pp8",
    "--evaluations",
    "10",
    "--format",
    "json",
];

/// The flags of `command`'s `--help`, by their long names.
fn flags(command: &str) -> BTreeSet<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args([command, "--help"])
        .output()
        .expect("the pipeweave binary runs");
    let help = String::from_utf8_lossy(&out.stdout);
    help.lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = line
                .strip_prefix('-')
                .filter(|_| line.len() > 3 && line.as_bytes()[2] == b',')
                .map_or(line, |_| line[3..].trim_start());
            let name = line.strip_prefix("--")?;
            let end = name
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .unwrap_or(name.len());
            Some(format!("--{}", &name[..end]))
        })
        .filter(|f| f != "--help" && f != "--max-diagnostics")
        .collect()
}

/// A folder with what the rows read.
fn fixtures() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pipeweave-flags-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for sub in ["folder", "plugins", "broken", "out"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    // One activation per rank: a forward and its backward, micro-batch after micro-batch.
    let mine = "doc \"mine: F and B of one micro-batch at a time\"\nstages P\nplace loop\nprogram {\n  repeat M { F B }\n}\n";
    std::fs::write(dir.join("folder/mine.weave"), mine).unwrap();
    let build = Path::new(env!("CARGO_BIN_EXE_pipeweave")).parent().unwrap();
    let lib = |name: &str| {
        format!(
            "{}{name}{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        )
    };
    let link = |from: &str, to: PathBuf| {
        let target = build.join(lib(from));
        assert!(
            target.is_file(),
            "{}: run `cargo build --workspace`",
            target.display()
        );
        std::os::unix::fs::symlink(target, to).unwrap();
    };
    link(
        "pipeweave_fixture_named_by_file",
        dir.join("plugins").join(lib("pipeweave_plugin_flagzz")),
    );
    link(
        "pipeweave_fixture_garbage",
        dir.join("broken").join(lib("pipeweave_plugin_brokenzz")),
    );
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
    };
    run(&[
        "convert", "1f1b", "-p", "2", "-m", "4", "--to", "actions", "-o", "plan.txt",
    ]);
    run(&[
        "convert",
        "chimera",
        "-p",
        "2",
        "-m",
        "4",
        "--to",
        "actions",
        "-o",
        "two.actions",
    ]);
    let traces =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/traces/1f1b-p2-m4");
    for r in 0..2 {
        std::fs::copy(
            traces.join(format!("rank{r}.json")),
            dir.join(format!("r{r}.json")),
        )
        .unwrap();
    }
    run(&["calibrate", "r0.json", "r1.json", "-o", "costs.toml"]);
    dir
}

/// What the user sees of one run: exit code, standard output and error, and the files written.
type Seen = (Option<i32>, Vec<u8>, Vec<u8>, Vec<(String, Vec<u8>)>);

/// What the user sees of one run in `dir`: exit code, standard output and error, and the files
/// it wrote into `out/` (which is emptied first).
fn seen(dir: &Path, args: &[&str]) -> Seen {
    let out_dir = dir.join("out");
    let _ = std::fs::remove_dir_all(&out_dir);
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(args)
        .current_dir(dir)
        .env_remove("PIPEWEAVE_PLUGIN_PATH")
        .env_remove("PIPEWEAVE_SCHEDULE_PATH")
        .output()
        .expect("the pipeweave binary runs");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&out_dir)
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    // Times the command measures itself are not what a flag changes.
    let stderr = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.starts_with("note: the search took"))
        .collect::<Vec<_>>()
        .join("\n")
        .into_bytes();
    (out.status.code(), out.stdout, stderr, files)
}

#[test]
fn every_flag_of_every_command_changes_what_it_does() {
    // Every flag has a row, and every row names a flag its command has.
    let mut missing = Vec::new();
    for command in COMMANDS {
        for flag in flags(command) {
            if !ROWS.iter().any(|(c, f, _, _)| *c == command && *f == flag) {
                missing.push(format!("{command} {flag}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "flags without a row in ROWS: {missing:?}"
    );
    for (command, flag, _, _) in ROWS {
        assert!(
            flags(command).contains(*flag),
            "`{command}` has no flag {flag}"
        );
    }
    let dir = fixtures();
    let mut ignored = Vec::new();
    for (command, flag, base, with) in ROWS {
        let without = seen(&dir, base);
        let args: Vec<&str> = base.iter().chain(with.iter()).copied().collect();
        if seen(&dir, &args) == without {
            ignored.push(format!("{command} {flag}: {}", args.join(" ")));
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        ignored.is_empty(),
        "flags that changed nothing:\n{}",
        ignored.join("\n")
    );
}
