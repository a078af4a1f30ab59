use crate::{count, dualpipe, library};
use pipeweave_report::{
    SvgWindow, TimeUnit, TimelineChart, timelines_svg, timelines_svg_window, transfers,
};
use pipeweave_sim::{UniformCosts, UnitCosts, simulate};

fn one(name: &str, plan: &pipeweave_check::ValidPlan, comms: bool) -> String {
    let t = simulate(plan, &UnitCosts).expect("simulates");
    let chart = TimelineChart {
        title: name.into(),
        plan,
        timeline: &t,
        transfers: comms.then(|| transfers(plan, &t, &UnitCosts)),
    };
    timelines_svg(&[chart], TimeUnit::Units, "t")
}

#[test]
fn one_f_one_b_p4_m8() {
    let plan = library("1f1b", 4, 8);
    let svg = one("1f1b", &plan, false);
    // 4 ranks × 16 actions, one group per cell; one pipeline with one stage per rank, so one
    // shade and nothing in the legend about shades.
    assert_eq!(svg.matches(r#"<g class="cell">"#).count(), 64);
    assert!(!svg.contains("(chunk") && !svg.contains("(light)</text>"));
    insta::assert_snapshot!(svg);
}

#[test]
fn zb_v_p4_m8() {
    // A V: each rank's two stages are chunks 0 and 1, light and dark.
    let plan = library("zb-v", 4, 8);
    let svg = one("zb-v", &plan, false);
    assert_eq!(legend_items(&svg), 3 + 1 + 2);
    assert!(svg.contains(">chunk 0 (light)</text>"));
    assert!(svg.contains(">chunk 1 (dark)</text>"));
    insta::assert_snapshot!(svg);
}

#[test]
fn dualpipe_p4_m8() {
    let plan = dualpipe(4, 8);
    let svg = one("dualpipe", &plan, false);
    assert!(svg.contains(">pipeline 1 (dark, hatched)</text>"));
    assert!(svg.contains("overlapped F&amp;B"));
    insta::assert_snapshot!(svg);
}

fn legend_items(svg: &str) -> usize {
    svg.matches(r#"class="legend-item""#).count()
}

#[test]
fn stacked_with_comms_is_well_formed_and_deterministic() {
    let a = library("1f1b", 4, 8);
    let b = dualpipe(4, 8);
    let costs = UniformCosts {
        transfer: 0.25,
        ..UniformCosts::default()
    };
    let draw = || {
        let ta = simulate(&a, &costs).expect("simulates");
        let tb = simulate(&b, &costs).expect("simulates");
        let charts = [
            TimelineChart {
                title: "1f1b <p4>".into(),
                plan: &a,
                timeline: &ta,
                transfers: Some(transfers(&a, &ta, &costs)),
            },
            TimelineChart {
                title: "dualpipe & co".into(),
                plan: &b,
                timeline: &tb,
                transfers: Some(transfers(&b, &tb, &costs)),
            },
        ];
        timelines_svg(&charts, TimeUnit::Units, "both")
    };
    let first = draw();
    assert_eq!(first, draw());
    assert!(first.contains("1f1b &lt;p4&gt;"));
    assert!(first.contains("dualpipe &amp; co"));
    // 1F1B on 4 ranks sends 3 boundaries × 8 micro-batches × 2 directions.
    let ta = simulate(&a, &costs).expect("simulates");
    let sends = transfers(&a, &ta, &costs);
    assert_eq!(sends.len(), 48);
    assert!(sends.iter().all(|s| (s.end - s.start - 0.25).abs() < 1e-12));
    let comms = first.matches(r#"class="comm""#).count();
    let tb = simulate(&b, &costs).expect("simulates");
    assert_eq!(comms, 48 + transfers(&b, &tb, &costs).len());
    count(&first, "svg");
}

#[test]
fn sends_start_when_their_producer_ends() {
    let plan = library("1f1b", 2, 2);
    let t = simulate(&plan, &UnitCosts).expect("simulates");
    let sends = transfers(&plan, &t, &UnitCosts);
    let fwd: Vec<_> = sends
        .iter()
        .filter(|s| s.dir == pipeweave_plan::Dir::Fwd)
        .map(|s| (s.from_rank, s.to_rank, s.mb, s.start))
        .collect();
    assert_eq!(fwd, vec![(0, 1, 0, 1.0), (0, 1, 1, 2.0)]);
}

#[test]
fn seconds_axis_in_milliseconds() {
    let plan = library("gpipe", 2, 2);
    let costs = UniformCosts {
        stage: pipeweave_sim::StageCosts {
            f: 0.002,
            i: 0.002,
            w: 0.002,
            b: 0.004,
        },
        ..UniformCosts::default()
    };
    let t = simulate(&plan, &costs).expect("simulates");
    let svg = timelines_svg(
        &[TimelineChart {
            title: "gpipe".into(),
            plan: &plan,
            timeline: &t,
            transfers: None,
        }],
        TimeUnit::Seconds,
        "s",
    );
    assert!(svg.contains("time (ms)"));
    assert!(svg.contains("makespan 18.0 ms"));
    count(&svg, "svg");
}

#[test]
fn empty_input_is_still_an_svg() {
    let svg = timelines_svg(&[], TimeUnit::Units, "e");
    assert_eq!(count(&svg, "svg"), 1);
}

#[test]
fn a_window_clips_cells_and_lanes() {
    // 1F1B p2 m2 under unit costs: 9 units; the window 2.5..6.5 cuts cells at both ends.
    let plan = library("1f1b", 2, 2);
    let t = simulate(&plan, &UnitCosts).expect("simulates");
    let chart = TimelineChart {
        title: "1f1b".into(),
        plan: &plan,
        timeline: &t,
        transfers: Some(transfers(&plan, &t, &UnitCosts)),
    };
    let window = SvgWindow {
        from: Some(2.5),
        to: Some(6.5),
    };
    let svg = timelines_svg_window(std::slice::from_ref(&chart), TimeUnit::Units, "w", &window);
    count(&svg, "svg");
    assert!(svg.contains(">time (units), from 2.5 to 6.5</text>"));
    // 900 pixels for 4 units: every rectangle of the rows lies in x = 66..966.
    let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
    let rects: Vec<(f64, f64)> = doc
        .descendants()
        .filter(|n| {
            n.has_tag_name("rect")
                && n.ancestors()
                    .any(|a| matches!(a.attribute("class"), Some("cell" | "comm")))
                || n.attribute("class") == Some("comm")
        })
        .map(|r| {
            let v = |a| r.attribute(a).and_then(|v: &str| v.parse().ok()).expect(a);
            (v("x"), v("width"))
        })
        .collect();
    assert!(!rects.is_empty());
    for (x, w) in rects {
        assert!(x >= 66.0 && x + w <= 966.01, "{x} + {w}");
    }
    // Rank 0 runs F0 F1 in 0..2, B0 in 4..6 and B1 in 7..9; rank 1 F0 in 1..2, B0 in 2..4, F1
    // in 4..5 and B1 in 5..7. The window shows rank 0's B0, and rank 1's B0 and B1 cut.
    let titles: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("title"))
        .filter_map(|n| n.text())
        .filter(|t| t.starts_with("rank "))
        .collect();
    let shown = |cell: &str| titles.iter().any(|t| t.starts_with(cell));
    assert!(shown("rank 0: 0B0:") && shown("rank 1: 1B0:") && shown("rank 1: 1B1:"));
    assert!(!shown("rank 0: 0F1:") && !shown("rank 0: 0B1:") && !shown("rank 1: 1F0:"));
    // The whole step when the window holds nothing.
    let past = SvgWindow {
        from: Some(20.0),
        to: None,
    };
    assert_eq!(
        timelines_svg_window(std::slice::from_ref(&chart), TimeUnit::Units, "w", &past),
        timelines_svg(std::slice::from_ref(&chart), TimeUnit::Units, "w")
    );
}

#[test]
fn each_rank_row_names_the_layers_of_its_parts() {
    // a V of 4 ranks, 8 parts with an uneven split: rank 0 holds parts 0 and 7, the embedding
    // and the head; the tooltip lists every part with its recomputation where it recomputes
    let plan = library("zb-v", 4, 8)
        .with_split(Some(vec![0, 3, 3, 3, 3, 3, 3, 2]))
        .with_recompute(Some(
            [
                "full", "full", "none", "none", "none", "none", "none", "none",
            ]
            .map(str::to_owned)
            .to_vec(),
        ));
    let svg = one("zb-v", &plan, false);
    assert_eq!(svg.matches(r#"class="layers""#).count(), 4);
    assert!(svg.contains(
        "<title>rank 0 holds part 0: embedding, recompute full; part 7: layers 18–19 + head</title>2 parts, 2 layers + embedding + head"
    ));
    assert!(svg.contains(
        "<title>rank 1 holds part 1: layers 0–2, recompute full; part 6: layers 15–17</title>2 parts, 6 layers<"
    ));
    // a one-part rank says its layers in full
    let one_f_one_b = library("1f1b", 4, 8).with_split(Some(vec![1, 8, 8, 7]));
    let svg = one("1f1b", &one_f_one_b, false);
    assert!(svg.contains(">layer 0 + embedding<"));
    assert!(svg.contains(">layers 17–23 + head<"));
    // without a split the rows say nothing of layers
    assert!(!one("1f1b", &library("1f1b", 4, 8), false).contains(r#"class="layers""#));
    insta::assert_snapshot!(svg);
}
