//! The reader and the matcher on hand-made traces: small Chrome-trace JSON written here in the
//! form `torch.profiler`'s `export_chrome_trace` gives (a `traceEvents` list of complete events
//! with `ts` and `dur` in microseconds, and `distributedInfo`), with pipeweave's `pw <cell>` and
//! `pw saved` names or PyTorch's `PP:<cell>`. They are not recordings of a run: each asserts what
//! its few events determine.

use super::*;
use crate::read::MAX_META_ROWS;
use pipeweave_diagnostics::{Diagnostic, FileId};
use pipeweave_plan::cell::StepCell;
use pipeweave_plan::{Action, Kind, Op, Plan};
use std::fmt::Write as _;

fn op(stage: u32, kind: Kind, mb: u32) -> Action {
    Action::One(Op::new(stage, kind, mb))
}

/// 1F1B on 2 ranks with 2 micro-batches. Lowered, rank 0 runs
/// `0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0WAIT_SEND_F0 0RECV_B1 0B1 0WAIT_SEND_F1 0REDUCE_GRAD
/// 0WAIT_REDUCE_GRAD` and rank 1 `1RECV_F0 1F0 1RECV_F1 1B0 1SEND_B0 1F1 1B1 1SEND_B1 1REDUCE_GRAD
/// 1WAIT_REDUCE_GRAD 1WAIT_SEND_B0 1WAIT_SEND_B1`.
fn one_f_one_b() -> Plan {
    Plan::single(
        2,
        vec![0, 1],
        2,
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
        ],
    )
    .expect("a plan")
}

/// A trace as `export_chrome_trace` writes it: `events` are the JSON objects of the list.
fn trace(rank: Option<u32>, events: &[String]) -> String {
    let mut out = String::from("{\n  \"schemaVersion\": 1,\n");
    if let Some(r) = rank {
        let _ = writeln!(
            out,
            "  \"distributedInfo\": {{\"backend\": \"gloo\", \"rank\": {r}, \"world_size\": 2}},"
        );
    }
    out.push_str("  \"traceEvents\": [\n");
    out.push_str(
        "    {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 7, \"tid\": 7, \"ts\": 5.0, \"dur\": 1.0, \"args\": {\"External id\": 3}}",
    );
    for e in events {
        out.push_str(",\n    ");
        out.push_str(e);
    }
    out.push_str("\n  ],\n  \"traceName\": \"rank.json\"\n}\n");
    out
}

/// A `pw` span.
fn span(name: &str, ts: f64, dur: f64) -> String {
    format!(
        "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"{name}\", \"pid\": 7, \"tid\": 7, \"ts\": {ts:?}, \"dur\": {dur:?}}}"
    )
}

/// A `pw saved` instant event.
fn saved(action: &str, ts: f64, bytes: u64, peak: u64) -> String {
    format!(
        "{{\"ph\": \"i\", \"s\": \"t\", \"name\": \"pw saved\", \"pid\": 7, \"tid\": 7, \"ts\": {ts:?}, \"args\": {{\"action\": \"{action}\", \"bytes\": {bytes}, \"peak\": {peak}}}}}"
    )
}

/// Rank 0 of 1F1B for `steps` steps of 100 µs from 1000 µs, with its transfers and saved bytes:
/// F takes 10 µs, B 20 µs.
fn rank0(steps: usize) -> Vec<String> {
    let mut out = Vec::new();
    for s in 0..steps {
        let t = 1000.0 + 100.0 * s as f64;
        out.push(span("pw 0F0", t, 10.0));
        out.push(saved("0F0", t + 10.0, 4096, 4096));
        out.push(span("pw 0SEND_F0", t + 10.0, 1.0));
        out.push(span("pw 0F1", t + 11.0, 10.0));
        out.push(saved("0F1", t + 21.0, 8192, 8192));
        out.push(span("pw 0SEND_F1", t + 21.0, 1.0));
        out.push(span("pw 0RECV_B0", t + 22.0, 18.0));
        out.push(span("pw 0B0", t + 40.0, 20.0));
        out.push(saved("0B0", t + 60.0, 4096, 8192));
        out.push(span("pw 0RECV_B1", t + 60.0, 10.0));
        out.push(span("pw 0B1", t + 70.0, 20.0));
        out.push(saved("0B1", t + 90.0, 0, 8192));
    }
    out
}

/// Rank 1 of 1F1B, as [`rank0`], with no transfers named and no saved bytes.
fn rank1(steps: usize) -> Vec<String> {
    let mut out = Vec::new();
    for s in 0..steps {
        let t = 1000.0 + 100.0 * s as f64;
        out.push(span("pw 1F0", t + 11.0, 10.0));
        out.push(span("pw 1B0", t + 21.0, 20.0));
        out.push(span("pw 1F1", t + 41.0, 10.0));
        out.push(span("pw 1B1", t + 51.0, 20.0));
    }
    out
}

fn read(text: &str, file: u32) -> RankTrace {
    match read_trace(text, FileId(file)) {
        Ok(t) => t,
        Err(d) => panic!("refused: {d:?}"),
    }
}

/// Diagnostics as text: message, span, labels, notes and help.
fn shown(diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diags {
        let _ = write!(out, "{:?}: {}", d.severity, d.message);
        if let Some(s) = &d.span {
            let _ = write!(out, " [file {} {:?}]", s.file.0, s.range);
        }
        out.push('\n');
        for l in &d.labels {
            let _ = writeln!(
                out,
                "  label [file {} {:?}] {}",
                l.span.file.0, l.span.range, l.message
            );
        }
        for n in &d.notes {
            let _ = writeln!(out, "  note: {n}");
        }
        if let Some(h) = &d.help {
            let _ = writeln!(out, "  help: {h}");
        }
    }
    out
}

fn refused(text: &str) -> Vec<Diagnostic> {
    match read_trace(text, FileId(0)) {
        Ok(t) => panic!("accepted: {t:?}"),
        Err(d) => {
            assert!(!d.is_empty());
            for x in &d {
                if let Some(s) = &x.span {
                    assert!(s.range.start <= s.range.end && s.range.end <= text.len());
                }
            }
            d
        }
    }
}

fn unmatched(plan: &Plan, traces: Vec<RankTrace>) -> Vec<Diagnostic> {
    match match_plan(plan, traces) {
        Ok(run) => panic!("matched: {run:?}"),
        Err(d) => d,
    }
}

#[test]
fn a_trace_reads_as_its_actions_in_time_order() {
    let t = read(&trace(Some(0), &rank0(1)), 0);
    assert_eq!(t.naming, Naming::Pipeweave);
    assert_eq!(t.clock, Clock::Cpu);
    assert_eq!(t.rank.as_ref().map(|r| r.value), Some(0));
    assert_eq!(t.world_size.as_ref().map(|r| r.value), Some(2));
    assert_eq!(t.events, 1 + 12);
    let cells: Vec<String> = t.spans.iter().map(|s| s.cell.to_string()).collect();
    assert_eq!(
        cells,
        [
            "0F0", "0SEND_F0", "0F1", "0SEND_F1", "0RECV_B0", "0B0", "0RECV_B1", "0B1"
        ]
    );
    assert_eq!(t.spans[5].start, 1040.0);
    assert_eq!(t.spans[5].dur, 20.0);
    assert_eq!(t.saved.len(), 4);
    assert_eq!((t.saved[1].bytes, t.saved[1].peak), (8192, 8192));
}

#[test]
fn a_run_matches_the_plan_step_by_step() {
    let plan = one_f_one_b();
    let traces = vec![
        read(&trace(Some(1), &rank1(3)), 1),
        read(&trace(Some(0), &rank0(3)), 0),
    ];
    let run = match match_plan(&plan, traces) {
        Ok(run) => run,
        Err(d) => panic!("{}", shown(&d)),
    };
    assert_eq!(run.steps, 3);
    assert!(run.notes.is_empty(), "{:?}", run.notes);
    assert_eq!(run.ranks[0].file, FileId(0));
    assert_eq!(run.ranks[1].file, FileId(1));
    let step = &run.ranks[0].steps[2];
    assert_eq!(
        step.actions[2],
        Timed {
            start: 1240.0,
            dur: 20.0
        }
    );
    let others: Vec<String> = step.others.iter().map(|o| o.step.to_string()).collect();
    assert_eq!(others, ["0SEND_F0", "0SEND_F1", "0RECV_B0", "0RECV_B1"]);
    assert_eq!(step.others[2].after, Some(1));
    assert_eq!(step.others[2].timed.dur, 18.0);
    assert_eq!(
        step.saved[1],
        Some(Saved {
            bytes: 8192,
            peak: 8192
        })
    );
    assert!(run.ranks[0].has_saved);
    assert!(!run.ranks[1].has_saved);
    assert_eq!(
        run.ranks[1].steps[1].actions[3],
        Timed {
            start: 1151.0,
            dur: 20.0
        }
    );
}

#[test]
fn without_ranks_the_order_given_is_said() {
    let plan = one_f_one_b();
    let traces = vec![
        read(&trace(None, &rank0(1)), 0),
        read(&trace(None, &rank1(1)), 1),
    ];
    let run = match_plan(&plan, traces).expect("matched");
    insta::assert_snapshot!("order_note", run.notes.join("\n"));
    // Swapped, the first file is taken as rank 0, and its actions are rank 1's.
    let traces = vec![
        read(&trace(None, &rank1(1)), 0),
        read(&trace(None, &rank0(1)), 1),
    ];
    insta::assert_snapshot!("order_swapped", shown(&unmatched(&plan, traces)));
}

#[test]
fn events_out_of_order_are_sorted() {
    let mut events = rank1(2);
    events.reverse();
    let t = read(&trace(Some(1), &events), 1);
    let starts: Vec<f64> = t.spans.iter().map(|s| s.start).collect();
    let mut sorted = starts.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(starts, sorted);
    let plan = one_f_one_b();
    let run = match_plan(&plan, vec![read(&trace(Some(0), &rank0(2)), 0), t]).expect("matched");
    assert_eq!(run.steps, 2);
}

#[test]
fn a_trace_that_differs_names_the_rank_and_the_first_action() {
    let plan = one_f_one_b();
    let mut events = rank1(1);
    // Step 2 runs 1F1 before 1B0.
    events.extend([
        span("pw 1F0", 1111.0, 10.0),
        span("pw 1F1", 1121.0, 10.0),
        span("pw 1B0", 1131.0, 20.0),
        span("pw 1B1", 1151.0, 20.0),
    ]);
    let traces = vec![
        read(&trace(Some(0), &rank0(2)), 0),
        read(&trace(Some(1), &events), 1),
    ];
    insta::assert_snapshot!("differs", shown(&unmatched(&plan, traces)));
}

#[test]
fn a_transfer_out_of_place_is_an_error() {
    let plan = one_f_one_b();
    let mut events = rank0(1);
    events.push(span("pw 0RECV_F0", 1095.0, 1.0));
    let traces = vec![
        read(&trace(Some(0), &events), 0),
        read(&trace(Some(1), &rank1(1)), 1),
    ];
    insta::assert_snapshot!("transfer_out_of_place", shown(&unmatched(&plan, traces)));
}

#[test]
fn a_step_cut_short_is_an_error() {
    let plan = one_f_one_b();
    let mut events = rank1(2);
    events.truncate(6);
    let traces = vec![
        read(&trace(Some(0), &rank0(2)), 0),
        read(&trace(Some(1), &events), 1),
    ];
    insta::assert_snapshot!("cut_short", shown(&unmatched(&plan, traces)));
}

#[test]
fn ranks_with_different_numbers_of_steps_are_an_error() {
    let plan = one_f_one_b();
    let traces = vec![
        read(&trace(Some(0), &rank0(3)), 0),
        read(&trace(Some(1), &rank1(2)), 1),
    ];
    insta::assert_snapshot!("steps_differ", shown(&unmatched(&plan, traces)));
}

#[test]
fn a_rank_twice_and_a_missing_rank_are_errors() {
    let plan = one_f_one_b();
    let traces = vec![
        read(&trace(Some(0), &rank0(1)), 0),
        read(&trace(Some(0), &rank0(1)), 1),
    ];
    insta::assert_snapshot!("rank_twice", shown(&unmatched(&plan, traces)));
    let traces = vec![read(&trace(Some(1), &rank1(1)), 0)];
    insta::assert_snapshot!("rank_missing", shown(&unmatched(&plan, traces)));
    let traces = vec![read(&trace(None, &rank0(1)), 0)];
    insta::assert_snapshot!("rank_missing_unnamed", shown(&unmatched(&plan, traces)));
    let traces = vec![
        read(&trace(Some(0), &rank0(1)), 0),
        read(&trace(None, &rank1(1)), 1),
    ];
    insta::assert_snapshot!("rank_unnamed_among_named", shown(&unmatched(&plan, traces)));
}

#[test]
fn saved_records_of_another_rank_are_an_error() {
    let plan = one_f_one_b();
    let mut events = rank1(1);
    events.push(saved("0F0", 1050.0, 1, 1));
    let traces = vec![
        read(&trace(Some(0), &rank0(1)), 0),
        read(&trace(Some(1), &events), 1),
    ];
    insta::assert_snapshot!("saved_other_rank", shown(&unmatched(&plan, traces)));
}

#[test]
fn pytorch_names_are_read() {
    // PyTorch's runtime names every action of its lowered program `PP:<cell>`, FSDP's too.
    let events = [
        span("PP:1RECV_F0", 1000.0, 5.0),
        span("PP:1UNSHARD", 1005.0, 1.0),
        span("PP:1F0", 1006.0, 10.0),
        span("PP:1RECV_F1", 1016.0, 1.0),
        span("PP:1B0", 1017.0, 20.0),
        span("PP:1SEND_B0", 1037.0, 1.0),
        span("PP:1F1", 1038.0, 10.0),
        span("PP:1B1", 1048.0, 20.0),
        span("PP:1SEND_B1", 1068.0, 1.0),
        span("PP:1REDUCE_GRAD", 1069.0, 1.0),
    ];
    let t = read(&trace(Some(1), &events), 1);
    assert_eq!(t.naming, Naming::PyTorch);
    assert!(t.saved.is_empty());
    let r0: Vec<String> = rank0(1)
        .iter()
        .map(|e| e.replace("pw 0", "PP:0"))
        .filter(|e| !e.contains("pw saved"))
        .collect();
    let plan = one_f_one_b();
    let run = match_plan(&plan, vec![read(&trace(Some(0), &r0), 0), t]).expect("matched");
    assert_eq!(run.naming, Naming::PyTorch);
    assert_eq!(run.ranks[1].steps[0].others.len(), 5);
    assert!(!run.ranks[1].has_saved);
    insta::assert_snapshot!("pytorch_notes", run.notes.join("\n"));
}

#[test]
fn gpu_annotations_are_the_clock_when_present() {
    let mut events = rank1(1);
    for e in rank1(1) {
        events.push(
            e.replace("user_annotation", "gpu_user_annotation")
                .replace("\"dur\": 10.0", "\"dur\": 12.5"),
        );
    }
    let t = read(&trace(Some(1), &events), 1);
    assert_eq!(t.clock, Clock::Gpu);
    assert_eq!(t.spans.len(), 4);
    assert_eq!(t.spans[0].dur, 12.5);
}

#[test]
fn pipeweave_names_win_over_pytorch_names() {
    let mut events = rank1(1);
    events.push(span("PP:1F0", 2000.0, 1.0));
    let t = read(&trace(Some(1), &events), 1);
    assert_eq!(t.naming, Naming::Pipeweave);
    assert_eq!(t.spans.len(), 4);
}

#[test]
fn hostile_traces_are_located_errors() {
    let good = trace(Some(0), &rank0(1));
    let cases: Vec<(&str, String)> = vec![
        ("truncated", good[..good.len() / 2].to_owned()),
        ("empty", String::new()),
        ("not_an_object", "[1, 2, 3]".to_owned()),
        ("no_events", "{\"schemaVersion\": 1}".to_owned()),
        ("no_actions", trace(Some(0), &[])),
        (
            "events_not_a_list",
            "{\"traceEvents\": {\"a\": 1}}".to_owned(),
        ),
        ("event_not_an_object", trace(Some(0), &["17".to_owned()])),
        (
            "posting_of_a_compute_action",
            trace(Some(0), &[span("pw post 0F0", 1.0, 1.0)]),
        ),
        (
            "postings_overlapping",
            trace(
                Some(1),
                &[
                    span("pw post 1RECV_F0", 1.0, 5.0),
                    span("pw post 1RECV_F1", 2.0, 1.0),
                ],
            ),
        ),
        (
            "posting_of_nothing",
            trace(Some(0), &[span("pw post ", 1.0, 1.0)]),
        ),
        (
            "ts_a_string",
            trace(
                Some(0),
                &[span("pw 0F0", 1.0, 1.0).replace("\"ts\": 1.0", "\"ts\": \"1\"")],
            ),
        ),
        (
            "huge_ts",
            trace(
                Some(0),
                &[span("pw 0F0", 1.0, 1.0).replace("\"ts\": 1.0", "\"ts\": 1e300")],
            ),
        ),
        (
            "out_of_range_number",
            trace(
                Some(0),
                &[span("pw 0F0", 1.0, 1.0).replace("\"ts\": 1.0", "\"ts\": 1e400")],
            ),
        ),
        (
            "nan",
            trace(
                Some(0),
                &[span("pw 0F0", 1.0, 1.0).replace("\"ts\": 1.0", "\"ts\": NaN")],
            ),
        ),
        ("negative_dur", trace(Some(0), &[span("pw 0F0", 1.0, -3.0)])),
        (
            "missing_dur",
            trace(
                Some(0),
                &["{\"ph\": \"X\", \"name\": \"pw 0F0\", \"ts\": 1}".to_owned()],
            ),
        ),
        ("bad_cell", trace(Some(0), &[span("pw 0Q0", 1.0, 1.0)])),
        (
            "not_complete",
            trace(
                Some(0),
                &[span("pw 0F0", 1.0, 1.0).replace("\"X\"", "\"B\"")],
            ),
        ),
        (
            "overlap",
            trace(
                Some(0),
                &[span("pw 0F0", 1.0, 10.0), span("pw 0F1", 5.0, 10.0)],
            ),
        ),
        (
            "rank_a_string",
            trace(Some(0), &rank0(1)).replace("\"rank\": 0", "\"rank\": \"0\""),
        ),
        (
            "rank_outside_world",
            trace(Some(0), &rank0(1)).replace("\"rank\": 0", "\"rank\": 5"),
        ),
        (
            "saved_not_whole",
            trace(
                Some(0),
                &[saved("0F0", 1.0, 1, 1).replace("\"bytes\": 1", "\"bytes\": 1.5")],
            ),
        ),
        (
            "saved_peak_below",
            trace(Some(0), &[saved("0F0", 1.0, 9, 1)]),
        ),
        (
            "saved_no_args",
            trace(
                Some(0),
                &["{\"ph\": \"i\", \"name\": \"pw saved\", \"ts\": 1}".to_owned()],
            ),
        ),
        (
            "saved_transfer",
            trace(Some(0), &[saved("0SEND_F0", 1.0, 1, 1)]),
        ),
        (
            "deep_nesting",
            format!(
                "{{\"traceEvents\": [{{\"args\": {}1{}}}]}}",
                "[".repeat(100_000),
                "]".repeat(100_000)
            ),
        ),
        ("trailing", format!("{good} x")),
        (
            "events_twice",
            "{\"traceEvents\": [], \"traceEvents\": []}".to_owned(),
        ),
    ];
    let mut out = String::new();
    for (name, text) in &cases {
        let _ = writeln!(out, "== {name}\n{}", shown(&refused(text)));
    }
    insta::assert_snapshot!("hostile", out);
}

#[test]
fn many_problems_are_bounded() {
    let events: Vec<String> = (0..1000)
        .map(|i| span("pw 0Q0", f64::from(i), 1.0))
        .collect();
    let d = refused(&trace(Some(0), &events));
    assert_eq!(d.len(), read::MAX_PROBLEMS);
    assert_eq!(
        d.last().map(|d| d.notes.clone()),
        Some(vec![
            "and 980 more problems in this file, not shown".to_owned()
        ])
    );
}

#[test]
fn a_million_events_read_with_only_the_actions_kept() {
    let mut events: Vec<String> = (0..1_000_000)
        .map(|i| format!("{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::add\", \"ts\": {i}, \"dur\": 0.5}}"))
        .collect();
    events.extend(rank0(1));
    let t = read(&trace(Some(0), &events), 0);
    assert_eq!(t.events, 1_000_000 + 1 + 12);
    assert_eq!(t.spans.len(), 8);
    assert!(t.spans.capacity() < 64);
}

#[test]
fn cells_of_spans_are_the_plans() {
    let t = read(
        &trace(Some(0), &[span("pw (0F3;7B5)OVERLAP_F_B", 1.0, 2.0)]),
        0,
    );
    assert_eq!(
        t.spans[0].cell,
        StepCell::Compute(Action::Pair {
            f: Op::new(0, Kind::F, 3),
            b: Op::new(7, Kind::B, 5)
        })
    );
}

/// Rank 1 of 1F1B as PlanRunner times it: each receive's wait right before the action that
/// consumes its data (`1RECV_F1` before `1F1`, where the program posts it before `1B0`).
fn rank1_waits(steps: usize) -> Vec<String> {
    let mut out = Vec::new();
    for s in 0..steps {
        let t = 1000.0 + 100.0 * s as f64;
        out.push(span("pw 1RECV_F0", t + 1.0, 10.0));
        out.push(span("pw 1F0", t + 11.0, 10.0));
        out.push(span("pw 1B0", t + 21.0, 20.0));
        out.push(span("pw 1SEND_B0", t + 41.0, 1.0));
        out.push(span("pw 1RECV_F1", t + 42.0, 0.5));
        out.push(span("pw 1F1", t + 42.5, 10.0));
        out.push(span("pw 1B1", t + 52.5, 20.0));
    }
    out
}

#[test]
fn a_receive_waits_anywhere_from_its_posting_to_its_consumer() {
    let plan = one_f_one_b();
    let traces = vec![
        read(&trace(Some(0), &rank0(2)), 0),
        read(&trace(Some(1), &rank1_waits(2)), 1),
    ];
    let run = match match_plan(&plan, traces) {
        Ok(run) => run,
        Err(d) => panic!("{}", shown(&d)),
    };
    assert_eq!(run.steps, 2);
    let step = &run.ranks[1].steps[1];
    let others: Vec<(String, Option<usize>)> = step
        .others
        .iter()
        .map(|o| (o.step.to_string(), o.after))
        .collect();
    assert_eq!(
        others,
        [
            ("1RECV_F0".to_owned(), None),
            ("1SEND_B0".to_owned(), Some(1)),
            ("1RECV_F1".to_owned(), Some(1)),
        ]
    );
    assert_eq!(step.others[2].timed.start, 1142.0);
    assert_eq!(step.actions[2].start, 1142.5);
}

/// Rank 1 of 1F1B as PlanRunner times it since it names the postings: each receive posted where
/// the program posts it (`pw post 1RECV_F1` between `1F0` and `1B0`), and waited for right
/// before the action that consumes its data.
fn rank1_posted(steps: usize) -> Vec<String> {
    let mut out = Vec::new();
    for s in 0..steps {
        let t = 1000.0 + 100.0 * s as f64;
        out.push(span("pw post 1RECV_F0", t + 0.2, 0.5));
        out.push(span("pw 1RECV_F0", t + 1.0, 10.0));
        out.push(span("pw 1F0", t + 11.0, 10.0));
        out.push(span("pw post 1RECV_F1", t + 21.0, 0.5));
        out.push(span("pw 1B0", t + 21.5, 20.0));
        out.push(span("pw 1SEND_B0", t + 41.5, 1.0));
        out.push(span("pw 1RECV_F1", t + 42.5, 0.5));
        out.push(span("pw 1F1", t + 43.0, 10.0));
        out.push(span("pw 1B1", t + 53.0, 20.0));
    }
    out
}

#[test]
fn a_posting_stands_where_the_program_posts_its_receive() {
    let plan = one_f_one_b();
    let traces = vec![
        read(&trace(Some(0), &rank0(2)), 0),
        read(&trace(Some(1), &rank1_posted(2)), 1),
    ];
    let run = match match_plan(&plan, traces) {
        Ok(run) => run,
        Err(d) => panic!("{}", shown(&d)),
    };
    let step = &run.ranks[1].steps[1];
    let others: Vec<(String, Option<usize>, bool)> = step
        .others
        .iter()
        .map(|o| (o.step.to_string(), o.after, o.post))
        .collect();
    assert_eq!(
        others,
        [
            ("1RECV_F0".to_owned(), None, true),
            ("1RECV_F0".to_owned(), None, false),
            ("1RECV_F1".to_owned(), Some(0), true),
            ("1SEND_B0".to_owned(), Some(1), false),
            ("1RECV_F1".to_owned(), Some(1), false),
        ]
    );
    assert_eq!(step.others[2].timed.start, 1121.0);
    // A posting anywhere else than its place in the program is the first step that differs.
    let mut moved = rank1_posted(1);
    moved.swap(3, 4);
    moved[3] = span("pw 1B0", 1021.0, 20.0);
    moved[4] = span("pw post 1RECV_F1", 1041.1, 0.3);
    let traces = vec![
        read(&trace(Some(0), &rank0(1)), 0),
        read(&trace(Some(1), &moved), 1),
    ];
    insta::assert_snapshot!("posting_out_of_place", shown(&unmatched(&plan, traces)));
}

#[test]
fn a_receive_out_of_its_window_is_an_error() {
    let plan = one_f_one_b();
    let rank1 = || read(&trace(Some(1), &rank1_waits(1)), 1);
    let with = |events: Vec<String>| {
        let traces = vec![read(&trace(Some(0), &events), 0), rank1()];
        shown(&unmatched(&plan, traces))
    };
    let mut out = String::new();
    // After the action that consumes it: 0RECV_B0 after 0B0 (and no 0RECV_B1).
    let mut events = rank0(1);
    events.remove(9);
    events[6] = span("pw 0RECV_B0", 1065.0, 1.0);
    out.push_str(&with(events));
    // Before its posting: the program posts 0RECV_B1 after 0B0.
    let mut events = rank0(1);
    events[6] = span("pw 0RECV_B0", 1022.0, 5.0);
    events[9] = span("pw 0RECV_B1", 1030.0, 5.0);
    out.push_str(&with(events));
    // Twice.
    let mut events = rank0(1);
    events[9] = span("pw 0RECV_B1", 1062.0, 8.0);
    events.insert(9, span("pw 0RECV_B1", 1060.0, 1.0));
    out.push_str(&with(events));
    // Data rank 0 never receives.
    let mut events = rank0(1);
    events.insert(0, span("pw 0RECV_F0", 990.0, 1.0));
    out.push_str(&with(events));
    insta::assert_snapshot!("receive_out_of_window", out);
}

#[test]
fn profiler_step_spans_bound_the_steps_they_hold() {
    let plan = one_f_one_b();
    // Rank 0: a step span around each of its 3 steps (95 µs from 2 µs before the first action),
    // one on a GPU stream (skipped) and one instant (skipped). Rank 1: spans around steps 0 and
    // 2 only, and the one of step 1 ends before its last action: no bounds there.
    let mut r0 = rank0(3);
    for s in 0..3 {
        let t = 1000.0 + 100.0 * s as f64;
        r0.push(span(&format!("ProfilerStep#{}", s + 2), t - 2.0, 95.0));
    }
    r0.push(
        "{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"ProfilerStep#9\", \"ts\": 0.0, \"dur\": 9999.0}"
            .to_owned(),
    );
    r0.push("{\"ph\": \"i\", \"name\": \"ProfilerStep#10\", \"ts\": 0.0}".to_owned());
    let mut r1 = rank1(3);
    r1.push(span("ProfilerStep#2", 1005.0, 80.0));
    r1.push(span("ProfilerStep#3", 1105.0, 30.0));
    r1.push(span("ProfilerStep#4", 1305.0, 80.0));
    let (t0, t1) = (read(&trace(Some(0), &r0), 0), read(&trace(Some(1), &r1), 1));
    assert_eq!(t0.step_spans.len(), 3);
    assert_eq!(
        t0.step_spans[1],
        StepSpan {
            start: 1098.0,
            dur: 95.0
        }
    );
    let run = match match_plan(&plan, vec![t0, t1]) {
        Ok(run) => run,
        Err(d) => panic!("{}", shown(&d)),
    };
    let bounds =
        |r: usize| -> Vec<Option<Timed>> { run.ranks[r].steps.iter().map(|s| s.bounds).collect() };
    assert_eq!(
        bounds(0),
        [998.0, 1098.0, 1198.0].map(|start| Some(Timed { start, dur: 95.0 }))
    );
    assert_eq!(
        bounds(1),
        [
            Some(Timed {
                start: 1005.0,
                dur: 80.0
            }),
            None,
            None
        ]
    );
}

/// Rank 0's trace of 1F1B with a `pipeweave` object `meta` (the JSON text) after its events.
fn with_meta(meta: &str) -> String {
    let text = trace(Some(0), &rank0(1));
    let end = text.rfind('}').expect("an object");
    format!("{},\n  \"pipeweave\": {meta}\n}}", text[..end].trim_end())
}

#[test]
fn the_pipeweave_object_gives_the_messages_gradients_and_probe() {
    let meta = r#"{"rank": 0, "ranks": 2, "steps": 1,
        "messages": [{"stage": 0, "dir": "F", "from": 0, "to": 1, "bytes": 65536},
                     {"stage": 1, "dir": "B", "from": 1, "to": 0, "bytes": 32768}],
        "gradients": [{"part": 0, "bytes": 881664}],
        "probe": {"repeats": 3,
                  "p2p": [{"from": 0, "to": 1, "bytes": 1024, "time": 1e-4},
                          {"from": 0, "to": 1, "bytes": 4096, "time": 2.5e-4}],
                  "all_reduce": [{"ranks": [0, 1], "bytes": 881664, "time": 0.002}]}}"#;
    let t = read(&with_meta(meta), 0);
    let m = t.meta.expect("the object is read");
    assert_eq!(
        m.messages,
        vec![
            Message {
                stage: 0,
                forward: true,
                from: 0,
                to: 1,
                bytes: 65536
            },
            Message {
                stage: 1,
                forward: false,
                from: 1,
                to: 0,
                bytes: 32768
            },
        ]
    );
    assert_eq!(
        m.gradients,
        vec![PartGradient {
            part: 0,
            bytes: 881664
        }]
    );
    let p = m.probe.expect("the probe is read");
    assert_eq!(p.repeats, 3);
    assert_eq!(
        p.p2p,
        vec![
            ProbePoint {
                from: 0,
                to: 1,
                bytes: 1024,
                seconds: 1e-4
            },
            ProbePoint {
                from: 0,
                to: 1,
                bytes: 4096,
                seconds: 2.5e-4
            },
        ]
    );
    assert_eq!(
        p.all_reduce,
        vec![ProbePoint {
            from: 0,
            to: 1,
            bytes: 881664,
            seconds: 0.002
        }]
    );
    // The matched run carries it to the calibration.
    let plan = one_f_one_b();
    let run = match_plan(
        &plan,
        vec![
            read(&with_meta(meta), 0),
            read(&trace(Some(1), &rank1(1)), 1),
        ],
    )
    .expect("matches");
    assert_eq!(
        run.ranks[0].meta.as_ref().map(|m| m.gradients.len()),
        Some(1)
    );
    assert_eq!(run.ranks[1].meta, None);
    // A trace without the object has none.
    assert_eq!(read(&trace(Some(0), &rank0(1)), 0).meta, None);
}

#[test]
fn a_hostile_pipeweave_object_is_refused_at_its_values() {
    let cases = [
        ("not an object", r#"[1, 2]"#),
        ("probe not an object", r#"{"probe": [3, [], []]}"#),
        ("row a list", r#"{"gradients": [[0, 5]]}"#),
        ("repeats negative", r#"{"probe": {"repeats": -3}}"#),
        (
            "negative bytes",
            r#"{"messages": [{"stage": 0, "dir": "F", "from": 0, "to": 1, "bytes": -5}]}"#,
        ),
        (
            "bad dir",
            r#"{"messages": [{"stage": 0, "dir": "X", "from": 0, "to": 1, "bytes": 5}]}"#,
        ),
        (
            "missing dir",
            r#"{"messages": [{"stage": 0, "from": 0, "to": 1, "bytes": 5}]}"#,
        ),
        (
            "fractional bytes",
            r#"{"gradients": [{"part": 0, "bytes": 1.5}]}"#,
        ),
        (
            "huge rank",
            r#"{"probe": {"repeats": 3, "p2p": [{"from": 0, "to": 4294967295, "bytes": 8, "time": 1e-4}]}}"#,
        ),
        (
            "to itself",
            r#"{"probe": {"repeats": 3, "p2p": [{"from": 1, "to": 1, "bytes": 8, "time": 1e-4}]}}"#,
        ),
        (
            "negative time",
            r#"{"probe": {"repeats": 3, "p2p": [{"from": 0, "to": 1, "bytes": 8, "time": -1e-4}]}}"#,
        ),
        (
            "zero time",
            r#"{"probe": {"repeats": 3, "all_reduce": [{"ranks": [0, 1], "bytes": 8, "time": 0}]}}"#,
        ),
        (
            "time as text",
            r#"{"probe": {"repeats": 3, "all_reduce": [{"ranks": [0, 1], "bytes": 8, "time": "NaN"}]}}"#,
        ),
        (
            "ranks reversed",
            r#"{"probe": {"repeats": 3, "all_reduce": [{"ranks": [1, 0], "bytes": 8, "time": 1e-3}]}}"#,
        ),
        ("no repeats", r#"{"probe": {"p2p": []}}"#),
        ("p2p not a list", r#"{"probe": {"repeats": 3, "p2p": 7}}"#),
        ("row not an object", r#"{"gradients": [3]}"#),
    ];
    let mut out = String::new();
    for (name, meta) in cases {
        let text = with_meta(meta);
        let at = text.find("\"pipeweave\"").expect("the key");
        let d = read_trace(&text, FileId(0)).expect_err(name);
        let _ = writeln!(out, "{name}:");
        for p in &d {
            let span = p.span.as_ref().expect("located");
            assert!(span.range.start >= at, "{name}: {p:?} is before the object");
            let _ = writeln!(out, "  {} at `{}`", p.message, &text[span.range.clone()]);
        }
    }
    insta::assert_snapshot!("hostile_meta", out);
}

#[test]
fn a_pipeweave_list_too_long_is_refused_without_reading_it_all() {
    let rows = vec!["{\"part\": 0, \"bytes\": 1}"; MAX_META_ROWS + 1].join(",");
    let text = with_meta(&format!("{{\"gradients\": [{rows}]}}"));
    let d = read_trace(&text, FileId(0)).expect_err("too long");
    assert_eq!(d.len(), 1);
    assert_eq!(
        d[0].message,
        format!("`pipeweave.gradients` has more than {MAX_META_ROWS} rows")
    );
    // NaN is no JSON: the file is refused where it stands.
    let text = with_meta(
        r#"{"probe": {"repeats": 3, "p2p": [{"from": 0, "to": 1, "bytes": 8, "time": NaN}]}}"#,
    );
    let d = read_trace(&text, FileId(0)).expect_err("NaN");
    assert!(
        d[0].message.starts_with("invalid trace JSON"),
        "{}",
        d[0].message
    );
}
