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

/// A compute_comms CSV is bounded the same way: 16,000 transfers without a micro-batch on one line,
/// and a file whose every send is repeated (each one reported against the lowering).
#[test]
fn thousands_of_bad_compute_comms_cells_are_bounded() {
    let dir = Scratch::new("comms");
    dir.write("bad.csv", vec!["0SEND_F"; 16_000].join(",") + "\n");
    let out = dir.run(&["validate", "bad.csv"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.len() < 30_000, "{} bytes", err.len());
    assert_eq!(
        err.matches("error: expected a micro-batch number after `0SEND_F`")
            .count(),
        50
    );
    assert!(err.ends_with("error: 16,000 problems found\n"), "{err}");
    let written = dir.run(&[
        "export",
        "1f1b",
        "-p",
        "8",
        "-m",
        "256",
        "--to",
        "pytorch-comms",
    ]);
    assert_eq!(written.status.code(), Some(0));
    let twice: String = text(&written.stdout)
        .lines()
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            let mut out = Vec::new();
            for c in cells {
                out.push(c);
                if c.contains("SEND_") && !c.contains("WAIT") {
                    out.push(c);
                }
            }
            out.join(",") + "\n"
        })
        .collect();
    dir.write("twice.csv", twice);
    let out = dir.run(&["validate", "twice.csv"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.len() < 60_000, "{} bytes", err.len());
    assert_eq!(err.matches("appears a second time").count(), 50);
    assert!(err.ends_with("error: 3,584 problems found\n"), "{err}");
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
        .split_once("[parallelism]")
        .expect("a parallelism table");
    let (before, after) = head.split_once("[cluster]").expect("a cluster table");
    dir.write(
        "keys.toml",
        format!(
            "{before}parallelism = {{ pp = 4, tp = 1, ep = 1, dp = 1, {} }}\n[cluster]{after}",
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

/// Runs `pipeweave` in `dir` with standard output going into `/dev/full`.
#[cfg(target_os = "linux")]
fn run_into_full_disk(dir: &Path, args: &[&str]) -> Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full opens");
    Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .expect("the pipeweave binary runs")
}

/// Every command that writes to standard output says so when it cannot, and exits 1 (before:
/// every command exited 0 with its output lost).
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_on_standard_output_is_an_error() {
    let dir = Scratch::new("full-stdout");
    dir.write("plan.actions", "0F0,0B0\n1F0,1B0\n");
    // A schedule that `check` passes (it compiles and validates it on a grid of P and M).
    dir.write(
        "s.weave",
        "stages P\nprogram { repeat M { F } repeat M { B } }\n",
    );
    let commands: [&[&str]; 15] = [
        &["validate", "plan.actions"],
        &["simulate", "plan.actions"],
        &["show", "plan.actions"],
        &["list"],
        &["check", "s.weave"],
        &["compile", "1f1b", "-p", "32", "-m", "256"],
        &["convert", "plan.actions", "--to", "json"],
        &["export", "plan.actions", "--to", "chrome-trace"],
        &["compare", "1f1b", "zb-h1", "--spec", "unit"],
        &["sweep", "1f1b", "-p", "4", "--over", "m=4,8"],
        &["recommend", "--spec", "unit"],
        &["render", "1f1b", "-p", "2", "-m", "2", "--svg", "-"],
        &["report", "1f1b", "-p", "2", "-m", "2", "-o", "-"],
        &["--help"],
        &["help", "--help"],
    ];
    for args in commands {
        let out = run_into_full_disk(&dir.0, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            text(&out.stderr).ends_with(
                "error: cannot write to standard output: No space left on device (os error 28)\n"
            ),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

/// `-o FILE` writes a new file beside the target and renames it: a failed write leaves an
/// existing file as it was and no temporary file behind; `-o -` is standard output.
#[cfg(target_os = "linux")]
#[test]
fn output_files_are_whole_or_untouched() {
    let dir = Scratch::new("output-files");
    let good = "0F0,0B0\n";
    dir.write("good.actions", good);
    // A file size limit makes the write fail half way (EFBIG; the signal ignored as a shell can).
    let limited = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f 8; exec '{}' compile 1f1b -p 32 -m 256 -o good.actions",
            env!("CARGO_BIN_EXE_pipeweave")
        ))
        .current_dir(&dir.0)
        .output()
        .expect("sh runs");
    assert_eq!(limited.status.code(), Some(1));
    assert_eq!(
        text(&limited.stderr),
        "error: cannot write `good.actions`: File too large (os error 27)\n"
    );
    let left: Vec<String> = std::fs::read_dir(&dir.0)
        .expect("the folder")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(left, ["good.actions"]);
    assert_eq!(
        std::fs::read_to_string(dir.path("good.actions")).expect("reads"),
        good
    );

    for args in [
        &["compile", "1f1b", "-p", "2", "-m", "2", "-o"][..],
        &["export", "1f1b", "-p", "2", "-m", "2", "--to", "json", "-o"],
        &["render", "1f1b", "-p", "2", "-m", "2", "--svg"],
        &["report", "1f1b", "-p", "2", "-m", "2", "-o"],
    ] {
        // A folder nobody can write into, root included.
        let out = dir.run(&[args, &["/proc/pipeweave.out"]].concat());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(
            text(&out.stderr),
            "error: cannot write `/proc/pipeweave.out`: cannot create a file in `/proc`: \
             No such file or directory (os error 2)\n",
            "{args:?}"
        );
        let out = dir.run(&[args, &["/dev/full"]].concat());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(text(&out.stderr).contains("cannot write `/dev/full`: No space left"));
        // `-`: standard output, and no file named `-`.
        let out = dir.run(&[args, &["-"]].concat());
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(
            !out.stdout.is_empty() && !dir.path("-").exists(),
            "{args:?}"
        );
        assert!(!text(&out.stdout).contains("wrote"), "{args:?}");
    }
    let out = dir.run(&["sweep", "1f1b", "-p", "2", "--over", "m=2,4", "--svg", "-"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Inputs that would make a figure infinite or NaN are refused where they are read: a spec's key
/// with its place, a cost by its name (before: `inf`, `NaN%` and JSON `null`, exit 0).
#[test]
fn figures_stay_finite() {
    let dir = Scratch::new("numbers");
    let unit = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../specs/unit.toml"),
    )
    .expect("the unit spec");
    let with_override = |key: &str, value: &str| {
        unit.replace(
            "[model]",
            &format!(
                "[cluster.override]\n{key} = {{ value = {value}, source = \"a typo\" }}\n\n[model]"
            ),
        )
    };
    dir.write("tiny.toml", with_override("peak_tflops_bf16", "5e-324"));
    dir.write("slow.toml", with_override("intra_node_latency_us", "1e308"));
    let out = dir.run(&["simulate", "1f1b", "--spec", "tiny.toml"]);
    assert_eq!((out.status.code(), out.stdout.is_empty()), (Some(1), true));
    insta::assert_snapshot!("peak_too_small", text(&out.stderr));
    let out = dir.run(&["compare", "1f1b", "--spec", "slow.toml", "--format", "json"]);
    assert_eq!((out.status.code(), out.stdout.is_empty()), (Some(1), true));
    assert!(text(&out.stderr).starts_with(
        "error: `cluster.override.intra_node_latency_us.value` must be at most 1000000000, \
         found 1e308\n   ┌─ slow.toml:15:35\n"
    ));
    let out = dir.run(&[
        "simulate",
        "1f1b",
        "-p",
        "4",
        "-m",
        "8",
        "--costs",
        "F=1e308,B=1e308",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "error: --costs: F=1e308 is too large (at most 1e12, so that every figure of a step stays \
         a finite number)\n"
    );
    let out = dir.run(&[
        "simulate",
        "1f1b",
        "-p",
        "4",
        "-m",
        "8",
        "--costs",
        "F=0,B=0,W=0",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// Parameters that ask for more operations than a plan may have are refused before anything is
/// built (65,536 × 16,777,216 ran the schedule for 24 s and 3.7 GB before its step budget said
/// no), and memory that is not there is an error naming the size, not an abort.
#[cfg(target_os = "linux")]
#[test]
fn budgets_are_checked_before_building() {
    let dir = Scratch::new("budgets");
    let out = dir.run(&["validate", "1f1b", "-p", "65536", "-m", "16777216"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with(
            "error: 65536 stages and 16777216 micro-batches make at least 2199023255552 operations \
             (a forward and a backward of every micro-batch on every stage), more than the \
             67108864 a plan may have\n"
        ),
        "{}",
        text(&out.stderr)
    );
    // 33,554,432 operations in 200 MB of address space.
    let limited = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 200000; exec '{}' simulate 1f1b -p 256 -m 65536",
            env!("CARGO_BIN_EXE_pipeweave")
        ))
        .current_dir(&dir.0)
        .output()
        .expect("sh runs");
    assert_eq!(limited.status.code(), Some(1), "{}", text(&limited.stderr));
    assert!(
        text(&limited.stderr).starts_with(
            "error: out of memory: 768 MiB for the programs being built could not be allocated\n"
        ),
        "{}",
        text(&limited.stderr)
    );
}

/// The hand-made traces of 1F1B (P = 2, M = 4, `tests/fixtures/traces/1f1b-p2-m4`).
fn fixture_trace(rank: u32) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../../tests/fixtures/traces/1f1b-p2-m4/rank{rank}.json"
    ));
    std::fs::read_to_string(path).expect("the fixture")
}

/// Hostile traces, to `calibrate` and through `--costs-from`: each a located error in plain
/// words, exit 1, bounded output, no panic, no costs file; events out of order are sorted.
#[test]
fn hostile_traces_are_located_errors() {
    let dir = Scratch::new("hostile-traces");
    let good0 = fixture_trace(0);
    let good1 = fixture_trace(1);
    dir.write("r1.json", &good1);
    let first_ts = "\"ts\": 2000.0";
    assert!(good0.contains(first_ts));
    let deep = format!(
        "{{\"traceEvents\": [{{\"args\": {}1{}}}]}}",
        "[".repeat(200_000),
        "]".repeat(200_000)
    );
    let million = {
        let mut s = String::from("{\"traceEvents\": [");
        for i in 0..1_000_000 {
            s.push_str(&format!(
                "{{\"ph\":\"X\",\"name\":\"a\",\"ts\":{i},\"dur\":1}},"
            ));
        }
        s.push_str("{\"ph\":\"X\",\"name\":\"pw 9F0\",\"ts\":1,\"dur\":-1}]}");
        s
    };
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "truncated",
            good0[..good0.len() / 3].to_owned(),
            "the trace ends early",
        ),
        (
            "wrong_type",
            good0.replacen(first_ts, "\"ts\": \"2000\"", 1),
            "`ts` must be a number",
        ),
        (
            "huge_number",
            good0.replacen(first_ts, "\"ts\": 1e300", 1),
            "beyond any trace's clock",
        ),
        (
            "nan",
            good0.replacen(first_ts, "\"ts\": NaN", 1),
            "invalid trace JSON",
        ),
        (
            "negative_duration",
            good0.replacen("\"dur\": 1000.0", "\"dur\": -1000.0", 1),
            "is negative",
        ),
        (
            "profiler_step_without_a_time",
            good0.replacen(
                "\"traceEvents\": [",
                "\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"ts\": \"soon\", \"dur\": 5.0},",
                1,
            ),
            "`ts` must be a number",
        ),
        (
            "profiler_step_of_negative_length",
            good0.replacen(
                "\"traceEvents\": [",
                "\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"ts\": 1.0, \"dur\": -5.0},",
                1,
            ),
            "is negative",
        ),
        ("rank_twice", good1.clone(), "two traces are rank 1"),
        ("deep_nesting", deep, "no pipeline actions"),
        ("a_million_events", million, "is negative"),
    ];
    let mut cases: Vec<(&str, Vec<u8>, &str)> = cases
        .into_iter()
        .map(|(name, text, expected)| (name, text.into_bytes(), expected))
        .collect();
    cases.push((
        "not_gzip",
        b"\x1f\x8bgarbage".to_vec(),
        "not a whole gzip file",
    ));
    for (name, text, expected) in &cases {
        let file = format!("{name}.json");
        dir.write(&file, text);
        let out = dir.run(&["calibrate", &file, "r1.json", "-o", "costs.toml"]);
        let err = text_of(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains(expected), "{name}: {err}");
        assert!(err.len() < 5_000, "{name}: {} bytes", err.len());
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert!(!dir.path("costs.toml").exists(), "{name}");
        let out = dir.run(&[
            "diff", "1f1b", &file, "r1.json", "-p", "2", "-m", "4", "--svg", "d.svg",
        ]);
        let diff_err = text_of(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "diff {name}: {diff_err}");
        assert!(
            diff_err.len() < 5_000 && !diff_err.contains("panicked"),
            "diff {name}: {diff_err}"
        );
        assert!(
            out.stdout.is_empty() && !dir.path("d.svg").exists(),
            "diff {name}"
        );
        if !matches!(*name, "rank_twice" | "not_gzip" | "a_million_events") {
            assert!(
                err.contains(&format!("{name}.json:")),
                "{name} is located: {err}"
            );
        }
    }
    // A missing rank.
    let out = dir.run(&["calibrate", "r1.json", "-o", "costs.toml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text_of(&out.stderr).contains("no trace for rank 0: the traces name ranks 1"));
    let out = dir.run(&[
        "calibrate",
        "r1.json",
        "--plan",
        "1f1b",
        "-p",
        "2",
        "-m",
        "4",
        "-o",
        "costs.toml",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text_of(&out.stderr).contains("no trace for rank 0 of the plan's 2"));
    dir.write("r0.json", &good0);
    let a = dir.run(&["calibrate", "r0.json", "r1.json", "-o", "-"]);
    assert_eq!(a.status.code(), Some(0), "{}", text_of(&a.stderr));
    // Several runs: as many traces as their plans have ranks, each matching its own plan.
    let runs = |traces: &[&str], plans: &[&str]| {
        let mut args = vec!["calibrate"];
        args.extend(traces);
        for plan in plans {
            args.extend(["--plan", plan]);
        }
        args.extend(["-p", "2", "-m", "4", "-o", "costs.toml"]);
        dir.run(&args)
    };
    let out = runs(&["r0.json", "r1.json", "r0.json"], &["1f1b", "1f1b"]);
    assert_eq!(out.status.code(), Some(2), "{}", text_of(&out.stderr));
    assert!(
        text_of(&out.stderr).contains("2 plans take 4 traces, one per rank of each run in turn (2 for 1f1b, 2 for 1f1b), and 3 were given"),
        "{}",
        text_of(&out.stderr)
    );
    assert!(!dir.path("costs.toml").exists());
    let out = runs(
        &["r0.json", "r1.json", "r0.json", "r1.json"],
        &["1f1b", "gpipe"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out.stderr));
    assert!(
        text_of(&out.stderr).contains("r0.json:")
            && text_of(&out.stderr).contains("run 2 (gpipe): "),
        "the run that differs from its plan is named and located: {}",
        text_of(&out.stderr)
    );
    // A rank missing from the second run.
    let out = runs(
        &["r0.json", "r1.json", "r1.json", "r1.json"],
        &["1f1b", "1f1b"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out.stderr));
    assert!(
        text_of(&out.stderr).contains("run 2 (1f1b): "),
        "{}",
        text_of(&out.stderr)
    );
    assert!(!dir.path("costs.toml").exists());
    assert!(!dir.path("costs.toml").exists());
    let out = runs(
        &["r0.json", "r1.json", "r0.json", "r1.json"],
        &["1f1b", "1f1b"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text_of(&out.stderr));
    std::fs::remove_file(dir.path("costs.toml")).unwrap();
    // Usage: measured costs and another source of costs.
    dir.write("costs.toml", &a.stdout);
    let out = dir.run(&[
        "simulate",
        "1f1b",
        "-p",
        "2",
        "-m",
        "4",
        "--costs-from",
        "costs.toml",
        "--costs",
        "F=1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    // A broken costs file is located.
    dir.write(
        "bad.toml",
        text_of(&a.stdout).replacen("version = 5", "version = \"one\"", 1),
    );
    let out = dir.run(&[
        "simulate",
        "1f1b",
        "-p",
        "2",
        "-m",
        "4",
        "--costs-from",
        "bad.toml",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text_of(&out.stderr).contains("bad.toml:"),
        "{}",
        text_of(&out.stderr)
    );
}

fn text_of(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
