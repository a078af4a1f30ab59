//! Names, reasons and captions with control characters (a plan file's path can hold any, and
//! `ESC [2J` clears the screen): no view writes one, except the line ends and tabs of its own
//! layout; the JSON keeps the text, escaped.

use crate::library;
use pipeweave_eval::{
    Comparison, Metric, Simulation, Sweep, SweepPoint, SweepSeries, TimeUnit, Value,
};
use pipeweave_report::{
    Block, HtmlReport, Section, TimelineChart, compare_csv, compare_json, compare_markdown,
    compare_text, html_page, simulation_json, simulation_text, sweep_csv, sweep_json, sweep_svg,
    sweep_text, timelines_svg,
};
use pipeweave_sim::{UnitCosts, simulate};

const NAME: &str = "clear\u{1b}[2J\u{7}\u{9b}31m\r\tname\n";

/// The control characters of `view` other than line ends and tabs.
fn controls(view: &str) -> Vec<char> {
    view.chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
        .collect()
}

fn spec() -> pipeweave_spec::Spec {
    let shipped = pipeweave_spec::shipped_spec("unit").expect("shipped spec");
    let (spec, _) = pipeweave_spec::parse(shipped.source, pipeweave_diagnostics::FileId(0));
    spec.expect("parses")
}

#[test]
fn no_view_writes_a_control_character() {
    let spec = spec();
    let plan = library("1f1b", 4, 8);
    let mut c = Comparison::new(&spec, false, 4, 8, true);
    c.push(&spec, NAME, NAME, Ok(&plan));
    c.push(&spec, NAME, "", Err(NAME.to_owned()));
    let sweep = Sweep {
        parameter: NAME.into(),
        metric: Metric::Bubble,
        unit: TimeUnit::Units,
        spec: None,
        rule: None,
        ranks: Some(4),
        microbatches: None,
        series: vec![SweepSeries {
            schedule: NAME.into(),
            points: vec![
                SweepPoint {
                    x: Value::Int(8),
                    value: Ok(0.25),
                },
                SweepPoint {
                    x: Value::Int(2),
                    value: Err(NAME.into()),
                },
            ],
        }],
    };
    let timeline = simulate(&plan, &UnitCosts).expect("simulates");
    let sim = Simulation::new(NAME, &plan, &timeline, None);
    let chart = TimelineChart {
        title: NAME.into(),
        plan: &plan,
        timeline: &timeline,
        transfers: None,
    };
    let page = HtmlReport {
        title: NAME.into(),
        intro: vec![NAME.into()],
        sections: vec![Section {
            id: NAME.into(),
            heading: NAME.into(),
            blocks: vec![
                Block::Table {
                    caption: Some(NAME.into()),
                    header: vec![NAME.into()],
                    rows: vec![vec![NAME.into()]],
                },
                Block::List(vec![NAME.into()]),
                Block::Pre(NAME.into()),
                Block::Paragraph(NAME.into()),
            ],
        }],
        footer: NAME.into(),
    };
    let views = [
        ("compare text", compare_text(&c)),
        ("compare markdown", compare_markdown(&c)),
        ("compare csv", compare_csv(&c)),
        ("sweep text", sweep_text(&sweep)),
        ("sweep csv", sweep_csv(&sweep)),
        ("sweep svg", sweep_svg(&sweep)),
        ("simulate text", simulation_text(&sim)),
        (
            "timelines svg",
            timelines_svg(&[chart], TimeUnit::Units, "t"),
        ),
        ("html", html_page(&page)),
    ];
    for (what, view) in &views {
        assert_eq!(controls(view), [], "{what}: {view}");
        assert!(view.contains("clear␛[2J␇"), "{what}: {view}");
    }
    // A CSV record is one line: the name's line end is drawn, not written.
    let csv = &views[2].1;
    assert_eq!(csv.lines().count(), 3, "{csv}");
    for (what, json) in [
        ("compare json", compare_json(&c)),
        ("sweep json", sweep_json(&sweep)),
        ("simulate json", simulation_json(&sim)),
    ] {
        assert_eq!(controls(&json), [], "{what}: {json}");
        let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        assert!(
            json.contains("clear\\u001b[2J\\u0007\\u009b31m"),
            "{what}: {json}"
        );
        assert!(v.to_string().contains("clear\\u001b[2J"), "{what}");
    }
}
