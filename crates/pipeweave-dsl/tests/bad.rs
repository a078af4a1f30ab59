//! One snapshot per bad schedule under `tests/fixtures/bad/`: the diagnostics as the command line
//! renders them. A fixture must fail somewhere: to parse, to compile for its `# args:`, or to
//! validate (then the problems point back at the lines that produced the actions).

mod support;

use std::path::Path;

fn bad_schedule(path: &Path, source: String) -> datatest_stable::Result<()> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned();
    // As the command line reads a file: a leading byte-order mark is dropped.
    let source = pipeweave_diagnostics::text_from_bytes(source.into_bytes(), support::FILE)
        .map_err(|d| d.message)?;
    let args = support::args(&source);
    let diags = match pipeweave_dsl::compile(support::FILE, &source, &args) {
        Err(diags) => diags,
        Ok(compiled) => support::problems(&compiled),
    };
    if diags.is_empty() {
        return Err(format!("{name} is a bad-input fixture but compiles to a valid plan").into());
    }
    let text = support::render(&name, &source, &diags);
    insta::with_settings!({
        input_file => path,
        snapshot_suffix => name.trim_end_matches(".weave"),
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!("bad", text);
    });
    Ok(())
}

datatest_stable::harness! {
    { test = bad_schedule, root = "tests/fixtures/bad", pattern = r"\.weave$" },
}
