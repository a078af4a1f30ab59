//! Every library schedule compiles to a valid, deadlock-free plan for every P from 2 to 16 and
//! every M up to 4P that its requirements allow.

use pipeweave_diagnostics::FileId;
use pipeweave_dsl::{Args, library};

/// Extra parameter settings to sweep per schedule (beyond the defaults).
fn variants(name: &str) -> Vec<Vec<(&'static str, i64)>> {
    match name {
        "interleaved-1f1b" | "interleaved-zb" | "looped-bfs" => {
            vec![
                vec![("v", 1)],
                vec![("v", 2)],
                vec![("v", 3)],
                vec![("v", 4)],
            ]
        }
        "dualpipev" => vec![
            vec![],
            vec![("weight_split", 0)],
            vec![("overlap", 0)],
            vec![("weight_split", 0), ("overlap", 0)],
        ],
        _ => vec![vec![]],
    }
}

#[test]
fn every_library_schedule_validates_for_p_2_to_16_and_m_up_to_4p() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for entry in library::all() {
        for extra in variants(entry.name) {
            for p in 2..=16u32 {
                for m in 1..=4 * p {
                    let mut args = Args::new(p, m);
                    for &(n, v) in &extra {
                        args = args.with(n, v);
                    }
                    let Ok(compiled) = pipeweave_dsl::compile(FileId(0), entry.source, &args)
                    else {
                        // A failed requirement: this configuration is not allowed.
                        continue;
                    };
                    checked += 1;
                    let problems = pipeweave_check::problems(&compiled.plan);
                    if let Some(first) = problems.first() {
                        failures.push(format!(
                            "{} {extra:?} P={p} M={m}: {} problem(s), first: {first}",
                            entry.name,
                            problems.len()
                        ));
                    }
                }
            }
        }
    }
    assert!(checked > 3000, "only {checked} configurations compiled");
    assert!(
        failures.is_empty(),
        "{} invalid plans:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Requirements reject exactly what the schedules cannot run.
#[test]
fn requirements_reject_what_the_references_reject() {
    let src = library::get("dualpipev").expect("in the library").source;
    let diags = pipeweave_dsl::compile(FileId(0), src, &Args::new(4, 7)).expect_err("M < 2P");
    assert_eq!(
        diags[0].message,
        "DualPipeV needs at least 2P micro-batches (M >= 2P), got M = 7 for P = 4"
    );
    let src = library::get("interleaved-1f1b")
        .expect("in the library")
        .source;
    let diags = pipeweave_dsl::compile(FileId(0), src, &Args::new(4, 9)).expect_err("9 % 2");
    assert_eq!(
        diags[0].message,
        "M = 9 must be a multiple of the number of rounds max(1, M / P) = 2"
    );
}
