//! `pipeweave render` (and Python's `render`): simulated timelines of several schedules as one
//! SVG on one time scale, under unit costs, uniform costs, or on a spec fitted to each plan's shape,
//! whole or in a window of time; and the steps `report` shares with it.

use crate::many::Many;
use crate::request::CostsArg;
use crate::session::Session;
use crate::single::{check_window, with_parts_of};
use pipeweave_check::ValidPlan;
use pipeweave_eval::{Costing, Run, Shape, Simulation, TimeUnit};
use pipeweave_report::{
    SvgWindow, TimeFormat, TimelineChart, shape_text, timelines_svg_window, transfers,
};
use pipeweave_source::Flag;
use pipeweave_source::{Failure, Params};

/// One schedule built and simulated, named as the user wrote it (`dualpipe`, not the resolver's
/// `plugin:dualpipe`), so figures and tables match the command.
#[derive(Debug)]
pub struct Drawn {
    /// The SCHEDULE argument.
    pub name: String,
    /// Its plan.
    pub plan: ValidPlan,
    /// The plan simulated.
    pub run: Run,
}

/// Simulates `plan`, the SCHEDULE argument `name`'s, under `costing`; fails, with the reason,
/// when the costs cannot take the plan or a figure is not a finite number.
pub(crate) fn draw(name: &str, plan: &ValidPlan, costing: &Costing) -> Result<Drawn, String> {
    let run = costing.run(plan).map_err(|d| {
        d.into_iter()
            .map(|d| d.message)
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let sim = Simulation::new(name, plan, &run.timeline, None);
    if let Some((path, x)) = pipeweave_eval::non_finite(&sim) {
        return Err(format!(
            "the figure `{path}` came out as {x}, not a finite number; an input is too large or \
             too small for pipeweave to compute with"
        ));
    }
    // on a spec the plan is drawn with the layers (and recomputation) of each of its parts
    let plan = match &run.report {
        Some(report) => with_parts_of(plan, report),
        None => plan.clone(),
    };
    Ok(Drawn {
        name: name.to_owned(),
        plan,
        run,
    })
}

/// A window of time to draw (units, or seconds on a spec).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TimeWindow {
    /// Start the timelines here; they are drawn larger.
    pub from: Option<f64>,
    /// End them here.
    pub to: Option<f64>,
}

/// The window of the drawing: its start must fall inside the longest of the runs' steps.
pub(crate) fn window(
    session: &Session<'_>,
    window: &TimeWindow,
    drawn: &[Drawn],
    unit: TimeUnit,
) -> Result<SvgWindow, Failure> {
    let longest = drawn
        .iter()
        .map(|d| d.run.timeline.timing.makespan)
        .fold(0.0f64, f64::max);
    if let Some(from) = window.from.filter(|f| *f >= longest) {
        let ends = if drawn.len() > 1 {
            "the longest step ends"
        } else {
            "the step ends"
        };
        return Err(Failure::usage(format!(
            "{}: {ends} at {}",
            session.front.given(Flag::From, from),
            unit.format(longest)
        )));
    }
    Ok(SvgWindow {
        from: window.from,
        to: window.to,
    })
}

/// The SVG of the runs' timelines, stacked on one time scale, in `window`.
pub(crate) fn timelines(
    drawn: &[Drawn],
    unit: TimeUnit,
    comms: bool,
    id: &str,
    window: &SvgWindow,
) -> String {
    let charts: Vec<TimelineChart> = drawn
        .iter()
        .map(|d| TimelineChart {
            title: format!("{} ({})", d.name, shape_text(&Shape::of(&d.plan))),
            plan: &d.plan,
            timeline: &d.run.timeline,
            transfers: comms.then(|| transfers(&d.plan, &d.run.timeline, d.run.costs.as_ref())),
        })
        .collect();
    timelines_svg_window(&charts, unit, id, window)
}

/// What `render` draws.
#[derive(Debug, Clone, Default)]
pub struct RenderRequest {
    /// The schedules, one chart each, in this order.
    pub schedules: Vec<String>,
    /// P, M, `v` and `--set` for every schedule that takes them.
    pub params: Params,
    /// The costs (unit costs by default).
    pub costs: CostsArg,
    /// A lane under every rank with its point-to-point sends.
    pub comms: bool,
    /// The window of time drawn.
    pub window: TimeWindow,
}

/// The drawing and what each chart shows.
#[derive(Debug)]
pub struct Rendered {
    /// The SVG.
    pub svg: String,
    /// The schedules drawn, in order.
    pub drawn: Vec<Drawn>,
    /// The unit of their times.
    pub unit: TimeUnit,
}

/// `pipeweave render`: every schedule of `request` built, simulated and drawn; the first that
/// cannot be built or simulated stops it.
pub fn render(session: &mut Session<'_>, request: &RenderRequest) -> Result<Rendered, Failure> {
    check_window(session, request.window.from, request.window.to)?;
    let costing = session.costing(&request.costs)?;
    let many = Many::resolve(session, &request.schedules, &request.params, None)?;
    let built = many.build_all(&many.shape(&costing)?, session)?;
    let mut drawn: Vec<Drawn> = Vec::with_capacity(built.len());
    for (member, built) in many.members.iter().zip(built) {
        let name = member.name();
        let d = draw(name, &built?.plan, &costing)
            .map_err(|reason| Failure::invalid(format!("{name}: {reason}")))?;
        session.tell_derived(&costing, name, &d.run.derived);
        drawn.push(d);
    }
    let window = window(session, &request.window, &drawn, costing.unit())?;
    let svg = timelines(&drawn, costing.unit(), request.comms, "timelines", &window);
    Ok(Rendered {
        svg,
        drawn,
        unit: costing.unit(),
    })
}
