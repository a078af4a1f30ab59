//! What the server says about one document, as plain functions of its text: the diagnostics of
//! `pipeweave check` (through the application layer, over a host that holds the document and
//! reads nothing else), hover, completion and the definition of a name (from `pipeweave-dsl`'s
//! facts). No IO.

use crate::lines::LineIndex;
use lsp_types::{
    CompletionItem, CompletionItemKind, Diagnostic, DiagnosticRelatedInformation,
    DiagnosticSeverity, Documentation, Hover, HoverContents, Location, MarkupContent, MarkupKind,
    NumberOrString, Position, Uri,
};
use pipeweave_app::{FrontEnd, Quiet, Session};
use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::{DEFAULT_MAX_DIAGNOSTICS, FileId, Severity};
use pipeweave_dsl::facts::{self, Meaning, NameKind};
use pipeweave_source::{
    Failure, Host, PluginId, PluginInfo, PluginRequest, PluginTarget, shown_name,
};

/// The largest document the server analyses, in bytes; a larger one gets one diagnostic saying so.
pub const MAX_DOCUMENT_BYTES: usize = 8 << 20;

/// The document as the one file the resolver can read.
struct DocumentHost<'t> {
    name: &'t str,
    text: &'t str,
}

impl Host for DocumentHost<'_> {
    fn is_file(&self, path: &str) -> bool {
        path == self.name
    }

    fn read(&mut self, path: &str) -> Result<String, Failure> {
        if path == self.name {
            Ok(self.text.to_owned())
        } else {
            Err(Failure::invalid(format!(
                "`{}`: the language server reads no file but the document",
                shown_name(path)
            )))
        }
    }

    fn has_plugin(&mut self, _: &str) -> bool {
        false
    }

    fn plugin(&mut self, _: &PluginTarget) -> Result<PluginInfo, Failure> {
        Err(Failure::invalid("the language server loads no plugins"))
    }

    fn plugins(&mut self) -> Vec<Result<PluginInfo, String>> {
        Vec::new()
    }

    fn generate(&mut self, _: PluginId, _: &PluginRequest) -> Result<ValidPlan, Failure> {
        Err(Failure::invalid("the language server loads no plugins"))
    }
}

/// The name diagnostics call the document at `uri`: its file name when it is a `.weave` file.
pub fn document_name(uri: &Uri) -> String {
    let path = uri.path().as_str();
    match path.rsplit('/').next() {
        Some(name) if name.ends_with(".weave") && name.len() > ".weave".len() => name.to_owned(),
        _ => "document.weave".to_owned(),
    }
}

/// What `pipeweave check` says about `text` (called `name`): its syntax and names, then its plans
/// on the grid of P and M, as the protocol's diagnostics, at most [`DEFAULT_MAX_DIAGNOSTICS`].
pub fn diagnostics(uri: &Uri, name: &str, text: &str) -> Vec<Diagnostic> {
    if text.len() > MAX_DOCUMENT_BYTES {
        return vec![Diagnostic {
            range: lsp_types::Range::default(),
            severity: Some(DiagnosticSeverity::ERROR),
            source: Some("pipeweave".into()),
            message: format!(
                "the document has {} bytes, more than the {MAX_DOCUMENT_BYTES} the language server reads",
                text.len()
            ),
            ..Diagnostic::default()
        }];
    }
    let mut host = DocumentHost { name, text };
    let mut quiet = Quiet;
    let mut session = Session::new(
        &mut host,
        &mut quiet,
        FrontEnd::CommandLine,
        DEFAULT_MAX_DIAGNOSTICS,
    );
    let Err(failure) = pipeweave_app::check(&mut session, name) else {
        return Vec::new();
    };
    let lines = LineIndex::new(text);
    let document = session
        .files
        .iter()
        .find(|(_, n, _)| *n == shown_name(name))
        .map(|(id, _, _)| id);
    let here = |file: FileId| Some(file) == document;
    failure
        .diagnostics
        .iter()
        .take(DEFAULT_MAX_DIAGNOSTICS)
        .map(|d| {
            let range = d
                .span
                .as_ref()
                .filter(|s| here(s.file))
                .map(|s| lines.range(&s.range))
                .unwrap_or_default();
            let mut message = d.message.clone();
            if let Some(label) = &d.span_label {
                message.push_str(&format!(" ({label})"));
            }
            for note in &d.notes {
                message.push_str(&format!("\nnote: {note}"));
            }
            if let Some(help) = &d.help {
                message.push_str(&format!("\nhelp: {help}"));
            }
            let related: Vec<DiagnosticRelatedInformation> = d
                .labels
                .iter()
                .filter(|l| here(l.span.file))
                .map(|l| DiagnosticRelatedInformation {
                    location: Location::new(uri.clone(), lines.range(&l.span.range)),
                    message: l.message.clone(),
                })
                .collect();
            Diagnostic {
                range,
                severity: Some(match d.severity {
                    Severity::Error => DiagnosticSeverity::ERROR,
                    Severity::Warning => DiagnosticSeverity::WARNING,
                    Severity::Note => DiagnosticSeverity::INFORMATION,
                }),
                code: None::<NumberOrString>,
                source: Some("pipeweave".into()),
                message,
                related_information: (!related.is_empty()).then_some(related),
                ..Diagnostic::default()
            }
        })
        .collect()
}

/// The word (letters, digits, `_`) around byte `offset`, with its bytes.
fn word_at(text: &str, offset: usize) -> Option<(std::ops::Range<usize>, &str)> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let offset = offset.min(text.len());
    let start = text[..offset]
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_word(*c))
        .last()
        .map_or(offset, |(i, _)| i);
    let end = text[offset..]
        .char_indices()
        .find(|(_, c)| !is_word(*c))
        .map_or(text.len(), |(i, _)| offset + i);
    (start < end).then(|| (start..end, &text[start..end]))
}

/// What a declared parameter is, in Markdown.
fn parameter_words(text: &str, name: &str) -> String {
    let info = pipeweave_dsl::info(text);
    match info.params.iter().find(|p| p.name == name) {
        Some(p) => {
            let mut words = format!("```weave\nparam {}: {}", p.name, p.ty);
            if let Some(default) = &p.default {
                words.push_str(&format!(" = {default}"));
            }
            words.push_str("\n```\nA parameter of the schedule, set with `--set ");
            words.push_str(&format!("{}=VALUE`", p.name));
            if p.name == "v" {
                words.push_str(" or `-v`");
            }
            if let Some(help) = &p.help {
                words.push_str(&format!(": {help}"));
            }
            words
        }
        None => format!("`{name}`: a parameter of the schedule"),
    }
}

/// Hover at `position`: a name (what defines it, or the built-in name in words), a keyword, a
/// function or an action.
pub fn hover(text: &str, position: Position) -> Option<Hover> {
    let lines = LineIndex::new(text);
    let offset = lines.offset(position);
    let names = facts::names(text);
    let defined = |i: usize| names.definitions.get(i);
    let (span, words) = if let Some(u) = names.use_at(offset) {
        let words = match u.meaning {
            Meaning::Defined(i) => defined(i).map(|d| definition_words(text, d, &lines))?,
            Meaning::BuiltIn(name) => builtin_words(name)?,
        };
        (u.span.clone(), words)
    } else if let Some(d) = names.definition_at(offset) {
        (d.span.clone(), definition_words(text, d, &lines))
    } else {
        let (span, word) = word_at(text, offset)?;
        let found = facts::KEYWORDS
            .iter()
            .map(|w| (w, "keyword"))
            .chain(facts::FUNCTIONS.iter().map(|w| (w, "function")))
            .find(|(w, _)| w.word == word);
        let words = match found {
            Some((w, what)) => format!("`{}` ({what}): {}", w.word, w.help),
            None => {
                let kind = word.get(..1)?;
                let rest = &word[1..];
                let action = facts::ACTIONS.iter().find(|a| a.word == kind)?;
                if !rest.chars().all(|c| c.is_ascii_digit()) {
                    return None;
                }
                format!("`{word}` (action): {}", action.help)
            }
        };
        (span, words)
    };
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: words,
        }),
        range: Some(lines.range(&span)),
    })
}

fn builtin_words(name: &str) -> Option<String> {
    let (_, what) = pipeweave_dsl::BUILTINS.iter().find(|(b, _)| *b == name)?;
    Some(format!("`{name}` (built in): {what}"))
}

fn definition_words(text: &str, d: &facts::Definition, lines: &LineIndex<'_>) -> String {
    let line = lines.position(d.span.start).line + 1;
    match d.kind {
        NameKind::Parameter => parameter_words(text, &d.name),
        NameKind::Let => format!("`{}`: a `let`, line {line}", d.name),
        NameKind::Loop => format!("`{}`: the variable of a `for` loop, line {line}", d.name),
    }
}

/// Completion: the keywords, the functions, the built-in names, the actions and the names the
/// document defines (its parameters with their types), in that order; the client filters them by
/// what is typed.
pub fn completion(text: &str) -> Vec<CompletionItem> {
    let item = |label: &str, kind, detail: &str| CompletionItem {
        label: label.to_owned(),
        kind: Some(kind),
        detail: Some(detail.to_owned()),
        ..CompletionItem::default()
    };
    let mut items: Vec<CompletionItem> = Vec::new();
    for w in facts::KEYWORDS {
        items.push(item(w.word, CompletionItemKind::KEYWORD, w.help));
    }
    for w in facts::FUNCTIONS {
        let mut f = item(w.word, CompletionItemKind::FUNCTION, w.help);
        f.insert_text = Some(format!("{}(", w.word));
        items.push(f);
    }
    for (name, what) in pipeweave_dsl::BUILTINS {
        items.push(item(name, CompletionItemKind::CONSTANT, what));
    }
    for w in facts::ACTIONS {
        items.push(item(w.word, CompletionItemKind::OPERATOR, w.help));
    }
    let info = pipeweave_dsl::info(text);
    for p in &info.params {
        let mut param = item(&p.name, CompletionItemKind::VARIABLE, &p.ty.to_string());
        param.documentation = p.help.clone().map(Documentation::String);
        items.push(param);
    }
    let names = facts::names(text);
    for d in &names.definitions {
        if d.kind != NameKind::Parameter && !items.iter().any(|i| i.label == d.name) {
            let what = match d.kind {
                NameKind::Let => "let",
                _ => "for variable",
            };
            items.push(item(&d.name, CompletionItemKind::VARIABLE, what));
        }
    }
    items
}

/// The definition of the name at `position`, when the document defines it (a built-in name has
/// none to go to).
pub fn definition(uri: &Uri, text: &str, position: Position) -> Option<Location> {
    let lines = LineIndex::new(text);
    let offset = lines.offset(position);
    let names = facts::names(text);
    let d = match names.use_at(offset)?.meaning {
        Meaning::Defined(i) => names.definitions.get(i)?,
        Meaning::BuiltIn(_) => return None,
    };
    Some(Location::new(uri.clone(), lines.range(&d.span)))
}

#[cfg(test)]
mod tests;
