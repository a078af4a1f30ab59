//! One snapshot per library schedule in the workspace's `schedules/` folder (a new file is a new
//! test): its doc string, the actions at a small P and M, and the simulated text timeline with
//! unit costs. The file must also check clean and validate.

mod support;

use pipeweave_dsl::Args;
use std::path::Path;

/// The small configuration each schedule is shown at (DualPipeV needs M >= 2P).
fn small(_name: &str) -> Args {
    Args::new(4, 8)
}

fn library_schedule(path: &Path, source: String) -> datatest_stable::Result<()> {
    let name = path
        .file_stem()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned();
    let file_name = format!("{name}.weave");
    let diags = pipeweave_dsl::check(support::FILE, &source);
    if !diags.is_empty() {
        return Err(support::render(&file_name, &source, &diags).into());
    }
    if pipeweave_dsl::library::get(&name).map(|e| e.source) != Some(source.as_str()) {
        return Err(format!("{name} is not embedded in the library (rebuild?)").into());
    }
    let args = small(&name);
    let compiled = pipeweave_dsl::compile(support::FILE, &source, &args)
        .map_err(|d| support::render(&file_name, &source, &d))?;
    let problems = support::problems(&compiled);
    if !problems.is_empty() {
        return Err(support::render(&file_name, &source, &problems).into());
    }
    let plan = pipeweave_check::validate(compiled.plan).map_err(|p| format!("{p:?}"))?;
    let info = pipeweave_dsl::info(&source);
    let timeline =
        pipeweave_sim::simulate(&plan, &pipeweave_sim::UnitCosts).map_err(|e| format!("{e:?}"))?;
    let mut text = format!(
        "{}\nparameters: P, M{}\nP = {}, M = {}\n\n",
        info.doc.unwrap_or_default(),
        info.params
            .iter()
            .map(|p| match &p.default {
                Some(d) => format!(", {} = {d}", p.name),
                None => format!(", {}", p.name),
            })
            .collect::<String>(),
        args.ranks,
        args.microbatches
    );
    for (r, program) in plan.programs().iter().enumerate() {
        let cells: Vec<String> = program.iter().map(ToString::to_string).collect();
        text.push_str(&format!("rank {r}: {}\n", cells.join(",")));
    }
    text.push('\n');
    text.push_str(&pipeweave_report::text_timeline(&plan, &timeline));
    insta::with_settings!({
        input_file => path,
        snapshot_suffix => name.as_str(),
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!("schedule", text);
    });
    Ok(())
}

datatest_stable::harness! {
    { test = library_schedule, root = "../../schedules", pattern = r"\.weave$" },
}
