//! Sweeps as a text table, CSV, JSON and an SVG line chart, titled with what the sweep holds
//! (the spec, P, M, and how the spec meets each point).
//!
//! The [`Sweep`] comes from `pipeweave-eval`; a point without a value (its schedule could not be
//! built or run there) shows as a gap in the chart and as a numbered note under the table.
//! Numbers are swept on a numeric axis; bools and options on one place per value, in the order
//! swept.

use crate::format::{TimeFormat, num, percent, sig};
use crate::shown::lines;
use crate::svg::{esc, nice_ticks};
use crate::table::{csv_field, text_table};
use pipeweave_eval::{Metric, Param, Sweep, SweepPoint, SweepSeries, Value};
use std::fmt::Write;

/// What the sweep shows and holds, in one line: `step time against ranks: spec NAME, M = 64, the
/// GPUs kept (dp follows P)`.
pub fn sweep_title(sweep: &Sweep) -> String {
    let mut title = format!("{} against {}", sweep.metric.name(), sweep.parameter);
    let mut held: Vec<String> = Vec::new();
    if let Some(spec) = &sweep.spec {
        held.push(format!("spec {spec}"));
    }
    if let Some(p) = sweep.ranks {
        held.push(format!("P = {p}"));
    }
    if let Some(m) = sweep.microbatches {
        held.push(format!("M = {m}"));
    }
    let ranks = sweep.parameter == Param::Ranks.name();
    let microbatches = sweep.parameter == Param::Microbatches.name();
    if let Some(rule) = &sweep.rule {
        if rule.strict {
            held.push("strictly the spec's shape".to_owned());
        } else {
            if ranks {
                held.push(if rule.keep_dp {
                    "dp kept (the GPUs follow P)".to_owned()
                } else {
                    "the GPUs kept (dp follows P)".to_owned()
                });
            }
            if rule.global_batch {
                held.push(if ranks && sweep.microbatches.is_none() {
                    "M follows P (the global batch kept)".to_owned()
                } else if microbatches {
                    "the micro-batch size follows M (the global batch kept)".to_owned()
                } else {
                    "the global batch kept".to_owned()
                });
            }
        }
    }
    if !held.is_empty() {
        title.push_str(": ");
        title.push_str(&held.join(", "));
    }
    lines(title)
}

fn value_text(sweep: &Sweep, v: f64) -> String {
    match sweep.metric {
        Metric::Bubble => percent(v, 2),
        Metric::StepTime => sweep.unit.format(v),
    }
}

/// The sweep as rows of text: a header (the parameter, then one column per schedule), one row per
/// swept value, and the notes that explain the cells marked `- [n]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepTable {
    /// The parameter, then one column per schedule.
    pub header: Vec<String>,
    /// One row per swept value.
    pub rows: Vec<Vec<String>>,
    /// `[n] schedule, parameter = x: reason` for every point without a value.
    pub notes: Vec<String>,
}

/// The sweep as a table of text cells (see [`SweepTable`]).
pub fn sweep_table(sweep: &Sweep) -> SweepTable {
    let mut notes: Vec<String> = Vec::new();
    let mut header = vec![sweep.parameter.clone()];
    header.extend(sweep.series.iter().map(|s| s.schedule.clone()));
    let mut rows: Vec<Vec<String>> = Vec::new();
    for x in sweep.xs() {
        let mut row = vec![x.to_string()];
        for (i, s) in sweep.series.iter().enumerate() {
            row.push(match sweep.point(i, &x).map(|p| &p.value) {
                Some(Ok(v)) => value_text(sweep, *v),
                Some(Err(reason)) => {
                    notes.push(format!(
                        "[{}] {}, {} = {x}: {reason}",
                        notes.len() + 1,
                        s.schedule,
                        sweep.parameter
                    ));
                    format!("- [{}]", notes.len())
                }
                None => String::new(),
            });
        }
        rows.push(row);
    }
    SweepTable {
        header,
        rows,
        notes,
    }
}

/// The sweep as an aligned table, one row per swept value and one column per schedule; points
/// without a value are numbered and explained below the table.
pub fn sweep_text(sweep: &Sweep) -> String {
    let SweepTable {
        header,
        rows,
        notes,
    } = sweep_table(sweep);
    let mut out = format!("{}\n", sweep_title(sweep));
    // The values right-aligned under their schedules.
    let right: Vec<bool> = (0..header.len()).map(|c| c > 0).collect();
    text_table(&header, &rows, &right, &mut out);
    for n in &notes {
        let _ = writeln!(out, "{n}");
    }
    lines(out)
}

/// The sweep as CSV, one line per (value, schedule): `<parameter>,schedule,<metric>,reason`.
pub fn sweep_csv(sweep: &Sweep) -> String {
    let mut out = format!(
        "{},schedule,{},reason\n",
        csv_field(&sweep.parameter),
        sweep.metric.key()
    );
    for x in sweep.xs() {
        for (i, s) in sweep.series.iter().enumerate() {
            let Some(p) = sweep.point(i, &x) else {
                continue;
            };
            let (value, reason) = match &p.value {
                Ok(v) => (v.to_string(), String::new()),
                Err(r) => (String::new(), csv_field(r)),
            };
            let _ = writeln!(out, "{x},{},{value},{reason}", csv_field(&s.schedule));
        }
    }
    lines(out)
}

/// The sweep as JSON (`schemas/pipeweave-sweep.v2.schema.json`): the parameter, the metric and its
/// unit, what the sweep holds (spec, P, M, the spec's rule), and every schedule's points (a `null`
/// value with a `reason` where the schedule has none).
pub fn sweep_json(sweep: &Sweep) -> String {
    crate::json::json(sweep)
}

/// Line colours, one per schedule (repeated with dashes past ten).
const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f",
    "#ff9da7", "#79706e",
];

const W: f64 = 640.0;
const H: f64 = 320.0;
const LEFT: f64 = 70.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 52.0;
const LEGEND: f64 = 220.0;

/// Where values go on the chart: the x range, the y scale and the ticks of both axes.
struct Chart {
    /// Every swept value and its place on the x axis.
    places: Vec<(Value, f64)>,
    xmin: f64,
    xmax: f64,
    /// From the metric's unit to the axis's (100 for a percentage, 1000 for ms).
    factor: f64,
    /// The axis's top value, in its unit.
    ytop: f64,
    /// Places on the x axis and their labels.
    xticks: Vec<(f64, String)>,
    yticks: Vec<f64>,
    y_name: String,
}

impl Chart {
    fn new(sweep: &Sweep) -> Chart {
        let xs = sweep.xs();
        let numbers: Option<Vec<i64>> = xs
            .iter()
            .map(|x| match x {
                Value::Int(n) => Some(*n),
                _ => None,
            })
            .collect();
        let (places, xmin, xmax, xticks) = match numbers {
            // Numbers on a numeric axis, ticked at every value when they are few.
            Some(ns) => {
                let lo = ns.iter().copied().min().map(|n| n as f64);
                let hi = ns.iter().copied().max().map(|n| n as f64);
                let (xmin, xmax) = match (lo, hi) {
                    (Some(a), Some(b)) if a < b => (a, b),
                    (Some(a), _) => (a - 1.0, a + 1.0),
                    _ => (0.0, 1.0),
                };
                let ticks: Vec<f64> = if ns.len() <= 12 {
                    ns.iter().map(|&n| n as f64).collect()
                } else {
                    nice_ticks(xmin, xmax, 8)
                };
                let places = xs
                    .iter()
                    .cloned()
                    .zip(ns.iter().map(|&n| n as f64))
                    .collect();
                (
                    places,
                    xmin,
                    xmax,
                    ticks.into_iter().map(|t| (t, sig(t))).collect(),
                )
            }
            // Bools and options: one place each, in the order swept.
            None => {
                let places: Vec<(Value, f64)> =
                    xs.iter().cloned().zip((0..).map(f64::from)).collect();
                let ticks = places.iter().map(|(x, at)| (*at, x.to_string())).collect();
                (places, -0.5, xs.len() as f64 - 0.5, ticks)
            }
        };
        let ymax_data = sweep
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter_map(|p| p.value.as_ref().ok().copied())
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        let (y_name, factor) = match sweep.metric {
            Metric::Bubble => ("bubble fraction (%)".to_string(), 100.0),
            Metric::StepTime => {
                let (name, factor) = sweep.unit.axis(ymax_data);
                (name.replacen("time", "step time", 1), factor)
            }
        };
        // The y axis starts at 0 and ends on the first tick at or above the largest value.
        let mut yticks = nice_ticks(0.0, (ymax_data * factor).max(1e-9), 5);
        let step = match yticks.as_slice() {
            [a, b, ..] => b - a,
            _ => 1.0,
        };
        while yticks
            .last()
            .is_some_and(|&t| t < ymax_data * factor - 1e-9)
        {
            let next = yticks.last().copied().unwrap_or(0.0) + step;
            yticks.push(next);
        }
        let ytop = yticks.last().copied().filter(|t| *t > 0.0).unwrap_or(1.0);
        Chart {
            places,
            xmin,
            xmax,
            factor,
            ytop,
            xticks,
            yticks,
            y_name,
        }
    }

    fn px(&self, x: f64) -> f64 {
        LEFT + (x - self.xmin) / (self.xmax - self.xmin) * W
    }

    /// Where the swept value `x` goes on the x axis, in pixels.
    fn px_of(&self, x: &Value) -> f64 {
        let at = self
            .places
            .iter()
            .find(|(v, _)| v == x)
            .map_or(self.xmin, |(_, at)| *at);
        self.px(at)
    }

    fn py(&self, v: f64) -> f64 {
        TOP + H - (v * self.factor / self.ytop) * H
    }
}

/// The grid, both axes with their ticks, and the axis names.
fn axes(out: &mut String, chart: &Chart, parameter: &str) {
    for t in &chart.yticks {
        let y = TOP + H - t / chart.ytop * H;
        let _ = writeln!(
            out,
            r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#e3e3e3"/><text x="{}" y="{}" font-size="10" text-anchor="end" dominant-baseline="central">{}</text>"##,
            num(LEFT),
            num(y),
            num(LEFT + W),
            num(y),
            num(LEFT - 6.0),
            num(y),
            sig(*t)
        );
    }
    for (t, label) in &chart.xticks {
        let x = chart.px(*t);
        let _ = writeln!(
            out,
            r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#333"/><text x="{}" y="{}" font-size="10" text-anchor="middle">{}</text>"##,
            num(x),
            num(TOP + H),
            num(x),
            num(TOP + H + 4.0),
            num(x),
            num(TOP + H + 16.0),
            esc(label)
        );
    }
    let _ = writeln!(
        out,
        r##"<path d="M{l} {t}V{b}H{r}" fill="none" stroke="#333"/><text x="{}" y="{}" font-size="11" text-anchor="middle">{}</text><text x="16" y="{}" font-size="11" text-anchor="middle" transform="rotate(-90 16 {})">{}</text>"##,
        num(LEFT + W / 2.0),
        num(TOP + H + 38.0),
        esc(parameter),
        num(TOP + H / 2.0),
        num(TOP + H / 2.0),
        esc(&chart.y_name),
        l = num(LEFT),
        t = num(TOP),
        b = num(TOP + H),
        r = num(LEFT + W),
    );
}

/// One schedule's line (one path per run of consecutive points with values), its points with
/// tooltips, and its legend entry.
fn series(out: &mut String, chart: &Chart, sweep: &Sweep, i: usize, s: &SweepSeries) {
    let colour = PALETTE[i % PALETTE.len()];
    let dash = if i >= PALETTE.len() {
        r#" stroke-dasharray="6 3""#
    } else {
        ""
    };
    // Left to right, whatever order the points came in.
    let mut points: Vec<(f64, &SweepPoint)> =
        s.points.iter().map(|p| (chart.px_of(&p.x), p)).collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let finite = |p: &SweepPoint| p.value.as_ref().ok().copied().filter(|v| v.is_finite());
    let mut d = String::new();
    let mut pen_down = false;
    for &(x, p) in &points {
        match finite(p) {
            Some(v) => {
                let _ = write!(
                    d,
                    "{}{} {}",
                    if pen_down { "L" } else { "M" },
                    num(x),
                    num(chart.py(v))
                );
                pen_down = true;
            }
            None => pen_down = false,
        }
    }
    let _ = writeln!(
        out,
        r#"<g class="series" data-schedule="{}">"#,
        esc(&s.schedule)
    );
    if !d.is_empty() {
        let _ = writeln!(
            out,
            r#"<path d="{d}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>"#
        );
    }
    for &(x, p) in &points {
        if let Some(v) = finite(p) {
            let _ = writeln!(
                out,
                r#"<circle cx="{}" cy="{}" r="3" fill="{colour}"><title>{}</title></circle>"#,
                num(x),
                num(chart.py(v)),
                esc(&format!(
                    "{}, {} = {}: {}",
                    s.schedule,
                    sweep.parameter,
                    p.x,
                    value_text(sweep, v)
                ))
            );
        }
    }
    out.push_str("</g>\n");
    legend_item(out, i, s, colour, dash);
}

fn legend_item(out: &mut String, i: usize, s: &SweepSeries, colour: &str, dash: &str) {
    let ly = TOP + 10.0 + i as f64 * 20.0;
    let lx = LEFT + W + 20.0;
    let missing = s.points.iter().filter(|p| p.value.is_err()).count();
    let note = match missing {
        0 => String::new(),
        n if n == s.points.len() => " (no valid point)".to_string(),
        n => format!(" ({n} gap{})", if n == 1 { "" } else { "s" }),
    };
    let _ = writeln!(
        out,
        r#"<g class="legend-item"><line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{colour}" stroke-width="2"{dash}/><circle cx="{}" cy="{}" r="3" fill="{colour}"/><text x="{}" y="{}" font-size="11" dominant-baseline="central">{}</text></g>"#,
        num(lx),
        num(ly),
        num(lx + 22.0),
        num(ly),
        num(lx + 11.0),
        num(ly),
        num(lx + 28.0),
        num(ly),
        esc(&format!("{}{note}", s.schedule))
    );
}

/// The sweep as an SVG line chart: one line per schedule, gaps where it has no value. It defines
/// no element ids, so several can share a page.
pub fn sweep_svg(sweep: &Sweep) -> String {
    let chart = Chart::new(sweep);
    let total_w = LEFT + W + 20.0 + LEGEND;
    let total_h = TOP + H + BOTTOM;
    let title = esc(&sweep_title(sweep));
    let mut out = String::new();
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="Helvetica, Arial, sans-serif" role="img" aria-label="{title}"><rect width="{w}" height="{h}" fill="#fff"/>"##,
        w = num(total_w),
        h = num(total_h),
    );
    let _ = writeln!(
        out,
        r#"<text x="{}" y="20" font-size="14" font-weight="bold">{title}</text>"#,
        num(LEFT),
    );
    axes(&mut out, &chart, &sweep.parameter);
    for (i, s) in sweep.series.iter().enumerate() {
        series(&mut out, &chart, sweep, i, s);
    }
    out.push_str("</svg>\n");
    out
}
