//! The transfers' figures the traces' `pipeweave` objects give (`pipeweave.torch.profile` writes
//! them): each message's and each part's gradient bytes, checked against the plan, and the link
//! probe's points.

use crate::probe::{ProbeCosts, ReducePoint, TransferPoint, link_fits};
use pipeweave_plan::Plan;
use pipeweave_trace::Run;
use std::collections::BTreeMap;

/// What the traces' `pipeweave` objects say of the transfers: the bytes of each message and of
/// each part's gradients (the largest any trace gives), and every probe point, in order.
#[derive(Default)]
pub(super) struct Transfers {
    pub(super) messages: BTreeMap<(u32, u32, bool), u64>,
    pub(super) gradients: BTreeMap<u32, u64>,
    p2p: Vec<TransferPoint>,
    all_reduce: Vec<ReducePoint>,
}

impl Transfers {
    /// Adds run `k`'s (of `runs`) `pipeweave` objects; a message or part gradient the plan does
    /// not have is an error naming the rank, the run and the row. `base`: the run cuts the model
    /// as run 1 does, so its part gradients are kept (a part of another cut is another share of
    /// the model).
    pub(super) fn add(
        &mut self,
        plan: &Plan,
        run: &Run,
        k: usize,
        runs: usize,
        base: bool,
    ) -> Result<(), String> {
        for (rank, meta) in run.ranks.iter().enumerate() {
            let Some(meta) = meta.meta.as_ref() else {
                continue;
            };
            let whose = if runs > 1 {
                format!("the trace of rank {rank} of run {}", k + 1)
            } else {
                format!("the trace of rank {rank}")
            };
            for m in &meta.messages {
                let neighbour = if m.forward {
                    plan.next_stage(m.stage)
                } else {
                    plan.prev_stage(m.stage)
                };
                let fits = plan.stage_rank(m.stage) == Some(m.from)
                    && neighbour.and_then(|n| plan.stage_rank(n)) == Some(m.to)
                    && m.from != m.to;
                if !fits {
                    return Err(format!(
                        "{whose} records a {} message of stage {} from rank {} to rank {} (`pipeweave.messages`), which the plan does not send",
                        if m.forward { "forward" } else { "backward" },
                        m.stage,
                        m.from,
                        m.to
                    ));
                }
            }
            for g in &meta.gradients {
                let hosted = plan
                    .hosts()
                    .iter()
                    .enumerate()
                    .any(|(s, &r)| r as usize == rank && plan.part(s as u32) == g.part);
                if !hosted {
                    return Err(format!(
                        "{whose} records the gradient bytes of part {} (`pipeweave.gradients`), which the plan does not put on that rank",
                        g.part
                    ));
                }
            }
        }
        for meta in run.ranks.iter().filter_map(|r| r.meta.as_ref()) {
            for m in &meta.messages {
                let slot = self.messages.entry((m.from, m.to, m.forward)).or_default();
                *slot = (*slot).max(m.bytes);
            }
            for g in meta.gradients.iter().filter(|_| base) {
                let slot = self.gradients.entry(g.part).or_default();
                *slot = (*slot).max(g.bytes);
            }
            let Some(probe) = &meta.probe else { continue };
            self.p2p.extend(probe.p2p.iter().map(|p| TransferPoint {
                from: p.from,
                to: p.to,
                bytes: p.bytes,
                time: p.seconds,
            }));
            self.all_reduce
                .extend(probe.all_reduce.iter().map(|p| ReducePoint {
                    ranks: [p.from, p.to],
                    bytes: p.bytes,
                    time: p.seconds,
                }));
        }
        Ok(())
    }

    pub(super) fn probe(&self) -> ProbeCosts {
        ProbeCosts {
            links: link_fits(&self.p2p),
            p2p: self.p2p.clone(),
            all_reduce: self.all_reduce.clone(),
            reduction_in_tail: false,
        }
    }
}
