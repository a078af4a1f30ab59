//! Views of plans and timelines for people: the text timeline, SVG timelines, sweeps (tables and
//! line charts) and the self-contained HTML report.
//!
//! Pure functions from values to strings; the command line decides where they go.

mod html;
mod svg;
mod sweep;
mod text;

pub use html::{Block, HtmlReport, Section, html_page};
pub use svg::{TimeUnit, TimelineChart, Transfer, timelines_svg, transfers};
pub use sweep::{
    Metric, Sweep, SweepPoint, SweepSeries, sweep_csv, sweep_json, sweep_svg, sweep_text,
};
pub use text::{format_time, text_timeline};
