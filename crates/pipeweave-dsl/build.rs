//! Embeds the schedule library: every `schedules/*.weave` file of the workspace becomes an entry
//! of a generated table, so the binary knows the library wherever it runs, and a new file is a
//! new schedule without touching code.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest).join("../../schedules");
    println!("cargo::rerun-if-changed={}", dir.display());
    let mut entries: Vec<(String, String)> = Vec::new();
    // A build without its library would be a broken binary: fail the build instead.
    let read = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read the schedule library {}: {e}", dir.display()));
    {
        for entry in read.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "weave")
                && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
            {
                println!("cargo::rerun-if-changed={}", path.display());
                entries.push((stem.to_owned(), path.display().to_string()));
            }
        }
    }
    entries.sort();
    assert!(
        !entries.is_empty(),
        "the schedule library {} holds no .weave file",
        dir.display()
    );
    let mut out = String::from("&[\n");
    for (name, path) in &entries {
        let _ = writeln!(out, "    ({name:?}, include_str!({path:?})),");
    }
    out.push_str("]\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("library.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}
