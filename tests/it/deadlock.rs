//! The deadlock analysis against a launcher: `pipeweave_check`'s `deadlock.rs` decides progress at
//! the level of compute actions and argues that the lowered plan (`pipeweave_plan::lower`)
//! progresses exactly when they do. Here the lowered plan itself is run step by step, as a
//! launcher runs it, and the two verdicts must agree on random plans, deadlocking ones included.
//!
//! The launcher's semantics, blocking point-to-point as PyTorch's `_PipelineScheduleRuntime` runs
//! a `compute_comms` schedule over NCCL or gloo:
//! - a receive is posted where it stands and never blocks; the compute action that consumes it
//!   waits until the matching send has been posted (its data has arrived);
//! - a send is posted and never blocks; its wait blocks until the peer has posted the matching
//!   receive (rendezvous, as NCCL and gloo do for large messages). With eager sends (small
//!   messages, buffered by the library) the wait never blocks: both are run, and since eager
//!   sends only remove waiting, a plan that progresses under rendezvous progresses under both;
//! - between two ranks, messages match in posting order (untagged `P2POp`s, NCCL's channels):
//!   the k-th send from A to B meets the k-th receive B posts from A, and the test checks that
//!   the two are the same transfer (same direction, micro-batch, and sending and receiving stage);
//! - a gradient reduction is a collective over the stages of one model part (the replicas of
//!   Chimera and DualPipe): its launch never blocks, its wait blocks until every stage of the part
//!   has launched it.
//!
//! Every transfer that was posted must be matched at the end of a run that finishes.

use pipeweave_check::{ProblemKind, problems};
use pipeweave_plan::testing::{edited_gpipe, expressible_plan, pipelines};
use pipeweave_plan::{Action, Dir, Kind, Op, Plan, Step, lower};
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

/// Whether a send's wait blocks until the peer posted the matching receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sends {
    Eager,
    Rendezvous,
}

/// A transfer as a step names it: direction, a stage (the sending or the receiving one, as the
/// step says) and the micro-batch.
type Transfer = (Dir, u32, u32);

/// One channel between an ordered pair of ranks: what was posted on each side, in order, each
/// transfer named by its sending stage.
#[derive(Default)]
struct Channel {
    sends: Vec<Transfer>,
    recvs: Vec<Transfer>,
}

/// The launcher's state over all ranks.
struct Launcher<'p> {
    plan: &'p Plan,
    mode: Sends,
    programs: Vec<Vec<Step>>,
    pc: Vec<usize>,
    channels: HashMap<(u32, u32), Channel>,
    /// Per rank, its posted receives by (direction, receiving stage, mb): the peer and where the
    /// receive stands in the channel from it.
    posted: Vec<HashMap<Transfer, (u32, usize)>>,
    /// Per rank, where each of its sends (direction, sending stage, mb) stands in its channel.
    sent: Vec<HashMap<Transfer, usize>>,
    /// Computed ops: (stage, F or a backward for inputs, mb).
    done: HashSet<(u32, bool, u32)>,
    /// Stages whose gradient reduction was launched.
    launched: Vec<bool>,
}

/// How a run ended: the ranks that did not finish (empty when every rank did).
#[derive(Debug)]
struct Ended {
    unfinished: Vec<u32>,
}

impl<'p> Launcher<'p> {
    fn new(plan: &'p Plan, mode: Sends) -> Launcher<'p> {
        let programs = lower(plan).to_vecs();
        let ranks = programs.len();
        Launcher {
            plan,
            mode,
            programs,
            pc: vec![0; ranks],
            channels: HashMap::new(),
            posted: vec![HashMap::new(); ranks],
            sent: vec![HashMap::new(); ranks],
            done: HashSet::new(),
            launched: vec![false; plan.num_stages() as usize],
        }
    }

    /// Whether rank r's input for `op` is there: computed on the rank (the turn of a V), or
    /// received (its receive posted and its send posted by the peer). W needs only its I, which
    /// the work checks put before it on the same rank.
    fn input_ready(&self, r: u32, op: Op) -> bool {
        let (dir, from) = match op.kind {
            Kind::F => (Dir::Fwd, self.plan.prev_stage(op.stage)),
            Kind::B | Kind::I => (Dir::Bwd, self.plan.next_stage(op.stage)),
            Kind::W => return true,
        };
        let Some(from) = from else {
            return true;
        };
        if self.plan.stage_rank(from) == Some(r) {
            return self.done.contains(&(from, op.kind == Kind::F, op.mb));
        }
        let Some(&(peer, k)) = self.posted[r as usize].get(&(dir, op.stage, op.mb)) else {
            // Not received yet: the receive stands later in the program (or nowhere).
            return false;
        };
        self.channels[&(peer, r)].sends.len() > k
    }

    /// Runs rank r's next step if it can; returns whether it did.
    fn step(&mut self, r: u32) -> bool {
        let Some(&step) = self.programs[r as usize].get(self.pc[r as usize]) else {
            return false;
        };
        match step {
            Step::Compute(action) => {
                if !action.ops().all(|op| self.input_ready(r, op)) {
                    return false;
                }
                for op in action.ops() {
                    if op.kind != Kind::W {
                        self.done.insert((op.stage, op.kind == Kind::F, op.mb));
                    }
                }
            }
            Step::Send {
                dir,
                stage,
                mb,
                peer,
            } => {
                let computed = self.done.contains(&(stage, dir == Dir::Fwd, mb));
                assert!(computed, "rank {r} sends {step} before computing it");
                let channel = self.channels.entry((r, peer)).or_default();
                channel.sends.push((dir, stage, mb));
                let k = channel.sends.len() - 1;
                self.sent[r as usize].insert((dir, stage, mb), k);
            }
            Step::Recv {
                dir,
                stage,
                mb,
                peer,
            } => {
                let from = self.plan.sending_stage(dir, stage).expect("a neighbour");
                let channel = self.channels.entry((peer, r)).or_default();
                channel.recvs.push((dir, from, mb));
                let k = channel.recvs.len() - 1;
                self.posted[r as usize].insert((dir, stage, mb), (peer, k));
            }
            Step::WaitSend {
                dir,
                stage,
                mb,
                peer,
            } => {
                let k = self.sent[r as usize][&(dir, stage, mb)];
                if self.mode == Sends::Rendezvous && self.channels[&(r, peer)].recvs.len() <= k {
                    return false;
                }
            }
            Step::ReduceGrad { stage } => self.launched[stage as usize] = true,
            Step::WaitReduceGrad { stage } => {
                let part = self.plan.part(stage);
                let all = (0..self.plan.num_stages())
                    .filter(|&t| self.plan.part(t) == part)
                    .all(|t| self.launched[t as usize]);
                if !all {
                    return false;
                }
            }
        }
        self.pc[r as usize] += 1;
        true
    }

    /// Runs every rank as far as it goes; checks that matched transfers agree.
    fn run(mut self) -> Ended {
        loop {
            let mut moved = false;
            for r in 0..self.plan.ranks() {
                while self.step(r) {
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
        for (&(from, to), channel) in &self.channels {
            for (k, (send, recv)) in channel.sends.iter().zip(&channel.recvs).enumerate() {
                assert_eq!(
                    send, recv,
                    "transfer {k} from rank {from} to rank {to}: the send and the receive it meets differ"
                );
            }
        }
        let unfinished: Vec<u32> = (0..self.plan.ranks())
            .filter(|&r| self.pc[r as usize] < self.programs[r as usize].len())
            .collect();
        if unfinished.is_empty() {
            for (&(from, to), channel) in &self.channels {
                assert_eq!(
                    channel.sends.len(),
                    channel.recvs.len(),
                    "rank {from} sends {:?} to rank {to}, which receives {:?}",
                    channel.sends,
                    channel.recvs
                );
            }
        }
        Ended { unfinished }
    }
}

/// The two verdicts on `plan`, when the work checks pass (otherwise the analysis does not run):
/// the ranks of the analysis's cycle (`None`: no deadlock), and how the launcher's runs ended.
fn verdicts(plan: &Plan) -> Option<(Option<Vec<u32>>, Ended, Ended)> {
    let problems = problems(plan);
    let cycle = match problems.as_slice() {
        [] => None,
        [p] => match &p.kind {
            ProblemKind::Deadlock { cycle } => Some(cycle.iter().map(|w| w.rank).collect()),
            _ => return None,
        },
        _ => return None,
    };
    let rendezvous = Launcher::new(plan, Sends::Rendezvous).run();
    let eager = Launcher::new(plan, Sends::Eager).run();
    Some((cycle, rendezvous, eager))
}

fn agree(plan: &Plan) -> Result<(), TestCaseError> {
    let Some((cycle, rendezvous, eager)) = verdicts(plan) else {
        return Ok(());
    };
    for (mode, ended) in [("rendezvous", &rendezvous), ("eager", &eager)] {
        prop_assert_eq!(
            cycle.is_some(),
            !ended.unfinished.is_empty(),
            "the analysis finds the cycle {:?}; the launcher with {} sends leaves {:?} unfinished\n{:?}",
            cycle,
            mode,
            ended.unfinished,
            plan
        );
        if let Some(cycle) = &cycle {
            for r in cycle {
                prop_assert!(
                    ended.unfinished.contains(r),
                    "rank {} is in the cycle but finishes with {} sends",
                    r,
                    mode
                );
            }
        }
    }
    Ok(())
}

/// Plans whose work is complete and in order on every rank but whose ranks run it in random
/// orders: 1 to 4 ranks, 1 or 2 pipelines of 1 to 3 stages placed at random (a rank may hold
/// consecutive stages, the turn of a V), 1 to 3 micro-batches each, each backward full or split
/// into I and W, and now and then a forward overlapped with the backward that follows it. Many
/// deadlock, many do not.
fn shuffled_work() -> impl Strategy<Value = Plan> {
    (1u32..5, 1usize..3, 1usize..4, 1u32..4).prop_flat_map(|(ranks, k, s, m)| {
        let placement = proptest::collection::vec(proptest::collection::vec(0..ranks, s), k);
        let split = proptest::collection::vec(any::<bool>(), k * s * m as usize);
        let choices = proptest::collection::vec(any::<u32>(), 64);
        (placement, split, choices).prop_map(move |(placement, split, choices)| {
            let pipelines = pipelines(placement, m);
            let programs = shuffled_programs(ranks, &pipelines, &split, &choices);
            Plan::new(ranks, pipelines, programs).expect("generated structure")
        })
    })
}

/// Each rank's ops in a random order that keeps F before the backward and I before W of every
/// stage and micro-batch; a backward sometimes joins the forward just before it in a pair.
fn shuffled_programs(
    ranks: u32,
    pipelines: &[pipeweave_plan::Pipeline],
    split: &[bool],
    choices: &[u32],
) -> Vec<Vec<Action>> {
    let s = pipelines[0].placement.len() as u32;
    // Per rank, the chains of ops of each (stage, mb) it hosts: F, then B or I and W.
    let mut chains: Vec<Vec<Vec<Op>>> = vec![Vec::new(); ranks as usize];
    let mut n = 0;
    for (j, p) in (0u32..).zip(pipelines) {
        for (q, &r) in (0u32..).zip(&p.placement) {
            for &mb in &p.microbatches {
                let stage = j * s + q;
                let mut chain = vec![Op::new(stage, Kind::F, mb)];
                if split[n % split.len()] {
                    chain.push(Op::new(stage, Kind::I, mb));
                    chain.push(Op::new(stage, Kind::W, mb));
                } else {
                    chain.push(Op::new(stage, Kind::B, mb));
                }
                n += 1;
                chains[r as usize].push(chain);
            }
        }
    }
    let mut choice = choices.iter().cycle();
    let mut next = || *choice.next().expect("a choice");
    chains
        .into_iter()
        .map(|mut chains| {
            chains.iter_mut().for_each(|c| c.reverse());
            let mut program: Vec<Action> = Vec::new();
            while !chains.is_empty() {
                let i = next() as usize % chains.len();
                let op = chains[i].pop().expect("a chain is never empty");
                if chains[i].is_empty() {
                    chains.swap_remove(i);
                }
                let pair_with = match program.last() {
                    Some(&Action::One(f)) if f.kind == Kind::F && op.kind.is_input_backward() => {
                        Some(f)
                    }
                    _ => None,
                };
                match pair_with {
                    Some(f) if next() % 2 == 0 && (f.stage, f.mb) != (op.stage, op.mb) => {
                        *program.last_mut().expect("a last action") = Action::Pair { f, b: op };
                    }
                    _ => program.push(Action::One(op)),
                }
            }
            program
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn the_lowered_plan_progresses_exactly_when_the_analysis_says(plan in shuffled_work()) {
        agree(&plan)?;
    }

    #[test]
    fn edited_gpipe_plans_agree(plan in edited_gpipe()) {
        agree(&plan)?;
    }

    #[test]
    fn expressible_plans_agree(plan in expressible_plan()) {
        agree(&plan)?;
    }
}

/// The generators above reach both verdicts, and plans with replicas, pairs and V turns, often
/// enough for the properties to mean something.
#[test]
fn random_plans_deadlock_and_finish() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = shuffled_work();
    let (mut deadlocks, mut finishes, mut replicated, mut paired) = (0, 0, 0, 0);
    for _ in 0..1000 {
        let plan = strategy.new_tree(&mut runner).expect("a plan").current();
        let Some((cycle, rendezvous, _)) = verdicts(&plan) else {
            continue;
        };
        match cycle {
            Some(_) => deadlocks += 1,
            None => finishes += 1,
        }
        assert_eq!(cycle.is_some(), !rendezvous.unfinished.is_empty());
        if cycle.is_none() && plan.pipelines().len() > 1 {
            replicated += 1;
        }
        let pairs = plan.programs().iter().flatten();
        if cycle.is_none() && pairs.into_iter().any(|a| matches!(a, Action::Pair { .. })) {
            paired += 1;
        }
    }
    assert!(deadlocks >= 200, "{deadlocks} deadlocks in 1,000 plans");
    assert!(finishes >= 200, "{finishes} finished plans in 1,000");
    assert!(
        replicated >= 50,
        "{replicated} finished plans with replicas"
    );
    assert!(paired >= 50, "{paired} finished plans with pairs");
}

/// A plan the analysis calls deadlocked, run by hand: rank 1 wants micro-batch 1 first.
#[test]
fn a_crossed_order_is_stuck_in_both_verdicts() {
    let cells = |line: &str| -> Vec<Action> {
        line.split(',')
            .map(|c| pipeweave_plan::cell::parse_action(c, 16).expect("a cell"))
            .collect()
    };
    let plan = Plan::single(
        2,
        vec![0, 1],
        2,
        vec![cells("0F0,0B0,0F1,0B1"), cells("1F1,1B1,1F0,1B0")],
    )
    .expect("structure");
    let (cycle, rendezvous, eager) = verdicts(&plan).expect("the work checks pass");
    assert_eq!(cycle, Some(vec![0, 1]));
    assert_eq!(rendezvous.unfinished, [0, 1]);
    assert_eq!(eager.unfinished, [0, 1]);
}
