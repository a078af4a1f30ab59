use super::*;

#[test]
fn edges_map_into_the_excerpt_and_back() {
    let line = "a".repeat(500) + "HERE" + &"b".repeat(500);
    let text = format!("{line}\r\nnext\n");
    let source = SourceFile::new("f", &text);
    let (excerpt, mapped) = Excerpt::new(&source, std::slice::from_ref(&(500..504)), 3, 1);
    assert_eq!(&excerpt.text[mapped[0].clone()], "HERE");
    assert!(excerpt.text.starts_with('…') && excerpt.text.ends_with("…\n"));
    assert_eq!(source.column(0, 500), 501);
    // The column count resumes from the last one on the same line.
    assert_eq!(source.column(0, 504), 505);
    assert_eq!(source.column(0, 10), 11);
    // `\r\n`: the carriage return is not text, and an edge on it sits at the line's end.
    let (excerpt, mapped) = Excerpt::new(&source, std::slice::from_ref(&(1004..1005)), 3, 1);
    assert_eq!(mapped[0].start, excerpt.text.len() - 1);
}

#[test]
fn lines_without_edges_show_their_start() {
    let long = "z".repeat(400);
    let text = format!("a\n{long}\nb\n");
    let source = SourceFile::new("f", &text);
    // Lines 0 and 2 are shown, so codespan shows line 1 between them.
    let (excerpt, _) = Excerpt::new(&source, &[0..1, text.len() - 2..text.len() - 1], 3, 1);
    let shown: Vec<&str> = excerpt.text.lines().collect();
    assert_eq!(shown[0], "a");
    assert_eq!(shown[1].chars().count(), 101);
    assert!(shown[1].ends_with('…'));
    assert_eq!(shown[2], "b");
}

#[test]
fn control_characters() {
    assert_eq!(visible('\u{1b}'), '␛');
    assert_eq!(visible('\0'), '␀');
    assert_eq!(visible('\t'), '\t');
    assert_eq!(visible('\u{7f}'), '␡');
    assert_eq!(visible('é'), 'é');
}
