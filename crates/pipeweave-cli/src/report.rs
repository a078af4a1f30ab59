//! `pipeweave report`: one self-contained HTML page about several schedules: `compare`'s tables,
//! their timelines on one time scale, and a sweep chart with its table.
//!
//! With `--spec`, everything is on that spec. Without it, the comparison is `compare`'s on the
//! built-in default spec (with the unit-cost makespan beside), and the timelines and the sweep use
//! unit costs, as `render` and `sweep` do.

use crate::Failure;
use crate::compare::{Common, comparison, reason};
use crate::draw::{Costing, ManyArgs, Run, run, timelines};
use crate::render::Sources;
use crate::specs;
use crate::sweep::{Over, Param, parse_over, sweep};
use pipeweave_eval::{Comparison, Metric};
use pipeweave_report::{
    Block, HtmlReport, Section, Table, compare_notes, compare_title, figures_table, html_page,
    sweep_svg, sweep_table, traits_table,
};

/// What the page holds beyond the schedules themselves.
#[derive(Debug)]
pub struct Options {
    /// `--over`; `None`: micro-batches from P to 16P.
    pub over: Option<String>,
    pub metric: Metric,
    pub comms: bool,
}

/// The default sweep: multiples of P that show the bubble shrinking and the requirements (M ≥ 2P
/// and the like) failing at the low end.
fn default_over(ranks: u32) -> Over {
    let values = [1u32, 2, 3, 4, 6, 8, 12, 16]
        .iter()
        .filter_map(|k| k.checked_mul(ranks))
        .collect();
    Over {
        param: Param::Microbatches,
        values,
    }
}

/// Builds the page. Schedules that cannot be built or run are listed with the reason; the page
/// fails only when none of them runs.
pub fn report(
    many: &ManyArgs,
    options: &Options,
    sources: &mut Sources,
) -> Result<String, Failure> {
    let over = options.over.as_deref().map(parse_over).transpose()?;
    let costing = Costing::from_arg(many.spec.as_deref(), sources)?;
    let costing = &costing;
    let schedules = many.schedules()?;
    let mut runs: Vec<Run> = Vec::new();
    let mut rejected: Vec<String> = Vec::new();
    for schedule in &schedules {
        match run(
            &many.plan_args(schedule, costing, None, None),
            costing,
            sources,
        ) {
            Ok(r) => runs.push(r),
            Err(f @ Failure::Usage(_)) => return Err(f),
            Err(f) => rejected.push(format!("{}: {}", schedule.name, reason(&f))),
        }
    }
    if runs.is_empty() {
        return Err(Failure::Invalid(format!(
            "error: no schedule could be simulated\n{}",
            rejected
                .iter()
                .map(|r| format!("  {r}\n"))
                .collect::<String>()
        )));
    }
    let unit = costing.unit();
    let mut sections = Vec::new();

    let compared = compare(many, costing, sources)?;
    sections.push(Section {
        id: "comparison".into(),
        heading: "Comparison".into(),
        blocks: comparison_blocks(&compared),
    });

    let mut timeline_blocks = vec![Block::Figure {
        svg: timelines(&runs, unit, options.comms, "timelines"),
        caption: format!(
            "One row per rank on a shared time axis ({}); cells are labelled with the \
             micro-batch (numbered within its pipeline); grey is idle time. Hover a cell for its \
             action and times.",
            costing.describe()
        ),
    }];
    if !rejected.is_empty() {
        timeline_blocks.push(Block::Paragraph("Not drawn:".into()));
        timeline_blocks.push(Block::List(rejected));
    }
    sections.push(Section {
        id: "timelines".into(),
        heading: "Timelines".into(),
        blocks: timeline_blocks,
    });

    let over = over.or_else(|| Some(default_over(compared.ranks)));
    let sweep_blocks = match over {
        None => vec![Block::Paragraph("no sweep".into())],
        Some(over) => match sweep(many, &over, options.metric, costing, sources) {
            Ok(result) => {
                let table = sweep_table(&result);
                let mut blocks = vec![
                    Block::Figure {
                        svg: sweep_svg(&result),
                        caption: format!(
                            "{} against {}; a gap is a value the schedule cannot take (see \
                             the notes under the table).",
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
            Err(f) => vec![Block::Paragraph(format!("no sweep: {}", reason(&f)))],
        },
    };
    sections.push(Section {
        id: "sweep".into(),
        heading: "Sweep".into(),
        blocks: sweep_blocks,
    });

    let names: Vec<&str> = many.schedules.iter().map(String::as_str).collect();
    let page = HtmlReport {
        title: format!("pipeweave report: {}", names.join(", ")),
        intro: vec![
            compare_title(&compared),
            format!("timelines and sweep: {}", costing.describe()),
        ],
        sections,
        footer: format!("generated by pipeweave {}", env!("CARGO_PKG_VERSION")),
    };
    Ok(html_page(&page))
}

/// `compare`'s comparison of the schedules: on `--spec`, else on the built-in default spec with
/// the unit-cost makespan beside; P and M from the command line, else the spec's.
fn compare(
    many: &ManyArgs,
    costing: &Costing,
    sources: &mut Sources,
) -> Result<Comparison, Failure> {
    let (spec, units) = match costing {
        Costing::Spec(spec) => (spec.as_ref().clone(), false),
        Costing::Unit => (specs::load_or_default(None, sources)?, true),
    };
    let common = Common::new(&many.params, &spec.spec);
    comparison(&many.schedules, &common, &spec, units, sources)
}

fn table(t: Table) -> Block {
    Block::Table {
        caption: Some(t.caption),
        header: t.header,
        rows: t.rows,
    }
}

/// The comparison as blocks: the figures, the traits, and the notes (rows that could not run,
/// how the spec was adapted).
fn comparison_blocks(c: &Comparison) -> Vec<Block> {
    let mut blocks = vec![table(figures_table(c)), table(traits_table(c))];
    let notes = compare_notes(c);
    if !notes.is_empty() {
        blocks.push(Block::List(notes));
    }
    blocks
}
