//! The link probe of `pipeweave.torch.profile` (the traces' `pipeweave.probe`): its points, each
//! link's latency and bandwidth fitted to them, and the time of an all-reduce of any size among
//! any ranks from them (`[probe]` in the costs file, version 4).
//!
//! A link's fit is the least-squares line `time = latency + bytes / bandwidth` through its points
//! (one-way transfers: half a round trip at each size). A line that would start below zero is
//! fitted through the origin instead (no latency); points that do not grow with their size (a
//! probe on a loaded machine) give no bandwidth, and their mean time as the latency.

use crate::stats::Stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the probe measured (`[probe]`): the points of every trace and each link's fit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeCosts {
    /// Each probed link's fit (`[[probe.link]]`), by rank pair.
    #[serde(default, rename = "link", skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkFit>,
    /// One-way transfers (`[[probe.p2p]]`), in the traces' order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub p2p: Vec<TransferPoint>,
    /// All-reduces of two ranks (`[[probe.all_reduce]]`), in the traces' order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub all_reduce: Vec<ReducePoint>,
    /// Whether the calibrating run (the first) kept a part on several ranks, so that its step's
    /// tail (`overhead.tail`) holds the all-reduce of their gradients already.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reduction_in_tail: bool,
}

impl ProbeCosts {
    /// Whether the run probed nothing.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
            && self.p2p.is_empty()
            && self.all_reduce.is_empty()
            && !self.reduction_in_tail
    }
}

/// A link's latency and bandwidth, fitted to its probe's points.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkFit {
    /// The lower rank.
    pub from: u32,
    /// The higher rank (a link is taken alike both ways).
    pub to: u32,
    /// Seconds a message takes whatever its size.
    pub latency: f64,
    /// Bytes per second beyond the latency; absent when the points did not grow with their size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<f64>,
    /// How many points the fit is of.
    pub points: u32,
}

/// A one-way transfer of the probe: half a round trip between two ranks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransferPoint {
    /// The rank that timed it (the pair's lower).
    pub from: u32,
    /// Its peer.
    pub to: u32,
    /// Bytes each way.
    pub bytes: u64,
    /// Seconds, the least of the probe's repeats.
    pub time: f64,
}

/// An all-reduce of the probe between two ranks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReducePoint {
    /// The two ranks, the lower first.
    pub ranks: [u32; 2],
    /// Bytes all-reduced.
    pub bytes: u64,
    /// Seconds, the least of the probe's repeats.
    pub time: f64,
}

/// A line `time = latency + bytes / bandwidth`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// Seconds at no bytes.
    pub latency: f64,
    /// Bytes per second; `None` when the points did not grow with their size.
    pub bandwidth: Option<f64>,
}

impl Fit {
    /// The seconds `bytes` take.
    pub fn time(&self, bytes: f64) -> f64 {
        self.latency + self.bandwidth.map_or(0.0, |b| bytes / b)
    }
}

/// The least-squares line through `(bytes, seconds)` points; `None` without two sizes.
pub fn fit(points: &[(f64, f64)]) -> Option<Fit> {
    let n = points.len() as f64;
    let first = points.first()?.0;
    if points.iter().all(|p| p.0 == first) {
        return None;
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_t = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxt: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_t)).sum();
    let slope = sxt / sxx;
    if !(slope.is_finite() && slope > 0.0) {
        return Some(Fit {
            latency: mean_t,
            bandwidth: None,
        });
    }
    let latency = mean_t - slope * mean_x;
    if latency >= 0.0 {
        return Some(Fit {
            latency,
            bandwidth: Some(1.0 / slope),
        });
    }
    // Through the origin: the slope that fits best with no latency.
    let sxx0: f64 = points.iter().map(|p| p.0 * p.0).sum();
    let sxt0: f64 = points.iter().map(|p| p.0 * p.1).sum();
    Some(Fit {
        latency: 0.0,
        bandwidth: (sxt0 > 0.0).then(|| sxx0 / sxt0),
    })
}

/// Each probed link's fit, by (lower, higher) rank.
pub(crate) fn link_fits(p2p: &[TransferPoint]) -> Vec<LinkFit> {
    let mut by: BTreeMap<(u32, u32), Vec<(f64, f64)>> = BTreeMap::new();
    for p in p2p {
        let key = (p.from.min(p.to), p.from.max(p.to));
        by.entry(key).or_default().push((p.bytes as f64, p.time));
    }
    by.into_iter()
        .filter_map(|((from, to), points)| {
            fit(&points).map(|f| LinkFit {
                from,
                to,
                latency: f.latency,
                bandwidth: f.bandwidth,
                points: points.len() as u32,
            })
        })
        .collect()
}

/// The all-reduce among `ranks` (sorted, at least two) of `bytes`, in seconds, and how it was
/// priced (for a note):
/// - two ranks: the line fitted to the probe's all-reduces of those two (of any two, when they
///   were not probed);
/// - more: the ring all-reduce's `2 (n − 1)` steps of `bytes / n` each on the slowest of the
///   links between consecutive members, each step a message (latency plus its bytes over the
///   bandwidth), as NCCL's and gloo's ring algorithms run it.
pub(crate) fn all_reduce_time(
    probe: &ProbeCosts,
    ranks: &[u32],
    bytes: u64,
) -> Option<(f64, &'static str)> {
    if ranks.len() < 2 {
        return None;
    }
    let [a, b] = ranks else {
        let n = ranks.len() as f64;
        let step = bytes as f64 / n;
        let links: Vec<Fit> = ranks
            .windows(2)
            .chain(std::iter::once(
                [ranks[ranks.len() - 1], ranks[0]].as_slice(),
            ))
            .filter_map(|w| link_fit(probe, w[0], w[1]))
            .collect();
        if links.is_empty() {
            return None;
        }
        let slowest = links.iter().map(|f| f.time(step)).fold(0.0, f64::max);
        return Some((2.0 * (n - 1.0) * slowest, "ring"));
    };
    let points = |pair: Option<[u32; 2]>| -> Vec<(f64, f64)> {
        probe
            .all_reduce
            .iter()
            .filter(|p| pair.is_none_or(|pair| p.ranks == pair))
            .map(|p| (p.bytes as f64, p.time))
            .collect()
    };
    let (mine, any) = (points(Some([*a, *b])), points(None));
    for (points, how) in [(mine, "pair"), (any, "any pair")] {
        if let Some(f) = fit(&points) {
            return Some((f.time(bytes as f64), how));
        }
        // One size probed: that size's time, as a latency (the median of its points).
        if let Some(s) = Stats::of(&points.iter().map(|p| p.1).collect::<Vec<_>>()) {
            return Some((s.median, how));
        }
    }
    None
}

/// The fit of the link between `a` and `b`, either way.
fn link_fit(probe: &ProbeCosts, a: u32, b: u32) -> Option<Fit> {
    let key = (a.min(b), a.max(b));
    probe
        .links
        .iter()
        .find(|l| (l.from, l.to) == key)
        .map(|l| Fit {
            latency: l.latency,
            bandwidth: l.bandwidth,
        })
}

/// What is wrong in `[probe]`, in words naming the key.
pub(crate) fn check(p: &ProbeCosts, ranks: u32, out: &mut Vec<String>) {
    for l in &p.links {
        if l.from >= l.to || l.to >= ranks {
            out.push(format!(
                "`[[probe.link]]` {} – {} is no link between two of the {ranks} ranks, the lower first",
                l.from, l.to
            ));
        }
        if !l.latency.is_finite() || l.latency < 0.0 {
            out.push(format!(
                "`[[probe.link]]` {} – {}: `latency` {} is no number of seconds from 0",
                l.from, l.to, l.latency
            ));
        }
        if let Some(b) = l.bandwidth
            && !(b.is_finite() && b > 0.0)
        {
            out.push(format!(
                "`[[probe.link]]` {} – {}: `bandwidth` {b} is no positive number of bytes per second",
                l.from, l.to
            ));
        }
    }
    let sound = |bytes: u64, time: f64| bytes <= 1 << 53 && time.is_finite() && time > 0.0;
    for t in &p.p2p {
        if t.from == t.to || t.from >= ranks || t.to >= ranks || !sound(t.bytes, t.time) {
            out.push(format!(
                "`[[probe.p2p]]` {} → {} of {} bytes: two of the {ranks} ranks, at most 2^53 bytes and a time above 0 are wanted, it has {} s",
                t.from, t.to, t.bytes, t.time
            ));
        }
    }
    for r in &p.all_reduce {
        let [a, b] = r.ranks;
        if a >= b || b >= ranks || !sound(r.bytes, r.time) {
            out.push(format!(
                "`[[probe.all_reduce]]` of ranks {a} and {b}, {} bytes: two of the {ranks} ranks (the lower first), at most 2^53 bytes and a time above 0 are wanted, it has {} s",
                r.bytes, r.time
            ));
        }
    }
}
