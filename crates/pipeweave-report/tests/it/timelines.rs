use crate::{count, dualpipe, library};
use pipeweave_report::{TimeUnit, TimelineChart, timelines_svg, transfers};
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
    // 4 ranks × 16 actions, one group per cell.
    assert_eq!(count(&svg, "g") - legend_items(&svg), 64);
    insta::assert_snapshot!(svg);
}

#[test]
fn dualpipe_p4_m8() {
    let plan = dualpipe(4, 8);
    let svg = one("dualpipe", &plan, false);
    assert!(svg.contains("pipeline 1 (dark, hatched)"));
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
