//! The step's time outside the actions' spans: the host's gaps between compute actions by kind,
//! each send's and receive's posting and the waits for sends between actions, and the whole
//! step, its head and its tail (`[overhead]`).

use super::in_seconds;
use crate::file::{Gaps, Overhead};
use crate::model::receives_from_another_rank;
use pipeweave_plan::{Action, Kind, Plan, Step};
use pipeweave_trace::{Naming, Run, Timed};

/// The samples of the step's time outside the actions' spans, over every run measured.
#[derive(Default)]
pub(super) struct OutsideSamples {
    /// Gaps by kind: F, B, I, W, pair.
    gaps: [Vec<f64>; 5],
    /// Every send's posting.
    sends: Vec<f64>,
    /// The waits for sends that stand between two compute actions.
    wait_sends: Vec<f64>,
    /// Every receive's posting: PlanRunner's `pw post` spans, PyTorch's runtime's `RECV` spans.
    post_recvs: Vec<f64>,
    /// Whether a run's plan sends from one rank to another.
    sends_expected: bool,
    /// Whether a run's receive spans are PlanRunner's waits (subtracted from the gaps).
    waits_subtracted: bool,
    /// Whether a run of PlanRunner's timed no posting of a receive (an older trace: their host
    /// time stays in the gaps).
    postings_untimed: bool,
    step: Vec<f64>,
    head: Vec<f64>,
    tail: Vec<f64>,
}

impl OutsideSamples {
    /// The host's gaps between compute actions by kind, every send's posting, the waits for sends
    /// between compute actions, and, where every rank's trace has the profiler's step spans, the
    /// whole step, its head and its tail, of one run.
    ///
    /// A gap is the next action's start less the previous one's end, less what the trace times
    /// in between and is measured on its own: the sends posted there and the waits for sends
    /// (each send's host time, `overhead.send` and `overhead.wait_send`, charged once per send a
    /// plan posts), each receive's posting (`overhead.post_recv`, charged once per receive
    /// where the plan posts it), and PlanRunner's receive waits (waits for data, which the
    /// simulation times as transfers). What stays is the host's own time: the runner's Python,
    /// the gradient reductions launched between actions, a garbage collection.
    pub(super) fn add(&mut self, plan: &Plan, run: &Run) {
        // PlanRunner's receive spans are waits for the data, its `pw post` spans the postings;
        // PyTorch's receive spans are postings.
        let waits_are_receives = run.naming == Naming::Pipeweave;
        self.waits_subtracted |= waits_are_receives;
        let posts_timed = !waits_are_receives
            || run
                .ranks
                .iter()
                .flat_map(|r| &r.steps)
                .flat_map(|s| &s.others)
                .any(|o| o.post);
        let receives_expected = plan
            .programs()
            .iter()
            .flatten()
            .flat_map(|a| a.ops())
            .any(|op| receives_from_another_rank(plan, op));
        self.postings_untimed |= receives_expected && !posts_timed;
        self.sends_expected |= plan.hosts().iter().enumerate().any(|(s, &host)| {
            plan.next_stage(s as u32)
                .and_then(|n| plan.stage_rank(n))
                .is_some_and(|to| to != host)
        });
        for (rank, r) in run.ranks.iter().enumerate() {
            let program = plan.program(rank as u32);
            // Per compute action, the time timed right after it that is not the host's gap.
            let mut timed_after = vec![0.0f64; program.len()];
            for step in &r.steps {
                timed_after.fill(0.0);
                for o in &step.others {
                    let measured = match o.step {
                        Step::Send { .. } => {
                            self.sends.push(o.timed.dur);
                            true
                        }
                        Step::WaitSend { .. } => {
                            // Between two compute actions: a wait after the last one is the tail's.
                            let between = o.after.is_some_and(|a| a + 1 < program.len());
                            if between {
                                self.wait_sends.push(o.timed.dur);
                            }
                            between
                        }
                        Step::Recv { .. } if o.post || !waits_are_receives => {
                            self.post_recvs.push(o.timed.dur);
                            true
                        }
                        Step::Recv { .. } => true,
                        Step::ReduceGrad { .. } | Step::WaitReduceGrad { .. } => false,
                        Step::Compute(_) => false,
                    };
                    if measured && let Some(slot) = o.after.and_then(|a| timed_after.get_mut(a)) {
                        *slot += o.timed.dur;
                    }
                }
                for (i, action) in program.iter().enumerate().skip(1) {
                    let (prev, this) = (step.actions[i - 1], step.actions[i]);
                    let gap = this.start - prev.end() - timed_after[i - 1];
                    if !gap.is_finite() {
                        continue;
                    }
                    let k = match *action {
                        Action::One(op) => match op.kind {
                            Kind::F => 0,
                            Kind::B => 1,
                            Kind::I => 2,
                            Kind::W => 3,
                        },
                        Action::Pair { .. } => 4,
                    };
                    self.gaps[k].push(gap.max(0.0));
                }
            }
        }
        for k in 0..run.steps {
            let bounds: Option<Vec<Timed>> = run.ranks.iter().map(|r| r.steps[k].bounds).collect();
            let Some(bounds) = bounds else { continue };
            let start = bounds.iter().map(|t| t.start).fold(f64::INFINITY, f64::min);
            let end = bounds
                .iter()
                .map(Timed::end)
                .fold(f64::NEG_INFINITY, f64::max);
            let computes = run.ranks.iter().flat_map(|r| r.steps[k].actions.iter());
            let (first, last) = computes.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), t| {
                (a.min(t.start), b.max(t.end()))
            });
            if start <= first && first <= last && last <= end {
                self.step.push(end - start);
                self.head.push(first - start);
                self.tail.push(end - last);
            }
        }
    }

    /// The `[overhead]` table of every run's samples (`steps` in all), with notes.
    pub(super) fn finish(self, steps: usize, notes: &mut Vec<String>) -> Overhead {
        let gaps = &self.gaps;
        let gap = Gaps {
            f: in_seconds(&gaps[0]),
            b: in_seconds(&gaps[1]),
            i: in_seconds(&gaps[2]),
            w: in_seconds(&gaps[3]),
            pair: in_seconds(&gaps[4]),
        };
        let (send, wait_send) = (in_seconds(&self.sends), in_seconds(&self.wait_sends));
        let post_recv = in_seconds(&self.post_recvs);
        if !gap.is_empty() {
            notes.push(format!(
                "host time between actions (`overhead.gap`): a compute action's start less the previous one's end on its rank{}{}, by the kind of the action",
                match (send.is_some() || wait_send.is_some(), post_recv.is_some()) {
                    (true, true) => ", less the sends and receives posted and the sends waited for between them (timed per transfer: `overhead.send`, `overhead.wait_send`, `overhead.post_recv`)",
                    (true, false) => ", less the sends posted and waited for between them (timed per send: `overhead.send`, `overhead.wait_send`)",
                    (false, true) => ", less the receives posted between them (timed per receive: `overhead.post_recv`)",
                    (false, false) => "",
                },
                if self.waits_subtracted {
                    ", less the receive waits PlanRunner timed between them"
                } else {
                    ""
                }
            ));
        }
        if self.postings_untimed {
            notes.push(
                "a run of PlanRunner timed no receive's posting (a trace of a pipeweave before `pw post` spans): there, posting a receive stays in the gaps between actions".to_owned(),
            );
        }
        if send.is_none() && self.sends_expected {
            notes.push(
                "the traces name no sends: the host's time of posting one (`overhead.send`) is not measured, and stays in the gaps between actions".to_owned(),
            );
        }
        if self.step.len() < steps {
            notes.push(if self.step.is_empty() {
                "the traces have no profiler step spans (`ProfilerStep#N`) around every rank's steps: the time before the first action and after the last (`overhead.head`, `overhead.tail`) is not measured, and a predicted step is the actions' alone".to_owned()
            } else {
                format!(
                    "{} of the {} steps have profiler step spans around every rank's actions: `overhead.step`, `head` and `tail` are from those",
                    self.step.len(),
                    steps
                )
            });
        }
        Overhead {
            step: in_seconds(&self.step),
            head: in_seconds(&self.head),
            tail: in_seconds(&self.tail),
            gap,
            send,
            wait_send,
            post_recv,
        }
    }
}
