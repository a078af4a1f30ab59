//! Reading a spec from TOML: every syntax error, unknown key, missing key, wrong type and
//! inconsistent value is collected as a diagnostic with the key path and a span.
//!
//! The document is parsed with `toml::de::DeTable`, which keeps the span of every key and value,
//! and walked by hand so that one run reports every problem (serde's derive stops at the first):
//! [`depth`] refuses deep nesting before the TOML parser runs, [`table`] reads one table's keys,
//! [`sections`] reads each section into its type, and [`consistency`] checks values of different
//! sections against each other.

mod cluster;
mod consistency;
mod depth;
mod sections;
mod table;
mod text;
mod training;

use crate::spec::Spec;
use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use sections::read_spec;
use std::collections::BTreeMap;
use std::ops::Range;
use table::Table;
use toml::de::DeTable;

/// Parses and checks a spec. Returns the spec when there are no errors, and every diagnostic found.
pub fn parse(source: &str, file: FileId) -> (Option<Spec>, Vec<Diagnostic>) {
    let mut cx = Cx {
        source,
        file,
        diags: Vec::new(),
        spans: BTreeMap::new(),
    };
    if let Some(d) = depth::too_deep(source, file) {
        return (None, vec![d]);
    }
    let (doc, errors) = DeTable::parse_recoverable(source);
    for e in &errors {
        let mut d = Diagnostic::error(plain_toml_message(e.message()));
        if let Some(r) = e.span() {
            d = d.with_span(Span::new(file, r));
        }
        cx.diags.push(d);
    }
    // A document with syntax errors is not checked further: its recovered tree would add
    // misleading missing-key errors.
    let spec = if errors.is_empty() {
        let span = doc.span();
        let root = Table::new(String::new(), doc.get_ref(), span);
        read_spec(&mut cx, root)
    } else {
        None
    };
    let mut diags = cx.diags;
    diags.sort_by_key(|d| {
        d.span
            .as_ref()
            .map_or((usize::MAX, 0), |s| (s.range.start, s.range.end))
    });
    let spec = if diags.iter().any(Diagnostic::is_error) {
        None
    } else {
        spec
    };
    (spec, diags)
}

/// toml's messages start with a capital letter and sometimes end with a newline or period.
fn plain_toml_message(m: &str) -> String {
    let m = m.trim().trim_end_matches('.');
    let mut chars = m.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => "invalid toml".to_string(),
    }
}

/// What reading a spec collects: the diagnostics, and the span of every key read (by path).
struct Cx<'s> {
    /// The spec's text, where a diagnostic looks for what a value's literal holds.
    source: &'s str,
    file: FileId,
    diags: Vec<Diagnostic>,
    spans: BTreeMap<String, Range<usize>>,
}

impl Cx<'_> {
    fn span(&self, r: &Range<usize>) -> Span {
        Span::new(self.file, r.clone())
    }

    fn error(&mut self, range: &Range<usize>, message: String, label: impl Into<String>) {
        let d = Diagnostic::error(message).with_span_label(self.span(range), label);
        self.diags.push(d);
    }
}
