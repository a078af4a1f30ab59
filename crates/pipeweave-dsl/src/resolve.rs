//! Name resolution: turns the syntax tree into the resolved program ([`crate::ir`]), whose names are
//! slots in one flat environment, reporting unknown and duplicate names on the way
//! (`pipeweave check`).

use crate::facts::NameKind;
use crate::ir::{self, ActionNode, MessagePart, ParamDef, Requirement, Resolved, Stmt, TopStmt};
use crate::scope::Names;
use crate::syntax::{self, BinOp, ItemKind, Place, Schedule};
use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use pipeweave_param::ParamType;
use std::ops::Range;

/// Names every schedule has without declaring them.
pub const BUILTINS: &[(&str, &str)] = &[
    ("P", "ranks"),
    ("M", "micro-batches"),
    ("r", "the rank running the program (in `program`)"),
    ("j", "the pipeline (in `place`)"),
    ("q", "the position in the pipeline (in `place`)"),
];

struct Resolver {
    file: FileId,
    diags: Vec<Diagnostic>,
    /// Visible names, innermost last; `scopes` marks where each block's names begin.
    names: Names,
    scopes: Vec<usize>,
    slots: usize,
    origins: Vec<Range<usize>>,
    /// The type of every parameter, by slot.
    typed: Vec<(usize, ParamType)>,
    /// Where each name was bound and used: what an editor jumps between.
    record: NameRecord,
}

impl Resolver {
    fn declare(&mut self, name: &syntax::Name, kind: NameKind) -> usize {
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
            if self.names.bound_since(&name.text, scope_start) {
                self.diags.push(
                    Diagnostic::error(format!("`{}` is already defined here", name.text))
                        .with_span_label(Span::new(self.file, name.span.clone()), "defined twice")
                        .with_help("pick another name; a name can be defined once per block"),
                );
            }
        }
        let slot = self.bind(&name.text);
        self.record
            .defined
            .push((slot, kind, name.text.clone(), name.span.clone()));
        slot
    }

    fn bind(&mut self, name: &str) -> usize {
        let slot = self.slots;
        self.slots += 1;
        self.names.bind(name, slot);
        slot
    }

    fn lookup(&self, name: &str) -> Option<usize> {
        self.names.lookup(name)
    }

    fn unknown(&mut self, name: &str, span: Range<usize>) {
        let mut d = Diagnostic::error(format!("unknown name `{name}`"))
            .with_span_label(Span::new(self.file, span), "not defined here");
        if let Some(best) = self.names.suggestion(name) {
            d = d.with_help(format!("did you mean `{best}`?"));
        } else if name == "r" {
            d = d.with_help("the rank `r` exists only inside `program`");
        } else if name == "j" || name == "q" {
            d = d.with_help("`j` and `q` exist only in `place = ...`");
        } else if let Some(note) = self.names.listed() {
            d = d.with_note(note);
        }
        self.diags.push(d);
    }

    fn expr(&mut self, e: &syntax::Expr) -> ir::Expr {
        use ir::ExprKind as Out;
        use syntax::ExprKind as In;
        let kind = match &e.kind {
            In::Int(v) => Out::Const(*v),
            In::Bool(b) => Out::Const(i64::from(*b)),
            In::Str(_) => {
                self.diags.push(
                    Diagnostic::error("a quoted string here is no value")
                        .with_span_label(Span::new(self.file, e.span.clone()), "not a number")
                        .with_help(
                            "a quoted string is an option of a choice parameter, compared with it: `order == \"a\"`",
                        ),
                );
                Out::Const(0)
            }
            In::Name(n) => self.name(n, &e.span),
            In::Neg(a) => Out::Neg(Box::new(self.expr(a))),
            In::Not(a) => Out::Not(Box::new(self.expr(a))),
            In::Binary(op @ (BinOp::Eq | BinOp::Ne), a, b)
                if matches!(a.kind, In::Str(_)) || matches!(b.kind, In::Str(_)) =>
            {
                self.choice_comparison(*op, a, b)
            }
            In::Binary(op, a, b) => {
                Out::Binary(*op, Box::new(self.expr(a)), Box::new(self.expr(b)))
            }
            In::Min(args) => Out::Min(args.iter().map(|a| self.expr(a)).collect()),
            In::Max(args) => Out::Max(args.iter().map(|a| self.expr(a)).collect()),
            In::If(c, a, b) => Out::If(
                Box::new(self.expr(c)),
                Box::new(self.expr(a)),
                Box::new(self.expr(b)),
            ),
        };
        ir::Expr {
            kind,
            span: e.span.clone(),
        }
    }

    /// A name used as a value: its slot (a use noted for editors), or an error. Out of line:
    /// `expr` recurses once per level of an expression, and its frame must stay small (64 levels
    /// fit a 512 KiB stack).
    #[inline(never)]
    fn name(&mut self, n: &str, span: &Range<usize>) -> ir::ExprKind {
        let Some(s) = self.lookup(n) else {
            self.unknown(n, span.clone());
            return ir::ExprKind::Const(0);
        };
        self.record.used.push((span.clone(), s));
        if let Some(ParamType::Choice(options)) = self.type_of(s) {
            let first = options.first().cloned().unwrap_or_default();
            self.diags.push(
                Diagnostic::error(format!(
                    "`{n}` is a choice: compare it with one of its options"
                ))
                .with_span_label(Span::new(self.file, span.clone()), "a choice")
                .with_help(format!("e.g. `{n} == \"{first}\"`")),
            );
        }
        ir::ExprKind::Slot(s)
    }

    /// The type of the parameter in `slot`, when the slot is a parameter's.
    fn type_of(&self, slot: usize) -> Option<&ParamType> {
        self.typed.iter().find(|(s, _)| *s == slot).map(|(_, t)| t)
    }

    /// `order == "a"` (either way round, or `!=`): the choice's slot against the option's index.
    fn choice_comparison(&mut self, op: BinOp, a: &syntax::Expr, b: &syntax::Expr) -> ir::ExprKind {
        use ir::ExprKind as Out;
        use syntax::ExprKind as In;
        let (name, option, at) = match (&a.kind, &b.kind) {
            (In::Name(n), In::Str(o)) => (n, o, b.span.clone()),
            (In::Str(o), In::Name(n)) => (n, o, a.span.clone()),
            _ => {
                // Two strings, or a string and something that is no name: no choice here.
                let (a, b) = (self.expr(a), self.expr(b));
                return Out::Binary(op, Box::new(a), Box::new(b));
            }
        };
        let name_span = if matches!(a.kind, In::Name(_)) {
            &a.span
        } else {
            &b.span
        };
        let Some(slot) = self.lookup(name) else {
            self.unknown(name, name_span.clone());
            return Out::Const(0);
        };
        self.record.used.push((name_span.clone(), slot));
        let Some(ParamType::Choice(options)) = self.type_of(slot).cloned() else {
            self.diags.push(
                Diagnostic::error(format!(
                    "`{name}` is no choice parameter, so it is not compared with a quoted string"
                ))
                .with_span_label(Span::new(self.file, at), "a quoted string"),
            );
            return Out::Const(0);
        };
        let Some(index) = options.iter().position(|o| o == option) else {
            let ty = ParamType::Choice(options.clone());
            let mut d = Diagnostic::error(format!(
                "`{name}` has no option `{option}`; it is a choice ({})",
                ty.allowed()
            ))
            .with_span_label(Span::new(self.file, at), "no such option");
            if let Some(close) = options.iter().find(|o| strsim::levenshtein(o, option) <= 2) {
                d = d.with_help(format!("did you mean `{close}`?"));
            }
            self.diags.push(d);
            return Out::Const(0);
        };
        let span = a.span.start.min(b.span.start)..a.span.end.max(b.span.end);
        let slot = ir::Expr {
            kind: Out::Slot(slot),
            span: span.clone(),
        };
        let option = ir::Expr {
            kind: Out::Const(index as i64),
            span,
        };
        Out::Binary(op, Box::new(slot), Box::new(option))
    }

    fn require(&mut self, r: &syntax::Require, span: Range<usize>) -> Requirement {
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
                    message.push(MessagePart::Text(std::mem::take(&mut text)));
                    match self.lookup(n) {
                        Some(s) => message.push(MessagePart::Slot(s, self.type_of(s).cloned())),
                        None => {
                            self.unknown(n, r.message_span.clone());
                            message.push(MessagePart::Text(format!("{{{n}}}")));
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
        message.push(MessagePart::Text(text));
        Requirement {
            cond,
            message,
            span,
        }
    }

    fn block(&mut self, b: &syntax::Block) -> Vec<Stmt> {
        self.scopes.push(self.names.len());
        let out = b.stmts.iter().map(|s| self.stmt(s)).collect();
        if let Some(start) = self.scopes.pop() {
            self.names.truncate(start);
        }
        out
    }

    fn stmt(&mut self, s: &syntax::Stmt) -> Stmt {
        match s {
            syntax::Stmt::Let { name, value } => {
                let value = self.expr(value);
                Stmt::Set(self.declare(name, NameKind::Let), value)
            }
            syntax::Stmt::Require(r) => {
                let span = r.cond.span.start..r.message_span.end;
                Stmt::Require(self.require(r, span))
            }
            syntax::Stmt::Repeat { count, body, span } => Stmt::Repeat {
                count: self.expr(count),
                body: self.block(body),
                span: span.clone(),
            },
            syntax::Stmt::For {
                var,
                from,
                to,
                body,
                span,
            } => {
                let from = self.expr(from);
                let to = self.expr(to);
                self.scopes.push(self.names.len());
                let slot = self.declare(var, NameKind::Loop);
                let body = self.block(body);
                if let Some(start) = self.scopes.pop() {
                    self.names.truncate(start);
                }
                Stmt::For {
                    slot,
                    from,
                    to,
                    body,
                    span: span.clone(),
                }
            }
            syntax::Stmt::If {
                cond,
                then,
                otherwise,
            } => Stmt::If {
                cond: self.expr(cond),
                then: self.block(then),
                otherwise: otherwise
                    .as_ref()
                    .map(|b| self.block(b))
                    .unwrap_or_default(),
            },
            syntax::Stmt::Steps(steps) => Stmt::Steps(steps.iter().map(|s| self.step(s)).collect()),
        }
    }

    fn step(&mut self, s: &syntax::Step) -> ir::Step {
        let origin = self.origins.len() as u32;
        self.origins.push(s.span());
        match s {
            syntax::Step::One(a) => ir::Step::One(self.action(a), origin),
            syntax::Step::Pair { f, b, .. } => {
                ir::Step::Pair(self.action(f), self.action(b), origin)
            }
        }
    }

    fn action(&mut self, a: &syntax::ActionNode) -> ActionNode {
        ActionNode {
            kind: a.kind,
            target: match &a.target {
                syntax::Target::Only => ir::Target::Only,
                syntax::Target::Chunk(e) => ir::Target::Chunk(self.expr(e)),
                syntax::Target::Stage(e) => ir::Target::Stage(self.expr(e)),
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
    let (resolved, diags, _) = resolve_recorded(file, schedule, partial);
    (resolved, diags)
}

/// Where each name was bound (slot, name, the name's bytes at its definition) and used (the
/// bytes of the use, the slot it means), in the order the resolver met them.
#[derive(Debug, Default)]
pub(crate) struct NameRecord {
    pub defined: Vec<(usize, NameKind, String, Range<usize>)>,
    pub used: Vec<(Range<usize>, usize)>,
    /// The slots of the built-in names, by name.
    pub builtin: Vec<(usize, &'static str)>,
}

/// [`resolve`], with where each name was bound and used.
pub(crate) fn resolve_recorded(
    file: FileId,
    schedule: &Schedule,
    partial: bool,
) -> (Option<Resolved>, Vec<Diagnostic>, NameRecord) {
    let mut r = Resolver {
        file,
        diags: Vec::new(),
        names: Names::default(),
        scopes: Vec::new(),
        slots: 0,
        origins: Vec::new(),
        typed: Vec::new(),
        record: NameRecord::default(),
    };
    let p = r.bind("P");
    let m = r.bind("M");
    r.record.builtin.extend([(p, "P"), (m, "M")]);
    let params = r.params(schedule);
    r.single_items(schedule);
    let top = r.top(schedule);
    let shape = r.shape(schedule);
    let slot_r = r.bind_scoped("r");
    r.record.builtin.push((slot_r, "r"));
    let mut program = None;
    let mut program_span = 0..0;
    for item in &schedule.items {
        if let ItemKind::Program(b) = &item.kind
            && program.is_none()
        {
            // The keyword alone: problems at the end of a program point here.
            program_span = item.span.start..item.span.start + "program".len();
            program = Some(r.block(b));
        }
    }
    r.end_scope();

    if shape.stages.is_none() && !partial {
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
    let resolved = match (shape.stages, program) {
        (Some(stages), Some(program)) if !failed => Some(Resolved {
            slots: r.slots,
            params,
            top,
            pipelines: shape.pipelines,
            stages,
            place: shape.place,
            place_span: shape.place_span,
            slot_j: shape.slot_j,
            slot_q: shape.slot_q,
            slot_r,
            program,
            program_span,
            origins: r.origins,
        }),
        _ => None,
    };
    (resolved, r.diags, r.record)
}

/// The `pipelines`, `stages` and `place` items, resolved.
struct Shape {
    pipelines: Option<ir::Expr>,
    stages: Option<ir::Expr>,
    place: ir::Place,
    place_span: Option<Range<usize>>,
    slot_j: usize,
    slot_q: usize,
}

impl Resolver {
    /// Binds a name in a scope of its own (closed by [`Resolver::end_scope`]).
    fn bind_scoped(&mut self, name: &str) -> usize {
        self.scopes.push(self.names.len());
        self.bind(name)
    }

    fn end_scope(&mut self) {
        if let Some(start) = self.scopes.pop() {
            self.names.truncate(start);
        }
    }

    /// The parameters: visible everywhere; each default sees P, M and the parameters before it.
    fn params(&mut self, schedule: &Schedule) -> Vec<ParamDef> {
        let mut params = Vec::new();
        for decl in schedule.params() {
            let ty = decl.param_type();
            let default = decl
                .default
                .as_ref()
                .and_then(|e| self.default(decl, &ty, e));
            let slot = self.declare(&decl.name, NameKind::Parameter);
            self.typed.push((slot, ty.clone()));
            params.push(ParamDef {
                name: decl.name.text.clone(),
                slot,
                ty,
                default,
                span: decl.name.span.clone(),
            });
        }
        params
    }

    /// A parameter's default, resolved: an option's index for a choice, a literal checked
    /// against the type, any other expression as it is (its value is checked when it is
    /// evaluated). `None` after an error.
    fn default(
        &mut self,
        decl: &syntax::ParamDecl,
        ty: &ParamType,
        e: &syntax::Expr,
    ) -> Option<ir::Expr> {
        use syntax::ExprKind as In;
        let name = &decl.name.text;
        let literal = match (&e.kind, ty) {
            (In::Name(o) | In::Str(o), ParamType::Choice(options)) => {
                match options.iter().position(|x| x == o) {
                    Some(i) => return Some(self.constant(i as i64, e)),
                    None => o.clone(),
                }
            }
            (In::Int(n), ParamType::Choice(_)) => n.to_string(),
            (In::Bool(b), ParamType::Choice(_)) => b.to_string(),
            (_, ParamType::Choice(_)) => {
                self.diags.push(
                    Diagnostic::error(format!(
                        "the default of `{name}` is one of its options: {}",
                        ty.allowed()
                    ))
                    .with_span_label(Span::new(self.file, e.span.clone()), "not an option"),
                );
                return None;
            }
            (In::Bool(b), ParamType::Bool) => return Some(self.constant(i64::from(*b), e)),
            (In::Int(n), ParamType::Bool) => n.to_string(),
            (In::Bool(b), ParamType::Int(_)) => b.to_string(),
            (In::Int(n), ParamType::Int(range)) if !range.contains(*n) => n.to_string(),
            _ => return Some(self.expr(e)),
        };
        let mut d = Diagnostic::error(ty.error(name, &literal).to_string())
            .with_span_label(Span::new(self.file, e.span.clone()), "the default");
        if decl.ty.is_none() && matches!(e.kind, In::Bool(_)) {
            d = d.with_help(format!(
                "a parameter without a type is an int; declare a bool: `param {name}: bool = {literal}`"
            ));
        }
        self.diags.push(d);
        None
    }

    fn constant(&self, v: i64, e: &syntax::Expr) -> ir::Expr {
        ir::Expr {
            kind: ir::ExprKind::Const(v),
            span: e.span.clone(),
        }
    }

    /// Reports the items a schedule may have only once, when it has two.
    fn single_items(&mut self, schedule: &Schedule) {
        let file = self.file;
        let mut single = |what: &str, span: &Range<usize>, first: &mut Option<Range<usize>>| {
            if let Some(f) = first {
                self.diags.push(
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
        let mut seen_same = None;
        for item in &schedule.items {
            match &item.kind {
                ItemKind::SameAs(_) => single("same as plugin", &item.span, &mut seen_same),
                ItemKind::Pipelines(_) => single("pipelines", &item.span, &mut seen_pipelines),
                ItemKind::Stages(_) => single("stages", &item.span, &mut seen_stages),
                ItemKind::Place(_) => single("place", &item.span, &mut seen_place),
                ItemKind::Program(_) => single("program", &item.span, &mut seen_program),
                _ => {}
            }
        }
    }

    /// The top-level `let`s and `require`s, in file order.
    fn top(&mut self, schedule: &Schedule) -> Vec<TopStmt> {
        let mut top = Vec::new();
        for item in &schedule.items {
            match &item.kind {
                ItemKind::Let { name, value } => {
                    let value = self.expr(value);
                    top.push(TopStmt::Set(self.declare(name, NameKind::Let), value));
                }
                ItemKind::Require(req) => {
                    top.push(TopStmt::Require(self.require(req, item.span.clone())))
                }
                _ => {}
            }
        }
        top
    }

    /// `pipelines`, `stages` and `place` (whose expression sees `j` and `q`); the first of each
    /// counts.
    fn shape(&mut self, schedule: &Schedule) -> Shape {
        let slot_j = self.bind_scoped("j");
        let slot_q = self.bind("q");
        self.record.builtin.extend([(slot_j, "j"), (slot_q, "q")]);
        let mut place = ir::Place::Loop;
        for item in &schedule.items {
            if let ItemKind::Place(Place::Expr(e)) = &item.kind {
                place = ir::Place::Expr(self.expr(e));
            }
        }
        self.end_scope();
        let mut pipelines = None;
        let mut stages = None;
        let mut place_span = None;
        for item in &schedule.items {
            match &item.kind {
                ItemKind::Pipelines(e) if pipelines.is_none() => pipelines = Some(self.expr(e)),
                ItemKind::Stages(e) if stages.is_none() => stages = Some(self.expr(e)),
                ItemKind::Place(p) if place_span.is_none() => {
                    place_span = Some(item.span.clone());
                    match p {
                        Place::Loop => place = ir::Place::Loop,
                        Place::VShape => place = ir::Place::VShape,
                        Place::Mirror => place = ir::Place::Mirror,
                        Place::Expr(_) => {}
                    }
                }
                _ => {}
            }
        }
        Shape {
            pipelines,
            stages,
            place,
            place_span,
            slot_j,
            slot_q,
        }
    }
}
