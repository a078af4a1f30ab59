//! Where the layers go: the split of a model's layers over a plan's parts, as a command is asked
//! for it (`--split auto|even|A,B,C,…`), and the search behind `auto`.
//!
//! **The search.** A part's time and memory are, to within the overlap of its passes'
//! communication, the sums of its pieces' ([`SplitWeights`]: the embedding on the first part, the
//! head and multi-token prediction on the last, one dense and one MoE layer, each priced by the
//! cost model as a part of the plan would be). With prefix sums over the layers a split is
//! weighed in time linear in its parts, and:
//! 1. the even split (always a candidate, so the searched split is never worse) and the spec's
//!    own when it has one;
//! 2. the min-max split of the parts' times: the least bottleneck found by bisection, each probe
//!    a greedy fill from the first part (the greedy is exact for contiguous cuts of non-negative
//!    weights), so `O(layers · 64)`;
//! 3. from each of these, a steepest descent that moves one layer across one boundary at a time,
//!    for the least rank time (a rank's time is the sum of the parts it hosts, every pipeline's
//!    replicas counted: interleaved, V-shaped and bidirectional placements alike), and for the
//!    least rank memory (weights, gradients and optimizer state per parameter, and each part's
//!    activations times the most micro-batches of it the rank keeps at once in the plan's own
//!    order), and for the least time among the splits whose memory fits the spec's limit;
//!    each descent ends when no move improves, after at most `layers` moves (and at most
//!    [`MAX_MOVES`], and fewer where the parts times the ranks are many: [`MAX_DESCENT_WORK`]) of
//!    `O(parts · ranks)` each;
//! 4. the even split, the spec's own and the [`PRICED_PER_SEARCH`] best of the other distinct
//!    candidates by the weights (least memory over the limit, then least rank time) priced
//!    exactly: a cost table, each rank's memory and, when every rank fits, a simulation. The
//!    fastest that fits wins; when none fits, the one that needs the least memory.

use crate::step::StepReport;
use pipeweave_check::ValidPlan;
use pipeweave_cost::{CostTable, SplitWeights, rank_memory, rank_state, rank_weights};
use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::Kind;
use pipeweave_sim::{live_activations, simulate};
use pipeweave_spec::Spec;
use std::fmt;

/// How the layers are split over a plan's parts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Split {
    /// The plan's own split (a JSON plan that carries one), else the spec's `layers_per_stage`
    /// where it has the plan's parts, else even.
    #[default]
    Spec,
    /// As evenly as possible, the extra layers in the middle parts.
    Even,
    /// Searched (see the module documentation).
    Auto,
    /// Exactly these layers per part.
    Layers(Vec<u64>),
}

impl Split {
    /// Reads `auto`, `even`, `spec` or comma-separated layer counts (`1,8,8,7`).
    pub fn parse(text: &str) -> Result<Split, String> {
        let t = text.trim();
        match t {
            "auto" => return Ok(Split::Auto),
            "even" => return Ok(Split::Even),
            "spec" => return Ok(Split::Spec),
            _ => {}
        }
        let mut layers = Vec::new();
        for (i, cell) in t.split(',').enumerate() {
            let cell = cell.trim();
            match cell.parse::<u64>() {
                Ok(n) if n <= 1 << 20 => layers.push(n),
                _ => {
                    return Err(format!(
                        "expected `auto`, `even` or layers per part like `1,8,8,7`, found `{}` \
                         at entry {}",
                        cell.chars().take(40).collect::<String>(),
                        i + 1
                    ));
                }
            }
            if layers.len() > 1 << 16 {
                return Err("more than 65,536 parts".to_owned());
            }
        }
        Ok(Split::Layers(layers))
    }
}

impl fmt::Display for Split {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Split::Spec => write!(f, "spec"),
            Split::Even => write!(f, "even"),
            Split::Auto => write!(f, "auto"),
            Split::Layers(v) => write!(f, "{}", join(v)),
        }
    }
}

/// Layer counts joined by commas.
pub fn join(v: &[u64]) -> String {
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// Why `layers` cannot be the split of a model of `total` layers into `parts` parts, if it
/// cannot: every part but the first and the last needs a layer (the first holds the embedding,
/// the last the head, so they may hold none).
pub fn split_problem(layers: &[u64], total: u64, parts: u32) -> Option<String> {
    if layers.len() != parts as usize {
        return Some(format!(
            "the split {} has {} part{} but the plan cuts the model into {parts}",
            join(layers),
            layers.len(),
            if layers.len() == 1 { "" } else { "s" }
        ));
    }
    let sum: u64 = layers.iter().sum();
    if sum != total {
        return Some(format!(
            "the split {} holds {sum} layers but the model has {total}",
            join(layers)
        ));
    }
    let n = layers.len();
    if let Some(q) = (1..n.saturating_sub(1)).find(|&q| layers[q] == 0) {
        return Some(format!(
            "part {q} of the split {} holds no layer; only the first and the last part (embedding, \
             head) may",
            join(layers)
        ));
    }
    if n == 1 && total == 0 {
        return Some("the model has no layer".to_owned());
    }
    None
}

/// What the split search found for one plan.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitFound {
    /// Layers per part of the chosen split.
    pub layers: Vec<u64>,
    /// Its step in seconds, when it fits and was simulated.
    pub step_time_s: Option<f64>,
    /// The most loaded GPU's memory in bytes.
    pub memory_bytes: f64,
    /// The even split's step, when it fits.
    pub even_step_time_s: Option<f64>,
    /// The even split's most loaded GPU's memory in bytes.
    pub even_memory_bytes: f64,
    /// Distinct candidates priced exactly.
    pub priced: usize,
}

/// The layers of each part's pieces and each rank's view of the parts.
struct Model {
    /// `prefix[k]`: the seconds, activation bytes and state bytes of layers `[0, k)`.
    time: Vec<f64>,
    act: Vec<f64>,
    state: Vec<f64>,
    /// The first and last parts' own pieces: (seconds, activation bytes, state bytes).
    first: (f64, f64, f64),
    last: (f64, f64, f64),
    parts: usize,
    /// For each rank, the positions it hosts (one entry per replica) with the most micro-batches
    /// of that position it keeps at once.
    hosted: Vec<Vec<(usize, f64)>>,
    /// The memory limit in bytes, less what a rank holds besides its parts' (buffers, reserve).
    limit: f64,
}

impl Model {
    fn of(spec: &Spec, plan: &ValidPlan, w: &SplitWeights) -> Result<Model, Vec<Diagnostic>> {
        let parts = spec.parallelism.layers_per_stage.len().max(1);
        let costs = CostTable::new(spec, plan)?;
        // bytes of weights, gradients and optimizer state per parameter, as the plan's ranks
        // hold them (sharding included), from the cost model's own memory of the even split
        let (mut bytes, mut params) = (0.0, 0.0);
        for r in 0..plan.ranks() {
            bytes += rank_state(spec, &costs, plan, r).total();
            let (d, e) = rank_weights(&costs, plan, r);
            params += d + e;
        }
        let per_param = if params > 0.0 { bytes / params } else { 0.0 };
        let state = |x: &pipeweave_cost::Weight| (x.dense_params + x.expert_params) * per_param;
        let layers = spec.model.layers as usize;
        let (mut time, mut act, mut st) = (vec![0.0], vec![0.0], vec![0.0]);
        for k in 0..layers {
            let l = w.layer(k as u64);
            time.push(time[k] + l.seconds);
            act.push(act[k] + l.activation_bytes);
            st.push(st[k] + state(&l));
        }
        let s = plan.stages_per_pipeline();
        let hosted = (0..plan.ranks())
            .map(|r| {
                // the most micro-batches of each stage the rank keeps at once
                let mut live = std::collections::BTreeMap::<u32, (i64, i64)>::new();
                for a in plan.program(r) {
                    for op in a.ops() {
                        let e = live.entry(op.stage).or_insert((0, 0));
                        match op.kind {
                            Kind::F => e.0 += 1,
                            Kind::B | Kind::I => e.0 -= 1,
                            Kind::W => {}
                        }
                        e.1 = e.1.max(e.0);
                    }
                }
                let keeps = live_activations(plan.program(r)).peak > 0;
                plan.stages_on_rank(r)
                    .iter()
                    .map(|&st| {
                        let most = live.get(&st).map_or(0, |x| x.1);
                        ((st % s) as usize, if keeps { most as f64 } else { 0.0 })
                    })
                    .collect()
            })
            .collect();
        let extra = pipeweave_cost::rank_buffers(spec, &costs) + spec.reserve_bytes();
        Ok(Model {
            time,
            act,
            state: st,
            first: (w.first.seconds, w.first.activation_bytes, state(&w.first)),
            last: (w.last.seconds, w.last.activation_bytes, state(&w.last)),
            parts,
            hosted,
            limit: spec.memory_limit_bytes() - extra,
        })
    }

    /// (seconds, activation bytes, state bytes) of position `q` holding layers `[a, b)`.
    fn part(&self, q: usize, a: usize, b: usize) -> (f64, f64, f64) {
        let mut x = (
            self.time[b] - self.time[a],
            self.act[b] - self.act[a],
            self.state[b] - self.state[a],
        );
        for (on, fixed) in [(q == 0, self.first), (q + 1 == self.parts, self.last)] {
            if on {
                x.0 += fixed.0;
                x.1 += fixed.1;
                x.2 += fixed.2;
            }
        }
        x
    }

    /// Each rank's (seconds, bytes) under the split given by its boundaries.
    fn ranks(&self, bounds: &[usize]) -> Vec<(f64, f64)> {
        let parts: Vec<(f64, f64, f64)> = (0..self.parts)
            .map(|q| self.part(q, bounds[q], bounds[q + 1]))
            .collect();
        self.hosted
            .iter()
            .map(|hosted| {
                hosted.iter().fold((0.0, 0.0), |(t, m), &(q, keeps)| {
                    let p = parts[q];
                    (t + p.0, m + p.2 + p.1 * keeps)
                })
            })
            .collect()
    }
}

#[derive(Debug, Clone, Copy)]
enum Goal {
    Time,
    TimeWithin,
}

fn bounds_of(layers: &[u64]) -> Vec<usize> {
    let mut out = vec![0usize];
    for &n in layers {
        out.push(out[out.len() - 1] + n as usize);
    }
    out
}

fn layers_of(bounds: &[usize]) -> Vec<u64> {
    bounds.windows(2).map(|w| (w[1] - w[0]) as u64).collect()
}

/// Whether part `q` of `parts` may hold no layer.
fn may_be_empty(q: usize, parts: usize) -> bool {
    q == 0 || q + 1 == parts
}

/// The split that fills each part as far as `fits` allows, from the first: `None` when the layers
/// do not all fit. Exact for the question "is there a contiguous split where every part fits":
/// `fits` grows false with more layers, so a longer prefix never leaves a harder rest.
fn fill(m: &Model, fits: &dyn Fn(usize, usize, usize) -> bool) -> Option<Vec<usize>> {
    let layers = m.time.len() - 1;
    let s = m.parts;
    let mut bounds = vec![0usize];
    let mut at = 0usize;
    for q in 0..s {
        if q + 1 == s {
            if !fits(q, at, layers) {
                return None;
            }
            bounds.push(layers);
            break;
        }
        let needed_after = (q + 1..s).filter(|&p| !may_be_empty(p, s)).count();
        let most = layers.checked_sub(needed_after)?;
        let least = if may_be_empty(q, s) { at } else { at + 1 };
        if least > most || !fits(q, at, least) {
            return None;
        }
        let mut end = least;
        while end < most && fits(q, at, end + 1) {
            end += 1;
        }
        bounds.push(end);
        at = end;
    }
    Some(bounds)
}

/// The least `x` in `[0, hi]` (to 2⁻⁴⁸ of `hi`) at which `at(x)` gives a split, with that split.
fn bisect(hi: f64, at: &dyn Fn(f64) -> Option<Vec<usize>>) -> Option<Vec<usize>> {
    let (mut lo, mut hi) = (0.0, hi.max(f64::MIN_POSITIVE));
    let mut best = at(hi)?;
    for _ in 0..48 {
        let mid = 0.5 * (lo + hi);
        match at(mid) {
            Some(b) => {
                best = b;
                hi = mid;
            }
            None => lo = mid,
        }
    }
    Some(best)
}

/// The starting splits of the descents: the min-max split of the parts' times; the min-max
/// split of the parts' memory, each part held to an equal share of its rank's limit; and the
/// min-max split of the parts' times among those where every part keeps within its share.
fn balanced(m: &Model) -> Vec<Vec<usize>> {
    let layers = m.time.len() - 1;
    // each position's hosts: (rank's share of the limit per part, micro-batches it keeps)
    let mut count = vec![0usize; m.hosted.len()];
    for (r, hosted) in m.hosted.iter().enumerate() {
        count[r] = hosted.len().max(1);
    }
    let mut hosts: Vec<Vec<(f64, f64)>> = vec![Vec::new(); m.parts];
    for (r, hosted) in m.hosted.iter().enumerate() {
        for &(q, keeps) in hosted {
            hosts[q].push((m.limit / count[r] as f64, keeps));
        }
    }
    let share_used = |q: usize, a: usize, b: usize| {
        let p = m.part(q, a, b);
        hosts[q]
            .iter()
            .map(|&(share, keeps)| (p.2 + p.1 * keeps) / share.max(1.0))
            .fold(0.0, f64::max)
    };
    let total = m.part(0, 0, layers).0 + m.last.0;
    let mut out = Vec::new();
    if let Some(b) = bisect(total, &|cap| fill(m, &|q, a, b| m.part(q, a, b).0 <= cap)) {
        out.push(b);
    }
    let most = (0..m.parts)
        .map(|q| share_used(q, 0, layers))
        .fold(0.0, f64::max);
    if let Some(b) = bisect(most, &|cap| fill(m, &|q, a, b| share_used(q, a, b) <= cap)) {
        out.push(b);
    }
    let within = |cap: f64| {
        fill(m, &|q, a, b| {
            m.part(q, a, b).0 <= cap && share_used(q, a, b) <= 1.0
        })
    };
    if within(total).is_some()
        && let Some(b) = bisect(total, &within)
    {
        out.push(b);
    }
    out
}

/// The most moves of one descent: a descent on a model of thousands of layers stops there (its
/// moves cost the parts times the ranks each).
pub const MAX_MOVES: usize = 256;

/// The most rank updates one descent makes (moves × neighbours × ranks): a plan of hundreds of
/// parts and ranks gets fewer moves.
pub const MAX_DESCENT_WORK: usize = 1 << 20;

/// Steepest descent from `bounds`: one layer across one boundary per move. Each move is weighed
/// by updating the ranks that host the two parts it changes, so a move costs the ranks, not the
/// parts.
fn descend(m: &Model, mut bounds: Vec<usize>, goal: Goal) -> Vec<usize> {
    let s = m.parts;
    let layers = m.time.len() - 1;
    // the ranks hosting each position, with the micro-batches of it they keep
    let mut hosts: Vec<Vec<(usize, f64)>> = vec![Vec::new(); s];
    for (r, hosted) in m.hosted.iter().enumerate() {
        for &(q, keeps) in hosted {
            hosts[q].push((r, keeps));
        }
    }
    let mut ranks = m.ranks(&bounds);
    let key_of = |ranks: &[(f64, f64)]| {
        let time = ranks.iter().map(|r| r.0).fold(0.0, f64::max);
        let mem = ranks.iter().map(|r| r.1).fold(0.0, f64::max);
        let spread: f64 = ranks.iter().map(|r| r.0 * r.0).sum();
        match goal {
            Goal::Time => (time, spread, mem),
            Goal::TimeWithin => ((mem - m.limit).max(0.0), time, spread),
        }
    };
    let mut key = key_of(&ranks);
    let mut trial = ranks.clone();
    // a move weighs 2(S − 1) neighbours at O(ranks) each: the moves are bounded so that a descent
    // weighs at most MAX_DESCENT_WORK rank updates, whatever the plan's size
    let per_move = (2 * s * m.hosted.len()).max(1);
    let moves = layers
        .clamp(1, MAX_MOVES)
        .min((MAX_DESCENT_WORK / per_move).max(1));
    for _ in 0..moves {
        let mut best: Option<(usize, usize, (f64, f64, f64))> = None;
        for i in 1..s {
            for delta in [-1i64, 1] {
                let b = bounds[i] as i64 + delta;
                if b < bounds[i - 1] as i64 || b > bounds[i + 1] as i64 {
                    continue;
                }
                let b = b as usize;
                // part i−1 becomes [bounds[i−1], b), part i [b, bounds[i+1])
                if (b == bounds[i - 1] && !may_be_empty(i - 1, s))
                    || (b == bounds[i + 1] && !may_be_empty(i, s))
                {
                    continue;
                }
                trial.copy_from_slice(&ranks);
                for (q, (a, z), (a2, z2)) in [
                    (i - 1, (bounds[i - 1], bounds[i]), (bounds[i - 1], b)),
                    (i, (bounds[i], bounds[i + 1]), (b, bounds[i + 1])),
                ] {
                    let old = m.part(q, a, z);
                    let new = m.part(q, a2, z2);
                    for &(r, keeps) in &hosts[q] {
                        trial[r].0 += new.0 - old.0;
                        trial[r].1 += (new.2 - old.2) + (new.1 - old.1) * keeps;
                    }
                }
                let k = key_of(&trial);
                if k < best.as_ref().map_or(key, |x| x.2) {
                    best = Some((i, b, k));
                }
            }
        }
        match best {
            Some((i, b, k)) if k < key => {
                bounds[i] = b;
                // recomputed whole, so rounding never drifts over many moves
                ranks = m.ranks(&bounds);
                key = k;
            }
            _ => break,
        }
    }
    bounds
}

/// A split priced exactly: (its layers, step seconds when it fits, most loaded GPU's bytes).
fn price(spec: &Spec, plan: &ValidPlan, layers: &[u64]) -> Result<(Option<f64>, f64), String> {
    let mut s = spec.clone();
    s.parallelism.layers_per_stage = layers.to_vec();
    let costs = CostTable::new(&s, plan).map_err(|d| crate::step::messages(&d))?;
    let memory = (0..plan.ranks())
        .map(|r| {
            let peak = live_activations(plan.program(r)).peak;
            rank_memory(&s, &costs, plan, r, peak).total()
        })
        .fold(0.0, f64::max);
    if memory > s.memory_limit_bytes() {
        return Ok((None, memory));
    }
    let timeline = simulate(plan, &costs).map_err(|e| e.to_string())?;
    let report = StepReport::new(&s, plan, &costs, &timeline);
    Ok((Some(report.step_time_s), memory))
}

/// Searches the split of `spec`'s layers over `plan`'s parts (see the module documentation).
/// `spec` has the plan's shape; its `layers_per_stage` is a candidate besides the even split.
pub fn search_split(spec: &Spec, plan: &ValidPlan) -> Result<SplitFound, String> {
    search_split_from(spec, plan, None)
}

/// Splits priced exactly per search besides the even split and the spec's own: the best by the
/// weights (least memory over the limit, then least rank time).
pub const PRICED_PER_SEARCH: usize = 3;

/// [`search_split`], the even split's step and memory given when the caller has priced it
/// already (the recommend search).
pub fn search_split_from(
    spec: &Spec,
    plan: &ValidPlan,
    even_known: Option<(Option<f64>, f64)>,
) -> Result<SplitFound, String> {
    let parts = plan.stages_per_pipeline();
    let total = spec.model.layers;
    let even = crate::fit::split_layers(total, parts);
    let mut even_spec = spec.clone();
    even_spec.parallelism.layers_per_stage = even.clone();
    let weights = SplitWeights::of(&even_spec, plan).map_err(|d| crate::step::messages(&d))?;
    let model = Model::of(&even_spec, plan, &weights).map_err(|d| crate::step::messages(&d))?;
    let mut candidates: Vec<Vec<u64>> = vec![even.clone()];
    let own = &spec.parallelism.layers_per_stage;
    if split_problem(own, total, parts).is_none() {
        candidates.push(own.clone());
    }
    let mut starts = vec![bounds_of(&even)];
    for b in balanced(&model) {
        candidates.push(layers_of(&b));
        starts.push(b);
    }
    for start in &starts {
        for goal in [Goal::Time, Goal::TimeWithin] {
            candidates.push(layers_of(&descend(&model, start.clone(), goal)));
        }
    }
    let mut seen: Vec<Vec<u64>> = Vec::new();
    for c in candidates {
        if !seen.contains(&c) && split_problem(&c, total, parts).is_none() {
            seen.push(c);
        }
    }
    // the even split and the spec's own always; of the others the best few by the weights
    let fixed = if seen.get(1) == Some(own) { 2 } else { 1 };
    let mut rest: Vec<(Vec<u64>, (f64, f64))> = seen
        .split_off(fixed.min(seen.len()))
        .into_iter()
        .map(|c| {
            let ranks = model.ranks(&bounds_of(&c));
            let time = ranks.iter().map(|r| r.0).fold(0.0, f64::max);
            let over = ranks
                .iter()
                .map(|r| (r.1 - model.limit).max(0.0))
                .fold(0.0, f64::max);
            (c, (over, time))
        })
        .collect();
    rest.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap_or(std::cmp::Ordering::Equal));
    seen.extend(rest.into_iter().take(PRICED_PER_SEARCH).map(|(c, _)| c));
    let mut best: Option<(Vec<u64>, Option<f64>, f64)> = None;
    let mut even_figures = (None, 0.0);
    for c in &seen {
        let (time, memory) = match even_known {
            Some(known) if *c == even => known,
            _ => price(spec, plan, c)?,
        };
        if *c == even {
            even_figures = (time, memory);
        }
        let better = match &best {
            None => true,
            Some((_, bt, bm)) => match (time, bt) {
                (Some(t), Some(b)) => t < *b,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => memory < *bm,
            },
        };
        if better {
            best = Some((c.clone(), time, memory));
        }
    }
    let (layers, step_time_s, memory_bytes) = best.ok_or("no split to price")?;
    Ok(SplitFound {
        layers,
        step_time_s,
        memory_bytes,
        even_step_time_s: even_figures.0,
        even_memory_bytes: even_figures.1,
        priced: seen.len(),
    })
}
