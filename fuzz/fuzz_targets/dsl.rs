//! The schedule language: any bytes as a `.weave` file, parsed, checked and compiled for a small
//! P and M (and small values of the parameters the file declares) taken from the first bytes.
//!
//! Must hold: no panic, every diagnostic inside the source, `check` and `compile` agree on whether
//! the file has syntax or name errors, and a compiled plan goes through every pass (see
//! `pipeweave_fuzz::check_plan`) with each validation problem mapped back into the source.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pipeweave_dsl::Args;
use pipeweave_fuzz::{FILE, assert_located, check_plan, text};

/// At most this many declared parameters get a value from the input; the others keep their default.
const SET: usize = 2;

fuzz_target!(|data: &[u8]| {
    let Some((head, body)) = data.split_at_checked(2 + SET) else {
        return;
    };
    let Some(source) = text(body) else {
        return;
    };
    // P in 1..=8 and M in 1..=16: small plans, every schedule shape (M < P, M = P, M > 2P).
    // The digits say what they mean: `37` is P = 4, M = 8 ('0' is 48, a multiple of 16).
    let mut args = Args::new(1 + u32::from(head[0] % 8), 1 + u32::from(head[1] % 16));
    let info = pipeweave_dsl::info(&source);
    for (p, &b) in info.params.iter().zip(&head[2..]) {
        // A digit sets the parameter to it, `-` to -1; any other byte keeps the default.
        let value = match b {
            b'0'..=b'9' => i64::from(b - b'0'),
            b'-' => -1,
            _ => continue,
        };
        args = args.with(&p.name, value);
    }
    let checked = pipeweave_dsl::check(FILE, &source);
    assert_located(&checked, &source);
    match pipeweave_dsl::compile(FILE, &source, &args) {
        Ok(compiled) => {
            assert!(
                checked.is_empty(),
                "`check` reports {checked:?} but the file compiles"
            );
            let problems = check_plan(&compiled.plan).unwrap_or_default();
            let located: Vec<_> = problems
                .iter()
                .map(|p| {
                    compiled
                        .origins
                        .diagnostic(p.rank, p.position, &p.to_string())
                })
                .collect();
            assert_located(&located, &source);
        }
        Err(diags) => {
            assert!(!diags.is_empty(), "compiling failed without a diagnostic");
            assert_located(&diags, &source);
        }
    }
});
