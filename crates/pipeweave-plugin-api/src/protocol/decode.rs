//! Reading the protocol's messages: every deviation from the format (described in the parent
//! module) is a [`DecodeError`] with its line.

use super::{
    DecodeError, MAGIC, Metadata, OLDEST_PROTOCOL_VERSION, PROTOCOL_VERSION, ParamSpec,
    PlanMessage, Request, Response,
};
use pipeweave_param::{IntRange, ParamType, Value, is_option_name};
use pipeweave_plan::cell::CellErrorKind::MicrobatchAbove;
use pipeweave_plan::cell::parse_action;
use pipeweave_plan::{MAX_MICROBATCH_ID, Pipeline};

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
        // Text values escape their line ends, so the lines hold no control character: one would
        // reach the terminal that shows a plugin's name, description or message.
        if let Some((at, c)) = text
            .char_indices()
            .find(|&(_, c)| c.is_control() && c != '\n')
        {
            let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
            return Err(err(
                text[..at].matches('\n').count() + 1,
                format!(
                    "a control character (U+{:04X} at column {}): a message holds none but its line ends",
                    c as u32,
                    text[line_start..at].chars().count() + 1
                ),
            ));
        }
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

/// The text value of a field shown on one line (a name, a description, a parameter's help): one
/// holding an escaped line end is refused, as the message holds no other control character.
fn one_line(n: usize, what: &str, text: &str) -> Result<String, DecodeError> {
    let s = unescape(n, text)?;
    match s.chars().find(|c| c.is_control()) {
        None => Ok(s),
        Some(c) => Err(err(
            n,
            format!(
                "{what} holds a line end (U+{:04X}): it is shown on one line",
                c as u32
            ),
        )),
    }
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

/// Reads the words after `param` on line `n`: name, type, default and constraints. `version` is the
/// message's: a `choice` needs version 2.
fn decode_param(n: usize, value: &str, version: u32) -> Result<ParamSpec, DecodeError> {
    let mut words = value.split(' ');
    let name = one_line(n, "a parameter's name", words.next().unwrap_or(""))?;
    if name.is_empty() {
        return Err(err(n, "a parameter has no name".to_owned()));
    }
    let needs = || {
        err(
            n,
            format!("parameter `{name}` needs a type (bool, int or choice) and a default"),
        )
    };
    let keyword = words.next().ok_or_else(needs)?;
    let default = words.next().ok_or_else(needs)?;
    let (ty, default) = match keyword {
        "bool" => match default {
            "true" => (ParamType::Bool, Value::Bool(true)),
            "false" => (ParamType::Bool, Value::Bool(false)),
            _ => return Err(needs()),
        },
        "int" => {
            let default = Value::Int(signed(n, "the default", default)?);
            let mut range = IntRange::default();
            for w in words.by_ref() {
                let (k, v) = w.split_once('=').unwrap_or((w, ""));
                let slot = match k {
                    "min" => &mut range.min,
                    "max" => &mut range.max,
                    "multiple_of" => &mut range.multiple_of,
                    _ => return Err(err(n, format!("unknown constraint `{}`", shorten(w)))),
                };
                *slot = Some(signed(n, k, v)?);
            }
            (ParamType::Int(range), default)
        }
        "choice" if version < 2 => {
            return Err(err(
                n,
                format!("parameter `{name}` is a choice, which needs protocol version 2"),
            ));
        }
        "choice" => {
            let options = words
                .next()
                .and_then(|w| w.strip_prefix("options="))
                .ok_or_else(|| err(n, format!("choice `{name}` needs `options=a,b,...`")))?;
            let options: Vec<String> = options.split(',').map(str::to_owned).collect();
            if !is_option_name(default) {
                return Err(err(
                    n,
                    format!("the default `{}` is not an option name", shorten(default)),
                ));
            }
            (
                ParamType::Choice(options),
                Value::Choice(default.to_owned()),
            )
        }
        _ => return Err(needs()),
    };
    if let Some(extra) = words.next() {
        return Err(err(n, format!("unexpected `{}`", shorten(extra))));
    }
    if let Some(problem) = ty.problem() {
        return Err(err(n, format!("parameter `{name}`: {problem}")));
    }
    let spec = ParamSpec {
        name,
        help: String::new(),
        ty,
        default,
    };
    spec.check(&spec.default)
        .map_err(|e| err(n, format!("the default breaks the constraints: {e}")))?;
    Ok(spec)
}

/// Reads the value of a `set` line: `true`/`false`, a whole number, or (version 2) an option.
fn decode_value(n: usize, text: &str, version: u32) -> Result<Value, DecodeError> {
    Ok(match text {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        t if version >= 2 && is_option_name(t) => Value::Choice(t.to_owned()),
        t => Value::Int(signed(n, "a parameter value", t)?),
    })
}

/// Reads a `metadata` message, refusing anything the format does not allow (with its line).
pub fn decode_metadata(bytes: &[u8]) -> Result<Metadata, DecodeError> {
    let mut r = Reader::new(bytes, "metadata")?;
    let (n, name) = r.expect("name")?;
    let name = one_line(n, "the plugin's name", name)?;
    if name.is_empty() {
        return Err(err(n, "the plugin name is empty".to_owned()));
    }
    let (n, version) = r.expect("version")?;
    let version = one_line(n, "the version", version)?;
    let (n, description) = r.expect("description")?;
    let description = one_line(n, "the description", description)?;
    let (n, requires) = r.expect("requires")?;
    let requires = one_line(n, "the requirements text", requires)?;
    let mut params: Vec<ParamSpec> = Vec::new();
    while let Some((n, key, value)) = r.field()? {
        if key != "param" {
            return Err(err(
                n,
                format!("expected `param` or `end`, found `{}`", shorten(key)),
            ));
        }
        let mut spec = decode_param(n, value, r.version)?;
        if params.iter().any(|p| p.name == spec.name) {
            return Err(err(
                n,
                format!("parameter `{}` is declared twice", spec.name),
            ));
        }
        if r.peek_key() == Some("param-help") {
            let (n, text) = r.expect("param-help")?;
            spec.help = one_line(n, "a parameter's help", text)?;
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

/// Reads a `request` message, refusing anything the format does not allow (with its line).
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
        let value = decode_value(n, v, r.version)?;
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
        if message.contains('\r') {
            return Err(err(
                n,
                "the message holds a carriage return (U+000D): it may hold line ends only"
                    .to_owned(),
            ));
        }
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
                let placement = number_list(n, "a rank", placement)?;
                let microbatches = number_list(n, "a micro-batch", mbs)?;
                if let Some(mb) = microbatches.iter().find(|&&mb| mb > MAX_MICROBATCH_ID) {
                    return Err(err(
                        n,
                        format!("micro-batch {mb} is too large (at most {MAX_MICROBATCH_ID})"),
                    ));
                }
                pipelines.push(Pipeline {
                    placement,
                    microbatches,
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
                        program.push(parse_action(cell, MAX_MICROBATCH_ID).map_err(|e| {
                            // The one refusal that is not about the cell's syntax.
                            let why = match e.first() {
                                Some(e) if matches!(e.kind, MicrobatchAbove { .. }) => {
                                    format!(": {e}")
                                }
                                _ => String::new(),
                            };
                            err(n, format!("`{}` is not an action{why}", shorten(cell)))
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
