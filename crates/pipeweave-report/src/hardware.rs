//! The GPU and network tables as Markdown: one column per entry, one row per figure, each value
//! with the number of its source, and the sources listed below (docs/cost-model.md shows them).

use pipeweave_spec::hardware::{Entry, GPUS, Key, NETWORKS, Scope, resolve};
use std::fmt::Write as _;

/// A value as the tables write it: integers without decimals, others as written in the table.
fn value(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

/// One table: `entries` as columns, the keys of `scope` as rows; the sources numbered from
/// `sources`, which grows.
fn table(
    entries: &[Entry],
    all: &[Entry],
    scope: Scope,
    sources: &mut Vec<&'static str>,
) -> String {
    let mut out = String::from("| figure |");
    for e in entries {
        let _ = write!(out, " `{}` |", e.id);
    }
    out.push_str("\n| --- |");
    for _ in entries {
        out.push_str(" ---: |");
    }
    out.push('\n');
    for key in Key::ALL.into_iter().filter(|k| k.scope() == scope) {
        let cells: Vec<String> = entries
            .iter()
            .map(|e| match resolve(all, e, key) {
                Some(s) => {
                    let n = match sources.iter().position(|x| *x == s.source) {
                        Some(i) => i + 1,
                        None => {
                            sources.push(s.source);
                            sources.len()
                        }
                    };
                    format!("{} [{n}]", value(s.value))
                }
                None => "—".to_owned(),
            })
            .collect();
        if cells.iter().all(|c| c == "—") {
            continue;
        }
        let _ = writeln!(
            out,
            "| `{}`: {} | {} |",
            key.name(),
            key.what(),
            cells.join(" | ")
        );
    }
    out
}

/// The GPU table, the network table and their numbered sources, as Markdown.
pub fn hardware_markdown() -> String {
    let mut sources = Vec::new();
    let mut out = String::from("#### GPUs\n\n");
    let gpus: Vec<Entry> = GPUS.iter().copied().filter(|e| e.real).collect();
    let names: Vec<String> = gpus
        .iter()
        .map(|e| format!("`{}` {}", e.id, e.name))
        .collect();
    let _ = writeln!(out, "{}.\n", names.join("; "));
    out.push_str(&table(&gpus, GPUS, Scope::Gpu, &mut sources));
    out.push_str("\n#### Networks\n\n");
    let nets: Vec<Entry> = NETWORKS.iter().copied().filter(|e| e.real).collect();
    let names: Vec<String> = nets
        .iter()
        .map(|e| format!("`{}` {}", e.id, e.name))
        .collect();
    let _ = writeln!(out, "{}.\n", names.join("; "));
    out.push_str(&table(&nets, NETWORKS, Scope::Network, &mut sources));
    out.push_str("\n#### Sources\n\n");
    for (i, s) in sources.iter().enumerate() {
        let _ = writeln!(out, "{}. {s}", i + 1);
    }
    out
}
