//! `pipeweave report` (and Python's `report`): one self-contained HTML page about several
//! schedules: `compare`'s tables, their timelines on one time scale, and a sweep chart with its
//! table.
//!
//! With a spec, everything is on that spec. Without one, the comparison is `compare`'s on the
//! built-in default spec (with the unit-cost makespan beside), and the timelines and the sweep use
//! unit costs or uniform costs, as `render` and `sweep` do. Each schedule is built once for the
//! comparison and the timelines.

use crate::draw::{Drawn, TimeWindow, draw, timelines, window};
use crate::finished::finished;
use crate::many::{CompareOn, Many};
use crate::over::OverArg;
use crate::request::CostsArg;
use crate::session::Session;
use crate::single::check_window;
use crate::sweep::{run as run_sweep, typed};
use pipeweave_eval::{Comparison, Costing, Metric, Over, Param};
use pipeweave_param::Value;
use pipeweave_report::{
    Block, HtmlReport, Section, SvgWindow, Table, compare_notes, compare_tables, compare_title,
    costing_text, html_page, sweep_svg, sweep_table,
};
use pipeweave_source::{Failure, Params};

/// What the page is about.
#[derive(Debug, Clone)]
pub struct ReportRequest {
    /// The schedules.
    pub schedules: Vec<String>,
    /// P, M, `v` and `--set` for every schedule that takes them.
    pub params: Params,
    /// The costs (without a spec, the comparison is on the built-in default spec).
    pub costs: CostsArg,
    /// The sweep to chart; `None`: micro-batches from P to 16P.
    pub over: Option<OverArg>,
    /// What the sweep measures.
    pub metric: Metric,
    /// Communication lanes in the timelines.
    pub comms: bool,
    /// The window of time the timelines show.
    pub window: TimeWindow,
}

/// The default sweep: multiples of P that show the bubble shrinking and the requirements (M ≥ 2P
/// and the like) failing at the low end.
fn default_over(ranks: u32) -> Over {
    let values = [1u32, 2, 3, 4, 6, 8, 12, 16]
        .iter()
        .filter_map(|k| k.checked_mul(ranks))
        .map(|m| Value::Int(i64::from(m)))
        .collect();
    Over {
        param: Param::Microbatches,
        values,
    }
}

fn table(t: Table) -> Block {
    Block::Table {
        caption: Some(t.caption),
        header: t.header,
        rows: t.rows,
    }
}

/// The comparison as blocks: the figures, where the step goes, memory, bytes sent, the traits,
/// and the notes (rows that could not run, how the spec was adapted).
fn comparison_blocks(c: &Comparison) -> Vec<Block> {
    let mut blocks: Vec<Block> = compare_tables(c).into_iter().map(table).collect();
    let notes = compare_notes(c);
    if !notes.is_empty() {
        blocks.push(Block::List(notes));
    }
    blocks
}

/// The timelines drawn, and the schedules not drawn with the reason.
fn timeline_blocks(
    drawn: &[Drawn],
    rejected: Vec<String>,
    comms: bool,
    costing: &Costing,
    window: &SvgWindow,
) -> Vec<Block> {
    let mut blocks = vec![Block::Figure {
        svg: timelines(drawn, costing.unit(), comms, "timelines", window),
        zoom: true,
        caption: format!(
            "One row per rank on a shared time axis ({}); cells are coloured by kind, shaded by \
             chunk or pipeline as the legend says, and labelled with the micro-batch (numbered \
             within its pipeline); grey is idle time; a chart too dense to label is drawn in \
             bands. The figure fits the page; the zoom above it enlarges it. Hover a cell for \
             its action and times.",
            costing_text(costing)
        ),
    }];
    if !rejected.is_empty() {
        blocks.push(Block::Paragraph("Not drawn:".into()));
        blocks.push(Block::List(rejected));
    }
    blocks
}

/// The sweep's chart, its table and its notes, or why there is no sweep.
fn sweep_blocks(
    session: &mut Session<'_>,
    many: &Many,
    over: &Over,
    metric: Metric,
    costing: &Costing,
) -> Vec<Block> {
    let result = match run_sweep(session, many, over, metric, costing) {
        Ok(result) => result,
        Err(f) => return vec![Block::Paragraph(format!("no sweep: {}", f.reason()))],
    };
    if let Some((path, x)) = pipeweave_eval::non_finite(&result.series) {
        return vec![Block::Paragraph(format!(
            "no sweep: the figure `{path}` came out as {x}, not a finite number"
        ))];
    }
    let table = sweep_table(&result);
    let mut blocks = vec![
        Block::Figure {
            svg: sweep_svg(&result),
            zoom: false,
            caption: format!(
                "{} against {}; a gap is a value the schedule cannot take (see the notes under \
                 the table).",
                result.metric.name(),
                result.parameter
            ),
        },
        Block::Table {
            caption: None,
            header: table.header,
            rows: table.rows,
        },
    ];
    if !table.notes.is_empty() {
        blocks.push(Block::List(table.notes));
    }
    blocks
}

/// `pipeweave report`: the page. Schedules that cannot be built or run are listed with the
/// reason; the page fails only when none of them runs.
pub fn report(session: &mut Session<'_>, request: &ReportRequest) -> Result<String, Failure> {
    check_window(session, request.window.from, request.window.to)?;
    let costing = session.costing(&request.costs)?;
    let many = Many::resolve(session, &request.schedules, &request.params, None)?;
    let over = request.over.as_ref().map(|o| typed(&many, o)).transpose()?;
    let shape = many.shape(&costing)?;
    let built = many.build_all(&shape, session)?;
    let mut drawn: Vec<Drawn> = Vec::new();
    let mut rejected: Vec<String> = Vec::new();
    for (member, b) in many.members.iter().zip(&built) {
        let name = member.name();
        let d = b
            .as_ref()
            .map_err(|f| member.failure_reason(f, &session.files))
            .and_then(|b| draw(name, &b.plan, &costing));
        match d {
            Ok(d) => {
                session.tell_derived(&costing, name, &d.run.derived);
                drawn.push(d);
            }
            Err(reason) => rejected.push(format!("{name}: {reason}")),
        }
    }
    if drawn.is_empty() {
        let mut message = "no schedule could be simulated".to_owned();
        for r in &rejected {
            message.push_str(&format!("\n  {r}"));
        }
        return Err(Failure::invalid(message));
    }
    let window = window(session, &request.window, &drawn, costing.unit())?;

    // On a spec, the comparison is on it; otherwise on the built-in default with the makespans
    // of the timelines' costs.
    let (spec, default, rule, units) = match &costing {
        Costing::Spec {
            spec,
            default,
            rule,
        } => (spec.as_ref().clone(), *default, rule.clone(), None),
        // Measured costs time the timelines; the comparison is on the built-in default spec.
        Costing::Measured { .. } => {
            let loaded = session.spec(None)?;
            (loaded.spec, loaded.default, Default::default(), None)
        }
        Costing::Unit | Costing::Uniform(_) => {
            let loaded = session.spec(None)?;
            let units = match &costing {
                Costing::Uniform(costs) => *costs,
                _ => pipeweave_sim::UniformCosts::default(),
            };
            (loaded.spec, loaded.default, Default::default(), Some(units))
        }
    };
    let on = CompareOn {
        spec: &spec,
        default,
        rule,
        units,
        measured: None,
    };
    // The plans built for the timelines serve the comparison when it has the same P and M.
    let compared = many.compare(&on, &many.given(), Some((&shape, &built[..])), session)?;
    let compared = finished("report", compared)?;

    let over = over.unwrap_or_else(|| default_over(compared.ranks));
    let sections = vec![
        Section {
            id: "comparison".into(),
            heading: "Comparison".into(),
            blocks: comparison_blocks(&compared),
        },
        Section {
            id: "timelines".into(),
            heading: "Timelines".into(),
            blocks: timeline_blocks(&drawn, rejected, request.comms, &costing, &window),
        },
        Section {
            id: "sweep".into(),
            heading: "Sweep".into(),
            blocks: sweep_blocks(session, &many, &over, request.metric, &costing),
        },
    ];
    let page = HtmlReport {
        title: format!("pipeweave report: {}", request.schedules.join(", ")),
        intro: vec![
            compare_title(&compared),
            format!("timelines and sweep: {}", costing_text(&costing)),
        ],
        sections,
        footer: format!("generated by pipeweave {}", env!("CARGO_PKG_VERSION")),
    };
    Ok(html_page(&page))
}
