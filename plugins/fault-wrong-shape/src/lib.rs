//! Test fixture: answers with a valid GPipe plan of another shape than the one asked for: one rank
//! more (`--set wrong=0`), one micro-batch more (`wrong=1`), or the last rank hosting two stages
//! (`wrong=2`). The host must refuse it, saying what differs.

use pipeweave_plan::{Action, Kind, Op, Plan};
use pipeweave_plugin_api::{Generator, Metadata, ParamSpec, Request};

struct WrongShape;

impl Generator for WrongShape {
    fn metadata() -> Metadata {
        Metadata {
            name: "fault-wrong-shape".into(),
            version: "0.0.0".into(),
            description: "test fixture: plans of another shape than asked for".into(),
            requires: String::new(),
            params: vec![
                ParamSpec::int(
                    "wrong",
                    0,
                    "0: one rank more, 1: one micro-batch more, 2: two stages on the last rank",
                )
                .constrained(Some(0), Some(2), None),
            ],
        }
    }

    fn generate(request: &Request) -> Result<Plan, String> {
        let (p, m) = (request.ranks, request.microbatches);
        match request.int_or("wrong", 0)? {
            0 => gpipe(p + 1, m, (0..=p).collect()),
            1 => gpipe(p, m + 1, (0..p).collect()),
            _ => gpipe(p, m, (0..p).chain([p - 1]).collect()),
        }
    }
}

/// GPipe over `placement`: every forward in micro-batch order, then every backward.
fn gpipe(ranks: u32, microbatches: u32, placement: Vec<u32>) -> Result<Plan, String> {
    let stages: Vec<(u32, u32)> = (0..).zip(placement.iter().copied()).collect();
    let mut programs = vec![Vec::new(); ranks as usize];
    for m in 0..microbatches {
        for &(stage, rank) in &stages {
            programs[rank as usize].push(Action::One(Op::new(stage, Kind::F, m)));
        }
    }
    for m in 0..microbatches {
        for &(stage, rank) in stages.iter().rev() {
            programs[rank as usize].push(Action::One(Op::new(stage, Kind::B, m)));
        }
    }
    Plan::single(ranks, placement, microbatches, programs).map_err(|e| e.to_string())
}

pipeweave_plugin_api::export_plugin!(WrongShape);
