//! Views of plans, timelines and analyses for people: the text timeline, a simulated step,
//! comparisons of schedules on a spec, recommendations, SVG timelines, sweeps (tables and line
//! charts) and the self-contained HTML report, as text, Markdown, CSV, JSON, SVG and HTML.
//!
//! Pure functions from values to strings: the figures come from `pipeweave-eval`, the command line
//! decides where the text goes. [`format`](mod@format) holds the one rule per quantity that every view uses.

#![warn(missing_docs)]

mod compare;
mod diff;
pub mod format;
mod hardware;
mod html;
mod json;
mod listing;
mod recommend;
mod shown;
mod simulate;
mod svg;
mod sweep;
mod synthesis;
mod table;
mod text;

pub use compare::{
    breakdown_table, compare_csv, compare_json, compare_markdown, compare_notes, compare_text,
    compare_title, figures_table, memory_table, tables as compare_tables, traits_table,
    volume_table,
};
pub use diff::diff_text;
pub use format::{
    TimeFormat, format_time, gib, gib_number, gib_text, gpu_hours, percent, seconds, si,
};
pub use hardware::hardware_markdown;
pub use html::{Block, HtmlReport, Section, html_page};
pub use json::json;
pub use listing::{check_text, listing_text, validated_text};
pub use pipeweave_eval::TimeUnit;
pub use recommend::{
    candidate_label, recommend_json, recommend_markdown, recommend_measured_json,
    recommend_measured_markdown, recommend_measured_text, recommend_text, split_table,
};
pub use simulate::{
    costing_text, measured_text, shape_text, simulation_json, simulation_text, step_report_text,
};
pub use svg::{
    SvgWindow, TimelineChart, Transfer, plan_vs_actual_svg, timelines_svg, timelines_svg_window,
    transfers,
};
pub use sweep::{
    SweepTable, sweep_csv, sweep_json, sweep_svg, sweep_table, sweep_text, sweep_title,
};
pub use synthesis::{synthesis_json, synthesis_text};
pub use table::Table;
pub use text::{TextWindow, text_timeline, text_timeline_window};
