//! `pipeweave sweep`: one metric of several schedules against a swept parameter (micro-batches or
//! ranks), as a table and an SVG line chart; a progress bar on a terminal's stderr when it takes a
//! while.

use crate::Failure;
use crate::compare::reason;
use crate::draw::{Costing, ManyArgs, run};
use crate::render::Sources;
use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressStyle};
use pipeweave_report::{Metric, Sweep, SweepPoint, SweepSeries};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// The most values one sweep may take (each is a simulation per schedule).
const MAX_VALUES: usize = 4096;

/// The parameter a sweep varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    Microbatches,
    Ranks,
}

impl Param {
    pub fn name(self) -> &'static str {
        match self {
            Param::Microbatches => "microbatches",
            Param::Ranks => "ranks",
        }
    }
}

/// `--over NAME=VALUES`, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Over {
    pub param: Param,
    /// Ascending, without repeats.
    pub values: Vec<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MetricArg {
    /// Share of rank-time spent idle
    Bubble,
    /// The step's makespan (seconds with --spec, units otherwise)
    StepTime,
}

impl From<MetricArg> for Metric {
    fn from(m: MetricArg) -> Metric {
        match m {
            MetricArg::Bubble => Metric::Bubble,
            MetricArg::StepTime => Metric::StepTime,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TableFormat {
    Text,
    Csv,
    Json,
}

fn number(text: &str, what: &str) -> Result<u32, Failure> {
    text.trim()
        .parse::<u32>()
        .ok()
        .filter(|v| *v > 0)
        .ok_or_else(|| {
            Failure::Usage(format!(
                "--over: `{}` is not a {what} (a whole number ≥ 1)",
                text.trim()
            ))
        })
}

/// Parses `microbatches=8..128`, `ranks=2..16:2`, `m=8,16,32` or a mix (`m=4..8,16,32..64:16`).
pub fn parse_over(text: &str) -> Result<Over, Failure> {
    let Some((name, values)) = text.split_once('=') else {
        return Err(Failure::Usage(format!(
            "--over expects NAME=VALUES (e.g. microbatches=8..128 or ranks=2,4,8), found `{text}`"
        )));
    };
    let param = match name.trim() {
        "microbatches" | "m" | "M" => Param::Microbatches,
        "ranks" | "p" | "P" => Param::Ranks,
        other => {
            return Err(Failure::Usage(format!(
                "--over: cannot sweep `{other}`; expected microbatches or ranks"
            )));
        }
    };
    let mut out: Vec<u32> = Vec::new();
    for item in values.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(Failure::Usage(format!("--over: empty value in `{text}`")));
        }
        let Some((lo, rest)) = item.split_once("..") else {
            out.push(number(item, "value")?);
            continue;
        };
        let (hi, step) = match rest.split_once(':') {
            Some((hi, step)) => (hi, number(step, "step")?),
            None => (rest, 1),
        };
        let lo = number(lo, "value")?;
        let hi = number(hi, "value")?;
        if lo > hi {
            return Err(Failure::Usage(format!(
                "--over: the range `{item}` runs backwards"
            )));
        }
        let count = (hi - lo) / step + 1;
        if out.len() + count as usize > MAX_VALUES {
            return Err(Failure::Usage(format!(
                "--over: more than {MAX_VALUES} values; use a step (e.g. {lo}..{hi}:{})",
                ((hi - lo) / 64).max(2)
            )));
        }
        out.extend((0..count).map(|k| lo + k * step));
    }
    out.sort_unstable();
    out.dedup();
    if out.len() > MAX_VALUES {
        return Err(Failure::Usage(format!(
            "--over: more than {MAX_VALUES} values"
        )));
    }
    Ok(Over { param, values: out })
}

/// Shows a progress bar on a terminal once the sweep has run for a moment.
struct Progress {
    started: Instant,
    total: u64,
    bar: Option<ProgressBar>,
    enabled: bool,
}

impl Progress {
    fn new(total: u64) -> Progress {
        Progress {
            started: Instant::now(),
            total,
            bar: None,
            enabled: std::io::stderr().is_terminal(),
        }
    }

    fn tick(&mut self, done: u64, what: &str) {
        if self.bar.is_none() && self.enabled && self.started.elapsed() > Duration::from_millis(300)
        {
            let bar = ProgressBar::new(self.total);
            if let Ok(style) =
                ProgressStyle::with_template("{bar:30} {pos}/{len} simulations  {msg}")
            {
                bar.set_style(style);
            }
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(done);
            bar.set_message(what.to_owned());
        }
    }

    fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Runs the sweep: every schedule at every value. A value a schedule cannot take becomes a point
/// with the reason; a usage error (a flag missing for every value) stops the sweep.
pub fn sweep(
    many: &ManyArgs,
    over: &Over,
    metric: Metric,
    costing: &Costing,
    sources: &mut Sources,
) -> Result<Sweep, Failure> {
    let schedules = many.schedules()?;
    let total = (schedules.len() * over.values.len()) as u64;
    let mut progress = Progress::new(total);
    let mut series = Vec::with_capacity(schedules.len());
    let mut done = 0u64;
    for schedule in &schedules {
        let mut points = Vec::with_capacity(over.values.len());
        for &x in &over.values {
            let (ranks, mbs) = match over.param {
                Param::Microbatches => (None, Some(x)),
                Param::Ranks => (Some(x), None),
            };
            let args = many.plan_args(schedule, costing, ranks, mbs);
            let value = if schedule.is_file() {
                Err(format!("a plan file has fixed {}", over.param.name()))
            } else {
                match run(&args, costing, sources) {
                    Ok(r) => Ok(match metric {
                        Metric::Bubble => r.timeline.bubble_fraction,
                        Metric::StepTime => r.timeline.timing.makespan,
                    }),
                    Err(f @ Failure::Usage(_)) => return Err(f),
                    Err(f) => Err(reason(&f)),
                }
            };
            points.push(SweepPoint { x, value });
            done += 1;
            progress.tick(
                done,
                &format!("{} {}={x}", schedule.name, over.param.name()),
            );
        }
        series.push(SweepSeries {
            schedule: schedule.name.clone(),
            points,
        });
    }
    progress.finish();
    Ok(Sweep {
        parameter: over.param.name().to_owned(),
        metric,
        unit: costing.unit(),
        series,
    })
}

/// The table of a sweep in the chosen format.
pub fn table(sweep: &Sweep, format: TableFormat) -> String {
    match format {
        TableFormat::Text => pipeweave_report::sweep_text(sweep),
        TableFormat::Csv => pipeweave_report::sweep_csv(sweep),
        TableFormat::Json => pipeweave_report::sweep_json(sweep),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str) -> Vec<u32> {
        match parse_over(text) {
            Ok(o) => o.values,
            Err(Failure::Usage(m)) => panic!("{m}"),
            Err(_) => panic!("not a usage error"),
        }
    }

    fn error(text: &str) -> String {
        match parse_over(text) {
            Err(Failure::Usage(m)) => m,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn forms() {
        assert_eq!(values("microbatches=8..12"), vec![8, 9, 10, 11, 12]);
        assert_eq!(values("m=8..32:8"), vec![8, 16, 24, 32]);
        assert_eq!(values("m=8..30:8"), vec![8, 16, 24]);
        assert_eq!(values("ranks=16,2,4,4"), vec![2, 4, 16]);
        assert_eq!(values("P=2..4,8..16:8"), vec![2, 3, 4, 8, 16]);
        assert_eq!(parse_over("p=2").map(|o| o.param).ok(), Some(Param::Ranks));
    }

    #[test]
    fn errors() {
        assert!(error("microbatches").contains("NAME=VALUES"));
        assert!(error("layers=2..4").contains("cannot sweep `layers`"));
        assert!(error("m=0..4").contains("`0` is not a value"));
        assert!(error("m=8..4").contains("runs backwards"));
        assert!(error("m=4..8:0").contains("`0` is not a step"));
        assert!(error("m=4,,8").contains("empty value"));
        assert!(error("m=x").contains("`x`"));
        assert!(error("m=1..4000000000").contains("more than 4096 values"));
    }
}
