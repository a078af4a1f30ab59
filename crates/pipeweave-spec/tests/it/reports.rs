//! Reports of every shipped spec under 1F1B.

use crate::plans::one_f_one_b;
use pipeweave_diagnostics::FileId;
use pipeweave_spec::{Spec, evaluate, parse};
use std::path::Path;

pub fn load(name: &str) -> Spec {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../specs")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("shipped spec is readable");
    let (spec, diags) = parse(&text, FileId(0));
    assert!(diags.is_empty(), "{name}: {diags:?}");
    spec.expect("a spec without diagnostics")
}

#[test]
fn explore() {
    for name in [
        "unit.toml",
        "dense-70b-h100-pp8.toml",
        "llama3.1-405b-h100-pp16.toml",
        "gpt2-1.3b-p100-32.toml",
        "deepseek-v3-h800-pp16-ep64.toml",
    ] {
        let spec = load(name);
        let plan = one_f_one_b(spec.parallelism.pp, spec.training.microbatches);
        let (costs, _, report) = evaluate(&spec, &plan).expect("evaluates");
        println!("{report}");
        for p in &costs.parts {
            println!(
                "{:?} f {:.4} b {:.4} a2a {:.4} act {:.3e}",
                p.layers, p.f, p.b, p.all_to_all, p.activation_bytes
            );
        }
        println!(
            "total params {:.4e} active {:.4e}",
            pipeweave_spec::total_parameters(&spec),
            pipeweave_spec::active_parameters(&spec)
        );
    }
}
