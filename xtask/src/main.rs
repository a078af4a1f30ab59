//! Project automation. `cargo xtask test` runs everything CI runs, in order, and stops at the first
//! failure: formatting, lints, the workspace build (plugins are `cdylib`s that `cargo test` does not
//! build by itself), every Rust test, a short run of every fuzz target (`fuzz.rs`), then the
//! PyTorch conformance suite.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod fuzz;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn run(name: &str, program: &str, args: &[&str]) -> Result<(), String> {
    eprintln!("xtask: {name}: {program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .current_dir(root())
        .status()
        .map_err(|e| format!("{name}: cannot start `{program}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{name} failed ({status})"))
    }
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

fn rust_checks() -> Result<(), String> {
    let cargo = cargo();
    run("format", &cargo, &["fmt", "--all", "--check"])?;
    run(
        "lints",
        &cargo,
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    run("build", &cargo, &["build", "--workspace", "--locked"])?;
    run("tests", &cargo, &["test", "--workspace", "--locked"])
}

fn conformance() -> Result<(), String> {
    let script = root().join("tests/conformance/run.py");
    if !script.exists() {
        return Err(format!(
            "the conformance suite is missing: {}",
            script.display()
        ));
    }
    run("conformance", "python3", &["tests/conformance/run.py"])
}

/// The fuzz step of `cargo xtask test`: about a minute in all.
const CI_FUZZ: fuzz::Budget = fuzz::Budget {
    seconds_per_target: 12,
};

const USAGE: &str = "usage: cargo xtask <test|rust|fuzz [SECONDS]|conformance>
  test            everything CI runs: fmt, clippy, build, Rust tests, fuzz, conformance suite
  rust            only the Rust part (no fuzzing)
  fuzz [SECONDS]  only the fuzz targets, each for SECONDS (default 12) on top of its corpus
  conformance     only the PyTorch conformance suite";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match (args.first().map(String::as_str), args.get(1)) {
        (Some("test"), None) => rust_checks()
            .and_then(|()| fuzz::fuzz(&CI_FUZZ))
            .and_then(|()| conformance()),
        (Some("rust"), None) => rust_checks(),
        (Some("fuzz"), None) => fuzz::fuzz(&CI_FUZZ),
        (Some("fuzz"), Some(seconds)) => match seconds.parse() {
            Ok(seconds_per_target) if seconds_per_target > 0 => {
                fuzz::fuzz(&fuzz::Budget { seconds_per_target })
            }
            _ => {
                eprintln!("xtask: fuzz takes a number of seconds per target, not `{seconds}`");
                return ExitCode::from(2);
            }
        },
        (Some("conformance"), None) => conformance(),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => {
            eprintln!("xtask: all passed");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}
