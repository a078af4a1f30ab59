//! The communication of a `compute_comms` CSV checked against pipeweave's lowering of the plan its
//! compute cells make (`pipeweave_plan::lower`, which is PyTorch 2.15's own lowering).
//!
//! What a file must have (docs/plan-format.md says the same for users):
//! - every send, receive, send wait, gradient reduction and reduction wait of the lowering, once,
//!   on its rank, and nothing else: missing, extra and repeated steps are errors;
//! - a send right after the action whose output it carries (no other action between them, as in
//!   every lowering of PyTorch's and pipeweave's), a receive before the action that needs it, a
//!   wait after the send or reduction it waits for, a reduction after the stage's last backward on
//!   the rank;
//! - the messages from one rank to another posted in the lowering's order, at both ends: 2.15
//!   matches the messages between two ranks in posting order (one channel, no tags);
//! - at most one pending reduction per rank, as 2.15's loader demands;
//! - no wait for a send placed where the peer cannot yet post its receive (`hang.rs`).
//!
//! Where else a step stands between the compute actions is free: PyTorch's own lowering posts
//! receives elsewhere when FSDP's `UNSHARD` and `RESHARD` take their turns, and its
//! `max_outstanding_sends` moves waits earlier. Its `defer_pp_recv` moves receives next to their
//! consumers, which on a V schedule can reorder the messages between two ranks: that is reported
//! (and is a real fault: PyTorch then hands one micro-batch's tensor to another).
//!
//! Linear in the cells: one pass over the lowering fills a dense table of its steps (`table.rs`),
//! one pass over the file looks each cell up, and the checks read the table.

mod hang;
mod table;

use super::read::{CommsFile, StepAt};
use pipeweave_diagnostics::{Diagnostic, Span};
use pipeweave_plan::Dir;
use pipeweave_plan::cell::StepCell;
use table::{Expected, Table};

fn is_sharding(step: StepCell) -> bool {
    matches!(step, StepCell::Unshard { .. } | StepCell::Reshard { .. })
}

/// `rank 1, cell 5`.
fn at(r: u32, s: &StepAt) -> String {
    format!("rank {r}, cell {}", s.cell + 1)
}

impl CommsFile {
    /// The file's communication checked against the lowering of its plan: every problem found,
    /// in file order. Meant for a valid plan (the validator's problems come first; an invalid
    /// plan's lowering says little).
    pub fn check(&self) -> Vec<Diagnostic> {
        let mut t = match Table::new(&self.plan) {
            Ok(t) => t,
            Err(d) => return vec![d],
        };
        let talks = self.steps.iter().flatten().any(|s| !is_sharding(s.step));
        if !talks && !t.expected.is_empty() {
            return vec![
                Diagnostic::error(format!(
                    "the file holds no communication, but its plan sends, receives and reduces ({} steps)",
                    t.expected.len()
                ))
                .with_help("a compute-only CSV is read with the `pytorch` or the `actions` format"),
            ];
        }
        let mut out = Vec::new();
        self.match_cells(&mut t, &mut out);
        for e in &t.expected {
            match e.found {
                Some(k) => self.placement(&t, e, &self.steps[e.rank as usize][k], &mut out),
                None => self.missing(&t, e, &mut out),
            }
        }
        self.channel_order(&t, &mut out);
        self.pending_reductions(&t, &mut out);
        if out.is_empty() {
            out.extend(self.hang(&t));
        }
        out.sort_by_key(|d| d.span.as_ref().map_or(0, |s| s.range.start));
        out
    }

    fn span(&self, range: &std::ops::Range<usize>) -> Span {
        Span::new(self.file, range.clone())
    }

    /// Rank r's action i and its cell.
    fn action(&self, r: u32, i: usize) -> (String, Span) {
        let text = self.plan.program(r)[i].to_string();
        (text, self.span(&self.spans[r as usize][i]))
    }

    /// Finds every cell of the file in the table; reports the cells the lowering does not have,
    /// the repeated ones, and sharding steps for another rank's stage.
    fn match_cells(&self, t: &mut Table<'_>, out: &mut Vec<Diagnostic>) {
        for (r, steps) in (0u32..).zip(&self.steps) {
            for (k, s) in steps.iter().enumerate() {
                if let StepCell::Unshard { stage } | StepCell::Reshard { stage } = s.step {
                    if let Some(why) = self.foreign_stage(r, stage) {
                        out.push(
                            Diagnostic::error(format!("{}: `{}` {why}", at(r, s), s.step))
                                .with_span(self.span(&s.span))
                                .with_note(
                                    "PyTorch's runtime unshards and reshards the stages of its own rank only",
                                ),
                        );
                    }
                    continue;
                }
                let Some(e) = t.lookup(r, s.step) else {
                    out.push(
                        Diagnostic::error(format!(
                            "{}: `{}` is not a step of this plan",
                            at(r, s),
                            s.step
                        ))
                        .with_span_label(self.span(&s.span), "extra")
                        .with_note(self.why_extra(r, s.step)),
                    );
                    continue;
                };
                match t.expected[e].found {
                    Some(first) => out.push(
                        Diagnostic::error(format!(
                            "{}: `{}` appears a second time",
                            at(r, s),
                            s.step
                        ))
                        .with_span_label(self.span(&s.span), "again here")
                        .with_label(self.span(&steps[first].span), "first here")
                        .with_note("each transfer, wait and reduction happens once"),
                    ),
                    None => t.expected[e].found = Some(k),
                }
            }
        }
    }

    /// Why a sharding step cannot name `stage` on rank r, if it cannot.
    fn foreign_stage(&self, r: u32, stage: u32) -> Option<String> {
        let n = self.plan.num_stages();
        if stage >= n {
            return Some(format!(
                "names stage {stage}, but the plan's stages are 0 to {}",
                n - 1
            ));
        }
        let host = self.plan.hosts()[stage as usize];
        (host != r).then(|| format!("names stage {stage}, which runs on rank {host}"))
    }

    /// Why rank r has no `step` in the lowering, in words.
    fn why_extra(&self, r: u32, step: StepCell) -> String {
        let plan = &self.plan;
        let (stage, mb) = match step {
            StepCell::Recv { stage, mb, .. }
            | StepCell::Send { stage, mb, .. }
            | StepCell::WaitSend { stage, mb, .. } => (stage, Some(mb)),
            StepCell::ReduceGrad { stage } | StepCell::WaitReduceGrad { stage } => (stage, None),
            StepCell::Compute(_) | StepCell::Unshard { .. } | StepCell::Reshard { .. } => {
                return "it is not communication".to_owned();
            }
        };
        let n = plan.num_stages();
        if stage >= n {
            return format!("the plan's stages are 0 to {}", n - 1);
        }
        let host = plan.hosts()[stage as usize];
        if host != r {
            return format!(
                "stage {stage} runs on rank {host}; a rank sends, receives and reduces for its own stages only"
            );
        }
        if let Some(mb) = mb
            && plan.mb_pipeline(mb).is_none()
        {
            return format!("the plan has no micro-batch {mb}");
        }
        // The neighbour the data comes from or goes to, and what to say when there is none.
        let (other, none) = match step {
            StepCell::Send { dir: Dir::Fwd, .. } | StepCell::WaitSend { dir: Dir::Fwd, .. } => (
                plan.next_stage(stage),
                "is the last stage: its forward output goes to no other stage",
            ),
            StepCell::Send { dir: Dir::Bwd, .. } | StepCell::WaitSend { dir: Dir::Bwd, .. } => (
                plan.prev_stage(stage),
                "is the first stage: its input gradient goes to no other stage",
            ),
            StepCell::Recv { dir: Dir::Fwd, .. } => (
                plan.prev_stage(stage),
                "is the first stage: no stage sends it activations",
            ),
            StepCell::Recv { dir: Dir::Bwd, .. } => (
                plan.next_stage(stage),
                "is the last stage: no stage sends it gradients",
            ),
            _ => {
                return format!("rank {r} computes no weight gradients of stage {stage}");
            }
        };
        match other {
            None => format!("stage {stage} {none}"),
            Some(o) if plan.hosts()[o as usize] == r => format!(
                "stages {stage} and {o} both run on rank {r}: nothing goes between ranks for them"
            ),
            Some(_) => format!("pipeweave's lowering of the plan has no such step on rank {r}"),
        }
    }

    /// A step the lowering has and the file lacks, pointing where it belongs (a wait whose send
    /// or reduction is missing too is not reported again).
    fn missing(&self, t: &Table<'_>, e: &Expected, out: &mut Vec<Diagnostic>) {
        let r = e.rank;
        let step = e.step;
        // The action the step goes with: its place and its name.
        let action = e.action.map(|i| {
            let (name, span) = self.action(r, i);
            (self.action_cell(r, i), name, span)
        });
        let d = match (step, action) {
            (StepCell::Send { .. }, Some((cell, name, span))) => Diagnostic::error(format!(
                "rank {r}, cell {}: the output of `{name}` for rank {} is never sent: `{step}` is missing",
                cell + 1,
                e.peer
            ))
            .with_span_label(span, format!("`{step}` belongs right after this action")),
            (StepCell::Recv { .. }, Some((cell, name, span))) => Diagnostic::error(format!(
                "rank {r}, cell {}: the input of `{name}` from rank {} is never received: `{step}` is missing",
                cell + 1,
                e.peer
            ))
            .with_span_label(span, format!("`{step}` belongs before this action")),
            (StepCell::ReduceGrad { stage }, Some((cell, name, span))) => Diagnostic::error(format!(
                "rank {r}, cell {}: the gradients of stage {stage} are never reduced: `{step}` is missing",
                cell + 1
            ))
            .with_span_label(
                span,
                format!("`{step}` belongs after `{name}`, stage {stage}'s last backward on the rank"),
            ),
            (StepCell::WaitSend { dir, stage, mb }, _) => {
                let send = StepCell::Send { dir, stage, mb };
                let Some(k) = t.found(r, send) else { return };
                let sent = &self.steps[r as usize][k];
                Diagnostic::error(format!(
                    "{}: `{send}` is never waited for: `{step}` is missing",
                    at(r, sent)
                ))
                .with_span_label(self.span(&sent.span), "sent here, never waited for")
                .with_note("PyTorch 2.15 retires a send only at its wait")
            }
            (StepCell::WaitReduceGrad { stage }, _) => {
                let reduce = StepCell::ReduceGrad { stage };
                let Some(k) = t.found(r, reduce) else { return };
                let launched = &self.steps[r as usize][k];
                Diagnostic::error(format!(
                    "{}: `{reduce}` is never waited for: `{step}` is missing",
                    at(r, launched)
                ))
                .with_span_label(self.span(&launched.span), "launched here, never waited for")
            }
            _ => return,
        };
        out.push(d);
    }

    /// The position among rank r's cells (from 0) of its action i: the actions before it and the
    /// steps that stand before it.
    pub(super) fn action_cell(&self, r: u32, i: usize) -> usize {
        i + self.steps[r as usize].partition_point(|s| s.after <= i)
    }

    /// Whether a step the file has stands on the right side of what it goes with.
    fn placement(&self, t: &Table<'_>, e: &Expected, s: &StepAt, out: &mut Vec<Diagnostic>) {
        let r = e.rank;
        let here = self.span(&s.span);
        let step = s.step;
        let d = match (step, e.action) {
            (StepCell::Send { .. }, Some(i)) if s.after <= i => {
                let (name, span) = self.action(r, i);
                Diagnostic::error(format!(
                    "{}: `{step}` comes before `{name}`, the action whose output it sends",
                    at(r, s)
                ))
                .with_span_label(here, "sent here")
                .with_label(span, "computed here")
            }
            (StepCell::Send { .. }, Some(i)) if s.after > i + 1 => {
                let (name, span) = self.action(r, i);
                let (next, next_span) = self.action(r, i + 1);
                Diagnostic::error(format!(
                    "{}: `{step}` comes after `{next}`, but belongs right after `{name}`, the action whose output it sends",
                    at(r, s)
                ))
                .with_span_label(here, "sent here")
                .with_label(span, "computed here")
                .with_label(next_span, "this action runs first")
                .with_note(
                    "a send held back behind other work can stall both ranks: the work may wait for data that needs this send",
                )
            }
            (StepCell::Recv { .. }, Some(i)) if s.after > i => {
                let (name, span) = self.action(r, i);
                Diagnostic::error(format!(
                    "{}: `{step}` comes after `{name}`, the action that needs it",
                    at(r, s)
                ))
                .with_span_label(here, "received here")
                .with_label(span, "needed here")
            }
            (StepCell::ReduceGrad { stage }, Some(i)) if s.after <= i => {
                let (name, span) = self.action(r, i);
                Diagnostic::error(format!(
                    "{}: `{step}` comes before `{name}`, stage {stage}'s last backward on the rank",
                    at(r, s)
                ))
                .with_span_label(here, "reduced here")
                .with_label(span, "gradients still computed here")
                .with_note("the reduction would miss that action's gradients")
            }
            (StepCell::WaitSend { dir, stage, mb }, _) => {
                let first = StepCell::Send { dir, stage, mb };
                let Some(d) = self.wait_first(t, r, s, first, "the send") else {
                    return;
                };
                d
            }
            (StepCell::WaitReduceGrad { stage }, _) => {
                let first = StepCell::ReduceGrad { stage };
                let Some(d) = self.wait_first(t, r, s, first, "the reduction") else {
                    return;
                };
                d
            }
            _ => return,
        };
        out.push(d);
    }

    /// A wait standing before the step `first` it waits for, if it does.
    fn wait_first(
        &self,
        t: &Table<'_>,
        r: u32,
        s: &StepAt,
        first: StepCell,
        what: &str,
    ) -> Option<Diagnostic> {
        let k = t.found(r, first)?;
        let started = &self.steps[r as usize][k];
        (started.cell > s.cell).then(|| {
            Diagnostic::error(format!(
                "{}: `{}` comes before `{first}`, {what} it waits for",
                at(r, s),
                s.step
            ))
            .with_span_label(self.span(&s.span), "waits here")
            .with_label(self.span(&started.span), "started here")
        })
    }

    /// The first message out of the lowering's order at each channel end.
    fn channel_order(&self, t: &Table<'_>, out: &mut Vec<Diagnostic>) {
        let mut latest: Vec<Option<(u32, usize)>> = vec![None; t.channels.len()];
        let mut reported = vec![false; t.channels.len()];
        for (r, steps) in (0u32..).zip(&self.steps) {
            for (k, s) in steps.iter().enumerate() {
                let Some(e) = t.lookup(r, s.step) else {
                    continue;
                };
                let e = &t.expected[e];
                let Some((ch, n)) = e.order.filter(|_| e.found == Some(k)) else {
                    continue;
                };
                match latest[ch] {
                    Some((m, before)) if n < m => {
                        if !reported[ch] {
                            reported[ch] = true;
                            let (from, to, _) = t.channels[ch];
                            out.push(self.misordered(r, s, &steps[before], from, to));
                        }
                    }
                    _ => latest[ch] = Some((n, k)),
                }
            }
        }
    }

    fn misordered(&self, r: u32, s: &StepAt, before: &StepAt, from: u32, to: u32) -> Diagnostic {
        let verb = if from == r { "sent" } else { "received" };
        Diagnostic::error(format!(
            "{}: `{}` is out of order on the channel from rank {from} to rank {to}",
            at(r, s),
            s.step
        ))
        .with_span_label(
            self.span(&s.span),
            format!("pipeweave's lowering posts this before `{}`", before.step),
        )
        .with_label(self.span(&before.span), format!("{verb} earlier here"))
        .with_note(
            "PyTorch 2.15 matches the messages between two ranks in the order they are posted (one channel, no tags), so this would hand one micro-batch's tensor to another",
        )
    }

    /// Reductions started while another one is pending on the rank (2.15 allows one); a repeated
    /// one is reported as such already.
    fn pending_reductions(&self, t: &Table<'_>, out: &mut Vec<Diagnostic>) {
        for (r, steps) in (0u32..).zip(&self.steps) {
            let mut pending: Option<(u32, &StepAt)> = None;
            for (k, s) in steps.iter().enumerate() {
                if t.found(r, s.step) != Some(k) {
                    continue;
                }
                match s.step {
                    StepCell::ReduceGrad { stage } => {
                        if let Some((other, started)) = pending {
                            out.push(
                                Diagnostic::error(format!(
                                    "{}: `{}` starts while stage {other}'s reduction is pending",
                                    at(r, s),
                                    s.step
                                ))
                                .with_span_label(self.span(&s.span), "started here")
                                .with_label(self.span(&started.span), "pending since here")
                                .with_note(format!(
                                    "PyTorch 2.15 allows one pending gradient reduction per rank: wait for it with `{other}WAIT_REDUCE_GRAD` first"
                                )),
                            );
                        }
                        pending = Some((stage, s));
                    }
                    StepCell::WaitReduceGrad { stage }
                        if pending.is_some_and(|(p, _)| p == stage) =>
                    {
                        pending = None;
                    }
                    _ => {}
                }
            }
        }
    }
}
