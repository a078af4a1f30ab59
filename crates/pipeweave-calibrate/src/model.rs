//! The simulator's costs for any plan from a calibration.
//!
//! A plan may cut the model into another number of parts than the measured one: part q of S'
//! covers the model's slice [q/S', (q+1)/S'), and costs what the measured parts it overlaps cost
//! for that share of them (each measured part's time spread evenly over its slice). The same
//! number of parts gives the measured figures exactly.

use crate::file::Calibration;
use pipeweave_plan::{Action, Kind, Op, Plan, Timing};
use pipeweave_sim::CostModel;
use std::collections::HashMap;

/// Costs measured in a run, laid onto one plan: seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredCosts {
    /// Per plan part: F, B, I, W.
    parts: Vec<[f64; 4]>,
    stages_per_pipeline: u32,
    /// Pair slowdown by (F part, B part) of the plan, when measured on the same parts.
    slowdown: HashMap<(u32, u32), f64>,
    /// The slowdown of any other pair.
    default_slowdown: f64,
    /// Stage → rank.
    hosts: Vec<u32>,
    /// Transfer seconds by (from rank, to rank).
    links: HashMap<(u32, u32), f64>,
    /// The transfer of any other link.
    default_link: f64,
    /// The host's time before an action, by kind: F, B, I, W, pair (`overhead.gap`).
    gaps: [f64; 5],
    /// Per global stage, the host's time right after its F and after its B or I: posting the
    /// output's send where the next (for F) or previous (for B, I) stage is on another rank
    /// (`overhead.send`), and after a B or I the wait for its forward's send, when that went to
    /// another rank (`overhead.wait_send`).
    after: Vec<[f64; 2]>,
    /// Per global stage, the host's time of posting the receive of its F's input and of its B's
    /// or I's output gradient, where the stage they come from is on another rank
    /// (`overhead.post_recv`): charged before the action that uses the data, one posting per
    /// receive (the rank posts it earlier, where its lowered program stands, but the host's time
    /// a step is the same; the action's wait for its data hides it as it hides the gap).
    before: Vec<[f64; 2]>,
    /// The step's time before its first action and after its last (`overhead.head`, `tail`).
    head: f64,
    tail: f64,
    /// Each rank's all-reduce of the gradients of the parts it shares, after its last action
    /// (empty when none is priced).
    reduction: Vec<f64>,
}

/// The host time a per-stage table (`MeasuredCosts`'s `before`, `after`) gives `op`: its F
/// column for a forward, its B column for a B or I, none for a W or a stage beyond the table.
fn by_stage_and_kind(table: &[[f64; 2]], op: Op) -> f64 {
    let Some(row) = table.get(op.stage as usize) else {
        return 0.0;
    };
    match op.kind {
        Kind::F => row[0],
        Kind::B | Kind::I => row[1],
        Kind::W => 0.0,
    }
}

fn index(kind: Kind) -> usize {
    match kind {
        Kind::F => 0,
        Kind::B => 1,
        Kind::I => 2,
        Kind::W => 3,
    }
}

impl MeasuredCosts {
    /// The costs of `plan`'s actions from `c`, and notes saying what was derived rather than
    /// measured. Fails when the plan needs a backward the run never timed.
    pub fn for_plan(c: &Calibration, plan: &Plan) -> Result<(MeasuredCosts, Vec<String>), String> {
        let mut notes = Vec::new();
        let measured = c.measured.parts;
        let mut per_part: Vec<[Option<f64>; 4]> = Vec::with_capacity(c.parts.len());
        // Parts whose I and W were derived from their B: the first, and the others by halves.
        let (mut first_assumed, mut halves_assumed) = (false, false);
        let of = action_cost(c);
        for p in &c.parts {
            let f = of(&p.f);
            let (i, w) = (p.i.as_ref().map(of), p.w.as_ref().map(of));
            let b = p.b.as_ref().map(of).or(i.zip(w).map(|(i, w)| i + w));
            let (i, w) = match (i, w, b) {
                (Some(i), Some(w), _) => (Some(i), Some(w)),
                (Some(i), None, Some(b)) => (Some(i), Some((b - i).max(0.0))),
                (None, Some(w), Some(b)) => (Some((b - w).max(0.0)), Some(w)),
                // The first part's input comes from no stage (token ids, the batch): its I has no
                // input gradient to compute, and its W is the whole backward.
                (None, None, Some(b)) if p.part == 0 => {
                    first_assumed = true;
                    (Some(0.0), Some(b))
                }
                (None, None, Some(b)) => {
                    halves_assumed = true;
                    (Some(b / 2.0), Some(b / 2.0))
                }
                _ => (None, None),
            };
            per_part.push([Some(f), b, i, w]);
        }
        let has_backward = plan
            .programs()
            .iter()
            .flatten()
            .flat_map(|a| a.ops())
            .any(|op| op.kind != Kind::F);
        if has_backward && let Some(q) = per_part.iter().position(|p| p[1].is_none()) {
            return Err(format!(
                "the costs time no backward of part {q}, and the plan has backward actions"
            ));
        }
        let splits = plan
            .programs()
            .iter()
            .flatten()
            .flat_map(|a| a.ops())
            .any(|op| matches!(op.kind, Kind::I | Kind::W));
        if splits && first_assumed {
            notes.push(
                "the run timed no I and W of part 0 apart: its I is taken as no time and its W as its whole measured B (the first part's input comes from no stage, so its I computes no input gradient and its W does all of the backward)"
                    .to_owned(),
            );
        }
        if splits && halves_assumed {
            notes.push(
                "the run timed no I and W apart beyond part 0: each is taken as half of its part's measured B (a runtime whose W re-runs the graph per weight group, as PlanRunner's does, takes longer; profile a step of a schedule that splits its backward, such as zb-h1, and calibrate from both runs)"
                    .to_owned(),
            );
        }
        let target = plan.stages_per_pipeline();
        let has_cut = c.cuts.iter().any(|k| k.parts == target);
        if target != measured && !has_cut {
            notes.push(format!(
                "the plan cuts the model into {target} parts and the run into {measured}: each part costs the measured time of the share of the model it holds"
            ));
        }
        // The first measured part's split (its I computes no input gradient) says nothing of how a
        // plan's later part within its slice splits: that one takes its share of B times what the
        // other measured parts' I and W each cost against their B (the medians of I / B and
        // W / B, B the measured one, or I + W where none was), or halves of it.
        let of_b = {
            let median = |mut v: Vec<f64>| {
                v.sort_by(f64::total_cmp);
                v.get(v.len().saturating_sub(1) / 2).copied()
            };
            let ratios: Vec<(f64, f64)> = per_part
                .iter()
                .skip(1)
                .filter_map(|p| match (p[1], p[2], p[3]) {
                    (Some(b), Some(i), Some(w)) if b > 0.0 => Some((i / b, w / b)),
                    _ => None,
                })
                .collect();
            median(ratios.iter().map(|r| r.0).collect())
                .zip(median(ratios.iter().map(|r| r.1).collect()))
                .unwrap_or((0.5, 0.5))
        };
        let cut = c
            .cuts
            .iter()
            .find(|k| k.parts == target && target != measured);
        let parts = match cut {
            Some(cut) => {
                let untimed = cut
                    .part
                    .iter()
                    .find(|p| p.b.is_none() && (p.i.is_none() || p.w.is_none()));
                if has_backward && let Some(p) = untimed {
                    return Err(format!(
                        "the costs time no backward of part {} of the model cut into {target} parts (`[[cut]]`), and the plan has backward actions",
                        p.part
                    ));
                }
                notes.push(format!(
                    "the plan cuts the model into {target} parts, as the runs of `[[cut]]` did: each part costs what it took there{}",
                    if splits && cut.part.iter().any(|p| p.i.is_none() || p.w.is_none()) {
                        " (an I and W they did not time apart: of the first part, none and its whole B; of another, its B times the measured parts' median I / B and W / B)"
                    } else {
                        ""
                    }
                ));
                cut_parts(cut, of_b, of)
            }
            None => (0..target)
                .map(|q| {
                    let mut out = [0.0; 4];
                    for (k, slot) in out.iter_mut().enumerate() {
                        *slot = share(q, target, measured, |m| {
                            let p = &per_part[m as usize];
                            let b = p[1].unwrap_or(0.0);
                            match k {
                                2 if m == 0 && q > 0 => b * of_b.0,
                                3 if m == 0 && q > 0 => b * of_b.1,
                                _ => p[k].unwrap_or(0.0),
                            }
                        });
                    }
                    out
                })
                .collect(),
        };
        let all: Vec<f64> = c.pairs.iter().map(|p| p.slowdown).collect();
        let default_slowdown = if all.is_empty() {
            if plan.programs().iter().flatten().any(|a| a.is_pair()) {
                notes.push(
                    "the run timed no overlapped F&B pair: a pair is taken to last its F plus its B"
                        .to_owned(),
                );
            }
            1.0
        } else {
            let mut v = all;
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let slowdown = if target == measured {
            c.pairs
                .iter()
                .map(|p| ((p.f_part, p.b_part), p.slowdown))
                .collect()
        } else {
            HashMap::new()
        };
        let mut by_link: HashMap<(u32, u32), Vec<f64>> = HashMap::new();
        for l in &c.links {
            by_link
                .entry((l.from, l.to))
                .or_default()
                .push(l.transfer.median);
        }
        let links: HashMap<(u32, u32), f64> = by_link
            .into_iter()
            .map(|(k, v)| (k, v.iter().sum::<f64>() / v.len() as f64))
            .collect();
        let default_link = {
            let mut v: Vec<f64> = links.values().copied().collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        let hosts = plan.hosts().to_vec();
        let crosses = |from: u32, to: u32| links.contains_key(&(from, to));
        let unmeasured = plan
            .hosts()
            .iter()
            .enumerate()
            .filter_map(|(s, &r)| {
                let next = plan.next_stage(s as u32)?;
                let to = plan.stage_rank(next)?;
                (to != r && !crosses(r, to)).then_some(())
            })
            .count();
        if unmeasured > 0 && plan.ranks() > 1 {
            if links.is_empty() {
                notes.push("the run timed no transfer: transfers take no time".to_owned());
            } else {
                notes.push(format!(
                    "{unmeasured} of the plan's links between stages were not measured: each takes the median of the measured links, {}",
                    seconds(default_link)
                ));
            }
        }
        let copied = copies(plan);
        let reduce = if copied.is_empty() {
            None
        } else if c.probe.reduction_in_tail {
            notes.push("the calibrating run kept parts on several ranks: its tail (`overhead.tail`) holds their gradients' all-reduce, and it is not added again".to_owned());
            None
        } else {
            reductions(c, plan, &copied)
        };
        if let Some((_, note)) = &reduce {
            notes.push(note.clone());
        } else if !copied.is_empty() && !c.probe.reduction_in_tail {
            let copied: Vec<u32> = copied.iter().map(|(q, _)| *q).collect();
            notes.push(format!(
                "the plan keeps part{} {} on more than one rank, whose gradients are all-reduced across the copies at the step's end: the costs hold no link probe or no gradient bytes to price that reduction (`pipeweave.torch.profile` records both), so it is priced only as far as the measured step's tail (`overhead.tail`) holds one, which a calibrating run without copies (1F1B, ZB-H1) does not",
                if copied.len() == 1 { "" } else { "s" },
                copied
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let reduction = reduce.map(|(r, _)| r).unwrap_or_default();
        let (gaps, head, tail) = outside(c, plan, &mut notes);
        let after = sends(c, plan, &mut notes);
        let before = receives(c, plan, &mut notes);
        Ok((
            MeasuredCosts {
                parts,
                stages_per_pipeline: target,
                slowdown,
                default_slowdown,
                hosts,
                links,
                default_link,
                gaps,
                after,
                before,
                head,
                tail,
                reduction,
            },
            notes,
        ))
    }

    /// The step's time outside the simulated actions, seconds: before the first action starts
    /// on any rank and after the last one ends (`overhead.head` plus `overhead.tail`; 0 when the
    /// run did not measure them). A predicted step is this plus the simulated makespan.
    pub fn outside_actions(&self) -> f64 {
        self.head + self.tail
    }

    /// The seconds rank `rank` spends after its last action all-reducing the gradients of the
    /// parts it shares with other ranks (0 when it shares none, or the costs cannot price it).
    pub fn reduction(&self, rank: u32) -> f64 {
        self.reduction.get(rank as usize).copied().unwrap_or(0.0)
    }

    /// The predicted step from the plan's simulated timing: the latest end of a rank's last
    /// action plus its gradient reduction ([`Self::reduction`]), never before the makespan,
    /// plus the time before the first action and after the last ([`Self::outside_actions`]).
    pub fn step_time(&self, timing: &Timing) -> f64 {
        let end = timing
            .intervals
            .iter()
            .enumerate()
            .map(|(r, row)| row.last().map_or(0.0, |i| i.end) + self.reduction(r as u32))
            .fold(timing.makespan, f64::max);
        end + self.outside_actions()
    }

    fn part(&self, stage: u32) -> &[f64; 4] {
        let q = stage % self.stages_per_pipeline.max(1);
        &self.parts[q as usize % self.parts.len().max(1)]
    }
}

/// The host's gap before each kind of action and the step's head and tail, from `[overhead]`, with
/// notes on what was derived. A kind the run did not time takes the median of the kinds it did.
///
/// Each is the mean of its samples, not the median: a step lasts the sum of its gaps, and the
/// host's gaps are mostly short with rare long ones (a garbage collection, the host taken by
/// another process), which the sum holds and a median leaves out.
fn outside(c: &Calibration, plan: &Plan, notes: &mut Vec<String>) -> ([f64; 5], f64, f64) {
    let o = &c.overhead;
    let measured: Vec<f64> = o
        .gap
        .all()
        .iter()
        .filter_map(|(_, s)| s.as_ref().map(typical))
        .collect();
    let fallback = {
        let mut v = measured.clone();
        v.sort_by(f64::total_cmp);
        v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
    };
    let mut gaps = [0.0; 5];
    let mut derived = Vec::new();
    let kinds = plan_kinds(plan);
    for (k, (key, s)) in o.gap.all().iter().enumerate() {
        gaps[k] = match s {
            Some(s) => typical(s),
            None => {
                if kinds[k] && !measured.is_empty() {
                    derived.push(*key);
                }
                fallback
            }
        };
    }
    if measured.is_empty() {
        if c.version >= 2 {
            notes.push("the run timed no host time between actions: none is added".to_owned());
        } else {
            notes.push(format!(
                "the costs file is of version {}, without `[overhead]`: the step's time outside the actions is not added",
                c.version
            ));
        }
    } else if !derived.is_empty() {
        notes.push(format!(
            "the run timed no host gap before {}: each takes the median of the measured kinds' means, {}",
            derived
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", "),
            seconds(fallback)
        ));
    }
    let (head, tail) = (o.head.as_ref().map(typical), o.tail.as_ref().map(typical));
    if let (Some(head), Some(tail)) = (head, tail) {
        notes.push(format!(
            "the step adds the run's time before its first action and after its last, {} and {} (the means of `overhead.head` and `overhead.tail`), and the host's time between actions (the means of `overhead.gap`)",
            seconds(head),
            seconds(tail)
        ));
    } else if c.version >= 2 {
        notes.push("the run did not time its steps whole (no profiler step spans): the predicted step is the actions' alone".to_owned());
    }
    (gaps, head.unwrap_or(0.0), tail.unwrap_or(0.0))
}

/// Per global stage, the host's time after its F and after its B or I (`MeasuredCosts`'s
/// `after`), from `overhead.send` and `overhead.wait_send`, with notes: the
/// means, as for the gaps (a step lasts the sum of them).
fn sends(c: &Calibration, plan: &Plan, notes: &mut Vec<String>) -> Vec<[f64; 2]> {
    let o = &c.overhead;
    let (send, wait) = (
        o.send.as_ref().map(typical),
        o.wait_send.as_ref().map(typical),
    );
    let hosts = plan.hosts();
    let away = |s: u32, other: Option<u32>| {
        other
            .and_then(|o| plan.stage_rank(o))
            .is_some_and(|r| Some(r) != plan.stage_rank(s))
    };
    let (mut any, mut waits) = (false, false);
    let after: Vec<[f64; 2]> = (0..hosts.len() as u32)
        .map(|s| {
            let (next, prev) = (away(s, plan.next_stage(s)), away(s, plan.prev_stage(s)));
            any |= next || prev;
            waits |= next;
            let posting = send.unwrap_or(0.0);
            [
                if next { posting } else { 0.0 },
                if prev { posting } else { 0.0 } + if next { wait.unwrap_or(0.0) } else { 0.0 },
            ]
        })
        .collect();
    if !any {
        return after;
    }
    match send {
        Some(send) => {
            // Sends per step: one per op whose output leaves its rank.
            let posted: usize = plan
                .programs()
                .iter()
                .flatten()
                .flat_map(|a| a.ops())
                .filter(|op| {
                    let s = op.stage;
                    match op.kind {
                        Kind::F => away(s, plan.next_stage(s)),
                        Kind::B | Kind::I => away(s, plan.prev_stage(s)),
                        Kind::W => false,
                    }
                })
                .count();
            notes.push(format!(
                "each of the plan's {posted} sends a step adds its rank {} of host time right after the action that computes it (the mean of `overhead.send`){}",
                seconds(send),
                match wait {
                    Some(wait) => format!(
                        ", and each wait for a forward's send {} after the backward of its micro-batch (`overhead.wait_send`)",
                        seconds(wait)
                    ),
                    None if waits => ", and the run timed no wait for a send between two actions (`overhead.wait_send`): none is added".to_owned(),
                    None => String::new(),
                }
            ));
        }
        None if c.version >= 4 => notes.push(
            "the run timed no send (`overhead.send`): a send adds no host time of its own, and the measured gaps between actions hold what the calibrating run's sends took"
                .to_owned(),
        ),
        None if !o.gap.is_empty() => notes.push(format!(
            "the costs file is of version {}, without `overhead.send`: the measured gaps between actions hold the calibrating run's sends, so a plan that posts more sends per action is predicted too fast (calibrate again to time each send)",
            c.version
        )),
        None => {}
    }
    after
}

/// Whether `op` uses data a receive brings from another rank: an F whose previous stage, or a B
/// or I whose next stage, is on another rank than its own.
pub(crate) fn receives_from_another_rank(plan: &Plan, op: Op) -> bool {
    let from = match op.kind {
        Kind::F => plan.prev_stage(op.stage),
        Kind::B | Kind::I => plan.next_stage(op.stage),
        Kind::W => None,
    };
    from.and_then(|n| plan.stage_rank(n))
        .is_some_and(|r| Some(r) != plan.stage_rank(op.stage))
}

/// Per global stage, the host's time of posting the receives its F and its B or I use
/// (`MeasuredCosts`'s `before`), from `overhead.post_recv`, with a note: the mean, as for the
/// gaps.
fn receives(c: &Calibration, plan: &Plan, notes: &mut Vec<String>) -> Vec<[f64; 2]> {
    let hosts = plan.hosts();
    let Some(post) = c.overhead.post_recv.as_ref().map(typical) else {
        return vec![[0.0; 2]; hosts.len()];
    };
    let before: Vec<[f64; 2]> = (0..hosts.len() as u32)
        .map(|s| {
            let from = |kind| {
                if receives_from_another_rank(plan, Op::new(s, kind, 0)) {
                    post
                } else {
                    0.0
                }
            };
            [from(Kind::F), from(Kind::B)]
        })
        .collect();
    // Receives per step: one per op whose input comes from another rank.
    let posted = plan
        .programs()
        .iter()
        .flatten()
        .flat_map(|a| a.ops())
        .filter(|&op| receives_from_another_rank(plan, op))
        .count();
    if posted > 0 {
        notes.push(format!(
            "each of the plan's {posted} receives a step adds its rank {} of host time before the action that uses its data (the mean of `overhead.post_recv`: the rank posts it earlier, where its lowered program does, for the same time)",
            seconds(post)
        ));
    }
    before
}

/// Each model part the plan hosts on more than one rank (Chimera's and DualPipe's copies), with
/// those ranks (ascending).
pub(crate) fn copies(plan: &Plan) -> Vec<(u32, Vec<u32>)> {
    let mut ranks: std::collections::BTreeMap<u32, std::collections::BTreeSet<u32>> =
        std::collections::BTreeMap::new();
    for (stage, &rank) in plan.hosts().iter().enumerate() {
        ranks
            .entry(plan.part(stage as u32))
            .or_default()
            .insert(rank);
    }
    ranks
        .into_iter()
        .filter(|(_, r)| r.len() > 1)
        .map(|(q, r)| (q, r.into_iter().collect()))
        .collect()
}

/// Each rank's time after its last action for the all-reduce of the gradients of the parts it
/// shares with other ranks, seconds, from the probe, with a note; `None` when the costs cannot
/// price it (no probe, or no gradient bytes).
///
/// A part's reduction all-reduces its gradient bytes (the measured parts' share of the plan's
/// part, as the plan cuts the model) among the ranks that hold a copy: between two ranks, the
/// line fitted to the probe's all-reduces of those two (of any two probed, when not those);
/// among more, the ring algorithm's `2 (n − 1)` messages of a copy's `1 / n` on the slowest of
/// the links joining consecutive members ([`crate::probe`]). PlanRunner launches each part's
/// all-reduce after the part's last backward on the rank and waits for all of them at the step's
/// end; they are taken as exposed after the rank's last action, one after another (they share
/// the rank's links).
fn reductions(
    c: &Calibration,
    plan: &Plan,
    copied: &[(u32, Vec<u32>)],
) -> Option<(Vec<f64>, String)> {
    let measured = c.measured.parts;
    let grads: Vec<f64> = c
        .parts
        .iter()
        .map(|p| p.gradient_bytes.map(|b| b as f64))
        .collect::<Option<_>>()?;
    let target = plan.stages_per_pipeline();
    let mut per_rank = vec![0.0; plan.ranks() as usize];
    let mut hows = std::collections::BTreeSet::new();
    let mut parts = Vec::new();
    for (q, members) in copied {
        let bytes = share(*q, target, measured, |m| grads[m as usize]).round() as u64;
        let (t, how) = crate::probe::all_reduce_time(&c.probe, members, bytes)?;
        hows.insert(how);
        parts.push(format!(
            "part {q}'s {bytes} bytes among ranks {members:?}: {}",
            seconds(t)
        ));
        for &r in members {
            if let Some(slot) = per_rank.get_mut(r as usize) {
                *slot += t;
            }
        }
    }
    let how = hows
        .iter()
        .map(|h| match *h {
            "pair" => "the line fitted to the probe's all-reduces of the same two ranks",
            "any pair" => "the line fitted to the probe's all-reduces of another pair of ranks",
            _ => "the ring all-reduce on the probed links' latency and bandwidth",
        })
        .collect::<Vec<_>>()
        .join("; ");
    Some((
        per_rank,
        format!(
            "the gradients of the parts kept on several ranks are all-reduced across the copies after each rank's last action ({how}): {}",
            parts.join(", ")
        ),
    ))
}

/// Which kinds of action (F, B, I, W, pair) the plan runs.
fn plan_kinds(plan: &Plan) -> [bool; 5] {
    let mut out = [false; 5];
    for a in plan.programs().iter().flatten() {
        match *a {
            Action::One(op) => out[index(op.kind)] = true,
            Action::Pair { .. } => out[4] = true,
        }
    }
    out
}

/// Part q of `target`'s share of the measured parts' figures `of`.
pub(crate) fn share(q: u32, target: u32, measured: u32, of: impl Fn(u32) -> f64) -> f64 {
    if target == measured {
        return of(q);
    }
    // In units of 1 / (target · measured) of the model, so every boundary is a whole number.
    let (lo, hi) = (
        u64::from(q) * u64::from(measured),
        u64::from(q + 1) * u64::from(measured),
    );
    let mut total = 0.0;
    for m in 0..measured {
        let (a, b) = (
            u64::from(m) * u64::from(target),
            u64::from(m + 1) * u64::from(target),
        );
        let overlap = hi.min(b).saturating_sub(lo.max(a));
        if overlap > 0 {
            total += of(m) * overlap as f64 / f64::from(target);
        }
    }
    total
}

/// Each part's F, B, I and W from a cut the runs measured (each statistic priced by `of`,
/// [`action_cost`]), and an I and W not timed
/// apart derived from B (the first part: none and all of it, its input needing no gradient;
/// another: B times `of_b`, the measured parts' median I / B and W / B).
fn cut_parts(
    cut: &crate::file::Cut,
    of_b: (f64, f64),
    of: fn(&crate::stats::Stats) -> f64,
) -> Vec<[f64; 4]> {
    cut.part
        .iter()
        .map(|p| {
            let f = of(&p.f);
            let (i, w) = (p.i.as_ref().map(of), p.w.as_ref().map(of));
            let b =
                p.b.as_ref()
                    .map(of)
                    .or(i.zip(w).map(|(i, w)| i + w))
                    .unwrap_or(0.0);
            let (i, w) = match (i, w) {
                (Some(i), Some(w)) => (i, w),
                (Some(i), None) => (i, (b - i).max(0.0)),
                (None, Some(w)) => ((b - w).max(0.0), w),
                (None, None) if p.part == 0 => (0.0, b),
                (None, None) => (b * of_b.0, b * of_b.1),
            };
            [f, b, i, w]
        })
        .collect()
}

/// The mean of a statistic, or its median where it has none (a costs file of version 1).
fn typical(s: &crate::stats::Stats) -> f64 {
    s.mean.unwrap_or(s.median)
}

/// What an action of a measured kind costs in a plan, from its statistic: the mean of its samples
/// ([`typical`]) from PlanRunner's traces, whose compute spans are compute alone. A step lasts the
/// sum of its actions, and on a machine whose speed varies the durations are skewed to the long
/// side, so the typical sum is the sum of the means, above the sum of the medians: on the fidelity
/// runs of `tests/fidelity/run.py`, pricing with medians put every schedule 1–17% under its
/// measured median step, and with means within 10%. From PyTorch's runtime the median: its
/// compute spans hold the waits for their inputs, whose long tail is waiting, not compute.
fn action_cost(c: &Calibration) -> fn(&crate::stats::Stats) -> f64 {
    if c.measured.naming == "pytorch" {
        |s| s.median
    } else {
        typical
    }
}

/// Seconds as the notes write them.
fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

impl CostModel for MeasuredCosts {
    fn op(&self, op: Op) -> f64 {
        self.part(op.stage)[index(op.kind)]
    }

    fn pair(&self, f: Op, b: Op) -> f64 {
        let key = (
            f.stage % self.stages_per_pipeline.max(1),
            b.stage % self.stages_per_pipeline.max(1),
        );
        let slowdown = self
            .slowdown
            .get(&key)
            .copied()
            .unwrap_or(self.default_slowdown);
        let (tf, tb) = (self.op(f), self.op(b));
        // A pair runs both halves: never less than the longer of them.
        (slowdown * (tf + tb)).max(tf.max(tb))
    }

    fn host_gap(&self, action: Action) -> f64 {
        let posting = |op| by_stage_and_kind(&self.before, op);
        match action {
            Action::One(op) => self.gaps[index(op.kind)] + posting(op),
            Action::Pair { f, b } => self.gaps[4] + posting(f) + posting(b),
        }
    }

    fn host_after(&self, action: Action) -> f64 {
        let of = |op| by_stage_and_kind(&self.after, op);
        match action {
            Action::One(op) => of(op),
            Action::Pair { f, b } => of(f) + of(b),
        }
    }

    fn transfer(&self, from: u32, to: u32) -> f64 {
        let (Some(&a), Some(&b)) = (self.hosts.get(from as usize), self.hosts.get(to as usize))
        else {
            return 0.0;
        };
        if a == b {
            return 0.0;
        }
        self.links
            .get(&(a, b))
            .copied()
            .unwrap_or(self.default_link)
    }
}
