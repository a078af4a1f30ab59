//! `render`, `sweep` and `report` driven as a user would: files written, tables printed, exit
//! codes, and the HTML report opened in headless Chromium.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A fresh folder for one test's files, under Cargo's per-target temporary directory.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("draw")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// Runs `pipeweave` in `dir` (so output names files relative to it): (exit code, stdout, stderr).
fn pipeweave(dir: &Path, args: &[&str]) -> (i32, String, String) {
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

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Parses `text` as XML (SVG, or the report page without its doctype) and counts elements by name.
fn count(text: &str, name: &str) -> usize {
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
    bubble fraction against microbatches
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
            "cannot sweep `layers`",
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

/// The Chromium binary: `PIPEWEAVE_CHROMIUM`, else `chromium` (Debian's package) or
/// `chromium-browser` on the PATH.
fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("PIPEWEAVE_CHROMIUM") {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "the report's browser test needs headless Chromium and none is on the PATH: \
         install it with `apt-get update && apt-get install -y chromium` (CI's .ci/run does), \
         or point PIPEWEAVE_CHROMIUM at a Chromium binary"
    );
}

/// Runs headless Chromium on `page` with `args`, in a fresh profile, with no network and a
/// generous limit so a wedged browser fails the test instead of hanging it: (stdout, stderr).
fn headless(page: &Path, profile: &Path, args: &[String]) -> (String, String) {
    let _ = std::fs::remove_dir_all(profile);
    let out_path = profile.with_extension("out");
    let err_path = profile.with_extension("err");
    let out = std::fs::File::create(&out_path).expect("stdout file");
    let err = std::fs::File::create(&err_path).expect("stderr file");
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("chromium starts");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("chromium runs") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = read(&err_path);
    assert!(status.success(), "chromium failed ({status}):\n{stderr}");
    (read(&out_path), stderr)
}

/// The console messages Chromium logged for the page (errors, CSP violations, script output):
/// the page has no script, so any is a fault.
fn console_messages(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .collect()
}

#[test]
fn report_renders_in_headless_chromium() {
    let dir = scratch("report");
    let (code, out, err) = pipeweave(
        &dir,
        &[
            "report",
            "1f1b",
            "dualpipe",
            "zb-h1",
            "chimera",
            "-p",
            "4",
            "-m",
            "8",
            "-o",
            "report.html",
        ],
    );
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out, "wrote report.html\n");
    let page = dir.join("report.html");
    let html = read(&page);
    assert_eq!(count(&html, "svg"), 2, "timelines and sweep chart");
    for forbidden in ["<script", "<link", "src=", "@import", "url(http"] {
        assert!(
            !html.contains(forbidden),
            "the page must not load anything: {forbidden}"
        );
    }

    // The DOM as Chromium built it: the tables and both figures with their content.
    let (dom, stderr) = headless(&page, &dir.join("profile-dom"), &["--dump-dom".into()]);
    assert_eq!(console_messages(&stderr), Vec::<&str>::new());
    assert!(dom.contains("<h1>pipeweave report: 1f1b, dualpipe, zb-h1, chimera</h1>"));
    assert!(
        dom.matches("<table>").count() >= 2,
        "comparison and sweep tables"
    );
    assert_eq!(dom.matches("<svg ").count(), 2);
    assert_eq!(
        dom.matches(r#"<g class="cell">"#).count(),
        64 + 74 + 96 + 64
    );
    assert_eq!(dom.matches(r#"<g class="series""#).count(), 4);
    for name in ["1f1b", "dualpipe", "zb-h1", "chimera"] {
        assert!(
            dom.contains(&format!(r#"data-schedule="{name}""#)),
            "{name}"
        );
    }

    // A screenshot: a PNG of the requested size, drawn without console errors.
    let shot = dir.join("report.png");
    let (_, stderr) = headless(
        &page,
        &dir.join("profile-shot"),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,2600".into(),
        ],
    );
    assert_eq!(console_messages(&stderr), Vec::<&str>::new());
    let png = std::fs::read(&shot).expect("the screenshot was written");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let width = u32::from_be_bytes([png[16], png[17], png[18], png[19]]);
    let height = u32::from_be_bytes([png[20], png[21], png[22], png[23]]);
    assert_eq!((width, height), (1400, 2600));
    // A blank page compresses to a few kilobytes; the tables and figures make it far larger.
    assert!(png.len() > 100_000, "screenshot of {} bytes", png.len());
}

#[test]
fn console_errors_are_caught() {
    // The check above must see what this Chromium logs for a faulty page: a script error and a
    // blocked request.
    let dir = scratch("console");
    let page = dir.join("faulty.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" \
         content=\"default-src 'none'; script-src 'unsafe-inline'\"></head><body>\
         <img src=\"https://example.invalid/x.png\"><script>undefinedFunction();</script>\
         </body></html>",
    )
    .expect("page written");
    let (_, stderr) = headless(&page, &dir.join("profile"), &["--dump-dom".into()]);
    let messages = console_messages(&stderr);
    assert!(
        messages
            .iter()
            .any(|m| m.contains("Uncaught ReferenceError")),
        "{stderr}"
    );
    assert!(
        messages.iter().any(|m| m.contains("example.invalid")),
        "{stderr}"
    );
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
    chimera: makespan 27.411 s, bubble fraction 27.77%
    dualpipe: makespan 18.467 s, bubble fraction 11.81%
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
    step time against microbatches
    microbatches     1f1b  dualpipev
    16            5.543 s      - [1]
    32            8.586 s    7.335 s
    [1] dualpipev, microbatches = 16: DualPipeV needs at least 2P micro-batches (M >= 2P), got M = 16 for P = 16
    ");
}

#[test]
fn report_on_a_spec_holds_compare_tables() {
    let dir = scratch("report-spec");
    let (code, out, err) = pipeweave(
        &dir,
        &[
            "report",
            "chimera",
            "dualpipe",
            "--spec",
            "deepseek-v3-h800-pp16-ep64",
            "--over",
            "microbatches=32,64",
            "-o",
            "ds.html",
        ],
    );
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out, "wrote ds.html\n");
    let html = read(&dir.join("ds.html"));
    assert_eq!(
        count(&html, "table"),
        6,
        "figures, where the step goes, memory, bytes sent, traits, sweep"
    );
    assert!(html.contains("<caption>figures per step"));
    let (_, compare, _) = pipeweave(
        &dir,
        &[
            "compare",
            "chimera",
            "dualpipe",
            "--spec",
            "deepseek-v3-h800-pp16-ep64",
        ],
    );
    let dual = compare
        .lines()
        .find(|l| l.starts_with("dualpipe "))
        .and_then(|l| l.split_whitespace().nth(1).map(|t| format!("{t} s")))
        .expect("DualPipe's row");
    assert!(
        html.contains(&dual),
        "DualPipe's step time as compare shows it: {dual}"
    );
    assert!(html.contains("time (s)"));
}
