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
    pub text: String,
    pub span: Range<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub kind: ItemKind,
    pub span: Range<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemKind {
    /// `doc "text"`: shown by `pipeweave list`.
    Doc(String),
    /// `param NAME[: TYPE] [= default] ["help"]`.
    Param(ParamDecl),
    /// `same as plugin NAME`: the plugin builds the same plans as this schedule.
    SameAs(Name),
    /// `let NAME = expr` at the top level: a constant over the parameters.
    Let { name: Name, value: Expr },
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
    pub name: Name,
    /// The declared type and where it is written; `None` when the declaration gives none (an
    /// `int` then).
    pub ty: Option<(ParamType, Range<usize>)>,
    pub default: Option<Expr>,
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Require {
    pub cond: Expr,
    pub message: String,
    pub message_span: Range<usize>,
}

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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Range<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stmt {
    Let {
        name: Name,
        value: Expr,
    },
    Require(Require),
    Repeat {
        count: Expr,
        body: Block,
        span: Range<usize>,
    },
    For {
        var: Name,
        from: Expr,
        to: Expr,
        body: Block,
        span: Range<usize>,
    },
    If {
        cond: Expr,
        then: Block,
        otherwise: Option<Block>,
    },
    Steps(Vec<Step>),
}

/// One entry of a rank's program as written: an action or an overlapped pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    One(ActionNode),
    Pair {
        f: ActionNode,
        b: ActionNode,
        span: Range<usize>,
    },
}

impl Step {
    pub fn span(&self) -> Range<usize> {
        match self {
            Step::One(a) => a.span.clone(),
            Step::Pair { span, .. } => span.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionNode {
    pub kind: Kind,
    pub target: Target,
    /// Explicit micro-batch (within the stage's pipeline); `None` takes the next one in order.
    pub mb: Option<Expr>,
    /// `?`: skip the action when its micro-batch does not exist.
    pub optional: bool,
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Range<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExprKind {
    Int(i64),
    /// `true` or `false` (1 or 0 in arithmetic).
    Bool(bool),
    /// A quoted string: an option of a choice parameter, compared with it.
    Str(String),
    Name(String),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Min(Vec<Expr>),
    Max(Vec<Expr>),
    If(Box<Expr>, Box<Expr>, Box<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}
