//! The shipped specs, read for the tests.

use pipeweave_diagnostics::FileId;
use pipeweave_spec::{Spec, parse};
use std::path::Path;

/// The text of the shipped spec file `name`.
pub fn source(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../specs")
        .join(name);
    std::fs::read_to_string(&path).expect("shipped spec is readable")
}

/// The shipped spec file `name`, read without a diagnostic.
pub fn load(name: &str) -> Spec {
    let (spec, diags) = parse(&source(name), FileId(0));
    assert!(diags.is_empty(), "{name}: {diags:?}");
    spec.expect("a spec without diagnostics")
}
