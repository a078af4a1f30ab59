use super::*;
use crate::actions::read_actions;
use pipeweave_diagnostics::FileId;
use pipeweave_plan::Interval;

/// The plan of one pipeline in the actions text, through the validator.
fn valid(src: &str) -> ValidPlan {
    let read = read_actions(src, FileId(0), Some(1)).expect("reads");
    pipeweave_check::validate(read.plan).expect("a valid plan")
}

#[test]
fn events_cover_compute_transfers_and_reductions() {
    let plan = valid("0F0,0B0\n1F0,1B0\n");
    let timing = Timing {
        makespan: 4.0,
        intervals: vec![
            vec![
                Interval {
                    start: 0.0,
                    end: 1.0,
                },
                Interval {
                    start: 3.0,
                    end: 4.0,
                },
            ],
            vec![
                Interval {
                    start: 1.0,
                    end: 2.0,
                },
                Interval {
                    start: 2.0,
                    end: 3.0,
                },
            ],
        ],
    };
    let text = write_chrome_trace(&plan, &timing, 1000.0).expect("writes");
    let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let events = value["traceEvents"].as_array().expect("events");
    let slices: Vec<(String, u64, u64, f64, f64)> = events
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            (
                e["name"].as_str().unwrap_or_default().to_string(),
                e["pid"].as_u64().unwrap_or(99),
                e["tid"].as_u64().unwrap_or(99),
                e["ts"].as_f64().unwrap_or(-1.0),
                e["dur"].as_f64().unwrap_or(-1.0),
            )
        })
        .collect();
    let s = |n: &str, p, t, ts, d| (n.to_string(), p, t, ts, d);
    assert_eq!(
        slices,
        vec![
            s("0F0", 0, 0, 0.0, 1000.0),
            s("0B0", 0, 0, 3000.0, 1000.0),
            s("1F0", 1, 0, 1000.0, 1000.0),
            s("1B0", 1, 0, 2000.0, 1000.0),
            s("0SEND_F0 to rank 1", 0, 1000, 1000.0, 0.0),
            s("0RECV_B0 from rank 1", 0, 2000, 3000.0, 0.0),
            s("0REDUCE_GRAD", 0, 3000, 4000.0, 0.0),
            s("1SEND_B0 to rank 0", 1, 1000, 3000.0, 0.0),
            s("1RECV_F0 from rank 0", 1, 2000, 1000.0, 0.0),
            s("1REDUCE_GRAD", 1, 3000, 3000.0, 0.0),
        ]
    );
    assert_eq!(events.iter().filter(|e| e["ph"] == "s").count(), 2);
    assert_eq!(events.iter().filter(|e| e["ph"] == "f").count(), 2);
}

#[test]
fn refuses_a_bad_scale_or_timeline() {
    let plan = valid("0F0,0B0\n");
    let timing = Timing {
        makespan: 2.0,
        intervals: vec![vec![
            Interval {
                start: 0.0,
                end: 1.0,
            },
            Interval {
                start: 1.0,
                end: 2.0,
            },
        ]],
    };
    assert!(write_chrome_trace(&plan, &timing, 0.0).is_err());
    let short = Timing {
        makespan: 2.0,
        intervals: vec![vec![]],
    };
    assert!(write_chrome_trace(&plan, &short, 1.0).is_err());
}

/// Every reduction listed the stages of its part's replicas, one per pipeline, and the end of
/// each was found over all of them: K² for K pipelines (10,000 one-stage pipelines: 500 MB and
/// 12 s). The trace of N one-stage pipelines on one rank is a few hundred bytes per action.
#[test]
fn many_pipelines_make_a_trace_as_long_as_their_work() {
    let size = |n: u32| {
        let plan = pipeweave_check::validate(pipeweave_plan::testing::one_stage_pipelines(n))
            .expect("valid");
        let timing = pipeweave_sim::simulate(&plan, &pipeweave_sim::UnitCosts)
            .expect("runs")
            .timing;
        write_chrome_trace(&plan, &timing, 1.0)
            .expect("writes")
            .len()
    };
    let (small, large) = (size(1000), size(10_000));
    assert!(
        large < 11 * small,
        "{small} bytes for 1,000, {large} for 10,000"
    );
    assert!(large < 10_000 * 700, "{large} bytes for 20,000 actions");
}
