//! The exact method for small sizes: a branch and bound over every order, proving optimality.
//!
//! It enumerates each candidate plan once, in the order of its actions' start times (ties by rank):
//! at a node every action that can start no earlier than the last one placed is a branch, started
//! as early as its rank and inputs allow. Every plan the simulator would time the same way (each
//! action as early as its rank's order allows) is reached exactly once, so nothing is missed and
//! nothing repeats. A branch is cut when its lower bound (`bound.rs`: the work each rank has left,
//! and the longest chain of work after each action that can start next) reaches the best plan
//! found so far, which starts as the heuristic's.
//!
//! What it proves optimal over, stated exactly: plans in which every stage runs its forwards, its
//! backwards and its weight backwards each in micro-batch order (every library schedule does),
//! with costs that depend on the stage and the kind of work but not on the micro-batch (every cost
//! model of pipeweave's), and positive (an action of no length has no place in a start-time order).

use crate::bound::Bounds;
use crate::greedy::Act;
use crate::problem::{F, Graph, I, W};
use pipeweave_sim::CostModel;

/// What the branch and bound found.
#[derive(Debug, Clone, PartialEq)]
pub struct ExactOutcome {
    /// The best makespan: optimal when `proved`.
    pub makespan: f64,
    /// Whether the search finished, so that no plan (of the kind above) is better.
    pub proved: bool,
    /// Nodes of the search tree visited.
    pub nodes: u64,
}

struct Search<'a, C: ?Sized> {
    /// Asked every 4,096 nodes whether to go on (a caller's time limit).
    go_on: &'a mut dyn FnMut(u64) -> bool,
    g: &'a Graph,
    costs: &'a C,
    bounds: &'a Bounds,
    end: Vec<f64>,
    next_f: Vec<u32>,
    next_b: Vec<u32>,
    next_w: Vec<u32>,
    free: Vec<f64>,
    live: Vec<u32>,
    /// Work left per rank, in the bound's least costs.
    left: Vec<f64>,
    programs: Vec<Vec<Act>>,
    best: f64,
    best_programs: Option<Vec<Vec<Act>>>,
    nodes: u64,
    node_limit: u64,
    stopped: bool,
}

/// A branch: an entry for a rank, when it starts and ends.
#[derive(Debug, Clone, Copy)]
struct Branch {
    rank: usize,
    act: Act,
    start: f64,
    end: f64,
    /// Backwards first among equal starts (the heuristic's preference finds good plans early).
    order: u8,
}

impl<C: CostModel + ?Sized> Search<'_, C> {
    fn ready(&self, x: usize) -> Option<f64> {
        self.g.ready(&self.end, x)
    }

    /// The next W of stage s in micro-batch order, skipping backwards that ran whole.
    fn next_w_of(&self, s: u32) -> Option<usize> {
        let mut k = self.next_w[s as usize];
        while k < self.g.per_pipeline {
            let w = self.g.node(s, k, W);
            if self.end[w].is_nan() {
                let i = self.g.node(s, k, I);
                return (!self.end[i].is_nan()).then_some(w);
            }
            k += 1;
        }
        None
    }

    fn branches(&self, last: (f64, usize), out: &mut Vec<Branch>) {
        out.clear();
        let g = self.g;
        let mut push = |rank: usize, act: Act, start: f64, cost: f64, order: u8| {
            if (start, rank) > last {
                out.push(Branch {
                    rank,
                    act,
                    start,
                    end: start + cost,
                    order,
                });
            }
        };
        for r in 0..g.ranks as usize {
            let t = self.free[r];
            let mut fs: Vec<(usize, f64)> = Vec::new();
            let mut bs: Vec<(usize, f64)> = Vec::new();
            for &s in &g.on_rank[r] {
                let kf = self.next_f[s as usize];
                if kf < g.per_pipeline {
                    let x = g.node(s, kf, F);
                    if let Some(ready) = self.ready(x) {
                        fs.push((x, t.max(ready)));
                    }
                }
                let kb = self.next_b[s as usize];
                if kb < g.per_pipeline {
                    let x = g.node(s, kb, I);
                    if let Some(ready) = self.ready(x) {
                        bs.push((x, t.max(ready)));
                    }
                }
                if g.weight_split
                    && let Some(w) = self.next_w_of(s)
                {
                    push(
                        r,
                        Act::One {
                            node: w,
                            whole: false,
                        },
                        t,
                        g.cost[w],
                        2,
                    );
                }
            }
            for &(x, start) in &fs {
                if self.live[r] + g.weight[g.parts(x).0 as usize] <= g.limits[r] {
                    push(
                        r,
                        Act::One {
                            node: x,
                            whole: false,
                        },
                        start,
                        g.cost[x],
                        1,
                    );
                }
            }
            for &(x, start) in &bs {
                push(
                    r,
                    Act::One {
                        node: x,
                        whole: true,
                    },
                    start,
                    g.whole[x],
                    0,
                );
                if g.weight_split {
                    push(
                        r,
                        Act::One {
                            node: x,
                            whole: false,
                        },
                        start,
                        g.cost[x],
                        0,
                    );
                }
            }
            if g.pairs {
                for &(f, sf) in &fs {
                    for &(b, sb) in &bs {
                        let (wf, wb) = (
                            g.weight[g.parts(f).0 as usize],
                            g.weight[g.parts(b).0 as usize],
                        );
                        if f / 3 == b / 3 || (self.live[r] + wf).saturating_sub(wb) > g.limits[r] {
                            continue;
                        }
                        let start = sf.max(sb);
                        let whole_cost = g.pair_cost(self.costs, f, b, true);
                        push(r, Act::Pair { f, b, whole: true }, start, whole_cost, 0);
                        if g.weight_split {
                            let c = g.pair_cost(self.costs, f, b, false);
                            push(r, Act::Pair { f, b, whole: false }, start, c, 0);
                        }
                    }
                }
            }
        }
        out.sort_by(|a, b| {
            a.start
                .total_cmp(&b.start)
                .then(a.order.cmp(&b.order))
                .then(a.rank.cmp(&b.rank))
        });
    }

    /// The lower bound of every completion of this node.
    fn bound(&self, last: (f64, usize), makespan: f64) -> f64 {
        let g = self.g;
        let mut lb = makespan;
        for r in 0..g.ranks as usize {
            if self.left[r] > 0.0 {
                lb = lb.max(self.free[r].max(last.0) + self.left[r]);
            }
        }
        for s in 0..g.stages {
            let r = g.nodes[g.node(s, 0, F)].rank as usize;
            let base = self.free[r].max(last.0);
            let kf = self.next_f[s as usize];
            if kf < g.per_pipeline {
                let x = g.node(s, kf, F);
                if let Some(ready) = self.ready(x) {
                    lb = lb.max(base.max(ready) + self.bounds.tail[x]);
                }
            }
            let kb = self.next_b[s as usize];
            if kb < g.per_pipeline {
                let x = g.node(s, kb, I);
                if let Some(ready) = self.ready(x) {
                    lb = lb.max(base.max(ready) + self.bounds.tail[x]);
                }
            }
        }
        lb
    }

    /// Places branch `b`; the W pointer it moved, to put back.
    fn apply(&mut self, b: &Branch) -> Option<u32> {
        let g = self.g;
        let r = b.rank;
        let mut moved = None;
        let mut covered: [Option<usize>; 3] = [None; 3];
        match b.act {
            Act::One { node, whole } => {
                let (s, k, slot) = g.parts(node);
                covered[0] = Some(node);
                match slot {
                    F => {
                        self.next_f[s as usize] += 1;
                        self.live[r] += g.weight[s as usize];
                    }
                    I => {
                        self.next_b[s as usize] += 1;
                        self.live[r] -= g.weight[s as usize];
                        if whole {
                            covered[1] = Some(node + 1);
                        }
                    }
                    _ => {
                        moved = Some(self.next_w[s as usize]);
                        self.next_w[s as usize] = k + 1;
                    }
                }
            }
            Act::Pair { f, b: bk, whole } => {
                covered = [Some(f), Some(bk), whole.then_some(bk + 1)];
                let (sf, sb) = (g.parts(f).0 as usize, g.parts(bk).0 as usize);
                self.next_f[sf] += 1;
                self.next_b[sb] += 1;
                self.live[r] = self.live[r] + g.weight[sf] - g.weight[sb];
            }
        }
        for x in covered.into_iter().flatten() {
            self.end[x] = b.end;
            self.left[r] -= self.bounds.least[x];
        }
        self.free[r] = b.end;
        moved
    }

    fn undo(&mut self, b: &Branch, moved: Option<u32>, free: f64) {
        let g = self.g;
        let r = b.rank;
        let mut covered: [Option<usize>; 3] = [None; 3];
        match b.act {
            Act::One { node, whole } => {
                let (s, _, slot) = g.parts(node);
                covered[0] = Some(node);
                match slot {
                    F => {
                        self.next_f[s as usize] -= 1;
                        self.live[r] -= g.weight[s as usize];
                    }
                    I => {
                        self.next_b[s as usize] -= 1;
                        self.live[r] += g.weight[s as usize];
                        if whole {
                            covered[1] = Some(node + 1);
                        }
                    }
                    _ => {
                        if let Some(old) = moved {
                            self.next_w[s as usize] = old;
                        }
                    }
                }
            }
            Act::Pair { f, b: bk, whole } => {
                covered = [Some(f), Some(bk), whole.then_some(bk + 1)];
                let (sf, sb) = (g.parts(f).0 as usize, g.parts(bk).0 as usize);
                self.next_f[sf] -= 1;
                self.next_b[sb] -= 1;
                self.live[r] = self.live[r] + g.weight[sb] - g.weight[sf];
            }
        }
        for x in covered.into_iter().flatten() {
            self.end[x] = f64::NAN;
            self.left[r] += self.bounds.least[x];
        }
        self.free[r] = free;
    }

    fn dfs(&mut self, last: (f64, usize), makespan: f64, placed: usize) {
        if self.stopped {
            return;
        }
        self.nodes += 1;
        if self.nodes > self.node_limit
            || (self.nodes.is_multiple_of(4096) && !(self.go_on)(self.nodes))
        {
            self.stopped = true;
            return;
        }
        if placed == self.g.nodes.len() {
            if makespan < self.best - 1e-9 {
                self.best = makespan;
                self.best_programs = Some(self.programs.clone());
            }
            return;
        }
        if self.bound(last, makespan) >= self.best - 1e-9 {
            return;
        }
        let mut branches = Vec::new();
        self.branches(last, &mut branches);
        for b in branches {
            if b.end.max(makespan) >= self.best - 1e-9 {
                continue;
            }
            let free = self.free[b.rank];
            let moved = self.apply(&b);
            let (count, pair_extra) = match b.act {
                Act::One { whole: true, .. } => (2, 0),
                Act::One { .. } => (1, 0),
                Act::Pair { whole, .. } => (2, usize::from(whole)),
            };
            self.programs[b.rank].push(b.act);
            self.dfs(
                (b.start, b.rank),
                makespan.max(b.end),
                placed + count + pair_extra,
            );
            self.programs[b.rank].pop();
            self.undo(&b, moved, free);
            if self.stopped {
                return;
            }
        }
    }
}

/// Searches for a plan better than `incumbent` (a makespan), visiting at most `node_limit` nodes
/// and asking `go_on` every 4,096 nodes: the best makespan and its programs if one better was
/// found.
pub(crate) fn branch_and_bound<C: CostModel + ?Sized>(
    g: &Graph,
    costs: &C,
    bounds: &Bounds,
    incumbent: f64,
    node_limit: u64,
    go_on: &mut dyn FnMut(u64) -> bool,
) -> (ExactOutcome, Option<Vec<Vec<Act>>>) {
    let p = g.ranks as usize;
    let mut left = vec![0.0; p];
    for (x, n) in g.nodes.iter().enumerate() {
        left[n.rank as usize] += bounds.least[x];
    }
    let mut search = Search {
        go_on,
        g,
        costs,
        bounds,
        end: vec![f64::NAN; g.nodes.len()],
        next_f: vec![0; g.stages as usize],
        next_b: vec![0; g.stages as usize],
        next_w: vec![0; g.stages as usize],
        free: vec![0.0; p],
        live: vec![0; p],
        left,
        programs: vec![Vec::new(); p],
        best: incumbent,
        best_programs: None,
        nodes: 0,
        node_limit,
        stopped: false,
    };
    search.dfs((f64::NEG_INFINITY, 0), 0.0, 0);
    (
        ExactOutcome {
            makespan: search.best,
            proved: !search.stopped,
            nodes: search.nodes,
        },
        search.best_programs,
    )
}
