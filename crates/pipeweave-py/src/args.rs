//! Python's arguments as the application layer's requests: keyword parameters as `--set`
//! settings, `costs=` as uniform costs, the spec and its rule, whole numbers that refuse a bool,
//! and results as Python values (dicts and lists of the JSON the command line prints).

use pipeweave_app::CostsArg;
use pipeweave_eval::{SpecRule, Split};
use pipeweave_source::{Failure, Flag, FrontEnd, Setting};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt};

/// A whole number argument (ranks, micro-batches, stages per rank, activations): an `int`, never
/// a `bool` (`ranks=True` is a mistake, not one rank); its range is checked by [`whole`], which
/// knows its name.
#[derive(Debug, Clone)]
pub struct Whole(String);

impl<'py> FromPyObject<'_, 'py> for Whole {
    type Error = PyErr;

    fn extract(obj: Borrowed<'_, 'py, PyAny>) -> PyResult<Whole> {
        if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
            return Err(PyTypeError::new_err(format!(
                "expected an int, not {}",
                obj.get_type().name()?
            )));
        }
        Ok(Whole(obj.str()?.to_string()))
    }
}

/// `w`, the argument `flag`, as a whole number from 1 to its most (a plan's ranks for `ranks`), or
/// the usage error in the words the command line says it with.
pub fn whole(w: Option<Whole>, flag: Flag) -> Result<Option<u32>, Failure> {
    let Some(Whole(text)) = w else {
        return Ok(None);
    };
    let (what, max) = match flag {
        Flag::Ranks => ("ranks", pipeweave_plan::MAX_RANKS),
        Flag::Microbatches => ("micro-batches", u32::MAX),
        Flag::StagesPerRank => ("stages per rank", u32::MAX),
        Flag::Pipelines => ("pipelines", u32::MAX),
        _ => ("activations", 1 << 24),
    };
    let given = FrontEnd::Python.given(flag, &text);
    match text.parse::<i128>() {
        Ok(n) if n >= 1 && n <= i128::from(max) => Ok(Some(n as u32)),
        Ok(n) if n >= 1 => Err(Failure::usage(format!(
            "{given}: the number of {what} is at most {max}"
        ))),
        _ => Err(Failure::usage(format!(
            "{given}: the number of {what} is a whole number of at least 1"
        ))),
    }
}

/// [`whole`], its failure as the package's exception.
pub fn whole_arg(w: Option<Whole>, flag: Flag) -> PyResult<Option<u32>> {
    whole(w, flag).map_err(|f| crate::errors::Raised::new(&f, &Default::default()).into())
}

/// A count that may be 0 or large (a search's budget, a seed): a non-negative `int` up to
/// `u64::MAX`, never a `bool`.
#[derive(Debug, Clone, Copy)]
pub struct Count(pub u64);

impl<'py> FromPyObject<'_, 'py> for Count {
    type Error = PyErr;

    fn extract(obj: Borrowed<'_, 'py, PyAny>) -> PyResult<Count> {
        if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
            return Err(PyTypeError::new_err(format!(
                "expected an int, not {}",
                obj.get_type().name()?
            )));
        }
        let text = obj.str()?.to_string();
        text.parse::<u64>().map(Count).map_err(|_| {
            PyValueError::new_err(format!(
                "{text} is not a whole number from 0 to {}",
                u64::MAX
            ))
        })
    }
}

/// A schedule parameter given as a keyword argument, as `--set NAME=VALUE` would give it: a bool
/// is `true`/`false`, an int its digits (however large: the schedule's range says what it
/// takes), a str as it is (a choice's option).
fn setting(name: String, value: &Bound<'_, PyAny>) -> PyResult<Setting> {
    let value = if value.is_instance_of::<PyBool>() {
        value.extract::<bool>()?.to_string()
    } else if value.is_instance_of::<PyInt>() {
        value.str()?.to_string()
    } else if let Ok(s) = value.extract::<String>() {
        s
    } else {
        return Err(PyTypeError::new_err(format!(
            "parameter `{name}`: expected a bool, an int or a str, not {}",
            value.get_type().name()?
        )));
    };
    Ok(Setting { name, value })
}

/// The keyword parameters of a schedule as settings, in their order.
pub fn settings(params: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<Setting>> {
    match params {
        Some(d) => d
            .iter()
            .map(|(k, v)| setting(k.extract()?, &v))
            .collect::<PyResult<Vec<_>>>(),
        None => Ok(Vec::new()),
    }
}

/// `costs=`: `"F=1,B=2"` as `--costs` takes it, or a dict of the same keys (in its order).
pub fn costs_text(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<String>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if let Ok(dict) = value.cast::<PyDict>() {
        let pairs = dict
            .iter()
            .map(|(k, v)| {
                Ok(format!(
                    "{}={}",
                    k.extract::<String>()?,
                    v.extract::<f64>()?
                ))
            })
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(Some(pairs.join(",")));
    }
    Ok(Some(value.extract()?))
}

/// What a command prices with: `spec=` met by its rule, or `costs=` (read by the one reader of
/// `--costs`), unit costs by default.
#[derive(Debug, Clone, Default)]
pub struct Costs {
    pub spec: Option<String>,
    pub costs: Option<String>,
    pub rule: SpecRule,
    /// `costs_from=`: a measured-costs file.
    pub costs_from: Option<String>,
}

impl Costs {
    /// `spec=`, `costs=` (text or a dict) and the rule's switches, as every function takes them.
    pub fn of(
        spec: Option<String>,
        costs: Option<&Bound<'_, PyAny>>,
        costs_from: Option<String>,
        (strict_spec, keep_dp, global_batch): (bool, bool, bool),
        split: (Option<&str>, Option<&str>),
    ) -> PyResult<Costs> {
        Ok(Costs {
            spec,
            costs: costs_text(costs)?,
            rule: rule(strict_spec, keep_dp, global_batch, split)?,
            costs_from,
        })
    }

    /// The costs as the application layer takes them; a malformed `costs=` is a usage failure.
    pub fn arg(&self) -> Result<CostsArg, Failure> {
        let uniform = self
            .costs
            .as_deref()
            .map(|text| pipeweave_sim::UniformCosts::parse(text, "costs"))
            .transpose()
            .map_err(Failure::usage)?;
        Ok(CostsArg {
            uniform,
            spec: self.spec.clone(),
            rule: self.rule.clone(),
            costs_from: self.costs_from.clone(),
        })
    }
}

/// The rule of `strict_spec`, `keep_dp`, `global_batch`, `split` (`"auto"`, `"even"` or
/// layers per part `"1,8,8,7"`, as `--split` takes it) and `recompute` (`"full"` or one per part
/// `"full,none,none,none"`, as `--recompute` takes it).
pub fn rule(
    strict: bool,
    keep_dp: bool,
    global_batch: bool,
    (split, recompute): (Option<&str>, Option<&str>),
) -> PyResult<SpecRule> {
    let recompute = recompute
        .map(|text| {
            pipeweave_eval::parse_recompute(text)
                .map_err(|e| PyValueError::new_err(format!("recompute: {e}")))
        })
        .transpose()?;
    let split = match split {
        Some(text) => {
            Split::parse(text).map_err(|e| PyValueError::new_err(format!("split: {e}")))?
        }
        None => Split::Spec,
    };
    Ok(SpecRule {
        strict,
        keep_dp,
        global_batch,
        split,
        recompute,
    })
}

/// A result as the Python value of its JSON (dicts, lists, numbers, strings, `None`).
pub fn to_python<'py, T: serde::Serialize>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, value).map_err(|e| PyValueError::new_err(e.to_string()))
}
