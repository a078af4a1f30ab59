//! Writing the protocol's messages (the format is described in the parent module).

use super::{
    MAGIC, Metadata, OLDEST_PROTOCOL_VERSION, ParamSpec, ParamType, Request, Response, Value,
};
use pipeweave_plan::cell::{push_action, push_uint};
use std::fmt::Write as _;

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

/// Appends the `param` line (and `param-help` line) of `p`.
fn encode_param(out: &mut String, p: &ParamSpec) {
    let _ = write!(
        out,
        "param {} {} {}",
        escape(&p.name),
        p.ty.keyword(),
        p.default
    );
    match &p.ty {
        ParamType::Bool => {}
        ParamType::Int(range) => {
            for (key, bound) in [
                ("min", range.min),
                ("max", range.max),
                ("multiple_of", range.multiple_of),
            ] {
                if let Some(v) = bound {
                    let _ = write!(out, " {key}={v}");
                }
            }
        }
        ParamType::Choice(options) => {
            let _ = write!(out, " options={}", options.join(","));
        }
    }
    out.push('\n');
    if !p.help.is_empty() {
        let _ = writeln!(out, "param-help {}", escape(&p.help));
    }
}

/// The `metadata` message of `meta`.
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
        encode_param(&mut out, p);
    }
    out.push_str("end\n");
    out.into_bytes()
}

/// The `request` message of `req`.
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

/// The `plan` or `error` message of `resp`.
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
