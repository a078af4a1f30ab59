//! Project automation. `cargo xtask test` runs everything CI runs, in order, and stops at the first
//! failure: formatting, lints, the workspace build (plugins are `cdylib`s that `cargo test` does not
//! build by itself), every Rust test, the check that the playground's committed script bundle is
//! what its locked npm toolchain makes (`playground.rs`; `cargo xtask playground` rebuilds it),
//! a short run of every fuzz target (`fuzz.rs`), the Python
//! package's tests (`tests/python/run.py`: `pip install ./python`, then pytest), then the PyTorch
//! conformance suite.
//!
//! It installs what the tests need on first use: headless Chromium for the report's browser tests
//! (Debian's `chromium` package, with apt-get when it runs as root; otherwise it names the command
//! to run), cargo-fuzz for the fuzz step, and the Python tests and the conformance suite install
//! their pinned torch (and torchtitan, pytest, the package itself) into one cached virtual
//! environment under `~/.cache/pipeweave`.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod fuzz;
mod playground;
mod typed;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn run(name: &str, program: &str, args: &[&str]) -> Result<(), String> {
    run_with(name, program, args, &[])
}

/// Runs `program` in the repository's root with `env` added to the environment.
fn run_with(name: &str, program: &str, args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    eprintln!("xtask: {name}: {program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(root())
        .status()
        .map_err(|e| format!("{name}: cannot start `{program}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{name} failed ({status})"))
    }
}

/// Whether `program` is a file in one of the PATH's folders.
fn on_path(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
}

/// Whether this process runs as root (`id -u` says 0).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.status.success() && out.stdout.trim_ascii() == b"0")
}

/// Makes sure the report's browser tests find headless Chromium (as they look for it:
/// `PIPEWEAVE_CHROMIUM`, else `chromium` or `chromium-browser` on the PATH), installing Debian's
/// `chromium` package when it is missing and apt-get may be used.
fn chromium() -> Result<(), String> {
    if let Some(path) = std::env::var_os("PIPEWEAVE_CHROMIUM") {
        return if Path::new(&path).is_file() {
            Ok(())
        } else {
            Err(format!(
                "PIPEWEAVE_CHROMIUM names {}, which is not a file",
                Path::new(&path).display()
            ))
        };
    }
    if on_path("chromium") || on_path("chromium-browser") {
        return Ok(());
    }
    if on_path("apt-get") && is_root() {
        eprintln!("xtask: the report's browser tests need headless Chromium; installing it");
        run("chromium", "apt-get", &["update", "-qq"])?;
        run_with(
            "chromium",
            "apt-get",
            &["install", "-y", "-qq", "chromium"],
            &[("DEBIAN_FRONTEND", "noninteractive")],
        )?;
        return if on_path("chromium") {
            Ok(())
        } else {
            Err("apt-get installed chromium, yet no `chromium` is on the PATH".into())
        };
    }
    let how = if on_path("apt-get") {
        "run `sudo apt-get update && sudo apt-get install -y chromium`"
    } else {
        "install Chromium with the system's package manager so that `chromium` is on the PATH"
    };
    Err(format!(
        "the report's browser tests need headless Chromium, which is not installed: {how} \
         (or set PIPEWEAVE_CHROMIUM to a Chromium binary), then run `cargo xtask test` again"
    ))
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

/// Plan against actual (`tests/fidelity/run.py`, a few minutes, never part of `test`): in one
/// pair of CPU processes, in rounds, profiles the calibrating plans (1F1B, ZB-H1 and looped BFS at
/// P = 2) and every schedule that runs at P = 2, in an order shuffled anew each round, calibrates
/// from every round's calibrating runs, and prints predicted against measured step time (the median
/// over every round's steps, with the rounds' spread) and memory. `args` go to the script
/// (`--rounds N`, `--steps N`, `--warmup N`, `--only NAME...`, `--keep DIR`, `--measure-only`).
fn fidelity(args: &[String]) -> Result<(), String> {
    let mut all = vec!["tests/fidelity/run.py"];
    all.extend(args.iter().map(String::as_str));
    run("fidelity", "python3", &all)
}

/// The Python package's tests: installs the package (building its extension) into the cached
/// environment and runs pytest on `tests/python`.
fn python_tests() -> Result<(), String> {
    typed::check(&root())?;
    run("python", "python3", &["tests/python/run.py"])
}

/// The fuzz step of `cargo xtask test`: about a minute in all.
const CI_FUZZ: fuzz::Budget = fuzz::Budget {
    seconds_per_target: 12,
};

const USAGE: &str =
    "usage: cargo xtask <test|rust|fuzz [SECONDS]|python|conformance|fidelity|playground>
  test            everything CI runs: fmt, clippy, build, Rust tests, the playground's bundle
                  check, fuzz, the Python package's tests, conformance suite (installs headless
                  Chromium, cargo-fuzz, torch, torchtitan and pytest when they are missing)
  rust            only the Rust part, no fuzzing (installs headless Chromium when it is missing)
  fuzz [SECONDS]  only the fuzz targets, each for SECONDS (default 12) on top of its corpus
  python          only the Python package's tests (pip install ./python, then pytest)
  typed           write python/pipeweave/_results.py from schemas/ (the package's result types)
  conformance     only the PyTorch conformance suite
  fidelity [ARGS] plan against actual, a few minutes: in rounds, profile 1F1B, ZB-H1 and
                  looped BFS at P = 2 and every schedule at P = 2, calibrate from those runs,
                  predict and measure (tests/fidelity/run.py ARGS: --rounds, --steps, --warmup,
                  --only, --keep, --measure-only)
  playground      rebuild the playground's script bundle (npm ci from web/package-lock.json, then
                  esbuild) into crates/pipeweave-serve/web/dist/playground.js
  playground --check  only check that the committed bundle is what that build makes";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match (args.first().map(String::as_str), args.get(1)) {
        (Some("test"), None) => chromium()
            .and_then(|()| rust_checks())
            .and_then(|()| playground::check())
            .and_then(|()| fuzz::fuzz(&CI_FUZZ))
            .and_then(|()| python_tests())
            .and_then(|()| conformance()),
        (Some("rust"), None) => chromium().and_then(|()| rust_checks()),
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
        (Some("python"), None) => python_tests(),
        (Some("typed"), None) => typed::write(&root()),
        (Some("conformance"), None) => conformance(),
        (Some("fidelity"), _) => fidelity(&args[1..]),
        (Some("playground"), None) => playground::write(),
        (Some("playground"), Some(flag)) if flag == "--check" => playground::check(),
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
