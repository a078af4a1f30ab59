//! Timelines as SVG, in the style of the DualPipe paper's figure: one row per rank on a shared time
//! axis, compute cells coloured by kind and labelled with their micro-batch, the pipelines (the two
//! directions of DualPipe and Chimera) told apart by shade and hatching, idle time left blank, and
//! optional lanes with the point-to-point transfers under every rank.
//!
//! Output is deterministic: numbers are written with at most two decimals, ids come from a prefix
//! the caller chooses (so several charts can share one HTML page), and nothing depends on hashing.

use pipeweave_plan::{Action, Dir, Kind, Op, Plan, lower};
use pipeweave_sim::{CostModel, Timeline};
use std::fmt::Write;

/// The unit of the times in a timeline: the simulator's abstract units or seconds (from a spec).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Units,
    Seconds,
}

impl TimeUnit {
    /// How a time axis names its unit for times up to `max` (seconds shown as ms below 1 s).
    pub(crate) fn axis(self, max: f64) -> (&'static str, f64) {
        match self {
            TimeUnit::Units => ("time (units)", 1.0),
            TimeUnit::Seconds if max < 1.0 => ("time (ms)", 1e3),
            TimeUnit::Seconds => ("time (s)", 1.0),
        }
    }

    /// A duration for a label or a tooltip.
    pub fn format(self, t: f64) -> String {
        match self {
            TimeUnit::Units => crate::format_time(t),
            TimeUnit::Seconds if t.abs() < 1.0 => format!("{} ms", sig(t * 1e3)),
            TimeUnit::Seconds => format!("{} s", sig(t)),
        }
    }
}

/// A number with about four significant digits, trailing zeros dropped.
pub(crate) fn sig(x: f64) -> String {
    let a = x.abs();
    let decimals = if a >= 1000.0 {
        0
    } else if a >= 100.0 {
        1
    } else if a >= 10.0 {
        2
    } else {
        3
    };
    trim(format!("{x:.decimals$}"))
}

fn trim(s: String) -> String {
    if s.contains('.') {
        let t = s.trim_end_matches('0').trim_end_matches('.');
        if t == "-0" { "0".into() } else { t.into() }
    } else {
        s
    }
}

/// A coordinate: two decimals at most, so output does not depend on float noise.
pub(crate) fn num(x: f64) -> String {
    let x = if x.is_finite() { x } else { 0.0 };
    trim(format!("{x:.2}"))
}

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
    pub from_rank: u32,
    pub to_rank: u32,
    pub dir: Dir,
    /// The sending stage.
    pub stage: u32,
    pub mb: u32,
    pub start: f64,
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

struct Layout {
    /// Pixels per time unit.
    scale: f64,
    plot_w: f64,
}

fn layout(charts: &[TimelineChart]) -> Layout {
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

struct Writer<'a> {
    out: String,
    id: &'a str,
    /// The width the chart's longest label needs: a cell gets its label only if it has that
    /// room, so whether a cell is labelled depends on its size, not on its number's digits.
    label_w: f64,
}

impl Writer<'_> {
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

/// Draws the timelines of `charts` stacked on one time scale, with one shared axis and a legend.
///
/// `id` prefixes every element id of the document (use a different one for each SVG of a page).
pub fn timelines_svg(charts: &[TimelineChart], unit: TimeUnit, id: &str) -> String {
    let lay = layout(charts);
    let lane = if charts.iter().any(|c| c.transfers.is_some()) {
        LANE_H
    } else {
        0.0
    };
    let makespan = lay.plot_w / lay.scale;
    let (axis_name, factor) = unit.axis(makespan);
    let tick_values = nice_ticks(0.0, makespan * factor, 12);
    let mut body = Writer {
        out: String::new(),
        id,
        label_w: 0.0,
    };
    let mut y = TOP;
    let mut kinds_seen = [false; 4];
    let (mut pairs_seen, mut two_shades) = (false, false);
    let plot_top = y;
    for chart in charts {
        let t = chart.timeline;
        let plan = chart.plan;
        let longest = plan
            .pipelines()
            .iter()
            .map(|p| p.microbatches.len().saturating_sub(1).to_string().len())
            .max()
            .unwrap_or(1);
        body.label_w = longest as f64 * CHAR_W + 3.0;
        two_shades |= plan.pipelines().len() > 1;
        let _ = writeln!(
            body.out,
            r##"<text x="{}" y="{}" font-size="13" font-weight="bold">{}</text><text x="{}" y="{}" font-size="11" fill="#444" text-anchor="end">makespan {}, bubble {:.2}%</text>"##,
            num(LEFT),
            num(y + 16.0),
            esc(&chart.title),
            num(LEFT + lay.plot_w),
            num(y + 16.0),
            esc(&unit.format(t.timing.makespan)),
            t.bubble_fraction * 100.0
        );
        y += TITLE_H;
        for (rank, program) in plan.programs().iter().enumerate() {
            let row_y = y;
            let _ = writeln!(
                body.out,
                r#"<text x="{}" y="{}" font-size="11" text-anchor="end" dominant-baseline="central">rank {rank}</text><rect x="{}" y="{}" width="{}" height="{}" fill="{IDLE_FILL}"/>"#,
                num(LEFT - 6.0),
                num(row_y + ROW_H / 2.0),
                num(LEFT),
                num(row_y),
                num(t.timing.makespan * lay.scale),
                num(ROW_H),
            );
            let intervals = t.timing.intervals.get(rank).map_or(&[][..], Vec::as_slice);
            for (a, iv) in program.iter().zip(intervals) {
                let x = LEFT + iv.start * lay.scale;
                let w = (iv.end - iv.start) * lay.scale;
                let tip = tooltip(rank, a, plan, iv.start, iv.end, unit);
                match *a {
                    Action::One(op) => {
                        kinds_seen[op.kind as usize] = true;
                        body.cell(plan, op, [x, row_y, w, ROW_H], &tip);
                    }
                    Action::Pair { f, b } => {
                        pairs_seen = true;
                        kinds_seen[f.kind as usize] = true;
                        kinds_seen[b.kind as usize] = true;
                        let half = ROW_H / 2.0;
                        body.cell(plan, f, [x, row_y, w, half], &tip);
                        body.cell(plan, b, [x, row_y + half, w, half], &tip);
                        let _ = writeln!(
                            body.out,
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
                    body.out,
                    r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#fff" stroke-width="0.8"/>"##,
                    num(x),
                    num(row_y),
                    num(w),
                    num(ROW_H)
                );
            }
            if let Some(m) = t.ranks.get(rank) {
                let share = if t.timing.makespan > 0.0 {
                    m.idle / t.timing.makespan * 100.0
                } else {
                    0.0
                };
                let _ = writeln!(
                    body.out,
                    r##"<text x="{}" y="{}" font-size="10" fill="#555" dominant-baseline="central">idle {} ({share:.0}%)</text>"##,
                    num(LEFT + lay.plot_w + 8.0),
                    num(row_y + ROW_H / 2.0),
                    esc(&unit.format(m.idle)),
                );
            }
            y += ROW_H;
            if let Some(transfers) = &chart.transfers {
                let lane_y = y + 1.0;
                for tr in transfers.iter().filter(|tr| tr.from_rank as usize == rank) {
                    let x = LEFT + tr.start * lay.scale;
                    let w = ((tr.end - tr.start) * lay.scale).max(2.0);
                    let (colour, what) = match tr.dir {
                        Dir::Fwd => ("#b5651d", "activation"),
                        Dir::Bwd => ("#3f7a2a", "gradient"),
                    };
                    let _ = writeln!(
                        body.out,
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
                            unit.format(tr.start),
                            unit.format(tr.end)
                        ))
                    );
                }
                y += lane;
            }
            y += ROW_GAP;
        }
        y += BLOCK_GAP;
    }
    let plot_bottom = y - BLOCK_GAP;

    // Axis with gridlines behind the rows.
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
    for v in &tick_values {
        let x = LEFT + v / factor * lay.scale;
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
            sig(*v)
        );
    }
    let _ = writeln!(
        axis,
        r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">{axis_name}</text>"#,
        num(LEFT + lay.plot_w / 2.0),
        num(axis_y + 30.0)
    );

    // Legend: the kinds present, the pair form, the shades, idle and communication.
    let mut items: Vec<LegendItem> = Vec::new();
    let solid = |fill: String| vec![(0.0, 12.0, fill, "")];
    for kind in [Kind::F, Kind::B, Kind::I, Kind::W] {
        if kinds_seen[kind as usize] {
            items.push((solid(fill(kind, 0).into()), kind_name(kind)));
        }
    }
    if pairs_seen {
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
    if two_shades {
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
    if lane > 0.0 {
        items.push((
            solid("#b5651d".into()),
            "send: activation (lane under rank)",
        ));
        items.push((solid("#3f7a2a".into()), "send: gradient"));
    }
    let mut legend = String::new();
    let mut lx = LEFT;
    let mut ly = axis_y + 42.0;
    // Items wrap onto further lines rather than widening the picture.
    let max_w = (LEFT + lay.plot_w + RIGHT).max(900.0);
    for (swatch, text) in &items {
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

    let width = max_w.ceil();
    let height = (ly + 22.0).ceil();
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
    out.push_str(&grid);
    out.push_str(&body.out);
    out.push_str(&axis);
    out.push_str(&legend);
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
