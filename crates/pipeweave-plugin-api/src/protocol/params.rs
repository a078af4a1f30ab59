//! A plugin's parameters: the shared model of `pipeweave-param` (the same types, spellings and
//! errors as a `.weave` schedule's), with a default value and help, and their `param` lines.

use super::{DecodeError, err, escape, shorten, signed, unescape};
use pipeweave_param::{IntRange, ParamType, Value, is_option_name};
use std::fmt::Write as _;

/// One parameter: its name, type, default and help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamSpec {
    pub name: String,
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

/// Appends the `param` line (and `param-help` line) of `p`.
pub(super) fn encode(out: &mut String, p: &ParamSpec) {
    let _ = write!(
        out,
        "param {} {} {}",
        escape(&p.name),
        p.ty.keyword(),
        p.default
    );
    match &p.ty {
        ParamType::Bool => {}
        ParamType::Int(range) => {
            for (key, bound) in [
                ("min", range.min),
                ("max", range.max),
                ("multiple_of", range.multiple_of),
            ] {
                if let Some(v) = bound {
                    let _ = write!(out, " {key}={v}");
                }
            }
        }
        ParamType::Choice(options) => {
            let _ = write!(out, " options={}", options.join(","));
        }
    }
    out.push('\n');
    if !p.help.is_empty() {
        let _ = writeln!(out, "param-help {}", escape(&p.help));
    }
}

/// Reads the words after `param` on line `n`: name, type, default and constraints. `version` is the
/// message's: a `choice` needs version 2.
pub(super) fn decode(n: usize, value: &str, version: u32) -> Result<ParamSpec, DecodeError> {
    let mut words = value.split(' ');
    let name = unescape(n, words.next().unwrap_or(""))?;
    if name.is_empty() {
        return Err(err(n, "a parameter has no name".to_owned()));
    }
    let needs = || {
        err(
            n,
            format!("parameter `{name}` needs a type (bool, int or choice) and a default"),
        )
    };
    let keyword = words.next().ok_or_else(needs)?;
    let default = words.next().ok_or_else(needs)?;
    let (ty, default) = match keyword {
        "bool" => match default {
            "true" => (ParamType::Bool, Value::Bool(true)),
            "false" => (ParamType::Bool, Value::Bool(false)),
            _ => return Err(needs()),
        },
        "int" => {
            let default = Value::Int(signed(n, "the default", default)?);
            let mut range = IntRange::default();
            for w in words.by_ref() {
                let (k, v) = w.split_once('=').unwrap_or((w, ""));
                let slot = match k {
                    "min" => &mut range.min,
                    "max" => &mut range.max,
                    "multiple_of" => &mut range.multiple_of,
                    _ => return Err(err(n, format!("unknown constraint `{}`", shorten(w)))),
                };
                *slot = Some(signed(n, k, v)?);
            }
            (ParamType::Int(range), default)
        }
        "choice" if version < 2 => {
            return Err(err(
                n,
                format!("parameter `{name}` is a choice, which needs protocol version 2"),
            ));
        }
        "choice" => {
            let options = words
                .next()
                .and_then(|w| w.strip_prefix("options="))
                .ok_or_else(|| err(n, format!("choice `{name}` needs `options=a,b,...`")))?;
            let options: Vec<String> = options.split(',').map(str::to_owned).collect();
            if !is_option_name(default) {
                return Err(err(
                    n,
                    format!("the default `{}` is not an option name", shorten(default)),
                ));
            }
            (
                ParamType::Choice(options),
                Value::Choice(default.to_owned()),
            )
        }
        _ => return Err(needs()),
    };
    if let Some(extra) = words.next() {
        return Err(err(n, format!("unexpected `{}`", shorten(extra))));
    }
    if let Some(problem) = ty.problem() {
        return Err(err(n, format!("parameter `{name}`: {problem}")));
    }
    let spec = ParamSpec {
        name,
        help: String::new(),
        ty,
        default,
    };
    spec.check(&spec.default)
        .map_err(|e| err(n, format!("the default breaks the constraints: {e}")))?;
    Ok(spec)
}

/// Reads the value of a `set` line: `true`/`false`, a whole number, or (version 2) an option.
pub(super) fn decode_value(n: usize, text: &str, version: u32) -> Result<Value, DecodeError> {
    Ok(match text {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        t if version >= 2 && is_option_name(t) => Value::Choice(t.to_owned()),
        t => Value::Int(signed(n, "a parameter value", t)?),
    })
}
