//! Name resolution: turns the syntax tree into a compact program whose names are slots in one
//! flat environment, reporting unknown and duplicate names on the way (`pipeweave check`).

use crate::syntax::{self, BinOp, ExprKind, ItemKind, Place, Schedule, Step, Stmt, Target};
use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use pipeweave_plan::Kind;
use std::ops::Range;

/// Names every schedule has without declaring them.
pub const BUILTINS: &[(&str, &str)] = &[
    ("P", "ranks"),
    ("M", "micro-batches"),
    ("r", "the rank running the program (in `program`)"),
    ("j", "the pipeline (in `place`)"),
    ("q", "the position in the pipeline (in `place`)"),
];

pub(crate) const SLOT_P: usize = 0;
pub(crate) const SLOT_M: usize = 1;

/// A resolved expression.
#[derive(Debug, Clone)]
pub(crate) struct X {
    pub k: XK,
    pub span: Range<usize>,
}

#[derive(Debug, Clone)]
pub(crate) enum XK {
    Const(i64),
    Slot(usize),
    Neg(Box<X>),
    Not(Box<X>),
    Bin(BinOp, Box<X>, Box<X>),
    Min(Vec<X>),
    Max(Vec<X>),
    If(Box<X>, Box<X>, Box<X>),
}

/// A requirement message with `{name}` holes filled from slots.
#[derive(Debug, Clone)]
pub(crate) enum Part {
    Text(String),
    Slot(usize),
}

#[derive(Debug, Clone)]
pub(crate) struct Req {
    pub cond: X,
    pub message: Vec<Part>,
    pub span: Range<usize>,
}

#[derive(Debug, Clone)]
pub(crate) enum S {
    Set(usize, X),
    Require(Req),
    Repeat {
        count: X,
        body: Vec<S>,
        span: Range<usize>,
    },
    For {
        slot: usize,
        from: X,
        to: X,
        body: Vec<S>,
        span: Range<usize>,
    },
    If {
        cond: X,
        then: Vec<S>,
        otherwise: Vec<S>,
    },
    Steps(Vec<A>),
}

/// A resolved program entry; `origin` indexes [`Resolved::origins`].
#[derive(Debug, Clone)]
pub(crate) enum A {
    One(AN, u32),
    Pair(AN, AN, u32),
}

#[derive(Debug, Clone)]
pub(crate) struct AN {
    pub kind: Kind,
    pub target: T,
    pub mb: Option<X>,
    pub optional: bool,
    pub span: Range<usize>,
}

#[derive(Debug, Clone)]
pub(crate) enum T {
    Only,
    Chunk(X),
    Stage(X),
}

#[derive(Debug, Clone)]
pub(crate) struct ParamDef {
    pub name: String,
    pub slot: usize,
    pub default: Option<X>,
    pub span: Range<usize>,
}

/// A top-level statement, in file order.
#[derive(Debug, Clone)]
pub(crate) enum Top {
    Set(usize, X),
    Require(Req),
}

#[derive(Debug, Clone)]
pub(crate) enum ResolvedPlace {
    Loop,
    VShape,
    Mirror,
    Expr(X),
}

/// Everything the evaluator needs, with names replaced by slots.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub slots: usize,
    pub params: Vec<ParamDef>,
    pub top: Vec<Top>,
    pub pipelines: Option<X>,
    pub stages: X,
    pub place: ResolvedPlace,
    pub place_span: Option<Range<usize>>,
    pub slot_j: usize,
    pub slot_q: usize,
    pub slot_r: usize,
    pub program: Vec<S>,
    pub program_span: Range<usize>,
    /// The source span of every action node, indexed by origin.
    pub origins: Vec<Range<usize>>,
}

struct Resolver {
    file: FileId,
    diags: Vec<Diagnostic>,
    /// Visible names, innermost last; `scopes` marks where each block's names begin.
    names: Vec<(String, usize)>,
    scopes: Vec<usize>,
    slots: usize,
    origins: Vec<Range<usize>>,
}

impl Resolver {
    fn declare(&mut self, name: &syntax::Name) -> usize {
        if BUILTINS.iter().any(|(b, _)| *b == name.text) {
            self.diags.push(
                Diagnostic::error(format!(
                    "`{}` is built in and cannot be redefined",
                    name.text
                ))
                .with_span_label(Span::new(self.file, name.span.clone()), "built-in name"),
            );
        } else {
            let scope_start = self.scopes.last().copied().unwrap_or(0);
            if self.names[scope_start..]
                .iter()
                .any(|(n, _)| *n == name.text)
            {
                self.diags.push(
                    Diagnostic::error(format!("`{}` is already defined here", name.text))
                        .with_span_label(Span::new(self.file, name.span.clone()), "defined twice")
                        .with_help("pick another name; a name can be defined once per block"),
                );
            }
        }
        self.bind(&name.text)
    }

    fn bind(&mut self, name: &str) -> usize {
        let slot = self.slots;
        self.slots += 1;
        self.names.push((name.to_owned(), slot));
        slot
    }

    fn lookup(&self, name: &str) -> Option<usize> {
        self.names
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|&(_, s)| s)
    }

    fn unknown(&mut self, name: &str, span: Range<usize>) {
        let mut d = Diagnostic::error(format!("unknown name `{name}`"))
            .with_span_label(Span::new(self.file, span), "not defined here");
        let mut visible: Vec<&str> = self.names.iter().map(|(n, _)| n.as_str()).collect();
        visible.sort_unstable();
        visible.dedup();
        if let Some(best) = visible
            .iter()
            .map(|n| (strsim::levenshtein(n, name), *n))
            .filter(|&(d, n)| d <= 2 && d < n.len().max(name.len()))
            .min()
        {
            d = d.with_help(format!("did you mean `{}`?", best.1));
        } else if name == "r" {
            d = d.with_help("the rank `r` exists only inside `program`");
        } else if name == "j" || name == "q" {
            d = d.with_help("`j` and `q` exist only in `place = ...`");
        } else if !visible.is_empty() {
            d = d.with_note(format!("names defined here: {}", visible.join(", ")));
        }
        self.diags.push(d);
    }

    fn expr(&mut self, e: &syntax::Expr) -> X {
        let k = match &e.kind {
            ExprKind::Int(v) => XK::Const(*v),
            ExprKind::Name(n) => match self.lookup(n) {
                Some(s) => XK::Slot(s),
                None => {
                    self.unknown(n, e.span.clone());
                    XK::Const(0)
                }
            },
            ExprKind::Neg(a) => XK::Neg(Box::new(self.expr(a))),
            ExprKind::Not(a) => XK::Not(Box::new(self.expr(a))),
            ExprKind::Binary(op, a, b) => {
                XK::Bin(*op, Box::new(self.expr(a)), Box::new(self.expr(b)))
            }
            ExprKind::Min(args) => XK::Min(args.iter().map(|a| self.expr(a)).collect()),
            ExprKind::Max(args) => XK::Max(args.iter().map(|a| self.expr(a)).collect()),
            ExprKind::If(c, a, b) => XK::If(
                Box::new(self.expr(c)),
                Box::new(self.expr(a)),
                Box::new(self.expr(b)),
            ),
        };
        X {
            k,
            span: e.span.clone(),
        }
    }

    fn require(&mut self, r: &syntax::Require, span: Range<usize>) -> Req {
        let cond = self.expr(&r.cond);
        let mut message = Vec::new();
        let mut text = String::new();
        let mut rest = r.message.as_str();
        while let Some(open) = rest.find('{') {
            let after = &rest[open + 1..];
            let close = after.find('}');
            let hole = close.map(|c| &after[..c]);
            match hole {
                Some(n) if !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                    text.push_str(&rest[..open]);
                    message.push(Part::Text(std::mem::take(&mut text)));
                    match self.lookup(n) {
                        Some(s) => message.push(Part::Slot(s)),
                        None => {
                            self.unknown(n, r.message_span.clone());
                            message.push(Part::Text(format!("{{{n}}}")));
                        }
                    }
                    rest = &after[n.len() + 1..];
                }
                _ => {
                    text.push_str(&rest[..=open]);
                    rest = after;
                }
            }
        }
        text.push_str(rest);
        message.push(Part::Text(text));
        Req {
            cond,
            message,
            span,
        }
    }

    fn block(&mut self, b: &syntax::Block) -> Vec<S> {
        self.scopes.push(self.names.len());
        let out = b.stmts.iter().map(|s| self.stmt(s)).collect();
        if let Some(start) = self.scopes.pop() {
            self.names.truncate(start);
        }
        out
    }

    fn stmt(&mut self, s: &Stmt) -> S {
        match s {
            Stmt::Let { name, value } => {
                let value = self.expr(value);
                S::Set(self.declare(name), value)
            }
            Stmt::Require(r) => {
                let span = r.cond.span.start..r.message_span.end;
                S::Require(self.require(r, span))
            }
            Stmt::Repeat { count, body, span } => S::Repeat {
                count: self.expr(count),
                body: self.block(body),
                span: span.clone(),
            },
            Stmt::For {
                var,
                from,
                to,
                body,
                span,
            } => {
                let from = self.expr(from);
                let to = self.expr(to);
                self.scopes.push(self.names.len());
                let slot = self.declare(var);
                let body = self.block(body);
                if let Some(start) = self.scopes.pop() {
                    self.names.truncate(start);
                }
                S::For {
                    slot,
                    from,
                    to,
                    body,
                    span: span.clone(),
                }
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => S::If {
                cond: self.expr(cond),
                then: self.block(then),
                otherwise: otherwise
                    .as_ref()
                    .map(|b| self.block(b))
                    .unwrap_or_default(),
            },
            Stmt::Steps(steps) => S::Steps(steps.iter().map(|s| self.step(s)).collect()),
        }
    }

    fn step(&mut self, s: &Step) -> A {
        let origin = self.origins.len() as u32;
        self.origins.push(s.span());
        match s {
            Step::One(a) => A::One(self.action(a), origin),
            Step::Pair { f, b, .. } => A::Pair(self.action(f), self.action(b), origin),
        }
    }

    fn action(&mut self, a: &syntax::ActionNode) -> AN {
        AN {
            kind: a.kind,
            target: match &a.target {
                Target::Only => T::Only,
                Target::Chunk(e) => T::Chunk(self.expr(e)),
                Target::Stage(e) => T::Stage(self.expr(e)),
            },
            mb: a.mb.as_ref().map(|e| self.expr(e)),
            optional: a.optional,
            span: a.span.clone(),
        }
    }
}

/// Resolves a parsed schedule. Returns `None` (with diagnostics) when something essential is
/// missing or a name is unknown.
///
/// `partial` says the file had syntax errors: items may be missing because they did not parse, so
/// their absence is not reported again.
pub(crate) fn resolve(
    file: FileId,
    schedule: &Schedule,
    partial: bool,
) -> (Option<Resolved>, Vec<Diagnostic>) {
    let mut r = Resolver {
        file,
        diags: Vec::new(),
        names: Vec::new(),
        scopes: Vec::new(),
        slots: 0,
        origins: Vec::new(),
    };
    r.bind("P");
    r.bind("M");

    // Parameters are visible everywhere; each default sees P, M and the parameters before it.
    let mut params = Vec::new();
    for item in &schedule.items {
        if let ItemKind::Param { name, default, .. } = &item.kind {
            let default = default.as_ref().map(|e| r.expr(e));
            let slot = r.declare(name);
            params.push(ParamDef {
                name: name.text.clone(),
                slot,
                default,
                span: name.span.clone(),
            });
        }
    }

    let mut single = |what: &str, span: &Range<usize>, first: &mut Option<Range<usize>>| {
        if let Some(f) = first {
            r.diags.push(
                Diagnostic::error(format!("the schedule has two `{what}` items"))
                    .with_span_label(Span::new(file, span.clone()), "second one")
                    .with_label(Span::new(file, f.clone()), "first one"),
            );
        } else {
            *first = Some(span.clone());
        }
    };
    let (mut seen_pipelines, mut seen_stages, mut seen_place, mut seen_program) =
        (None, None, None, None);
    for item in &schedule.items {
        match &item.kind {
            ItemKind::Pipelines(_) => single("pipelines", &item.span, &mut seen_pipelines),
            ItemKind::Stages(_) => single("stages", &item.span, &mut seen_stages),
            ItemKind::Place(_) => single("place", &item.span, &mut seen_place),
            ItemKind::Program(_) => single("program", &item.span, &mut seen_program),
            _ => {}
        }
    }

    let mut top = Vec::new();
    for item in &schedule.items {
        match &item.kind {
            ItemKind::Let { name, value } => {
                let value = r.expr(value);
                top.push(Top::Set(r.declare(name), value));
            }
            ItemKind::Require(req) => top.push(Top::Require(r.require(req, item.span.clone()))),
            _ => {}
        }
    }

    let mut pipelines = None;
    let mut stages = None;
    let mut place = ResolvedPlace::Loop;
    let mut place_span = None;
    let mut program = None;
    let mut program_span = 0..0;
    let slot_j;
    let slot_q;
    let slot_r;
    {
        let mark = r.names.len();
        slot_j = r.bind("j");
        slot_q = r.bind("q");
        for item in &schedule.items {
            if let ItemKind::Place(Place::Expr(e)) = &item.kind {
                place = ResolvedPlace::Expr(r.expr(e));
            }
        }
        r.names.truncate(mark);
    }
    for item in &schedule.items {
        match &item.kind {
            ItemKind::Pipelines(e) if pipelines.is_none() => pipelines = Some(r.expr(e)),
            ItemKind::Stages(e) if stages.is_none() => stages = Some(r.expr(e)),
            ItemKind::Place(p) if place_span.is_none() => {
                place_span = Some(item.span.clone());
                match p {
                    Place::Loop => place = ResolvedPlace::Loop,
                    Place::VShape => place = ResolvedPlace::VShape,
                    Place::Mirror => place = ResolvedPlace::Mirror,
                    Place::Expr(_) => {}
                }
            }
            _ => {}
        }
    }
    {
        let mark = r.names.len();
        slot_r = r.bind("r");
        for item in &schedule.items {
            if let ItemKind::Program(b) = &item.kind
                && program.is_none()
            {
                // The keyword alone: problems at the end of a program point here.
                program_span = item.span.start..item.span.start + "program".len();
                program = Some(r.block(b));
            }
        }
        r.names.truncate(mark);
    }

    if stages.is_none() && !partial {
        r.diags.push(
            Diagnostic::error("the schedule has no `stages` item")
                .with_help("say how many stages each pipeline has, e.g. `stages 2 * P`"),
        );
    }
    if program.is_none() && !partial {
        r.diags.push(
            Diagnostic::error("the schedule has no `program`").with_help(
                "write what every rank runs: `program { repeat M { F } repeat M { B } }`",
            ),
        );
    }
    let failed = r.diags.iter().any(Diagnostic::is_error);
    let resolved = match (stages, program) {
        (Some(stages), Some(program)) if !failed => Some(Resolved {
            slots: r.slots,
            params,
            top,
            pipelines,
            stages,
            place,
            place_span,
            slot_j,
            slot_q,
            slot_r,
            program,
            program_span,
            origins: r.origins,
        }),
        _ => None,
    };
    (resolved, r.diags)
}
