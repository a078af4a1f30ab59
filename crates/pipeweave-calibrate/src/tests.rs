//! Calibration of the hand-made traces of `tests/fixtures/traces/1f1b-p2-m4` (see the README
//! there: made-up durations in the exact form `torch.profiler` writes), whose every figure is set
//! by `make.py`: forwards of 1000 µs (part 0) and 1200 µs (part 1) plus 0 to 40 µs by step and
//! micro-batch, backwards twice that, sends launched in 20 µs, 150 µs from both sides ready to
//! received, 2 MiB and 1.5 MiB saved per forward.

use super::*;
use pipeweave_diagnostics::FileId;
use pipeweave_plan::{Action, Kind, Op, Plan};
use pipeweave_sim::CostModel;
use pipeweave_trace::{match_plan, read_trace};

const RANK0: &str = include_str!("../../../tests/fixtures/traces/1f1b-p2-m4/rank0.json");
const RANK1: &str = include_str!("../../../tests/fixtures/traces/1f1b-p2-m4/rank1.json");

fn op(stage: u32, kind: Kind, mb: u32) -> Action {
    Action::One(Op::new(stage, kind, mb))
}

/// 1F1B, P = 2, M = 4.
fn plan() -> Plan {
    use Kind::{B, F};
    Plan::single(
        2,
        vec![0, 1],
        4,
        vec![
            vec![
                op(0, F, 0),
                op(0, F, 1),
                op(0, B, 0),
                op(0, F, 2),
                op(0, B, 1),
                op(0, F, 3),
                op(0, B, 2),
                op(0, B, 3),
            ],
            vec![
                op(1, F, 0),
                op(1, B, 0),
                op(1, F, 1),
                op(1, B, 1),
                op(1, F, 2),
                op(1, B, 2),
                op(1, F, 3),
                op(1, B, 3),
            ],
        ],
    )
    .expect("1F1B")
}

fn calibration() -> (Calibration, Vec<String>) {
    let plan = plan();
    let traces = vec![
        read_trace(RANK0, FileId(0)).expect("rank 0 reads"),
        read_trace(RANK1, FileId(1)).expect("rank 1 reads"),
    ];
    let run = match_plan(&plan, traces).expect("the run matches 1F1B");
    let names = ["rank0.json".to_owned(), "rank1.json".to_owned()];
    measure(MeasureInput {
        plan: &plan,
        plan_name: "1f1b",
        traces: &names,
        run: &run,
    })
    .expect("measured")
}

#[test]
fn the_fixture_calibrates_to_its_made_up_figures() {
    let (c, notes) = calibration();
    // What a receive's span measures, that there is no link probe, what the host's gaps are,
    // that the fixture times no receive's posting (it is made in the form of PlanRunner's traces
    // before `pw post` spans), and that it has no profiler step spans.
    assert_eq!(notes.len(), 5, "{notes:?}");
    assert!(notes[0].starts_with("link times are from the receives' waits"));
    assert!(notes[1].starts_with("the traces hold no link probe"));
    assert!(notes[2].starts_with("host time between actions"));
    assert!(notes[3].starts_with("a run of PlanRunner timed no receive's posting"));
    assert!(notes[4].starts_with("the traces have no profiler step spans"));
    assert!(c.overhead.post_recv.is_none());
    // Every send is posted in 20 µs: 4 a step on each rank, over 3 steps. The host's gap before
    // a forward held the one before it (the receive's wait is not host time); timed per send, it
    // is out of the gap, which is then none, every time.
    let send = c.overhead.send.expect("the sends' postings");
    assert_eq!(send.samples, 24);
    assert!(
        (send.min - 20e-6).abs() < 1e-12 && (send.max - 20e-6).abs() < 1e-12,
        "{send:?}"
    );
    let f = c.overhead.gap.f.expect("gaps before forwards");
    assert!(f.median == 0.0 && f.max == 0.0, "{f:?}");
    // The fixture waits for no send.
    assert!(c.overhead.wait_send.is_none());
    assert!(c.overhead.step.is_none() && c.overhead.head.is_none());
    // Forwards of part 0: 1000 µs plus ((7 mb + 3 step) mod 5) · 10 µs over 3 steps and 4
    // micro-batches: 1000, 1020, 1040, 1010 | 1030, 1000, 1020, 1040 | 1010, 1030, 1000, 1020.
    assert_eq!(c.parts[0].f.samples, 12);
    assert!((c.parts[0].f.median - 1020e-6).abs() < 1e-12);
    assert!((c.parts[0].f.min - 1000e-6).abs() < 1e-12);
    assert!((c.parts[0].f.max - 1040e-6).abs() < 1e-12);
    assert!((c.parts[1].b.expect("B").median - 2420e-6).abs() < 1e-12);
    assert_eq!(c.parts[0].saved_bytes, Some(2_097_152));
    assert_eq!(c.parts[1].saved_bytes, Some(1_572_864));
    assert_eq!(c.ranks[0].peak_saved_bytes, Some(2 * 2_097_152));
    assert_eq!(c.ranks[1].peak_saved_bytes, Some(1_572_864));
    // Every transfer: 150 µs once both sides are there.
    assert_eq!(c.links.len(), 2);
    for l in &c.links {
        assert!((l.transfer.median - 150e-6).abs() < 1e-9, "{l:?}");
    }
    assert_eq!(c.measured.when.as_deref(), Some("2026-12-07T05:31:12Z"));
    assert_eq!(c.measured.steps, 3);
    let text = write_costs(&c).expect("written");
    insta::assert_snapshot!("costs_toml", text);
    assert_eq!(read_costs(&text, FileId(0)).expect("reads back"), c);
}

/// What a measured kind of action costs: its mean (`MeasuredCosts`'s rule).
fn typical(s: &Stats) -> f64 {
    s.mean.expect("a mean")
}

#[test]
fn measured_costs_are_the_means_on_the_same_parts() {
    let (c, _) = calibration();
    let plan = plan();
    let (costs, notes) = MeasuredCosts::for_plan(&c, &plan).expect("costs");
    assert_eq!(
        notes,
        [
            "the run did not time its steps whole (no profiler step spans): the predicted step is the actions' alone",
            "each of the plan's 8 sends a step adds its rank 20.0 µs of host time right after the action that computes it (the mean of `overhead.send`), and the run timed no wait for a send between two actions (`overhead.wait_send`): none is added",
        ]
    );
    assert_eq!(costs.op(Op::new(0, Kind::F, 0)), typical(&c.parts[0].f));
    // The host's time before an action is its gaps' mean.
    let gap_f = c.overhead.gap.f.and_then(|s| s.mean).expect("a mean");
    assert_eq!(costs.host_gap(op(0, Kind::F, 1)), gap_f);
    // After an action whose output leaves its rank, its send's posting: rank 0's forwards and
    // rank 1's backwards; nothing after the others.
    let send = c.overhead.send.and_then(|s| s.mean).expect("a mean");
    assert_eq!(costs.host_after(op(0, Kind::F, 1)), send);
    assert_eq!(costs.host_after(op(1, Kind::B, 1)), send);
    assert_eq!(costs.host_after(op(1, Kind::F, 1)), 0.0);
    assert_eq!(costs.host_after(op(0, Kind::B, 1)), 0.0);
    assert_eq!(costs.outside_actions(), 0.0);
    assert_eq!(
        costs.op(Op::new(1, Kind::B, 2)),
        typical(&c.parts[1].b.expect("B"))
    );
    assert!((costs.transfer(0, 1) - 150e-6).abs() < 1e-9);
}

#[test]
fn each_receive_posting_is_charged_before_the_action_that_uses_its_data() {
    let (mut c, _) = calibration();
    let plan = plan();
    let (without, _) = MeasuredCosts::for_plan(&c, &plan).expect("costs");
    c.overhead.post_recv = Stats::of(&[100e-6, 300e-6]);
    let (costs, notes) = MeasuredCosts::for_plan(&c, &plan).expect("costs");
    assert!(
        notes.contains(&"each of the plan's 8 receives a step adds its rank 200.0 µs of host time before the action that uses its data (the mean of `overhead.post_recv`: the rank posts it earlier, where its lowered program does, for the same time)".to_owned()),
        "{notes:?}"
    );
    // Rank 1's forwards receive from rank 0, rank 0's backwards from rank 1: each gets the mean.
    for (action, posted) in [
        (op(1, Kind::F, 2), true),
        (op(0, Kind::B, 2), true),
        (op(0, Kind::F, 2), false),
        (op(1, Kind::B, 2), false),
    ] {
        let added = costs.host_gap(action) - without.host_gap(action);
        let expected = if posted { 200e-6 } else { 0.0 };
        assert!((added - expected).abs() < 1e-15, "{action}: {added}");
    }
}

#[test]
fn other_cuts_of_the_model_take_their_share() {
    let (c, _) = calibration();
    // Interleaved on 2 ranks with 2 stages each: 4 parts, each half of a measured part, I and W.
    use Kind::{F, I, W};
    let plan = interleaved();
    let (costs, notes) = MeasuredCosts::for_plan(&c, &plan).expect("costs");
    insta::assert_snapshot!("share_notes", notes.join("\n"));
    let half0 = typical(&c.parts[0].f) / 2.0;
    let half1 = typical(&c.parts[1].f) / 2.0;
    assert!((costs.op(Op::new(0, F, 0)) - half0).abs() < 1e-15);
    assert!((costs.op(Op::new(1, F, 0)) - half0).abs() < 1e-15);
    assert!((costs.op(Op::new(2, F, 0)) - half1).abs() < 1e-15);
    assert!((costs.op(Op::new(3, I, 0)) - typical(&c.parts[1].b.expect("B")) / 4.0).abs() < 1e-15);
    // The run split no backward. The first part's I computes no input gradient: the plan's part 0
    // (the first half of measured part 0) has none, and its W all of its backward; the plan's
    // part 1 (the second half) has an input gradient, and splits its share as the others do.
    let b0 = typical(&c.parts[0].b.expect("B"));
    assert_eq!(costs.op(Op::new(0, I, 0)), 0.0);
    assert!((costs.op(Op::new(0, W, 0)) - b0 / 2.0).abs() < 1e-15);
    assert!((costs.op(Op::new(1, I, 0)) - b0 / 4.0).abs() < 1e-15);
    assert!((costs.op(Op::new(1, W, 0)) - b0 / 4.0).abs() < 1e-15);
}

#[test]
fn the_first_part_of_a_run_without_split_backwards_has_no_i() {
    let (c, _) = calibration();
    use Kind::{F, I, W};
    let programs = vec![
        vec![op(0, F, 0), op(0, I, 0), op(0, W, 0)],
        vec![op(1, F, 0), op(1, I, 0), op(1, W, 0)],
    ];
    let plan = Plan::single(2, vec![0, 1], 1, programs).expect("a plan");
    let (costs, notes) = MeasuredCosts::for_plan(&c, &plan).expect("costs");
    let (b0, b1) = (
        typical(&c.parts[0].b.expect("B")),
        typical(&c.parts[1].b.expect("B")),
    );
    assert_eq!(costs.op(Op::new(0, I, 0)), 0.0);
    assert_eq!(costs.op(Op::new(0, W, 0)), b0);
    assert_eq!(costs.op(Op::new(1, I, 0)), b1 / 2.0);
    assert_eq!(costs.op(Op::new(1, W, 0)), b1 / 2.0);
    assert!(
        notes[0].starts_with("the run timed no I and W of part 0 apart: its I is taken as no time"),
        "{notes:?}"
    );
    assert!(
        notes[1].starts_with("the run timed no I and W apart beyond part 0: each is taken as half"),
        "{notes:?}"
    );
}

#[test]
fn a_later_part_in_the_first_parts_slice_splits_as_the_measured_parts_do() {
    let (mut c, _) = calibration();
    // Part 1's I and W measured (as a ZB-H1 run of PlanRunner's times them): together 1.75 times
    // its B; part 0's only B, its first part's I none.
    let b1 = typical(&c.parts[1].b.expect("B"));
    c.parts[1].i = Stats::of(&[0.8 * b1]);
    c.parts[1].w = Stats::of(&[0.95 * b1]);
    use Kind::{I, W};
    let plan = interleaved();
    let (costs, _) = MeasuredCosts::for_plan(&c, &plan).expect("costs");
    let b0 = typical(&c.parts[0].b.expect("B"));
    // The plan's part 0 starts the model: no I, all of its half of B in W.
    assert_eq!(costs.op(Op::new(0, I, 0)), 0.0);
    assert!((costs.op(Op::new(0, W, 0)) - b0 / 2.0).abs() < 1e-15);
    // Its part 1 holds the second half of measured part 0: that half of B, times 0.8 and 0.95.
    assert!((costs.op(Op::new(1, I, 0)) - 0.8 * b0 / 2.0).abs() < 1e-12);
    assert!((costs.op(Op::new(1, W, 0)) - 0.95 * b0 / 2.0).abs() < 1e-12);
    // Parts 2 and 3 halve measured part 1's I and W.
    assert!((costs.op(Op::new(3, W, 0)) - 0.95 * b1 / 2.0).abs() < 1e-12);
}

/// The interleaved plan of the tests above: 2 ranks, 4 stages in a loop, one micro-batch, the
/// backward split.
fn interleaved() -> Plan {
    use Kind::{F, I, W};
    let programs = vec![
        vec![
            op(0, F, 0),
            op(2, F, 0),
            op(2, I, 0),
            op(0, I, 0),
            op(2, W, 0),
            op(0, W, 0),
        ],
        vec![
            op(1, F, 0),
            op(3, F, 0),
            op(3, I, 0),
            op(1, I, 0),
            op(3, W, 0),
            op(1, W, 0),
        ],
    ];
    Plan::single(2, vec![0, 1, 0, 1], 1, programs).expect("a plan")
}

/// A V on 2 ranks (stages 0 and 3 on rank 0, 1 and 2 on rank 1), 2 micro-batches, with an
/// overlapped pair whose halves both send: 3B0's gradient to stage 2, and 3F1 none (the last
/// stage).
fn v_with_a_pair() -> Plan {
    let cells = |line: &str| -> Vec<Action> {
        line.split(',')
            .map(|c| pipeweave_plan::cell::parse_action(c, u32::MAX).expect("a cell"))
            .collect()
    };
    Plan::single(
        2,
        vec![0, 1, 1, 0],
        2,
        vec![
            cells("0F0,0F1,3F0,(3F1;3B0)OVERLAP_F_B,3B1,0B0,0B1"),
            cells("1F0,2F0,1F1,2F1,2B0,1B0,2B1,1B1"),
        ],
    )
    .expect("a plan")
}

/// Each send a plan posts is charged once, on its rank, right after the action that computes its
/// data, and each wait for a forward's send after the backward the lowering puts it behind: per
/// action, what the lowered program posts and waits for right after it, at the measured means.
/// So a plan that sends more pays exactly that many sends more.
#[test]
fn each_send_a_plan_posts_is_charged_once_after_its_action() {
    let (mut c, _) = calibration();
    // The fixture waits for no send; a wait of 7 µs, as if measured.
    c.overhead.wait_send = Stats::of(&[7e-6]);
    let send = c
        .overhead
        .send
        .and_then(|s| s.mean)
        .expect("sends were timed");
    let wait = 7e-6;
    // (sends, waits) the lowered plan puts after each action, rank by rank, and the charge.
    let charged = |plan: &Plan| -> (usize, usize, f64) {
        let (costs, _) = MeasuredCosts::for_plan(&c, plan).expect("costs");
        let lowered = pipeweave_plan::lower(plan);
        let (mut sends, mut waits, mut total) = (0, 0, 0.0);
        for (rank, steps) in lowered.to_vecs().into_iter().enumerate() {
            let program = plan.program(rank as u32);
            let mut after = vec![(0usize, 0usize); program.len()];
            let mut last = None;
            for step in steps {
                match step {
                    pipeweave_plan::Step::Compute(_) => last = Some(last.map_or(0, |i| i + 1)),
                    pipeweave_plan::Step::Send { .. } => {
                        after[last.expect("after an action")].0 += 1
                    }
                    pipeweave_plan::Step::WaitSend {
                        dir: pipeweave_plan::Dir::Fwd,
                        ..
                    } => after[last.expect("after an action")].1 += 1,
                    _ => {}
                }
            }
            for (a, &(n, w)) in program.iter().zip(&after) {
                let expected = n as f64 * send + w as f64 * wait;
                let got = costs.host_after(*a);
                assert!(
                    (got - expected).abs() < 1e-15,
                    "{a:?}: {got} for {n} sends and {w} waits"
                );
                sends += n;
                waits += w;
                total += got;
            }
        }
        (sends, waits, total)
    };
    let (one, one_waits, one_total) = charged(&plan());
    // 1F1B at P = 2, M = 4: each of rank 0's forwards and rank 1's backwards sends; rank 0
    // waits for each forward's send after its backward.
    assert_eq!((one, one_waits), (8, 4));
    let (inter, inter_waits, inter_total) = charged(&interleaved());
    assert_eq!((inter, inter_waits), (6, 3));
    let (v, v_waits, v_total) = charged(&v_with_a_pair());
    // 0F0, 0F1 and 2F0, 2F1 leave their ranks, and 3B0 (in the pair), 3B1, 1B0, 1B1.
    assert_eq!((v, v_waits), (8, 4));
    for (n, w, total) in [
        (one, one_waits, one_total),
        (inter, inter_waits, inter_total),
        (v, v_waits, v_total),
    ] {
        assert!((total - (n as f64 * send + w as f64 * wait)).abs() < 1e-15);
    }
    // Nothing after a weight gradient, which sends nothing.
    let (costs, _) = MeasuredCosts::for_plan(&c, &interleaved()).expect("costs");
    assert_eq!(costs.host_after(op(2, Kind::W, 0)), 0.0);
}

/// Costs without the sends' host time add none after an action, and say why: a file of version 3
/// (its gaps hold the calibrating run's sends), or a run whose traces name no sends.
#[test]
fn costs_without_sends_add_no_host_time_after_an_action_and_say_so() {
    let (mut c, _) = calibration();
    c.overhead.send = None;
    let plan = plan();
    let (costs, notes) = MeasuredCosts::for_plan(&c, &plan).expect("costs");
    assert_eq!(costs.host_after(op(0, Kind::F, 0)), 0.0);
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("the run timed no send (`overhead.send`)")),
        "{notes:?}"
    );
    c.version = 3;
    let (_, notes) = MeasuredCosts::for_plan(&c, &plan).expect("costs");
    assert!(
        notes.iter().any(|n| n.starts_with(
            "the costs file is of version 3, without `overhead.send`: the measured gaps between actions hold the calibrating run's sends"
        )),
        "{notes:?}"
    );
    // One rank sends nothing: no note.
    let alone = Plan::single(
        1,
        vec![0],
        1,
        vec![vec![op(0, Kind::F, 0), op(0, Kind::B, 0)]],
    )
    .expect("a plan");
    let (mut one, _) = calibration();
    one.parts.truncate(1);
    one.measured.parts = 1;
    let (_, notes) = MeasuredCosts::for_plan(&one, &alone).expect("costs");
    assert!(!notes.iter().any(|n| n.contains("send")), "{notes:?}");
}

/// The fixture's run measured twice, as two runs.
fn twice() -> (Calibration, Vec<String>) {
    let plan = plan();
    let traces = vec![
        read_trace(RANK0, FileId(0)).expect("rank 0 reads"),
        read_trace(RANK1, FileId(1)).expect("rank 1 reads"),
    ];
    let run = match_plan(&plan, traces).expect("the run matches 1F1B");
    let names = ["rank0.json".to_owned(), "rank1.json".to_owned()];
    let again = ["again0.json".to_owned(), "again1.json".to_owned()];
    let input = |traces| MeasureInput {
        plan: &plan,
        plan_name: "1f1b",
        traces,
        run: &run,
    };
    measure_runs(&[input(&names), input(&again)]).expect("measured")
}

#[test]
fn runs_measured_together_pool_their_samples_and_say_where_each_figure_is_from() {
    let (one, _) = calibration();
    let (two, notes) = twice();
    assert_eq!(two.measured.runs.len(), 2);
    assert_eq!(two.measured.runs[1].traces, ["again0.json", "again1.json"]);
    assert_eq!(two.measured.traces, ["rank0.json", "rank1.json"]);
    for (a, b) in one.parts.iter().zip(&two.parts) {
        assert_eq!(a.f.median, b.f.median);
        assert_eq!(2 * a.f.samples, b.f.samples);
        let from = b.measured_in.as_ref().expect("sources");
        assert_eq!(
            (from.f.as_slice(), from.b.as_slice()),
            (&[0, 1][..], &[0, 1][..])
        );
        assert!(from.i.is_empty() && from.w.is_empty());
    }
    // The step and the ranks' figures are the first run's.
    assert_eq!(one.measured.step_time, two.measured.step_time);
    assert_eq!(one.ranks, two.ranks);
    assert!(
        notes
            .last()
            .expect("a note")
            .starts_with("2 runs measured together")
    );
    // The file reads back as written.
    let text = write_costs(&two).expect("written");
    assert_eq!(read_costs(&text, FileId(0)).expect("read"), two);
    // Runs of another shape (ranks, micro-batches) are not measured together; a run that cuts
    // the model into other parts is a `[[cut]]` (`a_run_cut_finer_prices_plans_cut_alike`).
    let other = Plan::single(
        2,
        vec![0, 1],
        1,
        vec![vec![op(0, Kind::F, 0)], vec![op(1, Kind::F, 0)]],
    )
    .expect("a plan");
    let (plan, names) = (plan(), ["a".to_owned(), "b".to_owned()]);
    let run = {
        let traces = vec![
            read_trace(RANK0, FileId(0)).expect("rank 0 reads"),
            read_trace(RANK1, FileId(1)).expect("rank 1 reads"),
        ];
        match_plan(&plan, traces).expect("matches")
    };
    let err = measure_runs(&[
        MeasureInput {
            plan: &plan,
            plan_name: "1f1b",
            traces: &names,
            run: &run,
        },
        MeasureInput {
            plan: &other,
            plan_name: "other",
            traces: &names,
            run: &run,
        },
    ])
    .expect_err("another shape");
    assert!(
        err.starts_with("run 2 (other) has 2 ranks and 1 micro-batches, and run 1 (1f1b) 2 and 4"),
        "{err}"
    );
}

#[test]
fn broken_costs_files_are_located_errors() {
    let (c, _) = calibration();
    let good = write_costs(&c).expect("written");
    let two = write_costs(&twice().0).expect("written");
    let cases = [
        ("syntax", good.replacen("version = 5", "version = ", 1)),
        ("format", good.replacen("pipeweave-costs", "other", 1)),
        ("version", good.replacen("version = 5", "version = 9", 1)),
        (
            "overhead_in_version_1",
            good.replacen("version = 5", "version = 1", 1),
        ),
        (
            "runs_in_version_2",
            two.replacen("version = 5", "version = 2", 1),
        ),
        (
            "measured_in_beyond_the_runs",
            two.replacen("f = [0, 1]", "f = [0, 7]", 1),
        ),
        (
            "overhead_unknown_key",
            good.replacen("[overhead.gap.f]", "[overhead.gap.x]", 1),
        ),
        (
            "overhead_negative_gap",
            good.replacen(
                "[overhead.gap.f]\nmedian = 0.0",
                "[overhead.gap.f]\nmedian = -0.00002",
                1,
            ),
        ),
        (
            "overhead_head_and_tail_beyond_the_step",
            format!(
                "{good}\n[overhead.step]\nmedian = 0.01\nq1 = 0.01\nq3 = 0.01\nmin = 0.01\nmax = 0.01\nsamples = 1\n\n[overhead.head]\nmedian = 0.008\nq1 = 0.008\nq3 = 0.008\nmin = 0.008\nmax = 0.008\nsamples = 1\n\n[overhead.tail]\nmedian = 0.008\nq1 = 0.008\nq3 = 0.008\nmin = 0.008\nmax = 0.008\nsamples = 1\n"
            ),
        ),
        (
            "overhead_mean_outside_the_extremes",
            good.replacen(
                "samples = 18\nmean = 0.0\n",
                "samples = 18\nmean = 5.0\n",
                1,
            ),
        ),
        (
            "send_in_version_3",
            good.replacen("version = 5", "version = 3", 1),
        ),
        (
            "overhead_negative_send",
            good.replacen(
                "[overhead.send]\nmedian = 0.00002",
                "[overhead.send]\nmedian = -0.00002",
                1,
            ),
        ),
        (
            "post_recv_in_version_4",
            format!(
                "{}\n[overhead.post_recv]\nmedian = 0.0001\nq1 = 0.0001\nq3 = 0.0001\nmin = 0.0001\nmax = 0.0001\nsamples = 1\n",
                good.replacen("version = 5", "version = 4", 1)
            ),
        ),
        (
            "overhead_post_recv_unsound",
            format!(
                "{good}\n[overhead.post_recv]\nmedian = 0.0001\nq1 = 0.0002\nq3 = 0.0001\nmin = 0.0001\nmax = 0.0001\nsamples = 1\n"
            ),
        ),
        (
            "overhead_wait_send_unknown_key",
            format!("{good}\n[overhead.wait_send]\nmedain = 0.0\n"),
        ),
        (
            "unknown_key",
            good.replacen("[measured]", "[measured]\ncolour = 1", 1),
        ),
        ("negative", good.replacen("min = 0.001", "min = -0.001", 1)),
        ("missing_part", good.replacen("parts = 2", "parts = 3", 1)),
        ("empty", String::new()),
    ];
    let mut out = String::new();
    for (name, text) in &cases {
        let d = read_costs(text, FileId(0)).expect_err(name);
        out.push_str(&format!("== {name}\n"));
        for d in d {
            let span = d.span.map(|s| s.range).unwrap_or(0..0);
            assert!(span.end <= text.len());
            out.push_str(&format!("{} {:?}\n", d.message, span));
        }
    }
    insta::assert_snapshot!("broken", out);
}

#[test]
fn saved_bytes_follow_the_schedule() {
    let (c, _) = calibration();
    // 1F1B as it ran: rank 0 holds two forwards of 2 MiB at once, rank 1 one of 1.5 MiB.
    let (peaks, notes) = saved_peaks(&c, &plan()).expect("the run recorded saved bytes");
    assert_eq!(peaks, [2 * 2_097_152, 1_572_864]);
    assert!(notes.is_empty(), "{notes:?}");
    // Deferred W: I frees 2/34 of a forward's bytes, W the 32/34 it kept.
    use Kind::{F, I, W};
    let programs = vec![
        vec![
            op(0, F, 0),
            op(0, F, 1),
            op(0, I, 0),
            op(0, I, 1),
            op(0, W, 0),
            op(0, W, 1),
        ],
        vec![
            op(1, F, 0),
            op(1, I, 0),
            op(1, F, 1),
            op(1, I, 1),
            op(1, W, 0),
            op(1, W, 1),
        ],
    ];
    let zb = Plan::single(2, vec![0, 1], 2, programs).expect("a plan");
    let (peaks, notes) = saved_peaks(&c, &zb).expect("peaks");
    let kept = (1_572_864.0 * (1.0 + ZB_KEPT_BY_W)).round() as u64;
    assert_eq!(peaks, [2 * 2_097_152, kept]);
    assert_eq!(notes.len(), 1);
    // Without saved bytes, no prediction.
    let mut none = c.clone();
    none.parts[0].saved_bytes = None;
    assert!(saved_peaks(&none, &zb).is_none());
}

/// A trace's text with a `pipeweave` object `meta` (JSON) added to its top-level object.
fn with_meta(trace: &str, meta: &str) -> String {
    let end = trace.rfind('}').expect("an object");
    format!("{},\n \"pipeweave\": {meta}\n}}", trace[..end].trim_end())
}

/// The probe's made-up figures: one-way transfers of 50 µs plus a byte per nanosecond (1 GB/s),
/// all-reduces of 100 µs plus two bytes per nanosecond... (500 MB/s), exactly on their lines.
const LATENCY: f64 = 50e-6;
const BANDWIDTH: f64 = 1e9;
const AR_LATENCY: f64 = 100e-6;
const AR_BANDWIDTH: f64 = 5e8;
const GRADS: [u64; 2] = [881_664, 866_816];

/// The fixture with rank 0's trace holding the probe (the lower rank of the pair times it) and
/// both ranks their messages and gradients, as `pipeweave.torch.profile` writes them.
fn probed() -> (Calibration, Vec<String>) {
    let plan = plan();
    let messages = r#"[{"stage": 0, "dir": "F", "from": 0, "to": 1, "bytes": 65536},
                      {"stage": 1, "dir": "B", "from": 1, "to": 0, "bytes": 32768}]"#;
    let p2p: Vec<String> = [1024u64, 4096, 65536, 1 << 20]
        .iter()
        .map(|&n| {
            let t = LATENCY + n as f64 / BANDWIDTH;
            format!(r#"{{"from": 0, "to": 1, "bytes": {n}, "time": {t:?}}}"#)
        })
        .collect();
    let ar: Vec<String> = GRADS
        .iter()
        .rev()
        .map(|&n| {
            let t = AR_LATENCY + n as f64 / AR_BANDWIDTH;
            format!(r#"{{"ranks": [0, 1], "bytes": {n}, "time": {t:?}}}"#)
        })
        .collect();
    let rank0 = with_meta(
        RANK0,
        &format!(
            r#"{{"rank": 0, "messages": {messages}, "gradients": [{{"part": 0, "bytes": {}}}],
               "probe": {{"repeats": 3, "p2p": [{}], "all_reduce": [{}]}}}}"#,
            GRADS[0],
            p2p.join(", "),
            ar.join(", ")
        ),
    );
    let rank1 = with_meta(
        RANK1,
        &format!(
            r#"{{"rank": 1, "messages": {messages}, "gradients": [{{"part": 1, "bytes": {}}}],
               "probe": {{"repeats": 3, "p2p": [], "all_reduce": []}}}}"#,
            GRADS[1]
        ),
    );
    let traces = vec![
        read_trace(&rank0, FileId(0)).expect("rank 0 reads"),
        read_trace(&rank1, FileId(1)).expect("rank 1 reads"),
    ];
    let run = match_plan(&plan, traces).expect("the run matches 1F1B");
    let names = ["rank0.json".to_owned(), "rank1.json".to_owned()];
    measure(MeasureInput {
        plan: &plan,
        plan_name: "1f1b",
        traces: &names,
        run: &run,
    })
    .expect("measured")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1e-6)
}

#[test]
fn the_probe_gives_each_link_its_latency_and_bandwidth() {
    let (c, notes) = probed();
    assert!(!notes.iter().any(|n| n.contains("link probe")), "{notes:?}");
    let p = &c.probe;
    assert_eq!(p.p2p.len(), 4);
    assert_eq!(p.all_reduce.len(), 2);
    assert!(!p.reduction_in_tail, "1F1B keeps no part on two ranks");
    assert_eq!(p.links.len(), 1);
    let l = p.links[0];
    assert_eq!((l.from, l.to, l.points), (0, 1, 4));
    assert!(close(l.latency, LATENCY), "{l:?}");
    assert!(close(l.bandwidth.expect("a bandwidth"), BANDWIDTH), "{l:?}");
    // Each `[[link]]` row takes its ranks' fit and the bytes its messages carried.
    assert_eq!(c.links.len(), 2);
    for row in &c.links {
        let want = if row.dir == "F" { 65536 } else { 32768 };
        assert_eq!(row.bytes, Some(want), "{row:?}");
        assert!(close(row.latency.expect("latency"), LATENCY));
        assert!(close(row.bandwidth.expect("bandwidth"), BANDWIDTH));
    }
    assert_eq!(c.parts[0].gradient_bytes, Some(GRADS[0]));
    assert_eq!(c.parts[1].gradient_bytes, Some(GRADS[1]));
    let text = write_costs(&c).expect("written");
    assert!(text.contains("[[probe.link]]") && text.contains("[[probe.all_reduce]]"));
    assert!(!text.contains("no bandwidth is measured"));
    assert_eq!(read_costs(&text, FileId(0)).expect("reads back"), c);
}

#[test]
fn the_fit_is_least_squares_on_time_against_bytes() {
    // Exactly on a line.
    let f = fit(&[(0.0, 1.0), (10.0, 2.0), (20.0, 3.0)]).expect("a fit");
    assert!(
        close(f.latency, 1.0) && close(f.bandwidth.expect("b"), 10.0),
        "{f:?}"
    );
    // Noisy: slope Σ(x−x̄)(t−t̄)/Σ(x−x̄)² = (−10·−1.4 + 0 + 10·1.6)/200 = 0.15, intercept 2 − 0.15·10.
    let f = fit(&[(0.0, 0.6), (10.0, 1.8), (20.0, 3.6)]).expect("a fit");
    assert!(
        close(f.latency, 0.5) && close(f.bandwidth.expect("b"), 1.0 / 0.15),
        "{f:?}"
    );
    // A line that would start below zero goes through the origin: slope Σxt/Σx² = (10·1 + 20·3)/500.
    let f = fit(&[(10.0, 1.0), (20.0, 3.0)]).expect("a fit");
    assert_eq!(f.latency, 0.0);
    assert!(close(f.bandwidth.expect("b"), 500.0 / 70.0), "{f:?}");
    // Times that do not grow with the size: their mean, no bandwidth.
    let f = fit(&[(10.0, 3.0), (20.0, 1.0)]).expect("a fit");
    assert_eq!((f.latency, f.bandwidth), (2.0, None));
    // One size: no line.
    assert_eq!(fit(&[(10.0, 3.0), (10.0, 1.0)]), None);
    assert_eq!(fit(&[]), None);
}

#[test]
fn copies_of_a_part_pay_their_gradients_all_reduce_after_their_last_action() {
    use Kind::{B, F};
    use pipeweave_plan::{Interval, Pipeline, Timing};
    let (c, _) = probed();
    // Two pipelines, 0 → 1 and 1 → 0 (DualPipe's shape at P = 2): each rank holds both parts.
    let pipelines = vec![
        Pipeline {
            placement: vec![0, 1],
            microbatches: vec![0],
        },
        Pipeline {
            placement: vec![1, 0],
            microbatches: vec![1],
        },
    ];
    let programs = vec![
        vec![op(0, F, 0), op(3, F, 1), op(3, B, 1), op(0, B, 0)],
        vec![op(2, F, 1), op(1, F, 0), op(1, B, 0), op(2, B, 1)],
    ];
    let plan = Plan::new(2, pipelines, programs).expect("a plan");
    let (costs, notes) = MeasuredCosts::for_plan(&c, &plan).expect("costs");
    let each: f64 = GRADS
        .iter()
        .map(|&g| AR_LATENCY + g as f64 / AR_BANDWIDTH)
        .sum();
    for r in 0..2 {
        assert!(close(costs.reduction(r), each), "{}", costs.reduction(r));
    }
    let note = notes
        .iter()
        .find(|n| n.starts_with("the gradients of the parts kept on several ranks"))
        .expect("a note");
    assert!(
        note.contains("the same two ranks")
            && note.contains("part 0's 881664 bytes among ranks [0, 1]"),
        "{note}"
    );
    // The step: the later of each rank's last end plus its reduction (no head or tail measured).
    let timing = Timing {
        intervals: vec![
            vec![Interval {
                start: 0.0,
                end: 1.0,
            }],
            vec![Interval {
                start: 0.0,
                end: 0.5,
            }],
        ],
        makespan: 1.0,
    };
    assert!(close(costs.step_time(&timing), 1.0 + each));
    // 1F1B shares no part: nothing is added.
    let (single, _) = MeasuredCosts::for_plan(&c, &plan_of_1f1b()).expect("costs");
    assert_eq!(single.reduction(0), 0.0);
    assert_eq!(single.step_time(&timing), 1.0);
    // A calibrating run with copies holds the reduction in its tail already.
    let mut tail = c.clone();
    tail.probe.reduction_in_tail = true;
    let (held, notes) = MeasuredCosts::for_plan(&tail, &plan).expect("costs");
    assert_eq!(held.reduction(0), 0.0);
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("the calibrating run kept parts on several ranks"))
    );
    // Without a probe, the old rule and its note.
    let mut bare = c.clone();
    bare.probe = ProbeCosts::default();
    let (none, notes) = MeasuredCosts::for_plan(&bare, &plan).expect("costs");
    assert_eq!(none.reduction(1), 0.0);
    assert!(
        notes.iter().any(|n| n.contains("costs hold no link probe")),
        "{notes:?}"
    );
}

fn plan_of_1f1b() -> Plan {
    plan()
}

#[test]
fn more_than_two_copies_reduce_as_a_ring_on_the_slowest_link() {
    let link = |from, to, latency, bandwidth| LinkFit {
        from,
        to,
        latency,
        bandwidth: Some(bandwidth),
        points: 4,
    };
    let probe = ProbeCosts {
        links: vec![
            link(0, 1, 1e-5, 1e9),
            link(1, 2, 2e-5, 5e8),
            link(0, 2, 1e-5, 1e9),
        ],
        ..ProbeCosts::default()
    };
    let (t, how) = crate::probe::all_reduce_time(&probe, &[0, 1, 2], 3_000_000).expect("priced");
    // 2 (n − 1) = 4 messages of a third of the bytes, on the slowest link (1 – 2).
    assert_eq!(how, "ring");
    assert!(close(t, 4.0 * (2e-5 + 1e6 / 5e8)), "{t}");
    // Two ranks with no all-reduce probed: not priced.
    assert_eq!(crate::probe::all_reduce_time(&probe, &[0, 1], 8), None);
}

#[test]
fn broken_probes_in_costs_files_are_errors_naming_the_key() {
    let (c, _) = probed();
    let good = write_costs(&c).expect("written");
    let cases = [
        (
            "probe_in_version_3",
            good.replacen("version = 5", "version = 3", 1),
        ),
        (
            "negative_latency",
            good.replacen(
                "[[probe.link]]\nfrom = 0\nto = 1\nlatency = ",
                "[[probe.link]]\nfrom = 0\nto = 1\nlatency = -",
                1,
            ),
        ),
        (
            "link_to_itself",
            good.replacen(
                "[[probe.link]]\nfrom = 0\nto = 1",
                "[[probe.link]]\nfrom = 1\nto = 1",
                1,
            ),
        ),
        (
            "beyond_the_ranks",
            good.replacen(
                "[[probe.p2p]]\nfrom = 0\nto = 1",
                "[[probe.p2p]]\nfrom = 0\nto = 7",
                1,
            ),
        ),
        (
            "nan_time",
            good.replacen(
                "[[probe.all_reduce]]\nranks = [0, 1]\nbytes = 866816\ntime = ",
                "[[probe.all_reduce]]\nranks = [0, 1]\nbytes = 866816\ntime = nan #",
                1,
            ),
        ),
        (
            "zero_bandwidth",
            good.replacen(
                "bandwidth = 999999999.9999999\npoints",
                "bandwidth = 0.0\npoints",
                1,
            ),
        ),
        (
            "huge_gradients",
            good.replacen(
                "gradient_bytes = 881664",
                "gradient_bytes = 18446744073709551615",
                1,
            ),
        ),
        (
            "unknown_key",
            good.replacen("[[probe.link]]", "[[probe.link]]\nspeed = 3", 1),
        ),
    ];
    let mut out = String::new();
    for (name, text) in &cases {
        assert_ne!(text, &good, "{name} changed nothing");
        let d = read_costs(text, FileId(0)).expect_err(name);
        out.push_str(&format!("== {name}\n"));
        for d in d {
            let span = d.span.map(|s| s.range).unwrap_or(0..0);
            assert!(span.end <= text.len());
            out.push_str(&format!("{} {:?}\n", d.message, span));
        }
    }
    insta::assert_snapshot!("broken_probe", out);
}

/// A `pipeweave` object whose messages or gradients the plan does not have (a message a rank
/// sends itself, or to a rank that does not hold the next stage; the gradients of a part the rank
/// does not hold) is an error naming the rank and the row, never a figure taken on trust.
#[test]
fn messages_and_gradients_the_plan_does_not_have_are_errors() {
    let plan = plan();
    let cases = [
        (
            r#"{"rank": 0, "messages": [{"stage": 0, "dir": "F", "from": 0, "to": 0, "bytes": 8}]}"#,
            "the trace of rank 0 records a forward message of stage 0 from rank 0 to rank 0 (`pipeweave.messages`), which the plan does not send",
        ),
        (
            r#"{"rank": 0, "messages": [{"stage": 1, "dir": "F", "from": 1, "to": 0, "bytes": 8}]}"#,
            "the trace of rank 0 records a forward message of stage 1 from rank 1 to rank 0 (`pipeweave.messages`), which the plan does not send",
        ),
        (
            r#"{"rank": 0, "gradients": [{"part": 1, "bytes": 8}]}"#,
            "the trace of rank 0 records the gradient bytes of part 1 (`pipeweave.gradients`), which the plan does not put on that rank",
        ),
    ];
    for (meta, wanted) in cases {
        let rank0 = with_meta(RANK0, meta);
        let traces = vec![
            read_trace(&rank0, FileId(0)).expect("rank 0 reads"),
            read_trace(RANK1, FileId(1)).expect("rank 1 reads"),
        ];
        let run = match_plan(&plan, traces).expect("the run matches 1F1B");
        let names = ["rank0.json".to_owned(), "rank1.json".to_owned()];
        let err = measure(MeasureInput {
            plan: &plan,
            plan_name: "1f1b",
            traces: &names,
            run: &run,
        })
        .expect_err(meta);
        assert_eq!(err, wanted);
    }
}

/// `[[cut]]` reads back as written, and a cut that says nothing new or holds what it cannot is
/// an error naming it.
#[test]
fn cuts_read_back_and_bad_cuts_are_named() {
    let (c, _) = calibration();
    let cut_part = |q: u32| Part {
        part: q,
        saved_bytes: None,
        freed_by_i: None,
        gradient_bytes: None,
        measured_in: None,
        ..c.parts[0].clone()
    };
    let good = Calibration {
        cuts: vec![crate::Cut {
            parts: 4,
            part: (0..4).map(cut_part).collect(),
        }],
        ..c.clone()
    };
    let text = write_costs(&good).expect("written");
    assert!(text.contains("[[cut]]\nparts = 4"), "{text}");
    assert_eq!(read_costs(&text, FileId(0)).expect("reads back"), good);
    let errors = |c: &Calibration| -> Vec<String> {
        let text = write_costs(c).expect("written");
        read_costs(&text, FileId(0))
            .expect_err("refused")
            .into_iter()
            .map(|d| d.message)
            .collect()
    };
    let mut same = good.clone();
    same.cuts[0] = crate::Cut {
        parts: 2,
        part: (0..2).map(cut_part).collect(),
    };
    assert_eq!(
        errors(&same),
        [
            "`[[cut]]` of 2 parts: a cut is into a number of parts other than `measured.parts` (2) and every other cut's"
        ]
    );
    let mut short = good.clone();
    short.cuts[0].part.pop();
    assert_eq!(
        errors(&short),
        ["`[[cut]]` of 4 parts has 3 `[[cut.part]]` tables"]
    );
    // Located at the cut's table.
    let short_text = write_costs(&short).expect("written");
    let at = short_text.find("[[cut]]").expect("the table");
    let d = read_costs(&short_text, FileId(0)).expect_err("refused");
    assert_eq!(
        d[0].span.as_ref().map(|s| s.range.clone()),
        Some(at..at + 7)
    );
    let mut bytes = good.clone();
    bytes.cuts[0].part[1].saved_bytes = Some(8);
    assert_eq!(
        errors(&bytes),
        [
            "`[[cut]]` of 4 parts: a part of a cut holds no bytes (`saved_bytes`, `freed_by_i` and `gradient_bytes` are the first run's, under `[[part]]`)"
        ]
    );
    let mut old = good.clone();
    old.version = 3;
    assert!(
        errors(&old)[0].starts_with("`[probe]`, `[[cut]]`,"),
        "{:?}",
        errors(&old)
    );
}
