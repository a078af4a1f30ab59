use crate::count;
use pipeweave_eval::{Metric, Sweep, SweepPoint, SweepSeries, TimeUnit};
use pipeweave_report::{sweep_csv, sweep_json, sweep_svg, sweep_text};

/// The published bubble of 1F1B, (P−1)/(M+P−1), and DualPipe's requirement M ≥ 2P, even M.
fn example() -> Sweep {
    let p = 4u32;
    let xs = [4u32, 6, 8, 16, 32];
    let one_f_one_b = xs
        .iter()
        .map(|&m| SweepPoint {
            x: m,
            value: Ok(f64::from(p - 1) / f64::from(m + p - 1)),
        })
        .collect();
    let dual = xs
        .iter()
        .map(|&m| SweepPoint {
            x: m,
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
        "bubble fraction against microbatches\nmicrobatches\n"
    );
    let single = Sweep {
        series: vec![SweepSeries {
            schedule: "x".into(),
            points: vec![SweepPoint {
                x: 8,
                value: Err("no".into()),
            }],
        }],
        ..example()
    };
    let svg = sweep_svg(&single);
    assert!(svg.contains("x (no valid point)"));
    count(&svg, "svg");
}
