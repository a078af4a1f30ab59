//! Transfers between pipeline ranks as the simulator sees them: a boundary activation's time on
//! its link, what a blocking send holds its rank for, and the [`CostModel`] the simulator asks.

use super::CostTable;
use crate::comm;
use pipeweave_plan::{Kind, Op};
use pipeweave_sim::CostModel;

/// Seconds from a host synchronisation to the next kernel running: NVIDIA's "Getting Started
/// with CUDA Graphs" (A. Gray, NVIDIA Technical Blog, 2019) times a 2.9 µs kernel at 9.6 µs per
/// launch when the host synchronises after each, against 3.8 µs without (V100, CUDA 10.1), so
/// 5.8 µs per synchronisation. Megatron-LM's blocking transfers end in `torch.cuda.synchronize()`
/// ("to protect against race condition when using batch_isend_irecv()").
pub const RESYNC_S: f64 = 5.8e-6;

impl CostTable {
    /// Seconds a blocking send holds `op`'s rank after its work (`training.p2p_blocking`): the
    /// transfer of its output to a stage on another rank, then the host's synchronisation
    /// ([`RESYNC_S`]); zero when sends do not block or the output stays on the rank.
    pub fn send_hold(&self, op: Op) -> f64 {
        if !self.blocking {
            return 0.0;
        }
        let (Some(&from), Some(&(next, prev))) = (
            self.stage_rank.get(op.stage as usize),
            self.neighbours.get(op.stage as usize),
        ) else {
            return 0.0;
        };
        let to = match op.kind {
            Kind::F => next,
            Kind::B | Kind::I => prev,
            Kind::W => None,
        };
        match to {
            Some(r) if r != from => self.p2p(from, r) + RESYNC_S,
            _ => 0.0,
        }
    }

    /// True when two pipeline ranks sit on the same node.
    pub fn same_node(&self, a: u32, b: u32) -> bool {
        match (
            self.rank_node.get(a as usize),
            self.rank_node.get(b as usize),
        ) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        }
    }

    /// Seconds to move one boundary activation between two pipeline ranks.
    pub fn p2p(&self, from_rank: u32, to_rank: u32) -> f64 {
        if from_rank == to_rank {
            return 0.0;
        }
        let link = if self.same_node(from_rank, to_rank) {
            &self.links.intra
        } else {
            &self.links.inter
        };
        comm::p2p(link, self.p2p_bytes)
    }
}

impl CostModel for CostTable {
    fn op(&self, op: Op) -> f64 {
        self.op_cost(op).duration
    }

    fn pair(&self, f: Op, b: Op) -> f64 {
        self.pair_cost(f, b).duration
    }

    fn transfer(&self, from: u32, to: u32) -> f64 {
        if self.blocking {
            // the sender held its rank until the transfer completed: the data is there when the
            // sending action ends
            return 0.0;
        }
        match (
            self.stage_rank.get(from as usize),
            self.stage_rank.get(to as usize),
        ) {
            (Some(&a), Some(&b)) => self.p2p(a, b),
            _ => 0.0,
        }
    }

    fn exposed_op(&self, op: Op) -> f64 {
        self.op_cost(op).exposed()
    }

    fn rendezvous(&self, op: Op) -> Option<f64> {
        if !self.rendezvous {
            return None;
        }
        let hold = self.send_hold(op);
        (hold > 0.0).then_some(hold)
    }

    fn blocking_sends(&self) -> bool {
        self.rendezvous
    }

    fn sends_after_next(&self, op: Op, next: Op) -> bool {
        self.defer && matches!(next.kind, Kind::B | Kind::I) && self.send_hold(op) > 0.0
    }

    fn defers_sends(&self) -> bool {
        self.defer
    }

    fn exposed_pair(&self, f: Op, b: Op) -> f64 {
        self.pair_cost(f, b).exposed()
    }
}
