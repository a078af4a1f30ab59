//! Timelines as SVG, in the style of the DualPipe paper's figure: one row per rank on a shared time
//! axis, compute cells coloured by kind and labelled with their micro-batch, the pipelines (the two
//! directions of DualPipe and Chimera) told apart by shade and hatching, idle time left blank, and
//! optional lanes with the point-to-point transfers under every rank.
//!
//! Output is deterministic: numbers are written with at most two decimals, ids come from a prefix
//! the caller chooses (so several charts can share one HTML page), and nothing depends on hashing.

use crate::format::{TimeFormat, num, percent, sig};
use pipeweave_eval::TimeUnit;
use pipeweave_plan::{Action, Dir, Interval, Kind, Op, Plan, lower};
use pipeweave_sim::{CostModel, Timeline};
use std::fmt::Write;

/// Escapes text for XML content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Control characters are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Ticks for an axis from 0 to `max`: a step of 1, 2 or 5 times a power of ten, about `target`
/// ticks in all.
pub(crate) fn nice_ticks(min: f64, max: f64, target: usize) -> Vec<f64> {
    let span = max - min;
    if !(span.is_finite() && span > 0.0) {
        return vec![min];
    }
    let raw = span / target.max(1) as f64;
    let p = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p);
    let first = (min / step).ceil() as i64;
    let last = (max / step + 1e-9).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// One point-to-point transfer of a step: when the producing action ends and when the data
/// arrives at the peer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transfer {
    /// The sending rank.
    pub from_rank: u32,
    /// The receiving rank.
    pub to_rank: u32,
    /// Activations or gradients.
    pub dir: Dir,
    /// The sending stage.
    pub stage: u32,
    /// The micro-batch.
    pub mb: u32,
    /// When the producing action ends, in the timeline's time unit.
    pub start: f64,
    /// When the data arrives: `start` plus the cost model's transfer latency.
    pub end: f64,
}

/// The transfers of a simulated plan: each send of its lowering, from the end of the action that
/// produced the data, taking the cost model's transfer latency.
pub fn transfers(plan: &Plan, timeline: &Timeline, costs: &dyn CostModel) -> Vec<Transfer> {
    let intervals = &timeline.timing.intervals;
    lower(plan)
        .sends()
        .filter_map(|send| {
            let iv = intervals.get(send.rank as usize)?.get(send.action)?;
            Some(Transfer {
                from_rank: send.rank,
                to_rank: send.peer,
                dir: send.dir,
                stage: send.stage,
                mb: send.mb,
                start: iv.end,
                end: iv.end + costs.transfer(send.stage, send.to_stage),
            })
        })
        .collect()
}

/// One schedule's timeline to draw.
#[derive(Debug, Clone)]
pub struct TimelineChart<'a> {
    /// The heading above the rows (e.g. the schedule's name); metrics are added after it.
    pub title: String,
    /// The plan drawn.
    pub plan: &'a Plan,
    /// A simulation of `plan`.
    pub timeline: &'a Timeline,
    /// Transfers to draw in a lane under each rank (see [`transfers`]); `None`: no lanes.
    pub transfers: Option<Vec<Transfer>>,
}

/// Fill colours: [kind][shade], shade 0 for even pipelines (light), 1 for odd ones (dark).
fn fill(kind: Kind, shade: usize) -> &'static str {
    let pair = match kind {
        Kind::F => ["#f8c58f", "#e08a3c"],
        Kind::B => ["#a8d58c", "#5f9f45"],
        Kind::I => ["#9fc8ea", "#4d87c4"],
        Kind::W => ["#cdb8ea", "#8e6ac6"],
    };
    pair[shade.min(1)]
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::F => "forward (F)",
        Kind::B => "full backward (B)",
        Kind::I => "backward for inputs (I)",
        Kind::W => "backward for weights (W)",
    }
}

/// A legend entry: its swatch as rectangles (top offset, height, fill, extra attributes) and its
/// text.
type LegendItem = (Vec<(f64, f64, String, &'static str)>, &'static str);

const ROW_H: f64 = 24.0;
const ROW_GAP: f64 = 4.0;
const LANE_H: f64 = 7.0;
const TITLE_H: f64 = 26.0;
const BLOCK_GAP: f64 = 14.0;
const LEFT: f64 = 66.0;
const RIGHT: f64 = 132.0;
const TOP: f64 = 8.0;
const CHAR_W: f64 = 6.2;
const IDLE_FILL: &str = "#f1f1f1";
const SEND_FWD_FILL: &str = "#b5651d";
const SEND_BWD_FILL: &str = "#3f7a2a";

/// Where things go: one time scale for every chart, and the lane under each rank.
struct Layout {
    /// Pixels per time unit.
    scale: f64,
    plot_w: f64,
    /// The height of the transfer lane under each rank (0 when no chart has transfers).
    lane: f64,
}

impl Layout {
    fn new(charts: &[TimelineChart]) -> Layout {
        let lane = if charts.iter().any(|c| c.transfers.is_some()) {
            LANE_H
        } else {
            0.0
        };
        let makespan = charts
            .iter()
            .map(|c| c.timeline.timing.makespan)
            .fold(0.0f64, f64::max);
        let shortest = charts
            .iter()
            .flat_map(|c| c.timeline.timing.intervals.iter().flatten())
            .map(|iv| iv.end - iv.start)
            .filter(|d| *d > 0.0)
            .fold(f64::INFINITY, f64::min);
        if !(makespan > 0.0 && makespan.is_finite()) {
            return Layout {
                scale: 1.0,
                plot_w: 900.0,
                lane,
            };
        }
        // Wide enough that the shortest cell holds a two-digit label, within 900..2400 pixels.
        let want = if shortest.is_finite() {
            22.0 / shortest
        } else {
            0.0
        };
        let scale = want.max(900.0 / makespan).min(2400.0 / makespan);
        Layout {
            scale,
            plot_w: makespan * scale,
            lane,
        }
    }

    /// The x of a time.
    fn x(&self, t: f64) -> f64 {
        LEFT + t * self.scale
    }

    /// The width the picture needs: the plot and the idle times right of it, at least 900.
    fn width(&self) -> f64 {
        (LEFT + self.plot_w + RIGHT).max(900.0)
    }
}

/// The label of an op's cell: its micro-batch numbered within its pipeline, as in the paper's
/// figure (both directions count from 0; the shade tells them apart).
fn local_mb(plan: &Plan, op: Op) -> (usize, u32) {
    let j = plan.mb_pipeline(op.mb).unwrap_or(0);
    let local = plan
        .pipelines()
        .get(j as usize)
        .and_then(|p| p.microbatches.binary_search(&op.mb).ok())
        .map_or(op.mb, |i| i as u32);
    (j as usize, local)
}

/// What the charts drew, for the legend to explain.
#[derive(Default)]
struct Seen {
    /// By [`Kind`] as an index.
    kinds: [bool; 4],
    pairs: bool,
    two_shades: bool,
}

/// The rows of every chart, written one after the other.
struct Rows<'a> {
    out: String,
    id: &'a str,
    unit: TimeUnit,
    lay: &'a Layout,
    /// The width the chart's longest label needs: a cell gets its label only if it has that
    /// room, so whether a cell is labelled depends on its size, not on its number's digits.
    label_w: f64,
    seen: Seen,
}

impl Rows<'_> {
    /// A chart's heading and rows from `y` down; returns the y below them.
    fn chart(&mut self, chart: &TimelineChart, mut y: f64) -> f64 {
        let t = chart.timeline;
        let plan = chart.plan;
        let longest = plan
            .pipelines()
            .iter()
            .map(|p| p.microbatches.len().saturating_sub(1).to_string().len())
            .max()
            .unwrap_or(1);
        self.label_w = longest as f64 * CHAR_W + 3.0;
        self.seen.two_shades |= plan.pipelines().len() > 1;
        let _ = writeln!(
            self.out,
            r##"<text x="{}" y="{}" font-size="13" font-weight="bold">{}</text><text x="{}" y="{}" font-size="11" fill="#444" text-anchor="end">makespan {}, bubble {}</text>"##,
            num(LEFT),
            num(y + 16.0),
            esc(&chart.title),
            num(LEFT + self.lay.plot_w),
            num(y + 16.0),
            esc(&self.unit.format(t.timing.makespan)),
            percent(t.bubble_fraction, 2)
        );
        y += TITLE_H;
        for rank in 0..plan.programs().len() {
            self.rank_row(chart, rank, y);
            y += ROW_H;
            if let Some(transfers) = &chart.transfers {
                self.lane(transfers, rank, y + 1.0);
                y += self.lay.lane;
            }
            y += ROW_GAP;
        }
        y
    }

    /// A rank's row at `row_y`: its name, the idle background, its actions and its idle time.
    fn rank_row(&mut self, chart: &TimelineChart, rank: usize, row_y: f64) {
        let t = chart.timeline;
        let _ = writeln!(
            self.out,
            r#"<text x="{}" y="{}" font-size="11" text-anchor="end" dominant-baseline="central">rank {rank}</text><rect x="{}" y="{}" width="{}" height="{}" fill="{IDLE_FILL}"/>"#,
            num(LEFT - 6.0),
            num(row_y + ROW_H / 2.0),
            num(LEFT),
            num(row_y),
            num(t.timing.makespan * self.lay.scale),
            num(ROW_H),
        );
        let program = &chart.plan.programs()[rank];
        let intervals = t.timing.intervals.get(rank).map_or(&[][..], Vec::as_slice);
        for (a, iv) in program.iter().zip(intervals) {
            self.action(chart.plan, rank, a, iv, row_y);
        }
        if let Some(m) = t.ranks.get(rank) {
            let share = if t.timing.makespan > 0.0 {
                m.idle / t.timing.makespan
            } else {
                0.0
            };
            let _ = writeln!(
                self.out,
                r##"<text x="{}" y="{}" font-size="10" fill="#555" dominant-baseline="central">idle {} ({})</text>"##,
                num(LEFT + self.lay.plot_w + 8.0),
                num(row_y + ROW_H / 2.0),
                esc(&self.unit.format(m.idle)),
                percent(share, 0),
            );
        }
    }

    /// One action's cell (two halves and a frame for a pair), with its tooltip and border.
    fn action(&mut self, plan: &Plan, rank: usize, a: &Action, iv: &Interval, row_y: f64) {
        let x = self.lay.x(iv.start);
        let w = (iv.end - iv.start) * self.lay.scale;
        let tip = tooltip(rank, a, plan, iv.start, iv.end, self.unit);
        match *a {
            Action::One(op) => {
                self.seen.kinds[op.kind as usize] = true;
                self.cell(plan, op, [x, row_y, w, ROW_H], &tip);
            }
            Action::Pair { f, b } => {
                self.seen.pairs = true;
                self.seen.kinds[f.kind as usize] = true;
                self.seen.kinds[b.kind as usize] = true;
                let half = ROW_H / 2.0;
                self.cell(plan, f, [x, row_y, w, half], &tip);
                self.cell(plan, b, [x, row_y + half, w, half], &tip);
                let _ = writeln!(
                    self.out,
                    r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#222" stroke-width="1.2"/>"##,
                    num(x + 0.6),
                    num(row_y + 0.6),
                    num((w - 1.2).max(0.0)),
                    num(ROW_H - 1.2)
                );
            }
        }
        // Cell borders drawn last so neighbouring cells stay apart.
        let _ = writeln!(
            self.out,
            r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#fff" stroke-width="0.8"/>"##,
            num(x),
            num(row_y),
            num(w),
            num(ROW_H)
        );
    }

    /// One op's coloured cell, hatched for odd pipelines, labelled where the label fits.
    fn cell(&mut self, plan: &Plan, op: Op, [x, y, w, h]: [f64; 4], tip: &str) {
        let (j, local) = local_mb(plan, op);
        let shade = j % 2;
        let _ = writeln!(
            self.out,
            r#"<g class="cell"><title>{}</title><rect x="{}" y="{}" width="{}" height="{}" fill="{}"/>"#,
            esc(tip),
            num(x),
            num(y),
            num(w),
            num(h),
            fill(op.kind, shade)
        );
        if shade == 1 {
            let _ = writeln!(
                self.out,
                r#"<rect x="{}" y="{}" width="{}" height="{}" fill="url(#{}-hatch)"/>"#,
                num(x),
                num(y),
                num(w),
                num(h),
                self.id
            );
        }
        let text = local.to_string();
        if w >= self.label_w && h >= 9.0 {
            let size = if h >= 16.0 { 11.0 } else { 9.5 };
            let _ = writeln!(
                self.out,
                r#"<text x="{}" y="{}" font-size="{}" text-anchor="middle" dominant-baseline="central">{}</text>"#,
                num(x + w / 2.0),
                num(y + h / 2.0),
                num(size),
                text
            );
        }
        self.out.push_str("</g>\n");
    }

    /// The lane at `lane_y` under a rank: the transfers it sends, from the send to the arrival.
    fn lane(&mut self, transfers: &[Transfer], rank: usize, lane_y: f64) {
        for tr in transfers.iter().filter(|tr| tr.from_rank as usize == rank) {
            let x = self.lay.x(tr.start);
            let w = ((tr.end - tr.start) * self.lay.scale).max(2.0);
            let (colour, what) = match tr.dir {
                Dir::Fwd => (SEND_FWD_FILL, "activation"),
                Dir::Bwd => (SEND_BWD_FILL, "gradient"),
            };
            let _ = writeln!(
                self.out,
                r#"<rect class="comm" x="{}" y="{}" width="{}" height="{}" fill="{colour}"><title>{}</title></rect>"#,
                num(x),
                num(lane_y),
                num(w),
                num(LANE_H - 2.0),
                esc(&format!(
                    "rank {} to rank {}: {what} of stage {} for micro-batch {}, {} to {}",
                    tr.from_rank,
                    tr.to_rank,
                    tr.stage,
                    tr.mb,
                    self.unit.format(tr.start),
                    self.unit.format(tr.end)
                ))
            );
        }
    }
}

fn tooltip(rank: usize, a: &Action, plan: &Plan, start: f64, end: f64, unit: TimeUnit) -> String {
    let describe = |op: Op| {
        let (j, local) = local_mb(plan, op);
        format!(
            "{} of stage {} for micro-batch {} (pipeline {j}, its micro-batch {local})",
            kind_name(op.kind),
            op.stage,
            op.mb
        )
    };
    let what = match a {
        Action::One(op) => describe(*op),
        Action::Pair { f, b } => format!("overlapped pair: {} with {}", describe(*f), describe(*b)),
    };
    format!(
        "rank {rank}: {a}: {what}, {} to {}",
        unit.format(start),
        unit.format(end)
    )
}

/// The time axis under the plot (`plot_top` to `plot_bottom`), with its ticks and name, and the
/// gridlines behind the rows: `(grid, axis, the axis's y)`.
fn time_axis(
    lay: &Layout,
    unit: TimeUnit,
    plot_top: f64,
    plot_bottom: f64,
) -> (String, String, f64) {
    let makespan = lay.plot_w / lay.scale;
    let (axis_name, factor) = unit.axis(makespan);
    let mut grid = String::new();
    let mut axis = String::new();
    let axis_y = plot_bottom + 4.0;
    let _ = writeln!(
        axis,
        r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#333"/>"##,
        num(LEFT),
        num(axis_y),
        num(LEFT + lay.plot_w),
        num(axis_y)
    );
    for v in nice_ticks(0.0, makespan * factor, 12) {
        let x = lay.x(v / factor);
        let _ = writeln!(
            grid,
            r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#ddd" stroke-width="0.8"/>"##,
            num(x),
            num(plot_top),
            num(x),
            num(plot_bottom)
        );
        let _ = writeln!(
            axis,
            r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#333"/><text x="{}" y="{}" font-size="10" text-anchor="middle">{}</text>"##,
            num(x),
            num(axis_y),
            num(x),
            num(axis_y + 4.0),
            num(x),
            num(axis_y + 15.0),
            sig(v)
        );
    }
    let _ = writeln!(
        axis,
        r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">{axis_name}</text>"#,
        num(LEFT + lay.plot_w / 2.0),
        num(axis_y + 30.0)
    );
    (grid, axis, axis_y)
}

/// The legend's entries: the kinds drawn, the pair form, the shades, idle and the lanes.
fn legend_items(seen: &Seen, lanes: bool, id: &str) -> Vec<LegendItem> {
    let mut items: Vec<LegendItem> = Vec::new();
    let solid = |fill: String| vec![(0.0, 12.0, fill, "")];
    for kind in [Kind::F, Kind::B, Kind::I, Kind::W] {
        if seen.kinds[kind as usize] {
            items.push((solid(fill(kind, 0).into()), kind_name(kind)));
        }
    }
    if seen.pairs {
        items.push((
            vec![
                (0.0, 6.0, fill(Kind::F, 0).into(), ""),
                (6.0, 6.0, fill(Kind::B, 0).into(), ""),
                (
                    0.0,
                    12.0,
                    "none".into(),
                    r##" stroke="#222" stroke-width="1.2""##,
                ),
            ],
            "overlapped F&B (forward above)",
        ));
    }
    if seen.two_shades {
        items.push((solid(fill(Kind::F, 0).into()), "pipeline 0 (light)"));
        items.push((
            vec![
                (0.0, 12.0, fill(Kind::F, 1).into(), ""),
                (0.0, 12.0, format!("url(#{}-hatch)", esc(id)), ""),
            ],
            "pipeline 1 (dark, hatched)",
        ));
    }
    items.push((
        vec![(0.0, 12.0, IDLE_FILL.into(), r##" stroke="#bbb""##)],
        "idle",
    ));
    if lanes {
        items.push((
            solid(SEND_FWD_FILL.into()),
            "send: activation (lane under rank)",
        ));
        items.push((solid(SEND_BWD_FILL.into()), "send: gradient"));
    }
    items
}

/// The legend from `top` down, its entries wrapping onto further lines rather than widening the
/// picture: `(legend, the y of its last line)`.
fn legend(items: &[LegendItem], lay: &Layout, top: f64) -> (String, f64) {
    let mut legend = String::new();
    let mut lx = LEFT;
    let mut ly = top;
    let max_w = lay.width();
    for (swatch, text) in items {
        let item_w = 18.0 + text.chars().count() as f64 * CHAR_W + 16.0;
        if lx > LEFT && lx + item_w > max_w {
            lx = LEFT;
            ly += 20.0;
        }
        legend.push_str(r#"<g class="legend-item">"#);
        for (dy, h, fill, extra) in swatch {
            let _ = writeln!(
                legend,
                r#"<rect x="{}" y="{}" width="12" height="{}" fill="{fill}"{extra}/>"#,
                num(lx),
                num(ly + dy),
                num(*h)
            );
        }
        let _ = writeln!(
            legend,
            r#"<text x="{}" y="{}" font-size="11" dominant-baseline="central">{}</text></g>"#,
            num(lx + 18.0),
            num(ly + 6.0),
            esc(text)
        );
        lx += item_w;
    }
    (legend, ly)
}

/// Draws the timelines of `charts` stacked on one time scale, with one shared axis and a legend.
///
/// `id` prefixes every element id of the document (use a different one for each SVG of a page).
pub fn timelines_svg(charts: &[TimelineChart], unit: TimeUnit, id: &str) -> String {
    let lay = Layout::new(charts);
    let mut rows = Rows {
        out: String::new(),
        id,
        unit,
        lay: &lay,
        label_w: 0.0,
        seen: Seen::default(),
    };
    let mut y = TOP;
    for chart in charts {
        y = rows.chart(chart, y) + BLOCK_GAP;
    }
    let (grid, axis, axis_y) = time_axis(&lay, unit, TOP, y - BLOCK_GAP);
    let items = legend_items(&rows.seen, lay.lane > 0.0, id);
    let (legend, last_line) = legend(&items, &lay, axis_y + 42.0);

    let width = lay.width().ceil();
    let height = (last_line + 22.0).ceil();
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="Helvetica, Arial, sans-serif" role="img" aria-label="pipeline timelines">"#,
        w = num(width),
        h = num(height)
    );
    let _ = writeln!(
        out,
        r##"<defs><pattern id="{id}-hatch" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" stroke="#fff" stroke-width="1.6" stroke-opacity="0.6"/></pattern></defs><rect width="{w}" height="{h}" fill="#fff"/>"##,
        id = esc(id),
        w = num(width),
        h = num(height)
    );
    for part in [&grid, &rows.out, &axis, &legend] {
        out.push_str(part);
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_fixed() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(1.005), "1");
        assert_eq!(num(2.5), "2.5");
        assert_eq!(num(-0.001), "0");
        assert_eq!(num(f64::NAN), "0");
        assert_eq!(sig(0.123456), "0.123");
        assert_eq!(sig(12.3456), "12.35");
        assert_eq!(sig(1234.5), "1234");
    }

    #[test]
    fn escapes() {
        assert_eq!(esc(r#"a<b>&"c'"#), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(esc("a\u{1}b"), "a b");
    }

    #[test]
    fn ticks() {
        assert_eq!(
            nice_ticks(0.0, 33.0, 12),
            vec![0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0]
        );
        assert_eq!(nice_ticks(0.0, 1.0, 4), vec![0.0, 0.5, 1.0]);
        assert_eq!(
            nice_ticks(8.0, 128.0, 8),
            vec![20.0, 40.0, 60.0, 80.0, 100.0, 120.0]
        );
        assert_eq!(nice_ticks(0.0, 0.0, 5), vec![0.0]);
    }
}
