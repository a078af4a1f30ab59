//! Integration tests of the generators: exactness against every reference vector, validation,
//! the published bubbles under unit costs, DualPipeV as half of DualPipe, and snapshots.

use pipeweave_generators::{ChimeraOptions, DualOptions, Joins, chimera, dualpipe, dualpipev};
use pipeweave_plan::testing::program_lines;
use pipeweave_plan::{Action, Plan};
use pipeweave_sim::{CostModel, SimError, StageCosts, Timeline, UniformCosts, UnitCosts};
use std::path::{Path, PathBuf};

/// `plan` through the validator (a generated plan must pass it), then simulated under `costs`.
fn simulate(plan: &Plan, costs: &dyn CostModel) -> Result<Timeline, SimError> {
    let plan = pipeweave_check::validate(plan.clone())
        .unwrap_or_else(|problems| panic!("an invalid plan: {problems:?}"));
    pipeweave_sim::simulate(&plan, costs)
}

fn reference_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/reference")
}

/// Reads `<prefix><a><sep><b>` numbers out of a vector's file name.
fn two_numbers(stem: &str, first: &str, second: &str) -> (u32, u32) {
    let rest = stem
        .strip_prefix(first)
        .unwrap_or_else(|| panic!("{stem}: no {first}"));
    let (a, rest) = rest
        .split_once(second)
        .unwrap_or_else(|| panic!("{stem}: no {second}"));
    let b: String = rest.chars().take_while(char::is_ascii_digit).collect();
    (a.parse().unwrap(), b.parse().unwrap())
}

/// What generator and options a reference file name stands for.
fn generate_for(stem: &str) -> Option<Plan> {
    let dual_opts = || DualOptions {
        weight_split: !stem.contains("_nozb"),
        overlap: !stem.contains("_noovl"),
    };
    let plan = if stem.starts_with("dualpipev_") {
        let (p, m) = two_numbers(stem, "dualpipev_pp", "_n");
        dualpipev(p, m, dual_opts())
    } else if stem.starts_with("dualpipe_") {
        let (p, m) = two_numbers(stem, "dualpipe_pp", "_n");
        dualpipe(p, m, dual_opts())
    } else if stem.starts_with("DualPipeV_") {
        let (p, m) = two_numbers(stem, "DualPipeV_v2_p", "_m");
        dualpipev(p, m, DualOptions::default())
    } else if stem.starts_with("chimera_") {
        let (d, m) = two_numbers(stem, "chimera_d", "_n");
        let k: u32 = stem.rsplit_once("_k").unwrap().1.parse().unwrap();
        chimera(
            d,
            m,
            ChimeraOptions {
                pipelines: k,
                joins: Joins::Direct,
            },
        )
    } else {
        return None;
    };
    Some(plan.unwrap_or_else(|e| panic!("{stem}: {e}")))
}

#[test]
fn every_reference_vector_is_reproduced_exactly() {
    let mut checked = Vec::new();
    for family in ["dualpipe", "chimera", "torch"] {
        let mut files: Vec<_> = std::fs::read_dir(reference_dir().join(family))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for path in files {
            let stem = path.file_stem().unwrap().to_str().unwrap().to_owned();
            let Some(plan) = generate_for(&stem) else {
                continue;
            };
            let text = std::fs::read_to_string(&path).unwrap();
            let expected: Vec<&str> = text.lines().collect();
            let actual = program_lines(&plan);
            assert_eq!(actual.len(), expected.len(), "{stem}: rank count");
            for (r, (a, e)) in actual.iter().zip(&expected).enumerate() {
                assert_eq!(a, e, "{stem}: rank {r} differs");
            }
            assert!(
                pipeweave_check::problems(&plan).is_empty(),
                "{stem}: invalid"
            );
            checked.push(stem);
        }
    }
    // Every vector of the three families, so a renamed file cannot silently drop out.
    assert_eq!(checked.len(), 11 + 3 + 1, "checked {checked:?}");
}

fn all_dual_options() -> [DualOptions; 4] {
    [(true, true), (true, false), (false, true), (false, false)].map(|(weight_split, overlap)| {
        DualOptions {
            weight_split,
            overlap,
        }
    })
}

fn assert_valid(plan: &Plan, what: &str) {
    let problems = pipeweave_check::problems(plan);
    assert!(
        problems.is_empty(),
        "{what}: {}",
        problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    );
}

#[test]
fn every_small_configuration_validates() {
    for opts in all_dual_options() {
        for p in 1..=8 {
            for m in 2 * p..=4 * p + 3 {
                assert_valid(
                    &dualpipev(p, m, opts).unwrap(),
                    &format!("dualpipev {p} {m} {opts:?}"),
                );
                if p % 2 == 0 && m % 2 == 0 {
                    assert_valid(
                        &dualpipe(p, m, opts).unwrap(),
                        &format!("dualpipe {p} {m} {opts:?}"),
                    );
                }
            }
        }
    }
    for d in [2, 4, 6, 8, 12] {
        for k in [2, 4, 6] {
            for joins in Joins::ALL {
                let opts = ChimeraOptions {
                    pipelines: k,
                    joins,
                };
                for m in 1..=4 * d {
                    if let Ok(plan) = chimera(d, m, opts) {
                        assert_valid(&plan, &format!("chimera {d} {m} {opts:?}"));
                    }
                }
            }
        }
    }
}

/// DualPipeV(P, M) is the first half of DualPipe(2P, 2M): rank r < P runs the same program, with
/// DualPipe's stage 2P + x (direction 1) read as stage x and its micro-batch M + y as y.
#[test]
fn dualpipev_is_the_first_half_of_dualpipe() {
    for opts in all_dual_options() {
        for p in 1..=9 {
            for m in 2 * p..=3 * p + 2 {
                let v = dualpipev(p, m, opts).unwrap();
                let full = dualpipe(2 * p, 2 * m, opts).unwrap();
                let fold = |op: pipeweave_plan::Op| {
                    if op.stage >= 2 * p {
                        pipeweave_plan::Op::new(op.stage - 2 * p, op.kind, op.mb - m)
                    } else {
                        op
                    }
                };
                for r in 0..p {
                    let folded: Vec<Action> = full
                        .program(r)
                        .iter()
                        .map(|a| match *a {
                            Action::One(op) => Action::One(fold(op)),
                            Action::Pair { f, b } => Action::Pair {
                                f: fold(f),
                                b: fold(b),
                            },
                        })
                        .collect();
                    assert_eq!(
                        v.program(r),
                        folded.as_slice(),
                        "P={p} M={m} rank {r} {opts:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn dualpipe_bubble_is_the_published_one_on_every_rank() {
    // (P/2 − 1)(F&B + B − 3W) = (P/2 − 1)(3 + 2 − 3) with F = I = W = 1.
    for p in [2, 4, 6, 8, 10] {
        for m in [2 * p, 2 * p + 2, 3 * p, 4 * p] {
            if m % 2 != 0 {
                continue;
            }
            let t = simulate(&dualpipe(p, m, DualOptions::default()).unwrap(), &UnitCosts).unwrap();
            let expected = f64::from(p / 2 - 1) * 2.0;
            for (r, rank) in t.ranks.iter().enumerate() {
                assert_eq!(rank.idle, expected, "P={p} M={m} rank {r}");
            }
        }
    }
    let t = simulate(
        &dualpipe(8, 20, DualOptions::default()).unwrap(),
        &UnitCosts,
    )
    .unwrap();
    assert_eq!(t.timing.makespan, 66.0);
}

#[test]
fn dualpipev_bubble_is_the_published_one_on_every_rank() {
    // (S/2 − 1)(F&B + B − 3W) with S = 2P stages.
    for p in 1..=8 {
        for m in [2 * p, 2 * p + 1, 3 * p, 4 * p] {
            let t = simulate(
                &dualpipev(p, m, DualOptions::default()).unwrap(),
                &UnitCosts,
            )
            .unwrap();
            let expected = f64::from(p - 1) * 2.0;
            for (r, rank) in t.ranks.iter().enumerate() {
                assert_eq!(rank.idle, expected, "P={p} M={m} rank {r}");
            }
        }
    }
}

#[test]
fn chimera_bubble_is_d_minus_two_slots_when_f_equals_b() {
    let costs = UniformCosts {
        stage: StageCosts {
            f: 1.0,
            i: 1.0,
            w: 0.0,
            b: 1.0,
        },
        pair: None,
        transfer: 0.0,
    };
    for d in [2, 4, 6, 8, 16] {
        for units in 1..=3 {
            let m = d * units;
            let t = simulate(&chimera(d, m, ChimeraOptions::default()).unwrap(), &costs).unwrap();
            assert_eq!(t.timing.makespan, f64::from(2 * m + d - 2), "D={d} M={m}");
            for (r, rank) in t.ranks.iter().enumerate() {
                assert_eq!(rank.idle, f64::from(d - 2), "D={d} M={m} worker {r}");
            }
        }
    }
    // 2f pipelines: D/f − 2 slots in one basic unit.
    for (d, k) in [(8, 4), (12, 4), (16, 8)] {
        let f = k / 2;
        let t = simulate(
            &chimera(
                d,
                d,
                ChimeraOptions {
                    pipelines: k,
                    joins: Joins::Direct,
                },
            )
            .unwrap(),
            &costs,
        )
        .unwrap();
        for (r, rank) in t.ranks.iter().enumerate() {
            assert_eq!(rank.idle, f64::from(d / f - 2), "D={d} K={k} worker {r}");
        }
    }
}

#[test]
fn snapshots_of_small_orders() {
    let mut text = String::new();
    let mut section = |title: &str, plan: Plan| {
        text.push_str(&format!("# {title}\n"));
        for (r, row) in program_lines(&plan).iter().enumerate() {
            text.push_str(&format!("rank {r}: {row}\n"));
        }
        let t = simulate(&plan, &UnitCosts).unwrap();
        text.push_str(&format!(
            "makespan {} bubble {:.4}\n\n",
            t.timing.makespan, t.bubble_fraction
        ));
    };
    section(
        "dualpipe P=6 M=12",
        dualpipe(6, 12, DualOptions::default()).unwrap(),
    );
    section(
        "dualpipe P=6 M=12 no split, no overlap",
        dualpipe(
            6,
            12,
            DualOptions {
                weight_split: false,
                overlap: false,
            },
        )
        .unwrap(),
    );
    section(
        "dualpipev P=3 M=7",
        dualpipev(3, 7, DualOptions::default()).unwrap(),
    );
    section(
        "chimera D=6 M=12",
        chimera(6, 12, ChimeraOptions::default()).unwrap(),
    );
    section(
        "chimera D=8 M=16 K=4",
        chimera(
            8,
            16,
            ChimeraOptions {
                pipelines: 4,
                joins: Joins::Direct,
            },
        )
        .unwrap(),
    );
    section(
        "chimera D=4 M=12",
        chimera(4, 12, ChimeraOptions::default()).unwrap(),
    );
    section(
        "chimera D=4 M=16 forward doubling",
        chimera(
            4,
            16,
            ChimeraOptions {
                pipelines: 2,
                joins: Joins::Doubling,
            },
        )
        .unwrap(),
    );
    insta::assert_snapshot!(text);
}

#[test]
fn peak_activations_are_the_published_ones_on_the_middle_ranks() {
    // DualPipe: P + 1 on the middle ranks, reached through the unpaired F0, B1 of step 4.
    for p in [4, 6, 8] {
        let t = simulate(
            &dualpipe(p, 4 * p, DualOptions::default()).unwrap(),
            &UnitCosts,
        )
        .unwrap();
        let peaks: Vec<u32> = t.ranks.iter().map(|r| r.peak_activations).collect();
        assert_eq!(peaks[(p / 2 - 1) as usize], p + 1, "P={p}: {peaks:?}");
        assert_eq!(peaks[(p / 2) as usize], p + 1, "P={p}: {peaks:?}");
        assert_eq!(peaks.iter().max(), Some(&(p + 1)), "P={p}: {peaks:?}");
    }
    // DualPipeV: S + 1 = 2P + 1 on the last rank (the turn of the V).
    for p in [2, 3, 4, 8] {
        let t = simulate(
            &dualpipev(p, 3 * p, DualOptions::default()).unwrap(),
            &UnitCosts,
        )
        .unwrap();
        let peaks: Vec<u32> = t.ranks.iter().map(|r| r.peak_activations).collect();
        assert_eq!(peaks[(p - 1) as usize], 2 * p + 1, "P={p}: {peaks:?}");
    }
}
