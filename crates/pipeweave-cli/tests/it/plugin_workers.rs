//! The plugin workers against a hostile audit, each case its reproducer: plugin paths that are no
//! files, hundreds of plugins under a small descriptor limit, a plugin that floods its output, one
//! whose programs leave its process group, and environment variables out of their range. The
//! plugins must be built (`cargo build --workspace`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn build_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_pipeweave"))
        .parent()
        .expect("the binary is in a folder")
        .to_path_buf()
}

/// The path of a fixture library of the build folder (`pipeweave_fixture_<name>`).
fn fixture(name: &str) -> PathBuf {
    let file = format!(
        "{}pipeweave_fixture_{name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let path = build_dir().join(file);
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --workspace`",
        path.display()
    );
    path
}

/// The file name of the plugin `name`.
fn plugin_file(name: &str) -> String {
    format!(
        "{}pipeweave_plugin_{name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

/// A scratch folder of this test's own, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("pipeweave-workers-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    fn text(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `pipeweave` with `args` in `dir`, no variable of pipeweave's from this environment but `env`.
fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(args)
        .current_dir(dir)
        .env_remove("PIPEWEAVE_PLUGIN_PATH")
        .env_remove("PIPEWEAVE_SCHEDULE_PATH")
        .env_remove("PIPEWEAVE_PLUGIN_TIMEOUT")
        .envs(env.iter().copied())
        .output()
        .expect("the pipeweave binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `plugin:PATH` naming a FIFO, a link to one, a folder or a device: refused at once in the words
/// of a plan file that is none (before: the FIFO waited out the whole 10 s time limit).
#[cfg(unix)]
#[test]
fn plugin_paths_that_are_no_files_are_refused_at_once() {
    let dir = Scratch::new("fifo");
    let made = Command::new("mkfifo")
        .arg(dir.path("fifo.so"))
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    std::os::unix::fs::symlink("fifo.so", dir.path("link.so")).expect("a link");
    std::fs::create_dir(dir.path("folder.so")).expect("a folder");
    for (target, what) in [
        ("./fifo.so", "a FIFO (named pipe)"),
        ("./link.so", "a FIFO (named pipe)"),
        ("./folder.so", "a folder"),
        ("/dev/zero", "a character device"),
    ] {
        let out = run(
            &dir.0,
            &[
                "validate",
                &format!("plugin:{target}"),
                "-p",
                "4",
                "-m",
                "8",
            ],
            &[],
        );
        assert_eq!(out.status.code(), Some(1), "{target}");
        assert_eq!(
            text(&out.stderr),
            format!(
                "error: cannot read `{target}`: not a regular file but {what}; give a plugin library file\n"
            )
        );
    }
}

/// Three hundred plugins (links to one fixture that calls itself by its file's name) and three
/// broken ones, listed under a limit of 64 descriptors: every plugin listed, one warning per
/// broken one (before: one worker kept per plugin, and "Too many open files" from the 18th on).
#[cfg(unix)]
#[test]
fn any_number_of_plugins_fits_in_a_small_descriptor_limit() {
    let dir = Scratch::new("many");
    let library = fixture("named_by_file");
    let count = 300;
    for i in 0..count {
        let link = dir.path(&plugin_file(&format!("many_{i:03}")));
        std::os::unix::fs::symlink(&library, link).expect("a link");
    }
    for i in 0..3 {
        std::fs::write(
            dir.path(&plugin_file(&format!("zz_broken_{i}"))),
            "no library\n",
        )
        .expect("a file");
    }
    let out = Command::new("sh")
        .args(["-c", "ulimit -S -n 64 && exec \"$@\"", "sh"])
        .arg(env!("CARGO_BIN_EXE_pipeweave"))
        .args(["list", "--plugin-dir", &dir.text()])
        .env_remove("PIPEWEAVE_PLUGIN_PATH")
        .env_remove("PIPEWEAVE_SCHEDULE_PATH")
        .output()
        .expect("sh runs");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let listed = stdout
        .lines()
        .filter(|l| l.starts_with("many_") && l.split_whitespace().nth(1) == Some("plugin"))
        .count();
    assert_eq!(listed, count, "{stdout}");
    let warnings: Vec<&str> = stderr.lines().collect();
    assert_eq!(warnings.len(), 3, "{stderr}");
    for (i, w) in warnings.iter().enumerate() {
        let file = dir.path(&plugin_file(&format!("zz_broken_{i}")));
        assert!(
            w.starts_with(&format!(
                "warning: {} is not a loadable library",
                file.display()
            )),
            "{w}"
        );
    }
}

/// A plugin that writes 50 MiB on its standard output and 50 MiB on its standard error: its plan
/// arrives, and pipeweave passes on its first 4 KiB and says how much it dropped (before: all
/// 100 MiB on pipeweave's standard error).
#[test]
fn a_plugin_that_floods_its_output_adds_a_few_kib() {
    let target = format!("plugin:{}", fixture("floods").display());
    let out = run(
        &build_dir(),
        &["validate", &target, "-p", "4", "-m", "8"],
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        &stderr[..stderr.len().min(500)]
    );
    assert!(text(&out.stdout).starts_with("plugin:fault-floods: valid"));
    let total = 100u64 << 20;
    let note = format!(
        "warning: {} more bytes of output from the plugin {} were dropped (after the first 4096)\n",
        total - 4096,
        fixture("floods").display()
    );
    assert!(
        stderr.ends_with(&note),
        "{}",
        &stderr[stderr.len().saturating_sub(500)..]
    );
    assert_eq!(stderr.len(), 4096 + note.len());
    assert!(stderr.starts_with("fault-floods: a line of output"));
}

/// Whether the process `pid` is there, running or not reaped (an id is not given again so soon).
#[cfg(target_os = "linux")]
fn alive(pid: &str) -> bool {
    Path::new("/proc").join(pid).exists()
}

/// The ids `fault-detach` says it started, from pipeweave's standard error.
#[cfg(target_os = "linux")]
fn started(stderr: &str) -> Vec<String> {
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix("fault-detach: started "))
        .unwrap_or_else(|| panic!("no ids in {stderr}"));
    let ids: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    assert_eq!(ids.len(), 2, "{line}");
    ids
}

/// A plugin that starts a `sleep 30` in a session of its own and another one handed away by a
/// double fork: both are gone when pipeweave returns, whether the plugin answered or ran out of
/// time (before: both outlived pipeweave).
#[cfg(target_os = "linux")]
#[test]
fn programs_a_plugin_detaches_end_with_its_worker() {
    let target = format!("plugin:{}", fixture("detach").display());
    let out = run(
        &build_dir(),
        &["validate", &target, "-p", "4", "-m", "8"],
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for pid in started(&stderr) {
        assert!(!alive(&pid), "the sleep {pid} outlived pipeweave");
    }

    let hang = [
        "validate",
        &target,
        "-p",
        "4",
        "-m",
        "8",
        "--set",
        "hang=true",
    ];
    let out = run(&build_dir(), &hang, &[("PIPEWEAVE_PLUGIN_TIMEOUT", "1")]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("did not finish building a plan within the time limit of 1 s"),
        "{stderr}"
    );
    for pid in started(&stderr) {
        assert!(!alive(&pid), "the sleep {pid} outlived pipeweave");
    }
}

/// `PIPEWEAVE_PLUGIN_TIMEOUT` out of its range of 0.1 s to an hour, or no number: a warning
/// naming the variable and the range, and the default limit (before: `1e-10` became a limit of
/// 0 s and every plugin failed).
#[test]
fn a_time_limit_out_of_its_range_is_named_and_the_default_holds() {
    let dir = build_dir();
    for value in ["1e-10", "0.05", "0", "-3", "3601", "inf", "NaN", "ten", ""] {
        let out = run(&dir, &["list"], &[("PIPEWEAVE_PLUGIN_TIMEOUT", value)]);
        assert_eq!(out.status.code(), Some(0), "{value}");
        assert!(text(&out.stdout).contains("dualpipe "), "{value}");
        assert_eq!(
            text(&out.stderr),
            format!(
                "warning: PIPEWEAVE_PLUGIN_TIMEOUT=`{value}` is not a number of seconds from 0.1 to 3600; plugins get the default 10 s\n"
            )
        );
    }
    let long = "9".repeat(100_000);
    let out = run(&dir, &["list"], &[("PIPEWEAVE_PLUGIN_TIMEOUT", &long)]);
    assert_eq!(
        text(&out.stderr),
        format!(
            "warning: PIPEWEAVE_PLUGIN_TIMEOUT=`{}…` is not a number of seconds from 0.1 to 3600; plugins get the default 10 s\n",
            "9".repeat(40)
        )
    );
    for value in ["0.1", "3600", " 2.5 "] {
        let out = run(&dir, &["list"], &[("PIPEWEAVE_PLUGIN_TIMEOUT", value)]);
        assert_eq!(
            (out.status.code(), text(&out.stderr).as_str()),
            (Some(0), ""),
            "{value}"
        );
    }
}

/// Entries of the folder lists that are relative, files, missing or longer than a path can be:
/// each named with why, once; and ten thousand entries give a few warnings, not ten thousand.
#[test]
fn folder_list_entries_that_are_no_folders_are_named() {
    let dir = Scratch::new("lists");
    std::fs::write(dir.path("a-file"), "").expect("a file");
    std::fs::create_dir(dir.path("folder")).expect("a folder");
    let long = format!("/{}", "z".repeat(5000));
    let entries = [
        "relative".to_owned(),
        dir.path("a-file").display().to_string(),
        dir.path("missing").display().to_string(),
        long,
        dir.path("folder").display().to_string(),
    ];
    let value = std::env::join_paths(&entries).expect("a path list");
    let value = value.to_str().expect("UTF-8");
    for variable in ["PIPEWEAVE_PLUGIN_PATH", "PIPEWEAVE_SCHEDULE_PATH"] {
        let out = run(&dir.0, &["list"], &[(variable, value)]);
        assert_eq!(out.status.code(), Some(0), "{variable}");
        let stderr = text(&out.stderr).replace(&dir.text(), "[TMP]");
        assert_eq!(
            stderr,
            format!(
                "warning: the {variable} entry `relative` is not searched: only absolute paths are\n\
                 warning: the {variable} entry `[TMP]/a-file` is not searched: it is not a folder\n\
                 warning: the {variable} entry `[TMP]/missing` is not searched: there is no such folder\n\
                 warning: the {variable} entry `/{}… (5001 bytes)` is not searched: it is longer than 4096 bytes\n",
                "z".repeat(79)
            )
        );
    }

    let many: Vec<String> = (0..10_000).map(|i| format!("relative{i}")).collect();
    let value = std::env::join_paths(&many).expect("a path list");
    let value = value.to_str().expect("UTF-8");
    for variable in ["PIPEWEAVE_PLUGIN_PATH", "PIPEWEAVE_SCHEDULE_PATH"] {
        let out = run(&dir.0, &["list"], &[(variable, value)]);
        assert_eq!(out.status.code(), Some(0), "{variable}");
        let stderr = text(&out.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 10, "{stderr}");
        assert_eq!(
            lines[8..],
            [
                format!("warning: 248 more entries of {variable} are not searched"),
                format!("warning: {variable} has 10000 entries; only the first 256 are read"),
            ]
        );
    }
}
