//! Lower bounds on the makespan of every plan of a problem, from two relaxations:
//! - **work**: a rank cannot finish before its first input can arrive plus all the work it hosts,
//!   each action at its least cost (an overlapped pair counts as its cost, shared between its
//!   halves);
//! - **chains**: a micro-batch's forward through every stage, the turn at the loss and its
//!   backwards back to the first stage form a chain that no order shortens (transfers included).
//!
//! The root bound is the larger of the two; the branch and bound uses the same tables at each node.

use crate::problem::{F, Graph, I};
use pipeweave_sim::CostModel;

/// The bound tables of a graph.
#[derive(Debug, Clone)]
pub(crate) struct Bounds {
    /// The least share of its rank's time each node takes.
    pub least: Vec<f64>,
    /// The least time from a node's start to the end of everything that depends on it.
    pub tail: Vec<f64>,
    /// The earliest a node can start.
    pub head: Vec<f64>,
}

impl Bounds {
    pub fn new<C: CostModel + ?Sized>(g: &Graph, costs: &C) -> Bounds {
        let n = g.nodes.len();
        let p = g.ranks as usize;
        // The least pair cost on each rank, and the least a pair leaves for its forward beyond
        // its backward's share.
        let mut pair_min = vec![f64::INFINITY; p];
        let mut forward_share = vec![f64::INFINITY; p];
        let back_least = |x: usize| {
            if g.weight_split {
                g.cost[x].min(g.whole[x])
            } else {
                g.whole[x]
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
                            let c = g.pair_cost(costs, f, b, whole);
                            pair_min[r] = pair_min[r].min(c);
                            let bpart = if whole { g.whole[b] } else { g.cost[b] };
                            forward_share[r] = forward_share[r].min(c - bpart.max(back_least(b)));
                        }
                    }
                }
            }
        }
        let mut least = vec![0.0; n];
        let mut quick = vec![0.0; n];
        for x in 0..n {
            let r = g.nodes[x].rank as usize;
            match x % 3 {
                F => {
                    least[x] = g.cost[x].min(forward_share[r]).max(0.0);
                    quick[x] = g.cost[x].min(pair_min[r]);
                }
                I => {
                    least[x] = back_least(x);
                    quick[x] = back_least(x).min(pair_min[r]);
                }
                _ => {
                    let i = x - 1;
                    least[x] = if g.weight_split {
                        (g.whole[i].min(g.cost[i] + g.cost[x]) - back_least(i)).max(0.0)
                    } else {
                        0.0
                    };
                    quick[x] = least[x];
                }
            }
        }
        let s_per = g.pipelines[0].placement.len() as u32;
        let mut head = vec![0.0; n];
        let mut tail = vec![0.0; n];
        for k in 0..g.per_pipeline {
            for j in 0..g.pipelines.len() as u32 {
                let first = j * s_per;
                let last = first + s_per - 1;
                // Heads: forwards down the pipeline.
                for s in first..=last {
                    let x = g.node(s, k, F);
                    if let Some((from, t)) = g.nodes[x].remote {
                        head[x] = head[from] + quick[from] + t;
                    }
                }
                // Backward heads: the turn at the last stage, then up.
                for s in (first..=last).rev() {
                    let x = g.node(s, k, I);
                    let own = g.node(s, k, F);
                    let mut h = head[own] + quick[own];
                    if let Some((from, t)) = g.nodes[x].remote {
                        h = h.max(head[from] + quick[from] + t);
                    }
                    head[x] = h;
                    head[x + 1] = h + quick[x];
                }
                // Tails: backwards from the first stage, then forwards from the last.
                for s in first..=last {
                    let x = g.node(s, k, I);
                    let mut t = if g.weight_split {
                        g.whole[x].min(g.cost[x] + g.cost[x + 1])
                    } else {
                        g.whole[x]
                    }
                    .min(quick[x]);
                    if let Some(up) = g.remote_succ[x] {
                        let transfer = g.nodes[up].remote.map_or(0.0, |(_, t)| t);
                        t = t.max(quick[x] + transfer + tail[up]);
                    }
                    tail[x] = t;
                    tail[x + 1] = quick[x + 1];
                }
                for s in (first..=last).rev() {
                    let x = g.node(s, k, F);
                    let mut t = quick[x] + tail[g.node(s, k, I)];
                    if let Some(down) = g.remote_succ[x] {
                        let transfer = g.nodes[down].remote.map_or(0.0, |(_, t)| t);
                        t = t.max(quick[x] + transfer + tail[down]);
                    }
                    tail[x] = t;
                }
            }
        }
        Bounds { least, tail, head }
    }

    /// The root lower bound of the makespan.
    pub fn root(&self, g: &Graph) -> f64 {
        let p = g.ranks as usize;
        let mut work = vec![0.0; p];
        let mut first = vec![f64::INFINITY; p];
        let mut lb: f64 = 0.0;
        for (x, node) in g.nodes.iter().enumerate() {
            let r = node.rank as usize;
            work[r] += self.least[x];
            first[r] = first[r].min(self.head[x]);
            lb = lb.max(self.head[x] + self.tail[x]);
        }
        for r in 0..p {
            if first[r].is_finite() {
                lb = lb.max(first[r] + work[r]);
            }
        }
        lb
    }
}
