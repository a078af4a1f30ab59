//! The search behind `--split auto`: the split of the layers, and each part's recomputation,
//! that make a plan fastest within the memory limit.
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

use super::{SplitFound, split_problem};
use crate::step::StepReport;
use pipeweave_check::ValidPlan;
use pipeweave_cost::{CostTable, SplitWeights, rank_memory, rank_state, rank_weights};
use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::Kind;
use pipeweave_sim::{live_activations, simulate};
use pipeweave_spec::{Recompute, Spec};

/// One recomputation's view of the pieces: prefix sums over the layers of the seconds and
/// activation bytes, and the first and last parts' own (seconds, activation bytes).
struct Rung {
    time: Vec<f64>,
    act: Vec<f64>,
    first: (f64, f64),
    last: (f64, f64),
}

/// The layers of each part's pieces and each rank's view of the parts.
struct Model {
    /// One per recomputation the search may give a part, lightest first.
    rungs: Vec<Rung>,
    /// `state[k]`: the state bytes (weights, gradients, optimizer) of layers `[0, k)`.
    state: Vec<f64>,
    /// The first and last parts' own state bytes.
    first_state: f64,
    last_state: f64,
    parts: usize,
    /// For each rank, the positions it hosts (one entry per replica) with the most micro-batches
    /// of that position it keeps at once.
    hosted: Vec<Vec<(usize, f64)>>,
    /// The memory limit in bytes, less what a rank holds besides its parts' (buffers, reserve).
    limit: f64,
}

impl Model {
    /// The model of `spec`'s pieces on `plan`, one rung per recomputation of `options` (each
    /// weighed with every part at that recomputation).
    fn of(spec: &Spec, plan: &ValidPlan, options: &[Recompute]) -> Result<Model, Vec<Diagnostic>> {
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
        let mut rungs = Vec::with_capacity(options.len());
        let mut st = vec![0.0];
        let (mut first_state, mut last_state) = (0.0, 0.0);
        for (i, &rc) in options.iter().enumerate() {
            let mut at = spec.clone();
            at.training.recompute = rc;
            at.training.recompute_per_part = Vec::new();
            let w = SplitWeights::of(&at, plan)?;
            let (mut time, mut act) = (vec![0.0], vec![0.0]);
            for k in 0..layers {
                let l = w.layer(k as u64);
                time.push(time[k] + l.seconds);
                act.push(act[k] + l.activation_bytes);
                if i == 0 {
                    st.push(st[k] + state(&l));
                }
            }
            if i == 0 {
                first_state = state(&w.first);
                last_state = state(&w.last);
            }
            rungs.push(Rung {
                time,
                act,
                first: (w.first.seconds, w.first.activation_bytes),
                last: (w.last.seconds, w.last.activation_bytes),
            });
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
            rungs,
            state: st,
            first_state,
            last_state,
            parts,
            hosted,
            limit: spec.memory_limit_bytes() - extra,
        })
    }

    fn layers(&self) -> usize {
        self.state.len() - 1
    }

    /// (seconds, activation bytes, state bytes) of position `q` holding layers `[a, b)` at rung
    /// `o`.
    fn part(&self, q: usize, a: usize, b: usize, o: usize) -> (f64, f64, f64) {
        let r = &self.rungs[o];
        let mut x = (
            r.time[b] - r.time[a],
            r.act[b] - r.act[a],
            self.state[b] - self.state[a],
        );
        for (on, fixed, st) in [
            (q == 0, r.first, self.first_state),
            (q + 1 == self.parts, r.last, self.last_state),
        ] {
            if on {
                x.0 += fixed.0;
                x.1 += fixed.1;
                x.2 += st;
            }
        }
        x
    }

    /// Each rank's (seconds, bytes) under the split given by its boundaries, part `q` at rung
    /// `rungs[q]`.
    fn ranks(&self, bounds: &[usize], rungs: &[usize]) -> Vec<(f64, f64)> {
        let parts: Vec<(f64, f64, f64)> = (0..self.parts)
            .map(|q| self.part(q, bounds[q], bounds[q + 1], rungs[q]))
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

    /// The ranks hosting each position, with the micro-batches of it they keep.
    fn hosts(&self) -> Vec<Vec<(usize, f64)>> {
        let mut hosts: Vec<Vec<(usize, f64)>> = vec![Vec::new(); self.parts];
        for (r, hosted) in self.hosted.iter().enumerate() {
            for &(q, keeps) in hosted {
                hosts[q].push((r, keeps));
            }
        }
        hosts
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
    let layers = m.layers();
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
/// min-max split of the parts' times among those where every part keeps within its share; every
/// part at rung `o`.
fn balanced(m: &Model, o: usize) -> Vec<Vec<usize>> {
    let layers = m.layers();
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
        let p = m.part(q, a, b, o);
        hosts[q]
            .iter()
            .map(|&(share, keeps)| (p.2 + p.1 * keeps) / share.max(1.0))
            .fold(0.0, f64::max)
    };
    let total = m.part(0, 0, layers, o).0 + m.rungs[o].last.0;
    let mut out = Vec::new();
    if let Some(b) = bisect(total, &|cap| {
        fill(m, &|q, a, b| m.part(q, a, b, o).0 <= cap)
    }) {
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
            m.part(q, a, b, o).0 <= cap && share_used(q, a, b) <= 1.0
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

/// Steepest descent from `bounds`, part `q` at rung `rungs[q]`: one layer across one boundary
/// per move. Each move is weighed
/// by updating the ranks that host the two parts it changes, so a move costs the ranks, not the
/// parts.
fn descend(m: &Model, mut bounds: Vec<usize>, rungs: &[usize], goal: Goal) -> Vec<usize> {
    let s = m.parts;
    let layers = m.layers();
    let hosts = m.hosts();
    let mut ranks = m.ranks(&bounds, rungs);
    let key_of = |ranks: &[(f64, f64)]| key(m, ranks, goal);
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
                    let old = m.part(q, a, z, rungs[q]);
                    let new = m.part(q, a2, z2, rungs[q]);
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
                ranks = m.ranks(&bounds, rungs);
                key = k;
            }
            _ => break,
        }
    }
    bounds
}

/// What a descent or a choice of rungs minimises: (the most loaded rank's time, the sum of the
/// squares of the ranks' times, the most loaded rank's memory), or for [`Goal::TimeWithin`] the
/// memory over the limit first.
fn key(m: &Model, ranks: &[(f64, f64)], goal: Goal) -> (f64, f64, f64) {
    let time = ranks.iter().map(|r| r.0).fold(0.0, f64::max);
    let mem = ranks.iter().map(|r| r.1).fold(0.0, f64::max);
    let spread: f64 = ranks.iter().map(|r| r.0 * r.0).sum();
    match goal {
        Goal::Time => (time, spread, mem),
        Goal::TimeWithin => ((mem - m.limit).max(0.0), time, spread),
    }
}

/// Each part's rung for the split `bounds` (AdaPipe's point: recompute where memory is tight,
/// not everywhere): every part starts at the heaviest rung (the least memory); then, greedily,
/// the one part whose step down to the next lighter rung most lowers the rank times
/// ([`Goal::TimeWithin`]'s key) while every rank it is on stays within the limit steps down,
/// until no part can. At most `parts · (rungs − 1)` steps, each weighing every part on the
/// ranks that host it.
fn lighten(m: &Model, bounds: &[usize]) -> Vec<usize> {
    let top = m.rungs.len() - 1;
    let mut rungs = vec![top; m.parts];
    if top == 0 {
        return rungs;
    }
    let hosts = m.hosts();
    let mut ranks = m.ranks(bounds, &rungs);
    let mut trial = ranks.clone();
    loop {
        let mut best: Option<(usize, (f64, f64, f64))> = None;
        for q in 0..m.parts {
            if rungs[q] == 0 {
                continue;
            }
            let old = m.part(q, bounds[q], bounds[q + 1], rungs[q]);
            let new = m.part(q, bounds[q], bounds[q + 1], rungs[q] - 1);
            trial.copy_from_slice(&ranks);
            let mut fits = true;
            for &(r, keeps) in &hosts[q] {
                trial[r].0 += new.0 - old.0;
                trial[r].1 += (new.2 - old.2) + (new.1 - old.1) * keeps;
                fits &= trial[r].1 <= m.limit;
            }
            if !fits {
                continue;
            }
            let k = key(m, &trial, Goal::TimeWithin);
            if best.as_ref().is_none_or(|b| k < b.1) {
                best = Some((q, k));
            }
        }
        match best {
            Some((q, _)) => {
                rungs[q] -= 1;
                ranks = m.ranks(bounds, &rungs);
            }
            None => return rungs,
        }
    }
}

/// A split priced exactly with each part's recomputation: (step seconds when it fits, most loaded
/// GPU's bytes).
fn price(
    spec: &Spec,
    plan: &ValidPlan,
    layers: &[u64],
    recompute: &[Recompute],
) -> Result<(Option<f64>, f64), String> {
    let mut s = spec.clone();
    s.parallelism.layers_per_stage = layers.to_vec();
    s.training.set_recompute(recompute);
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

/// Searches the split of `spec`'s layers over `plan`'s parts, and each part's recomputation
/// among the spec's options ([`recompute_options`]), see the module documentation. `spec` has
/// the plan's shape; its `layers_per_stage` is a candidate besides the even split.
pub fn search_split(spec: &Spec, plan: &ValidPlan) -> Result<SplitFound, String> {
    search_split_from(spec, plan, None, &recompute_options(spec))
}

/// The rungs a search may give each part: the spec's `training.recompute_options`, else every
/// rung that changes anything (none; selective with standard attention, where it drops the score
/// matrices; full).
pub fn recompute_options(spec: &Spec) -> Vec<Recompute> {
    let t = &spec.training;
    if !t.recompute_options.is_empty() {
        return t.recompute_options.clone();
    }
    let mut out = vec![Recompute::None];
    if !t.attention.is_flash() {
        out.push(Recompute::Selective);
    }
    out.push(Recompute::Full);
    out
}

/// Splits priced exactly per search besides the even split and the spec's own: the best by the
/// weights (least memory over the limit, then least rank time).
pub const PRICED_PER_SEARCH: usize = 3;

/// A candidate: layers per part, each part's recomputation.
type Candidate = (Vec<u64>, Vec<Recompute>);

/// [`search_split`], the even split's step and memory given when the caller has priced it
/// already (the recommend search), each part's recomputation chosen among `options` (empty: every
/// candidate keeps the spec's own recomputation, as written).
pub fn search_split_from(
    spec: &Spec,
    plan: &ValidPlan,
    even_known: Option<(Option<f64>, f64)>,
    options: &[Recompute],
) -> Result<SplitFound, String> {
    search(spec, plan, even_known, options, (true, f64::INFINITY))
}

/// [`search_split_from`] for a search that climbs the rungs (`recommend`): the splits of every
/// part at one of the lighter rungs were searched at the rungs before, so only the heaviest of
/// `options` starts descents with every part at it, and the lighter rungs come in by the choice
/// of each part's (a third of the descents with three rungs), and it prices one candidate fewer
/// ([`PRICED_PER_SEARCH`] − 1 besides the even split and the spec's own). A candidate whose least step by the
/// weights (its busiest rank's forwards and backwards of every micro-batch, nothing else, in a
/// plan without overlapped pairs) cannot beat `beat` seconds is not priced.
pub fn search_split_climbing(
    spec: &Spec,
    plan: &ValidPlan,
    even_known: Option<(Option<f64>, f64)>,
    options: &[Recompute],
    beat: f64,
) -> Result<SplitFound, String> {
    search(spec, plan, even_known, options, (false, beat))
}

fn search(
    spec: &Spec,
    plan: &ValidPlan,
    even_known: Option<(Option<f64>, f64)>,
    options: &[Recompute],
    (every_rung, beat): (bool, f64),
) -> Result<SplitFound, String> {
    let parts = plan.stages_per_pipeline();
    let total = spec.model.layers;
    let even = crate::fit::split_layers(total, parts);
    let own_rc = spec.training.recompute_parts(parts as usize);
    let mut options = options.to_vec();
    options.sort();
    options.dedup();
    let fixed_rc = options.is_empty();
    if fixed_rc {
        options = own_rc.clone();
        options.sort();
        options.dedup();
    }
    let mut even_spec = spec.clone();
    even_spec.parallelism.layers_per_stage = even.clone();
    let model = Model::of(&even_spec, plan, &options).map_err(|d| crate::step::messages(&d))?;
    let at = |rung: &[usize]| -> Vec<Recompute> { rung.iter().map(|&o| options[o]).collect() };
    let even_c: Candidate = (even.clone(), own_rc.clone());
    let mut candidates: Vec<Candidate> = vec![even_c.clone()];
    let own = &spec.parallelism.layers_per_stage;
    if split_problem(own, total, parts).is_none() {
        candidates.push((own.clone(), own_rc.clone()));
    }
    let np = parts as usize;
    // without options to choose among, every candidate keeps the spec's own recomputation
    let choose = !fixed_rc;
    let own_rungs: Vec<usize> = own_rc
        .iter()
        .map(|r| options.iter().position(|o| o == r).unwrap_or(0))
        .collect();
    let first = if choose && !every_rung {
        options.len() - 1
    } else {
        0
    };
    let tries = if choose { options.len() } else { 1 };
    for o in first..tries {
        let uniform = if choose {
            vec![o; np]
        } else {
            own_rungs.clone()
        };
        let mut starts = vec![bounds_of(&even)];
        for b in balanced(&model, uniform[0]) {
            candidates.push((layers_of(&b), at(&uniform)));
            starts.push(b);
        }
        for start in &starts {
            for goal in [Goal::Time, Goal::TimeWithin] {
                let b = descend(&model, start.clone(), &uniform, goal);
                candidates.push((layers_of(&b), at(&uniform)));
                // the rungs are chosen from the descents that mind the memory (the time-only
                // descents' splits overflow where recomputation would matter)
                if choose && options.len() > 1 && matches!(goal, Goal::TimeWithin) {
                    // each part's rung for this split, then the split again for those rungs
                    let rungs = lighten(&model, &b);
                    candidates.push((layers_of(&b), at(&rungs)));
                    let b2 = descend(&model, b, &rungs, Goal::TimeWithin);
                    let rungs2 = lighten(&model, &b2);
                    candidates.push((layers_of(&b2), at(&rungs2)));
                }
            }
        }
    }
    let mut seen: Vec<Candidate> = Vec::new();
    for c in candidates {
        if !seen.contains(&c) && split_problem(&c.0, total, parts).is_none() {
            seen.push(c);
        }
    }
    // the even split and the spec's own always; of the others the best few by the weights
    let fixed = if seen.get(1).is_some_and(|c| &c.0 == own) {
        2
    } else {
        1
    };
    let rung_of = |r: Recompute| options.iter().position(|&o| o == r).unwrap_or(0);
    let mut rest: Vec<(Candidate, (f64, f64))> = seen
        .split_off(fixed.min(seen.len()))
        .into_iter()
        .map(|c| {
            let rungs: Vec<usize> = c.1.iter().map(|&r| rung_of(r)).collect();
            let ranks = model.ranks(&bounds_of(&c.0), &rungs);
            let time = ranks.iter().map(|r| r.0).fold(0.0, f64::max);
            let over = ranks
                .iter()
                .map(|r| (r.1 - model.limit).max(0.0))
                .fold(0.0, f64::max);
            (c, (over, time))
        })
        .collect();
    // the busiest rank runs its parts' forwards and backwards for every micro-batch it carries,
    // one after the other where no action overlaps a forward with a backward (a pair hides
    // communication under compute, so there the bound would not hold); the weights are within a
    // little of a part's own costs (their communication overlaps a little differently), hence
    // the 2% margin
    let pairs = (0..plan.ranks()).any(|r| {
        plan.program(r)
            .iter()
            .any(|a| matches!(a, pipeweave_plan::Action::Pair { .. }))
    });
    let per_copy = f64::from(plan.num_microbatches()) / f64::from(plan.model_copies().max(1));
    if !pairs {
        rest.retain(|(_, (_, time))| 0.98 * time * per_copy < beat);
    }
    rest.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap_or(std::cmp::Ordering::Equal));
    // a climbing search runs at every rung of every configuration that can pay: it prices one
    // fewer
    let priced = if every_rung {
        PRICED_PER_SEARCH
    } else {
        PRICED_PER_SEARCH - 1
    };
    seen.extend(rest.into_iter().take(priced).map(|(c, _)| c));
    let mut best: Option<(Candidate, Option<f64>, f64)> = None;
    let mut even_figures = (None, 0.0);
    let own_c: Candidate = (own.clone(), own_rc.clone());
    let mut own_step = None;
    for c in &seen {
        let (time, memory) = match even_known {
            Some(known) if *c == even_c => known,
            _ => price(spec, plan, &c.0, &c.1)?,
        };
        if *c == even_c {
            even_figures = (time, memory);
        }
        if *c == own_c {
            own_step = time;
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
    let ((layers, recompute), step_time_s, memory_bytes) = best.ok_or("no split to price")?;
    Ok(SplitFound {
        layers,
        recompute,
        step_time_s,
        memory_bytes,
        even_step_time_s: even_figures.0,
        even_memory_bytes: even_figures.1,
        own_step_time_s: own_step,
        priced: seen.len(),
    })
}
