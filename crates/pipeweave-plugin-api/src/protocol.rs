//! The versioned byte protocol spoken over the ABI: metadata, requests and responses as small,
//! line-based UTF-8 text messages.
//!
//! # Format (version 2)
//!
//! Every message is UTF-8 text made of lines separated by `\n`:
//!
//! ```text
//! pipeweave-plugin-protocol 2      magic and protocol version
//! <kind>                           metadata | request | plan | error
//! <key> <value>                    zero or more fields, in the order listed below
//! end                              nothing may follow except one final newline
//! ```
//!
//! Text values (names, descriptions, messages) escape `\` as `\\`, a newline as `\n` and a carriage
//! return as `\r`, so every field stays on one line. A message holds no other control character,
//! and only an `error` message's text may hold line ends (`\n`): names, the version, the description,
//! the requirements and a parameter's help are shown on one line (a control character in them
//! would reach the terminal). Numbers are unsigned decimal except parameter values of type `int`,
//! which may be negative.
//!
//! - `metadata`: `name <text>`, `version <text>`, `description <text>`, `requires <text>` (the
//!   schedule's requirements in plain words; may be empty), then per parameter
//!   `param <name> bool <true|false>`, `param <name> int <default> [min=<n>] [max=<n>]
//!   [multiple_of=<n>]` or `param <name> choice <default> options=<a,b,...>`, each optionally
//!   followed by `param-help <text>`. The types are `pipeweave-param`'s, the same as a `.weave`
//!   schedule's; option names are letters, digits and `_`, never `true` or `false`.
//! - `request`: `ranks <n>`, `microbatches <n>`, then `set <name> <value>` per parameter; a value is
//!   `true`/`false`, a whole number or an option name, so its spelling says its type.
//! - `plan`: `ranks <n>`, then per pipeline `pipeline placement=<r,r,...> microbatches=<m,m,...>`
//!   (position `q` of the placement list is the rank hosting stage `q`), then exactly one
//!   `program <cells>` line per rank in rank order, cells in the actions format
//!   (`3F0`, `7I4`, `(0F3;7B5)OVERLAP_F_B`: global stage, kind, global micro-batch), comma
//!   separated, no empty cells. Micro-batch ids are at most `pipeweave_plan::MAX_MICROBATCH_ID`,
//!   as in every plan file.
//! - `error`: `message <text>`, the reason the plugin could not build a plan, in plain words.
//!
//! Versions: version 2 added `choice` parameters (and option values in requests); everything else
//! is version 1's. Both are read. Every message is written in the oldest version that can carry it
//! (version 1 unless it holds a choice), so a plugin built against version 1 still reads every
//! request it can be sent (a version 1 plugin declares no choice), and a version 1 host still reads
//! a newer plugin that declares none.
//!
//! Unknown kinds and keys are errors: a newer message is refused instead of half read. The codec
//! converts explicitly to and from the core types; nothing in `pipeweave-plan` is serializable.

mod decode;
mod encode;
mod params;

pub use decode::{decode_metadata, decode_request, decode_response};
pub use encode::{encode_metadata, encode_request, encode_response};
pub use params::ParamSpec;
pub use pipeweave_param::{IntRange, ParamType, Value};

use pipeweave_plan::{Action, Pipeline, Plan, PlanError};
use std::fmt;

/// The newest version of the message format this crate reads and writes (on the first line of
/// every message).
pub const PROTOCOL_VERSION: u32 = 2;

/// The oldest version it still reads.
pub const OLDEST_PROTOCOL_VERSION: u32 = 1;

/// The first word of every message.
pub const MAGIC: &str = "pipeweave-plugin-protocol";

/// What a plugin says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    /// The schedule name users type (`dualpipe`).
    pub name: String,
    /// The plugin's own version.
    pub version: String,
    /// One line saying what the schedule is.
    pub description: String,
    /// The requirements on ranks and micro-batches in plain words (may be empty).
    pub requires: String,
    /// The parameters users set with `--set NAME=VALUE`.
    pub params: Vec<ParamSpec>,
}

impl Metadata {
    /// The declared parameter called `name`, if any.
    pub fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }
}

/// What the host asks a plugin to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// P: the number of ranks.
    pub ranks: u32,
    /// M: micro-batches per step, over all pipelines.
    pub microbatches: u32,
    /// One value per declared parameter (the host fills in defaults), in declaration order.
    pub params: Vec<(String, Value)>,
}

impl Request {
    /// The value the request carries for `name`, if any.
    pub fn value(&self, name: &str) -> Option<&Value> {
        self.params.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The value of a `bool` parameter, or `default` when the request does not carry it.
    pub fn bool_or(&self, name: &str, default: bool) -> Result<bool, String> {
        match self.value(name) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(ParamType::Bool.error(name, v).to_string()),
        }
    }

    /// The value of an `int` parameter, or `default` when the request does not carry it.
    pub fn int_or(&self, name: &str, default: i64) -> Result<i64, String> {
        match self.value(name) {
            None => Ok(default),
            Some(Value::Int(n)) => Ok(*n),
            Some(v) => Err(ParamType::int().error(name, v).to_string()),
        }
    }

    /// The value of a `choice` parameter, or `default` when the request does not carry it.
    pub fn choice_or<'a>(&'a self, name: &str, default: &'a str) -> Result<&'a str, String> {
        match self.value(name) {
            None => Ok(default),
            Some(Value::Choice(option)) => Ok(option),
            Some(v) => Err(format!("parameter `{name}` is a choice, not `{v}`")),
        }
    }
}

/// A plan as it travels: the same content as a [`Plan`], before its structure is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanMessage {
    /// The number of ranks.
    pub ranks: u32,
    /// The pipelines with their placement and micro-batches.
    pub pipelines: Vec<Pipeline>,
    /// Every rank's program, in rank order.
    pub programs: Vec<Vec<Action>>,
}

impl PlanMessage {
    /// The message carrying `plan`.
    pub fn from_plan(plan: &Plan) -> PlanMessage {
        PlanMessage {
            ranks: plan.ranks(),
            pipelines: plan.pipelines().to_vec(),
            programs: plan.programs().to_vec(),
        }
    }

    /// Builds the plan, checking its structure (not its programs).
    pub fn into_plan(self) -> Result<Plan, PlanError> {
        Plan::new(self.ranks, self.pipelines, self.programs)
    }
}

/// A plugin's answer to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// The plan built for the request.
    Plan(PlanMessage),
    /// The plugin refused, in plain words (e.g. an unmet requirement).
    Error(String),
}

/// Why a message could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// 1-based line number (0 when the message is not text at all).
    pub line: usize,
    /// What is wrong, lowercase without a trailing period.
    pub message: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for DecodeError {}
