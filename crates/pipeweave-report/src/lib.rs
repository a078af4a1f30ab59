//! Views of plans and timelines for people: the text timeline (and, later, comparisons, SVG, HTML).
//!
//! Pure functions from values to strings; the command line decides where they go.

mod text;

pub use text::{format_time, text_timeline};
