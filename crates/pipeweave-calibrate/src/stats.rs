//! A sample's median and spread.

use serde::{Deserialize, Serialize};

/// Durations (seconds) or other quantities measured several times: the median, the quartiles
/// (linear interpolation between the closest ranks), the extremes, how many samples and their
/// mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stats {
    /// The median.
    pub median: f64,
    /// The first quartile.
    pub q1: f64,
    /// The third quartile.
    pub q3: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
    /// How many samples.
    pub samples: u32,
    /// Their mean (absent in files of version 1): what a sum of many of them adds up to, the
    /// rare long ones (a garbage collection, the host taken by another process) included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
}

impl Stats {
    /// The statistics of `samples` (finite numbers), `None` when there are none.
    pub fn of(samples: &[f64]) -> Option<Stats> {
        if samples.is_empty() {
            return None;
        }
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let q = |p: f64| {
            let at = p * (v.len() - 1) as f64;
            let lo = at.floor() as usize;
            let hi = at.ceil() as usize;
            v[lo] + (v[hi] - v[lo]) * (at - lo as f64)
        };
        Some(Stats {
            median: q(0.5),
            q1: q(0.25),
            q3: q(0.75),
            min: v[0],
            max: v[v.len() - 1],
            samples: u32::try_from(v.len()).unwrap_or(u32::MAX),
            mean: Some(v.iter().sum::<f64>() / v.len() as f64),
        })
    }

    /// Whether every figure is finite and at least 0, in order, with at least one sample, and the
    /// mean, when given, between the extremes.
    pub fn is_sound(&self) -> bool {
        let all = [self.min, self.q1, self.median, self.q3, self.max];
        all.iter().all(|x| x.is_finite() && *x >= 0.0)
            && all.windows(2).all(|w| w[0] <= w[1])
            && self.samples > 0
            && self
                .mean
                .is_none_or(|m| m.is_finite() && self.min <= m && m <= self.max)
    }
}
