//! The split exports: torchtitan 0.3.0's `ParallelismConfig` fragment and Megatron-Core's
//! `pipeline_model_parallel_layout`, pinned as snapshots, and the JSON plan's `parts[q].layers`.

use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::FileId;
use pipeweave_export::{Document, json_text, megatron_layout, read_json, torchtitan_fragment};

fn library(name: &str, p: u32, m: u32, v: Option<u32>) -> ValidPlan {
    let entry = pipeweave_dsl::library::get(name).expect("a library schedule");
    let mut args = pipeweave_dsl::Args::new(p, m);
    if let Some(v) = v {
        args = args.with("v", i64::from(v));
    }
    let compiled = pipeweave_dsl::compile(FileId(0), entry.source, &args).expect("compiles");
    pipeweave_check::validate(compiled.plan).expect("valid")
}

#[test]
fn torchtitan_fragment_of_an_uneven_split() {
    let plan = library("1f1b", 4, 8, None);
    let text = torchtitan_fragment(&plan, &[1, 3, 3, 1], 0).expect("exports");
    insta::assert_snapshot!("torchtitan_uneven", text.as_str());
}

#[test]
fn torchtitan_says_layers_per_stage_where_its_own_split_is_the_same() {
    // Llama 3's embedding-only and head-only chunks: torchtitan's default first and last stages,
    // one layer less each, with one layer per stage
    let plan = library("interleaved-1f1b", 2, 4, Some(2));
    let text = torchtitan_fragment(&plan, &[0, 1, 1, 0], 0).expect("exports");
    assert!(
        text.as_str()
            .contains("pipeline_parallel_layers_per_stage=1,")
    );
    assert!(!text.as_str().contains("less_layers"));
    insta::assert_snapshot!("torchtitan_llama3_chunks", text.as_str());
    // 2, 3, 3, 2 is not torchtitan's with any count: only the module names are written
    let plan = library("1f1b", 4, 8, None);
    let uneven = torchtitan_fragment(&plan, &[2, 3, 3, 2], 0).expect("exports");
    assert!(
        uneven
            .as_str()
            .contains("pipeline_parallel_layers_per_stage=3,")
    );
    let odd = torchtitan_fragment(&plan, &[4, 1, 1, 4], 0).expect("exports");
    assert!(!odd.as_str().contains("pipeline_parallel_layers_per_stage"));
}

#[test]
fn megatron_layouts() {
    let plan = library("interleaved-1f1b", 4, 8, Some(2));
    let layout = megatron_layout(&plan, &[2, 4, 4, 4, 4, 4, 4, 2], 0).expect("exports");
    insta::assert_snapshot!("megatron_interleaved", layout.as_str());
    let llama = library("interleaved-1f1b", 4, 8, Some(2));
    let chunks = megatron_layout(&llama, &[0, 1, 1, 1, 1, 1, 1, 0], 0).expect("exports");
    assert_eq!(chunks.as_str(), "E|(t|)*6L\n");
    let mtp = megatron_layout(&library("1f1b", 4, 8, None), &[3, 4, 4, 2], 1).expect("exports");
    assert_eq!(mtp.as_str(), "Et*3|(t*4|)*2t*2mL\n");
}

#[test]
fn megatron_refuses_a_v() {
    let plan = library("zb-v", 2, 4, None);
    let err = megatron_layout(&plan, &[1, 1, 1, 1], 0).expect_err("a V");
    assert!(err.message.contains("in a V"), "{}", err.message);
    let err = torchtitan_fragment(&plan, &[1, 1], 0).expect_err("wrong length");
    assert!(err.message.contains("2 parts"), "{}", err.message);
}

#[test]
fn the_json_plan_carries_its_split_and_reads_it_back() {
    let plan = library("1f1b", 4, 8, None).with_split(Some(vec![1, 3, 3, 1]));
    let text = json_text(&plan, None).expect("writes").to_text();
    assert!(text.contains("\"layers\":[1,4]"), "{text}");
    let back = read_json(&text, FileId(0)).expect("reads");
    assert_eq!(back.plan.split(), Some(&[1, 3, 3, 1][..]));
    // an old plan without layers still loads, with no split
    let old = json_text(&library("1f1b", 4, 8, None), None)
        .expect("writes")
        .to_text();
    assert!(!old.contains("layers"));
    assert_eq!(
        read_json(&old, FileId(0)).expect("reads").plan.split(),
        None
    );
    // parts that do not follow one another are refused where they are
    let gap = text.replace("\"layers\":[1,4]", "\"layers\":[2,4]");
    let err = read_json(&gap, FileId(0)).expect_err("a gap");
    assert!(
        err.iter()
            .any(|d| d.message.contains("part 1 holds layers [2, 4)")),
        "{err:?}"
    );
}

#[test]
fn the_json_plan_carries_each_parts_recomputation() {
    let names = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let plan = library("1f1b", 4, 8, None)
        .with_split(Some(vec![1, 3, 3, 1]))
        .with_recompute(Some(names(&["full", "selective", "none", "none"])));
    let text = json_text(&plan, None).expect("writes").to_text();
    assert!(text.contains("\"recompute\":\"selective\""), "{text}");
    let back = read_json(&text, FileId(0)).expect("reads");
    assert_eq!(
        back.plan.recompute(),
        Some(&names(&["full", "selective", "none", "none"])[..])
    );
    // an unknown setting, and a part without one while others have, are refused where they are
    let bad = text.replacen("\"recompute\":\"selective\"", "\"recompute\":\"half\"", 1);
    let err = read_json(&bad, FileId(0)).expect_err("an unknown setting");
    assert!(
        err.iter().any(|d| d
            .message
            .contains("part 1's recompute is `half`; expected `none`, `selective` or `full`")),
        "{err:?}"
    );
    let missing = text.replacen(",\"recompute\":\"full\"", "", 1);
    let err = read_json(&missing, FileId(0)).expect_err("a part without one");
    assert!(
        err.iter().any(|d| d
            .message
            .contains("part 0 has no `recompute` while others have")),
        "{err:?}"
    );
}
