//! `pipeweave calibrate`, `simulate --costs-from` and `pipeweave diff` on the recorded traces of
//! real runs in `tests/data/traces` (PlanRunner's and PyTorch's runtime at P = 2, M = 8; how each
//! was made: the README there). The traces are fixed files, so every figure they determine is
//! exact: the costs each writes, the prediction under them and the diff against the run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `pipeweave ARGS` run from the repository's root, so that the trace paths the outputs name are
/// the same on every machine.
fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("pipeweave runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The folder's trace files, relative to the root, rank 0 first.
fn traces(folder: &str) -> Vec<String> {
    let dir = root().join("tests/data/traces").join(folder);
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("the folder")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|f| f.ends_with(".pt.trace.json.gz"))
        .map(|f| format!("tests/data/traces/{folder}/{f}"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "{folder}: {files:?}");
    files
}

/// Each folder with the plan it ran: read from the traces (none given), or a plugin schedule's,
/// whose two pipelines the traces alone do not tell apart.
const RECORDED: &[(&str, &[&str])] = &[
    ("1f1b", &[]),
    ("1f1b-operators", &[]),
    ("gpipe", &[]),
    ("zb-h1", &[]),
    ("interleaved-1f1b", &[]),
    ("dualpipev", &[]),
    ("dualpipe", &["--plan", "dualpipe", "-p", "2", "-m", "8"]),
    ("chimera", &["--plan", "chimera", "-p", "2", "-m", "8"]),
    ("pytorch-1f1b", &[]),
    ("pytorch-dualpipev", &[]),
];

fn calibrate(folder: &str, plan: &[&str]) -> Output {
    let files = traces(folder);
    let mut args = vec!["calibrate"];
    args.extend(files.iter().map(String::as_str));
    args.extend(plan);
    args.extend(["-o", "-"]);
    run(&args)
}

#[test]
fn every_recorded_run_calibrates_against_its_plan() {
    for &(folder, plan) in RECORDED {
        let out = calibrate(folder, plan);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{folder}: {}",
            text(&out.stderr)
        );
        let name = folder.replace('-', "_");
        insta::assert_snapshot!(format!("recorded_{name}_costs"), text(&out.stdout));
        insta::assert_snapshot!(format!("recorded_{name}_notes"), text(&out.stderr));
    }
}

/// The 1F1B run's costs, written to a file of the test's own.
fn costs_file(folder: &str, plan: &[&str]) -> PathBuf {
    let out = calibrate(folder, plan);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // A name of its own on every call: the tests run at once, and each removes its files.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "pipeweave-recorded-{folder}-{}-{call}.toml",
        std::process::id()
    ));
    std::fs::write(&path, &out.stdout).unwrap();
    path
}

fn json(out: &Output) -> serde_json::Value {
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn the_measured_costs_predict_every_schedule_with_its_saved_bytes() {
    let costs = costs_file("1f1b", &[]);
    let costs = costs.to_str().unwrap();
    // The run's own plan: the peak saved bytes the model predicts are the ones the run measured
    // (each forward's rise, summed while alive), rank by rank.
    let sim = json(&run(&[
        "simulate",
        "1f1b",
        "-p",
        "2",
        "-m",
        "8",
        "--costs-from",
        costs,
        "--format",
        "json",
    ]));
    let peaks: Vec<u64> = sim["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["peak_saved_bytes"].as_u64().expect("a peak"))
        .collect();
    let files = traces("1f1b");
    let mut args = vec!["diff", "1f1b", "-p", "2", "-m", "8"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--format", "json"]);
    let diff = json(&run(&args));
    let measured: Vec<u64> = diff["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["measured_peak_saved_bytes"].as_u64().expect("measured"))
        .collect();
    assert_eq!(peaks, measured);
    insta::assert_json_snapshot!("recorded_1f1b_simulate", sim);
    // Other schedules of the same shape, priced by the same costs.
    let mut predicted = String::new();
    for schedule in ["gpipe", "zb-h1", "zb-v", "dualpipev"] {
        let sim = json(&run(&[
            "simulate",
            schedule,
            "-p",
            "2",
            "-m",
            "8",
            "--costs-from",
            costs,
            "--format",
            "json",
        ]));
        let peaks: Vec<String> = sim["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["peak_saved_bytes"].to_string())
            .collect();
        predicted.push_str(&format!(
            "{schedule}: makespan {} s, peak saved bytes {}\n",
            sim["makespan"],
            peaks.join(", ")
        ));
    }
    insta::assert_snapshot!("recorded_1f1b_predicts", predicted);
    // compare prices every row with them too: the same makespans and the largest rank's peak.
    let compared = json(&run(&[
        "compare",
        "1f1b",
        "gpipe",
        "zb-h1",
        "zb-v",
        "dualpipev",
        "interleaved-1f1b",
        "-p",
        "2",
        "-m",
        "8",
        "--costs-from",
        costs,
        "--format",
        "json",
    ]));
    assert_eq!(compared["costs_from"], costs);
    let rows: Vec<String> = compared["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}: {} | {}",
                r["schedule"],
                r["figures"]["measured"],
                r["notes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|n| n.as_str().filter(|n| n.starts_with("measured costs")))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        })
        .collect();
    let first = &compared["rows"][0]["figures"]["measured"];
    assert_eq!(first["makespan_s"], sim["makespan"]);
    assert_eq!(
        first["peak_saved_bytes"].as_u64(),
        peaks.iter().copied().max()
    );
    insta::assert_snapshot!("recorded_1f1b_compare", rows.join("\n"));
    let _ = std::fs::remove_file(costs);
}

#[test]
fn diff_sets_each_recorded_run_beside_its_plan() {
    for (folder, plan) in [
        ("1f1b", ["1f1b", "-p", "2", "-m", "8"]),
        ("zb-h1", ["zb-h1", "-p", "2", "-m", "8"]),
        ("dualpipev", ["dualpipev", "-p", "2", "-m", "8"]),
    ] {
        let files = traces(folder);
        let mut args = vec!["diff"];
        args.extend(plan);
        args.extend(files.iter().map(String::as_str));
        args.extend(["--format", "json"]);
        let diff = json(&run(&args));
        if folder != "zb-h1" {
            // Its own costs predict each rank's measured peak exactly (a pair's forward saved
            // before its backward frees); ZB-H1's rank 1 peaks 10 KiB above its prediction.
            for r in diff["ranks"].as_array().unwrap() {
                assert_eq!(
                    r["predicted_peak_saved_bytes"], r["measured_peak_saved_bytes"],
                    "{folder}"
                );
            }
        }
        let name = folder.replace('-', "_");
        insta::assert_json_snapshot!(format!("recorded_{name}_diff"), diff);
    }
}

/// A run predicted from its own costs: the whole step (the simulated actions with the host's
/// time between them, and the time before the first action and after the last) against the
/// profiler's step as the run measured it. The traces were recorded on a loaded machine whose
/// steps vary by tens of percent; 1F1B (3 steps) and DualPipeV (2) come within 5% (-1.4% and
/// +4.1%, each action at the mean of its samples), and every figure is pinned.
#[test]
fn a_run_predicted_from_its_own_costs_comes_out_at_its_measured_step() {
    let mut table = String::new();
    let words = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    for &(folder, plan) in RECORDED {
        let costs = costs_file(folder, plan);
        let text = std::fs::read_to_string(&costs).unwrap();
        // `[overhead.step]`'s median: the profiler's step, first rank's start to last rank's end.
        let table_at = text
            .find("[overhead.step]")
            .expect("the steps were timed whole");
        let step: f64 = text[table_at..]
            .lines()
            .find_map(|l| l.strip_prefix("median = "))
            .and_then(|v| v.parse().ok())
            .expect("a median");
        let files = traces(folder);
        let mut args = vec!["diff"];
        // The plan the traces ran, priced by their own costs.
        let _ = plan;
        let schedule = match folder {
            "1f1b" | "1f1b-operators" | "pytorch-1f1b" => "1f1b",
            "pytorch-dualpipev" => "dualpipev",
            other => other,
        };
        let m = if folder == "1f1b-operators" { "4" } else { "8" };
        // Interleaved 1F1B's two stages per rank, as a plan file (diff takes no shape options).
        let plan_file = std::env::temp_dir().join(format!(
            "pipeweave-recorded-{folder}-{}.json",
            std::process::id()
        ));
        if folder == "interleaved-1f1b" {
            let path = plan_file.to_str().unwrap();
            let out = run(&[
                "export",
                schedule,
                "-p",
                "2",
                "-m",
                m,
                "--stages-per-rank",
                "2",
                "--to",
                "json",
                "-o",
                path,
            ]);
            assert_eq!(out.status.code(), Some(0), "{}", words(&out.stderr));
            args.push(path);
        } else {
            args.extend([schedule, "-p", "2", "-m", m]);
        }
        args.extend(files.iter().map(String::as_str));
        args.extend(["--costs-from", costs.to_str().unwrap()]);
        args.extend(["--format", "json"]);
        let out = run(&args);
        std::fs::remove_file(&costs).ok();
        std::fs::remove_file(&plan_file).ok();
        let diff = json(&out);
        let predicted = diff["predicted_step"].as_f64().unwrap();
        let error = (predicted - step) / step;
        table.push_str(&format!(
            "{folder}: predicted {predicted:.4} s, measured {step:.4} s (median of the profiler's steps), {:+.1}%\n",
            100.0 * error
        ));
        if matches!(folder, "1f1b" | "dualpipev") {
            assert!(error.abs() < 0.05, "{folder}: {error}");
        }
    }
    insta::assert_snapshot!("recorded_self_predicted", table);
}

/// `recommend --costs-from`: every schedule at the run's P and M priced with the 1F1B run's
/// costs, fastest first, each row the step `simulate --costs-from` predicts for it.
#[test]
fn recommend_prices_every_schedule_with_the_measured_costs() {
    let costs = costs_file("1f1b", &[]);
    let path = costs.to_str().unwrap();
    let out = run(&["recommend", "--costs-from", path, "--format", "json"]);
    let r = json(&out);
    let candidates = r["candidates"].as_array().unwrap();
    let times: Vec<f64> = candidates
        .iter()
        .map(|c| c["step_time_s"].as_f64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert_eq!(r["choice"], candidates[0]);
    for schedule in ["1f1b", "zb-h1", "zb-v"] {
        let c = candidates
            .iter()
            .find(|c| {
                c["name"] == schedule
                    && c["settings"].as_array().unwrap().is_empty()
                    && c["v"].is_null()
            })
            .unwrap_or_else(|| panic!("{schedule} is priced"));
        let sim = json(&run(&[
            "simulate",
            schedule,
            "-p",
            "2",
            "-m",
            "8",
            "--costs-from",
            path,
            "--format",
            "json",
        ]));
        assert_eq!(c["step_time_s"], sim["step_time"], "{schedule}");
    }
    let text = run(&["recommend", "--costs-from", path]);
    assert_eq!(text.status.code(), Some(0));
    let shown = text_of_stdout(&text.stdout).replace(path, "COSTS");
    insta::assert_snapshot!("recorded_1f1b_recommend", shown);
    // A spec and measured costs: a usage error.
    let both = run(&["recommend", "--costs-from", path, "--spec", "default"]);
    assert_eq!(both.status.code(), Some(2));
    std::fs::remove_file(&costs).ok();
}

fn text_of_stdout(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// 1F1B's run and ZB-H1's measured together: F and B from both, I and W from ZB-H1's (where
/// PlanRunner's split backward is timed as it runs: on the first part, whose input needs no
/// gradient, an I of next to nothing and a W of a whole B; on the second, I and W together longer
/// than its B), so ZB-H1 is priced as it ran, where 1F1B's costs alone (I and W derived from B)
/// put it faster than 1F1B.
#[test]
fn runs_measured_together_price_the_split_backward_as_it_ran() {
    let mut args = vec!["calibrate"];
    let (a, b) = (traces("1f1b"), traces("zb-h1"));
    args.extend(a.iter().map(String::as_str));
    args.extend(b.iter().map(String::as_str));
    args.extend([
        "--plan", "1f1b", "--plan", "zb-h1", "-p", "2", "-m", "8", "-o", "-",
    ]);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let both = text(&out.stdout);
    insta::assert_snapshot!("recorded_1f1b_and_zb_h1_costs", both);
    let costs: toml::Value = toml::from_str(&both).expect("TOML");
    let parts = costs["part"].as_array().expect("parts");
    for p in parts {
        let from = &p["measured_in"];
        assert_eq!(from["f"].as_array().unwrap().len(), 2);
        assert_eq!(from["b"].as_array().unwrap(), &[toml::Value::Integer(0)]);
        assert_eq!(from["i"].as_array().unwrap(), &[toml::Value::Integer(1)]);
        assert_eq!(from["w"].as_array().unwrap(), &[toml::Value::Integer(1)]);
    }
    let median = |p: &toml::Value, k: &str| p[k]["median"].as_float().unwrap();
    // Part 0: I next to nothing, W a whole B.
    assert!(median(&parts[0], "i") < 0.05 * median(&parts[0], "b"));
    assert!((median(&parts[0], "w") / median(&parts[0], "b") - 1.0).abs() < 0.01);
    // Part 1: I and W together longer than B.
    assert!(median(&parts[1], "i") + median(&parts[1], "w") > median(&parts[1], "b"));
    let path = std::env::temp_dir().join(format!(
        "pipeweave-recorded-both-{}.toml",
        std::process::id()
    ));
    std::fs::write(&path, &out.stdout).unwrap();
    // Files of this test's own (the other tests write `costs_file`'s, and remove them).
    let own_file = |folder: &str| {
        let out = calibrate(folder, &[]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let path = std::env::temp_dir().join(format!(
            "pipeweave-recorded-together-{folder}-{}.toml",
            std::process::id()
        ));
        std::fs::write(&path, &out.stdout).unwrap();
        path
    };
    let alone = own_file("1f1b");
    let step = |costs: &Path, schedule: &str| {
        let sim = json(&run(&[
            "simulate",
            schedule,
            "-p",
            "2",
            "-m",
            "8",
            "--costs-from",
            costs.to_str().unwrap(),
            "--format",
            "json",
        ]));
        sim["step_time"].as_f64().unwrap()
    };
    let (zb_alone, zb_both) = (step(&alone, "zb-h1"), step(&path, "zb-h1"));
    let one_both = step(&path, "1f1b");
    std::fs::remove_file(&path).ok();
    std::fs::remove_file(&alone).ok();
    // The recorded ZB-H1 run's step: the median of its profiler steps (519.1 ms).
    let own = own_file("zb-h1");
    let own_costs: toml::Value =
        toml::from_str(&std::fs::read_to_string(&own).unwrap()).expect("TOML");
    std::fs::remove_file(&own).ok();
    let measured = own_costs["overhead"]["step"]["median"].as_float().unwrap();
    insta::assert_snapshot!(
        "recorded_zb_h1_predicted_from_both",
        format!(
            "zb-h1 from 1f1b's costs alone: {:.1} ms ({:+.1}%)\nzb-h1 from 1f1b's and zb-h1's: {:.1} ms ({:+.1}%)\n1f1b from 1f1b's and zb-h1's: {:.1} ms\n",
            zb_alone * 1e3,
            100.0 * (zb_alone - measured) / measured,
            zb_both * 1e3,
            100.0 * (zb_both - measured) / measured,
            one_both * 1e3
        )
    );
    assert!(zb_alone < 0.7 * measured, "{zb_alone}");
    assert!(((zb_both - measured) / measured).abs() < 0.10, "{zb_both}");
    // As they ran, ZB-H1 is slower than 1F1B under PlanRunner on this CPU.
    assert!(zb_both > one_both);
}

/// Chimera keeps a copy of every part on both ranks and all-reduces their gradients at the step's
/// end (PlanRunner's `REDUCE_GRAD` and `WAIT_REDUCE_GRAD`); a run without copies cannot price that,
/// and the prediction says so. 1F1B has no copies, and no such note.
#[test]
fn a_plan_with_copies_says_its_reduction_is_not_priced_by_a_run_without() {
    let out = calibrate("1f1b", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let path = std::env::temp_dir().join(format!(
        "pipeweave-recorded-copies-{}.toml",
        std::process::id()
    ));
    std::fs::write(&path, &out.stdout).unwrap();
    let notes = |schedule: &str| {
        let out = run(&[
            "simulate",
            schedule,
            "-p",
            "2",
            "-m",
            "8",
            "--costs-from",
            path.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let (chimera, one) = (notes("chimera"), notes("1f1b"));
    std::fs::remove_file(&path).ok();
    assert!(
        chimera.contains("the plan keeps parts 0, 1 on more than one rank, whose gradients are all-reduced across the copies at the step's end"),
        "{chimera}"
    );
    assert!(!one.contains("more than one rank"), "{one}");
}

/// Each send's host time, measured per send in the recorded 1F1B run (`overhead.send`, the mean
/// of every `SEND` span), is charged on the critical path once per send: priced with and without
/// it, a plan whose slowest rank runs back to back after its first action (rank 1, which holds
/// the slower part and the loss) takes exactly that many sends longer as the sends that rank
/// posts before its last action: 7 in 1F1B and GPipe (after each of its backwards but the last),
/// 8 in ZB-H1 (after each I; its W's come last). A plan that sends more pays more.
#[test]
fn each_send_on_the_critical_path_adds_the_measured_send() {
    let with = costs_file("1f1b", &[]);
    let text = std::fs::read_to_string(&with).unwrap();
    let costs: toml::Value = toml::from_str(&text).expect("TOML");
    let send = costs["overhead"]["send"]["mean"].as_float().unwrap();
    assert_eq!(costs["overhead"]["send"]["samples"].as_integer(), Some(48));
    // The same costs without the sends' tables: a send costs no host time of its own.
    let without_sends = {
        let mut out = String::new();
        let mut skip = false;
        for line in text.lines() {
            if line.starts_with('[') {
                skip = line == "[overhead.send]" || line == "[overhead.wait_send]";
            }
            if !skip {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    };
    assert!(!without_sends.contains("overhead.send"));
    let without = with.with_extension("without-sends.toml");
    std::fs::write(&without, &without_sends).unwrap();
    let makespan = |costs: &Path, schedule: &str| {
        let sim = json(&run(&[
            "simulate",
            schedule,
            "-p",
            "2",
            "-m",
            "8",
            "--costs-from",
            costs.to_str().unwrap(),
            "--format",
            "json",
        ]));
        sim["makespan"].as_f64().unwrap()
    };
    let mut charged = Vec::new();
    for (schedule, sends) in [("1f1b", 7.0), ("gpipe", 7.0), ("zb-h1", 8.0)] {
        let more = makespan(&with, schedule) - makespan(&without, schedule);
        assert!(
            (more - sends * send).abs() < 1e-9,
            "{schedule}: {more} s more, {} sends",
            more / send
        );
        charged.push(more);
    }
    // Interleaved 1F1B posts 48 sends a step against 1F1B's 16: some are hidden by waits for
    // inputs, but it pays for more of them than 1F1B.
    let interleaved = makespan(&with, "interleaved-1f1b") - makespan(&without, "interleaved-1f1b");
    assert!(interleaved > 2.0 * charged[0], "{interleaved}");
    std::fs::remove_file(&with).ok();
    std::fs::remove_file(&without).ok();
}

/// The least-squares line `time = a + bytes · s` through `(bytes, seconds)` points: `(a, s)`.
fn line(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mt = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxt: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - mt)).sum();
    let s = sxt / sxx;
    (mt - s * mx, s)
}

#[test]
fn the_link_probe_prices_the_copies_gradient_reduction() {
    // The recorded 1F1B run with its link probe: each link's latency and bandwidth are the line
    // through the probe's one-way transfers, and Chimera's copies (parts 0 and 1 on both ranks)
    // pay the all-reduce of each part's gradient bytes after their last action, from the line
    // through the probe's all-reduces.
    let out = calibrate("1f1b-probe", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    insta::assert_snapshot!("recorded_1f1b_probe_costs", text(&out.stdout));
    insta::assert_snapshot!("recorded_1f1b_probe_notes", text(&out.stderr));
    let calibrate_notes = text(&out.stderr);
    let path = costs_file("1f1b-probe", &[]);
    let costs: toml::Value = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let probe = &costs["probe"];
    let points = |key: &str| -> Vec<(f64, f64)> {
        probe[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["bytes"].as_integer().unwrap() as f64,
                    p["time"].as_float().unwrap(),
                )
            })
            .collect()
    };
    let (p2p, reduce) = (points("p2p"), points("all_reduce"));
    // The sizes the probe chose: the geometric range from 1 KiB by 4 up to the largest part's
    // gradients (881664 bytes), through the messages' 65536; the all-reduce at each part's too.
    let sizes: Vec<f64> = p2p.iter().map(|p| p.0).collect();
    assert_eq!(
        sizes,
        [1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 881664.0]
    );
    assert_eq!(reduce.len(), 7);
    let link = &probe["link"][0];
    let (a, s) = line(&p2p);
    assert!(
        a > 0.0 && s > 0.0,
        "the recorded points make a rising line from above 0"
    );
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * y.abs();
    assert!(close(link["latency"].as_float().unwrap(), a), "{link:?}");
    assert!(
        close(link["bandwidth"].as_float().unwrap(), 1.0 / s),
        "{link:?}"
    );
    let parts = costs["part"].as_array().unwrap();
    let grads: Vec<f64> = parts
        .iter()
        .map(|p| p["gradient_bytes"].as_integer().unwrap() as f64)
        .collect();
    assert_eq!(grads, [881664.0, 866816.0]);
    // Chimera at the run's shape: the step is the makespan, the head and tail, and each rank's
    // reductions of both parts after its last action (both ranks end together at most).
    let out = run(&[
        "simulate",
        "chimera",
        "-p",
        "2",
        "-m",
        "8",
        "--costs-from",
        path.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let notes = text(&out.stderr);
    let sim = json(&out);
    std::fs::remove_file(&path).ok();
    let (ra, rs) = line(&reduce);
    let reduction: f64 = grads.iter().map(|g| ra + g * rs).sum();
    let mean = |key: &str| costs["overhead"][key]["mean"].as_float().unwrap();
    let makespan = sim["makespan"].as_f64().unwrap();
    let step = sim["step_time"].as_f64().unwrap();
    assert!(reduction > 0.0);
    assert!(
        step <= makespan + reduction + mean("head") + mean("tail") + 1e-12
            && step > makespan + mean("head") + mean("tail"),
        "{step} against {makespan} + {reduction}"
    );
    assert!(
        notes.contains("the gradients of the parts kept on several ranks are all-reduced across the copies after each rank's last action (the line fitted to the probe's all-reduces of the same two ranks): part 0's 881664 bytes among ranks [0, 1]"),
        "{notes}"
    );
    // The run timed every receive's posting (`pw post`): 8 a step on each rank, over 2 steps.
    let posts = &costs["overhead"]["post_recv"];
    assert_eq!(posts["samples"].as_integer(), Some(32), "{posts:?}");
    assert!(!calibrate_notes.contains("timed no receive's posting"));
    // 1F1B keeps no copies: its step is the makespan, the head and the tail.
    let path = costs_file("1f1b-probe", &[]);
    let out = run(&[
        "simulate",
        "1f1b",
        "-p",
        "2",
        "-m",
        "8",
        "--costs-from",
        path.to_str().unwrap(),
        "--format",
        "json",
    ]);
    std::fs::remove_file(&path).ok();
    let sim = json(&out);
    let (makespan, step) = (
        sim["makespan"].as_f64().unwrap(),
        sim["step_time"].as_f64().unwrap(),
    );
    assert!((step - (makespan + mean("head") + mean("tail"))).abs() < 1e-12);
}

/// Costs measured from many runs (the fidelity harness calibrates from every round's runs) say
/// where they come from in one short note: the runs counted by plan, not every trace named.
#[test]
fn costs_of_many_runs_name_their_plans_not_every_trace() {
    let mut args = vec!["calibrate"];
    let (a, b) = (traces("1f1b"), traces("zb-h1"));
    for _ in 0..5 {
        args.extend(a.iter().map(String::as_str));
    }
    args.extend(b.iter().map(String::as_str));
    for _ in 0..5 {
        args.extend(["--plan", "1f1b"]);
    }
    args.extend(["--plan", "zb-h1", "-p", "2", "-m", "8", "-o", "-"]);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let path = std::env::temp_dir().join(format!(
        "pipeweave-recorded-many-runs-{}.toml",
        std::process::id()
    ));
    std::fs::write(&path, &out.stdout).unwrap();
    let sim = run(&[
        "simulate",
        "zb-h1",
        "-p",
        "2",
        "-m",
        "8",
        "--costs-from",
        path.to_str().unwrap(),
    ]);
    std::fs::remove_file(&path).ok();
    assert_eq!(sim.status.code(), Some(0), "{}", text(&sim.stderr));
    let notes = text(&sim.stderr);
    let note = notes
        .lines()
        .find(|l| l.starts_with("note: measured costs from"))
        .expect("the note of where the costs come from");
    let steps = |folder: &str| {
        let costs = costs_file(folder, &[]);
        let text = std::fs::read_to_string(&costs).unwrap();
        std::fs::remove_file(&costs).ok();
        toml::from_str::<toml::Value>(&text).unwrap()["measured"]["steps"]
            .as_integer()
            .unwrap()
    };
    let (s1, s2) = (steps("1f1b"), steps("zb-h1"));
    assert!(
        note.contains(&format!(
            ": 6 runs of 2 plans (5 runs of 1f1b over {} steps in all, 1 run of zb-h1 over {s2} step",
            5 * s1
        )),
        "{note}"
    );
    assert!(note.contains("`[[measured.run]]`"), "{note}");
    assert!(!note.contains(".json"), "no trace named: {note}");
}

/// A run that cuts the model into more parts than the first run (interleaved 1F1B's four chunks
/// beside 1F1B's two parts) is kept as that cut (`[[cut]]`): a plan cut alike costs each part
/// what that run measured (its medians, exactly), not its share of the first run's parts, and a
/// note says so; a plan cut as the first run is priced from the first run's parts as before.
#[test]
fn a_run_cut_finer_prices_plans_cut_alike() {
    let mut args = vec!["calibrate"];
    let (a, b) = (traces("1f1b"), traces("interleaved-1f1b"));
    args.extend(a.iter().map(String::as_str));
    args.extend(b.iter().map(String::as_str));
    args.extend([
        "--plan",
        "1f1b",
        "--plan",
        "interleaved-1f1b",
        "-p",
        "2",
        "-m",
        "8",
        "-o",
        "-",
    ]);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let both: toml::Value = toml::from_str(&text(&out.stdout)).expect("TOML");
    assert!(text(&out.stderr).contains("the runs that cut the model into 4 parts"));
    // The interleaved run alone: its four parts' medians.
    let alone = costs_file("interleaved-1f1b", &[]);
    let own: toml::Value = toml::from_str(&std::fs::read_to_string(&alone).unwrap()).unwrap();
    std::fs::remove_file(&alone).ok();
    let cut = &both["cut"].as_array().expect("[[cut]]")[0];
    assert_eq!(cut["parts"].as_integer(), Some(4));
    let (cut_parts, own_parts) = (
        cut["part"].as_array().unwrap(),
        own["part"].as_array().unwrap(),
    );
    assert_eq!(cut_parts.len(), 4);
    for (c, o) in cut_parts.iter().zip(own_parts) {
        for k in ["f", "b"] {
            assert_eq!(c[k]["median"], o[k]["median"], "part {} {k}", c["part"]);
        }
        assert_eq!(c["measured_in"]["f"].as_array().unwrap().len(), 1);
    }
    // The first run's two parts are 1F1B's alone.
    let first = costs_file("1f1b", &[]);
    let own_first: toml::Value = toml::from_str(&std::fs::read_to_string(&first).unwrap()).unwrap();
    std::fs::remove_file(&first).ok();
    for (p, o) in both["part"]
        .as_array()
        .unwrap()
        .iter()
        .zip(own_first["part"].as_array().unwrap())
    {
        assert_eq!(p["f"]["median"], o["f"]["median"]);
        assert_eq!(p["b"]["median"], o["b"]["median"]);
    }
    let path = std::env::temp_dir().join(format!(
        "pipeweave-recorded-cut-{}.toml",
        std::process::id()
    ));
    std::fs::write(&path, text(&out.stdout)).unwrap();
    let sim = run(&[
        "simulate",
        "interleaved-1f1b",
        "-p",
        "2",
        "-m",
        "8",
        "--costs-from",
        path.to_str().unwrap(),
    ]);
    std::fs::remove_file(&path).ok();
    assert_eq!(sim.status.code(), Some(0), "{}", text(&sim.stderr));
    let notes = text(&sim.stderr);
    assert!(
        notes.contains("the plan cuts the model into 4 parts, as the runs of `[[cut]]` did"),
        "{notes}"
    );
    assert!(
        !notes.contains("the share of the model it holds"),
        "{notes}"
    );
}
