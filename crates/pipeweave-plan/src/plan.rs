//! The plan: ranks, pipelines with their placement and micro-batches, and one program per rank.

use crate::action::Action;
use std::fmt;

/// The largest micro-batch id any plan file or plugin reply may name: every reader and decoder
/// refuses larger ones with a located error, so whatever pipeweave writes it reads back. The passes
/// keep tables indexed by id, and a file of a few bytes must not be able to ask for gigabytes.
pub const MAX_MICROBATCH_ID: u32 = (1 << 24) - 1;

/// A chain of stages that carries its own micro-batches.
///
/// Position `q` of every pipeline computes model part `q`: pipelines of one plan are replicas of the
/// same model (Chimera and DualPipe hold two), and their gradients are summed per part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pipeline {
    /// `placement[q]` is the rank that hosts position `q` (forward runs from 0 to S−1).
    pub placement: Vec<u32>,
    /// The global micro-batch ids this pipeline carries, ascending.
    pub microbatches: Vec<u32>,
}

/// The direction of a transfer: activations flow forward, gradients backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dir {
    /// Activations, from a stage to the next.
    Fwd,
    /// Gradients, from a stage to the previous one.
    Bwd,
}

/// What makes a plan structurally impossible (independent of its programs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// Zero ranks.
    NoRanks,
    /// No pipeline.
    NoPipelines,
    /// Pipelines of zero stages.
    NoStages,
    /// More stages than fit in 32 bits, or a micro-batch id above 2²⁸ (the per-micro-batch tables
    /// of the passes would not fit in memory).
    TooLarge,
    /// A pipeline whose placement differs in length from the first pipeline's.
    PlacementLength {
        /// The pipeline.
        pipeline: u32,
        /// How many positions it places.
        found: usize,
        /// How many the first pipeline places.
        expected: u32,
    },
    /// A stage placed on a rank the plan does not have.
    RankOutOfRange {
        /// The pipeline.
        pipeline: u32,
        /// The stage's position in it.
        position: u32,
        /// The rank it is placed on.
        rank: u32,
        /// How many ranks the plan has.
        ranks: u32,
    },
    /// A micro-batch carried by two pipelines.
    MicrobatchInTwoPipelines {
        /// The micro-batch.
        mb: u32,
        /// The first pipeline that carries it.
        first: u32,
        /// The second.
        second: u32,
    },
    /// A number of programs other than the number of ranks.
    ProgramCount {
        /// How many programs were given.
        found: usize,
        /// How many ranks the plan has.
        ranks: u32,
    },
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::NoRanks => write!(f, "a plan needs at least one rank"),
            PlanError::NoPipelines => write!(f, "a plan needs at least one pipeline"),
            PlanError::NoStages => write!(f, "a pipeline needs at least one stage"),
            PlanError::TooLarge => write!(f, "the plan is too large (ids must fit in 32 bits)"),
            PlanError::PlacementLength {
                pipeline,
                found,
                expected,
            } => write!(
                f,
                "pipeline {pipeline} places {found} stages but every pipeline has {expected}"
            ),
            PlanError::RankOutOfRange {
                pipeline,
                position,
                rank,
                ranks,
            } => write!(
                f,
                "stage {position} of pipeline {pipeline} is placed on rank {rank}, but the plan has only {ranks} ranks"
            ),
            PlanError::MicrobatchInTwoPipelines { mb, first, second } => write!(
                f,
                "micro-batch {mb} is carried by pipelines {first} and {second}; each micro-batch belongs to one pipeline"
            ),
            PlanError::ProgramCount { found, ranks } => {
                write!(f, "the plan has {ranks} ranks but {found} programs")
            }
        }
    }
}

impl std::error::Error for PlanError {}

/// A step plan: for every rank, the ordered compute actions of one training step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    ranks: u32,
    stages_per_pipeline: u32,
    pipelines: Vec<Pipeline>,
    programs: Vec<Vec<Action>>,
    /// Derived: micro-batch id → `[pipeline + 1, index]`, the pipeline carrying it counted from 1
    /// and its index among all the plan's micro-batches in ascending order (`[0, 0]` where no
    /// pipeline carries it, so that the pages of ids no pipeline uses are never touched: a file
    /// naming micro-batch 16,777,215 alone costs nothing for the ids below). The index numbers the
    /// passes' tables by piece of work (see [`Plan::work_slot`]).
    carriers: Vec<[u32; 2]>,
    /// Derived: global stage → hosting rank (hot in every pass, so a table, not arithmetic).
    hosts: Vec<u32>,
    /// Derived: the stages each rank hosts, ascending, rank r's at
    /// `by_rank[by_rank_starts[r]..by_rank_starts[r + 1]]` (a scan of every stage per rank made
    /// the views that ask for every rank quadratic in the ranks).
    by_rank: Vec<u32>,
    by_rank_starts: Vec<u32>,
    /// An evaluation step (forwards only), as said by `forward_only`, `into_evaluation` or a file:
    /// never inferred from the programs, so a plan that forgot its backwards stays invalid.
    pub(crate) evaluation: bool,
    /// The layers of each model part (position), when the plan was written with its split (a
    /// JSON plan's `parts[q].layers`): part of the plan's identity, kept through every pass that
    /// keeps the parts. Checked against a model by the commands that price the plan, not here.
    split: Option<Vec<u64>>,
    /// Each part's activation recomputation (`none`, `selective`, `full`), when the plan was
    /// written with it (a JSON plan's `parts[q].recompute`): part of its identity like the split.
    recompute: Option<Vec<String>>,
}

impl Plan {
    /// Builds a plan, checking its structure. Programs are not checked here (see `pipeweave-check`).
    pub fn new(
        ranks: u32,
        pipelines: Vec<Pipeline>,
        programs: Vec<Vec<Action>>,
    ) -> Result<Plan, PlanError> {
        if ranks == 0 {
            return Err(PlanError::NoRanks);
        }
        let Some(first) = pipelines.first() else {
            return Err(PlanError::NoPipelines);
        };
        let s = first.placement.len();
        if s == 0 {
            return Err(PlanError::NoStages);
        }
        let s = u32::try_from(s).map_err(|_| PlanError::TooLarge)?;
        if u32::try_from(pipelines.len())
            .ok()
            .and_then(|k| k.checked_mul(s))
            .is_none()
        {
            return Err(PlanError::TooLarge);
        }
        let mut max_mb = 0u32;
        for (j, p) in pipelines.iter().enumerate() {
            let j = j as u32;
            if p.placement.len() != s as usize {
                return Err(PlanError::PlacementLength {
                    pipeline: j,
                    found: p.placement.len(),
                    expected: s,
                });
            }
            for (q, &r) in p.placement.iter().enumerate() {
                if r >= ranks {
                    return Err(PlanError::RankOutOfRange {
                        pipeline: j,
                        position: q as u32,
                        rank: r,
                        ranks,
                    });
                }
            }
            if let Some(&m) = p.microbatches.iter().max() {
                max_mb = max_mb.max(m);
            }
        }
        if programs.len() != ranks as usize {
            return Err(PlanError::ProgramCount {
                found: programs.len(),
                ranks,
            });
        }
        let any_mb = pipelines.iter().any(|p| !p.microbatches.is_empty());
        let len = if any_mb {
            usize::try_from(max_mb).map_err(|_| PlanError::TooLarge)? + 1
        } else {
            0
        };
        if len > 1 << 28 {
            return Err(PlanError::TooLarge);
        }
        // Zeros, which the system gives without touching the pages.
        let mut carriers = vec![[0u32; 2]; len];
        let mut pipelines = pipelines;
        for (j, p) in pipelines.iter_mut().enumerate() {
            p.microbatches.sort_unstable();
            p.microbatches.dedup();
            for &m in &p.microbatches {
                let slot = &mut carriers[m as usize][0];
                if *slot != 0 {
                    return Err(PlanError::MicrobatchInTwoPipelines {
                        mb: m,
                        first: *slot - 1,
                        second: j as u32,
                    });
                }
                *slot = j as u32 + 1;
            }
        }
        // The indices in ascending order of id: a walk of every id when most are used, else
        // through the ids sorted (a walk would touch every page of a few scattered ids).
        let listed: usize = pipelines.iter().map(|p| p.microbatches.len()).sum();
        if listed.saturating_mul(8) >= len {
            let mut index = 0;
            for [carrier, at] in &mut carriers {
                if *carrier != 0 {
                    *at = index;
                    index += 1;
                }
            }
        } else {
            let mut ids: Vec<u32> = pipelines
                .iter()
                .flat_map(|p| p.microbatches.iter().copied())
                .collect();
            ids.sort_unstable();
            for (index, &m) in (0u32..).zip(&ids) {
                carriers[m as usize][1] = index;
            }
        }
        let hosts: Vec<u32> = pipelines
            .iter()
            .flat_map(|p| p.placement.iter().copied())
            .collect();
        let (by_rank, by_rank_starts) = stages_by_rank(&hosts, ranks);
        Ok(Plan {
            ranks,
            stages_per_pipeline: s,
            pipelines,
            programs,
            carriers,
            hosts,
            by_rank,
            by_rank_starts,
            evaluation: false,
            split: None,
            recompute: None,
        })
    }

    /// This plan with other programs, one per rank (the caller keeps that count).
    pub(crate) fn with_programs(&self, programs: Vec<Vec<Action>>) -> Plan {
        debug_assert_eq!(programs.len(), self.programs.len());
        Plan {
            ranks: self.ranks,
            stages_per_pipeline: self.stages_per_pipeline,
            pipelines: self.pipelines.clone(),
            programs,
            carriers: self.carriers.clone(),
            hosts: self.hosts.clone(),
            by_rank: self.by_rank.clone(),
            by_rank_starts: self.by_rank_starts.clone(),
            evaluation: self.evaluation,
            split: self.split.clone(),
            recompute: self.recompute.clone(),
        }
    }

    /// A plan with one pipeline carrying micro-batches `0..microbatches`.
    pub fn single(
        ranks: u32,
        placement: Vec<u32>,
        microbatches: u32,
        programs: Vec<Vec<Action>>,
    ) -> Result<Plan, PlanError> {
        Plan::new(
            ranks,
            vec![Pipeline {
                placement,
                microbatches: (0..microbatches).collect(),
            }],
            programs,
        )
    }

    /// This plan with the layers of each part (`split[q]` for position q); `None` forgets it.
    pub fn with_split(mut self, split: Option<Vec<u64>>) -> Plan {
        self.split = split;
        self
    }

    /// This plan with each part's recomputation (`recompute[q]` for position q: `none`,
    /// `selective` or `full`); `None` forgets it.
    pub fn with_recompute(mut self, recompute: Option<Vec<String>>) -> Plan {
        self.recompute = recompute;
        self
    }

    /// Each part's recomputation, when the plan carries it.
    pub fn recompute(&self) -> Option<&[String]> {
        self.recompute.as_deref()
    }

    /// The layers of each part, when the plan carries its split.
    pub fn split(&self) -> Option<&[u64]> {
        self.split.as_deref()
    }

    /// P: the number of ranks (one program each).
    #[inline]
    pub fn ranks(&self) -> u32 {
        self.ranks
    }

    /// S: the number of stages (model parts) of each pipeline.
    #[inline]
    pub fn stages_per_pipeline(&self) -> u32 {
        self.stages_per_pipeline
    }

    /// The pipelines, in global stage order (pipeline j holds stages j·S to j·S + S − 1).
    pub fn pipelines(&self) -> &[Pipeline] {
        &self.pipelines
    }

    /// The number of model copies the plan keeps (one per pipeline).
    pub fn model_copies(&self) -> u32 {
        self.pipelines.len() as u32
    }

    /// Every rank's program, indexed by rank.
    #[inline]
    pub fn programs(&self) -> &[Vec<Action>] {
        &self.programs
    }

    /// Rank `rank`'s program (the rank must exist).
    #[inline]
    pub fn program(&self, rank: u32) -> &[Action] {
        &self.programs[rank as usize]
    }

    /// Total stages over all pipelines (global stage ids are `0..num_stages()`).
    #[inline]
    pub fn num_stages(&self) -> u32 {
        self.stages_per_pipeline * self.pipelines.len() as u32
    }

    /// Total micro-batches carried by all pipelines.
    pub fn num_microbatches(&self) -> u32 {
        self.pipelines
            .iter()
            .map(|p| p.microbatches.len() as u32)
            .sum()
    }

    /// Total compute operations (a pair counts two).
    pub fn num_ops(&self) -> usize {
        self.programs
            .iter()
            .flatten()
            .map(|a| if a.is_pair() { 2 } else { 1 })
            .sum()
    }

    /// Whether `stage` is a global stage id of the plan.
    #[inline]
    pub fn is_stage(&self, stage: u32) -> bool {
        stage < self.num_stages()
    }

    /// (pipeline, position) of a global stage id. The stage must exist.
    pub fn locate(&self, stage: u32) -> (u32, u32) {
        (
            stage / self.stages_per_pipeline,
            stage % self.stages_per_pipeline,
        )
    }

    /// The global id of position `position` in pipeline `pipeline`.
    pub fn stage_id(&self, pipeline: u32, position: u32) -> u32 {
        pipeline * self.stages_per_pipeline + position
    }

    /// The rank hosting a stage, or `None` when the stage does not exist.
    #[inline]
    pub fn stage_rank(&self, stage: u32) -> Option<u32> {
        self.hosts.get(stage as usize).copied()
    }

    /// Stage → hosting rank for every stage, indexed by global stage id.
    pub fn hosts(&self) -> &[u32] {
        &self.hosts
    }

    /// The stage that receives this stage's forward output, if any.
    #[inline]
    pub fn next_stage(&self, stage: u32) -> Option<u32> {
        (!(stage + 1).is_multiple_of(self.stages_per_pipeline)).then_some(stage + 1)
    }

    /// The stage that receives this stage's input gradient, if any.
    #[inline]
    pub fn prev_stage(&self, stage: u32) -> Option<u32> {
        (!stage.is_multiple_of(self.stages_per_pipeline)).then(|| stage - 1)
    }

    /// The stage that receives what `stage` sends in direction `dir`: the next stage for
    /// activations, the previous one for gradients.
    #[inline]
    pub fn receiving_stage(&self, dir: Dir, stage: u32) -> Option<u32> {
        match dir {
            Dir::Fwd => self.next_stage(stage),
            Dir::Bwd => self.prev_stage(stage),
        }
    }

    /// The stage that sends what `stage` receives in direction `dir`: the previous stage for
    /// activations, the next one for gradients.
    #[inline]
    pub fn sending_stage(&self, dir: Dir, stage: u32) -> Option<u32> {
        match dir {
            Dir::Fwd => self.prev_stage(stage),
            Dir::Bwd => self.next_stage(stage),
        }
    }

    /// The model part a stage computes (its position in its pipeline).
    #[inline]
    pub fn part(&self, stage: u32) -> u32 {
        stage % self.stages_per_pipeline
    }

    /// The pipeline carrying a micro-batch, if any.
    #[inline]
    pub fn mb_pipeline(&self, mb: u32) -> Option<u32> {
        self.carriers
            .get(mb as usize)
            .and_then(|c| c[0].checked_sub(1))
    }

    /// One past the largest micro-batch id in use (a dense bound for tables indexed by id).
    #[inline]
    pub fn mb_bound(&self) -> u32 {
        self.carriers.len() as u32
    }

    /// Per micro-batch id below [`Plan::mb_bound`], `[pipeline + 1, index]`: the pipeline carrying
    /// it counted from 1 and its index among all the plan's micro-batches in ascending order (both
    /// 0 where no pipeline carries it). What the passes' hot loops read to find a piece of work's
    /// slot: the work of stage s on micro-batch m has one when `carriers[m][0]` is s's pipeline
    /// plus 1.
    #[inline]
    pub fn carriers(&self) -> &[[u32; 2]] {
        &self.carriers
    }

    /// The number of pieces of work the pipelines list: a slot per stage position and micro-batch,
    /// S × the plan's micro-batches. A valid plan runs a forward and a backward in each (an
    /// evaluation plan a forward), so it has at least this many operations: a table with a slot per
    /// piece of work is as large as the plan.
    pub fn work_slots(&self) -> usize {
        (self.stages_per_pipeline as usize).saturating_mul(self.num_microbatches() as usize)
    }

    /// The slot of the work of `stage` on micro-batch `mb`, in `0..work_slots()`, when the stage
    /// exists and its pipeline carries the micro-batch: the micro-batch's index times S plus the
    /// stage's position. Micro-batch major, so that the passes, whose ranks work on neighbouring
    /// micro-batches at any time, touch a small window of a table sliding along it; and by
    /// position rather than stage, so that many pipelines of few micro-batches each do not make a
    /// table of stages × micro-batches. The neighbours of a stage (`next_stage`, `prev_stage`) are
    /// the neighbouring slots.
    #[inline]
    pub fn work_slot(&self, stage: u32, mb: u32) -> Option<usize> {
        let [carrier, index] = *self.carriers.get(mb as usize)?;
        let s = self.stages_per_pipeline;
        (self.is_stage(stage) && stage / s + 1 == carrier)
            .then(|| index as usize * s as usize + (stage % s) as usize)
    }

    /// The stages a rank hosts, ascending (none for a rank the plan does not have).
    pub fn stages_on_rank(&self, rank: u32) -> &[u32] {
        let r = rank as usize;
        match (self.by_rank_starts.get(r), self.by_rank_starts.get(r + 1)) {
            (Some(&from), Some(&to)) => &self.by_rank[from as usize..to as usize],
            _ => &[],
        }
    }
}

/// The stages of every rank, ascending, one rank after another, and where each rank's start (a
/// counting sort of the stages by their host).
fn stages_by_rank(hosts: &[u32], ranks: u32) -> (Vec<u32>, Vec<u32>) {
    let mut starts = vec![0u32; ranks as usize + 1];
    for &r in hosts {
        starts[r as usize + 1] += 1;
    }
    for r in 1..starts.len() {
        starts[r] += starts[r - 1];
    }
    let mut next = starts.clone();
    let mut by_rank = vec![0u32; hosts.len()];
    for (stage, &r) in (0u32..).zip(hosts) {
        by_rank[next[r as usize] as usize] = stage;
        next[r as usize] += 1;
    }
    (by_rank, starts)
}
