//! The plan a run's traces show, for `calibrate` without `--plan`: each rank's program is its
//! compute actions up to the first one's second run (the next step), each stage on the rank that
//! runs it, one pipeline over every micro-batch. A run of several pipelines (DualPipe's two
//! directions) or of a stage on two ranks shows no such plan: the error says to give it.

use crate::read::RankTrace;
use pipeweave_diagnostics::{Diagnostic, Span};
use pipeweave_plan::cell::StepCell;
use pipeweave_plan::{Action, Plan};

/// The single-pipeline plan `traces` ran (ranks by `distributedInfo.rank`, or in the order
/// given), or why none can be read from them.
pub fn infer_plan(traces: &[RankTrace]) -> Result<Plan, Diagnostic> {
    let give = "give the plan the traces ran with `--plan`";
    let mut order: Vec<&RankTrace> = traces.iter().collect();
    if order.iter().all(|t| t.rank.is_some()) {
        order.sort_by_key(|t| t.rank.as_ref().map(|r| r.value));
        for pair in order.windows(2) {
            if let (Some(a), Some(b)) = (&pair[0].rank, &pair[1].rank)
                && a.value == b.value
            {
                return Err(
                    Diagnostic::error(format!("two traces are rank {}", a.value))
                        .with_span_label(Span::new(pair[1].file, b.at.clone()), "this one")
                        .with_label(Span::new(pair[0].file, a.at.clone()), "and this one"),
                );
            }
        }
        for (r, t) in order.iter().enumerate() {
            if t.rank.as_ref().map(|l| l.value as usize) != Some(r) {
                return Err(Diagnostic::error(format!(
                    "no trace for rank {r}: the traces name ranks {}",
                    order
                        .iter()
                        .filter_map(|t| t.rank.as_ref().map(|l| l.value.to_string()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .with_help(give));
            }
        }
    }
    let ranks = u32::try_from(order.len()).map_err(|_| Diagnostic::error("too many traces"))?;
    let mut programs: Vec<Vec<Action>> = Vec::with_capacity(order.len());
    let mut hosts: Vec<Option<u32>> = Vec::new();
    let mut microbatches = 0u32;
    for (r, t) in order.iter().enumerate() {
        let mut program: Vec<Action> = Vec::new();
        for span in &t.spans {
            let StepCell::Compute(action) = span.cell else {
                continue;
            };
            if program.first() == Some(&action) {
                break;
            }
            for op in action.ops() {
                let s = op.stage as usize;
                if s >= hosts.len() {
                    if s > pipeweave_plan::MAX_OPS {
                        return Err(Diagnostic::error(format!("stage {s} is beyond any plan")));
                    }
                    hosts.resize(s + 1, None);
                }
                match hosts[s] {
                    Some(h) if h != r as u32 => {
                        return Err(Diagnostic::error(format!(
                            "stage {s} runs on ranks {h} and {r}: the traces show no plan of one pipeline"
                        ))
                        .with_span(Span::new(t.file, span.at.clone()))
                        .with_help(give));
                    }
                    _ => hosts[s] = Some(r as u32),
                }
                microbatches = microbatches.max(op.mb.saturating_add(1));
            }
            program.push(action);
        }
        programs.push(program);
    }
    let placement: Option<Vec<u32>> = hosts.iter().copied().collect();
    let Some(placement) = placement.filter(|p| !p.is_empty()) else {
        return Err(Diagnostic::error(
            "the traces do not run every stage from 0 up: they show no plan of one pipeline",
        )
        .with_help(give));
    };
    Plan::single(ranks, placement, microbatches, programs).map_err(|e| {
        Diagnostic::error(format!("the traces show no plan of one pipeline: {e}")).with_help(give)
    })
}
