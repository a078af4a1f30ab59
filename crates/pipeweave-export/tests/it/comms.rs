//! PyTorch's compute_comms CSV read as a plan: any change to a written file's communication is
//! reported, and no text makes the reader or the check panic.

use crate::common::reference_vectors;
use pipeweave_diagnostics::{Diagnostic, FileId};
use pipeweave_export::{read_actions, read_pytorch_comms, write_pytorch_comms};
use pipeweave_plan::cell::is_step_cell;
use proptest::prelude::*;
use std::sync::OnceLock;

/// The compute_comms CSVs of the single-pipeline reference vectors PyTorch can run.
fn written() -> &'static [(String, String)] {
    static WRITTEN: OnceLock<Vec<(String, String)>> = OnceLock::new();
    WRITTEN.get_or_init(|| {
        reference_vectors()
            .into_iter()
            .filter_map(|(path, text, k)| {
                let plan = read_actions(&text, FileId(0), Some(k)).ok()?.plan;
                let plan = pipeweave_check::validate(plan).ok()?;
                Some((path, write_pytorch_comms(&plan).ok()?))
            })
            .collect()
    })
}

/// The file's rows, split into cells.
fn rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect()
}

fn join(rows: &[Vec<String>]) -> String {
    rows.iter().map(|r| r.join(",") + "\n").collect()
}

/// Reads and checks; the diagnostics of either step.
fn problems(text: &str) -> Vec<Diagnostic> {
    match read_pytorch_comms(text, FileId(0)) {
        Ok(file) => file.check(),
        Err(d) => d,
    }
}

/// Every span points inside the text on character boundaries; messages are lowercase-style (no
/// trailing period).
fn well_formed(text: &str, diags: &[Diagnostic]) {
    for d in diags {
        assert!(!d.message.is_empty());
        assert!(!d.message.ends_with('.'), "{}", d.message);
        for span in d.span.iter().chain(d.labels.iter().map(|l| &l.span)) {
            assert!(span.range.start <= span.range.end && span.range.end <= text.len());
            assert!(text.is_char_boundary(span.range.start));
            assert!(text.is_char_boundary(span.range.end));
        }
    }
}

#[test]
fn the_reference_vectors_written_read_back_without_problems() {
    let files = written();
    assert!(files.len() >= 16, "{}", files.len());
    for (path, text) in files {
        let file = read_pytorch_comms(text, FileId(0)).unwrap_or_else(|d| panic!("{path}: {d:?}"));
        assert_eq!(file.check(), vec![], "{path}");
        // Spans: each action's cell, each step's cell.
        for (r, cells) in file.spans.iter().enumerate() {
            for (i, span) in cells.iter().enumerate() {
                let action = file.plan.program(r as u32)[i].to_string();
                assert_eq!(text[span.clone()], action, "{path}");
            }
        }
        for step in file.steps.iter().flatten() {
            assert_eq!(text[step.span.clone()], step.step.to_string(), "{path}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Removing, repeating or moving one step of a written file is always reported, with spans
    /// inside the file.
    #[test]
    fn a_changed_step_is_reported(
        which in 0usize..64,
        pick in any::<prop::sample::Index>(),
        how in 0u8..3,
    ) {
        let files = written();
        let (path, text) = &files[which % files.len()];
        let mut rows = rows(text);
        let steps: Vec<(usize, usize)> = rows
            .iter()
            .enumerate()
            .flat_map(|(r, row)| {
                row.iter()
                    .enumerate()
                    .filter(|(_, c)| is_step_cell(c))
                    .map(move |(i, _)| (r, i))
            })
            .collect();
        let (r, i) = steps[pick.index(steps.len())];
        let cell = rows[r][i].clone();
        match how {
            0 => {
                rows[r].remove(i);
            }
            1 => rows[r].insert(i, cell.clone()),
            // To the front of the row: before what it follows, or reordered on its channel.
            _ => {
                let moved = rows[r].remove(i);
                rows[r].insert(0, moved);
            }
        }
        let changed = join(&rows);
        prop_assume!(changed != *text);
        let diags = problems(&changed);
        // A receive moved to the front of its row can still be in place: it comes before its
        // consumer and keeps its channel's order when it is its channel's first.
        if how == 2 && cell.contains("RECV") {
            well_formed(&changed, &diags);
            return Ok(());
        }
        prop_assert!(!diags.is_empty(), "{path}: {how} {cell} at rank {r} went unnoticed");
        well_formed(&changed, &diags);
    }

    #[test]
    fn random_text_never_panics(text in "[0-9FBIW(;),\\r\\n _SENDRCVAITUHOLPG]{0,100}") {
        well_formed(&text, &problems(&text));
    }

    #[test]
    fn mutated_files_never_panic(
        which in 0usize..64,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..3, prop::sample::select(vec!['0', '1', '9', 'F', 'B', 'W', 'I', ',', ';', '(', ')', '\n', '_', 'S', 'x', ' '])), 1..6),
    ) {
        let files = written();
        let (_, text) = &files[which % files.len()];
        let mut chars: Vec<char> = text.chars().collect();
        for (at, how, c) in edits {
            let i = at.index(chars.len() + 1);
            match how {
                0 => chars.insert(i, c),
                1 if i < chars.len() => { chars.remove(i); }
                _ if i < chars.len() => chars[i] = c,
                _ => chars.push(c),
            }
        }
        let text: String = chars.into_iter().collect();
        well_formed(&text, &problems(&text));
    }
}
