//! Plugin schedules through the command: `list`, names and `plugin:NAME`, settings, and the clean
//! errors of the fault fixtures. The plugins must be built (`cargo build --workspace`); the
//! binary finds them next to itself.

use std::path::{Path, PathBuf};
use std::process::Command;

fn build_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_pipeweave"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Runs `pipeweave` with no plugin path from the environment; paths in the output are filtered.
fn pipeweave(args: &[&str]) -> (i32, String, String) {
    pipeweave_in(args, &[], None)
}

/// Runs `pipeweave` with `env` added (and no plugin path from the environment), in `dir` when
/// given; the exit code is -1 when a signal ended it. Paths in the output are filtered.
fn pipeweave_in(args: &[&str], env: &[(&str, &str)], dir: Option<&Path>) -> (i32, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pipeweave"));
    command
        .args(args)
        .env_remove("PIPEWEAVE_PLUGIN_PATH")
        .env_remove("PIPEWEAVE_SCHEDULE_PATH");
    command.envs(env.iter().copied());
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let out = command.output().expect("the pipeweave binary runs");
    let build = build_dir().display().to_string();
    let release = build_dir().with_file_name("release").display().to_string();
    let clean = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .replace(&build, "[BUILD]")
            .replace(&release, "[RELEASE]")
    };
    (
        out.status.code().unwrap_or(-1),
        clean(&out.stdout),
        clean(&out.stderr),
    )
}

#[test]
fn list_shows_the_plugins_with_their_origin_and_parameters() {
    let (code, out, err) = pipeweave(&["list"]);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out);
}

#[test]
fn a_plugin_schedule_by_name_and_by_prefix_gives_the_same_plan() {
    let by_name = pipeweave(&[
        "simulate", "dualpipe", "-p", "8", "-m", "20", "--format", "json",
    ]);
    let by_prefix = pipeweave(&[
        "simulate",
        "plugin:dualpipe",
        "-p",
        "8",
        "-m",
        "20",
        "--format",
        "json",
    ]);
    assert_eq!(by_name.0, 0, "{}", by_name.2);
    assert_eq!(by_name, by_prefix);
    let v: serde_json::Value = serde_json::from_str(&by_name.1).unwrap();
    assert_eq!(v["makespan"], 66.0);
    assert_eq!(v["model_copies"], 2);
}

#[test]
fn show_chimera_and_dualpipev_with_settings() {
    let (code, out, err) = pipeweave(&["show", "plugin:chimera", "-p", "4", "-m", "8"]);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!("show_chimera_p4_m8", out);
    let (code, out, err) = pipeweave(&[
        "validate",
        "dualpipev",
        "-p",
        "4",
        "-m",
        "10",
        "--set",
        "weight_split=false",
        "--set",
        "overlap=false",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!("validate_dualpipev_plain", out);
}

#[test]
fn plugin_failures_are_clean_errors_with_exit_codes() {
    let fixture = |name: &str| {
        build_dir()
            .join(libloading_name(name))
            .display()
            .to_string()
    };
    let cases: Vec<Vec<String>> = vec![
        vec![
            "validate".into(),
            "plugin:dualpipe".into(),
            "-p".into(),
            "3".into(),
            "-m".into(),
            "8".into(),
        ],
        vec![
            "validate".into(),
            "plugin:dualpipe".into(),
            "-m".into(),
            "8".into(),
        ],
        vec![
            "validate".into(),
            "plugin:dualpipe".into(),
            "-p".into(),
            "4".into(),
            "-m".into(),
            "8".into(),
            "--set".into(),
            "overlap=sometimes".into(),
        ],
        vec![
            "validate".into(),
            "plugin:dualpipe".into(),
            "-p".into(),
            "4".into(),
            "-m".into(),
            "8".into(),
            "--set".into(),
            "overlap".into(),
        ],
        vec![
            "validate".into(),
            "plugin:nothing".into(),
            "-p".into(),
            "4".into(),
            "-m".into(),
            "8".into(),
        ],
        vec![
            "validate".into(),
            format!("plugin:{}", fixture("pipeweave_fixture_panic")),
            "-p".into(),
            "4".into(),
            "-m".into(),
            "8".into(),
        ],
        vec![
            "validate".into(),
            format!("plugin:{}", fixture("pipeweave_fixture_abi")),
            "-p".into(),
            "4".into(),
            "-m".into(),
            "8".into(),
        ],
        vec![
            "validate".into(),
            format!("plugin:{}", fixture("pipeweave_fixture_broken_plan")),
            "-p".into(),
            "2".into(),
            "-m".into(),
            "1".into(),
        ],
        vec![
            "validate".into(),
            format!("plugin:{}", fixture("pipeweave_fixture_garbage")),
            "-p".into(),
            "2".into(),
            "-m".into(),
            "2".into(),
        ],
        vec![
            "validate".into(),
            format!("plugin:{}", fixture("pipeweave_fixture_no_entry")),
            "-p".into(),
            "2".into(),
            "-m".into(),
            "2".into(),
        ],
    ];
    let mut text = String::new();
    for args in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = pipeweave(&args);
        assert_eq!(out, "");
        assert!(!err.contains("panicked at"), "{err}");
        text.push_str(&format!(
            "$ pipeweave {}\nexit {code}\n{err}\n",
            args.join(" ")
                .replace(&build_dir().display().to_string(), "[BUILD]")
        ));
    }
    insta::assert_snapshot!(text);
}

/// The platform file name of a library crate (`lib<name>.so` on Linux).
fn libloading_name(name: &str) -> String {
    format!(
        "{}{name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

#[test]
fn relative_plugin_path_entries_are_not_searched_and_are_named() {
    // A library planted in the folder pipeweave runs in must not be loaded through `.`.
    let dir = std::env::temp_dir().join(format!("pipeweave-cli-planted-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(libloading_name("pipeweave_plugin_planted")),
        "not a library\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .arg("list")
        .current_dir(&dir)
        .env(
            "PIPEWEAVE_PLUGIN_PATH",
            std::env::join_paths([".", "sub"]).unwrap(),
        )
        .output()
        .expect("the pipeweave binary runs");
    std::fs::remove_dir_all(&dir).unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr,
        "warning: the PIPEWEAVE_PLUGIN_PATH entry `.` is not searched: only absolute paths are\n\
         warning: the PIPEWEAVE_PLUGIN_PATH entry `sub` is not searched: only absolute paths are\n"
    );
    assert!(!stdout.contains("planted"), "{stdout}");
    assert!(stdout.contains("dualpipe"), "{stdout}");
}

/// A fresh folder for one test's files.
fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pipeweave-cli-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The path of a library of the build folder.
fn built(name: &str) -> PathBuf {
    let path = build_dir().join(libloading_name(name));
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --workspace`",
        path.display()
    );
    path
}

/// A one-second time limit, so that the hanging fixtures cost a second each.
const FAST: &[(&str, &str)] = &[("PIPEWEAVE_PLUGIN_TIMEOUT", "1")];

#[test]
fn crashing_hanging_and_lying_plugins_are_clean_errors() {
    let cases: &[(&str, &[&str])] = &[
        ("loop", &[]),
        ("abort", &[]),
        ("segfault", &[]),
        ("load_hang", &[]),
        ("null_entry", &[]),
        ("huge", &[]),
        ("scribble", &[]),
        ("wrong_shape", &["--set", "wrong=0"]),
        ("wrong_shape", &["--set", "wrong=1"]),
        ("wrong_shape", &["--set", "wrong=2"]),
    ];
    let mut text = String::new();
    for (fixture, more) in cases {
        let target = format!(
            "plugin:{}",
            built(&format!("pipeweave_fixture_{fixture}")).display()
        );
        let mut args = vec!["validate", &target, "-p", "4", "-m", "8"];
        args.extend_from_slice(more);
        // Only the fixtures that hang get the one-second limit: on a loaded machine one that
        // crashes may take longer than that to load, and must still be told as a crash.
        let hangs = matches!(*fixture, "loop" | "load_hang");
        let (code, out, err) = pipeweave_in(&args, if hangs { FAST } else { &[] }, None);
        assert_eq!((code, out.as_str()), (1, ""), "{fixture}: {err}");
        text.push_str(&format!(
            "$ pipeweave {}\nexit {code}\n{err}\n",
            args.join(" ")
                .replace(&build_dir().display().to_string(), "[BUILD]")
        ));
    }
    insta::assert_snapshot!(text);
}

#[test]
fn a_plugin_that_prints_still_answers() {
    let target = format!("plugin:{}", built("pipeweave_fixture_prints").display());
    let (code, out, err) = pipeweave(&["validate", &target, "-p", "4", "-m", "8"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("plugin:fault-prints: valid"), "{out}");
    // Its standard output goes to standard error; its standard input is empty.
    assert_eq!(
        err,
        "fault-prints: building a plan for 4 ranks\nfault-prints: read 0 bytes from standard input\n"
    );
}

#[test]
fn list_shows_the_good_plugins_beside_broken_ones() {
    let dir = temp_dir("broken-plugins");
    let put = |fixture: &str, name: &str| {
        let to = dir.join(libloading_name(&format!("pipeweave_plugin_{name}")));
        std::fs::copy(built(&format!("pipeweave_fixture_{fixture}")), to).unwrap();
    };
    // Broken at load: listed as warnings.
    put("load_hang", "hangs");
    put("null_entry", "fault_null_entry");
    std::fs::write(
        dir.join(libloading_name("pipeweave_plugin_text")),
        "no library\n",
    )
    .unwrap();
    let real = std::fs::read(built("pipeweave_plugin_dualpipe")).unwrap();
    let truncated = dir.join(libloading_name("pipeweave_plugin_truncated"));
    std::fs::write(&truncated, &real[..64 << 10]).unwrap();
    // Broken only when asked for a plan: listed.
    put("segfault", "fault_segfault");
    put("loop", "fault_loop");

    let dir_arg = dir.display().to_string();
    let (code, out, err) = pipeweave_in(&["list", "--plugin-dir", &dir_arg], FAST, None);
    assert_eq!(code, 0, "{err}");
    let listed: Vec<&str> = out
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some("plugin"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        listed,
        [
            "chimera",
            "dualpipe",
            "plugin:dualpipev",
            "fault-loop",
            "fault-segfault"
        ]
    );
    let err = err.replace(&dir_arg, "[TMP]");
    // How a truncated library fails is the loader's business (here a bus error while it maps
    // the file); that it is one warning naming the file is ours.
    let (cut, rest): (Vec<&str>, Vec<&str>) = err.lines().partition(|l| l.contains("truncated"));
    assert_eq!(cut.len(), 1, "{err}");
    assert!(
        cut[0].starts_with(
            "warning: the plugin [TMP]/libpipeweave_plugin_truncated.so crashed while loading: "
        ) || cut[0].starts_with(
            "warning: [TMP]/libpipeweave_plugin_truncated.so is not a loadable library: "
        ),
        "{}",
        cut[0]
    );
    insta::assert_snapshot!(rest.join("\n"));

    // The ones that load fail cleanly when asked for a plan, and the rest of the run goes on.
    let (code, out, err) = pipeweave_in(
        &[
            "compare",
            "dualpipe",
            "fault-segfault",
            "fault-loop",
            "1f1b",
            "-p",
            "4",
            "-m",
            "8",
            "--plugin-dir",
            &dir_arg,
        ],
        FAST,
        None,
    );
    assert_eq!(code, 0, "{err}");
    let out = out.replace(&dir_arg, "[TMP]");
    for line in [
        "fault-segfault: not run: the plugin [TMP]/libpipeweave_plugin_fault_segfault.so crashed while building a plan: killed by signal 11 (SIGSEGV)",
        "fault-loop: not run: the plugin [TMP]/libpipeweave_plugin_fault_loop.so did not finish building a plan within the time limit of 1 s; it was stopped (set PIPEWEAVE_PLUGIN_TIMEOUT to a number of seconds to change the limit)",
    ] {
        assert!(out.contains(line), "{out}");
    }
    assert!(out.lines().any(|l| l.starts_with("1f1b ")), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn recommend_goes_on_past_crashing_and_hanging_plugins() {
    let dir = temp_dir("recommend-plugins");
    for (fixture, name) in [("segfault", "fault_segfault"), ("loop", "fault_loop")] {
        let to = dir.join(libloading_name(&format!("pipeweave_plugin_{name}")));
        std::fs::copy(built(&format!("pipeweave_fixture_{fixture}")), to).unwrap();
    }
    let dir_arg = dir.display().to_string();
    let (code, out, err) = pipeweave_in(
        &["recommend", "--plugin-dir", &dir_arg, "--format", "json"],
        FAST,
        None,
    );
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!((code, err.as_str()), (0, ""));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let text = v.to_string();
    // The good schedules are searched; the plugin that hung cost one time limit, not one each.
    assert!(
        text.contains("crashed while building a plan: killed by signal 11 (SIGSEGV)"),
        "{text}"
    );
    assert!(
        text.contains("is not asked again: it exceeded the time limit of 1 s"),
        "{text}"
    );
    assert!(v["choice"]["schedule"].is_string(), "{text}");
}

/// A few hundred damaged copies of a real plugin in one folder: `list` loads every one (each in
/// its worker), lists the real plugins and names every copy in a warning, and never dies by a
/// signal.
#[test]
fn damaged_plugin_libraries_never_kill_pipeweave() {
    let real = std::fs::read(built("pipeweave_plugin_dualpipe")).unwrap();
    // The first 2 MiB hold what the loader maps (the rest of a debug build is debug information).
    let span = real.len().min(2 << 20);
    let dir = temp_dir("damaged");
    let copies = 200;
    for i in 0..copies {
        let offset = (i / 2) * span / (copies / 2) + 1;
        let mut damaged = real.clone();
        if i % 2 == 0 {
            damaged.truncate(offset);
        } else {
            damaged[offset..offset + 8]
                .copy_from_slice(&[0xff, 0, 0x7f, 0x45, 0x4c, 0x46, 0xff, 0xff]);
        }
        let name = libloading_name(&format!("pipeweave_plugin_damaged_{i:03}"));
        std::fs::write(dir.join(name), damaged).unwrap();
    }
    let dir_arg = dir.display().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(["list", "--plugin-dir", &dir_arg])
        .env_remove("PIPEWEAVE_PLUGIN_PATH")
        .env("PIPEWEAVE_PLUGIN_TIMEOUT", "2")
        .output()
        .expect("the pipeweave binary runs");
    std::fs::remove_dir_all(&dir).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{:?}: {stderr}", out.status);
    assert!(String::from_utf8_lossy(&out.stdout).contains("dualpipe "));
    // The dynamic loader may say things of its own on the worker's standard error.
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    assert_eq!(warnings.len(), copies, "{stderr}");
    for (i, w) in warnings.iter().enumerate() {
        let file = format!(
            "{dir_arg}/{}",
            libloading_name(&format!("pipeweave_plugin_damaged_{i:03}"))
        );
        assert!(w.contains(&file), "{w}");
    }
}

#[test]
fn bare_library_names_are_looked_up_in_the_plugin_folders_only() {
    // Found in a plugin folder (the build folder, in debug builds).
    let (code, _, err) = pipeweave(&[
        "validate",
        "plugin:libpipeweave_fixture_panic.so",
        "-p",
        "4",
        "-m",
        "8",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("error: the plugin [BUILD]/libpipeweave_fixture_panic.so panicked"),
        "{err}"
    );

    // Not where the dynamic loader looks, nor in the current folder.
    let dir = temp_dir("bare-name");
    std::fs::copy(
        built("pipeweave_plugin_dualpipe"),
        dir.join("libelsewhere.so"),
    )
    .unwrap();
    let dir_arg = dir.display().to_string();
    let env = [("LD_LIBRARY_PATH", dir_arg.as_str())];
    let args = ["validate", "plugin:libelsewhere.so", "-p", "4", "-m", "8"];
    let (code, out, err) = pipeweave_in(&args, &env, Some(&dir));
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(
        err.starts_with(
            "error: no plugin file `libelsewhere.so` in [BUILD] (next to the executable), "
        ),
        "{err}"
    );
    assert!(
        err.ends_with("; give a path (`./libelsewhere.so`) to load a file from elsewhere\n"),
        "{err}"
    );
    // A path is loaded as it is.
    let args = ["validate", "plugin:./libelsewhere.so", "-p", "4", "-m", "8"];
    let (code, out, err) = pipeweave_in(&args, &env, Some(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(out.starts_with("plugin:dualpipe: valid"), "{out}");
}

#[test]
fn the_worker_is_hidden_and_the_time_limit_is_checked() {
    let (code, out, _) = pipeweave(&["--help"]);
    assert_eq!(code, 0);
    assert!(!out.contains("worker"), "{out}");
    let env = [("PIPEWEAVE_PLUGIN_TIMEOUT", "soon")];
    let (code, out, err) = pipeweave_in(&["list"], &env, None);
    assert_eq!(code, 0);
    assert!(out.contains("dualpipe "), "{out}");
    assert_eq!(
        err,
        "warning: PIPEWEAVE_PLUGIN_TIMEOUT=`soon` is not a number of seconds from 0.1 to 3600; plugins get the default 10 s\n"
    );
}
