//! Writes the plans of the conformance suite (`tests/conformance/`) and a manifest describing them.
//!
//! A development tool, not part of the library: it compiles the library schedules (and the DualPipe
//! and Chimera generators), validates every plan, and exports it in the formats the suite runs:
//! both PyTorch CSVs of the single-pipeline schedules at M = 2P, and the JSON plan of every schedule
//! `pipeweave.torch` runs at odd and even M where the schedule allows; and plans `synthesize` finds
//! (loop and V as CSVs and JSON, two pipelines with overlapped pairs as JSON), with unit costs and
//! with costs that are not uniform, so that their orders are not the library's.
//! Usage: `cargo run -p pipeweave-export --example conformance_plans -- OUT_DIR`.
//! Once `pipeweave export SCHEDULE` exists, the suite can call the command instead.
#![allow(
    clippy::print_stderr,
    reason = "a command-line tool reports its own errors"
)]

use pipeweave_diagnostics::FileId;
use pipeweave_dsl::{Args, compile, library};
use pipeweave_export::{write_json, write_pytorch, write_pytorch_comms};
use pipeweave_generators::{ChimeraOptions, DualOptions, Joins, chimera, dualpipe};
use pipeweave_plan::Plan;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The single-pipeline schedules PyTorch's runtime runs from the exported CSVs, from the library.
const SINGLE: [&str; 9] = [
    "gpipe",
    "1f1b",
    "interleaved-1f1b",
    "looped-bfs",
    "zb-h1",
    "zb-v",
    "dualpipev",
    "megatron-interleaved",
    "megatron-a2a-overlap",
];

/// Two pipelines on the same ranks: every rank hosts each of its parts twice and holds one copy of
/// it, which `PlanRunner` must reduce once, after the backwards of both stages.
const SHARED: &str = "\
doc \"two pipelines placed alike: a rank hosts its part twice\"
pipelines 2
stages P
place loop
program {
  repeat M / 2 { F0 }
  repeat M / 2 { F1 }
  repeat M / 2 { B0 }
  repeat M / 2 { B1 }
}
";

fn library_plan(name: &str, ranks: u32, microbatches: u32) -> Result<Plan, String> {
    let entry = library::get(name).ok_or_else(|| format!("no library schedule `{name}`"))?;
    source_plan(name, entry.source, ranks, microbatches)
}

fn source_plan(name: &str, source: &str, ranks: u32, microbatches: u32) -> Result<Plan, String> {
    compile(FileId(0), source, &Args::new(ranks, microbatches))
        .map(|c| c.plan)
        .map_err(|d| {
            format!(
                "{name}: {}",
                d.iter()
                    .map(|d| d.message.clone())
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        })
}

/// Every library schedule `PlanRunner` trains with, at the micro-batch counts of [`library_counts`].
const RUNNER: [&str; 11] = [
    "gpipe",
    "1f1b",
    "interleaved-1f1b",
    "looped-bfs",
    "zb-h1",
    "zb-h2",
    "zb-v",
    "interleaved-zb",
    "dualpipev",
    "megatron-interleaved",
    "megatron-a2a-overlap",
];

/// Chimera's shapes: (ranks, pipelines, forward doubling, micro-batch counts). Four pipelines need
/// a number of ranks they divide; with forward doubling M is a multiple of twice the micro-batches
/// a pipeline carries per unit, so only even M fit.
const CHIMERA: [(u32, u32, bool, &[u32]); 6] = [
    (2, 2, false, &[3, 4]),
    (4, 2, false, &[4, 6]),
    (2, 2, true, &[4]),
    (4, 2, true, &[8]),
    (4, 4, false, &[5, 8]),
    (4, 4, true, &[8]),
];

/// An odd and an even M for a library schedule at P ranks (DualPipeV needs M >= 2P); two
/// multiples of P for Megatron-Core's schedules, whose default group of P micro-batches leaves no
/// smaller last group.
fn library_counts(name: &str, p: u32) -> [u32; 2] {
    if name == "dualpipev" {
        [2 * p + 1, 2 * p]
    } else if name.starts_with("megatron-") {
        [2 * p, 3 * p]
    } else {
        [2 * p - 1, 2 * p]
    }
}

struct Case {
    name: String,
    schedule: String,
    plan: Plan,
    formats: Vec<&'static str>,
}

fn cases() -> Result<Vec<Case>, String> {
    let mut out = Vec::new();
    for p in [2u32, 4] {
        let m = 2 * p;
        for name in SINGLE {
            out.push(Case {
                name: format!("{name}-p{p}"),
                schedule: name.to_string(),
                plan: library_plan(name, p, m)?,
                formats: vec!["pytorch", "pytorch-comms"],
            });
        }
    }
    // The JSON plans `pipeweave.torch` runs: PlanRunner every one, `schedule()` the single-pipeline ones.
    for p in [2u32, 4] {
        for name in RUNNER {
            for m in library_counts(name, p) {
                out.push(Case {
                    name: format!("{name}-p{p}-m{m}"),
                    schedule: name.to_string(),
                    plan: library_plan(name, p, m)?,
                    formats: vec!["json"],
                });
            }
        }
        out.push(Case {
            name: format!("shared-p{p}-m4"),
            schedule: "shared".into(),
            plan: source_plan("shared", SHARED, p, 4)?,
            formats: vec!["json"],
        });
        // DualPipe takes an even M of at least 2P.
        for m in [2 * p, 2 * p + 2] {
            out.push(Case {
                name: format!("dualpipe-p{p}-m{m}"),
                schedule: "dualpipe".into(),
                plan: dualpipe(p, m, DualOptions::default())?,
                formats: vec!["json"],
            });
        }
    }
    out.extend(synthesized()?);
    for (p, pipelines, forward_doubling, counts) in CHIMERA {
        let doubling = if forward_doubling { "-doubling" } else { "" };
        for &m in counts {
            out.push(Case {
                name: format!("chimera-k{pipelines}{doubling}-p{p}-m{m}"),
                schedule: "chimera".into(),
                plan: chimera(
                    p,
                    m,
                    ChimeraOptions {
                        pipelines,
                        joins: if forward_doubling {
                            Joins::Doubling
                        } else {
                            Joins::Direct
                        },
                    },
                )?,
                formats: vec!["json"],
            });
        }
    }
    Ok(out)
}

/// Synthesized plans at P = 2 and 4, M = 2P: each placement at 1F1B's memory, under unit costs and
/// under F = 1, I = 1.5, W = 0.5 with transfers of 0.25 (seed 0, 500 tries).
fn synthesized() -> Result<Vec<Case>, String> {
    use pipeweave_synth::{Options, Placement, Problem, synthesize};
    let skewed = pipeweave_sim::UniformCosts {
        stage: pipeweave_sim::StageCosts {
            f: 1.0,
            i: 1.5,
            w: 0.5,
            b: 2.0,
        },
        pair: None,
        transfer: 0.25,
    };
    let options = Options {
        seed: 0,
        evaluations: 500,
        ..Options::default()
    };
    let mut out = Vec::new();
    for p in [2u32, 4] {
        let m = 2 * p;
        for (name, placement, limit, formats) in [
            (
                "loop",
                Placement::Loop { v: 1 },
                p,
                vec!["pytorch", "pytorch-comms", "json"],
            ),
            (
                "v",
                Placement::V,
                2 * p,
                vec!["pytorch", "pytorch-comms", "json"],
            ),
            (
                "bidirectional",
                Placement::Bidirectional,
                p + 1,
                vec!["json"],
            ),
        ] {
            for (costs_name, unit) in [("unit", true), ("skewed", false)] {
                let problem = Problem {
                    ranks: p,
                    microbatches: m,
                    placement,
                    weight_split: true,
                    pairs: placement == Placement::Bidirectional,
                    limits: vec![limit; p as usize],
                    weights: Vec::new(),
                };
                let found = if unit {
                    synthesize(&problem, &pipeweave_sim::UnitCosts, &options, &mut |_| true)
                } else {
                    synthesize(&problem, &skewed, &options, &mut |_| true)
                }
                .map_err(|e| format!("synthesize {name} P={p}: {e}"))?;
                out.push(Case {
                    name: format!("synth-{name}-{costs_name}-p{p}-m{m}"),
                    schedule: format!("synth-{name}"),
                    plan: found.plan.into_plan(),
                    formats: formats.clone(),
                });
            }
        }
    }
    Ok(out)
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn run(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut manifest = Vec::new();
    for case in cases()? {
        let plan = pipeweave_check::validate(case.plan).map_err(|problems| {
            let first = problems
                .first()
                .map(ToString::to_string)
                .unwrap_or_default();
            format!("{} is not a valid plan: {first}", case.name)
        })?;
        for format in &case.formats {
            let (text, ext) = match *format {
                "pytorch" => (write_pytorch(&plan), "csv"),
                "pytorch-comms" => (write_pytorch_comms(&plan), "comms.csv"),
                _ => (write_json(&plan, None), "json"),
            };
            let file = format!("{}.{ext}", case.name);
            let refused = match text {
                Ok(text) => {
                    write(&dir.join(&file), &text)?;
                    None
                }
                // A format that cannot express the plan is part of what the suite reports.
                Err(d) => Some(d.message),
            };
            manifest.push(serde_json::json!({
                "refused": refused,
                "name": format!("{}/{format}", case.name),
                "schedule": case.schedule,
                "format": format,
                "file": file,
                "ranks": plan.ranks(),
                "stages_per_pipeline": plan.stages_per_pipeline(),
                "pipelines": plan.model_copies(),
                "microbatches": plan.num_microbatches(),
                "placements": plan.pipelines().iter().map(|p| p.placement.clone()).collect::<Vec<_>>(),
            }));
        }
    }
    let text = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())?;
    write(&dir.join("manifest.json"), &text)
}

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: conformance_plans OUT_DIR");
        return ExitCode::from(2);
    };
    match run(&dir) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
