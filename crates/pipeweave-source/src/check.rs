//! `check` for a `.weave` schedule: its syntax and names, then its plans, compiled and validated
//! on a small grid of P and M with every parameter at its default, so that a file `validate`
//! would reject never passes `check`.

use crate::build::{Origins, problem_diagnostics};
use crate::failure::Failure;
use pipeweave_diagnostics::Files;
use pipeweave_diagnostics::{Diagnostic, FileId};
use pipeweave_dsl::{Args, Prepared};

/// The ranks of the grid.
pub const GRID_RANKS: std::ops::RangeInclusive<u32> = 2..=8;

/// What `check` found in a schedule without problems.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// How many (P, M) of the grid its top-level requirements admit, each compiled and valid.
    pub combinations: usize,
    /// Why no plan was compiled, when none was.
    pub nothing_compiled: Option<String>,
}

/// Checks the `.weave` schedule in `file` (`name` as the user named it): syntax and names, then
/// for P = 2…8 and every M from 1 to 2P its top-level requirements admit, with every parameter
/// at its default, the plan compiled and validated. The first combination that fails is the
/// failure, with its diagnostic and the combination in a note.
pub fn check_schedule(name: &str, file: FileId, files: &Files) -> Result<Checked, Failure> {
    let text = files.text(file).unwrap_or_default();
    let diags = pipeweave_dsl::check(file, text);
    if diags.iter().any(Diagnostic::is_error) {
        return Err(Failure::from_diagnostics(diags));
    }
    let prepared = pipeweave_dsl::prepare(file, text).map_err(Failure::from_diagnostics)?;
    if let Some(first) = prepared.without_default().first() {
        return Ok(Checked {
            combinations: 0,
            nothing_compiled: Some(format!(
                "parameter `{first}` has no default, so no plan was compiled"
            )),
        });
    }
    let mut combinations = 0;
    for p in GRID_RANKS {
        for m in 1..=2 * p {
            if compile_one(name, &prepared, p, m)? {
                combinations += 1;
            }
        }
    }
    let nothing_compiled = (combinations == 0).then(|| {
        format!(
            "its requirements admit no P from {} to {} with M up to 2P, so no plan was compiled",
            GRID_RANKS.start(),
            GRID_RANKS.end()
        )
    });
    Ok(Checked {
        combinations,
        nothing_compiled,
    })
}

/// Compiles and validates the schedule at P = `p`, M = `m`: `Ok(false)` when its top-level
/// requirements do not admit them, the first problem (with the combination) when it fails.
fn compile_one(name: &str, prepared: &Prepared, p: u32, m: u32) -> Result<bool, Failure> {
    let args = Args::new(p, m);
    let failed = |diags: Vec<Diagnostic>| grid_failure(name, diags, p, m);
    if !prepared.admits(&args).map_err(failed)? {
        return Ok(false);
    }
    let compiled = prepared.compile(&args).map_err(failed)?;
    let problems = pipeweave_check::problems(&compiled.plan);
    if problems.is_empty() {
        return Ok(true);
    }
    let origins = Origins::Schedule(compiled.origins);
    Err(failed(problem_diagnostics(Some(&origins), &problems)))
}

/// The first error of a failing combination, with the combination and how to see the rest.
fn grid_failure(name: &str, diags: Vec<Diagnostic>, p: u32, m: u32) -> Failure {
    let errors = diags.iter().filter(|d| d.is_error()).count();
    let Some(first) = diags.into_iter().find(Diagnostic::is_error) else {
        return Failure::invalid(format!("{name} fails at P = {p}, M = {m}"));
    };
    let mut first = first.with_note(format!(
        "at P = {p}, M = {m}, every parameter at its default: the first failing combination of P = {}…{} and M = 1…2P",
        GRID_RANKS.start(),
        GRID_RANKS.end()
    ));
    if errors > 1 {
        first = first.with_note(format!(
            "and {} more problem{} there: `pipeweave validate {name} -p {p} -m {m}` shows them all",
            errors - 1,
            if errors == 2 { "" } else { "s" }
        ));
    }
    Failure::from_diagnostics(vec![first])
}
