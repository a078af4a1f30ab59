//! The exit-code rule, command by command: 0 success; 1 invalid input or plan (a file's
//! contents, a schedule's requirement not met, nothing that could run); 2 a usage error (the
//! command line itself is wrong: an unknown flag, a malformed or out-of-range value, a parameter
//! the schedule does not have, a missing argument).

use std::path::PathBuf;
use std::process::{Command, Stdio};

fn fixtures() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pipeweave-exit-codes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let files: [(&str, &str); 4] = [
        ("good.actions", "0F0,0B0\n1F0,1B0\n"),
        ("bad.actions", "0F0,0X0\n"),
        ("bad.weave", "stages P\nprogram { F B r2 }\n"),
        ("bad.toml", "name = \"x\"\n"),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text).expect("a fixture");
    }
    dir
}

#[test]
fn every_command_follows_the_rule() {
    let dir = fixtures();
    let html = dir.join("out.html");
    let html = html.to_str().expect("a UTF-8 path");
    #[rustfmt::skip]
    let cases: &[(i32, &[&str])] = &[
        (0, &["validate", "good.actions"]),
        (1, &["validate", "bad.actions"]),
        (1, &["validate", "missing.actions"]),
        (2, &["validate", "good.actions", "-p", "4"]),
        (2, &["validate", "good.actions", "--pipelines", "0"]),
        (0, &["simulate", "1f1b", "-p", "4", "-m", "8"]),
        (1, &["simulate", "dualpipev", "-p", "4", "-m", "2"]),
        (1, &["simulate", "1f1b", "--spec", "bad.toml"]),
        (2, &["simulate", "1f1b", "-p", "0", "-m", "8"]),
        (2, &["simulate", "1f1b", "-p", "4294967296", "-m", "8"]),
        (2, &["simulate", "1f1b", "-p", "70000", "-m", "8"]),
        (2, &["simulate", "1f1b", "-p", "4", "-m", "0"]),
        (2, &["simulate", "1f1b", "-p", "4"]),
        (2, &["simulate", "1f1b", "-p", "4", "-m", "8", "--costs", "F=1e308"]),
        (0, &["show", "1f1b", "-p", "4", "-m", "8"]),
        (1, &["show", "bad.actions"]),
        (2, &["show", "1f1b", "-p", "4", "-m", "8", "--width", "0"]),
        (0, &["list"]),
        (2, &["list", "--frobnicate"]),
        (0, &["check", "1f1b"]),
        (1, &["check", "bad.weave"]),
        (2, &["check"]),
        (0, &["compile", "1f1b", "-p", "4", "-m", "8"]),
        (1, &["compile", "dualpipev", "-p", "4", "-m", "2"]),
        (2, &["compile", "1f1b", "-p", "4", "-m", "8", "--set", "foo=1"]),
        (2, &["compile", "zb-v", "-p", "4", "-m", "8", "-v", "2"]),
        (2, &["compile", "plugin:dualpipe", "-p", "4", "-m", "8", "--set", "foo=1"]),
        (2, &["compile", "interleaved-1f1b", "-p", "4", "-m", "8", "--set", "v=maybe"]),
        (0, &["convert", "good.actions", "--to", "json"]),
        (1, &["convert", "bad.actions", "--to", "json"]),
        (2, &["convert", "good.actions"]),
        (0, &["export", "1f1b", "-p", "2", "-m", "2", "--to", "pytorch"]),
        (1, &["export", "dualpipe", "-p", "4", "-m", "8", "--to", "pytorch"]),
        (2, &["export", "1f1b", "-p", "2", "-m", "2", "--to", "png"]),
        (0, &["compare", "1f1b", "bad.weave", "-p", "4", "-m", "8"]),
        (1, &["compare", "bad.weave", "-p", "4", "-m", "8"]),
        (1, &["compare", "1f1b", "nothing-of-that-name"]),
        (2, &["compare", "1f1b", "--set", "foo=1"]),
        (0, &["sweep", "1f1b", "-p", "4", "--over", "m=4,8"]),
        (1, &["sweep", "bad.weave", "-p", "4", "--over", "m=4,8"]),
        (2, &["sweep", "1f1b", "-p", "4", "--over", "layers=4"]),
        (2, &["sweep", "1f1b", "--over", "ranks=2,70000", "-m", "8"]),
        (0, &["render", "1f1b", "-p", "2", "-m", "2", "--svg", "-"]),
        (1, &["render", "bad.weave", "-p", "2", "-m", "2", "--svg", "-"]),
        (2, &["render", "1f1b", "-p", "2", "-m", "2"]),
        (0, &["report", "1f1b", "-p", "2", "-m", "2", "-o", html]),
        (1, &["report", "bad.weave", "-p", "2", "-m", "2", "-o", html]),
        (2, &["report", "1f1b", "-p", "2", "-m", "2"]),
        (0, &["recommend", "--spec", "unit"]),
        (1, &["recommend", "--spec", "bad.toml"]),
        (2, &["recommend", "--format", "pdf"]),
        (0, &["help"]),
        (0, &["help", "--help"]),
        (0, &["help", "compile"]),
        (0, &["--help"]),
        (0, &["--version"]),
        (2, &["help", "frobnicate"]),
        (2, &["frobnicate"]),
        (2, &[]),
    ];
    let mut wrong = Vec::new();
    for (expected, args) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
            .args(*args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .expect("the pipeweave binary runs");
        let code = out.status.code().unwrap_or(-1);
        let err = String::from_utf8_lossy(&out.stderr);
        if code != *expected {
            wrong.push(format!("{args:?}: exit {code}, expected {expected}\n{err}"));
        }
        // A failure says why, on standard error.
        if code != 0 && err.trim().is_empty() {
            wrong.push(format!("{args:?}: exit {code} without a word"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
