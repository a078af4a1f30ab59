//! Every command the documentation shows runs: the shell blocks (```sh) of README.md,
//! schedules/README.md, specs/README.md and docs/*.md are read, and each `pipeweave` command in
//! them (a line, or a part of a line between `&&`) runs with this build's binary, in order, in a
//! folder of its own per document, through `sh` (so pipes and redirections work as written).
//!
//! A command must exit with 0, unless its comment says `exit code N`. The files the examples call
//! the user's own are made from the repository's: `my-plan.actions` (1F1B compiled),
//! `my-schedule.weave` and `my-schedules/my-schedule.weave` (the library's 1F1B),
//! `my-cluster.toml` (the built-in default spec), `rank0.json` and `rank1.json` (the hand-made
//! traces of a 1F1B run, `tests/fixtures/traces/1f1b-p2-m4`), `1f1b-rank0.json.gz` to
//! `zb-h1-rank1.json.gz` (the recorded runs of `tests/data/traces/1f1b` and `zb-h1`). A command outside a shell block (a line starting
//! with `pipeweave ` in a block of another kind) fails the test, so no example escapes it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One command of a document.
#[derive(Debug)]
struct Example {
    /// `FILE:LINE`.
    at: String,
    /// The command, `pipeweave` first.
    command: String,
    /// The exit code it must have.
    exit: i32,
}

/// The languages of a shell block.
const SHELL: [&str; 4] = ["sh", "shell", "bash", "console"];

/// The part of `line` before a `#` that starts a comment (outside quotes, after a space), and the
/// comment.
fn split_comment(line: &str) -> (&str, &str) {
    let (mut single, mut double) = (false, false);
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && previous.is_whitespace() => {
                return (&line[..i], &line[i + 1..]);
            }
            _ => {}
        }
        previous = c;
    }
    (line, "")
}

/// The exit code a comment asks for: `exit code N`, else 0.
fn expected_exit(comment: &str) -> i32 {
    comment
        .split("exit code ")
        .nth(1)
        .and_then(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .unwrap_or(0)
}

/// The `pipeweave` commands of `text` (the document `name`), and the lines that show a command
/// outside a shell block.
fn examples(name: &str, text: &str) -> (Vec<Example>, Vec<String>) {
    let mut out = Vec::new();
    let mut stray = Vec::new();
    let mut block: Option<bool> = None;
    for (n, line) in text.lines().enumerate() {
        let at = format!("{name}:{}", n + 1);
        let trimmed = line.trim_start();
        if let Some(lang) = trimmed.strip_prefix("```") {
            block = match block {
                Some(_) => None,
                None => Some(SHELL.contains(&lang.trim())),
            };
            continue;
        }
        let command_line = trimmed.strip_prefix("$ ").unwrap_or(trimmed);
        match block {
            Some(true) => {
                let (code, comment) = split_comment(command_line);
                for part in code.split("&&").map(str::trim) {
                    let mut words = part.splitn(2, ' ');
                    let first = words.next().unwrap_or_default();
                    if first == "pipeweave" || first.ends_with("/pipeweave") {
                        out.push(Example {
                            at: at.clone(),
                            command: format!("pipeweave {}", words.next().unwrap_or_default()),
                            exit: expected_exit(comment),
                        });
                    }
                }
            }
            Some(false) if command_line.starts_with("pipeweave ") => stray.push(at),
            _ => {}
        }
    }
    (out, stray)
}

/// A folder for `doc`'s commands with the user's files the examples name.
fn folder(doc: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("docs")
        .join(doc.replace('/', "-"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("my-schedules")).expect("a scratch folder");
    let schedule = std::fs::read_to_string(repo().join("schedules/1f1b.weave")).expect("1f1b");
    std::fs::write(dir.join("my-schedule.weave"), &schedule).expect("written");
    std::fs::write(dir.join("my-schedules/my-schedule.weave"), &schedule).expect("written");
    let spec = std::fs::read_to_string(repo().join("specs/dense-70b-h100-pp8.toml")).expect("spec");
    std::fs::write(dir.join("my-cluster.toml"), spec).expect("written");
    for r in 0..2 {
        let trace = repo().join(format!("tests/fixtures/traces/1f1b-p2-m4/rank{r}.json"));
        std::fs::copy(trace, dir.join(format!("rank{r}.json"))).expect("a trace");
        // Two recorded runs at P = 2, M = 8, for calibrating from several runs.
        for run in ["1f1b", "zb-h1"] {
            let trace = repo().join(format!("tests/data/traces/{run}/rank{r}.pt.trace.json.gz"));
            std::fs::copy(trace, dir.join(format!("{run}-rank{r}.json.gz"))).expect("a trace");
        }
    }
    let out = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args([
            "compile",
            "1f1b",
            "-p",
            "4",
            "-m",
            "8",
            "-o",
            "my-plan.actions",
        ])
        .current_dir(&dir)
        .output()
        .expect("the pipeweave binary runs");
    assert!(out.status.success(), "my-plan.actions");
    dir
}

/// Runs every command of the document at `path` (relative to the repository) and returns what
/// went wrong, one entry per command.
fn run_document(path: &str) -> Vec<String> {
    let text = std::fs::read_to_string(repo().join(path)).expect("the document reads");
    run_text(path, &text)
}

/// Runs every command of `text`, the document `path`; what went wrong, one entry per command.
fn run_text(path: &str, text: &str) -> Vec<String> {
    let (examples, stray) = examples(path, text);
    let mut failures: Vec<String> = stray
        .into_iter()
        .map(|at| format!("{at}: a pipeweave command outside a ```sh block"))
        .collect();
    if examples.is_empty() {
        return failures;
    }
    let dir = folder(path);
    let bin = Path::new(env!("CARGO_BIN_EXE_pipeweave"))
        .parent()
        .expect("the binary's folder")
        .to_path_buf();
    let paths = std::env::var_os("PATH").unwrap_or_default();
    let search = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&paths)))
        .expect("a PATH");
    for e in &examples {
        let out = Command::new("sh")
            .args(["-c", &e.command])
            .current_dir(&dir)
            .env("PATH", &search)
            .env_remove("PIPEWEAVE_PLUGIN_PATH")
            .env_remove("PIPEWEAVE_SCHEDULE_PATH")
            .output()
            .expect("sh runs");
        let code = out.status.code().unwrap_or(-1);
        if code != e.exit {
            let err = String::from_utf8_lossy(&out.stderr);
            let head: Vec<&str> = err.lines().take(8).collect();
            failures.push(format!(
                "{}: `{}` exited with {code}, not {}\n    {}",
                e.at,
                e.command,
                e.exit,
                head.join("\n    ")
            ));
        }
    }
    failures
}

fn check(path: &str) {
    let failures = run_document(path);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn readme_commands_run() {
    check("README.md");
}

#[test]
fn schedules_readme_commands_run() {
    check("schedules/README.md");
}

#[test]
fn specs_readme_commands_run() {
    check("specs/README.md");
}

#[test]
fn docs_commands_run() {
    let mut docs: Vec<String> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    docs.sort();
    assert!(!docs.is_empty());
    let failures: Vec<String> = docs
        .iter()
        .flat_map(|d| run_document(&format!("docs/{d}")))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The reader itself: blocks, comments, `&&`, exit codes, and commands outside shell blocks.
#[test]
fn commands_are_read_from_shell_blocks_only() {
    let text = "text `pipeweave list`\n\
                ```sh\n\
                # a comment\n\
                cargo build && target/release/pipeweave compare a b   # the main job\n\
                pipeweave check bad.weave   # exit code 1: it is bad\n\
                $ pipeweave show x -p 2 -m 2 --set 'a=#1'\n\
                ```\n\
                ```\n\
                pipeweave list\n\
                ```\n\
                ```json\n\
                {\"pipeweave\": 1}\n\
                ```\n";
    let (examples, stray) = examples("doc.md", text);
    let got: Vec<(String, String, i32)> = examples
        .into_iter()
        .map(|e| (e.at, e.command, e.exit))
        .collect();
    assert_eq!(
        got,
        vec![
            ("doc.md:4".into(), "pipeweave compare a b".into(), 0),
            ("doc.md:5".into(), "pipeweave check bad.weave".into(), 1),
            (
                "doc.md:6".into(),
                "pipeweave show x -p 2 -m 2 --set 'a=#1'".into(),
                0
            ),
        ]
    );
    assert_eq!(stray, vec!["doc.md:9".to_owned()]);
}

/// A command that fails, or exits otherwise than its comment says, is reported with its place.
#[test]
fn a_broken_example_fails() {
    let text = "```sh\n\
                pipeweave simulate no-such-schedule -p 2 -m 2\n\
                pipeweave list   # exit code 1\n\
                pipeweave validate my-plan.actions\n\
                ```\n";
    let failures = run_text("broken.md", text);
    assert_eq!(failures.len(), 2, "{failures:#?}");
    assert!(failures[0].starts_with(
        "broken.md:2: `pipeweave simulate no-such-schedule -p 2 -m 2` exited with 1, not 0"
    ));
    assert!(failures[1].starts_with("broken.md:3: `pipeweave list` exited with 0, not 1"));
}
