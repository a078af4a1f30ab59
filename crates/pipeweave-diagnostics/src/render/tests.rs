use super::*;
use crate::Span;
use codespan_reporting::files::SimpleFiles;

fn files(name: &str, text: &str) -> (Files, FileId) {
    let mut files = Files::default();
    let id = files.add(name, text);
    (files, id)
}

/// What codespan-reporting itself prints for `d` over the whole file: the reference for files
/// whose lines are short.
fn codespan(name: &str, text: &str, d: &Diagnostic) -> String {
    let mut simple = SimpleFiles::new();
    let id = simple.add(name, text);
    let mut labels = Vec::new();
    if let Some(s) = &d.span {
        let l = Label::primary(id, s.range.clone());
        labels.push(match &d.span_label {
            Some(m) => l.with_message(m.clone()),
            None => l,
        });
    }
    for l in &d.labels {
        labels.push(Label::secondary(id, l.span.range.clone()).with_message(l.message.clone()));
    }
    let cs = CsDiagnostic::error()
        .with_message(d.message.clone())
        .with_labels(labels)
        .with_notes(d.notes.clone());
    term::emit_into_string(&Config::default(), &simple, &cs).expect("renders")
}

/// On short lines the excerpt is invisible: the output is codespan's over the whole file, for
/// labels on one line, on neighbouring lines, with one or many lines between them, and labels
/// over several lines (whose middle codespan leaves out).
#[test]
fn short_lines_render_as_codespan_does() {
    let text: String = (0..40).map(|i| format!("line {i} of the file\n")).collect();
    let at = |line: usize, col: usize| {
        text.match_indices('\n')
            .nth(line.wrapping_sub(1))
            .map_or(0, |(i, _)| i + 1)
            + col
    };
    let (files, id) = files("f.txt", &text);
    let cases: Vec<(Range<usize>, Option<Range<usize>>)> = vec![
        (at(0, 0)..at(0, 4), None),
        (at(3, 5)..at(3, 6), Some(at(3, 0)..at(3, 4))),
        (at(3, 5)..at(3, 6), Some(at(4, 0)..at(4, 4))),
        (at(3, 5)..at(3, 6), Some(at(5, 0)..at(5, 4))),
        (at(3, 5)..at(3, 6), Some(at(6, 0)..at(6, 4))),
        (at(3, 5)..at(3, 6), Some(at(30, 0)..at(30, 4))),
        (at(2, 2)..at(4, 3), None),
        (at(2, 2)..at(7, 3), None),
        (at(2, 2)..at(8, 3), None),
        (at(2, 2)..at(35, 3), Some(at(20, 1)..at(20, 2))),
        (at(10, 0)..at(10, 0), Some(at(39, 3)..at(39, 20))),
        (text.len()..text.len(), None),
    ];
    for (primary, secondary) in cases {
        let mut d = Diagnostic::error("a problem")
            .with_span_label(Span::new(id, primary.clone()), "here")
            .with_note("a note");
        if let Some(s) = &secondary {
            d = d.with_label(Span::new(id, s.clone()), "and there");
        }
        let ours = Renderer::new(&files, 0).render(&d);
        assert_eq!(
            ours,
            codespan("f.txt", &text, &d),
            "{primary:?} {secondary:?}"
        );
    }
}

#[test]
fn a_long_line_is_shown_around_the_span() {
    let line: String = (0..5000)
        .map(|i| format!("c{i}"))
        .collect::<Vec<_>>()
        .join(",");
    let text = format!("short\n{line}\nend\n");
    let at = 6 + line.find("c2500,").expect("cell");
    let (files, id) = files("long.actions", &text);
    let d = Diagnostic::error("a bad cell").with_span_label(Span::new(id, at..at + 5), "this cell");
    let out = Renderer::new(&files, 0).render(&d);
    insta::assert_snapshot!("a_long_line", out);
}

#[test]
fn long_lines_at_their_ends_and_far_apart_labels() {
    let line = "x".repeat(3000);
    let text = format!("{line}\n");
    let (files, id) = files("wide", &text);
    let d = Diagnostic::error("both ends")
        .with_span_label(Span::new(id, 0..1), "first")
        .with_label(Span::new(id, 2999..3000), "last");
    let out = Renderer::new(&files, 0).render(&d);
    insta::assert_snapshot!("long_line_ends", out);
    // A span longer than the window: its two ends, the middle left out.
    let d = Diagnostic::error("long span").with_span_label(Span::new(id, 100..2900), "all this");
    let out = Renderer::new(&files, 0).render(&d);
    assert!(out.contains("┌─ wide:1:101\n"), "{out}");
    assert!(out.lines().all(|l| l.chars().count() < 260), "{out}");
}

#[test]
fn control_characters_are_shown_as_pictures() {
    let text = "key\u{1b}[31m = 1\n";
    let (files, id) = files("esc.toml", text);
    let d = Diagnostic::error("unknown key `key\u{1b}[31m`")
        .with_span_label(Span::new(id, 0..8), "not a spec key");
    let out = Renderer::new(&files, 0).render(&d);
    assert!(!out.contains('\u{1b}'), "{out}");
    insta::assert_snapshot!("control_characters", out);
}

#[test]
fn long_messages_are_cut_in_the_middle() {
    let name = "n".repeat(100_000);
    let out = Renderer::new(&Files::default(), 0).render(&Diagnostic::error(format!(
        "unknown name `{name}`; the names are a, b"
    )));
    assert!(out.len() < 1300, "{}", out.len());
    assert!(out.starts_with("error: unknown name `nnn"), "{out}");
    assert!(out.ends_with("nnn`; the names are a, b\n"), "{out}");
    assert!(out.contains('…'));
}

#[test]
fn past_the_limit_diagnostics_are_counted() {
    let (files, id) = files("f", "a\n");
    let mut all: Vec<Diagnostic> = (0..60)
        .map(|i| Diagnostic::error(format!("problem {i}")).with_span(Span::new(id, 0..1)))
        .collect();
    all.push(Diagnostic::warning("a warning"));
    let out = Renderer::new(&files, 50).failure(&all);
    assert!(
        out.contains("problem 49\n") && !out.contains("problem 50\n"),
        "{out}"
    );
    assert!(
        out.ends_with(
            "… and 10 more errors and 1 more warning or note (`--max-diagnostics 0` shows all)\n\
             error: 60 problems found\n"
        ),
        "{out}"
    );
    let all = Renderer::new(&files, 0).failure(&all);
    assert!(all.contains("problem 59\n") && all.contains("warning: a warning\n"));
    assert_eq!(thousands(15950), "15,950");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1_000_000), "1,000,000");
}

/// A file name from the command line can hold control characters: the header shows their
/// pictures, as it does the message's and the line's.
#[test]
fn file_names_are_shown_without_control_characters() {
    let (files, id) = files("bad\u{1b}[2J\u{7}.actions", "0F0,0X1\n");
    let d = Diagnostic::error("unknown action kind `X`").with_span(Span::new(id, 5..6));
    let out = Renderer::new(&files, 0).render(&d);
    assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
    assert!(out.contains("┌─ bad␛[2J␇.actions:1:6\n"), "{out}");
}

/// One label per rank of a deadlock through 65,536 ranks: the first and last labels are shown,
/// the rest counted (before: a line of label and a line of source per rank, 9 MB).
#[test]
fn many_labels_show_the_first_and_last() {
    let text: String = (0..65_536).map(|r| format!("{r}F0\n")).collect();
    let (files, id) = files("cycle.actions", &text);
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line = |r: usize| Span::new(id, starts[r]..starts[r] + 2);
    let mut d = Diagnostic::error("a cycle").with_span_label(line(0), "rank 0 waits");
    for r in 1..65_536 {
        d = d.with_label(line(r), format!("rank {r} waits"));
    }
    let out = Renderer::new(&files, 0).render(&d);
    assert!(out.len() < 4_000 && out.lines().count() < 60, "{out}");
    for r in [0, 1, 8, 65_534, 65_535] {
        assert!(out.contains(&format!(" rank {r} waits\n")), "{r}: {out}");
    }
    assert!(!out.contains(" rank 9 waits\n") && !out.contains(" rank 65533 waits\n"));
    assert!(
        out.contains("= … and 65,525 more labels not shown\n"),
        "{out}"
    );
    // Ten labels or fewer are all shown, with no count.
    let mut d = Diagnostic::error("a cycle").with_span_label(line(0), "rank 0 waits");
    for r in 1..=10 {
        d = d.with_label(line(r), format!("rank {r} waits"));
    }
    let out = Renderer::new(&files, 0).render(&d);
    assert!(
        out.contains(" rank 10 waits\n") && !out.contains("not shown"),
        "{out}"
    );
}

/// Notes and the lines of one message are bounded the same way.
#[test]
fn many_notes_and_lines_show_the_first_and_last() {
    let mut d = Diagnostic::error(
        (0..100_000)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    for i in 0..1_000 {
        d = d.with_note(format!("note {i}"));
    }
    let out = Renderer::new(&Files::default(), 0).render(&d);
    assert!(out.lines().count() < 50, "{out}");
    for shown in [
        "line 0\n",
        "line 17\n",
        "line 99998\n",
        "line 99999\n",
        "note 7\n",
        "note 999\n",
    ] {
        assert!(out.contains(shown), "{shown}: {out}");
    }
    assert!(
        !out.contains("line 18\n") && !out.contains("note 8\n"),
        "{out}"
    );
    assert!(out.contains("… 99,980 more lines not shown\n"), "{out}");
    assert!(out.contains("= … 990 more notes not shown\n"), "{out}");
}
