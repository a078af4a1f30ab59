//! The playground's script bundle (`crates/pipeweave-serve/web/dist/playground.js`): built from
//! `web/src` with the toolchain `web/package-lock.json` pins (CodeMirror 6 and esbuild from the
//! npm registry, installed by `npm ci`, no install scripts), and checked: the committed bundle
//! must be byte for byte what that build makes, so the binary serves what the sources say. The
//! workspace's Rust build never needs npm; only these two steps do.

use crate::{on_path, root};
use std::path::{Path, PathBuf};
use std::process::Command;

fn web() -> PathBuf {
    root().join("crates/pipeweave-serve/web")
}

fn run_in(
    dir: &Path,
    name: &str,
    program: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<(), String> {
    eprintln!("xtask: {name}: {program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .status()
        .map_err(|e| format!("{name}: cannot start `{program}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{name} failed ({status})"))
    }
}

/// Node.js 18 or later and npm, or how to get them.
fn node() -> Result<(), String> {
    if !on_path("node") || !on_path("npm") {
        return Err(
            "the playground's bundle is built with Node.js (18 or later) and npm, which \
                    are not installed: install them (Debian: `apt-get install nodejs npm`), then \
                    run the step again"
                .into(),
        );
    }
    let version = Command::new("node")
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run `node --version`: {e}"))?;
    let text = String::from_utf8_lossy(&version.stdout);
    let major: u32 = text
        .trim()
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if major < 18 {
        return Err(format!(
            "the playground's bundle needs Node.js 18 or later; this is {}",
            text.trim()
        ));
    }
    Ok(())
}

/// Installs the locked toolchain and builds the bundle into `out` (relative to `web/`).
fn build(out: &str) -> Result<(), String> {
    node()?;
    let web = web();
    run_in(
        &web,
        "playground",
        "npm",
        &["ci", "--no-audit", "--no-fund", "--ignore-scripts"],
        &[],
    )?;
    run_in(
        &web,
        "playground",
        "npm",
        &["run", "--silent", "build"],
        &[("OUT", out)],
    )
}

/// `cargo xtask playground`: rebuilds the committed bundle.
pub fn write() -> Result<(), String> {
    build("dist/playground.js")?;
    eprintln!("xtask: playground: wrote crates/pipeweave-serve/web/dist/playground.js; commit it");
    Ok(())
}

/// The check of `cargo xtask test`: the committed bundle is what the build makes.
pub fn check() -> Result<(), String> {
    let fresh = "target/playground.check.js";
    build(fresh)?;
    let web = web();
    let made = std::fs::read(web.join(fresh))
        .map_err(|e| format!("playground: cannot read the bundle made: {e}"))?;
    let _ = std::fs::remove_file(web.join(fresh));
    let committed = std::fs::read(web.join("dist/playground.js"))
        .map_err(|e| format!("playground: cannot read the committed bundle: {e}"))?;
    if made == committed {
        eprintln!(
            "xtask: playground: the committed bundle is what its sources make ({} bytes)",
            made.len()
        );
        Ok(())
    } else {
        Err(format!(
            "the committed crates/pipeweave-serve/web/dist/playground.js ({} bytes) is not what its \
             sources make ({} bytes): run `cargo xtask playground` and commit the bundle",
            committed.len(),
            made.len()
        ))
    }
}
