//! The schedule language: a pest grammar (`weave.pest`), its syntax tree, and the compiler from a
//! `.weave` file and parameters to a step [`Plan`](pipeweave_plan::Plan).
//!
//! Phases: [`parse`] (never fails; syntax errors are diagnostics) → resolution of names
//! ([`check`] stops here) → [`compile`] for given [`Args`] into a [`Compiled`] plan whose
//! [`Origins`] map every action back to the source. This crate does no IO and does not validate
//! plans; the caller hands the plan to `pipeweave-check` and maps problems back with
//! [`Origins::diagnostic`]. The `schedules/` library is embedded: see [`library`].

#![warn(missing_docs)]

mod compile;
mod eval;
mod grammar;
mod ir;
pub mod library;
mod nesting;
mod parse;
mod program;
mod resolve;
mod scope;
mod split;
pub mod syntax;
mod words;

pub use compile::{Args, Compiled, Origins};
pub use parse::parse;
pub use resolve::BUILTINS;

use pipeweave_diagnostics::{Diagnostic, FileId};

/// Parses and resolves a file without compiling a plan: every syntax and name error.
pub fn check(file: FileId, source: &str) -> Vec<Diagnostic> {
    let (schedule, mut diags) = parse(file, source);
    let (_, more) = resolve::resolve(file, &schedule, !diags.is_empty());
    diags.extend(more);
    diags
}

/// Parses, resolves and compiles a schedule for `args`.
///
/// On failure, returns every diagnostic found (syntax and name errors of the whole file, or the
/// evaluation errors for these parameters: failed requirements, negative counts, counters running
/// past M, ...).
pub fn compile(file: FileId, source: &str, args: &Args) -> Result<Compiled, Vec<Diagnostic>> {
    let (schedule, mut diags) = parse(file, source);
    let (resolved, more) = resolve::resolve(file, &schedule, !diags.is_empty());
    diags.extend(more);
    match resolved {
        Some(r) if diags.is_empty() => compile::compile(file, &r, args),
        _ => Err(diags),
    }
}

/// What a schedule says about itself: its doc string, parameters and requirements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    /// The `doc "..."` string, if the file has one.
    pub doc: Option<String>,
    /// The declared parameters (`param v = 2`), in file order.
    pub params: Vec<ParamInfo>,
    /// The conditions of the top-level `require`s as written (`M >= 2 * P`), in file order.
    pub requires: Vec<String>,
}

/// One declared parameter of a schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamInfo {
    /// Its name, as `--set NAME=VALUE` takes it.
    pub name: String,
    /// The default as written in the file (an expression), if any.
    pub default: Option<String>,
    /// Its description, if the declaration has one.
    pub help: Option<String>,
}

/// The doc string, parameters and requirements of a schedule (parsing what it can; errors are
/// ignored here).
pub fn info(source: &str) -> Info {
    let (schedule, _) = parse(FileId(0), source);
    Info {
        requires: schedule
            .items
            .iter()
            .filter_map(|i| match &i.kind {
                syntax::ItemKind::Require(r) => source.get(r.cond.span.clone()).map(str::to_owned),
                _ => None,
            })
            .collect(),
        doc: schedule.doc(),
        params: schedule
            .params()
            .map(|(name, default, help)| ParamInfo {
                name: name.text.clone(),
                default: default.and_then(|e| source.get(e.span.clone()).map(str::to_owned)),
                help: help.map(str::to_owned),
            })
            .collect(),
    }
}
