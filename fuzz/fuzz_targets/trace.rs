//! The trace reader: any bytes as one rank's `torch.profiler` trace, then matched against a plan.
//!
//! Must hold: no panic, every diagnostic inside the source; an accepted trace has its spans in
//! time order, each at an event of the file (an object), with a finite start and a duration of at
//! least 0; matching it against 1F1B on one rank or two (as every rank, or with the ranks it
//! names) answers with a run or with diagnostics inside the source, and a run has every action of
//! every step timed.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pipeweave_fuzz::{FILE, assert_located, text};
use pipeweave_plan::{Action, Kind, Op, Plan};
use pipeweave_trace::{match_plan, read_trace};

fn op(stage: u32, kind: Kind, mb: u32) -> Action {
    Action::One(Op::new(stage, kind, mb))
}

/// 1F1B with 2 micro-batches on one rank (`ranks` 1) or two.
fn plan(ranks: u32) -> Plan {
    let programs = if ranks == 1 {
        vec![vec![
            op(0, Kind::F, 0),
            op(0, Kind::F, 1),
            op(0, Kind::B, 0),
            op(0, Kind::B, 1),
        ]]
    } else {
        vec![
            vec![
                op(0, Kind::F, 0),
                op(0, Kind::F, 1),
                op(0, Kind::B, 0),
                op(0, Kind::B, 1),
            ],
            vec![
                op(1, Kind::F, 0),
                op(1, Kind::B, 0),
                op(1, Kind::F, 1),
                op(1, Kind::B, 1),
            ],
        ]
    };
    let placement = (0..ranks).collect();
    Plan::single(ranks, placement, 2, programs).expect("1F1B is a plan")
}

fuzz_target!(|data: &[u8]| {
    let Some(source) = text(data) else {
        return;
    };
    let trace = match read_trace(&source, FILE) {
        Ok(trace) => trace,
        Err(diags) => {
            assert!(!diags.is_empty(), "refused without a diagnostic");
            assert!(diags.len() <= pipeweave_trace::read::MAX_PROBLEMS);
            assert_located(&diags, &source);
            return;
        }
    };
    assert!(
        !trace.spans.is_empty(),
        "a trace with no actions is accepted"
    );
    for pair in trace.spans.windows(2) {
        assert!(pair[0].start <= pair[1].start, "spans out of order");
    }
    for span in &trace.spans {
        assert!(span.start.is_finite() && span.dur.is_finite() && span.dur >= 0.0);
        assert!(
            source
                .get(span.at.clone())
                .is_some_and(|e| e.starts_with('{'))
        );
    }
    for ranks in [1, 2] {
        let plan = plan(ranks);
        let traces = vec![trace.clone(); ranks as usize];
        match match_plan(&plan, traces) {
            Ok(run) => {
                assert_eq!(run.ranks.len(), ranks as usize);
                for rank in &run.ranks {
                    assert_eq!(rank.steps.len(), run.steps);
                    for step in &rank.steps {
                        assert!(step.actions.iter().all(|t| t.start.is_finite()));
                    }
                }
            }
            Err(diags) => {
                assert!(!diags.is_empty(), "unmatched without a diagnostic");
                assert_located(&diags, &source);
            }
        }
    }
});
