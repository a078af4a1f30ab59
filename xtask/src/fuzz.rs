//! The fuzzing step: `cargo fuzz` on every target of `fuzz/` for a few seconds each, on top of
//! replaying its corpus (seeds and the regression inputs of past findings, `fuzz/corpus/<target>/`).
//!
//! cargo-fuzz is installed from crates.io when missing, into a folder outside the checkout that
//! later runs reuse. The targets are built without a sanitizer (`-s none`), whose flags a stable
//! compiler takes; only the sanitizers need `RUSTC_BOOTSTRAP=1` (see `fuzz/README.md`). Quiet on
//! success: one line per target. A crash, a timeout or running out of memory in any target fails
//! the step (after every target ran) with the panic or libFuzzer's verdict, the reproducer's path
//! and the command that replays it.

use crate::{cargo, root};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The targets, as `fuzz/Cargo.toml` names them.
pub const TARGETS: &[&str] = &[
    "dsl",
    "spec",
    "actions",
    "pytorch_comms",
    "json",
    "protocol",
    "trace",
];

/// The cargo-fuzz release installed when none is found.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// How long each target runs.
pub struct Budget {
    pub seconds_per_target: u32,
}

/// Installs cargo-fuzz if needed, checks the fuzz crate (its lock file, format and lints), builds
/// every target and runs each for its share of the budget.
pub fn fuzz(budget: &Budget) -> Result<(), String> {
    let cargo_fuzz = cargo_fuzz()?;
    check_lock()?;
    check_style()?;
    eprintln!(
        "xtask: fuzz: {} targets, {} s each on top of their corpus",
        TARGETS.len(),
        budget.seconds_per_target
    );
    let build = quiet(
        "fuzz build",
        cargo_fuzz_command(&cargo_fuzz).args(["build", "-s", "none"]),
    )?;
    if !build.status.success() {
        return Err(format!(
            "fuzz build failed ({}):\n{}",
            build.status,
            String::from_utf8_lossy(&build.stderr)
        ));
    }
    let scratch = std::env::temp_dir().join(format!("pipeweave-fuzz-{}", std::process::id()));
    let failed: Vec<String> = TARGETS
        .iter()
        .filter_map(|target| run_target(&cargo_fuzz, target, &scratch, budget).err())
        .collect();
    let _ = std::fs::remove_dir_all(&scratch);
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("\n"))
    }
}

/// `cargo fuzz` with the environment every call needs.
fn cargo_fuzz_command(cargo_fuzz: &Path) -> Command {
    let mut command = Command::new(cargo_fuzz);
    // cargo-fuzz is a cargo subcommand: it takes its own name first.
    command
        .arg("fuzz")
        .current_dir(root())
        .env("CARGO", cargo());
    command
}

/// Runs a command with its output captured.
fn quiet(name: &str, command: &mut Command) -> Result<Output, String> {
    command
        .output()
        .map_err(|e| format!("{name}: cannot start {:?}: {e}", command.get_program()))
}

/// cargo-fuzz on the PATH (cargo's own bin folder), or in the cache folder, installed there when
/// missing.
fn cargo_fuzz() -> Result<PathBuf, String> {
    let exe = format!("cargo-fuzz{}", std::env::consts::EXE_SUFFIX);
    let on_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join(&exe)).collect())
        .unwrap_or_default();
    if let Some(found) = on_path.into_iter().find(|p| p.is_file()) {
        return Ok(found);
    }
    let home =
        std::env::var_os("HOME").ok_or("HOME is not set: no folder to install cargo-fuzz")?;
    let cache = Path::new(&home).join(".cache/pipeweave/cargo-fuzz");
    let installed = cache.join("bin").join(&exe);
    if installed.is_file() {
        return Ok(installed);
    }
    let cache_arg = cache.to_string_lossy().into_owned();
    eprintln!("xtask: fuzz: installing cargo-fuzz {CARGO_FUZZ_VERSION} into {cache_arg}");
    let output = quiet(
        &format!("install cargo-fuzz {CARGO_FUZZ_VERSION} into {cache_arg}"),
        Command::new(cargo()).args([
            "install",
            "cargo-fuzz",
            "--locked",
            "--version",
            CARGO_FUZZ_VERSION,
            "--root",
            &cache_arg,
        ]),
    )?;
    if !output.status.success() || !installed.is_file() {
        return Err(format!(
            "installing cargo-fuzz failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(installed)
}

/// The fuzz crate's lock file is up to date, and every version it holds of a package the workspace
/// also uses is one the workspace's lock file holds, so the targets fuzz the code that ships.
fn check_lock() -> Result<(), String> {
    let output = quiet(
        "fuzz lock",
        Command::new(cargo())
            .current_dir(root())
            .args(["metadata", "--locked", "--format-version", "1"])
            .args(["--manifest-path", "fuzz/Cargo.toml"]),
    )?;
    if !output.status.success() {
        return Err(format!(
            "fuzz/Cargo.lock is out of date (update it with `cargo update --manifest-path fuzz/Cargo.toml -p NAME`):\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let read = |path: &str| {
        std::fs::read_to_string(root().join(path)).map_err(|e| format!("cannot read {path}: {e}"))
    };
    let workspace = packages(&read("Cargo.lock")?);
    let mut differ = Vec::new();
    for (name, versions) in packages(&read("fuzz/Cargo.lock")?) {
        if let Some(ours) = workspace.get(&name)
            && let Some(other) = versions.iter().find(|v| !ours.contains(v))
        {
            differ.push(format!(
                "{name} {other} (the workspace has {})",
                ours.join(", ")
            ));
        }
    }
    if differ.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "fuzz/Cargo.lock holds other versions than Cargo.lock: {}",
            differ.join(", ")
        ))
    }
}

/// The fuzz crate, a workspace of its own, formatted and free of lints like the main one.
fn check_style() -> Result<(), String> {
    let manifest = ["--manifest-path", "fuzz/Cargo.toml"];
    let checks: [(&str, Vec<&str>); 2] = [
        (
            "fuzz format",
            [&["fmt"], &manifest[..], &["--check"]].concat(),
        ),
        (
            "fuzz lints",
            [
                &["clippy"],
                &manifest[..],
                // The workspace's target folder: the crates both check are checked already.
                &["--all-targets", "--locked", "--target-dir", "target"],
                &["--", "-D", "warnings"],
            ]
            .concat(),
        ),
    ];
    for (name, args) in checks {
        let output = quiet(name, Command::new(cargo()).current_dir(root()).args(args))?;
        if !output.status.success() {
            return Err(format!(
                "{name} failed ({}):\n{}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    Ok(())
}

/// Every package of a lock file with its versions.
fn packages(lock: &str) -> BTreeMap<String, Vec<String>> {
    let mut packages: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut name = None;
    for line in lock.lines() {
        let value = |key: &str| {
            line.strip_prefix(key)
                .and_then(|v| v.strip_prefix(" = \""))
                .and_then(|v| v.strip_suffix('"'))
                .map(str::to_owned)
        };
        if let Some(n) = value("name") {
            name = Some(n);
        } else if let (Some(v), Some(n)) = (value("version"), name.take()) {
            packages.entry(n).or_default().push(v);
        }
    }
    packages
}

/// Runs one target: its corpus first, then new inputs for the budget, written to a scratch
/// folder so the checkout's corpus stays as committed.
fn run_target(
    cargo_fuzz: &Path,
    target: &str,
    scratch: &Path,
    budget: &Budget,
) -> Result<(), String> {
    let grown = scratch.join(target);
    std::fs::create_dir_all(&grown)
        .map_err(|e| format!("cannot create {}: {e}", grown.display()))?;
    let corpus = format!("fuzz/corpus/{target}");
    let mut command = cargo_fuzz_command(cargo_fuzz);
    command
        .args(["run", "-s", "none", target])
        .arg(&grown)
        .arg(&corpus)
        .arg("--")
        .arg(format!("-max_total_time={}", budget.seconds_per_target))
        // libFuzzer's own limits per input: what the readers must stay well within.
        .args(["-timeout=10", "-rss_limit_mb=2048", "-print_final_stats=1"]);
    let dict = format!("fuzz/dict/{target}.dict");
    if root().join(&dict).is_file() {
        command.arg(format!("-dict={dict}"));
    }
    let output = quiet(&format!("fuzz {target}"), &mut command)?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    if output.status.success() {
        eprintln!("xtask: fuzz {target}: {}", summary(&log));
        return Ok(());
    }
    let reproducer = log
        .lines()
        .find_map(|l| l.split_once("Test unit written to ").map(|(_, p)| p.trim()));
    // The whole output beside the reproducer; here only what says what happened.
    let saved = root().join("fuzz/artifacts").join(target).join("fuzz.log");
    let saved = std::fs::create_dir_all(saved.parent().unwrap_or(&saved))
        .and_then(|()| std::fs::write(&saved, &log))
        .map_or_else(
            |e| format!("(not saved: {e})"),
            |()| saved.display().to_string(),
        );
    let mut report = vec![format!("fuzz {target} failed ({})", output.status)];
    report.extend(what_happened(&log));
    match reproducer {
        Some(path) => {
            report.push(format!("reproducer: {path}"));
            report.push(format!(
                "replay it with: cargo fuzz run -s none {target} {path}"
            ));
        }
        None => report.push("no reproducer was written".to_owned()),
    }
    report.push(format!("libFuzzer's whole output: {saved}"));
    Err(report.join("\n"))
}

/// The lines of a failed run that say what happened: a panic's place and message, libFuzzer's
/// verdict (crash, timeout, out of memory), or, when there are none (a build that failed), the
/// last lines.
fn what_happened(log: &str) -> Vec<String> {
    let lines: Vec<&str> = log.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.contains("panicked at") {
            found.extend(
                lines[i..(i + 2).min(lines.len())]
                    .iter()
                    .map(|l| l.to_string()),
            );
        } else if line.contains("ERROR: libFuzzer") || line.starts_with("SUMMARY: libFuzzer") {
            found.push(line.to_string());
        }
    }
    if found.is_empty() {
        found = lines[lines.len().saturating_sub(40)..]
            .iter()
            .map(|l| l.to_string())
            .collect();
    }
    found
}

/// `N runs in S second(s), corpus C inputs` from libFuzzer's last lines.
fn summary(log: &str) -> String {
    let done = log
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("Done "))
        .unwrap_or("? runs");
    let corpus = log
        .lines()
        .rev()
        .find_map(|l| l.split_once(" corp: ")?.1.split('/').next())
        .unwrap_or("?");
    format!("{done}, corpus {corpus} inputs, no crash")
}
