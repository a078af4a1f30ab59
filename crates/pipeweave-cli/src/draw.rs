//! `pipeweave render`: simulated timelines of several schedules as one SVG, under unit costs,
//! `--costs`, or on a spec fitted to each plan's shape (a note says how), whole or in a window of
//! time (`--from`, `--to`).

use crate::args::{ManyArgs, TimeWindowArgs};
use crate::many::{Drawn, Many, check_window, costing, draw, timelines, window};
use crate::output::{emit, is_stdout, note};
use crate::session::Session;
use pipeweave_report::{TimeFormat, percent};
use pipeweave_source::Failure;
use std::path::Path;

/// `pipeweave render`: writes the SVG (to standard output for `-`) and a summary line per
/// schedule. The first schedule that cannot be built or simulated stops it.
pub fn render(
    many: &ManyArgs,
    svg: &Path,
    comms: bool,
    time: &TimeWindowArgs,
    session: &mut Session,
) -> Result<(), Failure> {
    check_window(time)?;
    let costing = costing(&many.costs, session)?;
    let schedules = Many::resolve(&many.schedules, &many.params, session)?;
    let built = schedules.build_all(&schedules.shape(&costing)?, session)?;
    let mut drawn: Vec<Drawn> = Vec::with_capacity(built.len());
    for (source, built) in schedules.sources.iter().zip(built) {
        let name = source.name();
        let d = draw(name, &built?.plan, &costing)
            .map_err(|reason| Failure::invalid(format!("{name}: {reason}")))?;
        drawn.push(d);
    }
    let window = window(time, &drawn, &costing)?;
    let text = timelines(&drawn, &costing, comms, "timelines", &window);
    emit(Some(svg), &text)?;
    if is_stdout(svg) {
        // The SVG is standard output: how the spec was fitted goes to standard error.
        for d in drawn.iter().filter(|d| !d.run.fitted.is_empty()) {
            note(&format!(
                "{}: spec fitted: {}",
                d.name,
                d.run.fitted.join("; ")
            ));
        }
        return Ok(());
    }
    let mut summary = String::new();
    for d in &drawn {
        summary.push_str(&format!(
            "{}: makespan {}, bubble fraction {}\n",
            d.name,
            costing.unit().format(d.run.timeline.timing.makespan),
            percent(d.run.timeline.bubble_fraction, 2)
        ));
        if !d.run.fitted.is_empty() {
            summary.push_str(&format!("  spec fitted: {}\n", d.run.fitted.join("; ")));
        }
    }
    summary.push_str(&format!("wrote {}\n", svg.display()));
    emit(None, &summary)
}
