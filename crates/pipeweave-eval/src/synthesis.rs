//! Synthesis set against the library: the plans every library schedule and plugin gives at the
//! synthesized plan's placement, with their memory and makespan under the same costs, and the
//! report of a synthesis (plain data, the JSON of `synthesize`).

use crate::costing::{Costing, TimeUnit};
use crate::fit::{Fitted, SpecRule, fit};
use crate::limits::{ActivationBudget, activation_budget};
use crate::planner::{PlanRequest, Planner, Unbuilt};
use pipeweave_check::ValidPlan;
use pipeweave_cost::CostTable;
use pipeweave_diagnostics::Diagnostic;
use pipeweave_sim::{CostModel, simulate};
use pipeweave_spec::Spec;
use pipeweave_synth::{ExactEnd, Problem, Synthesis, weighted_peak};
use serde::Serialize;

/// A library schedule's (or plugin's) plan at a placement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LibraryPlan {
    /// The schedule, as the catalog shows it.
    pub schedule: String,
    /// Its simulated makespan under the synthesis's costs.
    pub makespan: f64,
    /// The most activations each rank holds.
    pub peaks: Vec<u32>,
}

impl LibraryPlan {
    /// Whether it holds no more than `limits` on every rank.
    pub fn within(&self, limits: &[u32]) -> bool {
        self.peaks.iter().zip(limits).all(|(a, b)| a <= b)
    }
}

/// Whether two plans place their stages alike (ranks, pipelines, each pipeline's placement).
pub fn same_placement(a: &ValidPlan, b: &ValidPlan) -> bool {
    a.ranks() == b.ranks()
        && a.pipelines().len() == b.pipelines().len()
        && a.pipelines()
            .iter()
            .zip(b.pipelines())
            .all(|(x, y)| x.placement == y.placement)
}

/// Every schedule of `names` (with whether it takes `v`) built at `placement`'s shape (P, M and
/// `v`) that places its stages as `placement` does, with its plan, its peaks (activations weighed
/// by `weights`, 1 each where empty) and its makespan under `costs`, in the order of `names`.
/// Schedules that cannot be built, place their stages otherwise or cannot be simulated are left
/// out.
pub fn library_at_placement<P: Planner + ?Sized>(
    names: &[(String, bool)],
    planner: &mut P,
    placement: &ValidPlan,
    v: u32,
    weights: &[u32],
    costs: &dyn CostModel,
) -> Result<Vec<(LibraryPlan, ValidPlan)>, P::Stop> {
    let mut out = Vec::new();
    for (name, takes_v) in names {
        let request = PlanRequest {
            ranks: Some(placement.ranks()),
            microbatches: Some(placement.num_microbatches()),
            stages_per_rank: takes_v.then_some(v),
        };
        let plan = match planner.plan(name, &request) {
            Ok(plan) => plan,
            Err(Unbuilt::Refused(_)) => continue,
            Err(Unbuilt::Stop(s)) => return Err(s),
        };
        if !same_placement(placement, &plan) {
            continue;
        }
        let Ok(t) = simulate(&plan, costs) else {
            continue;
        };
        let peaks = (0..plan.ranks())
            .map(|r| u32::try_from(weighted_peak(weights, plan.program(r))).unwrap_or(u32::MAX))
            .collect();
        let name = if *takes_v {
            format!("{name} (v {v})")
        } else {
            name.clone()
        };
        out.push((
            LibraryPlan {
                schedule: name,
                makespan: t.timing.makespan,
                peaks,
            },
            plan,
        ));
    }
    Ok(out)
}

/// The fastest of `plans` within `limits` (the first of equals).
pub fn best_within<'a, T>(
    plans: &'a [(LibraryPlan, T)],
    limits: &[u32],
) -> Option<&'a (LibraryPlan, T)> {
    plans.iter().filter(|(l, _)| l.within(limits)).fold(
        None,
        |best: Option<&(LibraryPlan, T)>, l| match best {
            Some(b) if b.0.makespan <= l.0.makespan => Some(b),
            _ => Some(l),
        },
    )
}

/// The exact method's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExactReport {
    /// Nodes of its search tree visited.
    pub nodes: u64,
    /// Whether it finished, proving its makespan optimal (over plans that keep each stage's work
    /// in micro-batch order).
    pub proved: bool,
    /// The best makespan it knows.
    pub makespan: f64,
    /// Why it ended.
    pub ended_by: ExactEnded,
}

/// Why the exact method ended (its JSON spelling is snake case: `node_budget`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExactEnded {
    /// It searched every plan: its makespan is proved optimal.
    Complete,
    /// It visited as many nodes as it was given (`--exact-nodes`) first.
    NodeBudget,
    /// The time limit stopped it.
    TimeLimit,
    /// It did not run: some duration is zero, and it orders actions by their start times.
    ZeroDuration,
    /// It did not run: the costs span too wide a range to compare times exactly.
    CostRange,
}

impl From<ExactEnd> for ExactEnded {
    fn from(end: ExactEnd) -> ExactEnded {
        match end {
            ExactEnd::Complete => ExactEnded::Complete,
            ExactEnd::NodeBudget => ExactEnded::NodeBudget,
            // The one stop a command gives a synthesis is its time limit.
            ExactEnd::Stopped => ExactEnded::TimeLimit,
            ExactEnd::ZeroDuration => ExactEnded::ZeroDuration,
            ExactEnd::CostRange => ExactEnded::CostRange,
        }
    }
}

/// Where a synthesis's costs come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CostSource {
    /// F = I = W = 1, B = 2, F&B = 3.
    Unit,
    /// `--costs`.
    Uniform,
    /// A cluster spec.
    Spec,
    /// Costs measured in a profiled run (`--costs-from`).
    Measured,
}

/// What a synthesis found, what it cost to find, and how it compares: the JSON of `synthesize`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SynthesisReport {
    /// `loop`, `loop (v N)`, `v` or `bidirectional`.
    pub placement: String,
    /// Ranks P.
    pub ranks: u32,
    /// Micro-batches M.
    pub microbatches: u32,
    /// What the costs are called: `unit`, `uniform` (`--costs`) or the spec's name.
    pub costs: String,
    /// Where they come from (a spec may be named `unit`: this says what it is).
    pub cost_source: CostSource,
    /// The unit of every time below.
    pub time_unit: TimeUnit,
    /// The most activation units each rank may hold.
    pub limits: Vec<u32>,
    /// Bytes per unit of `limits` (with a spec; without one a unit is one stage's activation).
    pub unit_bytes: Option<f64>,
    /// Whether the local search started from the library's plan (better than the heuristic's).
    pub started_from_library: bool,
    /// Where the limits come from, in words.
    pub limits_from: String,
    /// The synthesized plan's simulated makespan.
    pub makespan: f64,
    /// The constructive heuristic's best makespan, before local improvement (none when no policy
    /// met the limits).
    pub heuristic_makespan: Option<f64>,
    /// Constructions the heuristic ran: list-scheduler policies and periodic blocks (one per
    /// period tried).
    pub policies: usize,
    /// How many of them met the limits.
    pub policies_within_limits: usize,
    /// Plans the local search tried.
    pub evaluations: u64,
    /// Whether a time limit stopped the local search before its budget.
    pub stopped_by_time_limit: bool,
    /// The exact method, where it ran.
    pub exact: Option<ExactReport>,
    /// A lower bound of every plan's makespan.
    pub lower_bound: f64,
    /// makespan / lower bound − 1, a fraction.
    pub gap: f64,
    /// Whether the makespan is proved optimal (it meets the bound, or the exact method finished,
    /// both compared exactly).
    pub proved_optimal: bool,
    /// Whether times could be compared exactly, as whole numbers of one tick: false where the
    /// costs span too wide a range, and then nothing is proved.
    pub exact_arithmetic: bool,
    /// What the proofs leave out, in `time_unit`: a plan shorter by this much or less. Zero (the
    /// proofs are strict) for costs of a few binary digits, as unit costs; else a millionth of the
    /// shortest duration, below which exact times differ only in the last bits of the costs.
    pub proof_slack: f64,
    /// The fastest library schedule or plugin at the same placement within the same limits.
    pub library: Option<LibraryPlan>,
    /// makespan / the library's − 1, a fraction (negative: faster).
    pub change_vs_library: Option<f64>,
}

impl SynthesisReport {
    /// The report of `synthesis` of `problem`.
    pub fn new(
        problem: &Problem,
        synthesis: &Synthesis,
        costing: &Costing,
        limits_from: String,
        unit_bytes: Option<f64>,
        library: Option<LibraryPlan>,
    ) -> SynthesisReport {
        let makespan = synthesis.score.makespan;
        let (costs, cost_source) = match costing {
            Costing::Unit => ("unit".to_owned(), CostSource::Unit),
            Costing::Uniform(_) => ("uniform".to_owned(), CostSource::Uniform),
            Costing::Spec { spec, .. } => (spec.name.clone(), CostSource::Spec),
            Costing::Measured { file, .. } => (file.clone(), CostSource::Measured),
        };
        SynthesisReport {
            placement: problem.placement.name(),
            ranks: problem.ranks,
            microbatches: problem.microbatches,
            costs,
            cost_source,
            time_unit: costing.unit(),
            limits: problem.limits.clone(),
            unit_bytes,
            started_from_library: synthesis.started_from.is_some(),
            limits_from,
            makespan,
            heuristic_makespan: synthesis.heuristic.map(|h| h.makespan),
            policies: synthesis.policies.0,
            policies_within_limits: synthesis.policies.1,
            evaluations: synthesis.evaluations,
            stopped_by_time_limit: synthesis.stopped,
            exact: synthesis.exact.as_ref().map(|e| ExactReport {
                nodes: e.nodes,
                proved: e.proved,
                makespan: e.makespan,
                ended_by: e.end.into(),
            }),
            lower_bound: synthesis.lower_bound,
            gap: if synthesis.lower_bound > 0.0 {
                makespan / synthesis.lower_bound - 1.0
            } else {
                0.0
            },
            proved_optimal: synthesis.proved_optimal(),
            exact_arithmetic: synthesis.exact_arithmetic,
            proof_slack: synthesis.proof_slack,
            change_vs_library: library.as_ref().map(|l| makespan / l.makespan - 1.0),
            library,
        }
    }
}

/// A synthesis on a spec: the spec fitted to the placement, its costs for the placement, and each
/// rank's activation budget within the memory limit.
#[derive(Debug, Clone)]
pub struct SpecTerms {
    /// The spec fitted to the placement, and how.
    pub fitted: Fitted,
    /// Its costs for a plan of the placement.
    pub costs: CostTable,
    /// Each rank's room for activations.
    pub budget: ActivationBudget,
    /// The bytes per GPU the budget keeps within.
    pub limit_bytes: f64,
}

/// What a synthesis at `skeleton`'s placement runs on with `spec`, met by `rule` ([`fit`]): its
/// costs, and each rank's activation budget within `limit_bytes` per GPU (by default the spec's
/// memory less its headroom). The one chain from a spec to a synthesis's terms, for
/// `synthesize` and for `synth:` names alike.
pub fn spec_terms(
    spec: &Spec,
    rule: SpecRule,
    skeleton: &ValidPlan,
    limit_bytes: Option<f64>,
) -> Result<SpecTerms, Vec<Diagnostic>> {
    let named = |d: Vec<Diagnostic>| {
        d.into_iter()
            .map(|mut d| {
                d.message = format!("spec {}: {}", spec.name, d.message);
                d
            })
            .collect::<Vec<_>>()
    };
    let fitted = fit(spec, skeleton, rule).map_err(named)?;
    let costs = CostTable::new(&fitted.spec, skeleton).map_err(named)?;
    let limit = limit_bytes.unwrap_or_else(|| fitted.spec.memory_limit_bytes());
    let budget = activation_budget(&fitted.spec, &costs, skeleton, limit).map_err(|r| {
        vec![Diagnostic::error(format!(
            "rank {r} has no room for any activation within {} on spec {}: its weights, \
             gradients, optimizer state and buffers take it all",
            gib(limit),
            fitted.spec.name
        ))]
    })?;
    Ok(SpecTerms {
        fitted,
        costs,
        budget,
        limit_bytes: limit,
    })
}

/// Bytes as GiB with one decimal, as the synthesis's words give a memory limit.
pub fn gib(bytes: f64) -> String {
    format!("{:.1} GiB", bytes / f64::from(1u32 << 30))
}

/// The costs a synthesis runs on, and on a spec its activation budget.
pub type Terms = (Box<dyn CostModel>, Option<ActivationBudget>);

/// What a synthesis at `skeleton`'s placement is searched under when `costing` is a command's: its
/// costs, and on a spec (fitted to the placement by its rule) each rank's activation budget within
/// the spec's memory limit ([`spec_terms`]). `None` under unit costs (a synthesis's own default).
pub fn synthesis_terms(
    costing: &Costing,
    skeleton: &ValidPlan,
) -> Result<Option<Terms>, Vec<Diagnostic>> {
    match costing {
        Costing::Unit => Ok(None),
        Costing::Uniform(c) => Ok(Some((Box::new(*c), None))),
        Costing::Measured { costs, .. } => {
            let (model, _) = pipeweave_calibrate::MeasuredCosts::for_plan(costs, skeleton)
                .map_err(|e| vec![Diagnostic::error(e)])?;
            Ok(Some((Box::new(model), None)))
        }
        Costing::Spec { spec, rule, .. } => {
            let terms = spec_terms(spec, rule.clone(), skeleton, None)?;
            Ok(Some((Box::new(terms.costs), Some(terms.budget))))
        }
    }
}
