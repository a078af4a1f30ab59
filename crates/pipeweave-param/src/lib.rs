//! The one parameter model of schedules, shared by the `.weave` language and the plugin protocol:
//! a parameter's type (a bool, an int in a range, a choice of names), its values, the one rule for
//! reading a value a user types (`--set NAME=VALUE`, `-v`), and the words every list, help text and
//! error uses for them. Pure data: no IO, no knowledge of either source.
//!
//! The spelling rule, the same for every schedule:
//! - a `bool` is exactly `true` or `false` (never `1`/`0`: a number is never read as a truth value,
//!   so `--set weight_split=2` is an error, not a silent `true`);
//! - an `int` is a whole number in decimal, optionally negative (`-3`), within its range;
//! - a `choice` is one of its options, spelled exactly as declared.

#![warn(missing_docs)]

use std::fmt;

#[cfg(test)]
mod tests;

/// The value spellings in one line, for help texts.
pub const SPELLINGS: &str =
    "true or false for a bool, a whole number for an int, one of its options for a choice";

/// The constraints of an `int` parameter; `None` is no bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IntRange {
    /// The smallest value allowed.
    pub min: Option<i64>,
    /// The largest value allowed.
    pub max: Option<i64>,
    /// Every value is a multiple of this (at least 1).
    pub multiple_of: Option<i64>,
}

impl IntRange {
    /// Whether `n` is in the range.
    pub fn contains(&self, n: i64) -> bool {
        self.min.is_none_or(|lo| n >= lo)
            && self.max.is_none_or(|hi| n <= hi)
            && self.multiple_of.is_none_or(|k| k == 0 || n % k == 0)
    }

    /// Why the range holds no value or is malformed, if it is.
    fn problem(&self) -> Option<String> {
        if let Some(k) = self.multiple_of
            && k < 1
        {
            return Some(format!("`multiple of {k}`: the step must be at least 1"));
        }
        let (Some(lo), Some(hi)) = (self.min, self.max) else {
            return None;
        };
        if lo > hi {
            return Some(format!("the range {lo}..={hi} is empty"));
        }
        let k = self.multiple_of.unwrap_or(1);
        // The first multiple of k at or above lo (k ≥ 1, so no overflow past i64 for the check).
        let first = i128::from(lo).div_euclid(i128::from(k)) * i128::from(k);
        let first = if first < i128::from(lo) {
            first + i128::from(k)
        } else {
            first
        };
        (first > i128::from(hi))
            .then(|| format!("no multiple of {k} lies in the range {lo}..={hi}"))
    }
}

/// The type of a parameter, with its constraints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamType {
    /// `true` or `false`.
    Bool,
    /// A whole number in a range.
    Int(IntRange),
    /// One of these names (identifiers, distinct, at least one).
    Choice(Vec<String>),
}

/// A parameter's value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// The value of a `bool`.
    Bool(bool),
    /// The value of an `int`.
    Int(i64),
    /// One of a choice's options.
    Choice(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(n) => write!(f, "{n}"),
            Value::Choice(name) => f.write_str(name),
        }
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Int(n)
    }
}

/// Whether `text` can be an option of a choice: a name (ASCII letters, digits and `_`, not
/// starting with a digit) other than `true` and `false`, so that a value's spelling alone says
/// whether it is a bool, an int or an option.
pub fn is_option_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && text != "true"
        && text != "false"
}

/// Reads a whole number in decimal: an optional `-`, then digits (no `+`, no spaces).
fn whole_number(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

impl ParamType {
    /// An `int` without constraints.
    pub fn int() -> ParamType {
        ParamType::Int(IntRange::default())
    }

    /// A `choice` of these options.
    pub fn choice<S: AsRef<str>>(options: &[S]) -> ParamType {
        ParamType::Choice(options.iter().map(|o| o.as_ref().to_owned()).collect())
    }

    /// The type's keyword: `bool`, `int` or `choice`.
    pub fn keyword(&self) -> &'static str {
        match self {
            ParamType::Bool => "bool",
            ParamType::Int(_) => "int",
            ParamType::Choice(_) => "choice",
        }
    }

    /// The value `text` spells, when it is one of this type's values (the spelling rule of the
    /// crate's documentation).
    pub fn read(&self, text: &str) -> Option<Value> {
        let value = match self {
            ParamType::Bool => match text {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => return None,
            },
            ParamType::Int(_) => Value::Int(whole_number(text)?),
            ParamType::Choice(_) => Value::Choice(text.to_owned()),
        };
        self.admits(&value).then_some(value)
    }

    /// Whether `value` is one of this type's values.
    pub fn admits(&self, value: &Value) -> bool {
        match (self, value) {
            (ParamType::Bool, Value::Bool(_)) => true,
            (ParamType::Int(range), Value::Int(n)) => range.contains(*n),
            (ParamType::Choice(options), Value::Choice(name)) => options.contains(name),
            _ => false,
        }
    }

    /// The values allowed, in words: `true or false`, `a whole number from 0 to 8`, `a, b or c`.
    pub fn allowed(&self) -> String {
        match self {
            ParamType::Bool => "true or false".to_owned(),
            ParamType::Int(range) => int_words(range),
            ParamType::Choice(options) => match options.as_slice() {
                [] => "nothing".to_owned(),
                [one] => one.clone(),
                [init @ .., last] => format!("{} or {last}", init.join(", ")),
            },
        }
    }

    /// Why the type itself is malformed (an empty range, a choice without options or with an
    /// option twice or one that is no name), if it is.
    pub fn problem(&self) -> Option<String> {
        match self {
            ParamType::Bool => None,
            ParamType::Int(range) => range.problem(),
            ParamType::Choice(options) => {
                if options.is_empty() {
                    return Some("a choice needs at least one option".to_owned());
                }
                if let Some(bad) = options.iter().find(|o| !is_option_name(o)) {
                    return Some(format!(
                        "`{bad}` cannot be an option: options are names (letters, digits and `_`), not true or false"
                    ));
                }
                options
                    .iter()
                    .enumerate()
                    .find(|(i, o)| options[..*i].contains(o))
                    .map(|(_, o)| format!("the option `{o}` is listed twice"))
            }
        }
    }

    /// The error for `found`, a text or value this type does not take, as parameter `name`'s.
    pub fn error(&self, name: &str, found: impl fmt::Display) -> ValueError {
        ValueError {
            param: name.to_owned(),
            ty: self.clone(),
            found: found.to_string(),
        }
    }
}

/// `a whole number`, `an even whole number of at least 2`, `a whole number from 0 to 9, a multiple
/// of 3`.
fn int_words(range: &IntRange) -> String {
    let step = range.multiple_of.filter(|&k| k > 1);
    let mut words = if step == Some(2) {
        "an even whole number".to_owned()
    } else {
        "a whole number".to_owned()
    };
    match (range.min, range.max) {
        (Some(lo), Some(hi)) => words.push_str(&format!(" from {lo} to {hi}")),
        (Some(lo), None) => words.push_str(&format!(" of at least {lo}")),
        (None, Some(hi)) => words.push_str(&format!(" of at most {hi}")),
        (None, None) => {}
    }
    if let Some(k) = step.filter(|&k| k != 2) {
        words.push_str(&format!(", a multiple of {k}"));
    }
    words
}

/// The type as a `.weave` file declares it: `bool`, `int`, `int in 0..=8`, `int in 2.. multiple
/// of 2`, `choice(a, b)`.
impl fmt::Display for ParamType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamType::Bool => f.write_str("bool"),
            ParamType::Int(range) => {
                f.write_str("int")?;
                match (range.min, range.max) {
                    (None, None) => {}
                    (lo, hi) => {
                        f.write_str(" in ")?;
                        if let Some(lo) = lo {
                            write!(f, "{lo}")?;
                        }
                        f.write_str("..")?;
                        if let Some(hi) = hi {
                            write!(f, "={hi}")?;
                        }
                    }
                }
                if let Some(k) = range.multiple_of {
                    write!(f, " multiple of {k}")?;
                }
                Ok(())
            }
            ParamType::Choice(options) => write!(f, "choice({})", options.join(", ")),
        }
    }
}

/// A value a parameter does not take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueError {
    /// The parameter's name.
    pub param: String,
    /// Its type.
    pub ty: ParamType,
    /// What was given, as written.
    pub found: String,
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let article = if matches!(self.ty, ParamType::Int(_)) {
            "an"
        } else {
            "a"
        };
        write!(
            f,
            "parameter `{}` is {article} {} ({}), not `{}`",
            self.param,
            self.ty.keyword(),
            self.ty.allowed(),
            self.found
        )
    }
}

impl std::error::Error for ValueError {}

/// A `NAME=VALUE` setting a schedule cannot take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingError {
    /// The schedule declares no parameter of that name.
    Unknown {
        /// The name given.
        name: String,
        /// The names it declares, in order.
        known: Vec<String>,
    },
    /// The same parameter set twice.
    Twice(String),
    /// A value the parameter does not take.
    Value(ValueError),
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingError::Unknown { name, known } if known.is_empty() => {
                write!(f, "no parameter `{name}` (it takes no parameters)")
            }
            SettingError::Unknown { name, known } => write!(
                f,
                "no parameter `{name}` (its parameters: {})",
                known.join(", ")
            ),
            SettingError::Twice(name) => write!(f, "parameter `{name}` is set twice"),
            SettingError::Value(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SettingError {}

/// Reads `NAME=VALUE` settings, as typed, against the parameters a schedule declares (name and
/// type): the values in the order given, or the first setting that names no parameter, repeats
/// one, or gives a value its type does not take.
pub fn read_settings<'a>(
    declared: impl IntoIterator<Item = (&'a str, &'a ParamType)>,
    settings: &[(String, String)],
) -> Result<Vec<(String, Value)>, SettingError> {
    let declared: Vec<(&str, &ParamType)> = declared.into_iter().collect();
    let mut values = Vec::with_capacity(settings.len());
    for (i, (name, text)) in settings.iter().enumerate() {
        let Some(&(_, ty)) = declared.iter().find(|(n, _)| n == name) else {
            return Err(SettingError::Unknown {
                name: name.clone(),
                known: declared.iter().map(|(n, _)| (*n).to_owned()).collect(),
            });
        };
        if settings[..i].iter().any(|(n, _)| n == name) {
            return Err(SettingError::Twice(name.clone()));
        }
        let value = ty
            .read(text)
            .ok_or_else(|| SettingError::Value(ty.error(name, text)))?;
        values.push((name.clone(), value));
    }
    Ok(values)
}
