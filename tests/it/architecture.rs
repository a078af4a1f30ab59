//! ARCHITECTURE.md's claims that a program can check, checked: the floors of its crate graph
//! against `cargo metadata` (every crate on one floor, every dependency on a floor below, nothing
//! in `crates/` on `plugins/`), the pure crates free of IO, and `unsafe` only where it says.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate is in the workspace")
        .to_path_buf()
}

/// The floors of ARCHITECTURE.md: the `text` block under "## Crates, floor by floor", one line
/// per floor, `N  crate crate ...` (short names, without `pipeweave-`).
fn floors() -> BTreeMap<String, u32> {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let start = text
        .find("## Crates, floor by floor")
        .expect("ARCHITECTURE.md has its floors");
    let block = text[start..]
        .split("```text\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a text block of floors");
    let mut out = BTreeMap::new();
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let mut words = line.split_whitespace();
        let floor: u32 = words
            .next()
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("a floor line starts with its number: {line:?}"));
        for name in words {
            let previous = out.insert(format!("pipeweave-{name}"), floor);
            assert!(previous.is_none(), "{name} is on two floors");
        }
    }
    out
}

/// Every package of the workspace: its name, its folder, and its normal dependencies' names.
fn packages() -> Vec<(String, PathBuf, Vec<String>)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            let manifest = PathBuf::from(p["manifest_path"].as_str().expect("a path"));
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().expect("a name").to_owned())
                .collect();
            let name = p["name"].as_str().expect("a name").to_owned();
            (
                name,
                manifest.parent().expect("a folder").to_path_buf(),
                deps,
            )
        })
        .collect()
}

/// Each crate depends only on crates on the floors below it, every crate of `crates/` has one
/// floor, its folder is named as it is, and nothing in `crates/` depends on `plugins/`.
#[test]
fn the_crate_graph_is_the_documented_floors() {
    let floors = floors();
    let packages = packages();
    let crates_dir = root().join("crates");
    let in_crates: Vec<&(String, PathBuf, Vec<String>)> = packages
        .iter()
        .filter(|(_, dir, _)| dir.starts_with(&crates_dir))
        .collect();
    let plugins: Vec<&str> = packages
        .iter()
        .filter(|(_, dir, _)| dir.starts_with(root().join("plugins")))
        .map(|(name, _, _)| name.as_str())
        .collect();
    for (name, dir, deps) in &in_crates {
        assert_eq!(
            dir.file_name().and_then(|f| f.to_str()),
            Some(name.as_str()),
            "the folder of {name} is named after it"
        );
        let floor = *floors
            .get(name)
            .unwrap_or_else(|| panic!("{name} is on no floor of ARCHITECTURE.md"));
        for dep in deps {
            assert!(!plugins.contains(&dep.as_str()), "{name} depends on {dep}");
            if let Some(&below) = floors.get(dep) {
                assert!(
                    below < floor,
                    "{name} (floor {floor}) depends on {dep} (floor {below})"
                );
            }
        }
    }
    for name in floors.keys() {
        assert!(
            in_crates.iter().any(|(n, _, _)| n == name),
            "ARCHITECTURE.md puts {name} on a floor, and crates/ has no such crate"
        );
    }
}

/// The Rust files of a crate's `src/`, unit tests aside.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.join("src")];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "tests") {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs")
                && path.file_name().is_some_and(|n| n != "tests.rs")
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The pure crates do no IO: no files, environment, processes, network or printing (their tests
/// aside). `pipeweave-app` reads the clock for a time limit and nothing else.
#[test]
fn the_pure_crates_do_no_io() {
    const PURE: [&str; 18] = [
        "plan",
        "trace",
        "calibrate",
        "param",
        "check",
        "sim",
        "synth",
        "dsl",
        "spec",
        "cost",
        "eval",
        "source",
        "export",
        "report",
        "generators",
        "diagnostics",
        "plugin-api",
        "app",
    ];
    // `std::env::consts` are constants of the build, not the environment.
    const IO: [&str; 15] = [
        "std::fs",
        "std::env::var",
        "std::env::args",
        "std::env::current",
        "std::env::set",
        "std::env::remove",
        "std::env::temp_dir",
        "std::process",
        "std::net",
        "println!",
        "eprintln!",
        "print!(",
        "eprint!(",
        "stdout()",
        "stderr()",
    ];
    let crates = root().join("crates");
    for name in PURE {
        let dir = crates.join(format!("pipeweave-{name}"));
        assert!(dir.is_dir(), "{} is missing", dir.display());
        for file in sources(&dir) {
            let text = std::fs::read_to_string(&file).expect("a source file");
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                if let Some(io) = IO.iter().find(|io| code.contains(*io)) {
                    panic!("{}:{}: `{io}` in a pure crate", file.display(), n + 1);
                }
            }
        }
    }
}

/// `unsafe` is denied in the workspace and allowed only in the plugin loader and the plugin
/// API (and the deliberately broken fixtures under `plugins/fault-*`).
#[test]
fn unsafe_is_allowed_only_in_the_plugin_boundary() {
    let crates = root().join("crates");
    for entry in std::fs::read_dir(&crates).expect("crates/").flatten() {
        let dir = entry.path();
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let allowed = name == "pipeweave-plugin-host" || name == "pipeweave-plugin-api";
        for file in sources(&dir) {
            let text = std::fs::read_to_string(&file).expect("a source file");
            if !allowed {
                assert!(
                    !text.contains("allow(unsafe_code)") && !text.contains("unsafe {"),
                    "{}: unsafe outside the plugin boundary",
                    file.display()
                );
            }
        }
    }
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    assert!(manifest.contains("unsafe_code = \"deny\""));
    assert!(
        !manifest.contains("panic = \"abort\""),
        "plugins need unwinding"
    );
}
