//! `pipeweave calibrate` on the hand-made traces of `tests/fixtures/traces/1f1b-p2-m4` (made-up
//! durations in the exact form `torch.profiler` writes; see the README there), plain and gzipped,
//! and the costs it writes read back by `--costs-from`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/traces/1f1b-p2-m4")
}

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("pipeweave runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn calibrate_measures_the_run_and_costs_from_prices_plans_with_it() {
    let dir = std::env::temp_dir().join(format!("pipeweave-calibrate-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for r in 0..2 {
        let plain = std::fs::read(fixtures().join(format!("rank{r}.json"))).unwrap();
        std::fs::write(dir.join(format!("rank{r}.json")), &plain).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&plain).unwrap();
        std::fs::write(dir.join(format!("rank{r}.json.gz")), gz.finish().unwrap()).unwrap();
    }
    let plain = run(
        &dir,
        &[
            "calibrate",
            "rank0.json",
            "rank1.json",
            "--plan",
            "1f1b",
            "-p",
            "2",
            "-m",
            "4",
            "-o",
            "-",
        ],
    );
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain.stderr));
    insta::assert_snapshot!("calibrate_stdout", text(&plain.stdout));
    insta::assert_snapshot!("calibrate_stderr", text(&plain.stderr));
    let zipped = run(
        &dir,
        &[
            "calibrate",
            "rank0.json.gz",
            "rank1.json.gz",
            "--plan",
            "1f1b",
            "-p",
            "2",
            "-m",
            "4",
            "-o",
            "-",
        ],
    );
    assert_eq!(zipped.status.code(), Some(0), "{}", text(&zipped.stderr));
    assert_eq!(
        text(&zipped.stdout).replace(".json.gz", ".json"),
        text(&plain.stdout)
    );
    std::fs::write(dir.join("costs.toml"), &plain.stdout).unwrap();
    let sim = run(
        &dir,
        &[
            "simulate",
            "zb-h1",
            "-p",
            "2",
            "-m",
            "4",
            "--costs-from",
            "costs.toml",
        ],
    );
    assert_eq!(sim.status.code(), Some(0), "{}", text(&sim.stderr));
    insta::assert_snapshot!("costs_from_stdout", text(&sim.stdout));
    insta::assert_snapshot!("costs_from_stderr", text(&sim.stderr));
    // The plan against the run, predicted with the costs measured in the same traces.
    let diff = run(
        &dir,
        &[
            "diff",
            "1f1b",
            "rank0.json",
            "rank1.json",
            "-p",
            "2",
            "-m",
            "4",
            "--svg",
            "diff.svg",
        ],
    );
    assert_eq!(diff.status.code(), Some(0), "{}", text(&diff.stderr));
    insta::assert_snapshot!("diff_stdout", text(&diff.stdout));
    insta::assert_snapshot!("diff_stderr", text(&diff.stderr));
    let svg = std::fs::read_to_string(dir.join("diff.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("the SVG is XML");
    let labels: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .filter(|t| t.starts_with("rank "))
        .collect();
    assert_eq!(
        labels,
        ["rank 0 plan", "rank 0 run", "rank 1 plan", "rank 1 run"]
    );
    // With other costs: those of the file.
    let with = run(
        &dir,
        &[
            "diff",
            "1f1b",
            "rank0.json.gz",
            "rank1.json.gz",
            "-p",
            "2",
            "-m",
            "4",
            "--costs-from",
            "costs.toml",
            "--format",
            "json",
        ],
    );
    assert_eq!(with.status.code(), Some(0), "{}", text(&with.stderr));
    assert!(text(&with.stdout).contains("\"costs\": \"measured, from costs.toml\""));
    let _ = std::fs::remove_dir_all(&dir);
}
