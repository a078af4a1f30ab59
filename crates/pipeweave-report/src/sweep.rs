//! Sweeps: a metric (bubble fraction or step time) of several schedules against one swept
//! parameter, as a text table, CSV, JSON and an SVG line chart.
//!
//! The caller runs the simulations; a point whose schedule cannot be built or run for that value
//! carries the reason instead of a value, shows as a gap in the chart and as a note in the table.

use crate::svg::{TimeUnit, esc, nice_ticks, num, sig};
use std::collections::BTreeSet;
use std::fmt::Write;

/// What a sweep measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Share of rank-time spent idle.
    Bubble,
    /// The step's makespan (units, or seconds with a spec).
    StepTime,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Bubble => "bubble fraction",
            Metric::StepTime => "step time",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Metric::Bubble => "bubble_fraction",
            Metric::StepTime => "step_time",
        }
    }
}

/// One value of the swept parameter and what the schedule gave there.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    pub x: u32,
    /// The metric, or why there is none (a requirement not met, an invalid plan, ...).
    pub value: Result<f64, String>,
}

/// One schedule's points, in the order of the swept values.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepSeries {
    pub schedule: String,
    pub points: Vec<SweepPoint>,
}

/// A finished sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The swept parameter as the user named it (`microbatches`, `ranks`).
    pub parameter: String,
    pub metric: Metric,
    /// The unit of step times.
    pub unit: TimeUnit,
    pub series: Vec<SweepSeries>,
}

impl Sweep {
    /// Every swept value, ascending.
    fn xs(&self) -> Vec<u32> {
        let set: BTreeSet<u32> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.x))
            .collect();
        set.into_iter().collect()
    }

    fn value_text(&self, v: f64) -> String {
        match self.metric {
            Metric::Bubble => format!("{:.2}%", v * 100.0),
            Metric::StepTime => self.unit.format(v),
        }
    }

    fn unit_key(&self) -> &'static str {
        match (self.metric, self.unit) {
            (Metric::Bubble, _) => "fraction",
            (Metric::StepTime, TimeUnit::Units) => "units",
            (Metric::StepTime, TimeUnit::Seconds) => "seconds",
        }
    }

    fn point(&self, series: usize, x: u32) -> Option<&SweepPoint> {
        self.series.get(series)?.points.iter().find(|p| p.x == x)
    }
}

/// The sweep as rows of text: a header (the parameter, then one column per schedule), one row per
/// swept value, and the notes that explain the cells marked `- [n]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepTable {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
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
            row.push(match sweep.point(i, x).map(|p| &p.value) {
                Some(Ok(v)) => sweep.value_text(*v),
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
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([header[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (c, cell) in cells.iter().enumerate() {
            if c > 0 {
                s.push_str("  ");
            }
            let pad = widths[c].saturating_sub(cell.chars().count());
            if c == 0 {
                s.push_str(cell);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str(&" ".repeat(pad));
                s.push_str(cell);
            }
        }
        s.trim_end().to_string()
    };
    let mut out = format!("{} against {}\n", sweep.metric.name(), sweep.parameter);
    let _ = writeln!(out, "{}", line(&header));
    for r in &rows {
        let _ = writeln!(out, "{}", line(r));
    }
    for n in &notes {
        let _ = writeln!(out, "{n}");
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
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
            let Some(p) = sweep.point(i, x) else { continue };
            let (value, reason) = match &p.value {
                Ok(v) => (v.to_string(), String::new()),
                Err(r) => (String::new(), csv_field(r)),
            };
            let _ = writeln!(out, "{x},{},{value},{reason}", csv_field(&s.schedule));
        }
    }
    out
}

/// The sweep as JSON: the parameter, the metric and its unit, and every schedule's points (a
/// `null` value with a `reason` where the schedule has none).
pub fn sweep_json(sweep: &Sweep) -> String {
    let series: Vec<serde_json::Value> = sweep
        .series
        .iter()
        .map(|s| {
            let points: Vec<serde_json::Value> = s
                .points
                .iter()
                .map(|p| match &p.value {
                    Ok(v) => serde_json::json!({ "x": p.x, "value": v }),
                    Err(r) => serde_json::json!({ "x": p.x, "value": null, "reason": r }),
                })
                .collect();
            serde_json::json!({ "schedule": s.schedule, "points": points })
        })
        .collect();
    let v = serde_json::json!({
        "parameter": sweep.parameter,
        "metric": sweep.metric.key(),
        "unit": sweep.unit_key(),
        "series": series,
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

/// Line colours, one per schedule (repeated with dashes past ten).
const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f",
    "#ff9da7", "#79706e",
];

/// The sweep as an SVG line chart: one line per schedule, gaps where it has no value. It defines
/// no element ids, so several can share a page.
pub fn sweep_svg(sweep: &Sweep) -> String {
    const W: f64 = 640.0;
    const H: f64 = 320.0;
    const LEFT: f64 = 70.0;
    const TOP: f64 = 36.0;
    const BOTTOM: f64 = 52.0;
    const LEGEND: f64 = 220.0;
    let xs = sweep.xs();
    let (xmin, xmax) = match (xs.first(), xs.last()) {
        (Some(&a), Some(&b)) if a < b => (f64::from(a), f64::from(b)),
        (Some(&a), _) => (f64::from(a) - 1.0, f64::from(a) + 1.0),
        _ => (0.0, 1.0),
    };
    let ymax_data = sweep
        .series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter_map(|p| p.value.as_ref().ok().copied())
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let (y_name, factor) = match sweep.metric {
        Metric::Bubble => ("bubble fraction (%)", 100.0),
        Metric::StepTime => sweep.unit.axis(ymax_data),
    };
    let y_name = match sweep.metric {
        Metric::Bubble => y_name.to_string(),
        Metric::StepTime => y_name.replacen("time", "step time", 1),
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
    let px = |x: f64| LEFT + (x - xmin) / (xmax - xmin) * W;
    let py = |v: f64| TOP + H - (v * factor / ytop) * H;
    let xticks: Vec<f64> = if xs.len() <= 12 {
        xs.iter().map(|&x| f64::from(x)).collect()
    } else {
        nice_ticks(xmin, xmax, 8)
    };

    let total_w = LEFT + W + 20.0 + LEGEND;
    let total_h = TOP + H + BOTTOM;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="Helvetica, Arial, sans-serif" role="img" aria-label="{label}"><rect width="{w}" height="{h}" fill="#fff"/>"##,
        w = num(total_w),
        h = num(total_h),
        label = esc(&format!(
            "{} against {}",
            sweep.metric.name(),
            sweep.parameter
        ))
    );
    let _ = writeln!(
        out,
        r#"<text x="{}" y="20" font-size="14" font-weight="bold">{}</text>"#,
        num(LEFT),
        esc(&format!(
            "{} against {}",
            sweep.metric.name(),
            sweep.parameter
        ))
    );
    // Grid and axes.
    for t in &yticks {
        let y = TOP + H - t / ytop * H;
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
    for t in &xticks {
        let x = px(*t);
        let _ = writeln!(
            out,
            r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#333"/><text x="{}" y="{}" font-size="10" text-anchor="middle">{}</text>"##,
            num(x),
            num(TOP + H),
            num(x),
            num(TOP + H + 4.0),
            num(x),
            num(TOP + H + 16.0),
            sig(*t)
        );
    }
    let _ = writeln!(
        out,
        r##"<path d="M{l} {t}V{b}H{r}" fill="none" stroke="#333"/><text x="{}" y="{}" font-size="11" text-anchor="middle">{}</text><text x="16" y="{}" font-size="11" text-anchor="middle" transform="rotate(-90 16 {})">{}</text>"##,
        num(LEFT + W / 2.0),
        num(TOP + H + 38.0),
        esc(&sweep.parameter),
        num(TOP + H / 2.0),
        num(TOP + H / 2.0),
        esc(&y_name),
        l = num(LEFT),
        t = num(TOP),
        b = num(TOP + H),
        r = num(LEFT + W),
    );
    // Lines: one path per run of consecutive points with values.
    for (i, s) in sweep.series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let dash = if i >= PALETTE.len() {
            r#" stroke-dasharray="6 3""#
        } else {
            ""
        };
        let mut points: Vec<&SweepPoint> = s.points.iter().collect();
        points.sort_by_key(|p| p.x);
        let mut d = String::new();
        let mut pen_down = false;
        for p in &points {
            match p.value {
                Ok(v) if v.is_finite() => {
                    let _ = write!(
                        d,
                        "{}{} {}",
                        if pen_down { "L" } else { "M" },
                        num(px(f64::from(p.x))),
                        num(py(v))
                    );
                    pen_down = true;
                }
                _ => pen_down = false,
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
        for p in &points {
            if let Ok(v) = p.value
                && v.is_finite()
            {
                let _ = writeln!(
                    out,
                    r#"<circle cx="{}" cy="{}" r="3" fill="{colour}"><title>{}</title></circle>"#,
                    num(px(f64::from(p.x))),
                    num(py(v)),
                    esc(&format!(
                        "{}, {} = {}: {}",
                        s.schedule,
                        sweep.parameter,
                        p.x,
                        sweep.value_text(v)
                    ))
                );
            }
        }
        out.push_str("</g>\n");
        // Legend entry.
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
    out.push_str("</svg>\n");
    out
}
