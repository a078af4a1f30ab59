//! Laws that hold for every input: valid parameters always give valid plans; no input panics the
//! parser or the compiler.

use pipeweave_diagnostics::FileId;
use pipeweave_dsl::{Args, library};
use proptest::prelude::*;

/// Parameters each library schedule accepts, drawn at random (the requirements decide the rest).
fn args_for(name: &str, p: u32, m: u32, v: i64, flags: (bool, bool)) -> Args {
    let args = Args::new(p, m);
    match name {
        "interleaved-1f1b" | "interleaved-zb" | "looped-bfs" | "megatron-a2a-overlap" => {
            args.with("v", v)
        }
        "megatron-interleaved" => args.with("v", v.max(2)),
        "dualpipev" => args.with("weight_split", flags.0).with("overlap", flags.1),
        _ => args,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn valid_parameters_compile_to_valid_plans(
        which in 0usize..16,
        p in 2u32..=12,
        m_factor in 1u32..=48,
        v in 1i64..=4,
        flags in (any::<bool>(), any::<bool>()),
    ) {
        let entries: Vec<_> = library::all().collect();
        let entry = entries[which % entries.len()];
        let m = m_factor.min(4 * p);
        let args = args_for(entry.name, p, m, v, flags);
        if let Ok(compiled) = pipeweave_dsl::compile(FileId(0), entry.source, &args) {
            let problems = pipeweave_check::problems(&compiled.plan);
            prop_assert!(problems.is_empty(), "{} {:?}: {}", entry.name, args, problems[0]);
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = pipeweave_dsl::check(FileId(0), &text);
        let _ = pipeweave_dsl::compile(FileId(0), &text, &Args::new(3, 5));
    }

    #[test]
    fn mutated_library_files_never_panic(
        which in 0usize..16,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..4, any::<char>()), 1..6),
        p in 1u32..6,
        m in 1u32..12,
    ) {
        let entries: Vec<_> = library::all().collect();
        let mut text: Vec<char> = entries[which % entries.len()].source.chars().collect();
        for (at, op, c) in edits {
            if text.is_empty() {
                break;
            }
            let i = at.index(text.len());
            match op {
                0 => { text.remove(i); }
                1 => text.insert(i, c),
                2 => text[i] = c,
                _ => {
                    // Duplicate a slice, which makes unbalanced brackets and repeated items.
                    let end = (i + 12).min(text.len());
                    let slice: Vec<char> = text[i..end].to_vec();
                    text.splice(i..i, slice);
                }
            }
        }
        let text: String = text.into_iter().collect();
        let _ = pipeweave_dsl::check(FileId(0), &text);
        let _ = pipeweave_dsl::compile(FileId(0), &text, &Args::new(p, m));
    }
}

/// Pathological inputs that recursion-based parsers often die on.
#[test]
fn deep_and_long_inputs_are_refused_without_panicking() {
    let cases = [
        format!("stages {}P{}", "(".repeat(10_000), ")".repeat(10_000)),
        format!("stages {}P", "-".repeat(100_000)),
        format!("stages P{}", " + 1".repeat(50_000)),
        format!("program {}", "{".repeat(50_000)),
        "program { repeat 9223372036854775807 { repeat 9223372036854775807 { } } }\nstages P"
            .to_owned(),
    ];
    for text in cases {
        let result = pipeweave_dsl::compile(FileId(0), &text, &Args::new(2, 2));
        assert!(result.is_err(), "{}", &text[..40.min(text.len())]);
    }
}
