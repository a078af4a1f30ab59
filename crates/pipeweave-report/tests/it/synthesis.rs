//! The report of a synthesis says what it proved and, where it proved nothing, why: which limit
//! stopped the exact method, or that the costs leave no exact comparison of times.

use pipeweave_eval::{Costing, SynthesisReport};
use pipeweave_report::{synthesis_json, synthesis_text};
use pipeweave_sim::{CostModel, StageCosts, UniformCosts};
use pipeweave_synth::{Options, Placement, Problem, Progress, synthesize};

/// P = 4, M = 8 with two pipelines, overlapped pairs and split backwards, at 1F1B's memory.
fn bidirectional() -> Problem {
    Problem {
        ranks: 4,
        microbatches: 8,
        placement: Placement::Bidirectional,
        weight_split: true,
        pairs: true,
        limits: vec![5; 4],
        weights: Vec::new(),
    }
}

/// The report of a synthesis of `problem` with `exact_nodes` for the exact method, stopped where
/// `go_on` says.
fn report(
    problem: &Problem,
    costs: &dyn CostModel,
    exact_nodes: u64,
    go_on: &mut dyn FnMut(Progress) -> bool,
) -> (String, serde_json::Value) {
    let options = Options {
        seed: 0,
        evaluations: 300,
        exact_nodes,
        ..Options::default()
    };
    let s = synthesize(problem, costs, &options, go_on).expect("a plan");
    let r = SynthesisReport::new(
        problem,
        &s,
        // What the report calls the costs: uniform ones (the search ran on `costs`).
        &Costing::Uniform(UniformCosts::default()),
        "--activations".to_owned(),
        None,
        None,
    );
    let json = serde_json::from_str(&synthesis_json(&r)).expect("JSON");
    (synthesis_text(&r), json)
}

fn line<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(key))
        .unwrap_or_else(|| panic!("no `{key}` line in\n{text}"))
}

/// The audit's `--costs F=1e-12,transfer=1e12`: the report said "optimum 10000000000019 proved"
/// while its own heuristic had found 10000000000009. The costs span 24 orders of magnitude, more
/// than times can be compared exactly over, so nothing is proved, and the report says why.
#[test]
fn costs_too_far_apart_prove_nothing_and_say_so() {
    let costs = UniformCosts {
        stage: StageCosts {
            f: 1e-12,
            ..StageCosts::UNIT
        },
        pair: None,
        transfer: 1e12,
    };
    let (text, json) = report(&bidirectional(), &costs, 2_000_000, &mut |_| true);
    assert_eq!(
        line(&text, "exact method"),
        "  exact method        not run: the costs span too wide a range to compare times exactly (not proved)"
    );
    assert!(
        line(&text, "lower bound").ends_with(
            ", nothing proved: the costs span too wide a range to compare times exactly"
        ),
        "{text}"
    );
    assert_eq!(json["exact"]["ended_by"], "cost_range");
    assert_eq!(json["exact"]["proved"], false);
    assert_eq!(json["proved_optimal"], false);
    assert_eq!(json["exact_arithmetic"], false);
    // Without the exact method the bound is no proof either (the makespan is within 10^-12 of
    // it, but not on it).
    let small = Problem {
        microbatches: 4,
        limits: vec![4; 4],
        ..bidirectional()
    };
    let (text, json) = report(&small, &costs, 0, &mut |_| true);
    assert_eq!(json["proved_optimal"], false, "{text}");
}

/// An exact search cut by the time limit said "stopped by its node budget": it says which limit
/// stopped it.
#[test]
fn the_exact_method_names_the_limit_that_stopped_it() {
    let costs = UniformCosts {
        stage: StageCosts {
            f: 1.0,
            i: 1.5,
            w: 0.5,
            b: 2.0,
        },
        pair: None,
        transfer: 0.25,
    };
    // The caller's stop (the command's time limit) once the local search's 300 tries are done.
    let (text, json) = report(&bidirectional(), &costs, 2_000_000, &mut |p| {
        p.evaluations <= 300
    });
    assert_eq!(json["exact"]["ended_by"], "time_limit", "{text}");
    assert!(
        line(&text, "exact method").ends_with("nodes, stopped by the time limit (not proved)"),
        "{text}"
    );
    let (text, json) = report(&bidirectional(), &costs, 5000, &mut |_| true);
    assert_eq!(json["exact"]["ended_by"], "node_budget", "{text}");
    assert_eq!(
        line(&text, "exact method"),
        "  exact method        5001 nodes, stopped by its node budget (not proved)"
    );
    let quick = Problem {
        ranks: 2,
        microbatches: 4,
        limits: vec![3; 2],
        ..bidirectional()
    };
    let (text, json) = report(&quick, &costs, 2_000_000, &mut |_| true);
    assert_eq!(json["exact"]["ended_by"], "complete", "{text}");
    assert!(line(&text, "exact method").contains("proved"), "{text}");
    assert!(line(&text, "lower bound").ends_with(", optimal"), "{text}");
}

/// A zero duration (W = 0) leaves actions no order by start time: the exact method does not run,
/// and says so.
#[test]
fn a_zero_duration_is_said() {
    let costs = UniformCosts {
        stage: StageCosts {
            w: 0.0,
            b: 1.0,
            ..StageCosts::UNIT
        },
        pair: None,
        transfer: 0.0,
    };
    let (text, json) = report(&bidirectional(), &costs, 2_000_000, &mut |_| true);
    assert_eq!(json["exact"]["ended_by"], "zero_duration", "{text}");
    assert!(
        line(&text, "exact method").contains("not run: some duration is zero"),
        "{text}"
    );
}
