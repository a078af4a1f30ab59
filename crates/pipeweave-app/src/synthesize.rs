//! `pipeweave synthesize` (and Python's `synthesize`): the best order found for a placement, a
//! memory limit and a command's costs (a spec met by the one rule, uniform costs, or unit costs),
//! against the best library schedule and plugin at the same placement and limit.
//!
//! The time limit is the one place the application layer reads the clock: the search itself is
//! deterministic, and stopped only through its progress callback.

use crate::catalog::{Schedules, named_schedules, tell_errors};
use crate::finished::finished;
use crate::request::CostsArg;
use crate::session::Session;
use pipeweave_check::ValidPlan;
use pipeweave_eval::{
    Costing, LibraryPlan, Split, SynthesisReport, best_within, gib, library_at_placement,
    plan_shape, spec_terms,
};
use pipeweave_sim::{CostModel, UnitCosts};
use pipeweave_source::{Catalog, Failure};
use pipeweave_source::{Flag, number};
use pipeweave_synth::{Options, Placement, Problem, exact_applies};
use std::time::{Duration, Instant};

/// Where the stages sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlacementArg {
    /// One pipeline, stage q on rank q mod P (with v stages per rank: v·P stages, looped).
    #[default]
    Loop,
    /// One pipeline of 2P stages in a V (ZB-V's, DualPipeV's).
    V,
    /// Two pipelines in opposite directions, half the micro-batches each (Chimera's, DualPipe's).
    Bidirectional,
}

/// The largest memory limit a synthesis takes, in GiB per GPU: far above any GPU, and small
/// enough that every figure made from it stays a readable number.
pub const MAX_MEMORY_GIB: f64 = 1_048_576.0;

/// What to synthesize, within what, and how long to search.
#[derive(Debug, Clone)]
pub struct SynthesizeRequest {
    /// Ranks P (default on a spec: its `parallelism.pp`).
    pub ranks: Option<u32>,
    /// Micro-batches M (default on a spec: its `training.microbatches`).
    pub microbatches: Option<u32>,
    /// Where the stages sit.
    pub placement: PlacementArg,
    /// Stages per rank of the loop placement.
    pub stages_per_rank: u32,
    /// The memory per GPU a plan may use, in GiB (needs a spec; default: the spec's memory less
    /// its headroom).
    pub memory_limit_gib: Option<f64>,
    /// The most activations a rank may hold (default without a spec: 1F1B's memory).
    pub activations: Option<u32>,
    /// Hold each rank to what the fastest library plan at this placement holds there.
    pub library_memory: bool,
    /// Backwards may split into I and W.
    pub weight_split: bool,
    /// Overlapped F&B pairs (with two pipelines).
    pub pairs: bool,
    /// Stop the search after this long.
    pub time_limit: Duration,
    /// The most plans the local search tries.
    pub evaluations: u64,
    /// The most nodes the exact method visits where it runs (0: off).
    pub exact_nodes: u64,
    /// Seeds the local search.
    pub seed: u64,
    /// The costs.
    pub costs: CostsArg,
}

impl Default for SynthesizeRequest {
    fn default() -> SynthesizeRequest {
        SynthesizeRequest {
            ranks: None,
            microbatches: None,
            placement: PlacementArg::Loop,
            stages_per_rank: 1,
            memory_limit_gib: None,
            activations: None,
            library_memory: false,
            weight_split: true,
            pairs: true,
            time_limit: Duration::from_secs(10),
            evaluations: 1_000_000,
            exact_nodes: 2_000_000,
            seed: 0,
            costs: CostsArg::default(),
        }
    }
}

/// What a synthesis found.
#[derive(Debug)]
pub struct Synthesized {
    /// The report: the plan's makespan, the search, the bound and the library (every figure
    /// finite).
    pub report: SynthesisReport,
    /// The plan found, through the validator.
    pub plan: ValidPlan,
    /// How long the search took.
    pub elapsed: Duration,
}

/// What a search runs on: its costs and its memory budget.
struct Budget {
    model: Box<dyn CostModel>,
    /// Activation units per rank.
    limits: Vec<u32>,
    /// Units per activation of each stage (empty: 1 each).
    weights: Vec<u32>,
    /// Bytes per unit, on a spec.
    unit_bytes: Option<f64>,
    /// Where the limits come from, in words.
    words: String,
    /// On a spec, the spec fitted to the placement (its split and recomputation).
    fitted: Option<pipeweave_spec::Spec>,
}

impl Session<'_> {
    /// The placement `request` asks for: `v` only with the loop.
    fn placement(&self, request: &SynthesizeRequest) -> Result<Placement, Failure> {
        match (request.placement, request.stages_per_rank) {
            (PlacementArg::Loop, v) => Ok(Placement::Loop { v }),
            (PlacementArg::V, 1) => Ok(Placement::V),
            (PlacementArg::Bidirectional, 1) => Ok(Placement::Bidirectional),
            (_, v) => Err(Failure::usage(format!(
                "{} is for the loop placement; the V has two stages per rank and the \
                 bidirectional placement one per pipeline",
                self.front.given(Flag::StagesPerRank, v)
            ))),
        }
    }

    /// Checks the memory options: `--memory-limit` within its range and on a spec, and not with
    /// `--activations`.
    fn check_memory(&self, request: &SynthesizeRequest) -> Result<(), Failure> {
        let flag = |f| self.front.flag(f);
        let Some(g) = request.memory_limit_gib else {
            return Ok(());
        };
        if request.activations.is_some() {
            return Err(Failure::usage(format!(
                "give {} or {}, not both",
                flag(Flag::MemoryLimit),
                flag(Flag::Activations)
            )));
        }
        if request.costs.spec.is_none() {
            return Err(Failure::usage(format!(
                "{} is memory on a spec's GPUs; give one with {}",
                flag(Flag::MemoryLimit),
                flag(Flag::Spec)
            )));
        }
        if !(g.is_finite() && g > 0.0 && g <= MAX_MEMORY_GIB) {
            return Err(Failure::usage(format!(
                "{} is not a memory size in GiB above 0 and at most {MAX_MEMORY_GIB}",
                self.front.given(Flag::MemoryLimit, number(g))
            )));
        }
        Ok(())
    }
}

/// The costs and memory budget of `placement` under `costing` (on a spec, fitted to the
/// placement's plan `skeleton` by its rule, as a note says): `--activations`, `--memory-limit`, the
/// spec's memory, or 1F1B's memory.
fn budget(
    session: &mut Session<'_>,
    request: &SynthesizeRequest,
    placement: Placement,
    costing: &Costing,
    skeleton: &ValidPlan,
) -> Result<Budget, Failure> {
    let p = skeleton.ranks();
    let per_rank = |k: u32| vec![k; p as usize];
    let Costing::Spec { spec, rule, .. } = costing else {
        let model: Box<dyn CostModel> = match costing {
            Costing::Uniform(c) => Box::new(*c),
            Costing::Measured { costs, .. } => {
                let (model, _) = pipeweave_calibrate::MeasuredCosts::for_plan(costs, skeleton)
                    .map_err(Failure::invalid)?;
                Box::new(model)
            }
            _ => Box::new(UnitCosts),
        };
        let (k, words) = match request.activations {
            Some(k) => (k, "--activations"),
            None => (
                placement.one_f_one_b_activations(p),
                "1F1B's memory, the default without a spec",
            ),
        };
        return Ok(Budget {
            model,
            limits: per_rank(k),
            weights: Vec::new(),
            unit_bytes: None,
            words: words.to_owned(),
            fitted: None,
        });
    };
    let limit_bytes = request.memory_limit_gib.map(|g| g * f64::from(1u32 << 30));
    let terms = spec_terms(spec, rule.clone(), skeleton, limit_bytes)
        .map_err(|d| Failure::from_diagnostics(d).about_spec())?;
    let changes: Vec<String> = terms
        .fitted
        .changes
        .iter()
        .filter(|c| !c.is_batch())
        .map(ToString::to_string)
        .collect();
    if !changes.is_empty() {
        session.note(&format!(
            "spec {} fitted to the {} placement: {}",
            spec.name,
            placement.name(),
            changes.join("; ")
        ));
    }
    if let Some(k) = request.activations {
        return Ok(Budget {
            model: Box::new(terms.costs),
            limits: per_rank(k),
            weights: Vec::new(),
            unit_bytes: None,
            words: "--activations".to_owned(),
            fitted: Some(terms.fitted.spec.clone()),
        });
    }
    Ok(Budget {
        model: Box::new(terms.costs),
        limits: terms.budget.limits,
        weights: terms.budget.weights,
        unit_bytes: Some(terms.budget.unit_bytes),
        words: format!(
            "{} per GPU with everything else the spec keeps there",
            gib(terms.limit_bytes)
        ),
        fitted: Some(terms.fitted.spec),
    })
}

/// Every library schedule and plugin that places its stages as `skeleton` does, built through the
/// catalog at its P, M and `v` and timed on `model` (the catalog's errors are told as warnings).
fn library(
    session: &mut Session<'_>,
    skeleton: &ValidPlan,
    v: u32,
    weights: &[u32],
    model: &dyn CostModel,
) -> Vec<(LibraryPlan, ValidPlan)> {
    let catalog = Catalog::read(session.host());
    tell_errors(session, &catalog);
    let named = named_schedules(&catalog);
    let names: Vec<(String, bool)> = named
        .iter()
        .map(|n| (n.shown.clone(), n.declared.takes("v")))
        .collect();
    let mut planner = Schedules::new(session, &named);
    match library_at_placement(&names, &mut planner, skeleton, v, weights, model) {
        Ok(l) => l,
        Err(never) => match never {},
    }
}

/// `pipeweave synthesize`.
pub fn synthesize(
    session: &mut Session<'_>,
    request: &SynthesizeRequest,
) -> Result<Synthesized, Failure> {
    let placement = session.placement(request)?;
    session.check_memory(request)?;
    let costing = session.costing(&request.costs)?;
    let (p, m) = match (&costing, request.ranks, request.microbatches) {
        (Costing::Spec { spec, rule, .. }, ranks, mbs) => plan_shape(spec, rule, ranks, mbs)
            .map_err(|d| {
                Failure::invalid(format!("spec {}: {}", spec.name, d.message)).about_spec()
            })?,
        (_, Some(p), Some(m)) => (p, m),
        _ => {
            return Err(Failure::usage(format!(
                "synthesize needs {} and {}, or a {} that gives them",
                session.front.flag(Flag::Ranks),
                session.front.flag(Flag::Microbatches),
                session.front.flag(Flag::Spec)
            )));
        }
    };
    let pairs = request.pairs && placement == Placement::Bidirectional;
    let problem = |limits: Vec<u32>, weights: Vec<u32>| Problem {
        ranks: p,
        microbatches: m,
        placement,
        weight_split: request.weight_split,
        pairs,
        limits,
        weights,
    };
    let started = Instant::now();
    // A plan of the placement: what the spec is fitted to and priced on (its costs and memory
    // depend on the placement, not on the order).
    let skeleton = pipeweave_synth::placement_plan(&problem(Vec::new(), Vec::new()))
        .map_err(|e| Failure::invalid(e.to_string()))?;
    let budget = budget(session, request, placement, &costing, &skeleton)?;
    let model = budget.model.as_ref();
    let library = library(
        session,
        &skeleton,
        request.stages_per_rank,
        &budget.weights,
        model,
    );
    let (limits, limit_words) = if request.library_memory {
        let best = best_within(&library, &budget.limits).ok_or_else(|| {
            Failure::invalid(format!(
                "{}: no library schedule or plugin places its stages as the {} placement does \
                 within the limit ({})",
                session.front.flag(Flag::LibraryMemory),
                placement.name(),
                budget.words
            ))
        })?;
        (
            best.0.peaks.clone(),
            format!("what {} holds, within {}", best.0.schedule, budget.words),
        )
    } else {
        (budget.limits.clone(), budget.words.clone())
    };
    let problem = problem(limits.clone(), budget.weights.clone());
    let options = Options {
        seed: request.seed,
        evaluations: request.evaluations,
        exact_nodes: if exact_applies(&problem) {
            request.exact_nodes
        } else {
            0
        },
        ..Options::default()
    };
    // The local search may start from the fastest library plan within the limits.
    let best_library = best_within(&library, &limits);
    let starts: Vec<&pipeweave_plan::Plan> =
        best_library.map(|(_, plan)| &**plan).into_iter().collect();
    let events = session.events();
    let mut report = |progress: pipeweave_synth::Progress| {
        events.synthesis_progress(
            progress.evaluations,
            request.evaluations,
            progress.best.makespan,
        );
        started.elapsed() < request.time_limit
    };
    let result = pipeweave_synth::synthesize_from(&problem, model, &options, &starts, &mut report);
    session.events().synthesis_done();
    let found = result.map_err(|e| Failure::invalid(e.to_string()))?;
    let elapsed = started.elapsed();
    let report = SynthesisReport::new(
        &problem,
        &found,
        &costing,
        limit_words,
        budget.unit_bytes,
        best_library.map(|(l, _)| l.clone()),
    );
    let report = finished("synthesize", report)?;
    let plan = resplit(session, &costing, budget.fitted.as_ref(), found.plan)?;
    Ok(Synthesized {
        report,
        plan,
        elapsed,
    })
}

/// Under `--split auto`, the split (and each part's recomputation) searched again for the
/// synthesized order: the search fitted the spec to the placement's skeleton, whose order keeps
/// other micro-batches in flight than the plan found. One split search (a handful of exact
/// pricings, see `pipeweave_eval::search_split`); the plan carries the split that wins (the
/// skeleton's is a candidate, so it is never worse), and a note says both steps.
fn resplit(
    session: &mut Session<'_>,
    costing: &Costing,
    fitted: Option<&pipeweave_spec::Spec>,
    plan: ValidPlan,
) -> Result<ValidPlan, Failure> {
    let (Costing::Spec { rule, .. }, Some(spec)) = (costing, fitted) else {
        return Ok(plan);
    };
    if rule.split != Split::Auto || spec.measured != pipeweave_spec::Measured::default() {
        return Ok(plan);
    }
    let options = if rule.recompute.is_some() {
        Vec::new()
    } else {
        pipeweave_eval::recompute_options(spec)
    };
    let found = pipeweave_eval::search_split_from(spec, &plan, None, &options)
        .map_err(|e| Failure::invalid(format!("spec {}: {e}", spec.name)))?;
    let parts = spec.parallelism.layers_per_stage.len();
    let own = (
        spec.parallelism.layers_per_stage.clone(),
        spec.training.recompute_parts(parts),
    );
    let recompute: Vec<String> = found
        .recompute
        .iter()
        .map(|r| r.name().to_owned())
        .collect();
    if (found.layers.clone(), found.recompute.clone()) != own {
        let step = |t: Option<f64>| t.map_or("does not fit".to_owned(), |t| format!("{t:.4} s"));
        session.note(&format!(
            "split searched again for the synthesized order: layers per part {}, recomputation \
             {} (a step of {} against {} with the split searched for the placement)",
            pipeweave_eval::join_layers(&found.layers),
            pipeweave_eval::recompute_text(&found.recompute),
            step(found.step_time_s),
            step(found.own_step_time_s),
        ));
    }
    Ok(plan
        .with_split(Some(found.layers))
        .with_recompute(Some(recompute)))
}
