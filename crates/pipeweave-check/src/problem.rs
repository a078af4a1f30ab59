//! What the validator reports: problems tied to a rank, a position and an action.

use pipeweave_plan::memory::OutOfMemory;
use pipeweave_plan::{Action, Op};
use std::fmt;

/// One problem with a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The rank whose program has the problem.
    pub rank: u32,
    /// Index into the rank's program; `None` when the problem is about the end of the program
    /// (work that never happens).
    pub position: Option<usize>,
    /// The action at `position`, when there is one.
    pub action: Option<Action>,
    /// What is wrong.
    pub kind: ProblemKind,
}

/// What is wrong with a plan at one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProblemKind {
    /// The op names a stage the plan does not have.
    UnknownStage {
        /// The op.
        op: Op,
        /// How many stages the plan has.
        stages: u32,
    },
    /// The op's stage lives on another rank.
    WrongRank {
        /// The op.
        op: Op,
        /// The rank that hosts its stage.
        host: u32,
    },
    /// The op's micro-batch is not carried by the pipeline of its stage.
    UnknownMicrobatch {
        /// The op.
        op: Op,
        /// The pipeline its stage belongs to.
        pipeline: u32,
    },
    /// A pair must be a forward with a B or I.
    MalformedPair {
        /// The pair's first op (meant to be the forward).
        f: Op,
        /// The pair's second op (meant to be the B or I).
        b: Op,
    },
    /// A gradient computation (B, I or W) in an evaluation plan, which runs forwards only.
    BackwardInEvaluation {
        /// The op.
        op: Op,
    },
    /// The same op appears twice (a backward counts once, whether B or I).
    Duplicate {
        /// The op.
        op: Op,
        /// The position of its first appearance in the same program.
        first: usize,
    },
    /// A backward (B or I) before (or together with) the forward of its stage and micro-batch.
    BackwardBeforeForward {
        /// The backward.
        op: Op,
    },
    /// A W before the I of its stage and micro-batch, or after a full B.
    WeightWithoutInput {
        /// The W.
        op: Op,
        /// Whether a full B of the same stage and micro-batch came first (so the weight gradients
        /// are already computed) rather than no I at all.
        after_full_backward: bool,
    },
    /// Work that never happens.
    Missing {
        /// The op no rank runs.
        op: Op,
    },
    /// More work that never happens than is reported op by op: the count of the rest (the plan
    /// lists far more micro-batches than its stages run, or misses much of its work). Reported
    /// once, after every other problem, at no rank.
    MoreMissing {
        /// How many missing ops were reported one by one.
        listed: u64,
        /// How many more there are.
        more: u64,
    },
    /// A table the validator needs (sized by the plan) could not be allocated: the plan was not
    /// judged.
    OutOfMemory(OutOfMemory),
    /// The plan cannot make progress.
    Deadlock {
        /// The ranks that wait on each other, each waiting for the next, the last for the first.
        cycle: Vec<Wait>,
    },
}

/// One link of a deadlock cycle: a rank blocked at a position, and what it waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    /// The blocked rank.
    pub rank: u32,
    /// The compute action the rank is blocked before (index into its program); `None` at the end.
    pub position: Option<usize>,
    /// The action at `position`, when there is one.
    pub action: Option<Action>,
    /// What the rank waits for.
    pub reason: WaitReason,
}

/// What a blocked rank waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitReason {
    /// Waits to receive the output of `op`, computed on `on_rank`.
    Input {
        /// The op whose output the rank needs.
        op: Op,
        /// The rank that computes it.
        on_rank: u32,
    },
    /// Waits for `op` on the same rank, which comes later in its own program.
    Local {
        /// The op it needs first.
        op: Op,
    },
}

impl Wait {
    /// The rank this link waits on.
    pub fn waits_on(&self) -> u32 {
        match self.reason {
            WaitReason::Input { on_rank, .. } => on_rank,
            WaitReason::Local { .. } => self.rank,
        }
    }
}

fn at(
    f: &mut fmt::Formatter<'_>,
    rank: u32,
    position: Option<usize>,
    action: Option<&Action>,
) -> fmt::Result {
    match (position, action) {
        (Some(p), Some(a)) => write!(f, "rank {rank}, action {} ({a})", p + 1),
        (Some(p), None) => write!(f, "rank {rank}, action {}", p + 1),
        (None, _) => write!(f, "rank {rank}, end of program"),
    }
}

fn kind_word(op: &Op) -> &'static str {
    match op.kind {
        pipeweave_plan::Kind::F => "forward",
        pipeweave_plan::Kind::B => "backward",
        pipeweave_plan::Kind::I => "input-gradient backward",
        pipeweave_plan::Kind::W => "weight-gradient backward",
    }
}

impl fmt::Display for Wait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        at(f, self.rank, self.position, self.action.as_ref())?;
        match &self.reason {
            WaitReason::Input { op, on_rank } => {
                write!(f, " waits for the output of {op} on rank {on_rank}")
            }
            WaitReason::Local { op } => {
                write!(f, " waits for {op}, which comes later on the same rank")
            }
        }
    }
}

impl Problem {
    /// The problem of a plan too big to validate in the memory there is.
    pub(crate) fn out_of_memory(e: OutOfMemory) -> Problem {
        Problem {
            rank: 0,
            position: None,
            action: None,
            kind: ProblemKind::OutOfMemory(e),
        }
    }

    /// Where the problem is: `rank 1, action 4 (1B0)` or `rank 1, end of program`.
    pub fn location(&self) -> String {
        match self.kind {
            ProblemKind::OutOfMemory(_) => return "validating the plan".to_owned(),
            ProblemKind::MoreMissing { .. } => return "the whole plan".to_owned(),
            _ => {}
        }
        struct At<'a>(&'a Problem);
        impl fmt::Display for At<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                at(f, self.0.rank, self.0.position, self.0.action.as_ref())
            }
        }
        At(self).to_string()
    }

    /// The sentence after the location, lowercase, no trailing period.
    pub fn message(&self) -> String {
        match &self.kind {
            ProblemKind::OutOfMemory(e) => e.to_string(),
            ProblemKind::UnknownStage { op, stages } => format!(
                "{op} names stage {}, but the plan has only {stages} stages (0 to {})",
                op.stage,
                stages.saturating_sub(1)
            ),
            ProblemKind::WrongRank { op, host } => format!(
                "{op} runs stage {} on rank {}, but stage {} lives on rank {host}",
                op.stage, self.rank, op.stage
            ),
            ProblemKind::UnknownMicrobatch { op, pipeline } => format!(
                "{op} names micro-batch {}, which pipeline {pipeline} (stage {}) does not carry",
                op.mb, op.stage
            ),
            ProblemKind::MalformedPair { f, b } => format!(
                "an overlapped pair must be a forward followed by a B or I, found {f} with {b}"
            ),
            ProblemKind::BackwardInEvaluation { op } => format!(
                "{op} computes gradients, but this is an evaluation plan, which runs forwards only"
            ),
            ProblemKind::Duplicate { op, first } => format!(
                "the {} of stage {}, micro-batch {} runs twice (first at action {})",
                kind_word(op),
                op.stage,
                op.mb,
                first + 1
            ),
            ProblemKind::BackwardBeforeForward { op } => format!(
                "{op} runs before the forward of stage {}, micro-batch {}",
                op.stage, op.mb
            ),
            ProblemKind::WeightWithoutInput {
                op,
                after_full_backward: true,
            } => format!(
                "{op} computes weight gradients that the full backward {}B{} already computed",
                op.stage, op.mb
            ),
            ProblemKind::WeightWithoutInput { op, .. } => format!(
                "{op} runs before the input-gradient backward {}I{} it follows",
                op.stage, op.mb
            ),
            ProblemKind::Missing { op } => format!(
                "stage {} never runs the {} of micro-batch {} ({op})",
                op.stage,
                kind_word(op),
                op.mb
            ),
            ProblemKind::MoreMissing { listed, more } => format!(
                "{more} more operations never run besides the {listed} reported one by one; every stage runs a forward and a backward of each micro-batch its pipeline lists, so list only the micro-batches the programs run"
            ),
            ProblemKind::Deadlock { cycle } => match cycle.as_slice() {
                [one] => format!(
                    "the plan deadlocks: rank {} waits for work that comes later in its own program",
                    one.rank
                ),
                _ => {
                    let ranks: Vec<u32> = cycle.iter().map(|w| w.rank).collect();
                    format!("the plan deadlocks: {}", cycle_words(&ranks))
                }
            },
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location(), self.message())?;
        if let ProblemKind::Deadlock { cycle } = &self.kind {
            let (shown, hidden) = ends(cycle);
            for (k, w) in shown.enumerate() {
                if hidden > 0 && k == SHOWN - TAIL {
                    write!(
                        f,
                        "\n  … {} more ranks wait in the cycle",
                        thousands(hidden)
                    )?;
                }
                write!(f, "\n  {w}")?;
            }
        }
        Ok(())
    }
}

/// The most ranks of a deadlock cycle a message lists: past it, the first ones, how many are left
/// out and the last [`TAIL`] (a cycle can go through all 65,536 ranks).
const SHOWN: usize = 10;

/// How many of the last ranks of a long cycle are listed.
const TAIL: usize = 2;

/// `ranks 0 → 1 → 0 wait for each other in a cycle`: the ranks of a cycle, each waiting for the
/// next and the last for the first, at most [`SHOWN`] of them listed, the rest counted
/// (`… (65,526 more)`, `in a cycle of 65,536 ranks`).
pub fn cycle_words(ranks: &[u32]) -> String {
    let (shown, hidden) = ends(ranks);
    let mut words: Vec<String> = shown.map(u32::to_string).collect();
    if hidden > 0 {
        words.insert(SHOWN - TAIL, format!("… ({} more)", thousands(hidden)));
    }
    if let Some(first) = ranks.first() {
        words.push(first.to_string());
    }
    let size = if hidden > 0 {
        format!(" of {} ranks", thousands(ranks.len()))
    } else {
        String::new()
    };
    format!(
        "ranks {} wait for each other in a cycle{size}",
        words.join(" → ")
    )
}

/// The links of `cycle` a message lists, and how many it leaves out between the first and the last.
fn ends<T>(cycle: &[T]) -> (impl Iterator<Item = &T>, usize) {
    let hidden = cycle.len().saturating_sub(SHOWN);
    let head = if hidden > 0 {
        SHOWN - TAIL
    } else {
        cycle.len()
    };
    (cycle[..head].iter().chain(&cycle[head + hidden..]), hidden)
}

/// `n` with thousands separators: 65526 → 65,526.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}
