//! With unit costs (F = I = W = 1, B = 2, F&B = 3) synthesis finds the known optima: ZB-H1's
//! makespan at 1F1B's memory, ZB-H2's at twice it, ZB-V's in a V, DualPipe's with two pipelines
//! and overlapped pairs at DualPipe's memory.

use crate::{figures, library, problem, run};
use pipeweave_sim::UnitCosts;
use pipeweave_synth::Placement;

#[test]
fn zb_h1_at_one_f_one_b_memory() {
    for (p, m) in [(2, 4), (4, 4), (4, 8), (8, 16), (8, 32)] {
        let (target, _) = figures(&library("zb-h1", p, m));
        let s = run(
            &problem(p, m, Placement::Loop { v: 1 }, vec![p; p as usize]),
            &UnitCosts,
            2000,
        );
        let (found, peaks) = figures(&s.plan);
        assert!(found <= target, "P={p} M={m}: {found} > ZB-H1's {target}");
        assert!(peaks.iter().all(|&k| k <= p), "P={p} M={m}: {peaks:?}");
        assert!(
            s.proved_optimal(),
            "P={p} M={m}: {found} against the bound {}",
            s.lower_bound
        );
    }
}

#[test]
fn zb_h2_at_twice_the_memory() {
    for (p, m) in [(2, 4), (4, 8), (8, 16), (8, 32)] {
        let (target, _) = figures(&library("zb-h2", p, m));
        let s = run(
            &problem(p, m, Placement::Loop { v: 1 }, vec![2 * p; p as usize]),
            &UnitCosts,
            2000,
        );
        let (found, peaks) = figures(&s.plan);
        assert!(found <= target, "P={p} M={m}: {found} > ZB-H2's {target}");
        assert!(peaks.iter().all(|&k| k <= 2 * p), "P={p} M={m}: {peaks:?}");
    }
}

/// ZB-V's limit: P stages' worth of activations, 2P of the V's half-size chunks, as pipeweave
/// counts them (ZB-V itself peaks there).
#[test]
fn zb_v_in_a_v() {
    for (p, m) in [(2, 4), (4, 8), (8, 16), (8, 32)] {
        let (target, zb_v_peaks) = figures(&library("zb-v", p, m));
        assert!(zb_v_peaks.iter().all(|&k| k <= 2 * p));
        let s = run(
            &problem(p, m, Placement::V, vec![2 * p; p as usize]),
            &UnitCosts,
            2000,
        );
        let (found, peaks) = figures(&s.plan);
        assert!(found <= target, "P={p} M={m}: {found} > ZB-V's {target}");
        assert!(peaks.iter().all(|&k| k <= 2 * p), "P={p} M={m}: {peaks:?}");
        // Zero bubble after the warm-up: every rank busy from its first input on.
        assert_eq!(found, f64::from(6 * m + p - 1), "P={p} M={m}");
    }
}

/// DualPipe's makespan or better at DualPipe's memory: the limit of each rank is what DualPipe
/// holds there (at most P + 1, as DeepSeek's DualPipe README says). At P = 4 the exact method
/// runs (as `synthesize` does for small sizes; here with M up to 12): it reaches DualPipe's
/// makespan or beats it (37 against 38 at M = 12, proved optimal). At P = 8 the heuristic meets
/// DualPipe's makespan (54 and 66).
#[test]
fn dualpipe_with_two_pipelines_and_pairs() {
    for (p, m, exact) in [(4, 8, true), (4, 12, true), (8, 16, false), (8, 20, false)] {
        let plan = pipeweave_check::validate(
            pipeweave_generators::dualpipe(p, m, pipeweave_generators::DualOptions::default())
                .unwrap(),
        )
        .unwrap();
        let (target, limits) = figures(&plan);
        assert!(limits.iter().all(|&k| k <= p + 1));
        let pr = problem(p, m, Placement::Bidirectional, limits.clone());
        let options = pipeweave_synth::Options {
            seed: 7,
            evaluations: 4000,
            exact_nodes: if exact { 2_000_000 } else { 0 },
            ..pipeweave_synth::Options::default()
        };
        let s = pipeweave_synth::synthesize(&pr, &UnitCosts, &options, &mut |_| true).unwrap();
        let (found, peaks) = figures(&s.plan);
        assert!(
            found <= target,
            "P={p} M={m}: {found} against DualPipe's {target}"
        );
        assert!(
            peaks.iter().zip(&limits).all(|(a, b)| a <= b),
            "P={p} M={m}: {peaks:?} over {limits:?}"
        );
    }
}
