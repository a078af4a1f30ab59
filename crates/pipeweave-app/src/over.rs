//! `--over NAME=VALUES`, what a sweep varies: micro-batches, ranks, stages per rank (`v`), or any
//! parameter the schedules declare (`--set NAME=VALUE`'s names), over a list, a range `A..B` or a
//! range with a step `A..B:S`, or a mix.
//!
//! The shape's parameters (M, P, v) are whole numbers of at least 1 and are read when the command
//! line is; a declared parameter's values are typed once the schedules are resolved, by the type
//! the schedules declare (`pipeweave-param`), so `lag=0..3` is four ints and `weight_split=true,
//! false` two bools, and a value a schedule's type does not take is a usage error.

use pipeweave_eval::{Over, Param};
use pipeweave_param::{ParamType, Value};
use pipeweave_source::{Declared, Failure};
use std::fmt;

/// A malformed `--over`, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError(pub String);

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ArgError {}

/// The most values one sweep may take (each is a simulation per schedule).
const MAX_VALUES: usize = 4096;

/// One comma-separated item of VALUES.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    /// `A..B` or `A..B:S`, whole numbers.
    Range { lo: i64, hi: i64, step: i64 },
    /// Anything else: a number, `true`, an option's name.
    Word(String),
}

/// `--over` as written: the parameter, and its values (typed now for the shape, later for a
/// declared parameter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverArg {
    /// What the user wrote.
    text: String,
    /// The swept parameter.
    pub param: Param,
    items: Vec<Item>,
}

/// A whole number in decimal (optionally negative), as `pipeweave-param` reads an int.
fn whole(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn items(text: &str, values: &str) -> Result<Vec<Item>, ArgError> {
    let mut out = Vec::new();
    for item in values.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(ArgError(format!("--over: empty value in `{text}`")));
        }
        let Some((lo, rest)) = item.split_once("..") else {
            out.push(Item::Word(item.to_owned()));
            continue;
        };
        let (hi, step) = rest.split_once(':').unwrap_or((rest, "1"));
        let bound = |t: &str| {
            whole(t.trim()).ok_or_else(|| {
                ArgError(format!(
                    "--over: `{}` in `{item}` is not a whole number",
                    t.trim()
                ))
            })
        };
        let (lo, hi) = (bound(lo)?, bound(hi)?);
        let step = whole(step.trim()).filter(|s| *s >= 1).ok_or_else(|| {
            ArgError(format!(
                "--over: `{}` is not a step (a whole number ≥ 1)",
                step.trim()
            ))
        })?;
        if lo > hi {
            return Err(ArgError(format!(
                "--over: the range `{item}` runs backwards"
            )));
        }
        out.push(Item::Range { lo, hi, step });
    }
    Ok(out)
}

/// The numbers of `items`, ascending without repeats, each checked by `check`.
fn numbers(
    items: &[Item],
    mut check: impl FnMut(&str) -> Result<i64, ArgError>,
) -> Result<Vec<i64>, ArgError> {
    let mut out: Vec<i64> = Vec::new();
    for item in items {
        match item {
            Item::Word(w) => out.push(check(w)?),
            &Item::Range { lo, hi, step } => {
                let count = (i128::from(hi) - i128::from(lo)) / i128::from(step) + 1;
                check(&lo.to_string())?;
                if out.len() as i128 + count > MAX_VALUES as i128 {
                    return Err(ArgError(format!(
                        "--over: more than {MAX_VALUES} values; use a step (e.g. {lo}..{hi}:{})",
                        ((i128::from(hi) - i128::from(lo)) / 64).max(2)
                    )));
                }
                // The range's last value too: a range is within its bounds when its ends are.
                check(&(i128::from(lo) + (count - 1) * i128::from(step)).to_string())?;
                out.extend((0..count as i64).map(|k| lo + k * step));
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// `--over`: `microbatches=8..128`, `ranks=2..16:2`, `m=8,16,32`, a mix (`m=4..8,16,32..64:16`),
/// `v=1..4`, `lag=0..3`, `weight_split=true,false`; numbers ascending, without repeats.
pub fn parse_over(text: &str) -> Result<OverArg, ArgError> {
    let Some((name, values)) = text.split_once('=') else {
        return Err(ArgError(format!(
            "--over expects NAME=VALUES (e.g. microbatches=8..128, ranks=2,4,8 or v=1..4), found \
             `{text}`"
        )));
    };
    let param = match name.trim() {
        "microbatches" | "m" | "M" => Param::Microbatches,
        "ranks" | "p" | "P" => Param::Ranks,
        "stages_per_rank" | "stages-per-rank" | "v" => Param::StagesPerRank,
        other if pipeweave_param::is_option_name(other) => Param::Setting(other.to_owned()),
        "" => {
            return Err(ArgError(format!(
                "--over {text}: the parameter's name is missing (NAME=VALUES)"
            )));
        }
        other => {
            return Err(ArgError(format!(
                "--over: `{other}` is not a parameter's name"
            )));
        }
    };
    let items = items(text, values)?;
    let arg = OverArg {
        text: text.to_owned(),
        param,
        items,
    };
    if arg.param.is_shape() {
        // Read now, so that a malformed shape is an error before anything runs.
        arg.shape_values()?;
    }
    Ok(arg)
}

impl OverArg {
    /// The values of M, P or v: whole numbers of at least 1 (P at most a plan's ranks).
    fn shape_values(&self) -> Result<Vec<Value>, ArgError> {
        // The most a plan may have of each: its ranks, its micro-batches (ids up to
        // `MAX_MICROBATCH_ID`), stages per rank (as many as a u32 counts).
        let (max, what) = match self.param {
            Param::Ranks => (i64::from(pipeweave_plan::MAX_RANKS), "ranks"),
            Param::Microbatches => (
                i64::from(pipeweave_plan::MAX_MICROBATCH_ID) + 1,
                "micro-batches",
            ),
            _ => (i64::from(u32::MAX), "stages per rank"),
        };
        let out = numbers(&self.items, |w| match whole(w) {
            Some(v) if v > 0 && v <= max => Ok(v),
            Some(v) if v > max => Err(ArgError(format!(
                "--over: {w} {what}; a plan has at most {max} {what}"
            ))),
            // Digits beyond an i64 are a number too, and too large.
            None if !w.starts_with('-')
                && !w.is_empty()
                && w.bytes().all(|b| b.is_ascii_digit()) =>
            {
                Err(ArgError(format!(
                    "--over: {w} {what}; a plan has at most {max} {what}"
                )))
            }
            _ => Err(ArgError(format!(
                "--over: `{w}` is not a value (a whole number ≥ 1)"
            ))),
        })?;
        if out.len() > MAX_VALUES {
            return Err(ArgError(format!("--over: more than {MAX_VALUES} values")));
        }
        Ok(out.into_iter().map(Value::Int).collect())
    }

    /// The sweep over the schedules `sources` (each name with what it declares): the values read by
    /// the type of the parameter the schedules declare. A name none of them declares, or a value
    /// one of their types does not take, is a usage error.
    pub fn typed(&self, sources: &[(&str, Option<&Declared>)]) -> Result<Over, Failure> {
        let usage = |e: ArgError| Failure::usage(e.0);
        let name = match &self.param {
            Param::Setting(name) => name.as_str(),
            Param::StagesPerRank => "v",
            Param::Microbatches | Param::Ranks => {
                return Ok(Over {
                    param: self.param.clone(),
                    values: self.shape_values().map_err(usage)?,
                });
            }
        };
        let declared: Vec<(&str, &ParamType)> = sources
            .iter()
            .filter_map(|&(schedule, d)| {
                let p = d?.params.iter().find(|p| p.name == name)?;
                Some((schedule, &p.ty))
            })
            .collect();
        let Some(&(_, ty)) = declared.first() else {
            return Err(Failure::usage(self.unknown(name, sources)));
        };
        let values = if self.param == Param::StagesPerRank {
            self.shape_values().map_err(usage)?
        } else {
            self.read(name, ty).map_err(usage)?
        };
        for (schedule, ty) in &declared {
            if let Some(bad) = values.iter().find(|v| !ty.admits(v)) {
                return Err(Failure::usage(format!(
                    "--over {}: {schedule}: {}",
                    self.text,
                    ty.error(name, bad)
                )));
            }
        }
        Ok(Over {
            param: self.param.clone(),
            values,
        })
    }

    /// The values as parameter `name` of type `ty` reads them: numbers ascending for an int,
    /// the order given otherwise.
    fn read(&self, name: &str, ty: &ParamType) -> Result<Vec<Value>, ArgError> {
        if matches!(ty, ParamType::Int(_)) {
            let out = numbers(&self.items, |w| {
                whole(w)
                    .ok_or_else(|| ArgError(format!("--over {}: {}", self.text, ty.error(name, w))))
            })?;
            return Ok(out.into_iter().map(Value::Int).collect());
        }
        let mut out: Vec<Value> = Vec::new();
        for item in &self.items {
            let Item::Word(w) = item else {
                return Err(ArgError(format!(
                    "--over {}: a range takes an int; parameter `{name}` is a {} ({})",
                    self.text,
                    ty.keyword(),
                    ty.allowed()
                )));
            };
            let v = ty
                .read(w)
                .ok_or_else(|| ArgError(format!("--over {}: {}", self.text, ty.error(name, w))))?;
            if !out.contains(&v) {
                out.push(v);
            }
        }
        Ok(out)
    }

    /// The error for a name none of the schedules declares, with the names that can be swept.
    fn unknown(&self, name: &str, sources: &[(&str, Option<&Declared>)]) -> String {
        let mut names: Vec<&str> = vec!["microbatches", "ranks"];
        for s in sources.iter().filter_map(|(_, d)| *d) {
            for p in &s.params {
                let n = if p.name == "v" {
                    "stages_per_rank"
                } else {
                    p.name.as_str()
                };
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        let what = if name == "v" {
            "stages per rank (`v`)".to_owned()
        } else {
            format!("a parameter `{name}`")
        };
        format!(
            "--over {}: none of the schedules has {what}; they can sweep {}",
            self.text,
            names.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str) -> Vec<i64> {
        match parse_over(text).and_then(|o| o.shape_values()) {
            Ok(v) => v
                .into_iter()
                .map(|v| match v {
                    Value::Int(n) => n,
                    other => panic!("{other}"),
                })
                .collect(),
            Err(e) => panic!("{e}"),
        }
    }

    fn error(text: &str) -> String {
        match parse_over(text) {
            Err(e) => e.0,
            Ok(o) => panic!("expected an error, got {o:?}"),
        }
    }

    #[test]
    fn forms() {
        assert_eq!(values("microbatches=8..12"), vec![8, 9, 10, 11, 12]);
        assert_eq!(values("m=8..32:8"), vec![8, 16, 24, 32]);
        assert_eq!(values("m=8..30:8"), vec![8, 16, 24]);
        assert_eq!(values("ranks=16,2,4,4"), vec![2, 4, 16]);
        assert_eq!(values("P=2..4,8..16:8"), vec![2, 3, 4, 8, 16]);
        assert_eq!(values("v=1..4"), vec![1, 2, 3, 4]);
        assert_eq!(parse_over("p=2").map(|o| o.param).ok(), Some(Param::Ranks));
        assert_eq!(
            parse_over("stages_per_rank=1..4").map(|o| o.param).ok(),
            Some(Param::StagesPerRank)
        );
        assert_eq!(
            parse_over("lag=0..3").map(|o| o.param).ok(),
            Some(Param::Setting("lag".into()))
        );
        assert_eq!(
            parse_over("lag=-2..2:2").map(|o| o.items).ok(),
            Some(vec![Item::Range {
                lo: -2,
                hi: 2,
                step: 2
            }])
        );
    }

    #[test]
    fn errors() {
        assert!(error("microbatches").contains("NAME=VALUES"));
        assert!(error("a-b=1").contains("`a-b` is not a parameter's name"));
        assert!(error("=3").contains("the parameter's name is missing"));
        assert!(error("m=0..4").contains("`0` is not a value"));
        assert!(error("m=8..4").contains("runs backwards"));
        assert!(error("m=4..8:0").contains("`0` is not a step"));
        assert!(error("m=4,,8").contains("empty value"));
        assert!(error("m=x").contains("`x`"));
        assert!(error("lag=a..3").contains("`a` in `a..3` is not a whole number"));
        assert!(error("m=1..4000000000").contains("more than 4096 values"));
        assert_eq!(
            error("ranks=2,70000"),
            "--over: 70000 ranks; a plan has at most 65536 ranks"
        );
        assert_eq!(values("m=70000"), vec![70000]);
        // A number too large is named as one, not as something that is no number.
        assert_eq!(
            error("m=937499999941"),
            "--over: 937499999941 micro-batches; a plan has at most 16777216 micro-batches"
        );
        assert_eq!(
            error("m=99999999999999999999999"),
            "--over: 99999999999999999999999 micro-batches; a plan has at most 16777216 micro-batches"
        );
        assert!(error("m=4..99999999999:1000000000").contains("at most 16777216 micro-batches"));
        assert!(error("m=4..99999999999").contains("more than 4096 values"));
    }
}
