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
//!
//! Its times are exact (`ticks.rs`): whole numbers of one tick, compared as integers. In floating
//! point an action shorter than the step of the time it starts at adds nothing to it, two actions
//! of a rank start at once, and the order by start time loses plans: with a forward of 10^-12
//! beside transfers of 10^12 it "proved" a makespan its own heuristic had beaten. Where the costs
//! have no tick, or a duration is zero, it does not run and says why. It looks only for plans
//! shorter by more than the ticks' slack (none for costs of a few binary digits; a millionth of the
//! shortest duration for a spec's), which its proof then says.

use crate::bound::Bounds;
use crate::durations::Durations;
use crate::greedy::Act;
use crate::problem::{F, I, W};
use crate::ticks::{Exact, Whole};
use pipeweave_plan::memory::{self, OutOfMemory};
use pipeweave_sim::CostModel;

/// What the branch and bound found.
#[derive(Debug, Clone, PartialEq)]
pub struct ExactOutcome {
    /// The best makespan: optimal when `proved`.
    pub makespan: f64,
    /// Whether the search finished, so that no plan (of the kind above) is shorter (by more than
    /// the synthesis's `proof_slack`).
    pub proved: bool,
    /// Nodes of the search tree visited.
    pub nodes: u64,
    /// Why it ended.
    pub end: ExactEnd,
}

/// Why the exact method ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExactEnd {
    /// It searched every plan: its makespan is proved optimal.
    Complete,
    /// It visited as many nodes as it was given first.
    NodeBudget,
    /// The caller stopped it (a time limit).
    Stopped,
    /// It did not run: some duration is zero, and an action of no length has no place in the
    /// order by start time it enumerates plans in.
    ZeroDuration,
    /// It did not run: the costs span too wide a range for exact times (no tick within
    /// 2^120 of the longest time, `ticks.rs`).
    CostRange,
}

struct Search<'a, C: ?Sized, T> {
    /// Asked every 4,096 nodes whether to go on (a caller's time limit).
    go_on: &'a mut dyn FnMut(u64) -> bool,
    d: &'a Exact<'a, C, T>,
    bounds: &'a Bounds<T>,
    end: Vec<T>,
    next_f: Vec<u32>,
    next_b: Vec<u32>,
    next_w: Vec<u32>,
    free: Vec<T>,
    live: Vec<u32>,
    /// Work left per rank, in the bound's least costs.
    left: Vec<T>,
    programs: Vec<Vec<Act>>,
    best: T,
    /// Plans shorter than `best` by this much or less are not looked for.
    slack: T,
    best_programs: Option<Vec<Vec<Act>>>,
    nodes: u64,
    node_limit: u64,
    /// Why it stopped before searching every plan.
    stopped: Option<ExactEnd>,
}

/// A branch: an entry for a rank, when it starts and ends.
#[derive(Debug, Clone, Copy)]
struct Branch<T> {
    rank: usize,
    act: Act,
    start: T,
    end: T,
    /// Backwards first among equal starts (the heuristic's preference finds good plans early).
    order: u8,
}

impl<C: CostModel + ?Sized, T: Whole> Search<'_, C, T> {
    #[inline]
    fn ready(&self, x: usize) -> Option<T> {
        let t = self.d.ready_or_unset(&self.end, x);
        (t != T::UNSET).then_some(t)
    }

    /// The next W of stage s in micro-batch order, skipping backwards that ran whole.
    fn next_w_of(&self, s: u32) -> Option<usize> {
        let g = self.d.g;
        let mut k = self.next_w[s as usize];
        while k < g.per_pipeline {
            let w = g.node(s, k, W);
            if self.end[w] == T::UNSET {
                let i = g.node(s, k, I);
                return (self.end[i] != T::UNSET).then_some(w);
            }
            k += 1;
        }
        None
    }

    /// The branches after `last` (start and rank), by start; or why there is no proof where a
    /// pair has no duration in ticks or none at all (a cost model whose pairs depend on the
    /// micro-batch could give one that the checks before the search did not see).
    fn branches(&self, last: (T, usize), out: &mut Vec<Branch<T>>) -> Result<(), ExactEnd> {
        out.clear();
        let g = self.d.g;
        let mut push = |rank: usize, act: Act, start: T, cost: T, order: u8| {
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
            let mut fs: Vec<(usize, T)> = Vec::new();
            let mut bs: Vec<(usize, T)> = Vec::new();
            for &s in &g.on_rank[r] {
                let kf = self.next_f[s as usize];
                if kf < g.per_pipeline {
                    let x = g.node(s, kf, F);
                    if let Some(ready) = self.ready(x) {
                        fs.push((x, t.later(ready)));
                    }
                }
                let kb = self.next_b[s as usize];
                if kb < g.per_pipeline {
                    let x = g.node(s, kb, I);
                    if let Some(ready) = self.ready(x) {
                        bs.push((x, t.later(ready)));
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
                        self.d.cost(w),
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
                        self.d.cost(x),
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
                    self.d.whole(x),
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
                        self.d.cost(x),
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
                        let start = sf.later(sb);
                        let wholes: &[bool] = if g.weight_split {
                            &[true, false]
                        } else {
                            &[true]
                        };
                        for &whole in wholes {
                            match self.d.pair(f, b, whole) {
                                None => return Err(ExactEnd::CostRange),
                                Some(c) if c == T::ZERO => return Err(ExactEnd::ZeroDuration),
                                Some(c) => push(r, Act::Pair { f, b, whole }, start, c, 0),
                            }
                        }
                    }
                }
            }
        }
        out.sort_by(|a, b| {
            a.start
                .cmp(&b.start)
                .then(a.order.cmp(&b.order))
                .then(a.rank.cmp(&b.rank))
        });
        Ok(())
    }

    /// The lower bound of every completion of this node.
    fn bound(&self, last: (T, usize), makespan: T) -> T {
        let g = self.d.g;
        let mut lb = makespan;
        for r in 0..g.ranks as usize {
            if self.left[r] > T::ZERO {
                lb = lb.later(self.free[r].later(last.0) + self.left[r]);
            }
        }
        for s in 0..g.stages {
            let r = g.nodes[g.node(s, 0, F)].rank as usize;
            let base = self.free[r].later(last.0);
            let kf = self.next_f[s as usize];
            if kf < g.per_pipeline {
                let x = g.node(s, kf, F);
                if let Some(ready) = self.ready(x) {
                    lb = lb.later(base.later(ready) + self.bounds.tail[x]);
                }
            }
            let kb = self.next_b[s as usize];
            if kb < g.per_pipeline {
                let x = g.node(s, kb, I);
                if let Some(ready) = self.ready(x) {
                    lb = lb.later(base.later(ready) + self.bounds.tail[x]);
                }
            }
        }
        lb
    }

    /// The nodes an entry covers.
    fn covered(act: Act) -> [Option<usize>; 3] {
        match act {
            Act::One { node, whole } => [Some(node), whole.then_some(node + 1), None],
            Act::Pair { f, b, whole } => [Some(f), Some(b), whole.then_some(b + 1)],
        }
    }

    /// Places branch `b`; the W pointer it moved, to put back.
    fn apply(&mut self, b: &Branch<T>) -> Option<u32> {
        let g = self.d.g;
        let r = b.rank;
        let mut moved = None;
        match b.act {
            Act::One { node, .. } => {
                let (s, k, slot) = g.parts(node);
                match slot {
                    F => {
                        self.next_f[s as usize] += 1;
                        self.live[r] += g.weight[s as usize];
                    }
                    I => {
                        self.next_b[s as usize] += 1;
                        self.live[r] -= g.weight[s as usize];
                    }
                    _ => {
                        moved = Some(self.next_w[s as usize]);
                        self.next_w[s as usize] = k + 1;
                    }
                }
            }
            Act::Pair { f, b: bk, .. } => {
                let (sf, sb) = (g.parts(f).0 as usize, g.parts(bk).0 as usize);
                self.next_f[sf] += 1;
                self.next_b[sb] += 1;
                self.live[r] = self.live[r] + g.weight[sf] - g.weight[sb];
            }
        }
        for x in Self::covered(b.act).into_iter().flatten() {
            self.end[x] = b.end;
            self.left[r] = self.left[r] - self.bounds.least[x];
        }
        self.free[r] = b.end;
        moved
    }

    fn undo(&mut self, b: &Branch<T>, moved: Option<u32>, free: T) {
        let g = self.d.g;
        let r = b.rank;
        match b.act {
            Act::One { node, .. } => {
                let (s, _, slot) = g.parts(node);
                match slot {
                    F => {
                        self.next_f[s as usize] -= 1;
                        self.live[r] -= g.weight[s as usize];
                    }
                    I => {
                        self.next_b[s as usize] -= 1;
                        self.live[r] += g.weight[s as usize];
                    }
                    _ => {
                        if let Some(old) = moved {
                            self.next_w[s as usize] = old;
                        }
                    }
                }
            }
            Act::Pair { f, b: bk, .. } => {
                let (sf, sb) = (g.parts(f).0 as usize, g.parts(bk).0 as usize);
                self.next_f[sf] -= 1;
                self.next_b[sb] -= 1;
                self.live[r] = self.live[r] + g.weight[sb] - g.weight[sf];
            }
        }
        for x in Self::covered(b.act).into_iter().flatten() {
            self.end[x] = T::UNSET;
            self.left[r] = self.left[r] + self.bounds.least[x];
        }
        self.free[r] = free;
    }

    fn dfs(&mut self, last: (T, usize), makespan: T, placed: usize) {
        if self.stopped.is_some() {
            return;
        }
        self.nodes += 1;
        if self.nodes > self.node_limit {
            self.stopped = Some(ExactEnd::NodeBudget);
            return;
        }
        if self.nodes.is_multiple_of(4096) && !(self.go_on)(self.nodes) {
            self.stopped = Some(ExactEnd::Stopped);
            return;
        }
        if placed == self.d.g.nodes.len() {
            if makespan < self.best - self.slack {
                self.best = makespan;
                self.best_programs = Some(self.programs.clone());
            }
            return;
        }
        if self.bound(last, makespan) >= self.best - self.slack {
            return;
        }
        let mut branches = Vec::new();
        if let Err(why) = self.branches(last, &mut branches) {
            self.stopped = Some(why);
            return;
        }
        for b in branches {
            if b.end.later(makespan) >= self.best - self.slack {
                continue;
            }
            let free = self.free[b.rank];
            let moved = self.apply(&b);
            let count = Self::covered(b.act).into_iter().flatten().count();
            self.programs[b.rank].push(b.act);
            self.dfs((b.start, b.rank), makespan.later(b.end), placed + count);
            self.programs[b.rank].pop();
            self.undo(&b, moved, free);
            if self.stopped.is_some() {
                return;
            }
        }
    }
}

/// What a search ends with: why, the nodes it visited, and the programs of the shortest plan it
/// found if it found one shorter.
pub(crate) type Searched = (ExactEnd, u64, Option<Vec<Vec<Act>>>);

/// Searches for a plan shorter than `incumbent` (a makespan in ticks) by more than `slack`,
/// visiting at most `node_limit` nodes and asking `go_on` every 4,096 nodes: why it ended, the
/// nodes it visited, and the programs of the shortest plan it found if it found one so.
pub(crate) fn branch_and_bound<C: CostModel + ?Sized, T: Whole>(
    d: &Exact<'_, C, T>,
    bounds: &Bounds<T>,
    (incumbent, slack): (T, T),
    node_limit: u64,
    go_on: &mut dyn FnMut(u64) -> bool,
) -> Result<Searched, OutOfMemory> {
    let g = d.g;
    let p = g.ranks as usize;
    let mut left = vec![T::ZERO; p];
    for (x, n) in g.nodes.iter().enumerate() {
        left[n.rank as usize] = left[n.rank as usize] + bounds.least[x];
    }
    let mut search = Search {
        go_on,
        d,
        bounds,
        end: memory::filled(g.nodes.len(), T::UNSET, "the exact method's times")?,
        next_f: vec![0; g.stages as usize],
        next_b: vec![0; g.stages as usize],
        next_w: vec![0; g.stages as usize],
        free: vec![T::ZERO; p],
        live: vec![0; p],
        left,
        programs: vec![Vec::new(); p],
        best: incumbent,
        slack,
        best_programs: None,
        nodes: 0,
        node_limit,
        stopped: None,
    };
    search.dfs((T::UNSET, 0), T::ZERO, 0);
    Ok((
        search.stopped.unwrap_or(ExactEnd::Complete),
        search.nodes,
        search.best_programs,
    ))
}
