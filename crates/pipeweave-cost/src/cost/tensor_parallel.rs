//! The tensor-parallel collectives of one block and pass: an all-gather before and a
//! reduce-scatter after the block's compute with sequence parallelism, one all-reduce after it
//! without (Korthikanti et al. 2022 §4.2.2), on the intra-node link.

use crate::comm::{self, Links, Spread};
use crate::schedule::{Task, TaskKind};
use pipeweave_spec::Spec;

/// The communication of one block and pass: (tasks before the compute, tasks after it, bytes
/// sent) for tensor parallelism.
pub(super) struct Tp {
    /// Seconds and bytes of one all-gather (or reduce-scatter) of a block's activation.
    ring: f64,
    ring_bytes: f64,
    sequence_parallel: bool,
    active: bool,
}

impl Tp {
    pub(super) fn of(spec: &Spec, links: &Links) -> Tp {
        let tp = spec.parallelism.tp;
        let n = spec.training.tokens_per_microbatch()
            * spec.model.hidden as f64
            * spec.training.activation_dtype.bytes();
        let group = Spread {
            nodes: 1.0,
            per_node: f64::from(tp),
        };
        Tp {
            ring: comm::reduce_scatter(links, n, group),
            ring_bytes: comm::ring_bytes(n, f64::from(tp)),
            sequence_parallel: spec.parallelism.sequence_parallel,
            active: tp > 1,
        }
    }

    /// (before, after) the block's compute.
    pub(super) fn around(&self) -> (Vec<Task>, Vec<Task>) {
        if !self.active {
            return (Vec::new(), Vec::new());
        }
        let task = |dur| Task {
            kind: TaskKind::Tp,
            dur,
        };
        if self.sequence_parallel {
            (vec![task(self.ring)], vec![task(self.ring)])
        } else {
            (Vec::new(), vec![task(2.0 * self.ring)])
        }
    }

    /// Bytes one GPU sends for one block and pass.
    pub(super) fn bytes(&self) -> f64 {
        if self.active {
            2.0 * self.ring_bytes
        } else {
            0.0
        }
    }
}
