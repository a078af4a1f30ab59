//! The lowering pass: adds to every rank's compute program what a launcher executes around it.
//!
//! The placement is PyTorch 2.15's (`_add_reduce_grad`, `_add_send_recv`, `_add_wait_send`),
//! generalised to several pipelines, so a single-pipeline plan lowers to exactly the
//! `compute_comms` schedule PyTorch would build from its compute-only CSV:
//! - the gradient reduction of a stage is launched right after the stage's last weight-gradient
//!   action on the rank (its last B or W) and waited for right after; with several pipelines it
//!   reduces across the replicas of the stage's model part (each part in its own group of ranks),
//!   and all the waits stand at the end of the program, in launch order, since the replicas of a
//!   part finish their backwards at different times;
//! - the ranks are scheduled round-robin, one entry per rank per round, in rank order; a compute
//!   action is scheduled once the actions it depends on have been scheduled (anywhere); its sends
//!   follow it (forward output first for a pair) and, at that same moment, the matching receive is
//!   appended to the peer's program. So on every pair of ranks the receives are posted in the
//!   order the sends are, which launchers whose point-to-point channels are matched in posting
//!   order (NCCL, PyTorch's untagged `P2POp`s) need. The rounds are run event-driven (see
//!   `rounds.rs`), so the cost follows the actions whatever the shape of the plan;
//! - the wait for a forward send stands right after the action holding the backward (B or I) of
//!   the same stage and micro-batch, before that action's own sends (the local backward proves the
//!   peer consumed the activation); every other send is waited for at the end, in posting order.
//!
//! Nothing is sent where consecutive stages share a rank (the turn of a V).
//! Any plan lowers, valid or not (the validator says which): work naming a stage the plan does
//! not have or a micro-batch its stage's pipeline does not carry, or on a rank that does not host
//! its stage, gets no communication; when no rank can move, the lowest unfinished rank's next
//! entry is taken anyway. The cost follows the actions whatever the plan lists: the table of what
//! has been scheduled has a slot per piece of work (`WorkSlots`), dense for a plan that runs
//! what its pipelines list, the pieces its actions name otherwise.
//!
//! Semantics the validator assumes (blocking point-to-point, as with NCCL): a receive is posted
//! where it stands and the consuming action waits for its data; a send is posted and the rank moves
//! on; the wait for a send blocks until the peer has posted the matching receive.

use crate::action::{Action, Kind, Op};
use crate::lowered::{LoweredPlan, NONE, code};
use crate::memory::{self, OutOfMemory};
use crate::plan::Plan;
use crate::slots::WorkSlots;
use std::collections::HashMap;

mod rounds;
use rounds::RankSet;

/// A stage's links, in one record so that an op reads one line of the table: built from
/// [`Plan::prev_stage`] and [`Plan::next_stage`]; where those say a neighbour exists, it is stage
/// s−1 or s+1 of the same pipeline (stages are numbered pipeline by pipeline), whose work on the
/// same micro-batch is at the neighbouring slot of a dense table.
#[derive(Clone, Copy)]
struct Stage {
    /// The rank hosting the stage.
    host: u32,
    /// The rank hosting stage s+1 when it is another rank (where a forward's output goes), or
    /// `NONE`.
    after: u32,
    /// The rank hosting stage s−1 when it is another rank (where a backward's output goes), or
    /// `NONE`.
    before: u32,
    /// The rank hosting stage s+1, whose forward waits for stage s's, and the one hosting stage
    /// s−1, whose input-gradient backward waits for stage s's (`NONE` at a pipeline's ends): the
    /// rank an op of stage s may wake.
    fwd_to: u32,
    bwd_to: u32,
    /// The stage's pipeline and its position in it.
    pipeline: u32,
    position: u32,
    /// Whether the stage's forward takes the previous stage's output, and its input-gradient
    /// backward the next stage's gradient: not at a pipeline's head and tail.
    has_prev: bool,
    has_next: bool,
}

/// The plan's tables for the hot loop: its stages' links and the slots of its work.
struct Tables<'p> {
    plan: &'p Plan,
    stages: Vec<Stage>,
    /// Per micro-batch id, its pipeline plus 1 and index ([`Plan::carriers`]).
    carriers: &'p [[u32; 2]],
    /// S, for dense slots.
    per_pipeline: usize,
    /// The slots of the `flags` table: dense (micro-batch major, [`Plan::work_slot`]: the ranks
    /// work on neighbouring micro-batches at any time, so the live part of the table is a small
    /// window that slides along it) for any plan that runs what it lists, sparse otherwise.
    slots: WorkSlots,
    dense: bool,
}

impl<'p> Tables<'p> {
    fn new(plan: &'p Plan, slots: Slots) -> Result<Tables<'p>, OutOfMemory> {
        let hosts = plan.hosts();
        let other = |s: u32, t: Option<u32>| match t {
            Some(t) if hosts[t as usize] != hosts[s as usize] => hosts[t as usize],
            _ => NONE,
        };
        let host_of = |t: Option<u32>| t.map_or(NONE, |t| hosts[t as usize]);
        let stages = (0..plan.num_stages())
            .map(|s| {
                let (pipeline, position) = plan.locate(s);
                Stage {
                    host: hosts[s as usize],
                    after: other(s, plan.next_stage(s)),
                    before: other(s, plan.prev_stage(s)),
                    fwd_to: host_of(plan.next_stage(s)),
                    bwd_to: host_of(plan.prev_stage(s)),
                    pipeline,
                    position,
                    has_prev: plan.prev_stage(s).is_some(),
                    has_next: plan.next_stage(s).is_some(),
                }
            })
            .collect();
        let slots = match slots {
            Slots::ForThePlan => WorkSlots::new(plan)?,
            #[cfg(test)]
            Slots::Sparse => WorkSlots::sparse(plan)?,
        };
        Ok(Tables {
            plan,
            stages,
            carriers: plan.carriers(),
            per_pipeline: plan.stages_per_pipeline() as usize,
            dense: slots.is_dense(),
            slots,
        })
    }

    /// The stage `s`'s links and the index of `mb`, when the stage exists and its pipeline
    /// carries the micro-batch: only such work communicates, waits for inputs and has a slot.
    #[inline(always)]
    fn carried(&self, s: u32, mb: u32) -> Option<(&Stage, u32)> {
        let st = self.stages.get(s as usize)?;
        let [carrier, index] = *self.carriers.get(mb as usize)?;
        (carrier == st.pipeline + 1).then_some((st, index))
    }

    /// The stage `s`'s links and the slot of its work on `mb`, when it has one (see
    /// [`Tables::carried`]).
    #[inline(always)]
    fn work(&self, s: u32, mb: u32) -> Option<(&Stage, usize)> {
        let (st, index) = self.carried(s, mb)?;
        let x = if self.dense {
            index as usize * self.per_pipeline + st.position as usize
        } else {
            self.slots.slot(self.plan, s, mb)?
        };
        Some((st, x))
    }

    /// The slot of the work of `s ± 1` on `mb`, the input of the work at slot x: the neighbouring
    /// slot when dense; when sparse, the slots hold every input of the actions' work.
    #[inline(always)]
    fn beside(&self, x: usize, s: u32, mb: u32, up: bool) -> usize {
        if self.dense {
            if up { x + 1 } else { x - 1 }
        } else {
            let t = if up { s + 1 } else { s - 1 };
            // Always there (see `WorkSlots::sparse`); the op's own slot otherwise, which makes it
            // wait for itself rather than panic.
            self.slots.slot(self.plan, t, mb).unwrap_or(x)
        }
    }

    /// Where the output of `op`, run on rank r, goes if another rank: (send tag, peer). Only work
    /// with a slot, on its stage's host, sends.
    #[inline]
    fn output(&self, r: usize, op: Op) -> Option<(u64, u32)> {
        let (st, _) = self.carried(op.stage, op.mb)?;
        let (tag, peer) = match op.kind {
            Kind::F => (code::SEND_F, st.after),
            Kind::B | Kind::I => (code::SEND_B, st.before),
            Kind::W => return None,
        };
        (peer != NONE && st.host == r as u32).then_some((tag, peer))
    }
}

/// The lowering's running state: the programs being built and what has been scheduled.
struct Lowering<'a> {
    t: &'a Tables<'a>,
    /// The programs, each in its own range (sized exactly beforehand), and where each one's next
    /// step goes.
    codes: Vec<u64>,
    cursor: Vec<usize>,
    /// Where each program's next end wait goes: a backward send is waited for at the end, so
    /// its wait is written into the tail of the program when the send is (see `lower`).
    tail: Vec<usize>,
    /// By slot of work ([`Tables::work`]), in one byte so an op touches one table: [`F_DONE`] (the forward has
    /// been scheduled), [`B_DONE`] (the input-gradient backward, B or I, has) and [`PENDING`] (the
    /// forward's send has not been waited for yet).
    flags: Vec<u8>,
    /// Per rank, the key of the input its next action waits for, or [`NO_WAIT`]: `2·x` for the
    /// forward at slot x, `2·x + 1` for the input-gradient backward there. Scheduling that input
    /// wakes the rank hosting the stage that consumes it ([`Stage::fwd_to`], `bwd_to`); a rank
    /// waiting for the input of an op on a stage it does not host (an invalid plan's) is listed
    /// under the key in `strays` as well.
    wait: Vec<usize>,
    strays: HashMap<usize, Vec<u32>>,
    /// The ranks the rounds visit: every rank but those parked and those done.
    active: RankSet,
}

const F_DONE: u8 = 1;
const B_DONE: u8 = 2;
const PENDING: u8 = 4;
/// No input awaited (in [`Lowering::wait`]).
const NO_WAIT: usize = usize::MAX;

impl Lowering<'_> {
    #[inline(always)]
    fn push(&mut self, r: usize, code: u64) {
        let at = &mut self.cursor[r];
        self.codes[*at] = code;
        *at += 1;
    }

    #[inline(always)]
    fn push_end_wait(&mut self, r: usize, code: u64) {
        let at = &mut self.tail[r];
        self.codes[*at] = code;
        *at += 1;
    }

    /// Wakes the ranks waiting for `key`, which has just been scheduled: `to`, the rank hosting
    /// the stage that consumes it, if it waits for it, and the strays listed under it.
    #[inline(always)]
    fn wake(&mut self, key: usize, to: u32) {
        if to != NONE && self.wait[to as usize] == key {
            self.wait[to as usize] = NO_WAIT;
            self.active.insert(to as usize);
        }
        if !self.strays.is_empty() {
            self.wake_strays(key);
        }
    }

    #[cold]
    fn wake_strays(&mut self, key: usize) {
        for w in self.strays.remove(&key).unwrap_or_default() {
            // A rank taken out of turn since it was listed waits for something else now.
            if self.wait[w as usize] == key {
                self.wait[w as usize] = NO_WAIT;
                self.active.insert(w as usize);
            }
        }
    }

    /// Marks the input-gradient backward of stage `st` at slot `x` done on rank r, and releases
    /// the stage's forward send (whether its wait goes here): only on the stage's host, which sent
    /// it.
    #[inline(always)]
    fn release(&mut self, r: usize, st: Stage, x: usize) -> bool {
        let here = st.host == r as u32;
        let flags = &mut self.flags[x];
        let pending = here && *flags & PENDING != 0;
        *flags = (*flags | B_DONE) & if here { !PENDING } else { !0 };
        self.wake(2 * x + 1, st.bwd_to);
        pending
    }

    /// The key of the input of `op` that has not been scheduled yet, if any; work without a slot
    /// (an unknown stage, or a micro-batch its pipeline does not carry) depends on nothing.
    #[inline]
    fn missing(&self, op: Op) -> Option<usize> {
        let (st, x) = self.t.work(op.stage, op.mb)?;
        match op.kind {
            Kind::F if st.has_prev => {
                let y = self.t.beside(x, op.stage, op.mb, false);
                (self.flags[y] & F_DONE == 0).then_some(2 * y)
            }
            Kind::B | Kind::I if st.has_next => {
                let y = self.t.beside(x, op.stage, op.mb, true);
                (self.flags[y] & B_DONE == 0).then_some(2 * y + 1)
            }
            _ => None,
        }
    }

    #[inline]
    fn action_ready(&self, a: Action) -> bool {
        match a {
            Action::One(op) => self.missing(op).is_none(),
            Action::Pair { f, b } => self.missing(f).is_none() && self.missing(b).is_none(),
        }
    }

    /// Parks rank r, whose next action `a` waits for an input, on the key of that input (the
    /// forward half's first, for a pair).
    fn park(&mut self, r: usize, a: Action) {
        let (op, key) = match a {
            Action::One(op) => (op, self.missing(op)),
            Action::Pair { f, b } => match self.missing(f) {
                Some(key) => (f, Some(key)),
                None => (b, self.missing(b)),
            },
        };
        // Always there, since the action was not ready.
        let Some(key) = key else { return };
        self.active.remove(r);
        self.wait[r] = key;
        if self.t.stages.get(op.stage as usize).map(|st| st.host) != Some(r as u32) {
            self.strays.entry(key).or_default().push(r as u32);
        }
    }

    /// Schedules action `a` (rank r's `index`-th) as [`Lowering::schedule`] does if its inputs have
    /// been scheduled; returns whether it was. A single op, by far the most common action, is
    /// handled inline: its slot and tables are looked up once for the check and the scheduling.
    #[inline(always)]
    fn try_schedule(&mut self, r: usize, a: Action, index: usize) -> bool {
        let Action::One(op) = a else {
            if !self.action_ready(a) {
                return false;
            }
            self.schedule(r, a, index);
            return true;
        };
        let t = self.t;
        let Some((&st, x)) = t.work(op.stage, op.mb) else {
            // An unknown stage, or a micro-batch its pipeline does not carry: no inputs, no
            // communication.
            self.push(r, code::compute(index));
            return true;
        };
        // Only a stage's host communicates for it (the work of another rank is an invalid plan's).
        let here = st.host == r as u32;
        match op.kind {
            Kind::F => {
                if st.has_prev && self.flags[t.beside(x, op.stage, op.mb, false)] & F_DONE == 0 {
                    return false;
                }
                // The rank's own steps through a local cursor, stored once.
                let at = self.cursor[r];
                self.codes[at] = code::compute(index);
                let peer = st.after;
                if peer != NONE && here {
                    self.codes[at + 1] = code::new(code::SEND_F, op.stage, op.mb);
                    self.cursor[r] = at + 2;
                    self.push(peer as usize, code::new(code::RECV_F, op.stage + 1, op.mb));
                    self.flags[x] |= F_DONE | PENDING;
                } else {
                    self.cursor[r] = at + 1;
                    self.flags[x] |= F_DONE;
                }
                self.wake(2 * x, st.fwd_to);
            }
            Kind::B | Kind::I => {
                if st.has_next && self.flags[t.beside(x, op.stage, op.mb, true)] & B_DONE == 0 {
                    return false;
                }
                let pending = self.release(r, st, x);
                let mut at = self.cursor[r];
                self.codes[at] = code::compute(index);
                at += 1;
                if pending {
                    self.codes[at] = code::new(code::WAIT_SEND_F, op.stage, op.mb);
                    at += 1;
                }
                let peer = st.before;
                if peer != NONE && here {
                    self.codes[at] = code::new(code::SEND_B, op.stage, op.mb);
                    self.cursor[r] = at + 1;
                    self.push_end_wait(r, code::new(code::WAIT_SEND_B, op.stage, op.mb));
                    self.push(peer as usize, code::new(code::RECV_B, op.stage - 1, op.mb));
                } else {
                    self.cursor[r] = at;
                }
            }
            Kind::W => self.push(r, code::compute(index)),
        }
        true
    }

    /// Appends action `a` (rank r's `index`-th) with its communication: the action, the waits its
    /// backwards release, its sends (forward output first for a pair), and the receives on the
    /// peers' programs.
    #[inline]
    fn schedule(&mut self, r: usize, a: Action, index: usize) {
        self.push(r, code::compute(index));
        match a {
            Action::One(op) => {
                let x = self.t.work(op.stage, op.mb).map(|(&st, x)| (st, x));
                self.mark(r, op, x);
                self.send(r, op, x);
            }
            Action::Pair { f, b } => {
                // Both halves are done before either sends: b's wait precedes f's send.
                let work = |op: Op| self.t.work(op.stage, op.mb).map(|(&st, x)| (st, x));
                let (xf, xb) = (work(f), work(b));
                self.mark(r, f, xf);
                self.mark(r, b, xb);
                self.send(r, f, xf);
                self.send(r, b, xb);
            }
        }
    }

    /// Records `op` (of stage `st` at slot `x`, if it has one) as scheduled; a backward releases
    /// the wait of its stage's forward send.
    // Always inlined: called once or twice per action, the call itself cost a third of the work.
    #[inline(always)]
    fn mark(&mut self, r: usize, op: Op, work: Option<(Stage, usize)>) {
        let Some((st, x)) = work else { return };
        match op.kind {
            Kind::F => {
                self.flags[x] |= F_DONE;
                self.wake(2 * x, st.fwd_to);
            }
            Kind::B | Kind::I => {
                if self.release(r, st, x) {
                    // The forward send went from this stage to the next one.
                    self.push(r, code::new(code::WAIT_SEND_F, op.stage, op.mb));
                }
            }
            Kind::W => {}
        }
    }

    /// Appends the send of `op`'s output (of stage `st` at slot `x`), if it goes to another rank,
    /// and the peer's receive.
    #[inline(always)]
    fn send(&mut self, r: usize, op: Op, work: Option<(Stage, usize)>) {
        let Some((tag, peer)) = self.t.output(r, op) else {
            return;
        };
        self.push(r, code::new(tag, op.stage, op.mb));
        if tag == code::SEND_F {
            self.push(peer as usize, code::new(code::RECV_F, op.stage + 1, op.mb));
            if let Some((_, x)) = work {
                self.flags[x] |= PENDING;
            }
        } else {
            self.push_end_wait(r, code::new(code::WAIT_SEND_B, op.stage, op.mb));
            self.push(peer as usize, code::new(code::RECV_B, op.stage - 1, op.mb));
        }
    }
}

/// The sizing pass's running counts.
struct Sizing {
    /// Per rank, the exact length of its lowered program, and its number of backward sends.
    sizes: Vec<usize>,
    bwd_sends: Vec<usize>,
    /// Per stage, the position of its last B or W on the rank being read (usize::MAX before
    /// any), and the stages that have one.
    last_weight: Vec<usize>,
    touched: Vec<u32>,
}

impl Sizing {
    /// Counts op `op` of rank r's `i`-th action: its send, its wait and the peer's receive, and
    /// the last B or W of its stage. Work without a slot (an unknown stage, or a micro-batch its
    /// pipeline does not carry) neither sends nor reduces.
    #[inline(always)]
    fn count(&mut self, t: &Tables, r: usize, i: usize, op: Op) {
        let Some((st, _)) = t.carried(op.stage, op.mb) else {
            return;
        };
        let s = op.stage as usize;
        let here = st.host == r as u32;
        let peer = match op.kind {
            Kind::F => st.after,
            Kind::I => st.before,
            Kind::B | Kind::W => {
                let last = &mut self.last_weight[s];
                if *last == usize::MAX {
                    self.touched.push(op.stage);
                }
                *last = i;
                if op.kind == Kind::W {
                    return;
                }
                st.before
            }
        };
        if peer != NONE && here {
            if op.kind != Kind::F {
                self.bwd_sends[r] += 1;
            }
            self.sizes[r] += 2;
            self.sizes[peer as usize] += 1;
        }
    }

    /// The reduction entries of the rank just counted (the position after which each is due,
    /// and its code), by position then stage: a launch after each stage's last B or W and,
    /// without replicas, its wait right after. Clears the per-stage counts for the next rank.
    fn reductions(&mut self, replicated: bool) -> Vec<(usize, u64)> {
        let last_weight = &mut self.last_weight;
        let mut after: Vec<(usize, u32)> = self
            .touched
            .drain(..)
            .map(|s| {
                (
                    std::mem::replace(&mut last_weight[s as usize], usize::MAX),
                    s,
                )
            })
            .collect();
        after.sort_unstable();
        let mut list = Vec::with_capacity(2 * after.len());
        for (i, stage) in after {
            list.push((i, code::new(code::REDUCE_GRAD, stage, 0)));
            if !replicated {
                list.push((i, code::new(code::WAIT_REDUCE_GRAD, stage, 0)));
            }
        }
        list
    }
}

/// Where every program goes in the one allocation, found by a pass over the plan before lowering.
struct Layout {
    /// Per rank, its reduction entries (see [`Sizing::reductions`]).
    reductions: Vec<Vec<(usize, u64)>>,
    /// Rank r's steps are `starts[r]..starts[r + 1]`, and its end waits start at `tail_starts[r]`.
    starts: Vec<usize>,
    tail_starts: Vec<usize>,
}

/// One pass over the programs finds, per rank, the reductions and every program's exact length,
/// so all are allocated at once: its actions, a send and its wait for every output to another
/// rank, the peers' receives, and a launch and a wait per reduction.
///
/// A program ends with its end waits: in posting order, those of the forward sends no local
/// backward released (none in a valid plan) and of all backward sends; then, with replicas, the
/// waits of the reductions in launch order.
fn layout(programs: &[Vec<Action>], t: &Tables, replicated: bool) -> Layout {
    let ranks = programs.len();
    let mut reductions: Vec<Vec<(usize, u64)>> = Vec::with_capacity(ranks);
    let mut z = Sizing {
        sizes: vec![0usize; ranks],
        bwd_sends: vec![0usize; ranks],
        last_weight: vec![usize::MAX; t.stages.len()],
        touched: Vec::new(),
    };
    for (r, program) in programs.iter().enumerate() {
        for (i, a) in program.iter().enumerate() {
            // A match rather than `ops()`: this runs for every action.
            match *a {
                Action::One(op) => z.count(t, r, i, op),
                Action::Pair { f, b } => {
                    z.count(t, r, i, f);
                    z.count(t, r, i, b);
                }
            }
        }
        let list = z.reductions(replicated);
        z.sizes[r] += program.len()
            + if replicated {
                2 * list.len()
            } else {
                list.len()
            };
        reductions.push(list);
    }
    let mut starts = Vec::with_capacity(ranks + 1);
    starts.push(0);
    for size in &z.sizes {
        starts.push(starts[starts.len() - 1] + size);
    }
    let tail_starts: Vec<usize> = (0..ranks)
        .map(|r| {
            let reduction_waits = if replicated { reductions[r].len() } else { 0 };
            starts[r + 1] - z.bwd_sends[r] - reduction_waits
        })
        .collect();
    Layout {
        reductions,
        starts,
        tail_starts,
    }
}

/// Lowers every rank's program. Works on any plan; ops on unknown stages, on micro-batches their
/// stage's pipeline does not carry, or on a rank that does not host their stage, get no
/// communication.
///
/// The lowered steps take 8 bytes each, about 32 per action: where running out of memory must be
/// an error rather than the end of the process, use [`try_lower`].
pub fn lower(plan: &Plan) -> LoweredPlan<'_> {
    match try_lower(plan) {
        Ok(lowered) => lowered,
        // What an infallible allocation does.
        Err(e) => std::alloc::handle_alloc_error(
            std::alloc::Layout::from_size_align(e.bytes, 8)
                .unwrap_or(std::alloc::Layout::new::<u64>()),
        ),
    }
}

/// [`lower`], or the error naming the size of the table that could not be allocated.
pub fn try_lower(plan: &Plan) -> Result<LoweredPlan<'_>, OutOfMemory> {
    lower_by(plan, Slots::ForThePlan, |l, programs, reductions| {
        l.run(programs, reductions)
    })
}

/// [`lower`] with the plain round-robin, every rank visited in every round (quadratic in the
/// ranks): what the event-driven rounds must give exactly.
#[cfg(test)]
pub(crate) fn lower_plainly(plan: &Plan) -> Result<LoweredPlan<'_>, OutOfMemory> {
    lower_by(plan, Slots::ForThePlan, |l, programs, reductions| {
        l.run_plainly(programs, reductions)
    })
}

/// [`lower`] with sparse slots whatever the plan: what the dense ones must give exactly.
#[cfg(test)]
pub(crate) fn lower_sparsely(plan: &Plan) -> Result<LoweredPlan<'_>, OutOfMemory> {
    lower_by(plan, Slots::Sparse, |l, programs, reductions| {
        l.run(programs, reductions)
    })
}

/// Which slots the lowering's table has.
#[derive(Clone, Copy)]
enum Slots {
    /// `WorkSlots::new`'s choice.
    ForThePlan,
    /// Sparse whatever the plan, for the tests.
    #[cfg(test)]
    Sparse,
}

/// The rounds of the lowering, given the programs and each rank's reduction entries.
type Rounds = fn(&mut Lowering<'_>, &[Vec<Action>], &[Vec<(usize, u64)>]);

fn lower_by(plan: &Plan, slots: Slots, rounds: Rounds) -> Result<LoweredPlan<'_>, OutOfMemory> {
    let ranks = plan.ranks() as usize;
    let programs = plan.programs();
    let t = Tables::new(plan, slots)?;
    // With replicas, a reduction pairs ranks that may reach it far apart: waiting right after the
    // launch would stall one on the other (or deadlock), so the waits go to the end.
    let replicated = plan.pipelines().len() > 1;
    let Layout {
        reductions,
        mut starts,
        tail_starts,
    } = layout(programs, &t, replicated);
    // The backward sends' waits are written into the programs' tails as the sends are.
    let mut l = Lowering {
        t: &t,
        codes: memory::zeroed(starts[ranks], "the lowered programs")?,
        cursor: starts[..ranks].to_vec(),
        tail: tail_starts.clone(),
        flags: memory::zeroed(t.slots.len(), "the lowering's table")?,
        wait: vec![NO_WAIT; ranks],
        strays: HashMap::new(),
        active: RankSet::new(ranks),
    };
    rounds(&mut l, programs, &reductions);
    let ends = l.finish_tails(&starts, &tail_starts, &reductions, replicated);
    let mut codes = l.codes;
    close_gaps(&mut codes, &mut starts, &ends);
    let peers = t.stages.iter().map(|st| [st.before, st.after]);
    Ok(LoweredPlan {
        plan,
        starts,
        codes,
        peers: peers.collect(),
    })
}

impl Lowering<'_> {
    /// Completes every program's end waits after the run: where a forward send was left over,
    /// the tail is written again from the program's sends; then, with replicas, the reductions'
    /// waits. Returns where each program ends.
    fn finish_tails(
        &mut self,
        starts: &[usize],
        tail_starts: &[usize],
        reductions: &[Vec<(usize, u64)>],
        replicated: bool,
    ) -> Vec<usize> {
        let t = self.t;
        let (codes, flags) = (&mut self.codes, &mut self.flags);
        let mut ends = Vec::with_capacity(reductions.len());
        for (r, list) in reductions.iter().enumerate() {
            let mut at = if self.cursor[r] == tail_starts[r] {
                // Every forward send was released: the tail holds the end waits already.
                self.tail[r]
            } else {
                let mut at = self.cursor[r];
                for i in starts[r]..self.cursor[r] {
                    let c = codes[i];
                    let still_pending = match code::tag(c) {
                        // Only work with a slot sends.
                        code::SEND_F => t.work(code::stage(c), code::mb(c)).is_none_or(|(_, x)| {
                            let pending = flags[x] & PENDING != 0;
                            flags[x] &= !PENDING;
                            pending
                        }),
                        code::SEND_B => true,
                        _ => false,
                    };
                    if still_pending {
                        codes[at] = code::with_tag(c, code::tag(c) + code::WAIT);
                        at += 1;
                    }
                }
                at
            };
            if replicated {
                for &(_, c) in list {
                    codes[at] = code::with_tag(c, code::WAIT_REDUCE_GRAD);
                    at += 1;
                }
            }
            ends.push(at);
        }
        ends
    }
}

/// Every send gets one wait, except a repeated forward send of the same stage and micro-batch (an
/// invalid plan): its wait was counted but is not written. Closes such gaps between the programs'
/// `ends` and the next program's start.
fn close_gaps(codes: &mut Vec<u64>, starts: &mut [usize], ends: &[usize]) {
    let ranks = ends.len();
    if ends[..] == starts[1..] {
        return;
    }
    let mut to = 0;
    for r in 0..ranks {
        let from = starts[r];
        codes.copy_within(from..ends[r], to);
        starts[r] = to;
        to += ends[r] - from;
    }
    starts[ranks] = to;
    codes.truncate(to);
}
