//! Snapshots of every export format for a few small plans taken from the reference vectors.

use crate::common::{reference_plan, simulated_timing};
use pipeweave_export::{
    write_actions, write_chrome_trace, write_json, write_pytorch, write_pytorch_comms,
};

/// Small plans covering one pipeline, a V placement with W splits, overlapped pairs, and two pipelines.
const PLANS: [(&str, &str); 4] = [
    (
        "interleaved_v2_p2_m4",
        "torch/Interleaved1F1B_v2_p2_m4.actions",
    ),
    ("zbv_p2_m4", "torch/ZBVZeroBubble_v2_p2_m4.actions"),
    ("dualpipev_pp4_n8", "dualpipe/dualpipev_pp4_n8.actions"),
    ("chimera_d4_n4", "chimera/chimera_d4_n4_k2.actions"),
];

fn or_refusal(r: Result<String, pipeweave_diagnostics::Diagnostic>) -> String {
    match r {
        Ok(text) => text,
        Err(d) => format!(
            "refused: {}\n{}{}",
            d.message,
            d.notes
                .iter()
                .map(|n| format!("note: {n}\n"))
                .collect::<String>(),
            d.help.map(|h| format!("help: {h}\n")).unwrap_or_default()
        ),
    }
}

#[test]
fn every_format_of_small_plans() {
    for (name, path) in PLANS {
        let plan = reference_plan(path);
        let timing = simulated_timing(&plan);
        insta::assert_snapshot!(format!("{name}.actions"), write_actions(&plan));
        insta::assert_snapshot!(format!("{name}.pytorch"), or_refusal(write_pytorch(&plan)));
        insta::assert_snapshot!(
            format!("{name}.pytorch-comms"),
            or_refusal(write_pytorch_comms(&plan))
        );
        insta::assert_snapshot!(
            format!("{name}.json"),
            or_refusal(write_json(&plan, Some(&timing)))
        );
        insta::assert_snapshot!(
            format!("{name}.chrome-trace"),
            or_refusal(write_chrome_trace(&plan, &timing, 1000.0))
        );
    }
}

/// An evaluation plan (DualPipeV's forwards, DeepSeek's no-grad step) in every format: PyTorch's
/// loader refuses a schedule without backwards, so both CSVs say so and name the alternatives.
#[test]
fn every_format_of_an_evaluation_plan() {
    let training = reference_plan("dualpipe/dualpipev_pp4_n8.actions");
    let plan = pipeweave_check::validate(training.plan().forward_only()).expect("valid");
    let timing = simulated_timing(&plan);
    let name = "dualpipev_pp4_n8_forward_only";
    insta::assert_snapshot!(format!("{name}.actions"), write_actions(&plan));
    insta::assert_snapshot!(format!("{name}.pytorch"), or_refusal(write_pytorch(&plan)));
    insta::assert_snapshot!(
        format!("{name}.pytorch-comms"),
        or_refusal(write_pytorch_comms(&plan))
    );
    insta::assert_snapshot!(
        format!("{name}.json"),
        or_refusal(write_json(&plan, Some(&timing)))
    );
}

/// The trace is written by hand; every event must be exactly what serde_json writes for the same
/// values, also for times that are not whole numbers (the snapshots only have whole ones): each
/// line parses and serializes back to itself (key order is kept and floats read back exactly).
#[test]
fn trace_events_are_what_serde_json_writes() {
    for (name, path) in PLANS {
        let plan = reference_plan(path);
        let unit = simulated_timing(&plan);
        for (scale, offset, us_per_unit) in [
            (1.0, 0.0, 1000.0),
            (0.1234567, 0.3, 1e6 / 3.0),
            (1e-9, 1e-12, 1.0),
            (7.0 / 3.0, 0.0, 1e15),
            (1e12, 5.5, 1e6),
        ] {
            let mut timing = unit.clone();
            for t in timing.intervals.iter_mut().flatten() {
                t.start = t.start * scale + offset;
                t.end = t.end * scale + offset;
            }
            timing.makespan = timing.makespan * scale + offset;
            let text = write_chrome_trace(&plan, &timing, us_per_unit).expect("writes");
            let body = text
                .strip_prefix("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n")
                .and_then(|t| t.strip_suffix("\n]}\n"))
                .expect("header and footer");
            for line in body.split(",\n") {
                let value: serde_json::Value = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("{name} ×{scale}: {e} in {line}"));
                let again = serde_json::to_string(&value).expect("serializes");
                assert_eq!(again, line, "{name} ×{scale}");
            }
        }
    }
}
