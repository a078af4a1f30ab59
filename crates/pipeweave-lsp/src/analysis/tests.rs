use super::*;
use std::str::FromStr;

const TEXT: &str = "param lag: int in 0..=4 = 1 \"how far behind\"
stages P
place loop
program {
  let warmup = min(P - 1 - r, M) + lag * 0
  repeat warmup { F }
  repeat M - warmup { F B }
  repeat warmup { B }
}
";

fn uri() -> Uri {
    Uri::from_str("file:///work/mine.weave").expect("a URI")
}

fn at(text: &str, needle: &str, nth: usize) -> Position {
    let offset = text.match_indices(needle).nth(nth).expect("found").0;
    LineIndex::new(text).position(offset)
}

fn hover_text(text: &str, position: Position) -> String {
    match hover(text, position).expect("a hover").contents {
        HoverContents::Markup(m) => m.value,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_document_is_named_by_its_file() {
    assert_eq!(document_name(&uri()), "mine.weave");
    let other = Uri::from_str("untitled:Untitled-1").expect("a URI");
    assert_eq!(document_name(&other), "document.weave");
}

#[test]
fn errors_come_with_their_ranges_and_help() {
    let text = "stages P\nplace loop\nprogram {\n  repeat M { F B }\n  repeat lagg { B }\n}\n";
    let found = diagnostics(&uri(), "mine.weave", text);
    assert_eq!(found.len(), 1, "{found:?}");
    let d = &found[0];
    assert_eq!(d.severity, Some(DiagnosticSeverity::ERROR));
    assert!(
        d.message.starts_with("unknown name `lagg`"),
        "{}",
        d.message
    );
    assert_eq!(d.range.start, at(text, "lagg", 0));
    assert_eq!(d.range.end.character, d.range.start.character + 4);
    assert!(diagnostics(&uri(), "mine.weave", TEXT).is_empty());
}

#[test]
fn plans_that_fail_on_the_grid_are_reported_where_they_fail() {
    // Every rank runs forwards only: the validator refuses the plan, at an action of the text.
    let text = "stages P\nplace loop\nprogram { repeat M { F } }\n";
    let found = diagnostics(&uri(), "mine.weave", text);
    assert!(!found.is_empty());
    assert!(
        found[0].message.contains("P = 2, M = 1"),
        "{}",
        found[0].message
    );
}

#[test]
fn hover_says_what_a_name_a_keyword_or_an_action_is() {
    let lag = hover_text(TEXT, at(TEXT, "lag *", 0));
    assert!(lag.contains("param lag: int in 0..=4 = 1"), "{lag}");
    assert!(lag.contains("how far behind"), "{lag}");
    let p = hover_text(TEXT, at(TEXT, "P - 1", 0));
    assert_eq!(p, "`P` (built in): ranks");
    let warmup = hover_text(TEXT, at(TEXT, "warmup {", 0));
    assert_eq!(warmup, "`warmup`: a `let`, line 5");
    let repeat = hover_text(TEXT, at(TEXT, "repeat", 0));
    assert!(repeat.starts_with("`repeat` (keyword)"), "{repeat}");
    let min = hover_text(TEXT, at(TEXT, "min", 0));
    assert!(min.starts_with("`min` (function)"), "{min}");
    let f = hover_text(TEXT, at(TEXT, "F }", 0));
    assert!(f.starts_with("`F` (action): a forward"), "{f}");
    assert!(hover(TEXT, at(TEXT, "\"how", 0)).is_none());
}

#[test]
fn completion_offers_keywords_functions_and_the_parameters() {
    let items = completion(TEXT);
    let label = |l: &str| items.iter().find(|i| i.label == l);
    assert_eq!(
        label("repeat").and_then(|i| i.kind),
        Some(CompletionItemKind::KEYWORD)
    );
    assert_eq!(
        label("max").and_then(|i| i.kind),
        Some(CompletionItemKind::FUNCTION)
    );
    let lag = label("lag").expect("the parameter");
    assert_eq!(lag.detail.as_deref(), Some("int in 0..=4"));
    assert!(label("warmup").is_some());
    assert!(label("M").is_some());
    let labels: Vec<&str> = items.iter().map(|i| i.label.as_str()).collect();
    let mut unique = labels.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), labels.len(), "{labels:?}");
}

#[test]
fn definition_goes_to_where_a_name_is_defined() {
    let found = definition(&uri(), TEXT, at(TEXT, "lag *", 0)).expect("defined");
    assert_eq!(found.range.start, at(TEXT, "lag", 0));
    assert_eq!(found.uri, uri());
    let warmup = definition(&uri(), TEXT, at(TEXT, "warmup {", 0)).expect("defined");
    assert_eq!(warmup.range.start, at(TEXT, "warmup", 0));
    assert!(definition(&uri(), TEXT, at(TEXT, "P - 1", 0)).is_none());
}

#[test]
fn a_huge_document_is_one_diagnostic() {
    let text = "#".repeat(MAX_DOCUMENT_BYTES + 1);
    let found = diagnostics(&uri(), "mine.weave", &text);
    assert_eq!(found.len(), 1);
    assert!(
        found[0].message.contains("more than"),
        "{}",
        found[0].message
    );
}
