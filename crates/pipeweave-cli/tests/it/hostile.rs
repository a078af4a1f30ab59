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
