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
    let out = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(args)
        .env_remove("PIPEWEAVE_PLUGIN_PATH")
        .output()
        .expect("the pipeweave binary runs");
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
