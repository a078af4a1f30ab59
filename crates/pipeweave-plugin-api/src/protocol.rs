//! The versioned byte protocol spoken over the ABI: metadata, requests and responses as small,
//! line-based UTF-8 text messages.
//!
//! # Format (version 2)
//!
//! Every message is UTF-8 text made of lines separated by `\n`:
//!
//! ```text
//! pipeweave-plugin-protocol 2      magic and protocol version
//! <kind>                           metadata | request | plan | error
//! <key> <value>                    zero or more fields, in the order listed below
//! end                              nothing may follow except one final newline
//! ```
//!
//! Text values (names, descriptions, messages) escape `\` as `\\`, a newline as `\n` and a carriage
//! return as `\r`, so every field stays on one line. Numbers are unsigned decimal except parameter
//! values of type `int`, which may be negative.
//!
//! - `metadata`: `name <text>`, `version <text>`, `description <text>`, `requires <text>` (the
//!   schedule's requirements in plain words; may be empty), then per parameter
//!   `param <name> bool <true|false>`, `param <name> int <default> [min=<n>] [max=<n>]
//!   [multiple_of=<n>]` or `param <name> choice <default> options=<a,b,...>`, each optionally
//!   followed by `param-help <text>`. The types are `pipeweave-param`'s, the same as a `.weave`
//!   schedule's; option names are letters, digits and `_`, never `true` or `false`.
//! - `request`: `ranks <n>`, `microbatches <n>`, then `set <name> <value>` per parameter; a value is
//!   `true`/`false`, a whole number or an option name, so its spelling says its type.
//! - `plan`: `ranks <n>`, then per pipeline `pipeline placement=<r,r,...> microbatches=<m,m,...>`
//!   (position `q` of the placement list is the rank hosting stage `q`), then exactly one
//!   `program <cells>` line per rank in rank order, cells in the actions format
//!   (`3F0`, `7I4`, `(0F3;7B5)OVERLAP_F_B`: global stage, kind, global micro-batch), comma
//!   separated, no empty cells.
//! - `error`: `message <text>`, the reason the plugin could not build a plan, in plain words.
//!
//! Versions: version 2 added `choice` parameters (and option values in requests); everything else
//! is version 1's. Both are read. Every message is written in the oldest version that can carry it
//! (version 1 unless it holds a choice), so a plugin built against version 1 still reads every
//! request it can be sent (a version 1 plugin declares no choice), and a version 1 host still reads
//! a newer plugin that declares none.
//!
//! Unknown kinds and keys are errors: a newer message is refused instead of half read. The codec
//! converts explicitly to and from the core types; nothing in `pipeweave-plan` is serializable.

mod params;

pub use params::ParamSpec;
pub use pipeweave_param::{IntRange, ParamType, Value};

use pipeweave_plan::cell::{parse_action, push_action, push_uint};
use pipeweave_plan::{Action, Pipeline, Plan, PlanError};
use std::fmt::{self, Write as _};

/// The newest version of the message format this crate reads and writes (on the first line of
/// every message).
pub const PROTOCOL_VERSION: u32 = 2;

/// The oldest version it still reads.
pub const OLDEST_PROTOCOL_VERSION: u32 = 1;

/// The first word of every message.
pub const MAGIC: &str = "pipeweave-plugin-protocol";

/// What a plugin says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    /// The schedule name users type (`dualpipe`).
    pub name: String,
    /// The plugin's own version.
    pub version: String,
    /// One line saying what the schedule is.
    pub description: String,
    /// The requirements on ranks and micro-batches in plain words (may be empty).
    pub requires: String,
    /// The parameters users set with `--set NAME=VALUE`.
    pub params: Vec<ParamSpec>,
}

impl Metadata {
    pub fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }
}

/// What the host asks a plugin to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub ranks: u32,
    pub microbatches: u32,
    /// One value per declared parameter (the host fills in defaults), in declaration order.
    pub params: Vec<(String, Value)>,
}

impl Request {
    pub fn value(&self, name: &str) -> Option<&Value> {
        self.params.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The value of a `bool` parameter, or `default` when the request does not carry it.
    pub fn bool_or(&self, name: &str, default: bool) -> Result<bool, String> {
        match self.value(name) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(ParamType::Bool.error(name, v).to_string()),
        }
    }

    /// The value of an `int` parameter, or `default` when the request does not carry it.
    pub fn int_or(&self, name: &str, default: i64) -> Result<i64, String> {
        match self.value(name) {
            None => Ok(default),
            Some(Value::Int(n)) => Ok(*n),
            Some(v) => Err(ParamType::int().error(name, v).to_string()),
        }
    }

    /// The value of a `choice` parameter, or `default` when the request does not carry it.
    pub fn choice_or<'a>(&'a self, name: &str, default: &'a str) -> Result<&'a str, String> {
        match self.value(name) {
            None => Ok(default),
            Some(Value::Choice(option)) => Ok(option),
            Some(v) => Err(format!("parameter `{name}` is a choice, not `{v}`")),
        }
    }
}

/// A plan as it travels: the same content as a [`Plan`], before its structure is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanMessage {
    pub ranks: u32,
    pub pipelines: Vec<Pipeline>,
    pub programs: Vec<Vec<Action>>,
}

impl PlanMessage {
    pub fn from_plan(plan: &Plan) -> PlanMessage {
        PlanMessage {
            ranks: plan.ranks(),
            pipelines: plan.pipelines().to_vec(),
            programs: plan.programs().to_vec(),
        }
    }

    /// Builds the plan, checking its structure (not its programs).
    pub fn into_plan(self) -> Result<Plan, PlanError> {
        Plan::new(self.ranks, self.pipelines, self.programs)
    }
}

/// A plugin's answer to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    Plan(PlanMessage),
    /// The plugin refused, in plain words (e.g. an unmet requirement).
    Error(String),
}

/// Why a message could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// 1-based line number (0 when the message is not text at all).
    pub line: usize,
    pub message: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for DecodeError {}

// ---------------------------------------------------------------------------------------------
// Encoding

/// The first two lines, for a message of `version`.
fn header(out: &mut String, kind: &str, version: u32) {
    let _ = writeln!(out, "{MAGIC} {version}\n{kind}");
}

fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            c => s.push(c),
        }
    }
    s
}

/// Appends numbers separated by commas (plans hold many; `write!` costs several times more).
fn join_numbers(out: &mut Vec<u8>, numbers: &[u32]) {
    for (i, &n) in numbers.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_uint(out, n.into());
    }
}

pub fn encode_metadata(meta: &Metadata) -> Vec<u8> {
    let mut out = String::new();
    let version = if meta.params.iter().any(ParamSpec::needs_version_2) {
        2
    } else {
        OLDEST_PROTOCOL_VERSION
    };
    header(&mut out, "metadata", version);
    let _ = writeln!(out, "name {}", escape(&meta.name));
    let _ = writeln!(out, "version {}", escape(&meta.version));
    let _ = writeln!(out, "description {}", escape(&meta.description));
    let _ = writeln!(out, "requires {}", escape(&meta.requires));
    for p in &meta.params {
        params::encode(&mut out, p);
    }
    out.push_str("end\n");
    out.into_bytes()
}

pub fn encode_request(req: &Request) -> Vec<u8> {
    let mut out = String::new();
    let choice = req
        .params
        .iter()
        .any(|(_, v)| matches!(v, Value::Choice(_)));
    let version = if choice { 2 } else { OLDEST_PROTOCOL_VERSION };
    header(&mut out, "request", version);
    let _ = writeln!(
        out,
        "ranks {}\nmicrobatches {}",
        req.ranks, req.microbatches
    );
    for (name, value) in &req.params {
        let _ = writeln!(out, "set {} {value}", escape(name));
    }
    out.push_str("end\n");
    out.into_bytes()
}

pub fn encode_response(resp: &Response) -> Vec<u8> {
    let mut out = String::new();
    match resp {
        Response::Error(message) => {
            header(&mut out, "error", OLDEST_PROTOCOL_VERSION);
            let _ = writeln!(out, "message {}", escape(message));
            out.push_str("end\n");
            out.into_bytes()
        }
        Response::Plan(plan) => {
            header(&mut out, "plan", OLDEST_PROTOCOL_VERSION);
            let _ = writeln!(out, "ranks {}", plan.ranks);
            // Plans are large: the body is written as bytes, all ASCII.
            let mut out = out.into_bytes();
            for p in &plan.pipelines {
                out.extend_from_slice(b"pipeline placement=");
                join_numbers(&mut out, &p.placement);
                out.extend_from_slice(b" microbatches=");
                join_numbers(&mut out, &p.microbatches);
                out.push(b'\n');
            }
            for program in &plan.programs {
                out.extend_from_slice(b"program");
                for (i, a) in program.iter().enumerate() {
                    out.push(if i == 0 { b' ' } else { b',' });
                    push_action(&mut out, a);
                }
                out.push(b'\n');
            }
            out.extend_from_slice(b"end\n");
            out
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding

struct Reader<'a> {
    lines: std::iter::Peekable<std::iter::Enumerate<std::str::Split<'a, char>>>,
    last_line: usize,
    /// The message's protocol version.
    version: u32,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], kind: &str) -> Result<Reader<'a>, DecodeError> {
        let text = std::str::from_utf8(bytes).map_err(|e| DecodeError {
            line: 0,
            message: format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.valid_up_to()
            ),
        })?;
        // The final newline ends the last line; it does not start an empty one.
        let text = text.strip_suffix('\n').unwrap_or(text);
        let mut r = Reader {
            lines: text.split('\n').enumerate().peekable(),
            last_line: 0,
            version: PROTOCOL_VERSION,
        };
        let (n, first) = r.line()?;
        let Some(version) = first.strip_prefix(MAGIC).and_then(|v| v.strip_prefix(' ')) else {
            return Err(err(
                n,
                format!(
                    "expected `{MAGIC} {PROTOCOL_VERSION}`, found `{}`",
                    shorten(first)
                ),
            ));
        };
        r.version = match version.parse::<u32>() {
            Ok(v) if (OLDEST_PROTOCOL_VERSION..=PROTOCOL_VERSION).contains(&v) => v,
            _ => {
                return Err(err(
                    n,
                    format!(
                        "protocol version `{}`, but this pipeweave reads versions {OLDEST_PROTOCOL_VERSION} to {PROTOCOL_VERSION}",
                        shorten(version)
                    ),
                ));
            }
        };
        let (n, found) = r.line()?;
        if found != kind {
            return Err(err(
                n,
                format!("expected a `{kind}` message, found `{}`", shorten(found)),
            ));
        }
        Ok(r)
    }

    /// The next line with its 1-based number.
    fn line(&mut self) -> Result<(usize, &'a str), DecodeError> {
        match self.lines.next() {
            Some((i, line)) => {
                self.last_line = i + 1;
                Ok((i + 1, line))
            }
            None => Err(err(
                self.last_line,
                "the message ends without `end`".to_owned(),
            )),
        }
    }

    /// The next line split into key and value; `None` at `end`.
    fn field(&mut self) -> Result<Option<(usize, &'a str, &'a str)>, DecodeError> {
        let (n, line) = self.line()?;
        if line == "end" {
            self.finish()?;
            return Ok(None);
        }
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        Ok(Some((n, key, value)))
    }

    fn peek_key(&mut self) -> Option<&'a str> {
        self.lines
            .peek()
            .map(|(_, line)| line.split_once(' ').map_or(*line, |(k, _)| k))
    }

    fn finish(&mut self) -> Result<(), DecodeError> {
        for (i, line) in self.lines.by_ref() {
            if !line.is_empty() {
                return Err(err(i + 1, "text after `end`".to_owned()));
            }
        }
        Ok(())
    }

    fn expect(&mut self, key: &str) -> Result<(usize, &'a str), DecodeError> {
        match self.field()? {
            Some((n, k, v)) if k == key => Ok((n, v)),
            Some((n, k, _)) => Err(err(n, format!("expected `{key}`, found `{}`", shorten(k)))),
            None => Err(err(
                self.last_line,
                format!("expected `{key}` before `end`"),
            )),
        }
    }
}

fn err(line: usize, message: String) -> DecodeError {
    DecodeError { line, message }
}

/// A prefix of untrusted text for an error message.
fn shorten(text: &str) -> String {
    let mut s: String = text.chars().take(40).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

fn unescape(n: usize, text: &str) -> Result<String, DecodeError> {
    let mut s = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            s.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => s.push('\\'),
            Some('n') => s.push('\n'),
            Some('r') => s.push('\r'),
            other => {
                let found = other.map_or("end of line".to_owned(), |c| format!("`\\{c}`"));
                return Err(err(n, format!("unknown escape {found}")));
            }
        }
    }
    Ok(s)
}

fn number(n: usize, what: &str, text: &str) -> Result<u32, DecodeError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err(
            n,
            format!("{what} must be a whole number, found `{}`", shorten(text)),
        ));
    }
    text.parse()
        .map_err(|_| err(n, format!("{what} `{}` is too large", shorten(text))))
}

fn signed(n: usize, what: &str, text: &str) -> Result<i64, DecodeError> {
    text.parse().map_err(|_| {
        err(
            n,
            format!("{what} must be a whole number, found `{}`", shorten(text)),
        )
    })
}

fn number_list(n: usize, what: &str, text: &str) -> Result<Vec<u32>, DecodeError> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    text.split(',').map(|t| number(n, what, t)).collect()
}

pub fn decode_metadata(bytes: &[u8]) -> Result<Metadata, DecodeError> {
    let mut r = Reader::new(bytes, "metadata")?;
    let (n, name) = r.expect("name")?;
    let name = unescape(n, name)?;
    if name.is_empty() {
        return Err(err(n, "the plugin name is empty".to_owned()));
    }
    let (n, version) = r.expect("version")?;
    let version = unescape(n, version)?;
    let (n, description) = r.expect("description")?;
    let description = unescape(n, description)?;
    let (n, requires) = r.expect("requires")?;
    let requires = unescape(n, requires)?;
    let mut params: Vec<ParamSpec> = Vec::new();
    while let Some((n, key, value)) = r.field()? {
        if key != "param" {
            return Err(err(
                n,
                format!("expected `param` or `end`, found `{}`", shorten(key)),
            ));
        }
        let mut spec = params::decode(n, value, r.version)?;
        if params.iter().any(|p| p.name == spec.name) {
            return Err(err(
                n,
                format!("parameter `{}` is declared twice", spec.name),
            ));
        }
        if r.peek_key() == Some("param-help") {
            let (n, text) = r.expect("param-help")?;
            spec.help = unescape(n, text)?;
        }
        params.push(spec);
    }
    Ok(Metadata {
        name,
        version,
        description,
        requires,
        params,
    })
}

pub fn decode_request(bytes: &[u8]) -> Result<Request, DecodeError> {
    let mut r = Reader::new(bytes, "request")?;
    let (n, v) = r.expect("ranks")?;
    let ranks = number(n, "ranks", v)?;
    let (n, v) = r.expect("microbatches")?;
    let microbatches = number(n, "microbatches", v)?;
    let mut params = Vec::new();
    while let Some((n, key, value)) = r.field()? {
        if key != "set" {
            return Err(err(
                n,
                format!("expected `set` or `end`, found `{}`", shorten(key)),
            ));
        }
        let Some((name, v)) = value.split_once(' ') else {
            return Err(err(n, "`set` needs a name and a value".to_owned()));
        };
        let value = params::decode_value(n, v, r.version)?;
        params.push((unescape(n, name)?, value));
    }
    Ok(Request {
        ranks,
        microbatches,
        params,
    })
}

/// Reads a `plan` or `error` message.
pub fn decode_response(bytes: &[u8]) -> Result<Response, DecodeError> {
    // The kind decides which reader applies; peek at it without committing.
    let is_error = bytes
        .split(|&b| b == b'\n')
        .nth(1)
        .is_some_and(|kind| kind == b"error");
    if is_error {
        let mut r = Reader::new(bytes, "error")?;
        let (n, message) = r.expect("message")?;
        let message = unescape(n, message)?;
        if let Some((n, key, _)) = r.field()? {
            return Err(err(n, format!("expected `end`, found `{}`", shorten(key))));
        }
        return Ok(Response::Error(message));
    }
    let mut r = Reader::new(bytes, "plan")?;
    let (n, v) = r.expect("ranks")?;
    let ranks = number(n, "ranks", v)?;
    let mut pipelines = Vec::new();
    let mut programs = Vec::new();
    while let Some((n, key, value)) = r.field()? {
        match key {
            "pipeline" if programs.is_empty() => {
                let (placement, mbs) = value.split_once(' ').unwrap_or((value, ""));
                let Some(placement) = placement.strip_prefix("placement=") else {
                    return Err(err(n, "expected `placement=` after `pipeline`".to_owned()));
                };
                let Some(mbs) = mbs.strip_prefix("microbatches=") else {
                    return Err(err(
                        n,
                        "expected `microbatches=` after the placement".to_owned(),
                    ));
                };
                pipelines.push(Pipeline {
                    placement: number_list(n, "a rank", placement)?,
                    microbatches: number_list(n, "a micro-batch", mbs)?,
                });
            }
            "program" => {
                if programs.len() as u64 >= u64::from(ranks) {
                    return Err(err(
                        n,
                        format!("more than {ranks} programs for {ranks} ranks"),
                    ));
                }
                let mut program = Vec::new();
                if !value.is_empty() {
                    for cell in value.split(',') {
                        // Any micro-batch id: `Plan::new` bounds the plan's tables.
                        program.push(parse_action(cell, u32::MAX).map_err(|_| {
                            err(n, format!("`{}` is not an action", shorten(cell)))
                        })?);
                    }
                }
                programs.push(program);
            }
            _ => {
                return Err(err(
                    n,
                    format!(
                        "expected `pipeline`, `program` or `end`, found `{}`",
                        shorten(key)
                    ),
                ));
            }
        }
    }
    if programs.len() as u64 != u64::from(ranks) {
        return Err(err(
            r.last_line,
            format!("{} programs for {ranks} ranks", programs.len()),
        ));
    }
    Ok(Response::Plan(PlanMessage {
        ranks,
        pipelines,
        programs,
    }))
}
