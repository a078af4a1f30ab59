//! The host's own tests; the ones with plugins need them built next to the binaries (`cargo
//! build --workspace`), as the CLI's integration tests do.

use super::*;

/// A host whose workers are the `pipeweave` binary beside this test binary (which is no
/// worker itself).
fn host() -> FsHost {
    let exe = std::env::current_exe().expect("the test knows its path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps");
    let worker = WorkerCommand {
        program: Some(dir.join(format!("pipeweave{}", std::env::consts::EXE_SUFFIX))),
        args: vec!["__plugin-worker".into()],
    };
    FsHost::new(worker, Box::new(|_| {}))
}

#[test]
fn the_time_limit_is_a_number_of_seconds_from_a_tenth_to_an_hour() {
    assert_eq!(parse_timeout("10"), Some(Duration::from_secs(10)));
    assert_eq!(parse_timeout(" 0.25 "), Some(Duration::from_millis(250)));
    assert_eq!(parse_timeout("0.1"), Some(MIN_TIMEOUT));
    assert_eq!(parse_timeout("3600"), Some(MAX_TIMEOUT));
    assert_eq!(parse_timeout("1e3"), Some(Duration::from_secs(1000)));
    for bad in [
        "", "0", "-1", "ten", "NaN", "inf", "1e300", "1e-10", "0.099", "3600.5", "0x10",
    ] {
        assert_eq!(parse_timeout(bad), None, "{bad}");
    }
    assert_eq!(
        timeout_warning("1e-10"),
        "PIPEWEAVE_PLUGIN_TIMEOUT=`1e-10` is not a number of seconds from 0.1 to 3600; plugins get the default 10 s"
    );
    assert!(timeout_warning(&"é".repeat(1000)).starts_with(&format!(
        "PIPEWEAVE_PLUGIN_TIMEOUT=`{}…` is not",
        "é".repeat(40)
    )));
}

#[test]
fn a_text_in_memory_is_read_by_its_name() {
    let mut host = host();
    assert!(!host.is_file("<string>"));
    host.with_text("<string>", "0F0,0B0");
    host.with_text("<string>", "0F0,0B0\n");
    assert!(host.is_file("<string>"));
    assert_eq!(host.read("<string>").expect("in memory"), "0F0,0B0\n");
    let missing = host.read("no/such/file").expect_err("not there");
    assert!(missing.reason().starts_with("cannot read `no/such/file`"));
}

/// Needs the plugins built next to the binaries (`cargo build --workspace`), as the CLI's
/// integration tests do.
#[test]
fn each_plugin_is_started_once() {
    let mut host = host();
    let named = host
        .plugin(&PluginTarget::Named("dualpipe".into()))
        .expect("the dualpipe plugin is built");
    let all = host.plugins();
    assert!(all.iter().flatten().any(|p| p.id == named.id));
    let by_path = host
        .plugin(&PluginTarget::Path(named.location.clone()))
        .expect("loads");
    assert_eq!(by_path.id, named.id);
    // One worker per plugin file, however it was asked for.
    assert_eq!(host.loaded.len(), all.len());
    let request = PluginRequest {
        ranks: 4,
        microbatches: 8,
        settings: Vec::new(),
    };
    for _ in 0..2 {
        let plan = host.generate(named.id, &request).expect("a valid plan");
        assert_eq!((plan.ranks(), plan.num_microbatches()), (4, 8));
    }
    let plan = host.generate(
        named.id,
        &PluginRequest {
            ranks: 4,
            microbatches: 8,
            settings: vec![("overlap".into(), "maybe".into())],
        },
    );
    assert!(plan.expect_err("a bad setting").is_usage());
}

/// The workers running, by plugin file.
fn running(host: &FsHost) -> usize {
    host.loaded
        .iter()
        .filter(|(_, w)| w.as_ref().is_ok_and(Worker::is_running))
        .count()
}

#[test]
fn fewer_workers_run_under_a_small_descriptor_limit() {
    assert_eq!(live_workers(None), LIVE_WORKERS);
    assert_eq!(live_workers(Some(1 << 20)), LIVE_WORKERS);
    assert_eq!(live_workers(Some(64)), LIVE_WORKERS);
    assert_eq!(live_workers(Some(48)), 4);
    assert_eq!(live_workers(Some(36)), 1);
    assert_eq!(live_workers(Some(3)), 1);
}

/// At most `max_live` workers run: the least recently used is stopped, and a stopped plugin is
/// started again when it is asked for a plan, with the same id and the same plans.
#[test]
fn only_the_most_recently_used_workers_run() {
    let mut host = host();
    host.max_live = 2;
    let request = PluginRequest {
        ranks: 4,
        microbatches: 8,
        settings: Vec::new(),
    };
    let mut ids = Vec::new();
    for name in ["dualpipe", "dualpipev", "chimera"] {
        let info = host
            .plugin(&PluginTarget::Named(name.into()))
            .expect("the plugin is built");
        ids.push(info.id);
        assert!(running(&host) <= 2);
    }
    // dualpipe was used least recently: stopped.
    assert_eq!(host.live, [ids[1].0, ids[2].0]);
    let first = host.generate(ids[0], &request).expect("started again");
    assert_eq!(host.live, [ids[2].0, ids[0].0]);
    assert_eq!(running(&host), 2);
    for _ in 0..3 {
        for &id in &ids {
            host.generate(id, &request).expect("a valid plan");
            assert_eq!(running(&host), 2);
        }
    }
    let again = host.generate(ids[0], &request).expect("a valid plan");
    assert_eq!(first.programs(), again.programs());
    // However asked for, a plugin keeps its id.
    let by_path = host
        .plugin(&PluginTarget::Named("dualpipe".into()))
        .expect("loads");
    assert_eq!(by_path.id, ids[0]);
}

/// `plugin:PATH` naming a FIFO, a link to one, a folder or a device is refused before a worker
/// starts, in the words of a plan file that is none.
#[cfg(unix)]
#[test]
fn plugin_paths_that_are_no_regular_files_are_refused_before_a_worker_starts() {
    let dir = std::env::temp_dir().join(format!("pipeweave-host-fifo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("folder.so")).unwrap();
    let fifo = dir.join("fifo.so");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    std::os::unix::fs::symlink(&fifo, dir.join("link.so")).unwrap();
    let mut host = host();
    let shown = |p: &Path| p.display().to_string();
    for (path, what) in [
        (shown(&fifo), "a FIFO (named pipe)"),
        (shown(&dir.join("link.so")), "a FIFO (named pipe)"),
        (shown(&dir.join("folder.so")), "a folder"),
        ("/dev/zero".to_owned(), "a character device"),
    ] {
        let e = host
            .plugin(&PluginTarget::Path(path.clone()))
            .expect_err("refused");
        assert_eq!(
            e.reason(),
            format!(
                "cannot read `{path}`: not a regular file but {what}; give a plugin library file"
            )
        );
    }
    assert!(host.loaded.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("written");
    encoder.finish().expect("finished")
}

#[test]
fn a_gzipped_trace_unzips_whole_and_a_bomb_of_zeros_is_refused_at_its_first_byte() {
    let text = b"{\"traceEvents\": [\n\t{\"name\": \"pw 0F0\"}\r\n]}";
    assert_eq!(gunzip(&gzip(text)).expect("unzipped"), text);
    // 64 MiB of zeros in about 64 KiB: refused at byte 0, before the rest is unzipped.
    let bomb = gzip(&vec![0u8; 64 << 20]);
    assert!(bomb.len() < 1 << 20);
    let error = gunzip(&bomb).expect_err("refused").to_string();
    assert_eq!(
        error,
        "it unzips to no JSON text: byte 0 of the unzipped text is 0x00, a control character JSON \
         never holds"
    );
    let late = [b"{\"a\": 1}".as_slice(), &[0x07]].concat();
    let error = gunzip(&gzip(&late)).expect_err("refused").to_string();
    assert!(
        error.contains("byte 8 of the unzipped text is 0x07"),
        "{error}"
    );
    let cut = gzip(text);
    let error = gunzip(&cut[..cut.len() - 9])
        .expect_err("refused")
        .to_string();
    assert!(error.starts_with("not a whole gzip file"), "{error}");
}
