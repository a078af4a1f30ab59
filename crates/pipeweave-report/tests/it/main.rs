//! Integration tests of the report crate: SVG timelines and sweep charts (snapshots,
//! well-formedness, determinism) and the HTML page.

mod compare;
mod hardware;
mod html;
mod recommend;
mod sweep;
mod timelines;

use pipeweave_plan::Plan;

/// A library schedule compiled for P ranks and M micro-batches.
pub fn library(name: &str, p: u32, m: u32) -> Plan {
    let entry = pipeweave_dsl::library::get(name).expect("library schedule");
    let args = pipeweave_dsl::Args::new(p, m);
    pipeweave_dsl::compile(pipeweave_diagnostics::FileId(0), entry.source, &args)
        .expect("compiles")
        .plan
}

/// DeepSeek's DualPipe (weight split and overlapped pairs on, as in the paper's figure).
pub fn dualpipe(p: u32, m: u32) -> Plan {
    pipeweave_generators::dualpipe(
        p,
        m,
        pipeweave_generators::DualOptions {
            weight_split: true,
            overlap: true,
        },
    )
    .expect("dualpipe")
}

/// Parses `text` as XML and returns the number of elements named `name`.
pub fn count(text: &str, name: &str) -> usize {
    let doc = roxmltree::Document::parse(text).expect("well-formed XML");
    doc.descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == name)
        .count()
}
