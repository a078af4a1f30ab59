//! Charts too dense to label: when to draw bands instead of cells, the bands of a rank's row, and
//! how much of the time a lane's sends are in flight.

use super::Layout;
use super::palette::{Look, Shading};
use pipeweave_plan::{Action, Interval, Plan};

/// Neighbouring cells of one look closer than this (in pixels) merge into one band: a smaller
/// gap would not show anyway.
const MERGE_GAP_PX: f64 = 1.0;

/// The width of a lane's bins, in pixels.
const BIN_PX: f64 = 8.0;

/// The least a send covers in a lane, in pixels, as the lane of a chart with cells draws it.
const SEND_PX: f64 = 1.0;

/// Whether a chart is drawn in bands: its typical (median) cell in the window is narrower than
/// its label, so most labels would vanish and the cells would be slivers.
pub(super) fn is_dense(
    plan: &Plan,
    intervals: &[Vec<Interval>],
    lay: &Layout,
    label_w: f64,
) -> bool {
    let mut widths: Vec<f64> = plan
        .programs()
        .iter()
        .zip(intervals)
        .flat_map(|(program, ivs)| ivs.iter().take(program.len()))
        .filter_map(|iv| lay.clip(iv.start, iv.end).map(|(_, w)| w))
        .collect();
    if widths.is_empty() {
        return false;
    }
    let mid = widths.len() / 2;
    let (_, median, _) = widths.select_nth_unstable_by(mid, f64::total_cmp);
    *median < label_w
}

/// How a band looks: one op's look, or a pair's (forward above, backward below).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BandLook {
    One(Look),
    Pair(Look, Look),
}

/// A run of consecutive actions of one look on a rank, in the window.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Band {
    /// Clipped to the window.
    pub start: f64,
    pub end: f64,
    pub look: BandLook,
    /// Positions of the first and the last action in the rank's program.
    pub first: usize,
    pub last: usize,
}

/// The bands of one rank's actions (`program` with its `intervals`), in time order.
pub(super) fn bands(
    plan: &Plan,
    program: &[Action],
    intervals: &[Interval],
    shading: &Shading,
    lay: &Layout,
) -> Vec<Band> {
    let mut out: Vec<Band> = Vec::new();
    for (i, (a, iv)) in program.iter().zip(intervals).enumerate() {
        if lay.clip(iv.start, iv.end).is_none() {
            continue;
        }
        let look = match *a {
            Action::One(op) => BandLook::One(shading.look(plan, op)),
            Action::Pair { f, b } => BandLook::Pair(shading.look(plan, f), shading.look(plan, b)),
        };
        let (start, end) = (iv.start.max(lay.from), iv.end.min(lay.to));
        match out.last_mut() {
            Some(band)
                if band.look == look
                    && band.last + 1 == i
                    && (start - band.end) * lay.scale < MERGE_GAP_PX =>
            {
                band.end = band.end.max(end);
                band.last = i;
            }
            _ => out.push(Band {
                start,
                end,
                look,
                first: i,
                last: i,
            }),
        }
    }
    out
}

/// A stretch of a lane where sends cover about as much of it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Busy {
    pub start: f64,
    pub end: f64,
    /// The sends that start in it (or before the window, for its first stretch).
    pub sends: usize,
    /// The share of `start..end` with at least one send in flight.
    pub share: f64,
    /// How much of it the sends cover when each is drawn at least a pixel wide: 1 (up to a
    /// third), 2 (up to two thirds) or 3.
    pub level: u8,
}

/// The level of a share: 0 for none, then thirds.
fn level(share: f64) -> u8 {
    if share <= 0.0 {
        0
    } else if share <= 1.0 / 3.0 {
        1
    } else if share <= 2.0 / 3.0 {
        2
    } else {
        3
    }
}

/// The union of spans, sorted, so overlapping sends count once.
fn union(mut spans: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    spans.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(spans.len());
    for (s, e) in spans {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// The bins of the window `bin_t` long, and the time of each that `spans` cover.
fn cover(spans: Vec<(f64, f64)>, lay: &Layout, bin_t: f64, bins: usize) -> Vec<f64> {
    let mut covered = vec![0.0f64; bins];
    for (s, e) in union(spans) {
        let first = (((s - lay.from) / bin_t).floor().max(0.0) as usize).min(bins - 1);
        let last = (((e - lay.from) / bin_t).floor().max(0.0) as usize).min(bins - 1);
        for (k, c) in covered.iter_mut().enumerate().take(last + 1).skip(first) {
            let lo = lay.from + k as f64 * bin_t;
            *c += (e.min(lo + bin_t) - s.max(lo)).max(0.0);
        }
    }
    covered
}

/// How densely sends (`start..end` each) fill a lane across the window: the window cut into
/// bins a few pixels wide, neighbouring bins of one level joined.
pub(super) fn busy(sends: impl Iterator<Item = (f64, f64)>, lay: &Layout) -> Vec<Busy> {
    let bin_t = BIN_PX / lay.scale;
    let bins = ((lay.to - lay.from) / bin_t).ceil().max(1.0) as usize;
    let min_t = SEND_PX / lay.scale;
    let mut starts = vec![0usize; bins];
    let (mut true_spans, mut drawn_spans) = (Vec::new(), Vec::new());
    for (s, e) in sends {
        if e < lay.from || s > lay.to {
            continue;
        }
        let k = (((s - lay.from) / bin_t).floor().max(0.0) as usize).min(bins - 1);
        starts[k] += 1;
        true_spans.push((s.max(lay.from), e.min(lay.to)));
        drawn_spans.push((s.max(lay.from), e.max(s + min_t).min(lay.to)));
    }
    let in_flight = cover(true_spans, lay, bin_t, bins);
    let drawn = cover(drawn_spans, lay, bin_t, bins);
    // Runs of neighbouring bins of one level: (first bin, last bin, level, sends, in flight).
    let mut runs: Vec<(usize, usize, u8, usize, f64)> = Vec::new();
    for k in 0..bins {
        let lo = lay.from + k as f64 * bin_t;
        let hi = (lo + bin_t).min(lay.to);
        let lv = level(if hi > lo { drawn[k] / (hi - lo) } else { 0.0 });
        match runs.last_mut() {
            _ if lv == 0 => {}
            Some(run) if run.2 == lv && run.1 + 1 == k => {
                run.1 = k;
                run.3 += starts[k];
                run.4 += in_flight[k];
            }
            _ => runs.push((k, k, lv, starts[k], in_flight[k])),
        }
    }
    runs.into_iter()
        .map(|(first, last, level, sends, t)| {
            let start = lay.from + first as f64 * bin_t;
            let end = (lay.from + (last + 1) as f64 * bin_t).min(lay.to);
            Busy {
                start,
                end,
                sends,
                share: (t / (end - start)).min(1.0),
                level,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(from: f64, to: f64, scale: f64) -> Layout {
        Layout {
            from,
            to,
            scale,
            plot_w: (to - from) * scale,
            lane: 7.0,
        }
    }

    #[test]
    fn busy_counts_overlaps_once_and_joins_bins() {
        // Bins of 8 units at a scale of 1: a send over the first two bins, two overlapping sends
        // filling a quarter of the fourth bin, and one of no duration drawn a unit wide.
        let lay = layout(0.0, 32.0, 1.0);
        let sends = [(0.0, 16.0), (24.0, 26.0), (25.0, 26.0), (30.0, 30.0)];
        let runs = busy(sends.into_iter(), &lay);
        assert_eq!(
            runs,
            vec![
                Busy {
                    start: 0.0,
                    end: 16.0,
                    sends: 1,
                    share: 1.0,
                    level: 3
                },
                Busy {
                    start: 24.0,
                    end: 32.0,
                    sends: 3,
                    share: 0.25,
                    level: 2
                },
            ]
        );
    }

    #[test]
    fn busy_keeps_to_the_window() {
        let lay = layout(8.0, 16.0, 1.0);
        let runs = busy([(0.0, 10.0), (15.0, 40.0), (50.0, 60.0)].into_iter(), &lay);
        assert_eq!(runs.len(), 1);
        assert_eq!(
            (runs[0].start, runs[0].end, runs[0].sends, runs[0].level),
            (8.0, 16.0, 2, 2)
        );
        assert!((runs[0].share - 3.0 / 8.0).abs() < 1e-12);
        assert!(busy(std::iter::empty(), &lay).is_empty());
    }

    #[test]
    fn levels_are_thirds() {
        assert_eq!(
            [0.0, 0.1, 1.0 / 3.0, 0.5, 0.9, 1.0].map(level),
            [0, 1, 1, 2, 3, 3]
        );
    }
}
