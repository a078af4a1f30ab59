//! `render` and `sweep` driven as a user would: files written, tables printed, exit codes.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh folder for one test's files, under Cargo's per-target temporary directory.
pub fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("draw")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// Runs `pipeweave` in `dir` (so output names files relative to it): (exit code, stdout, stderr).
pub fn pipeweave(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(args)
        .current_dir(dir)
        .env_remove("PIPEWEAVE_PLUGIN_PATH")
        .output()
        .expect("the pipeweave binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Parses `text` as XML (SVG, or the report page without its doctype) and counts elements by name.
pub fn count(text: &str, name: &str) -> usize {
    let text = text.trim_start_matches("<!DOCTYPE html>\n");
    let doc = roxmltree::Document::parse(text).expect("well-formed XML");
    doc.descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == name)
        .count()
}

#[test]
fn render_stacks_schedules_deterministically() {
    let dir = scratch("render");
    let args = [
        "render", "1f1b", "dualpipe", "zb-h1", "-p", "4", "-m", "8", "--svg", "a.svg",
    ];
    let (code, out, err) = pipeweave(&dir, &args);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out, @r"
    1f1b: makespan 33, bubble fraction 27.27%
    dualpipe: makespan 26, bubble fraction 7.69%
    zb-h1: makespan 27, bubble fraction 11.11%
    wrote a.svg
    ");
    let first = read(&dir.join("a.svg"));
    // One cell per compute operation (a pair's halves are two): 1F1B 4 × 16, ZB-H1 4 × 24, and
    // DualPipe p4 m8's 74 (32 F, 22 B, 10 I, 10 W).
    let cells = first.matches(r#"<g class="cell">"#).count();
    assert_eq!(cells, 64 + 74 + 96);
    assert_eq!(count(&first, "svg"), 1);
    let (code, _, _) = pipeweave(&dir, &args);
    assert_eq!(code, 0);
    assert_eq!(first, read(&dir.join("a.svg")), "render is deterministic");
}

#[test]
fn render_with_comms_and_to_stdout() {
    let dir = scratch("render-comms");
    let (code, out, err) = pipeweave(
        &dir,
        &[
            "render", "1f1b", "-p", "2", "-m", "2", "--comms", "--svg", "-",
        ],
    );
    assert_eq!((code, err.as_str()), (0, ""));
    // 1 boundary × 2 micro-batches × 2 directions.
    assert_eq!(out.matches(r#"class="comm""#).count(), 4);
    assert_eq!(count(&out, "svg"), 1);
}

#[test]
fn render_errors() {
    let dir = scratch("render-errors");
    let (code, _, err) = pipeweave(&dir, &["render", "1f1b", "--svg", "x.svg"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("give --ranks/-p and --microbatches/-m"),
        "{err}"
    );
    let (code, _, err) = pipeweave(
        &dir,
        &["render", "dualpipe", "-p", "4", "-m", "6", "--svg", "x.svg"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("twice as many micro-batches"), "{err}");
    assert!(!dir.join("x.svg").exists());
}

#[test]
fn sweep_table_chart_and_formats() {
    let dir = scratch("sweep");
    let (code, out, err) = pipeweave(
        &dir,
        &[
            "sweep",
            "1f1b",
            "dualpipe",
            "-p",
            "4",
            "--over",
            "microbatches=4..16:4",
            "--svg",
            "s.svg",
        ],
    );
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out, @r"
    bubble fraction against microbatches: P = 4
    microbatches    1f1b  dualpipe
    4             42.86%     - [1]
    8             27.27%     7.69%
    12            20.00%     5.26%
    16            15.79%     4.00%
    [1] dualpipe, microbatches = 4: dualpipe needs at least twice as many micro-batches as ranks (8), got 4
    ");
    let svg = read(&dir.join("s.svg"));
    assert_eq!(count(&svg, "circle"), 4 + 3 + 2);
    let (code, out, _) = pipeweave(
        &dir,
        &[
            "sweep",
            "gpipe",
            "-m",
            "8",
            "--over",
            "ranks=2,4",
            "--metric",
            "step-time",
            "--format",
            "csv",
        ],
    );
    assert_eq!(code, 0);
    // GPipe: (M + P − 1) × 3 units.
    assert_eq!(
        out,
        "ranks,schedule,step_time,reason\n2,gpipe,27,\n4,gpipe,33,\n"
    );
    let (code, out, _) = pipeweave(
        &dir,
        &[
            "sweep", "1f1b", "-p", "2", "--over", "m=2", "--format", "json",
        ],
    );
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let bubble = v["series"][0]["points"][0]["value"]
        .as_f64()
        .expect("a number");
    assert!((bubble - 1.0 / 3.0).abs() < 1e-12, "{bubble}");
}

#[test]
fn sweeping_a_plan_file_leaves_gaps_with_the_reason() {
    let dir = scratch("sweep-file");
    std::fs::write(dir.join("two.actions"), "0F0,0B0\n").expect("plan written");
    let (code, out, err) = pipeweave(
        &dir,
        &[
            "sweep",
            "gpipe",
            "two.actions",
            "-p",
            "1",
            "--over",
            "m=1,2",
            "--format",
            "csv",
        ],
    );
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        out,
        "microbatches,schedule,bubble_fraction,reason\n\
         1,gpipe,0,\n\
         1,two.actions,,a plan file has fixed microbatches\n\
         2,gpipe,0,\n\
         2,two.actions,,a plan file has fixed microbatches\n"
    );
}

#[test]
fn sweep_usage_errors_exit_2() {
    let dir = scratch("sweep-errors");
    for (args, says) in [
        (
            &["sweep", "1f1b", "-p", "4", "--over", "layers=1..2"][..],
            "none of the schedules has a parameter `layers`",
        ),
        (
            &["sweep", "1f1b", "-p", "4", "-m", "8", "--over", "v=1..4"][..],
            "none of the schedules has stages per rank",
        ),
        (
            &[
                "sweep",
                "dualpipev",
                "-p",
                "4",
                "-m",
                "8",
                "--over",
                "weight_split=1",
            ][..],
            "parameter `weight_split` is a bool (true or false), not `1`",
        ),
        (
            &[
                "sweep",
                "dualpipev",
                "-p",
                "4",
                "-m",
                "8",
                "--over",
                "overlap=0..1",
            ][..],
            "a range takes an int; parameter `overlap` is a bool",
        ),
        (
            &[
                "sweep",
                "interleaved-1f1b",
                "-p",
                "2",
                "-m",
                "4",
                "--over",
                "v=0..2",
            ][..],
            "`0` is not a value",
        ),
        (&["sweep", "1f1b", "--over", "m=8..16"][..], "give --ranks"),
        (
            &["sweep", "1f1b", "-p", "4", "--over", "m=16..8"][..],
            "runs backwards",
        ),
    ] {
        let (code, _, err) = pipeweave(&dir, args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn render_and_sweep_on_a_spec() {
    let dir = scratch("spec");
    // DeepSeek-V3's spec: P = 16 and M = 120 come from it; times are in seconds.
    let (code, out, err) = pipeweave(
        &dir,
        &[
            "render",
            "chimera",
            "dualpipe",
            "--spec",
            "deepseek-v3-h800-pp16-ep64",
            "--svg",
            "ds.svg",
        ],
    );
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out, @r"
    chimera: makespan 27.855 s, bubble fraction 27.80%
    dualpipe: makespan 18.801 s, bubble fraction 11.63%
    wrote ds.svg
    ");
    let svg = read(&dir.join("ds.svg"));
    assert!(svg.contains("time (s)"));
    assert_eq!(count(&svg, "svg"), 1);

    let (code, out, err) = pipeweave(
        &dir,
        &[
            "sweep",
            "1f1b",
            "dualpipev",
            "--spec",
            "deepseek-v3-h800-pp16-ep64",
            "--over",
            "m=16,32",
            "--metric",
            "step-time",
        ],
    );
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out, @r"
    step time against microbatches: spec deepseek-v3-h800-pp16-ep64, P = 16
    microbatches     1f1b  dualpipev
    16            5.630 s      - [1]
    32            8.714 s    7.438 s
    [1] dualpipev, microbatches = 16: DualPipeV needs M ≥ 2P micro-batches (with P = 16, M = 16, weight_split = true, overlap = true)
    ");
}

/// The cells of an SVG timeline: (tooltip, fill of the first rectangle).
fn cells(svg: &str) -> Vec<(String, String)> {
    let doc = roxmltree::Document::parse(svg).expect("well-formed XML");
    doc.descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("cell"))
        .map(|g| {
            let title = g
                .children()
                .find(|c| c.has_tag_name("title"))
                .and_then(|t| t.text())
                .unwrap_or_default();
            let fill = g
                .children()
                .find(|c| c.has_tag_name("rect"))
                .and_then(|r| r.attribute("fill"))
                .unwrap_or_default();
            (title.to_owned(), fill.to_owned())
        })
        .collect()
}

/// The fill of the cell whose tooltip starts with `prefix`.
fn fill_of<'a>(cells: &'a [(String, String)], prefix: &str) -> &'a str {
    cells
        .iter()
        .find(|(title, _)| title.starts_with(prefix))
        .map(|(_, fill)| fill.as_str())
        .unwrap_or_else(|| panic!("no cell `{prefix}`"))
}

#[test]
fn render_tells_chunks_and_directions_apart() {
    let dir = scratch("render-shades");
    let (code, _, err) = pipeweave(
        &dir,
        &[
            "render",
            "zb-v",
            "dualpipe",
            "interleaved-1f1b",
            "-v",
            "4",
            "-p",
            "4",
            "-m",
            "8",
            "--svg",
            "shades.svg",
        ],
    );
    assert_eq!((code, err.as_str()), (0, ""));
    let svg = read(&dir.join("shades.svg"));
    let all = cells(&svg);
    // ZB-V's rank 0 hosts stages 0 and 7: the two forwards of micro-batch 0 are two shades of
    // the forward's colour.
    let chunk0 = fill_of(&all, "rank 0: 0F0: forward (F) of stage 0 (chunk 0)");
    let chunk1 = fill_of(&all, "rank 0: 7F0: forward (F) of stage 7 (chunk 1)");
    assert_ne!(chunk0, chunk1);
    // DualPipe's second direction is the dark shade, hatched; interleaved 1F1B's four chunks
    // alternate the two shades.
    let down = fill_of(&all, "rank 0: 0F0:");
    assert_eq!(down, chunk0);
    let up = fill_of(
        &all,
        "rank 0: 7F4: forward (F) of stage 7 for micro-batch 4",
    );
    assert_eq!(up, chunk1);
    let loops: Vec<&str> = (0..4)
        .map(|k| {
            let stage = 4 * k;
            fill_of(
                &all,
                &format!("rank 0: {stage}F0: forward (F) of stage {stage} (chunk {k})"),
            )
        })
        .collect();
    assert_eq!(loops, [chunk0, chunk1, chunk0, chunk1]);
    for says in [
        "chunk 0 (light)",
        "chunk 1 (dark)",
        "pipeline 0 (light)",
        "pipeline 1 (dark, hatched)",
        "chunks 0, 2, … (light)",
        "chunks 1, 3, … (dark)",
    ] {
        assert!(svg.contains(&format!(">{says}</text>")), "legend: {says}");
    }
}

#[test]
fn dense_timelines_draw_bands_and_a_window_draws_cells() {
    let dir = scratch("render-dense");
    let args = [
        "render",
        "1f1b",
        "-p",
        "16",
        "-m",
        "120",
        "--comms",
        "--svg",
        "dense.svg",
    ];
    let (code, _, err) = pipeweave(&dir, &args);
    assert_eq!((code, err.as_str()), (0, ""));
    let svg = read(&dir.join("dense.svg"));
    assert_eq!(count(&svg, "svg"), 1);
    // Too dense to label: bands, no cells, no labels. Each rank's warm-up forwards run back to
    // back, so at least the 120 of them merge.
    assert_eq!(svg.matches(r#"<g class="cell">"#).count(), 0);
    assert!(!svg.contains(r#"text-anchor="middle" dominant-baseline="central""#));
    let bands = svg.matches(r#"<g class="band">"#).count();
    assert!(bands > 16 && bands <= 16 * 240 - 120, "{bands} bands");
    assert!(svg.contains(">band: a run of cells of one look (too dense to label)</text>"));
    // The lanes show how densely sends fill them (these take no time, yet show), not ticks.
    assert_eq!(svg.matches(r#"class="comm""#).count(), 0);
    assert!(svg.matches(r#"class="comm-busy""#).count() > 16);
    let (code, _, _) = pipeweave(&dir, &args);
    assert_eq!(code, 0);
    assert_eq!(svg, read(&dir.join("dense.svg")), "render is deterministic");

    // A window of 40 units: cells and labels again, all inside the plot.
    let (code, _, err) = pipeweave(
        &dir,
        &[
            "render",
            "1f1b",
            "-p",
            "16",
            "-m",
            "120",
            "--from",
            "100",
            "--to",
            "140",
            "--svg",
            "window.svg",
        ],
    );
    assert_eq!((code, err.as_str()), (0, ""));
    let svg = read(&dir.join("window.svg"));
    assert_eq!(svg.matches(r#"<g class="band">"#).count(), 0);
    // 16 ranks in 1F1B's steady state: a forward and a backward every 3 units, about 27 cells
    // a rank, the first and the last of a row cut by the window.
    let shown = cells(&svg).len();
    assert!((16 * 26..=16 * 30).contains(&shown), "{shown} cells");
    assert!(svg.contains(r#"text-anchor="middle" dominant-baseline="central""#));
    assert!(svg.contains(">time (units), from 100 to 140</text>"));
    let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
    for rect in doc.descendants().filter(|n| {
        n.has_tag_name("rect") && n.parent().and_then(|p| p.attribute("class")) == Some("cell")
    }) {
        let x: f64 = rect.attribute("x").and_then(|v| v.parse().ok()).expect("x");
        let w: f64 = rect
            .attribute("width")
            .and_then(|v| v.parse().ok())
            .expect("width");
        assert!(x >= 66.0 && x + w <= 66.0 + 900.0 + 0.01, "{x} + {w}");
    }
}

#[test]
fn window_errors_exit_2() {
    let dir = scratch("render-window");
    for (args, says) in [
        (
            &[
                "render", "1f1b", "-p", "2", "-m", "2", "--from", "3", "--to", "3",
            ][..],
            "--from 3 --to 3: the window must end after it starts",
        ),
        (
            &["render", "1f1b", "-p", "2", "-m", "2", "--from", "9"][..],
            "--from 9: the step ends at 9",
        ),
        (
            &[
                "render", "1f1b", "gpipe", "-p", "2", "-m", "2", "--from", "40",
            ][..],
            "--from 40: the longest step ends at 9",
        ),
        (
            &["render", "1f1b", "-p", "2", "-m", "2", "--from=-1"][..],
            "is not a time",
        ),
        (
            &["report", "1f1b", "-p", "2", "-m", "2", "--to", "nan"][..],
            "is not a time",
        ),
    ] {
        let mut args = args.to_vec();
        args.extend([if args[0] == "report" { "-o" } else { "--svg" }, "x.out"]);
        let (code, _, err) = pipeweave(&dir, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!dir.join("x.out").exists());
    }
}
