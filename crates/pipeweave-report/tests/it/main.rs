//! Integration tests of the report crate: SVG timelines and sweep charts (snapshots,
//! well-formedness, determinism), the HTML page and the words of a synthesis.

mod compare;
mod control;
mod hardware;
mod html;
mod planner;
mod recommend;
mod sweep;
mod synthesis;
mod timelines;

use pipeweave_check::ValidPlan;

/// A library schedule compiled for P ranks and M micro-batches, validated.
pub fn library(name: &str, p: u32, m: u32) -> ValidPlan {
    let entry = pipeweave_dsl::library::get(name).expect("library schedule");
    let args = pipeweave_dsl::Args::new(p, m);
    let plan = pipeweave_dsl::compile(pipeweave_diagnostics::FileId(0), entry.source, &args)
        .expect("compiles")
        .plan;
    pipeweave_check::validate(plan).expect("library schedules are valid")
}

/// DeepSeek's DualPipe (weight split and overlapped pairs on, as in the paper's figure), validated.
pub fn dualpipe(p: u32, m: u32) -> ValidPlan {
    let plan = pipeweave_generators::dualpipe(
        p,
        m,
        pipeweave_generators::DualOptions {
            weight_split: true,
            overlap: true,
        },
    )
    .expect("dualpipe");
    pipeweave_check::validate(plan).expect("DualPipe is valid")
}

/// Parses `text` as XML and returns the number of elements named `name`.
pub fn count(text: &str, name: &str) -> usize {
    let doc = roxmltree::Document::parse(text).expect("well-formed XML");
    doc.descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == name)
        .count()
}
