//! The schedule language: a pest grammar (`weave.pest`), its syntax tree, and the compiler from a
//! `.weave` file and parameters to a step [`Plan`](pipeweave_plan::Plan).
//!
//! Phases: [`parse`] (never fails; syntax errors are diagnostics) → resolution of names
//! ([`check`] stops here; [`prepare`] keeps the result to compile it many times) → [`compile`] for
//! given [`Args`] into a [`Compiled`] plan whose [`Origins`] map every action back to the source.
//! Parameters are typed with `pipeweave-param`'s model (bool, int in a range, choice), the same
//! as a plugin's. This crate does no IO and does not validate
//! plans; the caller hands the plan to `pipeweave-check` and maps problems back with
//! [`Origins::diagnostic`]. The `schedules/` library is embedded: see [`library`].

#![warn(missing_docs)]

mod budget;
mod compile;
mod eval;
pub mod facts;
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
pub use pipeweave_param::{ParamType, Value};
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
    prepare(file, source)?.compile(args)
}

/// A schedule parsed and resolved once, to be compiled for many parameters.
#[derive(Debug, Clone)]
pub struct Prepared {
    file: FileId,
    resolved: ir::Resolved,
}

/// Parses and resolves a schedule; every syntax and name error when it cannot be compiled.
pub fn prepare(file: FileId, source: &str) -> Result<Prepared, Vec<Diagnostic>> {
    let (schedule, mut diags) = parse(file, source);
    let (resolved, more) = resolve::resolve(file, &schedule, !diags.is_empty());
    diags.extend(more);
    match resolved {
        Some(resolved) if diags.is_empty() => Ok(Prepared { file, resolved }),
        _ => Err(diags),
    }
}

impl Prepared {
    /// Compiles the schedule for `args` (see [`compile`]).
    pub fn compile(&self, args: &Args) -> Result<Compiled, Vec<Diagnostic>> {
        compile::compile(self.file, &self.resolved, args)
    }

    /// Whether the top-level requirements hold for `args`: `Ok(false)` when a top-level
    /// `require` fails; errors when the parameters cannot be bound (a value of the wrong type, a
    /// default outside its range, a parameter without a default) or a top-level `let` fails.
    pub fn admits(&self, args: &Args) -> Result<bool, Vec<Diagnostic>> {
        compile::admits_args(self.file, &self.resolved, args)
    }

    /// The parameters declared without a default, in order.
    pub fn without_default(&self) -> Vec<&str> {
        self.resolved
            .params
            .iter()
            .filter(|p| p.default.is_none())
            .map(|p| p.name.as_str())
            .collect()
    }
}

/// What a schedule says about itself: its doc string, parameters and requirements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    /// The `doc "..."` string, if the file has one.
    pub doc: Option<String>,
    /// The declared parameters (`param v = 2`), in file order.
    pub params: Vec<ParamInfo>,
    /// The messages of the top-level `require`s, in file order, each `{name}` hole shown as its
    /// name: what the schedule requires in words.
    pub requires: Vec<String>,
    /// The plugin `same as plugin NAME` says builds the same plans.
    pub same_as_plugin: Option<String>,
}

/// One declared parameter of a schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamInfo {
    /// Its name, as `--set NAME=VALUE` takes it.
    pub name: String,
    /// The declared type (an `int` when the file gives none).
    pub ty: ParamType,
    /// The default as written in the file (a value or an expression), if any.
    pub default: Option<String>,
    /// Its description, if the declaration has one.
    pub help: Option<String>,
}

/// A requirement's message in words: each `{name}` hole shown as its name.
fn requirement_words(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close)
                if close > 0
                    && after[..close]
                        .chars()
                        .all(|c| c.is_alphanumeric() || c == '_') =>
            {
                out.push_str(&rest[..open]);
                out.push_str(&after[..close]);
                rest = &after[close + 1..];
            }
            _ => {
                out.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
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
                syntax::ItemKind::Require(r) => Some(requirement_words(&r.message)),
                _ => None,
            })
            .collect(),
        doc: schedule.doc(),
        params: schedule
            .params()
            .map(|p| ParamInfo {
                name: p.name.text.clone(),
                ty: p.param_type(),
                default: p.default.as_ref().and_then(|e| match &e.kind {
                    // An option written in quotes is shown as its name.
                    syntax::ExprKind::Str(option) => Some(option.clone()),
                    _ => source.get(e.span.clone()).map(str::to_owned),
                }),
                help: p.help.clone(),
            })
            .collect(),
        same_as_plugin: schedule.same_as_plugin().map(|n| n.text.clone()),
    }
}
