//! Each command through the API: what both front ends get, in their own words.

use crate::host::{MemoryHost, run};
use pipeweave_app::{
    CompareRequest, CostsArg, ExportFormat, FrontEnd, PlacementArg, ShowWindow, SweepRequest,
    SynthesizeRequest,
};
use pipeweave_eval::{CostSource, Metric, SpecRule};
use pipeweave_source::{FailureKind, FolderFile, Params, Subject};

fn shape(p: u32, m: u32) -> Params {
    Params {
        ranks: Some(p),
        microbatches: Some(m),
        ..Params::default()
    }
}

fn names(c: &pipeweave_eval::Comparison) -> Vec<&str> {
    c.rows.iter().map(|r| r.schedule.as_str()).collect()
}

/// A library schedule and the plugin it says builds the same plans share one row, whether both
/// are named or the schedule's plan is already held (Python's `Plan.compare`).
#[test]
fn twins_share_a_row_from_either_front_end() {
    let mut host = MemoryHost::default();
    let request = CompareRequest {
        schedules: vec!["dualpipev".into(), "plugin:dualpipev".into(), "zb-v".into()],
        params: shape(4, 8),
        ..CompareRequest::default()
    };
    let (named, _) = run(&mut host, FrontEnd::CommandLine, |s| {
        pipeweave_app::compare(s, &request, None)
    });
    let named = named.expect("compares").value;
    assert_eq!(names(&named), ["dualpipev = plugin:dualpipev", "zb-v"]);
    assert!(
        named.rows[0]
            .notes
            .contains(&"both build this same plan".to_owned())
    );
    let (held, _) = run(&mut host, FrontEnd::Python, |s| {
        let loaded = pipeweave_app::validate(s, "dualpipev", &shape(4, 8))?;
        let others = CompareRequest {
            schedules: vec!["plugin:dualpipev".into(), "zb-v".into()],
            ..request.clone()
        };
        pipeweave_app::compare(s, &others, Some(loaded))
    });
    assert_eq!(held.expect("compares").value, named);
}

/// A comparison whose schedules all fail keeps its rows with the reasons, and says so.
#[test]
fn a_comparison_where_nothing_ran_is_shown_then_fails() {
    let mut host = MemoryHost::default();
    let request = CompareRequest {
        schedules: vec!["dualpipe".into()],
        params: shape(4, 7),
        ..CompareRequest::default()
    };
    let (c, _) = run(&mut host, FrontEnd::CommandLine, |s| {
        pipeweave_app::compare(s, &request, None)
    });
    let c = c.expect("a table");
    let reason = c.value.rows[0].outcome.as_ref().expect_err("no figures");
    assert!(reason.contains("even number of micro-batches"), "{reason}");
    let failure = c.failure.expect("nothing ran");
    assert_eq!(failure.reason(), "none of the schedules could be simulated");
}

/// A spec rule's flags without a spec are a usage error, named as each front end spells them.
#[test]
fn a_rule_without_a_spec_is_named_in_each_front_ends_words() {
    let costs = CostsArg {
        rule: SpecRule {
            keep_dp: true,
            ..SpecRule::default()
        },
        ..CostsArg::default()
    };
    let mut host = MemoryHost::default();
    for (front, words) in [
        (
            FrontEnd::CommandLine,
            "--keep-dp says how a spec meets the plans; give one with --spec",
        ),
        (
            FrontEnd::Python,
            "keep_dp says how a spec meets the plans; give one with spec=",
        ),
    ] {
        let (r, _) = run(&mut host, front, |s| {
            pipeweave_app::simulate(s, "1f1b", &shape(4, 8), &costs)
        });
        let failure = r.expect_err("no spec");
        assert_eq!(failure.kind, FailureKind::Usage);
        assert_eq!(failure.reason(), words);
    }
}

/// `synthesize` meets a spec by the one rule of every command (it took the default rule whatever
/// the flags said): strict refuses another shape, keeping the global batch moves M with P.
#[test]
fn synthesize_meets_a_spec_by_the_one_rule() {
    let mut host = MemoryHost::default();
    let at = |rule: SpecRule| SynthesizeRequest {
        ranks: Some(4),
        evaluations: 20,
        exact_nodes: 0,
        costs: CostsArg {
            spec: Some("dense-70b-h100-pp8".into()),
            rule,
            ..CostsArg::default()
        },
        ..SynthesizeRequest::default()
    };
    let (plain, told) = run(&mut host, FrontEnd::CommandLine, |s| {
        pipeweave_app::synthesize(s, &at(SpecRule::default()))
    });
    let plain = plain.expect("synthesizes");
    assert_eq!((plain.report.ranks, plain.report.microbatches), (4, 16));
    assert!(
        told.told
            .iter()
            .any(|t| t.contains("fitted to the loop placement"))
    );
    let strict = SpecRule {
        strict: true,
        ..SpecRule::default()
    };
    let (refused, _) = run(&mut host, FrontEnd::CommandLine, |s| {
        pipeweave_app::synthesize(s, &at(strict))
    });
    let refused = refused.expect_err("another shape");
    assert_eq!(refused.subject, Subject::Spec);
    assert!(
        refused.reason().contains("spec dense-70b-h100-pp8"),
        "{}",
        refused.reason()
    );
    let batch = SpecRule {
        global_batch: true,
        ..SpecRule::default()
    };
    let (kept, _) = run(&mut host, FrontEnd::CommandLine, |s| {
        pipeweave_app::synthesize(s, &at(batch.clone()))
    });
    // The spec's 8 ranks run 16 micro-batches; at 4 ranks the same global batch is 32 (dp doubles
    // with the GPUs kept, so each replica takes half the sequences: 8).
    let kept = kept.expect("synthesizes");
    let want = pipeweave_eval::microbatches_at(
        &pipeweave_spec::parse(
            pipeweave_spec::shipped_spec("dense-70b-h100-pp8")
                .unwrap()
                .source,
            Default::default(),
        )
        .0
        .unwrap(),
        4,
        &batch,
    )
    .unwrap();
    assert_eq!(kept.report.microbatches, want);
    assert_ne!(kept.report.microbatches, 16);
}

/// A spec file called `unit` is a spec: the report says where the costs come from.
#[test]
fn a_spec_named_unit_is_reported_as_a_spec() {
    let text = pipeweave_spec::shipped_spec("unit")
        .expect("shipped")
        .source;
    let mut host = MemoryHost::with(&[("unit", text)]);
    let request = SynthesizeRequest {
        ranks: Some(4),
        microbatches: Some(8),
        evaluations: 20,
        exact_nodes: 0,
        costs: CostsArg {
            spec: Some("unit".into()),
            ..CostsArg::default()
        },
        ..SynthesizeRequest::default()
    };
    let (found, _) = run(&mut host, FrontEnd::CommandLine, |s| {
        pipeweave_app::synthesize(s, &request)
    });
    let report = found.expect("synthesizes").report;
    assert_eq!(report.cost_source, CostSource::Spec);
    assert_eq!(report.time_unit, pipeweave_eval::TimeUnit::Seconds);
    let text = pipeweave_report::synthesis_text(&report);
    assert!(text.contains(", spec unit\n"), "{text}");
    assert!(!text.contains("unit costs"), "{text}");
}

/// `--memory-limit` has a range, and says so with the number as the user would read it.
#[test]
fn a_memory_limit_has_a_range() {
    let mut host = MemoryHost::default();
    let request = |gib: f64, spec: Option<&str>| SynthesizeRequest {
        ranks: Some(4),
        microbatches: Some(8),
        memory_limit_gib: Some(gib),
        costs: CostsArg {
            spec: spec.map(str::to_owned),
            ..CostsArg::default()
        },
        ..SynthesizeRequest::default()
    };
    for (gib, spec, words) in [
        (
            1e308,
            Some("unit"),
            "--memory-limit 1e308 is not a memory size in GiB above 0 and at most 1048576",
        ),
        (
            0.0,
            Some("unit"),
            "--memory-limit 0 is not a memory size in GiB above 0 and at most 1048576",
        ),
        (
            40.0,
            None,
            "--memory-limit is memory on a spec's GPUs; give one with --spec",
        ),
    ] {
        let (r, _) = run(&mut host, FrontEnd::CommandLine, |s| {
            pipeweave_app::synthesize(s, &request(gib, spec))
        });
        let failure = r.expect_err("refused");
        assert_eq!(failure.kind, FailureKind::Usage);
        assert_eq!(failure.reason(), words);
    }
    let mut v = request(1.0, None);
    v.memory_limit_gib = None;
    v.placement = PlacementArg::V;
    v.stages_per_rank = 2;
    let (r, _) = run(&mut host, FrontEnd::Python, |s| {
        pipeweave_app::synthesize(s, &v)
    });
    assert!(
        r.expect_err("v with a V")
            .reason()
            .starts_with("stages_per_rank=2 is for the loop placement")
    );
}

/// A sweep tells its progress after every point, through the session's events.
#[test]
fn a_sweep_tells_how_far_it_is() {
    let mut host = MemoryHost::default();
    let request = SweepRequest {
        schedules: vec!["1f1b".into(), "dualpipe".into()],
        params: Params {
            ranks: Some(4),
            ..Params::default()
        },
        costs: CostsArg::default(),
        over: pipeweave_app::parse_over("m=4..8:2").expect("reads"),
        metric: Metric::Bubble,
    };
    let (swept, heard) = run(&mut host, FrontEnd::CommandLine, |s| {
        pipeweave_app::sweep(s, &request)
    });
    let swept = swept.expect("sweeps");
    assert!(swept.failure.is_none());
    assert_eq!(heard.ticks.len(), 6);
    assert_eq!(heard.ticks.last(), Some(&(6, 6)));
    // DualPipe takes even M ≥ 2P only.
    assert!(swept.value.series[1].points[0].value.is_err());
}

/// `list`: twins name each other, and a folder file a library name takes first is unreached.
#[test]
fn the_listing_names_twins_and_unreached_files() {
    let gpipe = pipeweave_dsl::library::get("gpipe")
        .expect("shipped")
        .source;
    let mut host = MemoryHost::with(&[("mine/1f1b.weave", gpipe), ("mine/mine.weave", gpipe)]);
    host.folders = vec![
        FolderFile {
            name: "1f1b".into(),
            path: "mine/1f1b.weave".into(),
        },
        FolderFile {
            name: "mine".into(),
            path: "mine/mine.weave".into(),
        },
    ];
    let (listing, _) = run(&mut host, FrontEnd::CommandLine, pipeweave_app::list);
    let find = |name: &str| listing.schedules.iter().find(|s| s.name == name);
    assert_eq!(
        find("dualpipev").and_then(|s| s.same_plans_as.as_deref()),
        Some("plugin:dualpipev")
    );
    assert_eq!(find("mine").map(|s| s.source), Some("folder"));
    assert_eq!(listing.unreached.len(), 1);
    assert_eq!(listing.unreached[0].name, "1f1b");
}

/// An export that cannot hold the plan refuses when its document is made, before any output; a
/// trace is always of a simulated step.
#[test]
fn exports_refuse_before_any_output() {
    let mut host = MemoryHost::default();
    let (r, _) = run(&mut host, FrontEnd::CommandLine, |s| {
        let e = pipeweave_app::export(
            s,
            "dualpipe",
            &shape(4, 8),
            &CostsArg::default(),
            ExportFormat::Pytorch,
        )?;
        e.document().map(|_| ())
    });
    assert!(
        r.expect_err("two pipelines")
            .reason()
            .contains("cannot run a plan of 2 pipelines")
    );
    let (trace, _) = run(&mut host, FrontEnd::CommandLine, |s| {
        pipeweave_app::export(
            s,
            "1f1b",
            &shape(2, 2),
            &CostsArg::default(),
            ExportFormat::ChromeTrace,
        )?
        .text()
    });
    assert!(trace.expect("a trace").contains("traceEvents"));
}

/// `show` draws at most 512 ranks and says which it left out; a window past the plan is a usage
/// error.
#[test]
fn show_bounds_its_rows() {
    let mut host = MemoryHost::default();
    let window = ShowWindow {
        width: 60,
        ..ShowWindow::default()
    };
    let (text, heard) = run(&mut host, FrontEnd::CommandLine, |s| {
        pipeweave_app::show(s, "1f1b", &shape(600, 1), &CostsArg::default(), &window)
    });
    assert_eq!(
        text.expect("draws")
            .lines()
            .filter(|l| l.starts_with("rank"))
            .count(),
        512
    );
    assert!(
        heard
            .told
            .iter()
            .any(|t| t.contains("ranks 512 to 599 are not shown")),
        "{:?}",
        heard.told
    );
    let past = ShowWindow {
        ranks: Some(9..=9),
        ..window
    };
    let (r, _) = run(&mut host, FrontEnd::CommandLine, |s| {
        pipeweave_app::show(s, "1f1b", &shape(4, 8), &CostsArg::default(), &past)
    });
    assert_eq!(
        r.expect_err("no rank 9").reason(),
        "--rank-range 9..9: the plan has ranks 0 to 3"
    );
}

/// Under `--split auto` the synthesized plan carries the split (and each part's recomputation)
/// searched again for its own order, never slower than the one the placement's skeleton got.
#[test]
fn synthesize_searches_the_split_again_for_its_plan() {
    let mut host = MemoryHost::default();
    let at = |split: pipeweave_eval::Split| SynthesizeRequest {
        ranks: Some(4),
        evaluations: 20,
        exact_nodes: 0,
        costs: CostsArg {
            spec: Some("gpt2-1.3b-p100-32".into()),
            rule: SpecRule {
                split,
                ..SpecRule::default()
            },
            ..CostsArg::default()
        },
        ..SynthesizeRequest::default()
    };
    let (auto, _) = run(&mut host, FrontEnd::CommandLine, |s| {
        pipeweave_app::synthesize(s, &at(pipeweave_eval::Split::Auto))
    });
    let plan = auto.expect("synthesizes").plan;
    let split = plan.split().expect("the plan carries its split");
    assert_eq!(split.len(), 4);
    assert_eq!(split.iter().sum::<u64>(), 64);
    let recompute = plan.recompute().expect("and its recomputation");
    assert_eq!(recompute.len(), 4);
    // without `--split auto` nothing is searched again: the plan carries no split of its own
    let (spec, _) = run(&mut host, FrontEnd::CommandLine, |s| {
        pipeweave_app::synthesize(s, &at(pipeweave_eval::Split::Spec))
    });
    assert!(spec.expect("synthesizes").plan.split().is_none());
}
