use crate::count;
use pipeweave_eval::{Metric, SpecRule, Sweep, SweepPoint, SweepSeries, TimeUnit, Value};
use pipeweave_report::{sweep_csv, sweep_json, sweep_svg, sweep_text, sweep_title};

/// The published bubble of 1F1B, (P−1)/(M+P−1), and DualPipe's requirement M ≥ 2P, even M.
fn example() -> Sweep {
    let p = 4u32;
    let xs = [4u32, 6, 8, 16, 32];
    let one_f_one_b = xs
        .iter()
        .map(|&m| SweepPoint {
            x: Value::Int(i64::from(m)),
            value: Ok(f64::from(p - 1) / f64::from(m + p - 1)),
        })
        .collect();
    let dual = xs
        .iter()
        .map(|&m| SweepPoint {
            x: Value::Int(i64::from(m)),
            value: if m < 2 * p {
                Err(format!("dualpipe needs M ≥ 2P = {}, got {m}", 2 * p))
            } else {
                Ok(0.5 / f64::from(m))
            },
        })
        .collect();
    Sweep {
        parameter: "microbatches".into(),
        metric: Metric::Bubble,
        unit: TimeUnit::Units,
        spec: None,
        rule: None,
        ranks: Some(p),
        microbatches: None,
        series: vec![
            SweepSeries {
                schedule: "1f1b".into(),
                points: one_f_one_b,
            },
            SweepSeries {
                schedule: "dual<pipe>".into(),
                points: dual,
            },
        ],
    }
}

#[test]
fn table() {
    insta::assert_snapshot!(sweep_text(&example()));
}

#[test]
fn csv_and_json() {
    insta::assert_snapshot!("csv", sweep_csv(&example()));
    let json = sweep_json(&example());
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(
        v["series"][1]["points"][0]["value"],
        serde_json::Value::Null
    );
    insta::assert_snapshot!("json", json);
}

#[test]
fn chart() {
    let svg = sweep_svg(&example());
    assert_eq!(svg, sweep_svg(&example()));
    // One line per schedule; DualPipe's first two points are a gap, so its line starts at M = 8.
    assert_eq!(count(&svg, "path"), 3);
    assert_eq!(count(&svg, "circle"), 5 + 3 + 2);
    assert!(svg.contains("dual&lt;pipe&gt; (2 gaps)"));
    insta::assert_snapshot!(svg);
}

#[test]
fn step_time_and_degenerate_inputs() {
    let mut s = example();
    s.metric = Metric::StepTime;
    s.unit = TimeUnit::Seconds;
    let svg = sweep_svg(&s);
    assert!(svg.contains("step time (ms)"));
    count(&svg, "svg");
    let empty = Sweep {
        series: vec![],
        ..example()
    };
    count(&sweep_svg(&empty), "svg");
    assert_eq!(
        sweep_text(&empty),
        "bubble fraction against microbatches: P = 4\nmicrobatches\n"
    );
    let single = Sweep {
        series: vec![SweepSeries {
            schedule: "x".into(),
            points: vec![SweepPoint {
                x: Value::Int(8),
                value: Err("no".into()),
            }],
        }],
        ..example()
    };
    let svg = sweep_svg(&single);
    assert!(svg.contains("x (no valid point)"));
    count(&svg, "svg");
}

/// Options and bools on one place each, in the order swept, labelled with their names.
#[test]
fn options_on_places_of_their_own() {
    let points = |vs: &[(&str, f64)]| {
        vs.iter()
            .map(|&(x, v)| SweepPoint {
                x: Value::Choice(x.into()),
                value: Ok(v),
            })
            .collect()
    };
    let s = Sweep {
        parameter: "order".into(),
        microbatches: Some(8),
        series: vec![SweepSeries {
            schedule: "mine".into(),
            points: points(&[("reverse", 0.25), ("forward", 0.125)]),
        }],
        ..example()
    };
    let svg = sweep_svg(&s);
    assert!(svg.contains(">reverse</text>") && svg.contains(">forward</text>"));
    // reverse at the left (place 0 of −0.5..1.5), forward at the right.
    assert!(svg.contains(r#"<path d="M230 36L550 196""#), "{svg}");
    insta::assert_snapshot!(sweep_text(&s), @r"
    bubble fraction against order: P = 4, M = 8
    order      mine
    reverse  25.00%
    forward  12.50%
    ");
}

/// The title names the spec, P, M and what the spec's rule keeps where the sweep changes it.
#[test]
fn titles_name_the_spec_p_m_and_the_rule() {
    let on_spec = |parameter: &str, rule: SpecRule, ranks, microbatches| {
        sweep_title(&Sweep {
            parameter: parameter.into(),
            spec: Some("ds".into()),
            rule: Some(rule),
            ranks,
            microbatches,
            ..example()
        })
    };
    let keep_dp = SpecRule {
        keep_dp: true,
        ..SpecRule::default()
    };
    let global = SpecRule {
        global_batch: true,
        ..SpecRule::default()
    };
    let strict = SpecRule {
        strict: true,
        ..SpecRule::default()
    };
    let titles = [
        on_spec("ranks", SpecRule::default(), None, Some(64)),
        on_spec("ranks", keep_dp, None, Some(64)),
        on_spec("ranks", global.clone(), None, None),
        on_spec("microbatches", global.clone(), Some(8), None),
        on_spec("lag", global, Some(8), Some(16)),
        on_spec("microbatches", strict, Some(16), None),
        sweep_title(&example()),
    ];
    insta::assert_snapshot!(titles.join("\n"), @r"
    bubble fraction against ranks: spec ds, M = 64, the GPUs kept (dp follows P)
    bubble fraction against ranks: spec ds, M = 64, dp kept (the GPUs follow P)
    bubble fraction against ranks: spec ds, the GPUs kept (dp follows P), M follows P (the global batch kept)
    bubble fraction against microbatches: spec ds, P = 8, the micro-batch size follows M (the global batch kept)
    bubble fraction against lag: spec ds, P = 8, M = 16, the global batch kept
    bubble fraction against microbatches: spec ds, P = 16, strictly the spec's shape
    bubble fraction against microbatches: P = 4
    ");
}
