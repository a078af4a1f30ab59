//! The lowered plan: every rank's program with its communication, stored packed and read back as
//! [`Step`]s, and the walks launchers and views make over it (each send with the action whose
//! output it carries, each gradient reduction with the action that completes it).
//!
//! Built by [`crate::lower`]; the rules of where each step goes are there.

use crate::action::Action;
use crate::plan::{Dir, Plan};
use std::fmt;

/// One entry of a lowered program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    /// A compute action of the plan.
    Compute(Action),
    /// Receive the input of `stage` for `mb` from `peer` (PyTorch `RECV_F` / `RECV_B`: the stage is
    /// the receiving one).
    Recv {
        /// Activations or gradients.
        dir: Dir,
        /// The receiving stage.
        stage: u32,
        /// The micro-batch.
        mb: u32,
        /// The sending rank.
        peer: u32,
    },
    /// Send the output of `stage` for `mb` to `peer` (PyTorch `SEND_F` / `SEND_B`: the stage is the
    /// sending one).
    Send {
        /// Activations or gradients.
        dir: Dir,
        /// The sending stage.
        stage: u32,
        /// The micro-batch.
        mb: u32,
        /// The receiving rank.
        peer: u32,
    },
    /// Wait until the send with the same fields has been matched by the peer.
    WaitSend {
        /// As the send's.
        dir: Dir,
        /// As the send's: the sending stage.
        stage: u32,
        /// As the send's.
        mb: u32,
        /// As the send's: the receiving rank.
        peer: u32,
    },
    /// Launch the reduction of the gradients of `stage` (across the replicas of its part, and
    /// data-parallel ranks).
    ReduceGrad {
        /// The stage whose gradients are reduced.
        stage: u32,
    },
    /// Wait for that reduction (PyTorch `WAIT_REDUCE_GRAD`, right after the launch by default).
    WaitReduceGrad {
        /// The stage whose reduction is waited for.
        stage: u32,
    },
}

/// A plan's programs with communication added.
///
/// Stored compactly, 8 bytes a step in one allocation (a plan of a million actions lowers to about
/// four million steps), and read back as [`Step`]s: [`LoweredPlan::program`] decodes rank r's
/// program, taking the compute actions from the plan it borrows.
#[derive(Clone)]
pub struct LoweredPlan<'p> {
    pub(crate) plan: &'p Plan,
    /// Rank r's steps are `codes[starts[r]..starts[r + 1]]`.
    pub(crate) starts: Vec<usize>,
    pub(crate) codes: Vec<u64>,
    /// The peers of transfers: per stage, `[BEFORE]` the rank hosting the stage before it
    /// ([`Plan::prev_stage`]) and `[AFTER]` the one after it ([`Plan::next_stage`]) when that is
    /// another rank, [`NONE`] otherwise. One table, indexed by side: decoding picks a side without
    /// a branch (two tables and a branch between them cost a mispredicted branch every few steps).
    pub(crate) peers: Vec<[u32; 2]>,
}

/// No such rank (in the tables of peers).
pub(crate) const NONE: u32 = u32::MAX;
/// The sides of a stage in [`LoweredPlan::peers`].
pub(crate) const BEFORE: usize = 0;
pub(crate) const AFTER: usize = 1;

impl<'p> LoweredPlan<'p> {
    /// The plan this is the lowering of.
    pub fn plan(&self) -> &'p Plan {
        self.plan
    }

    /// The number of ranks (programs).
    pub fn ranks(&self) -> u32 {
        self.plan.ranks()
    }

    /// All steps of all ranks.
    pub fn num_steps(&self) -> usize {
        self.codes.len()
    }

    /// Rank r's lowered program, in order. Panics when the rank does not exist.
    pub fn program(&self, rank: u32) -> Steps<'_> {
        let r = rank as usize;
        Steps {
            program: self.plan.program(rank),
            peers: &self.peers,
            codes: self.codes[self.starts[r]..self.starts[r + 1]].iter(),
        }
    }

    /// Every rank's lowered program, in rank order.
    pub fn programs(&self) -> impl ExactSizeIterator<Item = Steps<'_>> + '_ {
        (0..self.plan.ranks()).map(|r| self.program(r))
    }

    /// Every rank's lowered program as a vector of steps.
    pub fn to_vecs(&self) -> Vec<Vec<Step>> {
        self.programs().map(Iterator::collect).collect()
    }

    /// Every send, rank by rank in program order, with the action whose output it carries: the
    /// last compute step before it (lowering puts a send after its action and the waits that
    /// action's backward releases).
    pub fn sends(&self) -> impl Iterator<Item = Sent> + '_ {
        self.after_actions().filter_map(|(rank, action, c)| {
            let (dir, side) = match code::tag(c) {
                code::SEND_F => (Dir::Fwd, AFTER),
                code::SEND_B => (Dir::Bwd, BEFORE),
                _ => return None,
            };
            let stage = code::stage(c);
            Some(Sent {
                rank,
                action,
                dir,
                stage,
                // Always there: a stage sends only to a neighbour on another rank.
                to_stage: self.plan.receiving_stage(dir, stage)?,
                mb: code::mb(c),
                peer: self.peers[stage as usize][side],
            })
        })
    }

    /// Every launch of a gradient reduction, rank by rank in program order, with the action that
    /// completed the stage's gradients on the rank (its last B or W, right before the launch).
    pub fn reductions(&self) -> impl Iterator<Item = Reduction> + '_ {
        self.after_actions()
            .filter(|&(_, _, c)| code::tag(c) == code::REDUCE_GRAD)
            .map(|(rank, action, c)| Reduction {
                rank,
                action,
                stage: code::stage(c),
            })
    }

    /// Every step after a rank's first compute step that is not one, as its code with the rank
    /// and the index of the last action before it.
    fn after_actions(&self) -> impl Iterator<Item = (u32, usize, u64)> + '_ {
        (0..self.ranks()).flat_map(move |rank| {
            let r = rank as usize;
            let mut last = None;
            self.codes[self.starts[r]..self.starts[r + 1]]
                .iter()
                .filter_map(move |&c| {
                    if code::tag(c) == code::COMPUTE {
                        last = Some(code::index(c));
                        return None;
                    }
                    last.map(|action| (rank, action, c))
                })
        })
    }
}

/// A send with the compute action whose output it carries (see [`LoweredPlan::sends`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// The sending rank.
    pub rank: u32,
    /// The index in the sending rank's program of the action that produced the data.
    pub action: usize,
    /// Activations forward, gradients backward.
    pub dir: Dir,
    /// The sending stage.
    pub stage: u32,
    /// The stage that receives the data.
    pub to_stage: u32,
    /// The micro-batch.
    pub mb: u32,
    /// The receiving rank.
    pub peer: u32,
}

/// The launch of a stage's gradient reduction with the action that completed the gradients (see
/// [`LoweredPlan::reductions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reduction {
    /// The launching rank.
    pub rank: u32,
    /// The index in the launching rank's program of the action before the launch.
    pub action: usize,
    /// The stage whose gradients are reduced.
    pub stage: u32,
}

impl fmt::Debug for LoweredPlan<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.programs()).finish()
    }
}

impl PartialEq for LoweredPlan<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.ranks() == other.ranks() && self.programs().zip(other.programs()).all(|(a, b)| a.eq(b))
    }
}

/// One rank's lowered program, decoded step by step (see [`LoweredPlan::program`]).
#[derive(Clone)]
pub struct Steps<'a> {
    program: &'a [Action],
    peers: &'a [[u32; 2]],
    codes: std::slice::Iter<'a, u64>,
}

impl Steps<'_> {
    #[inline]
    fn decode(&self, code: u64) -> Step {
        let (dir, side) = match code::tag(code) {
            code::COMPUTE => return Step::Compute(self.program[code::index(code)]),
            code::REDUCE_GRAD => {
                return Step::ReduceGrad {
                    stage: code::stage(code),
                };
            }
            code::WAIT_REDUCE_GRAD => {
                return Step::WaitReduceGrad {
                    stage: code::stage(code),
                };
            }
            // Which way the data goes, and which side of the stage the peer hosts: the other end
            // of the transfer.
            code::RECV_F => (Dir::Fwd, BEFORE),
            code::RECV_B => (Dir::Bwd, AFTER),
            code::SEND_F | code::WAIT_SEND_F => (Dir::Fwd, AFTER),
            _ => (Dir::Bwd, BEFORE),
        };
        let (stage, mb) = (code::stage(code), code::mb(code));
        let peer = self.peers[stage as usize][side];
        match code::tag(code) {
            code::RECV_F | code::RECV_B => Step::Recv {
                dir,
                stage,
                mb,
                peer,
            },
            code::SEND_F | code::SEND_B => Step::Send {
                dir,
                stage,
                mb,
                peer,
            },
            _ => Step::WaitSend {
                dir,
                stage,
                mb,
                peer,
            },
        }
    }
}

impl Iterator for Steps<'_> {
    type Item = Step;

    #[inline]
    fn next(&mut self) -> Option<Step> {
        let code = *self.codes.next()?;
        Some(self.decode(code))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.codes.size_hint()
    }
}

impl ExactSizeIterator for Steps<'_> {}

impl DoubleEndedIterator for Steps<'_> {
    fn next_back(&mut self) -> Option<Step> {
        let code = *self.codes.next_back()?;
        Some(self.decode(code))
    }
}

impl fmt::Debug for Steps<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.clone()).finish()
    }
}

/// The 64-bit form of a step: a tag in the top 4 bits; below it the index of a compute action in
/// its rank's program, or the stage (32 bits) over the micro-batch (28 bits: `Plan` keeps
/// micro-batch ids below 2^28, and ops naming unknown ones get no communication).
pub(crate) mod code {
    pub const COMPUTE: u64 = 0;
    pub const RECV_F: u64 = 1;
    pub const RECV_B: u64 = 2;
    pub const SEND_F: u64 = 3;
    pub const SEND_B: u64 = 4;
    /// `SEND_* + WAIT`: the wait for that send.
    pub const WAIT: u64 = 2;
    pub const WAIT_SEND_F: u64 = SEND_F + WAIT;
    pub const WAIT_SEND_B: u64 = SEND_B + WAIT;
    pub const REDUCE_GRAD: u64 = 7;
    pub const WAIT_REDUCE_GRAD: u64 = 8;

    const TAG_SHIFT: u32 = 60;
    const STAGE_SHIFT: u32 = 28;
    const MB_MASK: u64 = (1 << STAGE_SHIFT) - 1;

    #[inline(always)]
    pub fn new(tag: u64, stage: u32, mb: u32) -> u64 {
        debug_assert!(u64::from(mb) <= MB_MASK);
        tag << TAG_SHIFT | u64::from(stage) << STAGE_SHIFT | u64::from(mb)
    }

    #[inline(always)]
    pub fn compute(index: usize) -> u64 {
        index as u64
    }

    #[inline(always)]
    pub fn tag(code: u64) -> u64 {
        code >> TAG_SHIFT
    }

    #[inline(always)]
    pub fn with_tag(code: u64, tag: u64) -> u64 {
        code & ((1 << TAG_SHIFT) - 1) | tag << TAG_SHIFT
    }

    #[inline(always)]
    pub fn stage(code: u64) -> u32 {
        (code >> STAGE_SHIFT) as u32
    }

    #[inline(always)]
    pub fn mb(code: u64) -> u32 {
        (code & MB_MASK) as u32
    }

    #[inline(always)]
    pub fn index(code: u64) -> usize {
        (code & ((1 << TAG_SHIFT) - 1)) as usize
    }
}
