//! Loading shipped specs, the default spec, and checks of a spec against plans and schedules.

use crate::plans::one_f_one_b;
use codespan_reporting::files::SimpleFiles;
use pipeweave_diagnostics::{Diagnostic, FileId};
use pipeweave_spec::{DEFAULT_SPEC, MicrobatchRule, Spec, default_spec, parse};
use std::path::Path;

pub fn source(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../specs")
        .join(name);
    std::fs::read_to_string(&path).expect("shipped spec is readable")
}

pub fn load(name: &str) -> Spec {
    let (spec, diags) = parse(&source(name), FileId(0));
    assert!(diags.is_empty(), "{name}: {diags:?}");
    spec.expect("a spec without diagnostics")
}

/// Diagnostics as `line:column message (label)`, enough to pin where they point.
fn describe(src: &str, diags: &[Diagnostic]) -> String {
    let mut files = SimpleFiles::new();
    files.add("spec", src.to_string());
    diags
        .iter()
        .map(|d| {
            let at = d.span.as_ref().map_or("-".to_string(), |s| {
                let (l, c) = pipeweave_diagnostics::line_col(src, s.range.start);
                format!("{l}:{c}")
            });
            format!(
                "{at} {}{}\n",
                d.message,
                d.help
                    .as_ref()
                    .map(|h| format!(" (help: {h})"))
                    .unwrap_or_default()
            )
        })
        .collect()
}

#[test]
fn default_spec_is_the_dense_70b_and_parses_cleanly() {
    let (spec, diags) = parse(DEFAULT_SPEC, FileId(0));
    assert!(diags.is_empty(), "{diags:?}");
    let spec = spec.expect("default spec");
    assert_eq!(spec.name, "dense-70b-h100-pp8");
    assert_eq!(default_spec(), Some(spec));
}

#[test]
fn a_schedule_micro_batch_rule_points_at_training_microbatches() {
    let spec = load("unit.toml");
    let src = source("unit.toml");
    let fits = MicrobatchRule {
        schedule: "DualPipe".to_string(),
        min: 2 * spec.parallelism.pp,
        multiple_of: 2,
    };
    assert!(spec.check_microbatches(&fits).is_empty());
    let rule = MicrobatchRule {
        schedule: "a test schedule".to_string(),
        min: 12,
        multiple_of: 5,
    };
    let diags = spec.check_microbatches(&rule);
    insta::assert_snapshot!(describe(&src, &diags));
}

#[test]
fn a_plan_that_does_not_fit_the_spec_is_reported() {
    let spec = load("unit.toml");
    let src = source("unit.toml");
    let diags = spec.check_plan(&one_f_one_b(2, 3));
    insta::assert_snapshot!(describe(&src, &diags));
    assert!(spec.check_plan(&one_f_one_b(4, 8)).is_empty());
}

/// A plan of `ranks` ranks and one pipeline of `stages` stages placed in a loop, 8 micro-batches
/// and empty programs: the shape is all `check_plan` looks at.
fn shape(ranks: u32, stages: u32) -> pipeweave_plan::Plan {
    let placement = (0..stages).map(|q| q % ranks).collect();
    pipeweave_plan::Plan::single(ranks, placement, 8, vec![Vec::new(); ranks as usize])
        .expect("a plan's structure")
}

/// The hint names the stages per rank the plan has, never the spec's own value: a plan of other
/// ranks but the spec's stages per rank gets the ranks' problem alone.
#[test]
fn the_stages_per_rank_hint_names_a_value_the_spec_does_not_have() {
    let spec = load("unit.toml");
    let src = source("unit.toml");
    let cases = [(2, 2), (4, 8), (2, 4), (4, 6)];
    let text: String = cases
        .iter()
        .map(|&(p, s)| {
            format!(
                "P = {p}, {s} stages:\n{}",
                describe(&src, &spec.check_plan(&shape(p, s)))
            )
        })
        .collect();
    insta::assert_snapshot!(text);
    for ranks in 1..=8 {
        for stages in 1..=24 {
            for d in spec.check_plan(&shape(ranks, stages)) {
                let Some(help) = d.help else { continue };
                let v = help
                    .strip_prefix("set `parallelism.stages_per_rank` to ")
                    .and_then(|v| v.parse::<u32>().ok())
                    .unwrap_or_else(|| panic!("an unexpected help: {help}"));
                assert_ne!(
                    v, spec.parallelism.stages_per_rank,
                    "P = {ranks}, S = {stages}"
                );
                assert_eq!(v * ranks, stages, "P = {ranks}, S = {stages}");
            }
        }
    }
}

/// Hostile nesting is refused where the limit is crossed, before the TOML parser runs: a 1 MB
/// line of unclosed `[` took minutes (the parser's recovery is quadratic), and a dotted key of
/// 79 parts inside each of 79 inline tables nests 6,241 tables for a recursive drop. Run on a
/// 256 KiB thread, so that no recursion over the input can hide.
#[test]
fn deep_nesting_is_refused_at_the_limit() {
    let cases = [
        (format!("x = {}", "[".repeat(1_000_000)), 4 + 16, "arrays"),
        (
            format!(
                "x = {}1{}",
                format!("{{{} = ", vec!["a"; 79].join(".")).repeat(79),
                "}".repeat(79)
            ),
            4 + 1 + 2 * 16 - 1,
            "a key",
        ),
        (
            format!("[{}]\n", vec!["a"; 1_000_000].join(".")),
            1 + 2 * 16 - 1,
            "a key",
        ),
    ];
    for (source, at, start) in cases {
        let diags = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || parse(&source, FileId(0)).1)
            .expect("a thread starts")
            .join()
            .expect("no panic");
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert!(diags[0].message.starts_with(start), "{}", diags[0].message);
        assert_eq!(
            diags[0].span.as_ref().map(|s| s.range.clone()),
            Some(at..at + 1)
        );
    }
}

/// A leading byte-order mark is not part of the text (the command line drops it when it reads a
/// file; the reader accepts it too).
#[test]
fn a_byte_order_mark_is_accepted() {
    let with_mark = format!("\u{feff}{}", source("unit.toml"));
    let (spec, diags) = parse(&with_mark, FileId(0));
    assert_eq!(diags, []);
    assert_eq!(spec.map(|s| s.name), Some("unit".to_owned()));
}

#[test]
fn a_spec_without_an_attention_kernel_says_which_it_assumed() {
    // the unit spec names no kernel: the best its GPU runs is assumed, and said
    let unit = load("unit.toml");
    let assumed = unit.assumed();
    assert_eq!(assumed.len(), 1, "{assumed:?}");
    assert!(
        assumed[0].starts_with(&format!(
            "`training.attention` not given: `{}` assumed on the ",
            unit.training.attention.name()
        )),
        "{assumed:?}"
    );
    // on an A100 that is FlashAttention-2, wrong for a run from before 2022
    let a100 = source("unit.toml")
        .replace("gpu = \"unit\"", "gpu = \"a100-sxm4-80gb\"")
        .replace("[cluster]", "[cluster]\nnetwork = \"ib-hdr-200\"");
    let (spec, diags) = parse(&a100, FileId(0));
    assert!(diags.is_empty(), "{diags:?}");
    let assumed = spec.expect("parses").assumed();
    assert_eq!(
        assumed,
        vec![
            "`training.attention` not given: `flash2` assumed on the A100 SXM4 80GB (the newest kernel it runs; a run from before FlashAttention (2022) names its own)"
                .to_owned()
        ]
    );
    // a spec that names its kernel relies on no default
    let named = source("unit.toml").replace("[training]", "[training]\nattention = \"standard\"");
    let (spec, diags) = parse(&named, FileId(0));
    assert!(diags.is_empty(), "{diags:?}");
    assert!(spec.expect("parses").assumed().is_empty());
}

#[test]
fn the_framework_sets_the_defaults_of_its_documented_behaviour() {
    use pipeweave_spec::{Framework, Zero2Pipeline};
    let with = |lines: &str| {
        let text = source("unit.toml").replace("[training]", &format!("[training]\n{lines}"));
        let (spec, diags) = parse(&text, FileId(0));
        (spec, describe(&text, &diags))
    };
    // Megatron-LM, the default: buckets under the backward, sends beside the next action
    let (spec, diags) = with("");
    assert_eq!(diags, "");
    let t = spec.expect("parses").training;
    assert_eq!(t.framework, Framework::Megatron);
    assert!(t.overlap_grad_reduce && !t.p2p_blocking);
    assert_eq!(t.zero2_with_pipeline, Zero2Pipeline::Accumulate);
    // DeepSpeed's pipeline engine: blocking sends, ReduceGrads after the last backward, ZeRO-2
    // with a pipeline refused; a key the spec gives still wins
    let (spec, _) = with("framework = \"deepspeed\"");
    let t = spec.expect("parses").training;
    assert!(!t.overlap_grad_reduce && t.p2p_blocking);
    assert_eq!(t.zero2_with_pipeline, Zero2Pipeline::Refuse);
    let (spec, _) = with("framework = \"deepspeed\"\np2p_blocking = false");
    assert!(!spec.expect("parses").training.p2p_blocking);
    // torchtitan and PyTorch: as Megatron-LM for these keys
    for name in ["torchtitan", "pytorch"] {
        let (spec, _) = with(&format!("framework = \"{name}\""));
        let t = spec.expect("parses").training;
        assert!(t.overlap_grad_reduce && !t.p2p_blocking, "{name}");
    }
    // custom spells its behaviour out, each missing key an error at the framework
    let (spec, diags) = with("framework = \"custom\"\np2p_blocking = true");
    assert!(spec.is_none());
    assert!(
        diags.contains("`training.framework = \"custom\"` needs `training.overlap_grad_reduce`"),
        "{diags}"
    );
    assert!(!diags.contains("needs `training.p2p_blocking`"), "{diags}");
    let (spec, diags) =
        with("framework = \"custom\"\np2p_blocking = true\noverlap_grad_reduce = false");
    assert_eq!(diags, "");
    assert_eq!(spec.expect("parses").training.framework, Framework::Custom);
    // an unknown framework is named
    let (spec, diags) = with("framework = \"jax\"");
    assert!(spec.is_none());
    assert!(diags.contains("framework"), "{diags}");
}
