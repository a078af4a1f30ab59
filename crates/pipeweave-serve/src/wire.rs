//! The page's requests and the server's answers as JSON: explicit mirrors of the application
//! layer's requests and results (the core types are not serializable by design). Every request
//! refuses a field it does not know, so a misspelt control (or a `path` on a save) is an error,
//! never ignored.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the page asks a plan to be built with: the editor's text and the controls.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlanControls {
    /// The editor's text.
    pub text: String,
    /// P.
    pub ranks: Option<u32>,
    /// M.
    pub microbatches: Option<u32>,
    /// `-v`.
    #[serde(default)]
    pub stages_per_rank: Option<u32>,
    /// `--set NAME=VALUE`, by name (values as written).
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// `--costs` (empty: unit costs).
    #[serde(default)]
    pub costs: String,
    /// `--spec` by a shipped spec's name (empty: none).
    #[serde(default)]
    pub spec: String,
    /// `--forward-only`.
    #[serde(default)]
    pub forward_only: bool,
}

/// `POST /api/build`: the plan drawn, and compared with library schedules.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BuildRequest {
    /// The text and the controls.
    pub plan: PlanControls,
    /// Library schedules to compare with (none: no comparison).
    #[serde(default)]
    pub compare: Vec<String>,
}

/// `POST /api/export`: the plan in one of the export formats.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExportRequest {
    /// The text and the controls.
    pub plan: PlanControls,
    /// The format, as `pipeweave export --to` names it.
    pub format: String,
}

/// `POST /api/save`: the editor's text, written over the opened file. It names no file: the
/// server writes only the one it was opened with.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SaveRequest {
    /// The text to write.
    pub text: String,
}

/// A place in the editor's text, in UTF-16 code units (what the browser's strings count).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Place {
    /// Where it starts.
    pub from: usize,
    /// Where it ends.
    pub to: usize,
}

/// A secondary label of a diagnostic in the editor's text.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PlacedLabel {
    /// Where.
    #[serde(flatten)]
    pub place: Place,
    /// What it says.
    pub message: String,
}

/// A diagnostic as the editor shows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WireDiagnostic {
    /// `error`, `warning` or `note`.
    pub severity: &'static str,
    /// The message.
    pub message: String,
    /// Its place in the editor's text (none: elsewhere, or no place).
    pub place: Option<Place>,
    /// The label at its place.
    pub label: Option<String>,
    /// Other places in the editor's text.
    pub labels: Vec<PlacedLabel>,
    /// Notes.
    pub notes: Vec<String>,
    /// How to fix it.
    pub help: Option<String>,
}

/// A declared parameter, typed as `list` shows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WireParam {
    /// The name `--set` takes.
    pub name: String,
    /// `bool`, `int` or `choice`.
    pub kind: &'static str,
    /// The type as the file declares it (`int in 0..=4`).
    pub declared: String,
    /// An int's least value.
    pub min: Option<i64>,
    /// An int's largest value.
    pub max: Option<i64>,
    /// An int's step.
    pub step: Option<i64>,
    /// A choice's options.
    pub options: Vec<String>,
    /// The default as written (a value or an expression).
    pub default: Option<String>,
    /// What it does.
    pub help: Option<String>,
}

/// A table of text cells.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WireTable {
    /// What it shows.
    pub caption: String,
    /// Column names.
    pub header: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
}

/// The step's headline figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    /// The makespan, formatted with its unit.
    pub makespan: String,
    /// The bubble fraction, as a percentage.
    pub bubble: String,
    /// The plan's shape in words.
    pub shape: String,
}

/// The answer to a build.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct BuildResponse {
    /// Whether the plan was built, validated and drawn.
    pub ok: bool,
    /// The diagnostics, placed in the editor's text where they point into it.
    pub diagnostics: Vec<WireDiagnostic>,
    /// The diagnostics as the command line renders them.
    pub rendered: String,
    /// What the text declares (even when it does not compile): its parameters.
    pub params: Vec<WireParam>,
    /// Its description.
    pub description: Option<String>,
    /// Its requirements, in words.
    pub requires: Vec<String>,
    /// The timeline.
    pub svg: Option<String>,
    /// The headline figures.
    pub summary: Option<Summary>,
    /// The comparison's tables.
    pub comparison: Vec<WireTable>,
    /// The comparison's notes, or why it could not be made.
    pub comparison_notes: Vec<String>,
    /// How long the server worked on it, in milliseconds.
    pub took_ms: f64,
}

/// A library schedule the page offers as an example.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Example {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its text.
    pub text: String,
}

/// An export format the page offers.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WireFormat {
    /// The name `pipeweave export --to` takes.
    pub id: &'static str,
    /// What it is.
    pub label: &'static str,
}

/// `GET /api/session`: what the page starts with.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SessionInfo {
    /// The opened file's name (none: a scratch text, not saved).
    pub file: Option<String>,
    /// The text to start with.
    pub text: String,
    /// The library's schedules.
    pub examples: Vec<Example>,
    /// The shipped specs' names.
    pub specs: Vec<String>,
    /// The export formats.
    pub formats: Vec<WireFormat>,
    /// The largest request body, in bytes.
    pub max_body: usize,
}

/// The answer to a save.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Saved {
    /// The file written.
    pub file: String,
    /// Its size in bytes.
    pub bytes: usize,
}

/// An error answered to the page.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WireError {
    /// What went wrong and what to change.
    pub error: String,
}
