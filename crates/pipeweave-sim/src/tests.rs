use crate::*;
use pipeweave_plan::{Action, Interval, Kind, Op, Plan};

/// `plan`, through the validator.
fn valid(plan: &Plan) -> ValidPlan {
    pipeweave_check::validate(plan.clone()).expect("a valid plan")
}

fn ops(line: &str) -> Vec<Action> {
    line.split(',')
        .map(|c| pipeweave_plan::cell::parse_action(c, u32::MAX).expect("a cell"))
        .collect()
}

#[test]
fn two_stage_1f1b_unit_costs() {
    let plan = Plan::single(
        2,
        vec![0, 1],
        2,
        vec![ops("0F0,0F1,0B0,0B1"), ops("1F0,1B0,1F1,1B1")],
    )
    .expect("structure");
    let t = simulate(&valid(&plan), &UnitCosts).expect("runs");
    // Rank 1: F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7]; rank 0's backwards wait for rank 1's.
    let spans: Vec<(f64, f64)> = t.timing.intervals[0]
        .iter()
        .map(|i| (i.start, i.end))
        .collect();
    assert_eq!(spans, [(0.0, 1.0), (1.0, 2.0), (4.0, 6.0), (7.0, 9.0)]);
    let spans: Vec<(f64, f64)> = t.timing.intervals[1]
        .iter()
        .map(|i| (i.start, i.end))
        .collect();
    assert_eq!(spans, [(1.0, 2.0), (2.0, 4.0), (4.0, 5.0), (5.0, 7.0)]);
    // (P − 1)(F + B) = 3 idle per rank.
    assert_eq!(t.timing.makespan, 9.0);
    assert_eq!(t.ranks[0].busy, 6.0);
    assert_eq!(t.ranks[0].idle, 3.0);
    assert_eq!(t.ranks[0].longest_idle, 2.0);
    assert_eq!(t.ranks[1].longest_idle, 2.0);
    assert_eq!(t.ranks[0].peak_activations, 2);
    assert_eq!(t.ranks[1].peak_activations, 1);
    assert!((t.bubble_fraction - 1.0 / 3.0).abs() < 1e-12);
}

#[test]
fn pair_starts_when_both_inputs_arrive() {
    // One rank, two stages in a V: the pair (1F1; 1B0) needs 0F1 and 1F0.
    let plan = Plan::single(
        1,
        vec![0, 0],
        2,
        vec![vec![
            Action::One(Op::new(0, Kind::F, 0)),
            Action::One(Op::new(1, Kind::F, 0)),
            Action::One(Op::new(0, Kind::F, 1)),
            Action::Pair {
                f: Op::new(1, Kind::F, 1),
                b: Op::new(1, Kind::B, 0),
            },
            Action::One(Op::new(0, Kind::B, 0)),
            Action::One(Op::new(1, Kind::B, 1)),
            Action::One(Op::new(0, Kind::B, 1)),
        ]],
    )
    .expect("structure");
    let t = simulate(&valid(&plan), &UnitCosts).expect("runs");
    assert_eq!(
        t.timing.intervals[0][3],
        Interval {
            start: 3.0,
            end: 6.0
        }
    );
    assert_eq!(t.timing.makespan, 12.0);
    let costs = UniformCosts {
        pair: Some(2.5),
        ..UniformCosts::default()
    };
    let t = simulate(&valid(&plan), &costs).expect("runs");
    assert_eq!(
        t.timing.intervals[0][3],
        Interval {
            start: 3.0,
            end: 5.5
        }
    );
}

#[test]
fn transfer_latency_delays_the_consumer() {
    let plan =
        Plan::single(2, vec![0, 1], 1, vec![ops("0F0,0B0"), ops("1F0,1B0")]).expect("structure");
    let costs = UniformCosts {
        transfer: 0.5,
        ..UniformCosts::default()
    };
    let t = simulate(&valid(&plan), &costs).expect("runs");
    assert_eq!(
        t.timing.intervals[1][0],
        Interval {
            start: 1.5,
            end: 2.5
        }
    );
    assert_eq!(
        t.timing.intervals[0][1],
        Interval {
            start: 5.0,
            end: 7.0
        }
    );
}

#[test]
fn stuck_plans_are_errors_not_hangs() {
    let plan = Plan::single(
        2,
        vec![0, 1],
        2,
        vec![ops("0F0,0B1,0F1,0B0"), ops("1F0,1F1,1B1,1B0")],
    )
    .expect("structure");
    assert_eq!(
        simulate_plan(&plan, &UnitCosts),
        Err(SimError::Stuck {
            rank: 0,
            position: 1
        })
    );
}

/// Unit costs, and host time after the actions whose outputs leave the rank: 0.25 after a
/// forward of stage 0, 0.5 after a backward of stage 1.
struct Posting;

impl CostModel for Posting {
    fn op(&self, op: Op) -> f64 {
        UnitCosts.op(op)
    }

    fn host_after(&self, action: Action) -> f64 {
        match action {
            Action::One(op) if op.stage == 0 && op.kind == Kind::F => 0.25,
            Action::One(op) if op.stage == 1 && op.kind == Kind::B => 0.5,
            _ => 0.0,
        }
    }
}

#[test]
fn host_time_after_an_action_delays_the_rank_not_its_outputs() {
    let plan = Plan::single(
        2,
        vec![0, 1],
        2,
        vec![ops("0F0,0F1,0B0,0B1"), ops("1F0,1B0,1F1,1B1")],
    )
    .expect("structure");
    let t = simulate(&valid(&plan), &Posting).expect("runs");
    let spans = |r: usize| -> Vec<(f64, f64)> {
        t.timing.intervals[r]
            .iter()
            .map(|i| (i.start, i.end))
            .collect()
    };
    // Rank 0's second forward starts 0.25 after its first; rank 1's first forward gets its input
    // at rank 0's first end, 1, not after the posting. A wait for an input hides the posting
    // (0B0 waits for 1B0 until 4, past 2.25 + 0.25).
    assert_eq!(spans(0), [(0.0, 1.0), (1.25, 2.25), (4.0, 6.0), (7.5, 9.5)]);
    // Rank 1's forward after 1B0 starts 0.5 after it; its last posting ends no action.
    assert_eq!(spans(1), [(1.0, 2.0), (2.0, 4.0), (4.5, 5.5), (5.5, 7.5)]);
    assert_eq!(t.timing.makespan, 9.5);
}

/// Costs that are not numbers: a forward takes NaN.
struct NanForward;

impl CostModel for NanForward {
    fn op(&self, op: Op) -> f64 {
        if op.kind == Kind::F { f64::NAN } else { 1.0 }
    }
}

#[test]
fn a_valid_plan_with_times_that_are_not_numbers_is_an_error_not_a_hang() {
    let plan =
        Plan::single(2, vec![0, 1], 1, vec![ops("0F0,0B0"), ops("1F0,1B0")]).expect("structure");
    // Rank 0's forward ends at NaN, so rank 1 never sees its input.
    assert_eq!(
        simulate(&valid(&plan), &NanForward),
        Err(SimError::Stuck {
            rank: 0,
            position: 1
        })
    );
}

#[test]
fn split_backward_frees_at_i() {
    let live = live_activations(&ops("0F0,0F1,0I0,0F2,0W0,0I1,0I2,0W1,0W2"));
    assert_eq!(live, memory::Live { peak: 2, end: 0 });
}

#[test]
fn an_evaluation_program_saves_no_activation() {
    assert_eq!(
        live_activations(&ops("0F0,0F1,0F2")),
        memory::Live::default()
    );
    let plan = pipeweave_plan::testing::one_f_one_b(3, 4).forward_only();
    let timeline = simulate(&valid(&plan), &UnitCosts).expect("simulates");
    // F = 1: the forwards alone, M + P − 1 slots.
    assert_eq!(timeline.timing.makespan, 6.0);
    assert!(timeline.ranks.iter().all(|r| r.peak_activations == 0));
}

mod against_a_naive_run {
    //! The event-driven simulation against the plainest one: sweep the ranks in order, running
    //! every action whose inputs have ended, until a sweep runs nothing. Same timeline, same error,
    //! on random plans, valid or not (work on the wrong rank, unknown stages, pairs, missing or
    //! misordered work): the run `simulate` makes on valid plans, here on any.
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// (stage, is the input-gradient backward, mb) → end.
    type EndMap = HashMap<(u32, bool, u32), f64>;

    fn ready(plan: &Plan, ends: &EndMap, rank: u32, op: Op, transfer: f64) -> Option<f64> {
        let arrive = |stage: u32, bwd: bool| {
            let end = *ends.get(&(stage, bwd, op.mb))?;
            Some(if plan.stage_rank(stage) == Some(rank) {
                end
            } else {
                end + transfer
            })
        };
        match op.kind {
            Kind::F => plan
                .prev_stage(op.stage)
                .map_or(Some(0.0), |p| arrive(p, false)),
            Kind::B | Kind::I => {
                let own = *ends.get(&(op.stage, false, op.mb))?;
                match plan.next_stage(op.stage) {
                    None => Some(own),
                    Some(n) => arrive(n, true).map(|t| t.max(own)),
                }
            }
            Kind::W => ends.get(&(op.stage, true, op.mb)).copied(),
        }
    }

    fn naive(plan: &Plan, costs: &UniformCosts) -> Result<Vec<Vec<Interval>>, SimError> {
        let known = |op: Op| plan.work_slot(op.stage, op.mb).is_some();
        let ranks = plan.ranks() as usize;
        let mut ends = EndMap::new();
        let mut intervals = vec![Vec::new(); ranks];
        let mut free = vec![0.0f64; ranks];
        loop {
            let mut progress = false;
            for r in 0..ranks {
                while let Some(&a) = plan.programs()[r].get(intervals[r].len()) {
                    if !a.ops().all(known) {
                        break;
                    }
                    let mut start = free[r];
                    let mut ok = true;
                    for op in a.ops() {
                        match ready(plan, &ends, r as u32, op, costs.transfer) {
                            Some(t) => start = start.max(t),
                            None => ok = false,
                        }
                    }
                    if !ok {
                        break;
                    }
                    let end = start
                        + match a {
                            Action::One(op) => costs.op(op),
                            Action::Pair { f, b } => costs.pair(f, b),
                        };
                    for op in a.ops() {
                        if op.kind != Kind::W {
                            ends.insert((op.stage, op.kind != Kind::F, op.mb), end);
                        }
                    }
                    intervals[r].push(Interval { start, end });
                    free[r] = end;
                    progress = true;
                }
            }
            if !progress {
                break;
            }
        }
        if let Some(rank) = (0..ranks).find(|&r| intervals[r].len() < plan.programs()[r].len()) {
            return Err(SimError::Stuck {
                rank: rank as u32,
                position: intervals[rank].len(),
            });
        }
        Ok(intervals)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn event_driven_equals_naive(plan in pipeweave_plan::testing::edited_gpipe(), transfer in 0u8..3) {
            // An op done twice ends twice, and which end its consumer sees depends on the order
            // the ranks run in: such plans (invalid) have no one timeline.
            let mut produced = std::collections::HashSet::new();
            let once = plan.programs().iter().flatten().flat_map(Action::ops).all(|op| {
                op.kind == Kind::W || produced.insert((op.stage, op.kind != Kind::F, op.mb))
            });
            prop_assume!(once);
            let costs = UniformCosts {
                transfer: f64::from(transfer) * 0.5,
                ..UniformCosts::default()
            };
            let ours = simulate_plan(&plan, &costs).map(|t| t.timing.intervals);
            prop_assert_eq!(ours, naive(&plan, &costs));
        }
    }
}

mod validated_plans {
    //! The law that ties the simulator to the validator: a plan the validator accepts runs to the
    //! end (the simulator's sends never block, so it is the more lenient of the two).
    use super::*;
    use pipeweave_plan::testing::edited_gpipe;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn accepted_plans_simulate_to_the_end(plan in edited_gpipe()) {
            if let Ok(plan) = pipeweave_check::validate(plan) {
                let run = simulate(&plan, &UnitCosts);
                prop_assert!(run.is_ok(), "{:?}", run.err());
            }
        }
    }
}

#[test]
fn many_pipelines_of_one_micro_batch_simulate() {
    // 100,000 one-stage pipelines on one rank: the table of end times had a slot per stage and
    // micro-batch id (10^10), now one per piece of work. Unit costs: F 1, B 2, back to back.
    let n = 100_000;
    let plan = valid(&pipeweave_plan::testing::one_stage_pipelines(n));
    let t = simulate(&plan, &UnitCosts).expect("runs");
    assert_eq!(t.timing.makespan, 3.0 * f64::from(n));
    assert_eq!(
        t.timing.intervals[0][2 * n as usize - 1],
        Interval {
            start: 3.0 * f64::from(n) - 2.0,
            end: 3.0 * f64::from(n)
        }
    );
    assert_eq!(t.ranks[0].peak_activations, 1);
}

/// F = 1, B = 2; every send to another rank holds its sender 0.5 once its receiver has posted
/// (`rendezvous`), or without waiting for it (`rendezvous = false`).
struct Blocking {
    rendezvous: bool,
}

impl Blocking {
    /// Stage 0 on rank 0 sends its forwards, stage 1 on rank 1 its backwards.
    fn sends(op: Op) -> bool {
        matches!((op.stage, op.kind), (0, Kind::F) | (1, Kind::B))
    }
}

impl CostModel for Blocking {
    fn op(&self, op: Op) -> f64 {
        let work = StageCosts::UNIT.of(op.kind);
        if Blocking::sends(op) {
            work + 0.5
        } else {
            work
        }
    }

    fn rendezvous(&self, op: Op) -> Option<f64> {
        (self.rendezvous && Blocking::sends(op)).then_some(0.5)
    }

    fn blocking_sends(&self) -> bool {
        self.rendezvous
    }
}

#[test]
fn a_blocking_send_waits_for_its_receiver_to_post() {
    let plan = Plan::single(
        2,
        vec![0, 1],
        2,
        vec![ops("0F0,0F1,0B0,0B1"), ops("1F0,1B0,1F1,1B1")],
    )
    .expect("structure");
    let spans = |t: &Timeline, r: usize| -> Vec<(f64, f64)> {
        t.timing.intervals[r]
            .iter()
            .map(|i| (i.start, i.end))
            .collect()
    };
    let held = simulate(&valid(&plan), &Blocking { rendezvous: false }).expect("runs");
    // 0F1's send holds rank 0 for 0.5 after its work: [1.5, 3]
    assert_eq!(spans(&held, 0)[1], (1.5, 3.0));
    let met = simulate(&valid(&plan), &Blocking { rendezvous: true }).expect("runs");
    // Rank 1 posts the receive of 1F1's input once 1B0's work has run, at 4.5: 0F1's work ends
    // at 2.5, it waits until 4.5, then sends for 0.5. 1B0's send finds 0B0's receive posted
    // (0F1's work ended at 2.5) and ends at 4.5 + 0.5.
    assert_eq!(
        spans(&met, 0),
        [(0.0, 1.5), (1.5, 5.0), (5.0, 7.0), (8.5, 10.5)]
    );
    assert_eq!(
        spans(&met, 1),
        [(1.5, 2.5), (2.5, 5.0), (5.0, 6.0), (6.0, 8.5)]
    );
    // the wait is rank 0's exposed communication
    assert_eq!(met.ranks[0].exposed_comm, 2.0);
    assert_eq!(met.timing.makespan, held.timing.makespan);
}

/// Unit costs; every forward sends its output with the backward run after it on its rank.
struct Deferring;

impl CostModel for Deferring {
    fn op(&self, op: Op) -> f64 {
        StageCosts::UNIT.of(op.kind)
    }

    fn sends_after_next(&self, _op: Op, next: Op) -> bool {
        matches!(next.kind, Kind::B | Kind::I)
    }

    fn defers_sends(&self) -> bool {
        true
    }
}

#[test]
fn a_forward_sent_with_the_next_backward_arrives_after_it() {
    let plan = Plan::single(
        2,
        vec![0, 1],
        2,
        vec![ops("0F0,0F1,0B0,0B1"), ops("1F0,1B0,1F1,1B1")],
    )
    .expect("structure");
    let t = simulate(&valid(&plan), &Deferring).expect("runs");
    // 0F1 [1, 2] leaves with 0B0, which waits for 1B0 [2, 4] and ends at 6: 1F1 starts at 6
    // (at 4 with UnitCosts), 1B1 ends at 9, 0B1 runs [9, 11].
    assert_eq!(t.timing.intervals[1][2].start, 6.0);
    assert_eq!(t.timing.makespan, 11.0);
    assert_eq!(
        simulate(&valid(&plan), &UnitCosts)
            .expect("runs")
            .timing
            .makespan,
        9.0
    );
    // a held-back forward's activation is live from its end, as any forward's
    assert_eq!(t.ranks[0].peak_activations, 2);
}

#[test]
fn a_forward_whose_next_backward_needs_it_sends_at_its_own_end() {
    // Two chunks per rank: 2F0 feeds 3F0 on rank 1, whose backward 2B0 (next on rank 0) needs;
    // holding 2F0's output for 2B0 would wait forever, so it leaves at its own end.
    let plan = Plan::single(
        2,
        vec![0, 1, 0, 1],
        1,
        vec![ops("0F0,2F0,2B0,0B0"), ops("1F0,3F0,3B0,1B0")],
    )
    .expect("structure");
    let t = simulate(&valid(&plan), &Deferring).expect("runs");
    let u = simulate(&valid(&plan), &UnitCosts).expect("runs");
    assert_eq!(t.timing, u.timing);
}

/// Blocking sends that meet their receivers, and forwards sent with the backward after them
/// (Megatron-LM's interleaved exchange): stage 0's forward takes 5 and stage 1's backward 2,
/// each plus 0.5 for its send; the rest unit costs.
struct Exchanging;

impl CostModel for Exchanging {
    fn op(&self, op: Op) -> f64 {
        match (op.stage, op.kind) {
            (0, Kind::F) => 5.5,
            (1, Kind::B) => 2.5,
            _ => StageCosts::UNIT.of(op.kind),
        }
    }

    fn rendezvous(&self, op: Op) -> Option<f64> {
        Blocking::sends(op).then_some(0.5)
    }

    fn blocking_sends(&self) -> bool {
        true
    }

    fn sends_after_next(&self, op: Op, next: Op) -> bool {
        op.stage == 0 && matches!(next.kind, Kind::B | Kind::I)
    }

    fn defers_sends(&self) -> bool {
        true
    }
}

#[test]
fn a_receive_is_posted_before_a_forward_that_sends_with_the_next_backward() {
    let plan = Plan::single(
        2,
        vec![0, 1],
        2,
        vec![ops("0F0,0F1,0B0,0B1"), ops("1F0,1B0,1F1,1B1")],
    )
    .expect("structure");
    let t = simulate(&valid(&plan), &Exchanging).expect("runs");
    let spans = |r: usize| -> Vec<(f64, f64)> {
        t.timing.intervals[r]
            .iter()
            .map(|i| (i.start, i.end))
            .collect()
    };
    // 0F1 [5.5, 11] sends with 0B0, so rank 0 posts 0B0's receive with 0F0's exchange, at 5:
    // 1B0's send does not wait for 0F1's work (10.5) and ends at 9. 0B0 [11, 13] carries 0F1's
    // output, which finds 1F1's receive posted (after 1B0's work, 8.5): 1F1 starts at 13.
    assert_eq!(
        spans(0),
        [(0.0, 5.5), (5.5, 11.0), (11.0, 13.0), (16.5, 18.5)]
    );
    assert_eq!(
        spans(1),
        [(5.5, 6.5), (6.5, 9.0), (13.0, 14.0), (14.0, 16.5)]
    );
}
