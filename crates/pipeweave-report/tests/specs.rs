//! One snapshot per shipped spec under `specs/`: the spec parses without diagnostics and the text
//! of its step report under textbook 1F1B (the spec's pipeline ranks and micro-batches, one part
//! per rank) is pinned.

use pipeweave_diagnostics::FileId;
use pipeweave_eval::evaluate;
use pipeweave_plan::testing::one_f_one_b;
use pipeweave_report::step_report_text;
use pipeweave_spec::parse;
use std::path::Path;

fn shipped_spec(path: &Path, source: String) -> datatest_stable::Result<()> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let (spec, diags) = parse(&source, FileId(0));
    if !diags.is_empty() {
        return Err(format!("{name}: {diags:?}").into());
    }
    let spec = spec.ok_or("no spec without diagnostics")?;
    let plan = one_f_one_b(spec.parallelism.pp, spec.training.microbatches);
    let plan = pipeweave_check::validate(plan).map_err(|p| format!("{p:?}"))?;
    // A spec with several stages per rank (Llama 3's interleaving) is cut into one part per rank.
    let (spec, _) = pipeweave_eval::fit_spec(&spec, &plan).map_err(|d| d.message)?;
    let evaluation = evaluate(&spec, &plan).map_err(|d| format!("{d:?}"))?;
    insta::with_settings!({
        input_file => path,
        snapshot_suffix => name.trim_end_matches(".toml"),
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!("report_1f1b", step_report_text(&evaluation.report));
    });
    Ok(())
}

datatest_stable::harness! {
    { test = shipped_spec, root = "../../specs", pattern = r"\.toml$" },
}
