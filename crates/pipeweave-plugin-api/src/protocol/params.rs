//! A plugin's parameters: the shared model of `pipeweave-param` (the same types, spellings and
//! errors as a `.weave` schedule's) with a default value and help; their `param` lines are written
//! in `encode.rs` and read in `decode.rs`.

use pipeweave_param::{IntRange, ParamType, Value};

/// One parameter: its name, type, default and help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamSpec {
    /// The name, as `--set NAME=VALUE` takes it.
    pub name: String,
    /// One line saying what it changes (may be empty).
    pub help: String,
    /// The type with its constraints.
    pub ty: ParamType,
    /// The value when the user sets none; one of the type's values.
    pub default: Value,
}

impl ParamSpec {
    /// A `bool` parameter.
    pub fn bool(name: &str, default: bool, help: &str) -> ParamSpec {
        ParamSpec {
            name: name.to_owned(),
            help: help.to_owned(),
            ty: ParamType::Bool,
            default: Value::Bool(default),
        }
    }

    /// An `int` parameter without constraints (see [`ParamSpec::constrained`]).
    pub fn int(name: &str, default: i64, help: &str) -> ParamSpec {
        ParamSpec {
            name: name.to_owned(),
            help: help.to_owned(),
            ty: ParamType::int(),
            default: Value::Int(default),
        }
    }

    /// A `choice` parameter: one of `options`, `default` when not set.
    pub fn choice(name: &str, options: &[&str], default: &str, help: &str) -> ParamSpec {
        ParamSpec {
            name: name.to_owned(),
            help: help.to_owned(),
            ty: ParamType::choice(options),
            default: Value::Choice(default.to_owned()),
        }
    }

    /// Sets the bounds and step of an `int` parameter (no effect on another type).
    pub fn constrained(
        mut self,
        min: Option<i64>,
        max: Option<i64>,
        multiple_of: Option<i64>,
    ) -> ParamSpec {
        if let ParamType::Int(_) = self.ty {
            self.ty = ParamType::Int(IntRange {
                min,
                max,
                multiple_of,
            });
        }
        self
    }

    /// The value when the user sets none.
    pub fn default_value(&self) -> Value {
        self.default.clone()
    }

    /// Reads a value typed by a user (`true`, `4`, `direct`) by the one spelling rule of
    /// `pipeweave-param`, checked against the type.
    pub fn parse(&self, text: &str) -> Result<Value, String> {
        self.ty
            .read(text)
            .ok_or_else(|| self.ty.error(&self.name, text).to_string())
    }

    /// Checks a value's type and constraints.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        if self.ty.admits(value) {
            Ok(())
        } else {
            Err(self.ty.error(&self.name, value).to_string())
        }
    }

    /// Whether the parameter needs protocol version 2 (a `choice`).
    pub(super) fn needs_version_2(&self) -> bool {
        matches!(self.ty, ParamType::Choice(_))
    }
}
