//! Timelines as SVG, in the style of the DualPipe paper's figure: one row per rank on a shared time
//! axis, compute cells coloured by kind and labelled with their micro-batch, a rank's chunks (the
//! two halves of a V, the loops of an interleaved placement) or the pipelines (the two directions
//! of DualPipe and Chimera) told apart by shade, odd pipelines hatched, idle time left blank, and
//! optional lanes with the point-to-point transfers under every rank.
//!
//! A chart too dense to label (its typical cell narrower than its label) is drawn in bands: the
//! runs of cells of one look become one band each and the lanes show how much of the time sends
//! are in flight. A window of time draws part of the step at a larger scale.
//!
//! Output is deterministic: numbers are written with at most two decimals, ids come from a prefix
//! the caller chooses (so several charts can share one HTML page), and nothing depends on hashing.

mod dense;
mod palette;
mod rows;

use crate::format::{TimeFormat, num, sig};
use palette::{IDLE_FILL, SEND_BWD_FILL, SEND_FWD_FILL, fill};
use pipeweave_eval::TimeUnit;
use pipeweave_plan::{Dir, Kind, Plan};
use pipeweave_sim::{CostModel, Timeline};
use rows::{Rows, Seen};
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
            // Control characters are not allowed in XML 1.0 (C0) or HTML (C1), and a page or a
            // picture read on a terminal must not drive it: drawn as their pictures.
            '\t' | '\n' => out.push(c),
            c => out.push(pipeweave_diagnostics::visible_char(c)),
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
    pipeweave_plan::sends(plan)
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

/// The part of the step a drawing shows, in the timeline's unit (units, or seconds on a spec).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SvgWindow {
    /// The start of the time shown (default 0).
    pub from: Option<f64>,
    /// The end of the time shown (default the longest makespan).
    pub to: Option<f64>,
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::F => "forward (F)",
        Kind::B => "full backward (B)",
        Kind::I => "backward for inputs (I)",
        Kind::W => "backward for weights (W)",
    }
}

/// A legend entry's swatch: rectangles (left and top offsets, width, height, fill, extra
/// attributes).
type Swatch = Vec<(f64, f64, f64, f64, String, &'static str)>;

const ROW_H: f64 = 24.0;
const ROW_GAP: f64 = 4.0;
const LANE_H: f64 = 7.0;
const TITLE_H: f64 = 26.0;
const BLOCK_GAP: f64 = 14.0;
const LEFT: f64 = 66.0;
const RIGHT: f64 = 132.0;
const TOP: f64 = 8.0;
const CHAR_W: f64 = 6.2;

/// Where things go: one time scale for every chart, and the lane under each rank.
struct Layout {
    /// The window of time drawn.
    from: f64,
    to: f64,
    /// Pixels per time unit.
    scale: f64,
    plot_w: f64,
    /// The height of the transfer lane under each rank (0 when no chart has transfers).
    lane: f64,
}

impl Layout {
    fn new(charts: &[TimelineChart], window: &SvgWindow) -> Layout {
        let lane = if charts.iter().any(|c| c.transfers.is_some()) {
            LANE_H
        } else {
            0.0
        };
        let makespan = charts
            .iter()
            .map(|c| c.timeline.timing.makespan)
            .fold(0.0f64, f64::max);
        let from = window.from.unwrap_or(0.0).max(0.0);
        let to = window.to.unwrap_or(makespan).min(makespan);
        // A window that holds nothing draws the whole step.
        let (from, to) = if to > from {
            (from, to)
        } else {
            (0.0, makespan)
        };
        let span = to - from;
        if !(span > 0.0 && span.is_finite()) {
            return Layout {
                from: 0.0,
                to: 900.0,
                scale: 1.0,
                plot_w: 900.0,
                lane,
            };
        }
        let shortest = charts
            .iter()
            .flat_map(|c| c.timeline.timing.intervals.iter().flatten())
            .filter(|iv| iv.end >= from && iv.start <= to)
            .map(|iv| iv.end - iv.start)
            .filter(|d| *d > 0.0)
            .fold(f64::INFINITY, f64::min);
        // Wide enough that the shortest cell holds a two-digit label, within 900..2400 pixels.
        let want = if shortest.is_finite() {
            22.0 / shortest
        } else {
            0.0
        };
        let scale = want.max(900.0 / span).min(2400.0 / span);
        Layout {
            from,
            to,
            scale,
            plot_w: span * scale,
            lane,
        }
    }

    /// The x of a time.
    fn x(&self, t: f64) -> f64 {
        LEFT + (t - self.from) * self.scale
    }

    /// The part of `start..end` inside the window, as `(x, width)`; `None` when it is outside.
    fn clip(&self, start: f64, end: f64) -> Option<(f64, f64)> {
        if end < self.from || start > self.to {
            return None;
        }
        let (s, e) = (start.max(self.from), end.min(self.to));
        Some((self.x(s), (e - s).max(0.0) * self.scale))
    }

    /// Whether the drawing shows part of the step only.
    fn windowed(&self, makespan: f64) -> bool {
        self.from > 0.0 || self.to < makespan
    }

    /// The width the picture needs: the plot and the idle times right of it, at least 900.
    fn width(&self) -> f64 {
        (LEFT + self.plot_w + RIGHT).max(900.0)
    }
}

/// The time axis under the plot (`plot_top` to `plot_bottom`), with its ticks and name, and the
/// gridlines behind the rows: `(grid, axis, the axis's y)`. `makespan` is the longest chart's,
/// to say when the axis shows a window of it.
fn time_axis(
    lay: &Layout,
    unit: TimeUnit,
    makespan: f64,
    plot_top: f64,
    plot_bottom: f64,
) -> (String, String, f64) {
    let (axis_name, factor) = unit.axis(lay.to);
    let mut grid = String::new();
    let mut axis = String::from("<g class=\"axis\">\n");
    let axis_y = plot_bottom + 4.0;
    let _ = writeln!(
        axis,
        r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#333"/>"##,
        num(LEFT),
        num(axis_y),
        num(LEFT + lay.plot_w),
        num(axis_y)
    );
    for v in nice_ticks(lay.from * factor, lay.to * factor, 12) {
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
            r##"<g class="tick"><line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#333"/><text x="{}" y="{}" font-size="10" text-anchor="middle">{}</text></g>"##,
            num(x),
            num(axis_y),
            num(x),
            num(axis_y + 4.0),
            num(x),
            num(axis_y + 15.0),
            sig(v)
        );
    }
    let name = if lay.windowed(makespan) {
        format!(
            "{axis_name}, from {} to {}",
            unit.format(lay.from),
            unit.format(lay.to)
        )
    } else {
        axis_name.to_owned()
    };
    let _ = writeln!(
        axis,
        r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">{}</text>"#,
        num(LEFT + lay.plot_w / 2.0),
        num(axis_y + 30.0),
        esc(&name)
    );
    axis.push_str("</g>\n");
    (grid, axis, axis_y)
}

/// A square swatch of one fill.
fn solid(fill: &str, extra: &'static str) -> Swatch {
    vec![(0.0, 0.0, 12.0, 12.0, fill.to_owned(), extra)]
}

/// The legend's entries: the kinds drawn in their shades, the pair form, what the shades mean,
/// bands, idle and the lanes.
fn legend_items(seen: &Seen, id: &str) -> Vec<(Swatch, String)> {
    let mut items: Vec<(Swatch, String)> = Vec::new();
    for kind in [Kind::F, Kind::B, Kind::I, Kind::W] {
        let shades = seen.kinds[kind as usize];
        let swatch: Swatch = (0..2)
            .filter(|&s| shades[s])
            .enumerate()
            .map(|(i, s)| (i as f64 * 12.0, 0.0, 12.0, 12.0, fill(kind, s).into(), ""))
            .collect();
        if !swatch.is_empty() {
            items.push((swatch, kind_name(kind).into()));
        }
    }
    if seen.pairs {
        items.push((
            vec![
                (0.0, 0.0, 12.0, 6.0, fill(Kind::F, 0).into(), ""),
                (0.0, 6.0, 12.0, 6.0, fill(Kind::B, 0).into(), ""),
                (
                    0.0,
                    0.0,
                    12.0,
                    12.0,
                    "none".into(),
                    r##" stroke="#222" stroke-width="1.2""##,
                ),
            ],
            "overlapped F&B (forward above)".into(),
        ));
    }
    for (hatch, shade, meaning) in &seen.shades {
        let mut swatch = solid(fill(Kind::F, *shade), "");
        if *hatch {
            swatch.push((0.0, 0.0, 12.0, 12.0, format!("url(#{}-hatch)", esc(id)), ""));
        }
        items.push((swatch, meaning.clone()));
    }
    if seen.bands {
        items.push((
            vec![
                (0.0, 0.0, 8.0, 12.0, fill(Kind::F, 0).into(), ""),
                (8.0, 0.0, 16.0, 12.0, fill(Kind::B, 0).into(), ""),
            ],
            "band: a run of cells of one look (too dense to label)".into(),
        ));
    }
    items.push((solid(IDLE_FILL, r##" stroke="#bbb""##), "idle".into()));
    if seen.lanes {
        items.push((
            solid(SEND_FWD_FILL, ""),
            "send: activation (lane under rank)".into(),
        ));
        items.push((solid(SEND_BWD_FILL, ""), "send: gradient".into()));
    }
    if seen.density {
        items.push((
            vec![
                (
                    0.0,
                    0.0,
                    6.0,
                    6.0,
                    SEND_FWD_FILL.into(),
                    r#" fill-opacity="0.4""#,
                ),
                (6.0, 0.0, 6.0, 6.0, SEND_FWD_FILL.into(), ""),
                (
                    0.0,
                    6.0,
                    6.0,
                    6.0,
                    SEND_BWD_FILL.into(),
                    r#" fill-opacity="0.4""#,
                ),
                (6.0, 6.0, 6.0, 6.0, SEND_BWD_FILL.into(), ""),
            ],
            "sends, activations above gradients (darker: denser)".into(),
        ));
    }
    items
}

/// The legend from `top` down, its entries wrapping onto further lines rather than widening the
/// picture: `(legend, the y of its last line)`.
fn legend(items: &[(Swatch, String)], lay: &Layout, top: f64) -> (String, f64) {
    let mut legend = String::new();
    let mut lx = LEFT;
    let mut ly = top;
    let max_w = lay.width();
    for (swatch, text) in items {
        let swatch_w = swatch.iter().map(|s| s.0 + s.2).fold(12.0, f64::max);
        let item_w = swatch_w + 6.0 + text.chars().count() as f64 * CHAR_W + 16.0;
        if lx > LEFT && lx + item_w > max_w {
            lx = LEFT;
            ly += 20.0;
        }
        legend.push_str(r#"<g class="legend-item">"#);
        for (dx, dy, w, h, fill, extra) in swatch {
            let _ = writeln!(
                legend,
                r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{fill}"{extra}/>"#,
                num(lx + dx),
                num(ly + dy),
                num(*w),
                num(*h)
            );
        }
        let _ = writeln!(
            legend,
            r#"<text x="{}" y="{}" font-size="11" dominant-baseline="central">{}</text></g>"#,
            num(lx + swatch_w + 6.0),
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
    timelines_svg_window(charts, unit, id, &SvgWindow::default())
}

/// Draws the part of the timelines of `charts` that `window` selects (see [`timelines_svg`]).
pub fn timelines_svg_window(
    charts: &[TimelineChart],
    unit: TimeUnit,
    id: &str,
    window: &SvgWindow,
) -> String {
    draw(charts, unit, id, window, None)
}

/// A plan's predicted and measured steps on one time axis, each rank's planned row above its
/// measured row, in the style of [`timelines_svg`]: what `pipeweave diff --svg` draws.
pub fn plan_vs_actual_svg(
    title: &str,
    planned: TimelineChart,
    measured: TimelineChart,
    unit: TimeUnit,
    id: &str,
) -> String {
    draw(
        &[planned, measured],
        unit,
        id,
        &SvgWindow::default(),
        Some(title),
    )
}

/// The document: `charts` stacked, or with `paired` (a heading) the two charts rank by rank.
fn draw(
    charts: &[TimelineChart],
    unit: TimeUnit,
    id: &str,
    window: &SvgWindow,
    paired: Option<&str>,
) -> String {
    let lay = Layout::new(charts, window);
    let makespan = charts
        .iter()
        .map(|c| c.timeline.timing.makespan)
        .fold(0.0f64, f64::max);
    let mut rows = Rows::new(id, unit, &lay);
    let mut y = TOP;
    match paired {
        Some(title) if charts.len() == 2 => {
            y = rows.paired(title, &charts[0], &charts[1], y) + BLOCK_GAP;
        }
        _ => {
            for chart in charts {
                y = rows.chart(chart, y) + BLOCK_GAP;
            }
        }
    }
    let (grid, axis, axis_y) = time_axis(&lay, unit, makespan, TOP, y - BLOCK_GAP);
    let items = legend_items(&rows.seen, id);
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
        assert_eq!(
            esc("a\u{1}b\u{1b}[2J\u{7f}\u{9b}\r\n"),
            "a␁b␛[2J␡\u{fffd}␍\n"
        );
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
