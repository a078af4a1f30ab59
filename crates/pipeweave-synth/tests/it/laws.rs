//! Laws of every synthesis: the plan validates (it is a `ValidPlan`), keeps every rank within its
//! memory limit, is never worse than the heuristic's start nor better than the lower bound, and the
//! same inputs and seed give the same plan. Snapshots pin small plans.

use crate::{problem, run};
use pipeweave_plan::testing::program_lines;
use pipeweave_sim::{StageCosts, UniformCosts, UnitCosts, live_activations};
use pipeweave_synth::{Options, Placement, Problem, ProblemError, SynthError, synthesize};
use proptest::prelude::*;

fn placement() -> impl Strategy<Value = Placement> {
    prop_oneof![
        (1u32..4).prop_map(|v| Placement::Loop { v }),
        Just(Placement::V),
        Just(Placement::Bidirectional),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn synthesized_plans_validate_and_keep_their_limits(
        p in 1u32..6,
        half in 1u32..6,
        placement in placement(),
        extra in 0u32..6,
        f in 1u32..4, i in 1u32..4, w in 0u32..3, b in 1u32..6, transfer in 0u32..2,
        split in any::<bool>(),
        seed in 0u64..1000,
    ) {
        let m = 2 * half;
        let v = match placement { Placement::Loop { v } => v, Placement::V => 2, Placement::Bidirectional => 1 };
        let limits: Vec<u32> = (0..p).map(|r| v + (extra + r) % (p + 1)).collect();
        let pr = Problem { weight_split: split, ..problem(p, m, placement, limits.clone()) };
        let costs = UniformCosts {
            stage: StageCosts { f: f64::from(f), i: f64::from(i), w: f64::from(w), b: f64::from(b) },
            pair: None,
            transfer: f64::from(transfer) / 4.0,
        };
        let options = Options { seed, evaluations: 200, ..Options::default() };
        match synthesize(&pr, &costs, &options, &mut |_| true) {
            Ok(s) => {
                for r in 0..p {
                    prop_assert!(live_activations(s.plan.program(r)).peak <= limits[r as usize]);
                }
                prop_assert!(s.score.makespan <= s.heuristic.expect("no start given").makespan + 1e-9);
                prop_assert!(s.score.makespan >= s.lower_bound - 1e-9);
                let again = synthesize(&pr, &costs, &options, &mut |_| true).unwrap();
                prop_assert_eq!(program_lines(&again.plan), program_lines(&s.plan));
            }
            // A limit the heuristic could not meet is said, never a panic.
            Err(SynthError::NotFound(_)) => {}
            Err(e) => prop_assert!(false, "{e}"),
        }
    }
}

#[test]
fn a_limit_below_the_placement_is_refused_in_words() {
    let pr = problem(4, 8, Placement::V, vec![2, 2, 1, 2]);
    let e = synthesize(&pr, &UnitCosts, &Options::default(), &mut |_| true).unwrap_err();
    assert_eq!(
        e,
        SynthError::Problem(ProblemError::Memory {
            rank: 2,
            limit: 1,
            needed: 2
        })
    );
    assert_eq!(
        e.to_string(),
        "rank 2 may hold 1 unit of activations but every order of this placement holds at least 2 \
         there (a micro-batch's forward passes every stage the rank hosts before its first backward)"
    );
    let odd = problem(4, 7, Placement::Bidirectional, vec![5; 4]);
    assert!(
        synthesize(&odd, &UnitCosts, &Options::default(), &mut |_| true)
            .unwrap_err()
            .to_string()
            .contains("M must be even, got 7")
    );
}

/// The audit's costs (F = 1 beside transfers of 10^9, `--costs F=1,transfer=1e9`): at makespans
/// near 10^10 a relative tolerance in "better" let each new best be a few units worse than the
/// last, and the search ended at 10000000027 against its heuristic's 10000000017. Never worse than
/// where it started, at any budget or seed.
#[test]
fn large_makespans_never_end_worse_than_the_heuristic() {
    let costs = UniformCosts {
        stage: StageCosts::UNIT,
        pair: None,
        transfer: 1e9,
    };
    let pr = problem(4, 8, Placement::Bidirectional, vec![5; 4]);
    for seed in 0..4 {
        for evaluations in [200, 2000, 20_000] {
            let options = Options {
                seed,
                evaluations,
                ..Options::default()
            };
            let s = synthesize(&pr, &costs, &options, &mut |_| true).unwrap();
            let heuristic = s.heuristic.expect("a construction meets the limit");
            assert!(
                s.score.makespan <= heuristic.makespan,
                "seed {seed}, {evaluations} tries: {} against the heuristic's {}",
                s.score.makespan,
                heuristic.makespan
            );
        }
    }
}

/// A synthesis whose tables would not fit in its memory is refused before any work (no
/// construction, no progress report), with an error naming the size; the largest problem
/// (P = 256, M = 340: 261,120 operations) asks for some 75 MiB.
#[test]
fn too_little_memory_is_refused_before_the_work() {
    let pr = problem(256, 340, Placement::Loop { v: 1 }, vec![256; 256]);
    let options = Options {
        memory: 64 << 20,
        ..Options::default()
    };
    let mut reported = false;
    let e = synthesize(&pr, &UnitCosts, &options, &mut |_| {
        reported = true;
        true
    })
    .unwrap_err();
    assert!(!reported, "the search started");
    let SynthError::OutOfMemory(oom) = e else {
        panic!("{e}")
    };
    assert_eq!(oom.what, "the synthesis's tables");
    assert!((70 << 20..90 << 20).contains(&oom.bytes), "{}", oom.bytes);
    assert_eq!(
        e.to_string(),
        "out of memory: 75 MiB for the synthesis's tables could not be allocated; fewer ranks, \
         micro-batches or stages per rank need less"
    );
    // Within its need, the same problem at a tenth of the micro-batches runs.
    let small = problem(256, 34, Placement::Loop { v: 1 }, vec![256; 256]);
    let options = Options {
        memory: 16 << 20,
        evaluations: 100,
        ..Options::default()
    };
    assert!(synthesize(&small, &UnitCosts, &options, &mut |_| true).is_ok());
}

#[test]
fn the_callers_stop_ends_the_local_search() {
    let costs = crate::SKEWED;
    let pr = problem(4, 8, Placement::Loop { v: 1 }, vec![3; 4]);
    let s = synthesize(&pr, &costs, &Options::default(), &mut |p| {
        p.evaluations < 128
    })
    .unwrap();
    assert!(s.stopped);
    assert_eq!(s.evaluations, 128);
    // The exact method and the heuristic's policies stop too: every call after the first plan.
    let small = problem(2, 4, Placement::Loop { v: 2 }, vec![4; 2]);
    let options = Options {
        exact_nodes: u64::MAX,
        ..Options::default()
    };
    let s = synthesize(&small, &costs, &options, &mut |_| false).unwrap();
    assert!(s.stopped);
    assert_eq!(s.policies.1, 1, "the first policy's plan, then the stop");
    assert!(s.exact.is_none_or(|e| !e.proved || e.nodes < 4096));
}

#[test]
fn small_plans_with_fixed_seeds() {
    let mut text = String::new();
    for (name, pr) in [
        (
            "loop P=4 M=8 limit 4",
            problem(4, 8, Placement::Loop { v: 1 }, vec![4; 4]),
        ),
        (
            "loop P=4 M=8 limit 2",
            problem(4, 8, Placement::Loop { v: 1 }, vec![2; 4]),
        ),
        ("v P=2 M=4 limit 4", problem(2, 4, Placement::V, vec![4; 2])),
        (
            "bidirectional P=4 M=8 limit 5",
            problem(4, 8, Placement::Bidirectional, vec![5; 4]),
        ),
    ] {
        let s = run(&pr, &UnitCosts, 1000);
        text.push_str(&format!(
            "# {name}: makespan {}, bound {}\n",
            s.score.makespan, s.lower_bound
        ));
        for line in program_lines(&s.plan) {
            text.push_str(&line);
            text.push('\n');
        }
    }
    insta::assert_snapshot!(text);
}
