//! Whether a `compute_comms` CSV whose steps are each in place can still hang when PyTorch's
//! runtime runs it: the rows run in order, sends and receives are only posted, an action waits
//! for its inputs to have been sent, and a `WAIT_SEND` waits until the peer has posted the
//! matching receive (a rendezvous, as NCCL's point-to-point transfers are). A wait placed before
//! the peer can reach its receive stops both ranks.
//!
//! Event-driven and linear in the cells: a blocked rank waits for one cell of one other rank,
//! and that cell wakes it.

use super::{Table, at};
use crate::pytorch::read::CommsFile;
use pipeweave_diagnostics::{Diagnostic, Span};
use pipeweave_plan::cell::StepCell;
use pipeweave_plan::{Dir, Kind};
use std::collections::HashMap;

/// The next cell of a rank: an action or a step, by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cell {
    Action(usize),
    Step(usize),
}

/// How far a rank got: its next action and its next step.
#[derive(Debug, Clone, Copy, Default)]
struct Cursor {
    action: usize,
    step: usize,
}

/// A rank stopped at `cell`, waiting for step `step` of rank `on`.
#[derive(Debug, Clone, Copy)]
struct Blocked {
    cell: Cell,
    on: u32,
    step: usize,
}

impl CommsFile {
    /// The first cycle of ranks waiting for each other, if the file's steps can hang. Meant for a
    /// file whose every step was found and is in place.
    pub(super) fn hang(&self, t: &Table<'_>) -> Option<Diagnostic> {
        let ranks = self.steps.len();
        let mut cursors = vec![Cursor::default(); ranks];
        let mut blocked: Vec<Option<Blocked>> = vec![None; ranks];
        let mut waiting: HashMap<(u32, usize), u32> = HashMap::new();
        let mut ready: Vec<u32> = (0..ranks as u32).rev().collect();
        while let Some(r) = ready.pop() {
            blocked[r as usize] = None;
            while let Some(cell) = self.next_cell(r, cursors[r as usize]) {
                if let Some((on, step)) = self.needs(t, r, cell, &cursors) {
                    blocked[r as usize] = Some(Blocked { cell, on, step });
                    waiting.insert((on, step), r);
                    break;
                }
                let c = &mut cursors[r as usize];
                match cell {
                    Cell::Action(_) => c.action += 1,
                    Cell::Step(k) => {
                        c.step += 1;
                        if let Some(w) = waiting.remove(&(r, k)) {
                            ready.push(w);
                        }
                    }
                }
            }
        }
        let first = blocked.iter().position(Option::is_some)?;
        Some(self.cycle(first as u32, &blocked))
    }

    /// The cell rank r runs next, if any: a step standing before the next action goes first.
    fn next_cell(&self, r: u32, c: Cursor) -> Option<Cell> {
        let steps = &self.steps[r as usize];
        if steps.get(c.step).is_some_and(|s| s.after <= c.action) {
            return Some(Cell::Step(c.step));
        }
        if c.action < self.plan.program(r).len() {
            return Some(Cell::Action(c.action));
        }
        steps.get(c.step).map(|_| Cell::Step(c.step))
    }

    /// The step of another rank that `cell` of rank r still waits for, as (rank, index among its
    /// steps): an action waits for the sends of its inputs (an overlapped pair for two), a
    /// `WAIT_SEND` for the peer's receive.
    fn needs(&self, t: &Table<'_>, r: u32, cell: Cell, cursors: &[Cursor]) -> Option<(u32, usize)> {
        let plan = &self.plan;
        let waits = |&(on, step): &(u32, usize)| cursors[on as usize].step <= step;
        let find = |step: StepCell, stage: u32| {
            let host = plan.hosts()[stage as usize];
            (host != r)
                .then(|| t.found(host, step).map(|k| (host, k)))
                .flatten()
        };
        match cell {
            Cell::Action(i) => plan.program(r)[i]
                .ops()
                .filter_map(|op| {
                    let dir = match op.kind {
                        Kind::F => Dir::Fwd,
                        Kind::B | Kind::I => Dir::Bwd,
                        Kind::W => return None,
                    };
                    let from = plan.sending_stage(dir, op.stage)?;
                    let send = StepCell::Send {
                        dir,
                        stage: from,
                        mb: op.mb,
                    };
                    find(send, from)
                })
                .find(waits),
            Cell::Step(k) => match self.steps[r as usize][k].step {
                StepCell::WaitSend { dir, stage, mb } => {
                    let to = plan.receiving_stage(dir, stage)?;
                    find(StepCell::Recv { dir, stage: to, mb }, to).filter(waits)
                }
                _ => None,
            },
        }
    }

    /// The cycle of waits reached from blocked rank `from`, as a diagnostic at its first rank's
    /// cell, with every rank's cell labelled.
    fn cycle(&self, from: u32, blocked: &[Option<Blocked>]) -> Diagnostic {
        // Every blocked rank waits for a blocked rank (one that ran past the step would have
        // woken it), so following the waits from any of them runs into a cycle.
        let mut seen = vec![false; blocked.len()];
        let mut chain: Vec<u32> = Vec::new();
        let mut r = from;
        while !seen[r as usize] {
            seen[r as usize] = true;
            chain.push(r);
            match blocked[r as usize] {
                Some(b) => r = b.on,
                None => break,
            }
        }
        let start = chain.iter().position(|&c| c == r).unwrap_or(0);
        let cycle = &chain[start..];
        let (what, _) = self.blocked_at(cycle[0], blocked);
        // A cycle can go through every rank: its words list a few, the renderer shows a few labels.
        let mut d = Diagnostic::error(format!(
            "{what}: the steps can hang: {}",
            pipeweave_check::cycle_words(cycle)
        ));
        for (n, &r) in cycle.iter().enumerate() {
            let Some(b) = blocked[r as usize] else {
                continue;
            };
            let (_, span) = self.blocked_at(r, blocked);
            let awaited = self.steps[b.on as usize][b.step].step;
            let label = format!("rank {r} waits here for `{awaited}` on rank {}", b.on);
            d = if n == 0 {
                d.with_span_label(span, label)
            } else {
                d.with_label(span, label)
            };
        }
        d.with_note(
            "PyTorch 2.15 runs each row in order; an action waits until its inputs were sent, and `WAIT_SEND` until the peer has posted the matching receive",
        )
    }

    /// Where blocked rank r stopped: `rank r, cell c` and the cell's span.
    fn blocked_at(&self, r: u32, blocked: &[Option<Blocked>]) -> (String, Span) {
        match blocked[r as usize].map(|b| b.cell) {
            Some(Cell::Step(k)) => {
                let s = &self.steps[r as usize][k];
                (at(r, s), self.span(&s.span))
            }
            Some(Cell::Action(i)) => (
                format!("rank {r}, cell {}", self.action_cell(r, i) + 1),
                self.span(&self.spans[r as usize][i]),
            ),
            None => (format!("rank {r}"), Span::new(self.file, 0..0)),
        }
    }
}
