//! The syntax tree of a `.weave` file: what the parser builds and the compiler reads.
//!
//! Every node keeps the byte range it came from, so that every later diagnostic (an unknown name,
//! a negative count, a validator problem) can point at the source.

use pipeweave_param::ParamType;
use pipeweave_plan::Kind;
use std::ops::Range;

/// A parsed schedule file (possibly partial when the file had syntax errors).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Schedule {
    /// The top-level items in file order (those that parsed).
    pub items: Vec<Item>,
}

impl Schedule {
    /// The doc string: every `doc` item, joined by newlines.
    pub fn doc(&self) -> Option<String> {
        let docs: Vec<&str> = self
            .items
            .iter()
            .filter_map(|i| match &i.kind {
                ItemKind::Doc(s) => Some(s.as_str()),
                _ => None,
            })
            .collect();
        (!docs.is_empty()).then(|| docs.join("\n"))
    }

    /// The declared parameters, in file order.
    pub fn params(&self) -> impl Iterator<Item = &ParamDecl> {
        self.items.iter().filter_map(|i| match &i.kind {
            ItemKind::Param(p) => Some(p),
            _ => None,
        })
    }

    /// The plugin of the first `same as plugin NAME` item.
    pub fn same_as_plugin(&self) -> Option<&Name> {
        self.items.iter().find_map(|i| match &i.kind {
            ItemKind::SameAs(name) => Some(name),
            _ => None,
        })
    }
}

/// A name as written, with its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name {
    /// The name.
    pub text: String,
    /// Its bytes in the file.
    pub span: Range<usize>,
}

/// One top-level item of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// What the item is.
    pub kind: ItemKind,
    /// Its bytes in the file.
    pub span: Range<usize>,
}

/// The top-level items of the language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemKind {
    /// `doc "text"`: shown by `pipeweave list`.
    Doc(String),
    /// `param NAME[: TYPE] [= default] ["help"]`.
    Param(ParamDecl),
    /// `same as plugin NAME`: the plugin builds the same plans as this schedule.
    SameAs(Name),
    /// `let NAME = expr` at the top level: a constant over the parameters.
    Let {
        /// The constant's name.
        name: Name,
        /// Its value.
        value: Expr,
    },
    /// `require cond else "message"`.
    Require(Require),
    /// `pipelines K`: K pipelines, replicas of one model (default 1).
    Pipelines(Expr),
    /// `stages S`: the number of stages of every pipeline.
    Stages(Expr),
    /// `place ...`: which rank hosts stage q of pipeline j.
    Place(Place),
    /// `program { ... }`: what every rank r runs.
    Program(Block),
}

/// `param NAME[: TYPE] [= default] ["help"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamDecl {
    /// The parameter's name.
    pub name: Name,
    /// The declared type and where it is written; `None` when the declaration gives none (an
    /// `int` then).
    pub ty: Option<(ParamType, Range<usize>)>,
    /// Its default, over P, M and the parameters declared before it; `None`: it must be set.
    pub default: Option<Expr>,
    /// Its description, shown by `pipeweave list`.
    pub help: Option<String>,
}

impl ParamDecl {
    /// The type: as declared, else an `int` without constraints.
    pub fn param_type(&self) -> ParamType {
        self.ty
            .as_ref()
            .map_or_else(ParamType::int, |(ty, _)| ty.clone())
    }
}

/// `require cond else "message"`: compiling fails with `message` when `cond` is 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Require {
    /// The condition (non-zero is true).
    pub cond: Expr,
    /// What the failure says, as written between the quotes.
    pub message: String,
    /// The message's bytes in the file, quotes included.
    pub message_span: Range<usize>,
}

/// How stages are placed on ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// Stage q on rank q mod P (Megatron's interleaved placement).
    Loop,
    /// Stage q on rank q mod P going down, then back up (ZB-V, DualPipeV).
    VShape,
    /// Even pipelines loop, odd pipelines run the other way (DualPipe, Chimera).
    Mirror,
    /// Any expression over `j` (pipeline) and `q` (position).
    Expr(Expr),
}

/// `{ ... }`: statements run in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The statements.
    pub stmts: Vec<Stmt>,
    /// The block's bytes in the file, braces included.
    pub span: Range<usize>,
}

/// A statement of a rank's program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stmt {
    /// `let NAME = expr`: a local value, visible to the statements after it in its block.
    Let {
        /// The value's name.
        name: Name,
        /// The expression.
        value: Expr,
    },
    /// `require cond else "message"` inside a program, checked for every rank.
    Require(Require),
    /// `repeat N { ... }`: the body N times (N ≥ 0).
    Repeat {
        /// N.
        count: Expr,
        /// The body.
        body: Block,
        /// The statement's bytes in the file.
        span: Range<usize>,
    },
    /// `for i in a..b { ... }`: the body for i = a, a + 1, ..., b − 1 (b before a is an error).
    For {
        /// The loop variable.
        var: Name,
        /// The first value.
        from: Expr,
        /// One past the last value.
        to: Expr,
        /// The body.
        body: Block,
        /// The statement's bytes in the file.
        span: Range<usize>,
    },
    /// `if cond { ... } else { ... }`: the first block when `cond` is non-zero.
    If {
        /// The condition.
        cond: Expr,
        /// Run when the condition is non-zero.
        then: Block,
        /// Run otherwise (`else if` is an `If` in a block of its own).
        otherwise: Option<Block>,
    },
    /// Actions written one after another, each appended to the rank's program.
    Steps(Vec<Step>),
}

/// One entry of a rank's program as written: an action or an overlapped pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// One action.
    One(ActionNode),
    /// `(F & B)`: a forward and a backward overlapped.
    Pair {
        /// The forward.
        f: ActionNode,
        /// The backward (B or I).
        b: ActionNode,
        /// The pair's bytes in the file.
        span: Range<usize>,
    },
}

impl Step {
    /// The step's bytes in the file.
    pub fn span(&self) -> Range<usize> {
        match self {
            Step::One(a) => a.span.clone(),
            Step::Pair { span, .. } => span.clone(),
        }
    }
}

/// An action as written: `F`, `B1`, `I[c]`, `F@s`, with an optional micro-batch `(m)` and `?`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionNode {
    /// F, B, I or W.
    pub kind: Kind,
    /// Which of the rank's stages it runs on.
    pub target: Target,
    /// Explicit micro-batch (within the stage's pipeline); `None` takes the next one in order.
    pub mb: Option<Expr>,
    /// `?`: skip the action when its micro-batch does not exist.
    pub optional: bool,
    /// The action's bytes in the file.
    pub span: Range<usize>,
}

/// Which stage an action runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The rank's only stage.
    Only,
    /// Local chunk c: the rank's stages in ascending global order.
    Chunk(Expr),
    /// A global stage id.
    Stage(Expr),
}

/// An integer expression (64-bit, overflow is an error; a comparison or logic gives 1 or 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expr {
    /// What the expression is.
    pub kind: ExprKind,
    /// Its bytes in the file.
    pub span: Range<usize>,
}

/// The forms of an expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExprKind {
    /// A whole-number literal.
    Int(i64),
    /// `true` or `false` (1 or 0 in arithmetic).
    Bool(bool),
    /// A quoted string: an option of a choice parameter, compared with it.
    Str(String),
    /// A parameter, constant, local value, loop variable or builtin (`P`, `M`, `r`, ...).
    Name(String),
    /// `-x`.
    Neg(Box<Expr>),
    /// `not x`: 1 when x is 0, else 0.
    Not(Box<Expr>),
    /// `a op b`.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `min(a, b, ...)`.
    Min(Vec<Expr>),
    /// `max(a, b, ...)`.
    Max(Vec<Expr>),
    /// `if c then a else b`: a when c is non-zero, else b (only the one taken is evaluated).
    If(Box<Expr>, Box<Expr>, Box<Expr>),
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`, rounding towards negative infinity.
    Div,
    /// `%`, the remainder of that division (its sign is the divisor's).
    Rem,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `and`: 1 when both are non-zero (the right side is evaluated only when the left is).
    And,
    /// `or`: 1 when either is non-zero (the right side is evaluated only when the left is 0).
    Or,
}
