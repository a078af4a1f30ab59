//! Views of plans and timelines for people: the text timeline, comparisons of schedules on a spec,
//! SVG timelines, sweeps (tables and line charts) and the self-contained HTML report.
//!
//! Pure functions from values to strings; the command line decides where they go.

mod compare;
mod html;
mod recommend;
mod svg;
mod sweep;
mod text;

pub use compare::{
    Comparison, Figures, Row, Table, Traits, compare_csv, compare_json, compare_markdown,
    compare_notes, compare_text, evaluate_row, figures_table, fit_spec, seconds, si, split_layers,
    traits_table,
};
pub use html::{Block, HtmlReport, Section, html_page};
pub use recommend::{
    Candidate, Planner, Recommendation, SearchSchedule, Verdict, recommend, recommend_text,
};
pub use svg::{TimeUnit, TimelineChart, Transfer, timelines_svg, transfers};
pub use sweep::{
    Metric, Sweep, SweepPoint, SweepSeries, SweepTable, sweep_csv, sweep_json, sweep_svg,
    sweep_table, sweep_text,
};
pub use text::{format_time, text_timeline};
