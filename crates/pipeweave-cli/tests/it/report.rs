//! `report` driven as a user would: the page written, then opened in headless Chromium (see
//! `browser.rs`): its DOM, a screenshot, its layout in a window 1,280 pixels wide and its zoom
//! control, with no console message allowed.

use crate::browser::{Browser, console_messages, headless};
use crate::draw::{count, pipeweave, read, scratch};
use serde_json::Value;

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
            "--window-size=1280,2600".into(),
        ],
    );
    assert_eq!(console_messages(&stderr), Vec::<&str>::new());
    let png = std::fs::read(&shot).expect("the screenshot was written");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let width = u32::from_be_bytes([png[16], png[17], png[18], png[19]]);
    let height = u32::from_be_bytes([png[20], png[21], png[22], png[23]]);
    assert_eq!((width, height), (1280, 2600));
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
    // And the DevTools protocol sees both too.
    let messages = Browser::open(&page, &dir.join("profile-cdp"), 800, 600).close();
    assert!(
        messages.iter().any(|m| m.contains("ReferenceError")),
        "{messages:#?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("example.invalid")),
        "{messages:#?}"
    );
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

/// The geometry of the page's timelines in CSS pixels, as the browser laid them out.
const GEOMETRY: &str = r##"(() => {
  const fig = document.querySelector("#timelines figure");
  const scroll = fig.querySelector(".scroll");
  const svg = scroll.querySelector("svg");
  const axis = svg.querySelector(".axis");
  const ticks = axis.querySelectorAll(".tick");
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.right, r.top, r.bottom]; };
  axis.scrollIntoView({block: "center"});
  return {
    viewport: document.documentElement.clientWidth,
    height: document.documentElement.clientHeight,
    page: document.documentElement.scrollWidth,
    natural: svg.width.baseVal.value,
    drawn: svg.getBoundingClientRect().width,
    box: scroll.clientWidth,
    overflow: scroll.scrollWidth - scroll.clientWidth,
    line: box(axis.querySelector(":scope > line")),
    first: box(ticks[0]),
    last: box(ticks[ticks.length - 1]),
    ticks: ticks.length,
  };
})()"##;

fn number(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

/// Clicks the zoom control's label `label` (scrolled into view first).
fn zoom(browser: &mut Browser, label: &str) -> Value {
    let at = browser.eval(&format!(
        r#"(() => {{
          const l = document.querySelector('label[for="{label}"]');
          l.scrollIntoView({{block: "center"}});
          const r = l.getBoundingClientRect();
          return [r.left + r.width / 2, r.top + r.height / 2];
        }})()"#
    ));
    browser.click(number(&at[0]), number(&at[1]));
    browser.eval(GEOMETRY)
}

#[test]
fn report_timelines_fit_a_1280_pixel_window() {
    // Sixteen ranks and 120 micro-batches: a timeline twice as wide as the window, in bands.
    let dir = scratch("report-fit");
    let (code, _, err) = pipeweave(
        &dir,
        &[
            "report",
            "1f1b",
            "dualpipe",
            "-p",
            "16",
            "-m",
            "120",
            "--comms",
            "--over",
            "m=32,64",
            "-o",
            "wide.html",
        ],
    );
    assert_eq!((code, err.as_str()), (0, ""));
    let page = dir.join("wide.html");
    let html = read(&page);
    assert!(html.contains(r#"class="band""#), "drawn in bands");

    let mut browser = Browser::open(&page, &dir.join("profile"), 1280, 1000);
    let g = browser.eval(GEOMETRY);
    let viewport = number(&g["viewport"]);
    assert_eq!(viewport, 1280.0, "{g}");
    assert!(
        number(&g["natural"]) > 2000.0,
        "the timelines are wider than the page: {g}"
    );
    // Fitted: nothing to scroll, in the figure or the page.
    assert!(number(&g["drawn"]) <= number(&g["box"]) + 0.5, "{g}");
    assert_eq!(number(&g["overflow"]), 0.0, "{g}");
    assert!(number(&g["page"]) <= viewport, "{g}");
    // The whole time axis is in the window: its line, its first and its last tick.
    assert!(number(&g["ticks"]) >= 5.0, "{g}");
    assert!(number(&g["line"][0]) >= 0.0, "{g}");
    assert!(number(&g["line"][1]) <= viewport, "{g}");
    assert!(number(&g["first"][0]) >= 0.0, "{g}");
    assert!(number(&g["last"][1]) <= viewport, "{g}");
    assert!(number(&g["last"][0]) > number(&g["first"][1]), "{g}");
    assert!(number(&g["line"][2]) >= 0.0, "{g}");
    assert!(number(&g["last"][3]) <= number(&g["height"]), "{g}");

    // The zoom control, pressed with the mouse: twice the box's width, then the drawing's own
    // size, both scrolling inside the figure only.
    let twice = zoom(&mut browser, "zoom-1-2");
    let expected = 2.0 * number(&twice["box"]);
    assert!((number(&twice["drawn"]) - expected).abs() < 1.0, "{twice}");
    assert!(number(&twice["overflow"]) > 0.0, "{twice}");
    assert!(number(&twice["page"]) <= viewport, "{twice}");
    let own = zoom(&mut browser, "zoom-1-1");
    assert!(
        (number(&own["drawn"]) - number(&own["natural"])).abs() < 1.0,
        "{own}"
    );
    let fit = zoom(&mut browser, "zoom-1-fit");
    assert_eq!(number(&fit["overflow"]), 0.0, "{fit}");
    assert_eq!(browser.close(), Vec::<String>::new());
}

#[test]
fn report_timelines_in_a_window() {
    let dir = scratch("report-window");
    let (code, out, err) = pipeweave(
        &dir,
        &[
            "report", "1f1b", "zb-v", "-p", "4", "-m", "8", "--from", "10", "--to", "20", "--over",
            "m=8", "-o", "w.html",
        ],
    );
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out, "wrote w.html\n");
    let html = read(&dir.join("w.html"));
    assert!(html.contains(">time (units), from 10 to 20</text>"));
    assert!(html.contains(">chunk 1 (dark)</text>"), "zb-v's chunks");
    // The comparison still covers the whole step.
    assert!(
        html.contains("<td class=\"num\">33</td>"),
        "1F1B's makespan"
    );
}
