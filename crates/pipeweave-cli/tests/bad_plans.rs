//! One test per bad plan under `tests/fixtures/bad/`: `pipeweave validate` must exit 1 and render
//! its diagnostics with file:line:column; the rendered text is pinned by a snapshot.
//! A file named `*.kN.actions` is read with `--pipelines N`; a `*.csv` file is a PyTorch
//! compute_comms CSV, its form told by its text.

use datatest_stable::Utf8Path;
use std::process::Command;

fn validate(path: &Utf8Path) -> datatest_stable::Result<()> {
    let name = path.file_name().ok_or("fixture without a name")?;
    let dir = path.parent().ok_or("fixture without a folder")?;
    let pipelines = name
        .strip_suffix(".actions")
        .map(|stem| stem.rsplit_once(".k").map_or("1", |(_, k)| k));
    let mut args = vec!["validate", name];
    args.extend(pipelines.map(|k| ["--pipelines", k]).into_iter().flatten());
    let out = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(args)
        .current_dir(dir)
        .output()?;
    let text = format!(
        "exit code: {}\n--- stdout\n{}--- stderr\n{}",
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{name} must be rejected:\n{text}"
    );
    insta::with_settings!({
        snapshot_path => "snapshots/bad",
        prepend_module_to_snapshot => false,
        snapshot_suffix => name,
        input_file => path.as_str(),
        omit_expression => true,
    }, {
        insta::assert_snapshot!("validate", text);
    });
    Ok(())
}

datatest_stable::harness! {
    { test = validate, root = "tests/fixtures/bad", pattern = r"\.(actions|csv)$" },
}
