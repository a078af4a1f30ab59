//! One convention for schedules, whatever their source: typed parameters read by one rule with the
//! same errors, a library schedule and its twin plugin as one row, requirements in words, `check`
//! on a grid of P and M, unknown functions named, and the user's schedule folders. The plugins
//! must be built (`cargo build --workspace`); the binary finds them next to itself.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `pipeweave` with no plugin or schedule path from the environment (plus `env`), in `dir`
/// when given; returns (exit code, stdout, stderr) with `dir` written as `[TMP]`.
fn run(args: &[&str], env: &[(&str, &str)], dir: Option<&Path>) -> (i32, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pipeweave"));
    command
        .args(args)
        .env_remove("PIPEWEAVE_PLUGIN_PATH")
        .env_remove("PIPEWEAVE_SCHEDULE_PATH")
        .envs(env.iter().copied());
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let out = command.output().expect("the pipeweave binary runs");
    let build = Path::new(env!("CARGO_BIN_EXE_pipeweave"))
        .parent()
        .expect("the build folder")
        .display()
        .to_string();
    let clean = |b: &[u8]| {
        let text = String::from_utf8_lossy(b).replace(&build, "[BUILD]");
        match dir {
            Some(d) => text.replace(&d.display().to_string(), "[TMP]"),
            None => text,
        }
    };
    (
        out.status.code().unwrap_or(-1),
        clean(&out.stdout),
        clean(&out.stderr),
    )
}

fn pipeweave(args: &[&str]) -> (i32, String, String) {
    run(args, &[], None)
}

/// A fresh folder for one test's files.
fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pipeweave-lang-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    dir
}

#[test]
fn every_schedule_reads_parameter_values_by_one_rule() {
    // The library's DualPipeV, its twin plugin, Chimera and an interleaved `v`: the same
    // spellings refused with the same words, exit code 2.
    let cases: &[&[&str]] = &[
        &["dualpipev", "--set", "weight_split=2"],
        &["dualpipev", "--set", "weight_split=1"],
        &["plugin:dualpipev", "--set", "weight_split=1"],
        &["chimera", "--set", "joins=double"],
        &["chimera", "--set", "pipelines=3"],
        &["interleaved-1f1b", "--set", "v=true"],
        &["interleaved-1f1b", "-v", "0"],
        &["1f1b", "--set", "extra=true"],
        &["plugin:dualpipev", "-v", "2"],
    ];
    let mut text = String::new();
    for case in cases {
        let mut args = vec!["validate", "-p", "4", "-m", "8"];
        args.extend_from_slice(case);
        let (code, out, err) = pipeweave(&args);
        assert_eq!((code, out.as_str()), (2, ""), "{case:?}: {err}");
        text.push_str(&format!("{}\n{err}", case.join(" ")));
    }
    insta::assert_snapshot!(text);
    // What the rule takes, both sources take, and they build the same plan.
    let library = pipeweave(&[
        "compile",
        "dualpipev",
        "-p",
        "4",
        "-m",
        "8",
        "--set",
        "weight_split=false",
    ]);
    let plugin = pipeweave(&[
        "compile",
        "plugin:dualpipev",
        "-p",
        "4",
        "-m",
        "8",
        "--set",
        "weight_split=false",
    ]);
    assert_eq!(library.0, 0, "{}", library.2);
    assert_eq!(library, plugin);
}

#[test]
fn list_and_help_say_the_same_spellings() {
    let (code, list, _) = pipeweave(&["list"]);
    assert_eq!(code, 0);
    let (code, help, _) = pipeweave(&["show", "--help"]);
    assert_eq!(code, 0);
    let rule = pipeweave_param_spellings();
    assert!(
        list.contains(&format!("--set NAME=VALUE: {rule}")),
        "{list}"
    );
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains(&format!("VALUE: {rule}")), "{help}");
    // Both sources' parameters are shown alike: type as a `.weave` file declares it, default.
    assert!(list.contains("--set weight_split=<bool> (default true): split backwards"));
    assert!(list.contains("--set weight_split=<bool> (default true): defer weight gradients"));
    assert!(list.contains("-v <int in 1..> (default 2): stages (chunks) per rank"));
    assert!(list.contains("--set pipelines=<int in 2.. multiple of 2> (default 2)"));
}

/// The spelling rule as `pipeweave-param` words it (the test does not link the crate).
fn pipeweave_param_spellings() -> &'static str {
    "true or false for a bool, a whole number for an int, one of its options for a choice"
}

#[test]
fn a_library_schedule_and_its_twin_plugin_are_one_row() {
    let (code, out, err) = pipeweave(&[
        "compare",
        "dualpipev",
        "plugin:dualpipev",
        "1f1b",
        "interleaved-1f1b",
        "--spec",
        "unit",
        "-p",
        "4",
        "-m",
        "8",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    // One row in each of the five tables, and two notes.
    assert_eq!(
        out.matches("dualpipev = plugin:dualpipev").count(),
        7,
        "{out}"
    );
    insta::assert_snapshot!(out);
    // With their settings too; and where both refuse, one row with the reason.
    let (code, out, _) = pipeweave(&[
        "compare",
        "dualpipev",
        "plugin:dualpipev",
        "--spec",
        "unit",
        "-p",
        "4",
        "-m",
        "8",
        "--set",
        "overlap=false",
        "--format",
        "csv",
    ]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 2, "{out}");
    let (code, out, _) = pipeweave(&[
        "compare",
        "dualpipev",
        "plugin:dualpipev",
        "--spec",
        "unit",
        "-p",
        "4",
        "-m",
        "6",
    ]);
    assert_eq!(code, 1);
    assert!(
        out.contains("dualpipev = plugin:dualpipev: not run: DualPipeV needs M ≥ 2P micro-batches"),
        "{out}"
    );
}

#[test]
fn check_compiles_and_validates_on_a_grid() {
    for name in [
        "1f1b",
        "dualpipev",
        "gpipe",
        "interleaved-1f1b",
        "interleaved-zb",
        "looped-bfs",
        "megatron-a2a-overlap",
        "megatron-interleaved",
        "zb-h1",
        "zb-h2",
        "zb-v",
    ] {
        let (code, out, err) = pipeweave(&["check", name]);
        assert_eq!((code, err.as_str()), (0, ""), "{name}");
        assert!(
            out.contains(": no problems found (compiled and validated at"),
            "{out}"
        );
    }
    let dir = temp_dir("check");
    let files = [
        (
            "forgets.weave",
            "doc \"forgets its backwards\"\nstages P\nprogram {\n  repeat M { F }\n}\n",
        ),
        (
            "calls.weave",
            "stages P\nprogram {\n  repeat abs(M - r) { F }\n  repeat ready(B) { B }\n}\n",
        ),
        (
            "demanding.weave",
            "require M >= 4 * P else \"at least 4P micro-batches\"\nstages P\nprogram { repeat M { F } repeat M { B } }\n",
        ),
        (
            "unset.weave",
            "param k: int\nstages P\nprogram { repeat M { F } repeat M { B } }\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text).expect("written");
    }
    let mut text = String::new();
    for (name, _) in files {
        let (code, out, err) = run(&["check", name], &[], Some(&dir));
        text.push_str(&format!(
            "$ pipeweave check {name}\nexit {code}\n{out}{err}\n"
        ));
    }
    // `validate` agrees at the combination `check` names.
    let (code, _, err) = run(
        &["validate", "forgets.weave", "-p", "2", "-m", "1"],
        &[],
        Some(&dir),
    );
    assert_eq!(code, 1);
    assert_eq!(err.matches("never runs the backward").count(), 2, "{err}");
    std::fs::remove_dir_all(&dir).expect("removed");
    insta::assert_snapshot!(text);
}

#[test]
fn schedule_folders_add_schedules_by_name() {
    let dir = temp_dir("folders");
    let (first, second) = (dir.join("first"), dir.join("second"));
    std::fs::create_dir_all(&first).expect("a folder");
    std::fs::create_dir_all(&second).expect("a folder");
    let lagged = "doc \"1F1B with extra warm-up\"\nparam lag: int in 0..=3 = 0 \"extra warm-up forwards\"\nrequire lag < M else \"lag below M\"\nstages P\nprogram {\n  let warmup = min(P - 1 - r + lag, M)\n  repeat warmup { F }\n  repeat M - warmup { F B }\n  repeat warmup { B }\n}\n";
    std::fs::write(first.join("lagged.weave"), lagged).expect("written");
    // The library's name comes first, and the first folder's file before the second's.
    std::fs::write(first.join("1f1b.weave"), lagged).expect("written");
    std::fs::write(second.join("lagged.weave"), "stages P\nprogram { }\n").expect("written");
    std::fs::write(second.join("notes.txt"), "not a schedule").expect("written");
    let env_path =
        std::env::join_paths([second.as_path(), Path::new("relative")]).expect("a path list");
    let env_path = env_path.to_str().expect("UTF-8");
    let env = [("PIPEWEAVE_SCHEDULE_PATH", env_path)];
    let dir_arg = first.to_str().expect("UTF-8");
    let (code, out, err) = run(&["list", "--schedule-dir", dir_arg], &env, Some(&dir));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        err,
        "warning: the PIPEWEAVE_SCHEDULE_PATH entry `relative` is not searched: only absolute paths are\n"
    );
    let folder_rows: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("lagged"))
        .take(4)
        .chain(
            out.lines()
                .filter(|l| l.starts_with("not reached") || l.starts_with("names:")),
        )
        .collect();
    insta::assert_snapshot!(folder_rows.join("\n"));
    // Every command that takes schedules by name takes it.
    let (code, out, err) = run(
        &[
            "sweep",
            "lagged",
            "1f1b",
            "-p",
            "4",
            "--over",
            "m=4,8",
            "--set",
            "lag=1",
            "--schedule-dir",
            dir_arg,
        ],
        &[],
        Some(&dir),
    );
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(out.contains("lagged"), "{out}");
    let (code, out, _) = run(
        &["compare", "lagged", "--spec", "unit", "--set", "lag=9"],
        &env,
        Some(&dir),
    );
    assert_eq!(code, 2, "{out}");
    let (code, out, err) = run(
        &["recommend", "--spec", "unit", "--schedule-dir", dir_arg],
        &[],
        Some(&dir),
    );
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(out.contains("lagged"), "{out}");
    let (code, _, err) = run(
        &["check", "lagged", "--schedule-dir", dir_arg],
        &[],
        Some(&dir),
    );
    assert_eq!((code, err.as_str()), (0, ""));
    std::fs::remove_dir_all(&dir).expect("removed");
}
