//! The resolved program: what name resolution (`resolve.rs`) produces and the compiler evaluates.
//!
//! It mirrors the syntax tree, with every name replaced by a slot in one flat environment of
//! integers and every action given an origin (the index of its source span).

use crate::syntax::BinOp;
use pipeweave_param::ParamType;
use pipeweave_plan::Kind;
use std::ops::Range;

/// The environment slot of `P`.
pub(crate) const SLOT_P: usize = 0;
/// The environment slot of `M`.
pub(crate) const SLOT_M: usize = 1;

/// An expression with its names resolved to slots.
#[derive(Debug, Clone)]
pub(crate) struct Expr {
    pub kind: ExprKind,
    pub span: Range<usize>,
}

#[derive(Debug, Clone)]
pub(crate) enum ExprKind {
    Const(i64),
    Slot(usize),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Min(Vec<Expr>),
    Max(Vec<Expr>),
    If(Box<Expr>, Box<Expr>, Box<Expr>),
}

/// A piece of a requirement's message: text, or a `{name}` hole filled from a slot (a parameter's
/// value shown as its type spells it: `true`, an option's name).
#[derive(Debug, Clone)]
pub(crate) enum MessagePart {
    Text(String),
    Slot(usize, Option<ParamType>),
}

/// An environment value as a parameter of type `ty` spells it (`true`, `3`, `direct`); a plain
/// number when there is no type.
pub(crate) fn shown(ty: Option<&ParamType>, v: i64) -> String {
    match ty {
        Some(ParamType::Bool) => (v != 0).to_string(),
        Some(ParamType::Choice(options)) => usize::try_from(v)
            .ok()
            .and_then(|i| options.get(i))
            .cloned()
            .unwrap_or_else(|| v.to_string()),
        _ => v.to_string(),
    }
}

/// `require cond else "message"`.
#[derive(Debug, Clone)]
pub(crate) struct Requirement {
    pub cond: Expr,
    pub message: Vec<MessagePart>,
    pub span: Range<usize>,
}

/// A statement of the program.
#[derive(Debug, Clone)]
pub(crate) enum Stmt {
    /// `let`: the slot gets the value.
    Set(usize, Expr),
    Require(Requirement),
    Repeat {
        count: Expr,
        body: Vec<Stmt>,
        span: Range<usize>,
    },
    For {
        slot: usize,
        from: Expr,
        to: Expr,
        body: Vec<Stmt>,
        span: Range<usize>,
    },
    If {
        cond: Expr,
        then: Vec<Stmt>,
        otherwise: Vec<Stmt>,
    },
    Steps(Vec<Step>),
}

/// A program entry; the `u32` is its origin, an index into [`Resolved::origins`].
#[derive(Debug, Clone)]
pub(crate) enum Step {
    One(ActionNode, u32),
    Pair(ActionNode, ActionNode, u32),
}

/// An action as written, to be made concrete for each rank.
#[derive(Debug, Clone)]
pub(crate) struct ActionNode {
    pub kind: Kind,
    pub target: Target,
    /// Explicit micro-batch (within the stage's pipeline); `None` takes the next one in order.
    pub mb: Option<Expr>,
    /// `?`: skip the action when its micro-batch does not exist.
    pub optional: bool,
    pub span: Range<usize>,
}

/// Which stage an action runs on.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// The rank's only stage.
    Only,
    /// Local chunk c.
    Chunk(Expr),
    /// A global stage id.
    Stage(Expr),
}

/// A declared parameter.
#[derive(Debug, Clone)]
pub(crate) struct ParamDef {
    pub name: String,
    pub slot: usize,
    /// Its type: in the environment a bool is 1 or 0, a choice the index of its option.
    pub ty: ParamType,
    pub default: Option<Expr>,
    pub span: Range<usize>,
}

/// A top-level statement, in file order.
#[derive(Debug, Clone)]
pub(crate) enum TopStmt {
    Set(usize, Expr),
    Require(Requirement),
}

/// Which rank hosts stage q of pipeline j.
#[derive(Debug, Clone)]
pub(crate) enum Place {
    Loop,
    VShape,
    Mirror,
    /// An expression over the slots `j` and `q`.
    Expr(Expr),
}

/// Everything the compiler needs, with names replaced by slots.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// The size of the environment.
    pub slots: usize,
    pub params: Vec<ParamDef>,
    pub top: Vec<TopStmt>,
    pub pipelines: Option<Expr>,
    pub stages: Expr,
    pub place: Place,
    pub place_span: Option<Range<usize>>,
    pub slot_j: usize,
    pub slot_q: usize,
    pub slot_r: usize,
    pub program: Vec<Stmt>,
    pub program_span: Range<usize>,
    /// The source span of every action node, indexed by origin.
    pub origins: Vec<Range<usize>>,
}
