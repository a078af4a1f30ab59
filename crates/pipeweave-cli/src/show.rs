//! `pipeweave show`: the simulated timeline as text, in a window of ranks and time, as wide as the
//! terminal (or `--width`; a fixed width when standard output is not a terminal, so that output
//! does not depend on where it goes). At most [`MAX_ROWS`] ranks are drawn; a note says which
//! were left out.

use crate::args::{ArgError, CostArgs, PlanArgs, parse_time};
use crate::output::{emit, warning};
use crate::session::Session;
use crate::single::{on_spec, simulate};
use clap::Args;
use pipeweave_plan::Plan;
use pipeweave_report::{TextWindow, text_timeline_window};
use pipeweave_sim::{Timeline, UniformCosts};
use pipeweave_source::Failure;
use std::io::IsTerminal;
use std::ops::RangeInclusive;

/// The most ranks drawn at once.
pub const MAX_ROWS: u32 = 512;

/// The width of a line when standard output is not a terminal.
pub const PIPE_WIDTH: usize = 1000;

/// The narrowest `--width`.
const MIN_WIDTH: usize = 40;

/// Which part of the timeline `show` draws, and how wide.
#[derive(Debug, Args)]
pub struct WindowArgs {
    /// Draw only ranks A to B (`A..B`, or one rank `A`); at most 512 at once
    #[arg(long = "rank-range", value_name = "A..B", value_parser = parse_rank_range)]
    pub rank_range: Option<RangeInclusive<u32>>,
    /// Start the drawing at this time (units, or seconds with --spec)
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub from: Option<f64>,
    /// End the drawing at this time (units, or seconds with --spec)
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub to: Option<f64>,
    /// The most characters per line (default: the terminal's width, or 1000 when standard output
    /// is not a terminal); the time axis is scaled down to fit
    #[arg(long, value_name = "N", value_parser = parse_width)]
    pub width: Option<usize>,
}

fn parse_rank_range(text: &str) -> Result<RangeInclusive<u32>, ArgError> {
    let bad = || {
        ArgError(format!(
            "--rank-range {text}: expected A..B (ranks A to B, from 0) or one rank A"
        ))
    };
    let number = |t: &str| t.trim().parse::<u32>().map_err(|_| bad());
    let (a, b) = match text.split_once("..") {
        Some((a, b)) => (number(a)?, number(b)?),
        None => {
            let a = number(text)?;
            (a, a)
        }
    };
    if a > b {
        return Err(ArgError(format!(
            "--rank-range {text}: the range runs backwards"
        )));
    }
    Ok(a..=b)
}

fn parse_width(text: &str) -> Result<usize, ArgError> {
    text.trim()
        .parse::<usize>()
        .ok()
        .filter(|w| *w >= MIN_WIDTH)
        .ok_or_else(|| {
            ArgError(format!(
                "--width {text}: the width is a whole number of characters, at least {MIN_WIDTH}"
            ))
        })
}

/// `pipeweave show`: the text timeline (on a spec, with its step time first).
pub fn run(
    plan: &PlanArgs,
    costs: &CostArgs,
    window: &WindowArgs,
    session: &mut Session,
) -> Result<(), Failure> {
    if let (Some(from), Some(to)) = (window.from, window.to)
        && from >= to
    {
        return Err(Failure::usage(format!(
            "--from {from} --to {to}: the window must end after it starts"
        )));
    }
    if costs.spec.name.is_some() {
        let on = on_spec(session, plan, &costs.spec)?;
        let e = &on.evaluation;
        let mut head = format!(
            "spec {}: step time {}, times in seconds\n",
            e.report.spec,
            pipeweave_report::seconds(e.report.step_time_s)
        );
        if !on.fitted.is_empty() {
            head.push_str(&format!("spec fitted: {}\n", on.fitted.join("; ")));
        }
        let drawing = draw(&on.built.plan, &e.timeline, window)?;
        return emit(None, &(head + &drawing));
    }
    costs.spec.check_without_spec()?;
    let built = session.load(plan)?;
    let costs: UniformCosts = costs.costs.unwrap_or_default();
    let t = simulate(&built, &costs)?;
    emit(None, &draw(&built.plan, &t, window)?)
}

/// The drawing of the window; ranks past [`MAX_ROWS`] are left out with a note.
fn draw(plan: &Plan, timeline: &Timeline, window: &WindowArgs) -> Result<String, Failure> {
    let last = plan.ranks() - 1;
    let asked = window.rank_range.clone().unwrap_or(0..=last);
    if *asked.start() > last {
        return Err(Failure::usage(format!(
            "--rank-range {}..{}: the plan has ranks 0 to {last}",
            asked.start(),
            asked.end()
        )));
    }
    let end = (*asked.end()).min(last);
    let shown_end = end.min(asked.start() + (MAX_ROWS - 1));
    if shown_end < end {
        warning(&format!(
            "ranks {} to {end} are not shown (at most {MAX_ROWS} rows at once; --rank-range A..B \
             shows others)",
            shown_end + 1
        ));
    }
    if window.from.is_some_and(|f| f >= timeline.timing.makespan) {
        return Err(Failure::usage(format!(
            "--from {}: the step ends at {}",
            window.from.unwrap_or_default(),
            pipeweave_report::format_time(timeline.timing.makespan)
        )));
    }
    let width = window.width.unwrap_or_else(|| {
        let out = std::io::stdout();
        if out.is_terminal() {
            terminal_size::terminal_size_of(out)
                .map_or(PIPE_WIDTH, |(w, _)| usize::from(w.0).max(MIN_WIDTH))
        } else {
            PIPE_WIDTH
        }
    });
    let text_window = TextWindow {
        ranks: *asked.start()..=shown_end,
        from: window.from,
        to: window.to,
        width: Some(width),
    };
    Ok(text_timeline_window(plan, timeline, &text_window))
}
