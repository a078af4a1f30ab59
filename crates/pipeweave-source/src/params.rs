//! The parameters a schedule is built with: P, M, stages per rank, `NAME=VALUE` settings, and how
//! to read a plan file (its form, the pipelines of an actions file), and whether the step is an
//! evaluation (forwards only).

use pipeweave_export::PlanFormat;
use std::fmt;
use std::str::FromStr;

/// One `NAME=VALUE` setting of a schedule parameter. The value stays text until the schedule that
/// declares the name reads it by its type (`Declared::read_settings`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The parameter's name.
    pub name: String,
    /// The value as written.
    pub value: String,
}

/// A setting that is not `NAME=VALUE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingError(String);

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--set expects NAME=VALUE, found `{}`", self.0)
    }
}

impl std::error::Error for SettingError {}

impl FromStr for Setting {
    type Err = SettingError;

    fn from_str(text: &str) -> Result<Setting, SettingError> {
        let Some((name, value)) = text.split_once('=') else {
            return Err(SettingError(text.to_owned()));
        };
        Ok(Setting {
            name: name.trim().to_owned(),
            value: value.trim().to_owned(),
        })
    }
}

/// What a schedule is built with; a plan file takes only `format` and `pipelines`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    /// Ranks P.
    pub ranks: Option<u32>,
    /// Micro-batches M.
    pub microbatches: Option<u32>,
    /// Stages per rank `v`, for schedules that declare it.
    pub stages_per_rank: Option<u32>,
    /// Other parameters, by name.
    pub settings: Vec<Setting>,
    /// Pipelines of an actions file (its stages split into this many of equal length); `None`: as
    /// many as its micro-batches show.
    pub pipelines: Option<u32>,
    /// The form of a plan file; `None`: `.json` files are JSON plans, others are told apart by
    /// their text ([`PlanFormat::detect`]).
    pub format: Option<PlanFormat>,
    /// Build the evaluation form of the plan (`Plan::forward_only`): every source's plan, built and
    /// validated as given, then with its backwards dropped, as DeepSeek's step under no grad runs.
    pub forward_only: bool,
}

impl Params {
    /// Whether any parameter of a schedule (not a plan file) is given.
    pub fn shapes_a_schedule(&self) -> bool {
        self.ranks.is_some()
            || self.microbatches.is_some()
            || self.stages_per_rank.is_some()
            || !self.settings.is_empty()
    }
}
