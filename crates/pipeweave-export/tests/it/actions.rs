//! The actions format: round trips and robustness, on any plan the reader takes (the writer of
//! plans not known to be valid).

use crate::common::reference_vectors;
use pipeweave_diagnostics::FileId;
use pipeweave_export::read_actions;
use pipeweave_export::unvalidated::write_actions;
use pipeweave_plan::testing::expressible_plan;
use proptest::prelude::*;

#[test]
fn reference_vectors_round_trip_exactly() {
    for (path, text, k) in reference_vectors() {
        let file = read_actions(&text, FileId(0), Some(k))
            .unwrap_or_else(|d| panic!("{path} does not read: {d:?}"));
        let written = write_actions(&file.plan);
        assert_eq!(
            written, text,
            "{path}: the canonical form is the recorded text"
        );
        let again = read_actions(&written, FileId(0), Some(k)).expect("written text reads");
        assert_eq!(again.plan, file.plan, "{path}");
        for (r, cells) in file.spans.iter().enumerate() {
            for (i, span) in cells.iter().enumerate() {
                assert_eq!(
                    text[span.clone()],
                    file.plan.program(r as u32)[i].to_string(),
                    "{path}: span of rank {r} action {i}"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_plans_round_trip(plan in expressible_plan()) {
        let text = write_actions(&plan);
        let back = read_actions(&text, FileId(0), Some(plan.model_copies()));
        prop_assert_eq!(back.map(|f| f.plan), Ok(plan), "text:\n{}", text);
    }

    #[test]
    fn random_text_never_panics(text in "[0-9FBIW(;),\\r\\n OVERLAP_SNDxé]{0,80}", k in 0u32..4) {
        check_result(&text, k);
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..120), k in 0u32..4) {
        check_result(&String::from_utf8_lossy(&bytes), k);
    }

    #[test]
    fn mutated_reference_vectors_never_panic(
        which in 0usize..64,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..3, prop::sample::select(vec!['0', '9', 'F', 'B', 'W', 'I', ',', ';', '(', ')', '\n', 'x', ' '])), 1..6),
    ) {
        let vectors = reference_vectors();
        let (_, text, k) = &vectors[which % vectors.len()];
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
        check_result(&text, *k);
    }
}

/// Reading never panics; errors point inside the text; a success writes back to an equal plan.
fn check_result(text: &str, k: u32) {
    match read_actions(text, FileId(0), Some(k)) {
        Ok(file) => {
            let again = read_actions(&write_actions(&file.plan), FileId(0), Some(k))
                .expect("rewrite reads");
            assert_eq!(again.plan, file.plan);
        }
        Err(diags) => {
            assert!(!diags.is_empty());
            for d in diags {
                assert!(!d.message.is_empty());
                assert!(!d.message.ends_with('.'), "{}", d.message);
                for span in d.span.iter().chain(d.labels.iter().map(|l| &l.span)) {
                    assert!(span.range.start <= span.range.end && span.range.end <= text.len());
                    assert!(
                        text.is_char_boundary(span.range.start)
                            && text.is_char_boundary(span.range.end)
                    );
                }
            }
        }
    }
}
