//! What an editor knows about the language: its keywords and functions in words, and the names a
//! file defines and uses, each use tied to its definition (or to a built-in name), for hover,
//! completion and go-to-definition. Pure: a text in, plain data out; it never fails (a file with
//! errors gives what could be resolved).

use crate::resolve::resolve_recorded;
use pipeweave_diagnostics::FileId;
use std::ops::Range;

/// A word of the language with what it does, as hover and completion show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Word {
    /// The word as written.
    pub word: &'static str,
    /// What it does, in one sentence.
    pub help: &'static str,
}

const fn word(word: &'static str, help: &'static str) -> Word {
    Word { word, help }
}

/// The keywords of the language (items, statements, operators, literals, places and types).
pub const KEYWORDS: &[Word] = &[
    word("doc", "the schedule's description: `doc \"...\"`"),
    word(
        "param",
        "declares a parameter: `param lag: int in 0..=4 = 1 \"help\"`, set with `--set NAME=VALUE`",
    ),
    word(
        "pipelines",
        "how many pipelines share the ranks (default 1); each carries an equal share of M",
    ),
    word(
        "stages",
        "how many stages each pipeline has, e.g. `stages 2 * P`",
    ),
    word(
        "place",
        "puts stages on ranks: `place loop`, `place vshape`, `place mirror` or `place = EXPR` of j and q",
    ),
    word("program", "what every rank `r` runs, in order"),
    word("let", "names a value: `let warmup = P - 1 - r`"),
    word(
        "require",
        "refuses parameters: `require M >= P else \"needs M >= {P}\"`",
    ),
    word("repeat", "runs a block N times: `repeat M { F B }`"),
    word(
        "for",
        "runs a block for i from A up to B - 1: `for i in 0..M { F }`",
    ),
    word(
        "in",
        "`for i in A..B`, or a parameter's range: `int in 0..=4`",
    ),
    word(
        "if",
        "runs a block when a condition holds; `if c then a else b` as a value",
    ),
    word("then", "`if c then a else b`: the value when c holds"),
    word(
        "else",
        "the other branch of an `if`, or a `require`'s message",
    ),
    word("and", "1 when both sides are non-zero"),
    word("or", "1 when either side is non-zero"),
    word("not", "1 when its operand is zero"),
    word("true", "the bool value true (1)"),
    word("false", "the bool value false (0)"),
    word(
        "same",
        "`same as plugin NAME`: the plugin builds the same plans",
    ),
    word("loop", "`place loop`: stage q on rank q mod P"),
    word(
        "vshape",
        "`place vshape`: stages go down the ranks and back up, one V per 2P stages",
    ),
    word(
        "mirror",
        "`place mirror`: even pipelines go down the ranks, odd ones up",
    ),
    word("bool", "a parameter type: true or false"),
    word(
        "int",
        "a parameter type: a whole number, `int in 0..=8 multiple of 2`",
    ),
    word(
        "choice",
        "a parameter type: one of named options, `choice(a, b)`, compared as `order == \"a\"`",
    ),
];

/// The functions of the language.
pub const FUNCTIONS: &[Word] = &[
    word("min", "the smallest of its arguments: `min(P - 1 - r, M)`"),
    word("max", "the largest of its arguments: `max(0, r - 1)`"),
];

/// The actions a program runs.
pub const ACTIONS: &[Word] = &[
    word(
        "F",
        "a forward: `F` (the rank's stage), `F1` (its chunk 1), `F@s` (stage s), `F(m)` (micro-batch m), `F?` (skipped when m is past M)",
    ),
    word("B", "a whole backward (input and weight gradients)"),
    word("I", "the input-gradient half of a split backward"),
    word("W", "the weight-gradient half of a split backward"),
];

/// What a defined name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// A declared parameter (`param`).
    Parameter,
    /// A `let`.
    Let,
    /// A `for` loop's variable.
    Loop,
}

/// A name the file defines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// The name.
    pub name: String,
    /// The bytes of the name where it is defined.
    pub span: Range<usize>,
    /// What defines it.
    pub kind: NameKind,
}

/// What a used name means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meaning {
    /// The definition at this index of [`Names::definitions`].
    Defined(usize),
    /// A built-in name (see [`crate::BUILTINS`]).
    BuiltIn(&'static str),
}

/// A use of a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Use {
    /// The bytes of the use.
    pub span: Range<usize>,
    /// What it means.
    pub meaning: Meaning,
}

/// The names a file defines and uses, in the order the resolver met them; unknown names are
/// left out (they are errors of their own).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    /// Every definition.
    pub definitions: Vec<Definition>,
    /// Every use of a known name.
    pub uses: Vec<Use>,
}

impl Names {
    /// The use whose bytes hold `offset` (its end included, where an editor's cursor stands
    /// after typing the name).
    pub fn use_at(&self, offset: usize) -> Option<&Use> {
        self.uses
            .iter()
            .find(|u| u.span.start <= offset && offset <= u.span.end)
    }

    /// The definition whose name holds `offset` (its end included).
    pub fn definition_at(&self, offset: usize) -> Option<&Definition> {
        self.definitions
            .iter()
            .find(|d| d.span.start <= offset && offset <= d.span.end)
    }
}

/// The names `source` defines and uses (parsing and resolving what it can).
pub fn names(source: &str) -> Names {
    let (schedule, diags) = crate::parse(FileId(0), source);
    let (_, _, record) = resolve_recorded(FileId(0), &schedule, !diags.is_empty());
    let definitions: Vec<Definition> = record
        .defined
        .iter()
        .map(|(_, kind, name, span)| Definition {
            name: name.clone(),
            span: span.clone(),
            kind: *kind,
        })
        .collect();
    // Slots are handed out in order, each once: a table from slot to meaning.
    let mut meaning = std::collections::BTreeMap::new();
    for (i, (slot, ..)) in record.defined.iter().enumerate() {
        meaning.insert(*slot, Meaning::Defined(i));
    }
    for (slot, name) in &record.builtin {
        meaning.insert(*slot, Meaning::BuiltIn(name));
    }
    let uses = record
        .used
        .iter()
        .filter_map(|(span, slot)| {
            meaning.get(slot).map(|m| Use {
                span: span.clone(),
                meaning: *m,
            })
        })
        .collect();
    Names { definitions, uses }
}

#[cfg(test)]
mod tests;
