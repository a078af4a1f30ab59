//! How a group of GPUs given as arithmetic progressions spreads over nodes, in time that does not
//! grow with the group: the nodes it touches and the most members one of them holds.
//!
//! Every group of the cost model is of one shape: the GPUs of a few pipeline ranks (the offsets)
//! at data-parallel ranks `0, e, 2e, …` (`count` of them), which [`crate::comm::gpu_index`]
//! makes `offset + k · stride`. Listing the members and sorting them, as [`Spread::of`] does,
//! costs the size of the data-parallel group, a million on a cluster of a million GPUs, for every
//! part of every configuration `recommend` tries. Here the answer is counted instead:
//!
//! - Offsets closer than one stride form a **cluster**: members `ρ + k·stride` with every ρ in
//!   one window of `stride` GPUs. Clusters of the cost model lie apart (pipeline ranks outermost:
//!   each rank's data-parallel peers are a block of their own) or there is only one (pipeline
//!   ranks innermost: the offsets are the ranks, below the stride); their nodes meet at most at
//!   their ends, where the counts are added.
//! - In a cluster, only a node holding the first or the last member can miss members at the ends
//!   of the progressions; they are counted directly. Any node between holds, of each residue ρ,
//!   `⌊g/stride⌋` members, one more when `(ρ − N·g) mod stride < g mod stride` (g GPUs per node).
//!   How many nodes between touch the group, and whether some node holds a given run of residues,
//!   are counts of `N` with `N·g mod stride` in a range, which floor sums give in a logarithmic
//!   number of steps.
//!
//! Offsets that are neither (two progressions interleaved at a distance of a stride or more, which
//! no placement makes) are walked node by node.

use super::Spread;

/// Nodes of a cluster spanning this many nodes or fewer are counted one by one.
const SMALL_SPAN: u128 = 64;

impl Spread {
    /// The spread of the GPUs `{o + k·stride : o ∈ offsets, 0 ≤ k < count}` over nodes of `gpn`
    /// GPUs: what [`Spread::of`] gives on the members listed (a member given twice counts twice),
    /// in time that does not grow with `count`.
    pub fn of_progressions(offsets: &[u64], stride: u64, count: u64, gpn: u64) -> Spread {
        let mut offs: Vec<u128> = offsets.iter().map(|&o| u128::from(o)).collect();
        offs.sort_unstable();
        let ap = Progressions {
            stride: u128::from(stride.max(1)),
            count: u128::from(count),
            gpn: u128::from(gpn.max(1)),
        };
        let (nodes, per_node) = if offs.is_empty() || count == 0 {
            (1, 1)
        } else {
            match ap.clusters(&offs) {
                Some(clusters) => {
                    let mut fold = NodeFold::default();
                    for c in clusters {
                        fold.add(ap.cluster(c));
                    }
                    fold.finish()
                }
                None => ap.walk(&offs),
            }
        };
        Spread {
            nodes: nodes.max(1) as f64,
            per_node: per_node.max(1) as f64,
        }
    }
}

/// Progressions of a common stride and length on nodes of `gpn` GPUs.
struct Progressions {
    stride: u128,
    count: u128,
    gpn: u128,
}

/// A cluster's nodes: the first and the last with their members, and those between.
struct ClusterNodes {
    first: u128,
    first_count: u128,
    last: u128,
    last_count: u128,
    /// Nodes strictly between the first and the last that hold a member.
    inner_nodes: u128,
    /// The most members one of them holds (0 when there is none).
    inner_max: u128,
}

/// Clusters folded in order, adding the members of a node two clusters share.
#[derive(Default)]
struct NodeFold {
    nodes: u128,
    max: u128,
    open: Option<(u128, u128)>,
}

impl NodeFold {
    fn node(&mut self, node: u128, members: u128) {
        match &mut self.open {
            Some((n, c)) if *n == node => *c += members,
            _ => {
                self.close();
                self.nodes += 1;
                self.open = Some((node, members));
            }
        }
    }

    fn close(&mut self) {
        if let Some((_, c)) = self.open.take() {
            self.max = self.max.max(c);
        }
    }

    fn add(&mut self, c: ClusterNodes) {
        self.node(c.first, c.first_count);
        if c.last != c.first {
            self.close();
            self.nodes += c.inner_nodes;
            self.max = self.max.max(c.inner_max);
            self.node(c.last, c.last_count);
        }
    }

    fn finish(mut self) -> (u128, u128) {
        self.close();
        (self.nodes, self.max)
    }
}

impl Progressions {
    /// The last member of the progression from `o`.
    fn end(&self, o: u128) -> u128 {
        o + (self.count - 1) * self.stride
    }

    /// Members of the progression from `o` on node `node`.
    fn on_node(&self, o: u128, node: u128) -> u128 {
        let lo = (node * self.gpn).max(o);
        let hi = (node * self.gpn + self.gpn - 1).min(self.end(o));
        if lo > hi {
            return 0;
        }
        // members k with lo ≤ o + k·stride ≤ hi
        let (from, to) = ((lo - o).div_ceil(self.stride), (hi - o) / self.stride);
        if to < from { 0 } else { to - from + 1 }
    }

    /// Splits sorted offsets into clusters lying apart, or `None` when two interleave.
    fn clusters<'a>(&self, offs: &'a [u128]) -> Option<Vec<&'a [u128]>> {
        let mut out: Vec<&[u128]> = Vec::new();
        let mut start = 0;
        for i in 1..=offs.len() {
            if i == offs.len() || offs[i] - offs[start] >= self.stride {
                if let Some(prev) = out.last()
                    && offs[start] <= self.end(prev[prev.len() - 1])
                {
                    return None;
                }
                out.push(&offs[start..i]);
                start = i;
            }
        }
        Some(out)
    }

    /// The nodes of one cluster (offsets sorted, within one stride).
    fn cluster(&self, offs: &[u128]) -> ClusterNodes {
        let (g, s) = (self.gpn, self.stride);
        let members = |node: u128| offs.iter().map(|&o| self.on_node(o, node)).sum::<u128>();
        let first = offs[0] / g;
        let last = self.end(offs[offs.len() - 1]) / g;
        let mut c = ClusterNodes {
            first,
            first_count: members(first),
            last,
            last_count: members(last),
            inner_nodes: 0,
            inner_max: 0,
        };
        if last - first <= SMALL_SPAN {
            for node in first + 1..last {
                let m = members(node);
                c.inner_nodes += u128::from(m > 0);
                c.inner_max = c.inner_max.max(m);
            }
            return c;
        }
        // Between the first and the last node no progression is cut short (see the module
        // documentation): each residue has ⌊g/s⌋ members on a node, one more in a window.
        let inner = Range {
            start: first + 1,
            len: last - first - 1,
        };
        let h = offs.len() as u128;
        let (q, m) = (g / s, g % s);
        let mut res: Vec<u128> = offs.iter().map(|&o| o % s).collect();
        res.sort_unstable();
        c.inner_nodes = if q > 0 {
            inner.len
        } else {
            // a node holds a member of residue ρ when N·g mod s is in [ρ − g + 1, ρ]
            let mut spans: Vec<(u128, u128)> = Vec::new();
            for &r in &res {
                let lo = (r + s - (m - 1)) % s;
                if lo <= r {
                    spans.push((lo, r));
                } else {
                    spans.push((lo, s - 1));
                    spans.push((0, r));
                }
            }
            spans.sort_unstable();
            let mut merged: Vec<(u128, u128)> = Vec::new();
            for (lo, hi) in spans {
                match merged.last_mut() {
                    Some(last) if lo <= last.1 + 1 => last.1 = last.1.max(hi),
                    _ => merged.push((lo, hi)),
                }
            }
            merged
                .iter()
                .map(|&(lo, hi)| inner.count_phase(g, s, lo, hi))
                .sum()
        };
        c.inner_max = h * q
            + if m == 0 {
                0
            } else {
                inner.best_window(&res, g, s, m)
            };
        c
    }

    /// Nodes and the most members on one, walking the nodes that hold members in order.
    fn walk(&self, offs: &[u128]) -> (u128, u128) {
        let mut next: Vec<u128> = vec![0; offs.len()];
        let (mut nodes, mut max) = (0, 0);
        loop {
            let node = offs
                .iter()
                .zip(&next)
                .filter(|&(_, &k)| k < self.count)
                .map(|(&o, &k)| (o + k * self.stride) / self.gpn)
                .min();
            let Some(node) = node else {
                break;
            };
            let mut here = 0;
            for (&o, k) in offs.iter().zip(next.iter_mut()) {
                if *k < self.count && (o + *k * self.stride) / self.gpn == node {
                    let m = self.on_node(o, node);
                    here += m;
                    *k += m;
                }
            }
            nodes += 1;
            max = max.max(here);
        }
        (nodes, max)
    }
}

/// Nodes `start .. start + len`.
struct Range {
    start: u128,
    len: u128,
}

impl Range {
    /// Nodes N of the range with `N·g mod s` in `[lo, hi]` (`lo ≤ hi < s`).
    fn count_phase(&self, g: u128, s: u128, lo: u128, hi: u128) -> u128 {
        let a = g % s;
        let b = (self.start % s) * a % s;
        // [v mod s ≥ t] = ⌊(v + s − t)/s⌋ − ⌊v/s⌋ for 0 ≤ t ≤ s
        let at_least =
            |t: u128| floor_sum(self.len, s, a, b + s - t) - floor_sum(self.len, s, a, b);
        at_least(lo) - at_least(hi + 1)
    }

    /// Whether a node N of the range has `N·g mod s` in the circular interval from `lo` to `hi`.
    fn has_phase(&self, g: u128, s: u128, lo: u128, hi: u128) -> bool {
        if lo <= hi {
            self.count_phase(g, s, lo, hi) > 0
        } else {
            self.count_phase(g, s, lo, s - 1) > 0 || self.count_phase(g, s, 0, hi) > 0
        }
    }

    /// The most residues (sorted, mod s) one node's window `[N·g mod s, + m)` covers.
    fn best_window(&self, res: &[u128], g: u128, s: u128, m: u128) -> u128 {
        let h = res.len();
        // residues around the circle twice, so that a window may wrap
        let at = |j: usize| {
            if j < h { res[j] } else { res[j - h] + s }
        };
        let mut best = 0;
        for i in 0..h {
            // A window covering residues i..=j has its start in [at(j) − m + 1, at(i)]: the
            // nearer j, the wider that interval, so the farthest j with such a node is found by
            // halving.
            let fits = |j: usize| {
                let lo = (at(j) + s - (m - 1)) % s;
                self.has_phase(g, s, lo, at(i) % s)
            };
            // the farthest residue within m of residue i
            let (mut near, mut far) = (i, i + h - 1);
            while near < far {
                let mid = near + (far - near).div_ceil(2);
                if at(mid) - at(i) < m {
                    near = mid;
                } else {
                    far = mid - 1;
                }
            }
            if !fits(i) {
                continue;
            }
            let (mut lo, mut hi) = (i, far);
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                if fits(mid) { lo = mid } else { hi = mid - 1 }
            }
            best = best.max((lo - i + 1) as u128);
        }
        best
    }
}

/// `Σ_{i < n} ⌊(a·i + b)/m⌋` by the Euclid-like reduction (each step swaps the roles of `a` and
/// `m`, so the steps are logarithmic).
fn floor_sum(mut n: u128, mut m: u128, mut a: u128, mut b: u128) -> u128 {
    let mut sum = 0;
    loop {
        if a >= m {
            sum += n * n.saturating_sub(1) / 2 * (a / m);
            a %= m;
        }
        if b >= m {
            sum += n * (b / m);
            b %= m;
        }
        let y = a * n + b;
        if y < m {
            return sum;
        }
        n = y / m;
        b = y % m;
        std::mem::swap(&mut m, &mut a);
    }
}

#[cfg(test)]
mod tests;
