//! With unit costs (F = I = W = 1, B = 2, an overlapped pair F + B = 3) the library schedules
//! leave exactly the published bubble on every rank.

use crate::common::compile_library;
use pipeweave_dsl::Args;
use pipeweave_sim::{UnitCosts, simulate};

/// Idle time per rank, for every P and a few M each.
fn idle_per_rank(name: &str, p: u32, m: u32) -> Vec<f64> {
    let plan = compile_library(name, &Args::new(p, m))
        .expect("compiles")
        .plan;
    let plan = pipeweave_check::validate(plan).expect("valid");
    let t = simulate(&plan, &UnitCosts).expect("simulates");
    t.ranks.iter().map(|r| r.idle).collect()
}

fn assert_bubble(name: &str, ms: impl Fn(u32) -> Vec<u32>, bubble: impl Fn(u32) -> f64) {
    let mut failures = Vec::new();
    for p in 2..=12u32 {
        for m in ms(p) {
            let expected = bubble(p);
            let idle = idle_per_rank(name, p, m);
            if idle.iter().any(|&i| (i - expected).abs() > 1e-9) {
                failures.push(format!(
                    "P={p} M={m}: expected {expected} per rank, got {idle:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{name}:\n{}", failures.join("\n"));
}

#[test]
fn gpipe_and_1f1b_leave_p_minus_1_times_f_plus_b() {
    for name in ["gpipe", "1f1b"] {
        assert_bubble(name, |p| vec![p, 2 * p, 4 * p], |p| f64::from(p - 1) * 3.0);
    }
}

#[test]
fn zb_h1_leaves_p_minus_1_times_f_plus_i_minus_w() {
    assert_bubble(
        "zb-h1",
        |p| vec![p, 2 * p, 4 * p],
        |p| f64::from(p - 1) * (1.0 + 1.0 - 1.0),
    );
}

#[test]
fn dualpipev_leaves_half_s_minus_1_times_pair_plus_b_minus_3w() {
    // S = 2P stages: (S/2 - 1)(F&B + B - 3W) = (P - 1)(3 + 2 - 3).
    assert_bubble(
        "dualpipev",
        |p| vec![2 * p, 2 * p + 1, 3 * p, 4 * p],
        |p| f64::from(p - 1) * (3.0 + 2.0 - 3.0),
    );
}

/// ZB-H2 leaves only the ramp: P-1 per rank (r at the start, P-1-r at the end) when F = I = W.
#[test]
fn zb_h2_leaves_only_the_ramp() {
    assert_bubble("zb-h2", |p| vec![2 * p, 3 * p, 4 * p], |p| f64::from(p - 1));
}

/// The anchor numbers of formulas.md at P = 8, M = 16.
#[test]
fn bubble_fractions_at_p8_m16() {
    let fraction = |name: &str, args: Args| {
        let plan = compile_library(name, &args).expect("compiles").plan;
        let plan = pipeweave_check::validate(plan).expect("valid");
        let t = simulate(&plan, &UnitCosts).expect("simulates");
        (t.bubble_fraction * 1000.0).round() / 10.0
    };
    assert_eq!(fraction("1f1b", Args::new(8, 16)), 30.4);
    assert_eq!(fraction("gpipe", Args::new(8, 16)), 30.4);
    assert_eq!(fraction("zb-h1", Args::new(8, 16)), 12.7);
    assert_eq!(fraction("dualpipev", Args::new(8, 16)), 12.7);
}
