use super::*;
use crate::wire::BuildRequest;

fn library(name: &str) -> String {
    pipeweave_dsl::library::get(name)
        .expect("a library schedule")
        .source
        .to_owned()
}

fn request(text: &str, p: u32, m: u32) -> BuildRequest {
    BuildRequest {
        plan: PlanControls {
            text: text.to_owned(),
            ranks: Some(p),
            microbatches: Some(m),
            ..PlanControls::default()
        },
        compare: Vec::new(),
    }
}

#[test]
fn a_schedule_is_built_drawn_and_summed_up() {
    let built = build("playground.weave", &request(&library("1f1b"), 4, 8));
    assert!(built.ok, "{}", built.rendered);
    assert!(built.diagnostics.is_empty());
    let svg = built.svg.expect("a timeline");
    assert!(svg.starts_with("<svg"), "{}", &svg[..40.min(svg.len())]);
    let summary = built.summary.expect("figures");
    // 1F1B at P = 4, M = 8 under unit costs (F = 1, B = 2): (M + P - 1)(F + B).
    assert_eq!(summary.makespan, "33");
    assert!(summary.shape.contains("4 ranks"), "{}", summary.shape);
    assert!(built.description.expect("a doc").starts_with("1F1B"));
}

#[test]
fn a_mistake_is_placed_at_its_span_in_utf16_units() {
    // Characters of two and four bytes before the mistake: the browser counts UTF-16 units.
    let text =
        "# ünïcödé 😀\nstages P\nplace loop\nprogram { repeat M { F B } repeat lag { B } }\n";
    let built = build("playground.weave", &request(text, 4, 8));
    assert!(!built.ok);
    let d = &built.diagnostics[0];
    assert_eq!(d.severity, "error");
    assert_eq!(d.message, "unknown name `lag`");
    let place = d.place.expect("placed in the editor's text");
    let at = text.find("lag").expect("lag");
    let units = text[..at].encode_utf16().count();
    assert_eq!((place.from, place.to), (units, units + 3));
    assert!(units < at, "the text has characters of several bytes");
    assert!(
        built.rendered.contains("unknown name `lag`"),
        "{}",
        built.rendered
    );
    assert!(built.svg.is_none());
}

#[test]
fn declared_parameters_are_typed_even_while_the_text_is_broken() {
    let text = "param lag: int in 0..=4 multiple of 2 = 2 \"how far\"\nparam order: choice(a, b)\n\
                param split: bool = true\nstages P\nprogram { F(";
    let built = build("playground.weave", &request(text, 4, 8));
    assert!(!built.ok);
    let shown: Vec<String> = built
        .params
        .iter()
        .map(|p| format!("{} {} {:?} {:?} {:?}", p.name, p.kind, p.min, p.max, p.step))
        .collect();
    assert_eq!(
        shown,
        [
            "lag int Some(0) Some(4) Some(2)",
            "order choice None None None",
            "split bool None None None",
        ]
    );
    assert_eq!(built.params[1].options, ["a", "b"]);
    assert_eq!(built.params[0].help.as_deref(), Some("how far"));
}

#[test]
fn settings_and_costs_reach_the_schedule() {
    let mut r = request(&library("interleaved-1f1b"), 4, 8);
    r.plan.stages_per_rank = Some(2);
    r.plan.costs = "F=1,B=3".into();
    let built = build("playground.weave", &r);
    assert!(built.ok, "{}", built.rendered);
    assert!(built.summary.expect("figures").shape.contains("8 stages"));
    r.plan.costs = "F=x".into();
    let refused = build("playground.weave", &r);
    assert!(
        refused.rendered.contains("`x` is not a duration"),
        "{}",
        refused.rendered
    );
    r.plan.costs.clear();
    r.plan.settings.insert("nothing".into(), "1".into());
    let refused = build("playground.weave", &r);
    assert!(!refused.ok);
    assert!(refused.rendered.contains("nothing"), "{}", refused.rendered);
}

#[test]
fn out_of_range_controls_are_refused_in_words() {
    let refused = build("playground.weave", &request(&library("1f1b"), 0, 8));
    assert!(refused.rendered.contains("P = 0"), "{}", refused.rendered);
    let refused = build("playground.weave", &request(&library("1f1b"), 70_000, 8));
    assert!(refused.rendered.contains("65536"), "{}", refused.rendered);
    let mut r = request(&library("1f1b"), 4, 8);
    r.plan.spec = "../specs/mine.toml".into();
    let refused = build("playground.weave", &r);
    assert!(
        refused.rendered.contains("shipped specs"),
        "{}",
        refused.rendered
    );
}

#[test]
fn the_plan_is_compared_with_library_schedules() {
    let mut r = request(&library("1f1b"), 4, 8);
    r.compare = vec!["zb-h1".into(), "gpipe".into()];
    let built = build("mine.weave", &r);
    assert!(built.ok, "{}", built.rendered);
    assert!(!built.comparison.is_empty(), "{:?}", built.comparison_notes);
    let first = &built.comparison[0];
    let names: Vec<&str> = first.rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["mine.weave", "zb-h1", "gpipe"], "{first:?}");
    r.compare = vec!["/etc/passwd".into()];
    let built = build("mine.weave", &r);
    assert!(built.comparison.is_empty());
    assert!(built.comparison_notes[0].contains("no library schedule"));
}

#[test]
fn a_runaway_schedule_stops_at_the_languages_budget() {
    let text = "stages P\nprogram { repeat 1000000000 { repeat 1000000000 { } } }\n";
    let built = build("playground.weave", &request(text, 2, 2));
    assert!(!built.ok);
    assert!(
        built.diagnostics[0]
            .message
            .contains("runs more than 67108864 steps"),
        "{:?}",
        built.diagnostics
    );
    assert!(built.diagnostics[0].place.is_some());
    let huge = build(
        "playground.weave",
        &request(&library("1f1b"), 65_536, 1 << 24),
    );
    assert!(!huge.ok);
    assert!(
        huge.rendered.contains("more than the 67108864"),
        "{}",
        huge.rendered
    );
}

#[test]
fn an_export_is_the_command_lines_bytes() {
    let text = library("zb-h1");
    let controls = request(&text, 4, 8).plan;
    for (id, ..) in FORMATS {
        let file = export(
            "mine.weave",
            &ExportRequest {
                plan: controls.clone(),
                format: (*id).to_owned(),
            },
        )
        .expect("exported");
        // The application layer's export is what `pipeweave export` writes.
        let mut host = EditorHost::new("mine.weave", text.clone());
        let mut quiet = pipeweave_app::Quiet;
        let mut session = Session::new(&mut host, &mut quiet, FrontEnd::CommandLine, 50);
        let format = match *id {
            "pytorch" => ExportFormat::Pytorch,
            "pytorch-comms" => ExportFormat::PytorchComms,
            "json" => ExportFormat::Json,
            "actions" => ExportFormat::Actions,
            _ => ExportFormat::ChromeTrace,
        };
        let params = Params {
            ranks: Some(4),
            microbatches: Some(8),
            ..Params::default()
        };
        let expected = pipeweave_app::export(
            &mut session,
            "mine.weave",
            &params,
            &CostsArg::default(),
            format,
        )
        .and_then(|e| e.text())
        .expect("exported");
        assert_eq!(
            String::from_utf8(file.bytes).expect("text"),
            expected,
            "{id}"
        );
        assert!(
            file.file_name.starts_with(&format!("mine.{id}.")),
            "{}",
            file.file_name
        );
    }
    let refused = export(
        "mine.weave",
        &ExportRequest {
            plan: controls,
            format: "../../etc".into(),
        },
    )
    .expect_err("no such format");
    assert!(refused.contains("no export format"), "{refused}");
}

#[test]
fn utf16_offsets_count_what_the_browser_counts() {
    let text = "aé😀b";
    let map = utf16_offsets(text, &[0, 1, 3, 7, 8, 99]);
    assert_eq!(map[&0], 0);
    assert_eq!(map[&1], 1);
    assert_eq!(map[&3], 2);
    assert_eq!(map[&7], 4);
    assert_eq!(map[&8], 5);
    assert_eq!(map[&99], 5);
}
