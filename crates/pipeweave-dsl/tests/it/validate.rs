//! Every library schedule compiles to a valid, deadlock-free plan for every P from 2 to 16 and
//! every M up to 4P that its requirements allow.

use pipeweave_diagnostics::FileId;
use pipeweave_dsl::{Args, Value, library};

/// Extra parameter settings to sweep per schedule (beyond the defaults).
fn variants(name: &str) -> Vec<Vec<(&'static str, Value)>> {
    match name {
        "interleaved-1f1b" | "interleaved-zb" | "looped-bfs" => {
            (1..=4).map(|v| vec![("v", Value::Int(v))]).collect()
        }
        "megatron-interleaved" => (2..=4).map(|v| vec![("v", Value::Int(v))]).collect(),
        "megatron-a2a-overlap" => (1..=3).map(|v| vec![("v", Value::Int(v))]).collect(),
        "dualpipev" => vec![
            vec![],
            vec![("weight_split", Value::Bool(false))],
            vec![("overlap", Value::Bool(false))],
            vec![
                ("weight_split", Value::Bool(false)),
                ("overlap", Value::Bool(false)),
            ],
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
                    for (n, v) in &extra {
                        args = args.with(n, v.clone());
                    }
                    let prepared =
                        pipeweave_dsl::prepare(FileId(0), entry.source).expect("resolves");
                    // A failed requirement: this configuration is not allowed.
                    if !prepared.admits(&args).expect("the parameters bind") {
                        continue;
                    }
                    let compiled = match prepared.compile(&args) {
                        Ok(c) => c,
                        Err(diags) => {
                            failures.push(format!(
                                "{} {extra:?} P={p} M={m}: does not compile: {}",
                                entry.name, diags[0].message
                            ));
                            continue;
                        }
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
        "DualPipeV needs M ≥ 2P micro-batches (with P = 4, M = 7, weight_split = true, overlap = true)"
    );
    let src = library::get("interleaved-1f1b")
        .expect("in the library")
        .source;
    let diags = pipeweave_dsl::compile(FileId(0), src, &Args::new(4, 9)).expect_err("9 % 2");
    assert_eq!(
        diags[0].message,
        "M must be a multiple of max(1, M / P), 2 here, as PyTorch requires (with P = 4, M = 9, v = 2)"
    );
}
