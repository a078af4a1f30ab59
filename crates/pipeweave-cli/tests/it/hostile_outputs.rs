//! The second hostile audit's reproducers on the command line's own surface: outputs that are no
//! files (a FIFO, a link to one, a folder, a folder that does not exist) refused before any work
//! in the words a FIFO is refused as input; numbers too large named as such; a standard input
//! read twice is a usage error; a spec file that shares a built-in's name reported as a spec.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A scratch folder of this test's own, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("pipeweave-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Runs `pipeweave` in the folder, killed after 20 s (a hang is a failure, never a stuck
    /// test).
    fn run(&self, args: &[&str]) -> (Output, Duration) {
        run_in(&self.0, args)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run_in(dir: &Path, args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the pipeweave binary runs");
    while started.elapsed() < Duration::from_secs(20) {
        if child.try_wait().ok().flatten().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("pipeweave ends");
    (out, started.elapsed())
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
}

/// `-o` and `--svg` onto a FIFO (or a link to one) hung after the work was done; a folder or a
/// missing folder was found only after it. All are refused first, with exit code 1.
#[test]
fn outputs_that_are_no_files_are_refused_before_the_work() {
    let s = Scratch::new("outputs");
    mkfifo(&s.path("fifo"));
    std::os::unix::fs::symlink(s.path("fifo"), s.path("link")).expect("a link");
    std::fs::create_dir_all(s.path("folder")).expect("a folder");
    let fifo_words =
        "not a regular file but a FIFO (named pipe); give a file, or `-` for standard output";
    for (args, words) in [
        (
            &[
                "export", "1f1b", "-p", "2", "-m", "2", "--to", "json", "-o", "fifo",
            ][..],
            format!("error: cannot write `fifo`: {fifo_words}"),
        ),
        (
            &["render", "1f1b", "-p", "2", "-m", "2", "--svg", "link"],
            format!("error: cannot write `link`: {fifo_words}"),
        ),
        (
            &[
                "sweep", "1f1b", "-p", "2", "--over", "m=2,4", "--svg", "fifo",
            ],
            format!("error: cannot write `fifo`: {fifo_words}"),
        ),
        (
            &["report", "1f1b", "-p", "2", "-m", "2", "-o", "folder"],
            "error: cannot write `folder`: it is a folder; give a file in it".to_owned(),
        ),
        (
            // The search runs 10 s by default: refused before it starts.
            &[
                "synthesize",
                "-p",
                "8",
                "-m",
                "64",
                "-o",
                "missing/plan.json",
            ],
            "error: cannot write `missing/plan.json`: there is no folder `missing` to write it in"
                .to_owned(),
        ),
    ] {
        let (out, took) = s.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).trim_end(), words, "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(took < Duration::from_secs(5), "{args:?} took {took:?}");
    }
    // A character device is written as a stream.
    let (out, _) = s.run(&[
        "export",
        "1f1b",
        "-p",
        "2",
        "-m",
        "2",
        "--to",
        "json",
        "-o",
        "/dev/null",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// A number past what a plan may have is named as too large, not as something that is no number.
#[test]
fn a_value_too_large_says_so() {
    let s = Scratch::new("large");
    let (out, _) = s.run(&["sweep", "1f1b", "-p", "2", "--over", "m=937499999941"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).trim_end(),
        "error: --over: 937499999941 micro-batches; a plan has at most 16777216 micro-batches"
    );
}

/// `--memory-limit` beyond any GPU is refused with the number as the user would read it (it
/// printed `inf GiB per GPU`, or 300 digits).
#[test]
fn a_memory_limit_beyond_any_gpu_is_refused() {
    let s = Scratch::new("memory-limit");
    for value in ["1e308", "1e299", "2000000"] {
        let (out, _) = s.run(&[
            "synthesize",
            "-p",
            "4",
            "-m",
            "8",
            "--spec",
            "unit",
            "--memory-limit",
            value,
        ]);
        assert_eq!(out.status.code(), Some(2), "{value}");
        let err = stderr(&out);
        assert!(
            err.contains("is not a memory size in GiB above 0 and at most 1048576"),
            "{err}"
        );
        assert!(err.len() < 200, "{err}");
    }
}

/// A spec file called `unit` is reported as that spec, never as unit costs.
#[test]
fn a_spec_file_named_unit_is_a_spec() {
    let s = Scratch::new("unit-named");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../specs/unit.toml"),
    )
    .expect("the shipped unit spec");
    std::fs::write(s.path("unit.toml"), text).expect("a spec file");
    let (out, _) = s.run(&[
        "synthesize",
        "-p",
        "4",
        "-m",
        "8",
        "--spec",
        "unit.toml",
        "--evaluations",
        "50",
        "--exact-nodes",
        "0",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["cost_source"], "spec");
    assert_eq!(v["time_unit"], "seconds");
}

/// Standard input is one text: named twice it is a usage error, whichever two take it.
#[test]
fn standard_input_is_read_once() {
    let s = Scratch::new("stdin-twice");
    for args in [
        &["simulate", "-", "--spec", "-"][..],
        &["compare", "-", "-"],
        &["export", "-", "--spec", "-", "--to", "json"],
    ] {
        let (out, _) = s.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("standard input (`-`) is read once, for the"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}
