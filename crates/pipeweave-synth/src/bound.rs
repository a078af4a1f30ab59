//! Lower bounds on the makespan of every plan of a problem, from two relaxations:
//! - **work**: a rank cannot finish before its first input can arrive plus all the work it hosts,
//!   each action at its least cost (an overlapped pair counts as its cost, shared between its
//!   halves);
//! - **chains**: a micro-batch's forward through every stage, the turn at the loss and its
//!   backwards back to the first stage form a chain that no order shortens (transfers included).
//!
//! The root bound is the larger of the two; the branch and bound uses the same tables at each node.
//! Written once over either arithmetic of `durations.rs`: floating point for the figure a report
//! shows, exact ticks for a proof.

use crate::durations::{Durations, Time};
use crate::problem::{F, Graph, I};
use pipeweave_plan::memory::{self, OutOfMemory};

/// The bound tables of a graph, in the arithmetic of its durations.
#[derive(Debug, Clone)]
pub(crate) struct Bounds<T> {
    /// The least share of its rank's time each node takes.
    pub least: Vec<T>,
    /// The least time from a node's start to the end of everything that depends on it.
    pub tail: Vec<T>,
    /// The earliest a node can start.
    pub head: Vec<T>,
}

impl<T: Time> Bounds<T> {
    /// The tables of `g` under `d`, or `None` where a pair's duration has no value in its
    /// arithmetic; an error where they do not fit in memory.
    pub fn new<D: Durations<T = T>>(g: &Graph, d: &D) -> Result<Option<Bounds<T>>, OutOfMemory> {
        let what = "the lower bound's tables";
        let n = g.nodes.len();
        let p = g.ranks as usize;
        // The least pair cost on each rank, and the least a pair leaves for its forward beyond
        // its backward's share.
        let mut pair_min = vec![T::INFINITY; p];
        let mut forward_share = vec![T::INFINITY; p];
        let back_least = |x: usize| {
            if g.weight_split {
                d.cost(x).earlier(d.whole(x))
            } else {
                d.whole(x)
            }
        };
        if g.pairs {
            for (r, stages) in g.on_rank.iter().enumerate() {
                for &sf in stages {
                    for &sb in stages {
                        let f = g.node(sf, 0, F);
                        let b = g.node(sb, 0, I);
                        for whole in [true, false] {
                            if !whole && !g.weight_split {
                                continue;
                            }
                            let Some(c) = d.pair(f, b, whole) else {
                                return Ok(None);
                            };
                            pair_min[r] = pair_min[r].earlier(c);
                            let bpart = if whole { d.whole(b) } else { d.cost(b) };
                            forward_share[r] =
                                forward_share[r].earlier(c - bpart.later(back_least(b)));
                        }
                    }
                }
            }
        }
        let mut least = memory::filled(n, T::ZERO, what)?;
        let mut quick = memory::filled(n, T::ZERO, what)?;
        for x in 0..n {
            let r = g.nodes[x].rank as usize;
            match x % 3 {
                F => {
                    least[x] = d.cost(x).earlier(forward_share[r]).later(T::ZERO);
                    quick[x] = d.cost(x).earlier(pair_min[r]);
                }
                I => {
                    least[x] = back_least(x);
                    quick[x] = back_least(x).earlier(pair_min[r]);
                }
                _ => {
                    let i = x - 1;
                    least[x] = if g.weight_split {
                        (d.whole(i).earlier(d.cost(i) + d.cost(x)) - back_least(i)).later(T::ZERO)
                    } else {
                        T::ZERO
                    };
                    quick[x] = least[x];
                }
            }
        }
        let s_per = g.pipelines[0].placement.len() as u32;
        let mut head = memory::filled(n, T::ZERO, what)?;
        let mut tail = memory::filled(n, T::ZERO, what)?;
        for k in 0..g.per_pipeline {
            for j in 0..g.pipelines.len() as u32 {
                let first = j * s_per;
                let last = first + s_per - 1;
                // Heads: forwards down the pipeline.
                for s in first..=last {
                    let x = g.node(s, k, F);
                    if let Some((from, _)) = g.nodes[x].remote {
                        head[x] = head[from] + quick[from] + d.transfer(x);
                    }
                }
                // Backward heads: the turn at the last stage, then up.
                for s in (first..=last).rev() {
                    let x = g.node(s, k, I);
                    let own = g.node(s, k, F);
                    let mut h = head[own] + quick[own];
                    if let Some((from, _)) = g.nodes[x].remote {
                        h = h.later(head[from] + quick[from] + d.transfer(x));
                    }
                    head[x] = h;
                    head[x + 1] = h + quick[x];
                }
                // Tails: backwards from the first stage, then forwards from the last.
                for s in first..=last {
                    let x = g.node(s, k, I);
                    let mut t = if g.weight_split {
                        d.whole(x).earlier(d.cost(x) + d.cost(x + 1))
                    } else {
                        d.whole(x)
                    }
                    .earlier(quick[x]);
                    if let Some(up) = g.remote_succ[x] {
                        t = t.later(quick[x] + d.transfer(up) + tail[up]);
                    }
                    tail[x] = t;
                    tail[x + 1] = quick[x + 1];
                }
                for s in (first..=last).rev() {
                    let x = g.node(s, k, F);
                    let mut t = quick[x] + tail[g.node(s, k, I)];
                    if let Some(down) = g.remote_succ[x] {
                        t = t.later(quick[x] + d.transfer(down) + tail[down]);
                    }
                    tail[x] = t;
                }
            }
        }
        Ok(Some(Bounds { least, tail, head }))
    }

    /// The root lower bound of the makespan.
    pub fn root(&self, g: &Graph) -> T {
        let p = g.ranks as usize;
        let mut work = vec![T::ZERO; p];
        let mut first = vec![T::INFINITY; p];
        let mut lb = T::ZERO;
        for (x, node) in g.nodes.iter().enumerate() {
            let r = node.rank as usize;
            work[r] = work[r] + self.least[x];
            first[r] = first[r].earlier(self.head[x]);
            lb = lb.later(self.head[x] + self.tail[x]);
        }
        for r in 0..p {
            if first[r] != T::INFINITY {
                lb = lb.later(first[r] + work[r]);
            }
        }
        lb
    }
}
