//! Hostile input as a user could make it: huge lines, thousands of errors, binary bytes, FIFOs,
//! full disks and read-only folders. Every case is answered with a located error in plain words,
//! bounded output and the exit code of the rule (0 success, 1 invalid input, 2 usage error).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

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

    fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, bytes).expect("a scratch file");
        path
    }

    /// Runs `pipeweave` in the folder.
    fn run(&self, args: &[&str]) -> Output {
        run_in(&self.0, args, None)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(args)
        .current_dir(dir)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the pipeweave binary runs");
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        use std::io::Write as _;
        let _ = pipe.write_all(bytes);
    }
    child.wait_with_output().expect("pipeweave ends")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// 16,000 bad cells on one 64 KB line: 50 diagnostics, each showing about a hundred columns of the
/// line, then how many more there are (before: 1.5 GB of output in 41 s).
#[test]
fn thousands_of_errors_on_one_line_are_bounded() {
    let dir = Scratch::new("long-line");
    dir.write("bad.actions", vec!["0X0"; 16_000].join(",") + "\n");
    let out = dir.run(&["validate", "bad.actions"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.len() < 30_000, "{} bytes", err.len());
    assert_eq!(err.matches("error: unknown action kind").count(), 50);
    assert!(
        err.ends_with(
            "… and 15,950 more errors (`--max-diagnostics 0` shows all)\n\
             error: 16,000 problems found\n"
        ),
        "{err}"
    );
    let out = dir.run(&["validate", "bad.actions", "--max-diagnostics", "2"]);
    insta::assert_snapshot!("long_line_two_diagnostics", text(&out.stderr));
    let out = dir.run(&["--max-diagnostics", "0", "validate", "bad.actions"]);
    let err = text(&out.stderr);
    assert_eq!(err.matches("error: unknown action kind").count(), 16_000);
    assert!(err.len() < 16_000 * 400, "{} bytes", err.len());
}

/// 8,000 unknown keys in one inline table of a spec (before: 849 MB in 21 s).
#[test]
fn thousands_of_unknown_spec_keys_on_one_line_are_bounded() {
    let dir = Scratch::new("spec-keys");
    let keys: Vec<String> = (0..8000).map(|i| format!("k{i} = 1")).collect();
    let spec = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../specs/unit.toml"),
    )
    .expect("the unit spec");
    let (head, _) = spec
        .split_once("[efficiency]")
        .expect("an efficiency table");
    let (before, after) = head.split_once("[cluster]").expect("a cluster table");
    dir.write(
        "keys.toml",
        format!(
            "{before}efficiency = {{ achievable_fraction = 0.5, {} }}\n[cluster]{after}",
            keys.join(", ")
        ),
    );
    let out = dir.run(&[
        "simulate",
        "1f1b",
        "--spec",
        "keys.toml",
        "--max-diagnostics",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!("spec_keys_one_diagnostic", text(&out.stderr));
}

/// A FIFO or a device as any input: refused before a byte is read, naming the file and what it
/// is (before: `check` on a FIFO waited forever for a writer).
#[cfg(unix)]
#[test]
fn fifos_and_devices_are_refused() {
    let dir = Scratch::new("fifo");
    let made = Command::new("mkfifo")
        .arg(dir.path("pipe"))
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let refusal = "not a regular file but a FIFO (named pipe); give a file, or `-` with the text \
                   on standard input\n";
    for args in [
        &["check", "pipe"][..],
        &["validate", "pipe"],
        &["simulate", "1f1b", "-p", "2", "-m", "2", "--spec", "pipe"],
        &["compare", "1f1b", "--spec", "pipe"],
    ] {
        let out = dir.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(
            text(&out.stderr),
            format!("error: cannot read `pipe`: {refusal}"),
            "{args:?}"
        );
    }
    let out = dir.run(&["validate", "/dev/zero"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("`/dev/zero`: not a regular file but a character device"));
}

/// `-` reads standard input: a plan file (actions, or JSON when it starts with `{`) where a PLAN
/// is expected, a schedule for `check`, a spec for `--spec`; diagnostics call it `<stdin>`.
#[test]
fn a_dash_reads_standard_input() {
    let dir = Scratch::new("stdin");
    let run = |args: &[&str], input: &str| {
        let out = run_in(&dir.0, args, Some(input.as_bytes()));
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let (code, out, _) = run(&["validate", "-"], "0F0,0B0\n");
    assert_eq!(code, Some(0));
    assert!(out.starts_with("<stdin>: valid and deadlock free"), "{out}");
    let (_, json, _) = run(&["convert", "-", "--to", "json"], "0F0,0B0\n1F0,1B0\n");
    let (code, actions, _) = run(&["convert", "-", "--to", "actions"], &json);
    assert_eq!((code, actions.as_str()), (Some(0), "0F0,0B0\n1F0,1B0\n"));
    let (code, _, err) = run(&["check", "-"], "stages P\nprogram { F B x }\n");
    assert_eq!(code, Some(1));
    assert!(err.contains("┌─ <stdin>:2:15"), "{err}");
    let spec = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../specs/unit.toml"),
    )
    .expect("the unit spec");
    let (code, out, err) = run(&["simulate", "1f1b", "--spec", "-"], &spec);
    assert_eq!((code, err.as_str()), (Some(0), ""));
    assert!(out.contains("spec unit:"), "{out}");
    let (code, _, err) = run(&["validate", "-"], "0F0,0X0\n");
    assert_eq!(code, Some(1));
    assert!(err.contains("┌─ <stdin>:1:6"), "{err}");
}
