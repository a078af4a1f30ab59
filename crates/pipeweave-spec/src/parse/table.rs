//! The reader of one TOML table: typed lookups that report a missing key, a wrong type or a value
//! out of range as a diagnostic with the key's path, and the unknown keys left at the end.

use super::Cx;
use crate::spec::Dtype;
use pipeweave_diagnostics::{Diagnostic, visible};
use std::ops::Range;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The items of an array and the array's span.
pub(super) type SpannedItems<'t, 'i> = (&'t [Spanned<DeValue<'i>>], Range<usize>);

/// One table of the document, with the keys looked up so far (to find unknown ones at the end).
pub(super) struct Table<'t, 'i> {
    path: String,
    table: &'t DeTable<'i>,
    span: Range<usize>,
    known: Vec<&'static str>,
    /// Keys an older format had, reported by the caller as removed: neither unknown nor listed.
    retired: Vec<&'static str>,
}

impl<'t, 'i> Table<'t, 'i> {
    pub(super) fn new(path: String, table: &'t DeTable<'i>, span: Range<usize>) -> Self {
        Table {
            path,
            table,
            span,
            known: Vec::new(),
            retired: Vec::new(),
        }
    }

    pub(super) fn key_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    pub(super) fn lookup(
        &mut self,
        cx: &mut Cx,
        key: &'static str,
    ) -> Option<&'t Spanned<DeValue<'i>>> {
        self.known.push(key);
        let v = self.table.get(key)?;
        cx.spans.insert(self.key_path(key), v.span());
        Some(v)
    }

    /// A key an older format had: its value, if the table has it (the caller reports it).
    pub(super) fn retired(&mut self, key: &'static str) -> Option<&'t Spanned<DeValue<'i>>> {
        self.retired.push(key);
        self.table.get(key)
    }

    pub(super) fn missing(&self, cx: &mut Cx, key: &str, what: &str) {
        let path = self.key_path(key);
        let (range, label) = if self.path.is_empty() {
            (0..0, "in this spec".to_string())
        } else {
            (self.span.clone(), format!("in `[{}]`", self.path))
        };
        let d = Diagnostic::error(format!("missing key `{path}`"))
            .with_span_label(cx.span(&range), label)
            .with_help(format!("add `{key} = ...` ({what})"));
        cx.diags.push(d);
    }

    pub(super) fn wrong_type(
        &self,
        cx: &mut Cx,
        key: &str,
        v: &Spanned<DeValue<'_>>,
        expected: &str,
    ) {
        let path = self.key_path(key);
        cx.error(
            &v.span(),
            format!(
                "`{path}` must be {expected}, found {}",
                type_name(v.get_ref())
            ),
            format!("expected {expected}"),
        );
    }

    /// A positive integer (at least `min`).
    pub(super) fn int(
        &mut self,
        cx: &mut Cx,
        key: &'static str,
        min: u64,
        what: &str,
    ) -> Option<u64> {
        let Some(v) = self.lookup(cx, key) else {
            self.missing(cx, key, what);
            return None;
        };
        self.int_value(cx, key, v, min)
    }

    pub(super) fn opt_int(
        &mut self,
        cx: &mut Cx,
        key: &'static str,
        min: u64,
    ) -> Result<Option<u64>, ()> {
        match self.lookup(cx, key) {
            None => Ok(None),
            Some(v) => self.int_value(cx, key, v, min).map(Some).ok_or(()),
        }
    }

    pub(super) fn int_value(
        &self,
        cx: &mut Cx,
        key: &str,
        v: &Spanned<DeValue<'_>>,
        min: u64,
    ) -> Option<u64> {
        let path = self.key_path(key);
        let DeValue::Integer(i) = v.get_ref() else {
            self.wrong_type(cx, key, v, "an integer");
            return None;
        };
        match i64::from_str_radix(i.as_str(), i.radix()) {
            // Every count is bounded, so that products of counts stay far inside u64 and f64.
            Ok(n) if n >= 0 && n as u64 > LIMIT => {
                cx.error(
                    &v.span(),
                    format!("`{path}` is too large (at most {LIMIT})"),
                    "too large",
                );
                None
            }
            Ok(n) if n >= 0 && n as u64 >= min => Some(n as u64),
            Ok(n) => {
                cx.error(
                    &v.span(),
                    format!("`{path}` must be at least {min}, found {n}"),
                    "too small",
                );
                None
            }
            Err(_) => {
                cx.error(&v.span(), format!("`{path}` is out of range"), "too large");
                None
            }
        }
    }

    /// A count at least `min` and at most [`LIMIT`] (larger values are typos, and would make the
    /// cost model allocate or loop without end).
    pub(super) fn u32_int(
        &mut self,
        cx: &mut Cx,
        key: &'static str,
        min: u64,
        what: &str,
    ) -> Option<u32> {
        let n = self.int(cx, key, min, what)?;
        within_limit(cx, &self.key_path(key), n)
    }

    /// A finite number (integer or float) strictly above `above` (or at least, if `inclusive`).
    pub(super) fn num(
        &mut self,
        cx: &mut Cx,
        key: &'static str,
        bound: Bound,
        what: &str,
    ) -> Option<f64> {
        let Some(v) = self.lookup(cx, key) else {
            self.missing(cx, key, what);
            return None;
        };
        self.num_value(cx, key, v, bound)
    }

    pub(super) fn num_value(
        &self,
        cx: &mut Cx,
        key: &str,
        v: &Spanned<DeValue<'_>>,
        bound: Bound,
    ) -> Option<f64> {
        let path = self.key_path(key);
        let x = match v.get_ref() {
            DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
                .ok()
                .map(|n| n as f64),
            DeValue::Float(f) => f.as_str().parse::<f64>().ok(),
            _ => {
                self.wrong_type(cx, key, v, "a number");
                return None;
            }
        };
        let Some(x) = x.filter(|x| x.is_finite()) else {
            cx.error(
                &v.span(),
                format!("`{path}` must be a finite number"),
                "not finite",
            );
            return None;
        };
        if let Some(msg) = bound.violated(x) {
            cx.error(
                &v.span(),
                format!("`{path}` must be {msg}, found {}", shown(x)),
                "out of range",
            );
            return None;
        }
        Some(x)
    }

    /// An optional finite number within `bound`.
    pub(super) fn opt_num(
        &mut self,
        cx: &mut Cx,
        key: &'static str,
        bound: Bound,
    ) -> Result<Option<f64>, ()> {
        match self.lookup(cx, key) {
            None => Ok(None),
            Some(v) => self.num_value(cx, key, v, bound).map(Some).ok_or(()),
        }
    }

    pub(super) fn string(&mut self, cx: &mut Cx, key: &'static str, what: &str) -> Option<String> {
        let Some(v) = self.lookup(cx, key) else {
            self.missing(cx, key, what);
            return None;
        };
        match v.get_ref() {
            DeValue::String(s) => Some(s.to_string()),
            _ => {
                self.wrong_type(cx, key, v, "a string");
                None
            }
        }
    }

    pub(super) fn opt_string(
        &mut self,
        cx: &mut Cx,
        key: &'static str,
    ) -> Result<Option<(String, Range<usize>)>, ()> {
        match self.lookup(cx, key) {
            None => Ok(None),
            Some(v) => match v.get_ref() {
                DeValue::String(s) => Ok(Some((s.to_string(), v.span()))),
                _ => {
                    self.wrong_type(cx, key, v, "a string");
                    Err(())
                }
            },
        }
    }

    /// One of a fixed set of words.
    pub(super) fn choice<T: Copy>(
        &mut self,
        cx: &mut Cx,
        key: &'static str,
        default: T,
        choices: &[(&str, T)],
    ) -> Option<T> {
        let (s, span) = match self.opt_string(cx, key) {
            Ok(None) => return Some(default),
            Ok(Some(x)) => x,
            Err(()) => return None,
        };
        if let Some((_, t)) = choices.iter().find(|(name, _)| *name == s) {
            return Some(*t);
        }
        let names: Vec<String> = choices.iter().map(|(n, _)| format!("`{n}`")).collect();
        let d = Diagnostic::error(format!(
            "`{}` cannot be `{}`",
            self.key_path(key),
            visible(&s)
        ))
        .with_span_label(cx.span(&span), "unknown value")
        .with_help(format!("expected one of {}", names.join(", ")));
        cx.diags.push(d);
        None
    }

    /// `true` or `false`, `default` when absent.
    pub(super) fn opt_bool(
        &mut self,
        cx: &mut Cx,
        key: &'static str,
        default: bool,
    ) -> Option<bool> {
        match self.lookup(cx, key) {
            None => Some(default),
            Some(v) => match v.get_ref() {
                DeValue::Boolean(b) => Some(*b),
                _ => {
                    self.wrong_type(cx, key, v, "a boolean");
                    None
                }
            },
        }
    }

    pub(super) fn dtype(
        &mut self,
        cx: &mut Cx,
        key: &'static str,
        default: Dtype,
    ) -> Option<Dtype> {
        self.choice(
            cx,
            key,
            default,
            &[
                ("fp32", Dtype::Fp32),
                ("bf16", Dtype::Bf16),
                ("fp16", Dtype::Fp16),
                ("fp8", Dtype::Fp8),
            ],
        )
    }

    pub(super) fn sub(
        &mut self,
        cx: &mut Cx,
        key: &'static str,
    ) -> Result<Option<Table<'t, 'i>>, ()> {
        match self.lookup(cx, key) {
            None => Ok(None),
            Some(v) => match v.get_ref() {
                DeValue::Table(t) => Ok(Some(Table::new(self.key_path(key), t, v.span()))),
                _ => {
                    self.wrong_type(cx, key, v, "a table");
                    Err(())
                }
            },
        }
    }

    pub(super) fn req_sub(
        &mut self,
        cx: &mut Cx,
        key: &'static str,
        what: &str,
    ) -> Option<Table<'t, 'i>> {
        match self.sub(cx, key) {
            Ok(Some(t)) => Some(t),
            Ok(None) => {
                let path = self.key_path(key);
                let d = Diagnostic::error(format!("missing table `[{path}]`"))
                    .with_span_label(cx.span(&(0..0)), "in this spec")
                    .with_help(format!("add a `[{path}]` table ({what})"));
                cx.diags.push(d);
                None
            }
            Err(()) => None,
        }
    }

    /// Whether `key` holds an array (`Ok(Some(()))`), without looking it up.
    pub(super) fn peek_array(&self, key: &str) -> Result<Option<()>, ()> {
        match self.table.get(key).map(|v| v.get_ref()) {
            Some(DeValue::Array(_)) => Ok(Some(())),
            Some(_) => Err(()),
            None => Ok(None),
        }
    }

    /// An array of numbers (milliseconds), or of positive integers.
    pub(super) fn array(
        &mut self,
        cx: &mut Cx,
        key: &'static str,
    ) -> Result<Option<SpannedItems<'t, 'i>>, ()> {
        match self.lookup(cx, key) {
            None => Ok(None),
            Some(v) => match v.get_ref() {
                DeValue::Array(a) => Ok(Some((&a[..], v.span()))),
                _ => {
                    self.wrong_type(cx, key, v, "an array");
                    Err(())
                }
            },
        }
    }

    /// Reports every key that no lookup asked for.
    pub(super) fn finish(self, cx: &mut Cx) {
        let mut unknown: Vec<(&Spanned<std::borrow::Cow<'_, str>>, _)> = self
            .table
            .iter()
            .filter(|(k, _)| {
                let k = k.get_ref().as_ref();
                !self.known.contains(&k) && !self.retired.contains(&k)
            })
            .collect();
        unknown.sort_by_key(|(k, _)| k.span().start);
        let mut known = self.known.clone();
        known.sort_unstable();
        known.dedup();
        for (k, _) in unknown {
            // A quoted key can hold any character.
            let path = visible(&self.key_path(k.get_ref())).into_owned();
            let mut d = Diagnostic::error(format!("unknown key `{path}`"))
                .with_span_label(cx.span(&k.span()), "not a spec key");
            if let Some(close) = closest(k.get_ref(), &known) {
                d = d.with_help(format!("did you mean `{close}`?"));
            } else {
                let list: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
                let place = if self.path.is_empty() {
                    "at the top level".to_string()
                } else {
                    format!("in `[{}]`", self.path)
                };
                d = d.with_help(format!("the keys {place} are {}", list.join(", ")));
            }
            cx.diags.push(d);
        }
    }
}

/// The known key nearest to a misspelt one (edit distance at most 2 or a third of its length).
fn closest<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).clamp(1, 3);
    known
        .iter()
        .map(|k| (strsim::levenshtein(word, k), *k))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, k)| k)
}

pub(super) fn type_name(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// The largest count a spec may give (layers, ranks, nodes, micro-batches, ...).
const LIMIT: u64 = 1 << 20;

pub(super) fn within_limit(cx: &mut Cx, path: &str, n: u64) -> Option<u32> {
    if n <= LIMIT {
        return u32::try_from(n).ok();
    }
    let span = cx.spans.get(path).cloned().unwrap_or(0..0);
    cx.error(
        &span,
        format!("`{path}` is too large (at most {LIMIT})"),
        "too large",
    );
    None
}

/// The range of a spec's number. Every range is bounded on both sides, so that every figure
/// computed from a spec stays a finite number: the largest counts ([`LIMIT`]) and rates multiply
/// to far less than `f64::MAX`, and no time is divided by a rate near zero.
#[derive(Debug, Clone, Copy)]
pub(super) enum Bound {
    /// Strictly positive: from `min` to `max`.
    Positive { min: f64, max: f64 },
    /// In [lo, hi].
    Within(f64, f64),
}

/// A number as a message shows it: plainly, or with an exponent when it is very large or small
/// (`5e-324`, not three hundred digits).
pub(super) fn shown(x: f64) -> String {
    if x != 0.0 && !(1e-4..1e12).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// The longest latency in microseconds or measured time in milliseconds: a billion.
pub(super) const MAX_DURATION: f64 = 1e9;

/// Tokens over a whole run: from one to 10^18.
pub(super) const TOKENS: Bound = Bound::Positive {
    min: 1.0,
    max: 1e18,
};

impl Bound {
    /// What `x` breaks, in words (`greater than 0`, `between 0.001 and 10000000`).
    pub(super) fn violated(self, x: f64) -> Option<String> {
        match self {
            Bound::Positive { .. } if x <= 0.0 => Some("greater than 0".into()),
            Bound::Positive { min, max } if x < min || x > max => {
                Some(format!("between {} and {}", shown(min), shown(max)))
            }
            Bound::Within(lo, hi) if !(lo..=hi).contains(&x) => {
                Some(format!("at least {} and at most {}", shown(lo), shown(hi)))
            }
            _ => None,
        }
    }
}
