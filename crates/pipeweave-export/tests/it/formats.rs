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
