//! The versioned byte protocol spoken over the ABI: metadata, requests and responses as small,
//! line-based UTF-8 text messages.
//!
//! # Format (version 1)
//!
//! Every message is UTF-8 text made of lines separated by `\n`:
//!
//! ```text
//! pipeweave-plugin-protocol 1      magic and protocol version
//! <kind>                           metadata | request | plan | error
//! <key> <value>                    zero or more fields, in the order listed below
//! end                              nothing may follow except one final newline
//! ```
//!
//! Text values (names, descriptions, messages) escape `\` as `\\`, a newline as `\n` and a carriage
//! return as `\r`, so every field stays on one line. Numbers are unsigned decimal except parameter
//! values of kind `int`, which may be negative.
//!
//! - `metadata`: `name <text>`, `version <text>`, `description <text>`, `requires <text>` (the
//!   schedule's requirements in plain words; may be empty), then per parameter
//!   `param <name> bool <true|false>` or `param <name> int <default> [min=<n>] [max=<n>]
//!   [multiple_of=<n>]`, each optionally followed by `param-help <text>`.
//! - `request`: `ranks <n>`, `microbatches <n>`, then `set <name> <value>` per parameter.
//! - `plan`: `ranks <n>`, then per pipeline `pipeline placement=<r,r,...> microbatches=<m,m,...>`
//!   (position `q` of the placement list is the rank hosting stage `q`), then exactly one
//!   `program <cells>` line per rank in rank order, cells in the actions format
//!   (`3F0`, `7I4`, `(0F3;7B5)OVERLAP_F_B`: global stage, kind, global micro-batch), comma
//!   separated, no empty cells.
//! - `error`: `message <text>`, the reason the plugin could not build a plan, in plain words.
//!
//! Unknown kinds and keys are errors: a newer message is refused instead of half read. The codec
//! converts explicitly to and from the core types; nothing in `pipeweave-plan` is serializable.

mod decode;
mod encode;

pub use decode::{decode_metadata, decode_request, decode_response};
pub use encode::{encode_metadata, encode_request, encode_response};

use pipeweave_plan::{Action, Pipeline, Plan, PlanError};
use std::fmt;

/// The version of the message format, written on the first line of every message.
pub const PROTOCOL_VERSION: u32 = 1;

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

/// One parameter: its name, type, default and constraints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamSpec {
    /// The name, as `--set NAME=VALUE` takes it.
    pub name: String,
    /// One line saying what it changes (may be empty).
    pub help: String,
    /// Its type, default and constraints.
    pub kind: ParamKind,
}

/// The type of a parameter with its default and constraints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// `true` or `false`.
    Bool {
        /// The value when the user sets none.
        default: bool,
    },
    /// A whole number (64-bit, may be negative).
    Int {
        /// The value when the user sets none.
        default: i64,
        /// The least value allowed, if any.
        min: Option<i64>,
        /// The greatest value allowed, if any.
        max: Option<i64>,
        /// Values must be multiples of this, if set (0 allows any).
        multiple_of: Option<i64>,
    },
}

/// A parameter value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// The value of a `bool` parameter.
    Bool(bool),
    /// The value of an `int` parameter.
    Int(i64),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(n) => write!(f, "{n}"),
        }
    }
}

impl ParamSpec {
    /// A `bool` parameter `name` with its `default` and `help`.
    pub fn bool(name: &str, default: bool, help: &str) -> ParamSpec {
        ParamSpec {
            name: name.to_owned(),
            help: help.to_owned(),
            kind: ParamKind::Bool { default },
        }
    }

    /// An `int` parameter `name` with its `default` and `help`, unconstrained (see [`ParamSpec::constrained`]).
    pub fn int(name: &str, default: i64, help: &str) -> ParamSpec {
        ParamSpec {
            name: name.to_owned(),
            help: help.to_owned(),
            kind: ParamKind::Int {
                default,
                min: None,
                max: None,
                multiple_of: None,
            },
        }
    }

    /// Sets the bounds and step of an `int` parameter (no effect on a `bool`).
    pub fn constrained(
        mut self,
        min: Option<i64>,
        max: Option<i64>,
        multiple_of: Option<i64>,
    ) -> ParamSpec {
        if let ParamKind::Int { default, .. } = self.kind {
            self.kind = ParamKind::Int {
                default,
                min,
                max,
                multiple_of,
            };
        }
        self
    }

    /// The value when the user sets none.
    pub fn default_value(&self) -> Value {
        match self.kind {
            ParamKind::Bool { default } => Value::Bool(default),
            ParamKind::Int { default, .. } => Value::Int(default),
        }
    }

    /// The type name shown to users.
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            ParamKind::Bool { .. } => "bool",
            ParamKind::Int { .. } => "int",
        }
    }

    /// The constraints in words (`even, at least 2`), empty when there are none.
    pub fn constraint_text(&self) -> String {
        let ParamKind::Int {
            min,
            max,
            multiple_of,
            ..
        } = self.kind
        else {
            return String::new();
        };
        let mut parts = Vec::new();
        match multiple_of {
            Some(2) => parts.push("even".to_owned()),
            Some(k) if k > 1 => parts.push(format!("a multiple of {k}")),
            _ => {}
        }
        if let Some(lo) = min {
            parts.push(format!("at least {lo}"));
        }
        if let Some(hi) = max {
            parts.push(format!("at most {hi}"));
        }
        parts.join(", ")
    }

    /// Reads a value typed by a user (`true`, `false`, `4`) and checks it against the constraints.
    pub fn parse(&self, text: &str) -> Result<Value, String> {
        let value = match self.kind {
            ParamKind::Bool { .. } => match text {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => {
                    return Err(format!(
                        "parameter `{}` takes true or false, not `{text}`",
                        self.name
                    ));
                }
            },
            ParamKind::Int { .. } => match text.parse::<i64>() {
                Ok(n) => Value::Int(n),
                Err(_) => {
                    return Err(format!(
                        "parameter `{}` takes a whole number, not `{text}`",
                        self.name
                    ));
                }
            },
        };
        self.check(value)?;
        Ok(value)
    }

    /// Checks a value's type and constraints.
    pub fn check(&self, value: Value) -> Result<(), String> {
        match (self.kind, value) {
            (ParamKind::Bool { .. }, Value::Bool(_)) => Ok(()),
            (
                ParamKind::Int {
                    min,
                    max,
                    multiple_of,
                    ..
                },
                Value::Int(n),
            ) => {
                let ok = min.is_none_or(|lo| n >= lo)
                    && max.is_none_or(|hi| n <= hi)
                    && multiple_of.is_none_or(|k| k == 0 || n % k == 0);
                if ok {
                    Ok(())
                } else {
                    Err(format!(
                        "parameter `{}` must be {}, not {n}",
                        self.name,
                        self.constraint_text()
                    ))
                }
            }
            (_, value) => Err(format!(
                "parameter `{}` takes a {}, not `{value}`",
                self.name,
                self.type_name()
            )),
        }
    }
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
    pub fn value(&self, name: &str) -> Option<Value> {
        self.params.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }

    /// The value of a `bool` parameter, or `default` when the request does not carry it.
    pub fn bool_or(&self, name: &str, default: bool) -> Result<bool, String> {
        match self.value(name) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(b),
            Some(v) => Err(format!("parameter `{name}` takes true or false, not `{v}`")),
        }
    }

    /// The value of an `int` parameter, or `default` when the request does not carry it.
    pub fn int_or(&self, name: &str, default: i64) -> Result<i64, String> {
        match self.value(name) {
            None => Ok(default),
            Some(Value::Int(n)) => Ok(n),
            Some(v) => Err(format!(
                "parameter `{name}` takes a whole number, not `{v}`"
            )),
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
