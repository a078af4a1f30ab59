//! One snapshot per bad actions file under `tests/fixtures/actions/` and per bad compute_comms CSV
//! under `tests/fixtures/pytorch-comms/`.
//!
//! A fixture named `NAME.kN.actions` is read with N pipelines (1 otherwise). A compute_comms fixture
//! holds a valid plan (its compute cells) whose communication is wrong, or cells that do not read.
//! Diagnostics are shown in a plain text form (line:column and the spanned text); the CLI snapshots
//! the rendered form.

use pipeweave_diagnostics::{Diagnostic, FileId, line_col};
use pipeweave_export::{read_actions, read_pytorch_comms};
use std::fmt::Write as _;
use std::path::Path;

fn actions_fixture(path: &Path, source: String) -> datatest_stable::Result<()> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let k = name
        .split('.')
        .find_map(|part| part.strip_prefix('k').and_then(|n| n.parse::<u32>().ok()))
        .unwrap_or(1);
    let text = match read_actions(&source, FileId(0), Some(k)) {
        Ok(_) => {
            return Err(format!("{name} is a bad-input fixture but it reads without error").into());
        }
        Err(diags) => diags
            .iter()
            .map(|d| describe(&source, d))
            .collect::<Vec<_>>()
            .join("\n"),
    };
    insta::with_settings!({
        input_file => path,
        snapshot_suffix => name.trim_end_matches(".actions"),
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!("actions", text);
    });
    Ok(())
}

fn comms_fixture(path: &Path, source: String) -> datatest_stable::Result<()> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let diags = match read_pytorch_comms(&source, FileId(0)) {
        Err(diags) => diags,
        Ok(file) => {
            let problems = pipeweave_check::problems(&file.plan);
            if !problems.is_empty() {
                return Err(format!("{name}: its plan is invalid: {problems:?}").into());
            }
            file.check()
        }
    };
    if diags.is_empty() {
        return Err(format!("{name} is a bad-input fixture but it reads without error").into());
    }
    let text = diags
        .iter()
        .map(|d| describe(&source, d))
        .collect::<Vec<_>>()
        .join("\n");
    insta::with_settings!({
        input_file => path,
        snapshot_suffix => name.trim_end_matches(".csv"),
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!("pytorch_comms", text);
    });
    Ok(())
}

fn describe(source: &str, d: &Diagnostic) -> String {
    let at = |range: &std::ops::Range<usize>| {
        let (l, c) = line_col(source, range.start);
        format!("{l}:{c} `{}`", &source[range.clone()])
    };
    let mut out = format!("{:?}: {}\n", d.severity, d.message);
    if let Some(span) = &d.span {
        let _ = writeln!(
            out,
            "  at {}{}",
            at(&span.range),
            d.span_label
                .as_ref()
                .map(|l| format!(" ({l})"))
                .unwrap_or_default()
        );
    }
    for l in &d.labels {
        let _ = writeln!(out, "  also {} ({})", at(&l.span.range), l.message);
    }
    for n in &d.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    if let Some(h) = &d.help {
        let _ = writeln!(out, "  help: {h}");
    }
    out
}

datatest_stable::harness! {
    { test = actions_fixture, root = "tests/fixtures/actions", pattern = r"\.actions$" },
    { test = comms_fixture, root = "tests/fixtures/pytorch-comms", pattern = r"\.csv$" },
}
