//! The spec reader: any bytes as a TOML spec.
//!
//! Must hold: no panic, every diagnostic inside the source, and a spec is returned exactly when no
//! diagnostic is an error.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pipeweave_fuzz::{FILE, assert_located, text};

fuzz_target!(|data: &[u8]| {
    let Some(source) = text(data) else {
        return;
    };
    let (spec, diags) = pipeweave_spec::parse(&source, FILE);
    assert_located(&diags, &source);
    let errors = diags.iter().any(|d| d.is_error());
    assert_eq!(
        spec.is_some(),
        !errors,
        "a spec is returned exactly when there is no error: {diags:?}"
    );
});
