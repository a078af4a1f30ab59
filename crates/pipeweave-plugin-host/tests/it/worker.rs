//! Plugins in worker processes (the crate's example `plugin_worker`, which `cargo test` builds):
//! the same plans as in this process, and every way a plugin can fail, crash and hang included,
//! as an error naming the file while this process carries on.

use crate::{build_dir, library, message, reference, reference_cases, rows};
use pipeweave_plugin_host::{Plugin, PluginError, Worker, WorkerOptions};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The example worker program, beside the build directory's other examples.
fn worker_command() -> Command {
    let exe = build_dir()
        .join("examples")
        .join(format!("plugin_worker{}", std::env::consts::EXE_SUFFIX));
    assert!(exe.is_file(), "{} is missing", exe.display());
    Command::new(exe)
}

/// A short time limit, so that the hanging fixtures cost a second each.
fn options() -> WorkerOptions {
    WorkerOptions {
        time_limit: Duration::from_secs(1),
        ..WorkerOptions::default()
    }
}

fn spawn(path: &Path) -> Result<Worker, PluginError> {
    Worker::spawn(worker_command(), path, options())
}

fn fixture(name: &str) -> Result<Worker, PluginError> {
    spawn(&library(&format!("pipeweave_fixture_{name}")))
}

fn generate(
    worker: &mut Worker,
    ranks: u32,
    mbs: u32,
    settings: &[(&str, &str)],
) -> Result<(), PluginError> {
    let settings: Vec<(String, String)> = settings
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let request = worker.request(ranks, mbs, &settings)?;
    worker.generate(&request).map(|_| ())
}

#[test]
fn a_worker_gives_the_plans_this_process_gives() {
    let mut workers: Vec<(&str, Worker)> = Vec::new();
    for (file, name, ranks, mbs, settings) in reference_cases() {
        if !workers.iter().any(|(n, _)| n == name) {
            let path = library(&format!("pipeweave_plugin_{name}"));
            let worker = spawn(&path).and_then(|w| w.check_name(name)).unwrap();
            assert_eq!(worker.metadata(), Plugin::load(&path).unwrap().metadata());
            workers.push((name, worker));
        }
        // One worker per plugin answers every request.
        let (_, worker) = workers.iter_mut().find(|(n, _)| n == name).unwrap();
        let settings: Vec<(String, String)> = settings
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let request = worker.request(*ranks, *mbs, &settings).unwrap();
        let plan = worker
            .generate(&request)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(rows(&plan), reference(file), "{file}");
    }
}

/// Records what happened to one case, for the snapshot.
fn record(text: &mut String, what: &str, result: Result<(), PluginError>) {
    let said = match &result {
        Ok(()) => "ok".to_owned(),
        Err(e) => message(e),
    };
    text.push_str(&format!("{what}:\n  {said}\n"));
}

#[test]
fn every_fault_fixture_in_a_worker_is_a_clean_error() {
    let mut text = String::new();

    // A plugin that never returns is stopped at the time limit, and not asked again.
    let mut w = fixture("loop").unwrap();
    let e = generate(&mut w, 4, 8, &[]);
    assert!(matches!(e, Err(PluginError::TimedOut { .. })), "{e:?}");
    record(&mut text, "loop", e);
    let e = generate(&mut w, 4, 8, &[]);
    assert!(
        matches!(e, Err(PluginError::TimedOutBefore { .. })),
        "{e:?}"
    );
    record(&mut text, "loop, asked again", e);

    // Crashes, each time in a new worker.
    let mut w = fixture("abort").unwrap();
    for _ in 0..2 {
        let e = generate(&mut w, 4, 8, &[]);
        assert!(matches!(e, Err(PluginError::Crashed { .. })), "{e:?}");
        record(&mut text, "abort", e);
    }
    let e = generate(&mut fixture("segfault").unwrap(), 4, 8, &[]);
    assert!(matches!(e, Err(PluginError::Crashed { .. })), "{e:?}");
    record(&mut text, "segfault", e);

    // A panic is caught in the plugin: the worker goes on.
    let mut w = fixture("panic").unwrap();
    for _ in 0..2 {
        let e = generate(&mut w, 4, 8, &[]);
        assert!(matches!(e, Err(PluginError::Panicked { .. })), "{e:?}");
    }
    record(&mut text, "panic", generate(&mut w, 4, 8, &[]));

    let e = generate(&mut fixture("huge").unwrap(), 4, 8, &[]);
    assert!(matches!(e, Err(PluginError::ReplyTooLarge { .. })), "{e:?}");
    record(&mut text, "huge reply", e);
    let e = generate(&mut fixture("scribble").unwrap(), 4, 8, &[]);
    assert!(matches!(e, Err(PluginError::Worker { .. })), "{e:?}");
    record(&mut text, "garbage on the pipe", e);
    let e = generate(&mut fixture("garbage").unwrap(), 2, 2, &[]);
    assert!(matches!(e, Err(PluginError::Malformed { .. })), "{e:?}");
    record(&mut text, "garbage reply", e);
    let e = generate(&mut fixture("broken_plan").unwrap(), 2, 1, &[]);
    assert!(matches!(e, Err(PluginError::InvalidPlan { .. })), "{e:?}");
    record(&mut text, "invalid plan", e);
    let mut w = fixture("wrong_shape").unwrap();
    for wrong in ["0", "1", "2"] {
        let e = generate(&mut w, 4, 8, &[("wrong", wrong)]);
        assert!(matches!(e, Err(PluginError::WrongShape { .. })), "{e:?}");
        record(&mut text, &format!("wrong shape {wrong}"), e);
    }

    // A plugin that prints and reads its standard input does not break the pipes.
    record(
        &mut text,
        "prints",
        generate(&mut fixture("prints").unwrap(), 4, 8, &[]),
    );

    // Failures while loading.
    for name in ["load_hang", "null_entry", "abi", "no_entry"] {
        record(&mut text, name, fixture(name).map(drop));
    }
    let dir = temp_dir("not-a-library");
    let fake = dir.join("libfake.so");
    std::fs::write(&fake, "this is not a shared library\n").unwrap();
    let e = spawn(&fake).map(drop);
    assert!(matches!(e, Err(PluginError::NotLoadable { .. })), "{e:?}");
    text.push_str(&format!(
        "not a library:\n  {}\n",
        message(&e.unwrap_err()).replace(&dir.display().to_string(), "[TMP]")
    ));
    std::fs::remove_dir_all(&dir).unwrap();
    record(
        &mut text,
        "no such file",
        spawn(&build_dir().join("libpipeweave_plugin_nothing.so")).map(drop),
    );

    // Workers that are none.
    let e = Worker::spawn(
        Command::new("/nonexistent/worker"),
        &library("pipeweave_plugin_dualpipe"),
        options(),
    );
    record(&mut text, "no worker program", e.map(drop));
    let mut printf = Command::new("printf");
    printf.args(["%s\\n%.0s", "not a pipeweave plugin worker"]);
    let e = Worker::spawn(printf, &library("pipeweave_plugin_dualpipe"), options());
    record(&mut text, "not a worker", e.map(drop));

    insta::assert_snapshot!(text);
}

fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pipeweave-host-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The part of an ELF file the loader maps (to the end of its last `PT_LOAD` segment): where a
/// damaged byte matters (the rest is debug information). The whole file when it is no ELF64.
fn loaded_extent(bytes: &[u8]) -> usize {
    let at = |offset: usize, len: usize| -> u64 {
        let mut word = [0u8; 8];
        if let Some(b) = bytes.get(offset..offset + len) {
            word[..len].copy_from_slice(b);
        }
        u64::from_le_bytes(word)
    };
    if !bytes.starts_with(b"\x7fELF\x02\x01") {
        return bytes.len();
    }
    let (table, entry, count) = (at(0x20, 8) as usize, at(0x36, 2) as usize, at(0x38, 2));
    let end = (0..count as usize)
        .map(|i| table + i * entry)
        .filter(|&h| at(h, 4) == 1)
        .map(|h| (at(h + 8, 8) + at(h + 0x20, 8)) as usize)
        .max()
        .unwrap_or(bytes.len());
    end.min(bytes.len())
}

/// A few hundred damaged copies of a real plugin, each in a worker: truncated at offsets spread
/// over the mapped part of the file, or with 8 bytes overwritten there. Whatever the loader or the
/// plugin does with them, this process gets a result or an error naming the file.
#[test]
fn damaged_libraries_never_take_the_host_down() {
    let original = std::fs::read(library("pipeweave_plugin_dualpipe")).unwrap();
    let extent = loaded_extent(&original);
    let dir = temp_dir("damaged");
    let tries = 150;
    let mut outcomes: Vec<(String, usize)> = Vec::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    for i in 0..2 * tries {
        let offset = (i % tries) * extent / tries + i / tries;
        let mut damaged = original.clone();
        if i < tries {
            damaged.truncate(offset);
        } else {
            for byte in damaged.iter_mut().skip(offset).take(8) {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                *byte = (seed >> 56) as u8;
            }
        }
        let path = dir.join(format!("libdamaged_{i}.so"));
        std::fs::write(&path, &damaged).unwrap();
        let outcome = spawn(&path).and_then(|mut w| generate(&mut w, 4, 8, &[]));
        if let Err(e) = &outcome {
            assert_eq!(e.path(), Some(path.as_path()), "{e}");
        }
        let kind = match outcome {
            Ok(()) => "ok".to_owned(),
            Err(PluginError::Crashed { how, .. }) => format!("crashed: {how}"),
            Err(e) => format!("{e:?}")
                .split([' ', '{'])
                .next()
                .unwrap()
                .to_owned(),
        };
        match outcomes.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => outcomes.push((kind, 1)),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    outcomes.sort();
    // The damage reaches the loader: some copies crash it, some still work.
    assert!(
        outcomes.iter().any(|(k, _)| k.starts_with("crashed")),
        "{outcomes:?}"
    );
    assert!(outcomes.iter().any(|(k, _)| k == "ok"), "{outcomes:?}");
    #[allow(clippy::print_stderr)]
    {
        eprintln!("{} damaged copies: {outcomes:?}", 2 * tries);
    }
}

/// Whether the process `pid` is there, running or not reaped (an id is not given again so soon).
#[cfg(target_os = "linux")]
fn alive(pid: &str) -> bool {
    Path::new("/proc").join(pid).exists()
}

/// The `fault-detach` fixture starts two `sleep`s that leave the worker's process group (one in a
/// session of its own, one handed away by a double fork) and writes their ids to a file: both end
/// with the worker, whether it is stopped, dropped or runs out of time, and a stopped worker is
/// started again for the next request.
#[cfg(target_os = "linux")]
#[test]
fn programs_the_plugin_detached_end_with_the_worker() {
    let dir = temp_dir("detach");
    let ids = dir.join("ids");
    let spawn_detach = || {
        let mut command = worker_command();
        command.env("PIPEWEAVE_FIXTURE_PIDS", &ids);
        Worker::spawn(command, &library("pipeweave_fixture_detach"), options()).unwrap()
    };
    // Reads the ids written since the last call, and empties the file.
    let started = || {
        let text = std::fs::read_to_string(&ids).unwrap();
        std::fs::remove_file(&ids).unwrap();
        let ids: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
        assert_eq!(ids.len(), 2, "{text}");
        ids
    };
    let gone = |ids: &[String], how: &str| {
        for id in ids {
            assert!(!alive(id), "the sleep {id} outlived a worker {how}");
        }
    };

    let mut worker = spawn_detach();
    generate(&mut worker, 4, 8, &[]).unwrap();
    let first = started();
    assert!(first.iter().all(|id| alive(id)), "{first:?}");
    worker.stop();
    assert!(!worker.is_running());
    gone(&first, "stopped");
    generate(&mut worker, 4, 8, &[]).unwrap();
    assert!(worker.is_running());
    let second = started();
    drop(worker);
    gone(&second, "dropped");

    let mut worker = spawn_detach();
    let e = generate(&mut worker, 4, 8, &[("hang", "true")]);
    assert!(matches!(e, Err(PluginError::TimedOut { .. })), "{e:?}");
    gone(&started(), "out of time");
    std::fs::remove_dir_all(&dir).unwrap();
}
