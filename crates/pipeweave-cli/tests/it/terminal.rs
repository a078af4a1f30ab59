//! What reaches the terminal: a name, a path, a cell or a key with control characters in it (an
//! escape sequence, `ESC [2J`, clears the user's screen) is refused where it is read or drawn as
//! its picture where it is shown, so no output holds one but line ends; and one diagnostic's
//! output is bounded however many places it names (a deadlock through 65,536 ranks).

use std::path::PathBuf;
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

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("a scratch folder");
        }
        std::fs::write(&path, text).expect("a scratch file");
        path
    }

    /// Runs `pipeweave` in the folder.
    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_pipeweave"))
            .args(args)
            .current_dir(&self.0)
            .env_remove("PIPEWEAVE_SCHEDULE_PATH")
            .env_remove("PIPEWEAVE_PLUGIN_PATH")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .expect("the pipeweave binary runs")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The control characters of `bytes` (as text) other than line ends.
fn controls(bytes: &[u8]) -> Vec<char> {
    String::from_utf8_lossy(bytes)
        .chars()
        .filter(|c| c.is_control() && *c != '\n')
        .collect()
}

/// Standard output and error hold no control character but line ends (and no ESC byte at all).
fn assert_clean(what: &str, out: &Output) {
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        assert!(!bytes.contains(&0x1b), "{what}: an ESC byte on {stream}");
        assert_eq!(
            controls(bytes),
            [],
            "{what}: {stream}: {}",
            String::from_utf8_lossy(bytes)
        );
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The shipped `unit` spec with its name replaced by `name` (TOML text, escapes allowed).
fn unit_spec_named(name: &str) -> String {
    let unit = include_str!("../../../../specs/unit.toml");
    unit.lines()
        .map(|l| {
            if l.starts_with("name = ") {
                format!("name = \"{name}\"")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A spec whose name clears the screen (`\u001b[2J`) and rings (`\u0007`): refused at the key,
/// in plain words (it was printed as it was, on stdout, by every command on the spec).
#[test]
fn a_spec_name_with_an_escape_sequence_is_refused() {
    let dir = Scratch::new("terminal-spec");
    dir.write("evil.toml", &unit_spec_named("x\\u001b[2J\\u0007"));
    for args in [
        &[
            "simulate",
            "1f1b",
            "-p",
            "4",
            "-m",
            "8",
            "--spec",
            "evil.toml",
        ][..],
        &["compare", "1f1b", "zb-h1", "--spec", "evil.toml"][..],
        &[
            "simulate",
            "1f1b",
            "--spec",
            "evil.toml",
            "--format",
            "json",
        ][..],
    ] {
        let out = dir.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert_clean(&format!("{args:?}"), &out);
        assert!(out.stdout.is_empty());
        let err = stderr(&out);
        assert!(
            err.starts_with(
                "error: a spec's name may not contain control characters (U+001B at column 10)\n  \
                 ┌─ evil.toml:"
            ),
            "{err}"
        );
    }
}

/// A plan file whose path holds an escape sequence, a bell and a carriage return: every command
/// that names the plan shows their pictures.
#[test]
fn a_plan_files_path_is_shown_without_its_control_characters() {
    let dir = Scratch::new("terminal-path");
    let name = "clear\u{1b}[2J\u{7}\r.actions";
    dir.write(name, "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
    let shown = "clear␛[2J␇␍.actions";
    for args in [
        &["validate", name][..],
        &["simulate", name],
        &["simulate", name, "--format", "json"],
        &["compare", name, "--spec", "unit"],
        &["compare", name, "--spec", "unit", "--format", "csv"],
        &["compare", name, "--spec", "unit", "--format", "markdown"],
        &["compare", name, "--spec", "unit", "--format", "json"],
        &["render", name, "--svg", "-"],
        &["render", name, "--svg", "out.svg"],
        &["report", name, "-o", "-"],
    ] {
        let out = dir.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_clean(&format!("{args:?}"), &out);
        let text = String::from_utf8_lossy(&out.stdout);
        // JSON keeps the name, escaped.
        let json = text.contains("clear\\u001b[2J\\u0007\\r.actions");
        assert!(text.contains(shown) || json, "{args:?}: {text}");
    }
    let out = dir.run(&["validate", name]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&format!("{shown}: valid")),
        "{out:?}"
    );
}

/// A missing file, a bad cell in a file named with an escape sequence, a cell holding one and a
/// JSON plan's unknown key holding one: the errors quote them as pictures or codes, the file's
/// name in the header too.
#[test]
fn errors_quote_paths_cells_and_keys_without_control_characters() {
    let dir = Scratch::new("terminal-errors");
    let out = dir.run(&["validate", "missing\u{1b}[2J.actions"]);
    assert_eq!(out.status.code(), Some(1));
    assert_clean("a missing file", &out);
    assert!(
        stderr(&out).contains("missing␛[2J.actions"),
        "{}",
        stderr(&out)
    );

    let name = "bad\u{1b}[2J.actions";
    dir.write(name, "0F0,0F1\u{1b}[31m,0B0,0B1\n1F0,1B0,1F1,1B1\n");
    let out = dir.run(&["validate", name]);
    assert_eq!(out.status.code(), Some(1));
    assert_clean("a bad cell", &out);
    let err = stderr(&out);
    assert!(
        err.starts_with("error: unexpected `\\u{1b}[31m` after `0F1`\n  ┌─ bad␛[2J.actions:1:8\n"),
        "{err}"
    );
    assert!(err.contains("│ 0F0,0F1␛[31m,0B0,0B1\n"), "{err}");

    dir.write(
        "key.json",
        "{\"format\": \"pipeweave-plan\", \"version\": 1, \"\\u001b[2J\": 1}",
    );
    let out = dir.run(&["validate", "key.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_clean("a JSON key", &out);
    assert!(
        stderr(&out).contains("unknown field `␛[2J`"),
        "{}",
        stderr(&out)
    );
}

/// A schedule's doc string with an escape sequence is refused where it stands; a schedule folder
/// file whose name rings the bell is not listed, and `list` says so without ringing it.
#[test]
fn schedules_with_control_characters_are_refused() {
    let dir = Scratch::new("terminal-weave");
    dir.write(
        "evil.weave",
        "doc \"clear\u{1b}[2J\"\nstages P\nprogram { repeat M { F } repeat M { B } }\n",
    );
    let out = dir.run(&["check", "evil.weave"]);
    assert_eq!(out.status.code(), Some(1));
    assert_clean("check", &out);
    assert!(
        stderr(&out).starts_with(
            "error: a string may not contain control characters (U+001B at column 11)\n"
        ),
        "{}",
        stderr(&out)
    );

    dir.write(
        "mine/ring\u{7}.weave",
        "doc \"rings\"\nstages P\nprogram { repeat M { F } repeat M { B } }\n",
    );
    let out = dir.run(&["list", "--schedule-dir", "mine"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_clean("list", &out);
    assert!(
        stderr(&out).contains(
            "`mine/ring␇.weave` is not a schedule name: it holds a control character (U+0007)"
        ),
        "{}",
        stderr(&out)
    );
}

/// A deadlock through all 65,536 ranks, generated: a loop placement (stage s on rank s mod P)
/// whose every rank starts with its second stage's forward, so each waits on the rank before
/// it. One diagnostic, bounded: its message lists ten ranks of the cycle, its labels the first
/// and last few (before: a label per rank, 9 MB and 131,078 lines even with
/// `--max-diagnostics 1`).
#[test]
fn a_deadlock_through_every_rank_is_one_bounded_diagnostic() {
    const P: u32 = 65_536;
    let dir = Scratch::new("terminal-cycle");
    let mut text = String::with_capacity(2_200_000);
    for r in 0..P {
        let (first, second) = if r == 0 { (P, 0) } else { (r, P + r) };
        text.push_str(&format!("{first}F0,{second}F0,{}B0,{r}B0\n", P + r));
    }
    dir.write("cycle.actions", &text);
    let out = dir.run(&["validate", "cycle.actions", "--max-diagnostics", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert_clean("a deadlock", &out);
    let err = stderr(&out);
    assert!(err.len() < 20_000, "{} bytes", err.len());
    assert!(
        err.lines().count() < 100,
        "{} lines:\n{err}",
        err.lines().count()
    );
    assert!(
        err.starts_with(
            "error: rank 0, action 1 (65536F0): the plan deadlocks: ranks 0 → 65535 → 65534 → \
             65533 → 65532 → 65531 → 65530 → 65529 → … (65,526 more) → 2 → 1 → 0 wait for each \
             other in a cycle of 65,536 ranks\n"
        ),
        "{err}"
    );
    for shown in [
        "rank 65535, action 1",
        "rank 65528, action 1",
        "rank 1, action 1",
    ] {
        assert!(err.contains(shown), "{shown}: {err}");
    }
    assert!(!err.contains("rank 65527, action 1"), "{err}");
    assert!(
        err.contains("= … and 65,525 more labels not shown\n"),
        "{err}"
    );
}
