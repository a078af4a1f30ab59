//! From a matched run to a [`Calibration`]: every figure a median of what the traces recorded.

use crate::file::{
    Calibration, Cut, FORMAT_NAME, FORMAT_VERSION, Link, Measured, PairCost, Part, RankMeasured,
    RunMeasured, SavedBytes, Sources,
};
use crate::stats::Stats;
use outside::OutsideSamples;
use pipeweave_plan::{Action, Dir, Kind, Plan, Step};
use pipeweave_trace::{Clock, Naming, Run, Timed};
use std::collections::{BTreeMap, HashMap};
use transfers::Transfers;

mod outside;
mod transfers;

/// 2000-01-01 in microseconds since the epoch: a trace time past it, without a base time, is
/// taken as a time since the epoch.
const EPOCH_2000_US: f64 = 946_684_800e6;

/// What to measure: the run matched against its plan, and the names the file records.
#[derive(Debug, Clone, Copy)]
pub struct MeasureInput<'a> {
    /// The plan the traces ran.
    pub plan: &'a Plan,
    /// Its name, as given.
    pub plan_name: &'a str,
    /// The trace files, as given.
    pub traces: &'a [String],
    /// The run, matched against the plan.
    pub run: &'a Run,
}

/// Measures a run: the calibration and notes on what it could not measure.
pub fn measure(input: MeasureInput<'_>) -> Result<(Calibration, Vec<String>), String> {
    measure_runs(&[input])
}

/// Measures several runs together, on the same model cut alike, the same ranks and micro-batches
/// (the schedule a user runs today, and one step of a schedule that splits its backward, so that
/// I and W are measured too): every cost is the statistic of all the runs' samples, and each
/// part says which runs its figures are from. The step and each rank's figures (`step_time`,
/// `[[rank]]`) are the first run's, of its plan.
pub fn measure_runs(inputs: &[MeasureInput<'_>]) -> Result<(Calibration, Vec<String>), String> {
    let Some(first) = inputs.first() else {
        return Err("no run to measure".to_owned());
    };
    let plan = first.plan;
    let parts = plan.stages_per_pipeline();
    for (k, other) in inputs.iter().enumerate().skip(1) {
        let p = other.plan;
        let shape = |p: &Plan| (p.ranks(), p.num_microbatches());
        if shape(p) != shape(plan) {
            return Err(format!(
                "run {} ({}) has {} ranks and {} micro-batches, and run 1 ({}) {} and {}: runs measured together must run the same model on the same ranks and micro-batches",
                k + 1,
                pipeweave_diagnostics::visible(other.plan_name),
                p.ranks(),
                p.num_microbatches(),
                pipeweave_diagnostics::visible(first.plan_name),
                plan.ranks(),
                plan.num_microbatches(),
            ));
        }
        if other.run.clock != first.run.clock {
            return Err(format!(
                "run {} ({}) is timed on another clock than run 1 (one on the host, one on the GPU)",
                k + 1,
                pipeweave_diagnostics::visible(other.plan_name),
            ));
        }
    }
    let several = inputs.len() > 1;
    let mut notes = Vec::new();
    // Durations by part and kind (with the runs they are from), pairs by (f part, b part, b kind).
    let mut ops: BTreeMap<(u32, Kind), Vec<f64>> = BTreeMap::new();
    let mut from: BTreeMap<(u32, Kind), Vec<u32>> = BTreeMap::new();
    let mut pairs: BTreeMap<(u32, u32, Kind), Vec<f64>> = BTreeMap::new();
    let mut saved = SavedFigures::default();
    let mut link_samples: BTreeMap<(u32, u32, bool), Vec<f64>> = BTreeMap::new();
    let mut outside = OutsideSamples::default();
    let mut transfers = Transfers::default();
    // The compute of runs that cut the model into other numbers of parts than run 1: by cut,
    // then as `ops` and `from`.
    type Timed = (
        BTreeMap<(u32, Kind), Vec<f64>>,
        BTreeMap<(u32, Kind), Vec<u32>>,
    );
    let mut cut_ops: BTreeMap<u32, Timed> = BTreeMap::new();
    for (k, input) in inputs.iter().enumerate() {
        let (plan, run) = (input.plan, input.run);
        let cut = plan.stages_per_pipeline();
        if cut != parts {
            let (ops, from) = cut_ops.entry(cut).or_default();
            time_ops(plan, run, k, ops, from);
            links(plan, run, &mut link_samples);
            outside.add(plan, run);
            transfers.add(plan, run, k, inputs.len(), false)?;
            continue;
        }
        time_ops(plan, run, k, &mut ops, &mut from);
        for (rank, r) in run.ranks.iter().enumerate() {
            let program = plan.program(rank as u32);
            for step in &r.steps {
                for (action, t) in program.iter().zip(&step.actions) {
                    if let Action::Pair { f, b } = *action {
                        pairs
                            .entry((plan.part(f.stage), plan.part(b.stage), b.kind))
                            .or_default()
                            .push(t.dur);
                    }
                }
            }
        }
        saved_bytes(plan, run, &mut saved, k == 0);
        links(plan, run, &mut link_samples);
        outside.add(plan, run);
        transfers.add(plan, run, k, inputs.len(), true)?;
    }
    let median = |part: u32, kind: Kind| {
        ops.get(&(part, kind))
            .and_then(|v| in_seconds(v))
            .map(|s| s.median)
    };
    let mut part_rows = Vec::with_capacity(parts as usize);
    for q in 0..parts {
        let stats = |kind| ops.get(&(q, kind)).and_then(|v| in_seconds(v));
        let Some(f) = stats(Kind::F) else {
            return Err(format!(
                "the traces time no forward of part {q} alone, so its costs cannot be measured"
            ));
        };
        let runs = |kind| from.get(&(q, kind)).cloned().unwrap_or_default();
        part_rows.push(Part {
            part: q,
            f,
            b: stats(Kind::B),
            i: stats(Kind::I),
            w: stats(Kind::W),
            saved_bytes: saved.by_part.get(&q).and_then(|v| median_u64(v)),
            gradient_bytes: transfers.gradients.get(&q).copied(),
            freed_by_i: saved.freed_by_i(q),
            measured_in: several.then(|| Sources {
                f: runs(Kind::F),
                b: runs(Kind::B),
                i: runs(Kind::I),
                w: runs(Kind::W),
            }),
        });
    }
    let mut pair_rows = Vec::new();
    for (&(fp, bp, kind), durs) in &pairs {
        let Some(duration) = in_seconds(durs) else {
            continue;
        };
        let halves = median(fp, Kind::F)
            .zip(median(bp, kind))
            .map(|(a, b)| a + b);
        let Some(halves) = halves.filter(|h| *h > 0.0) else {
            notes.push(format!(
                "the pairs of part {fp}'s F with part {bp}'s {} have no halves run alone to compare with: their slowdown is not measured",
                kind.letter()
            ));
            continue;
        };
        pair_rows.push(PairCost {
            f_part: fp,
            b_part: bp,
            b_kind: kind.letter().to_string(),
            duration,
            slowdown: duration.median / halves,
        });
    }
    let mut links = link_rows(link_samples);
    let mut probe = transfers.probe();
    probe.reduction_in_tail = inputs
        .iter()
        .any(|i| !crate::model::copies(i.plan).is_empty());
    for l in &mut links {
        l.bytes = transfers
            .messages
            .get(&(l.from, l.to, l.dir == "F"))
            .copied();
        let key = (l.from.min(l.to), l.from.max(l.to));
        if let Some(f) = probe.links.iter().find(|f| (f.from, f.to) == key) {
            l.latency = Some(f.latency);
            l.bandwidth = f.bandwidth;
        }
    }
    if links.is_empty() && plan.ranks() > 1 {
        notes.push(
            "the traces name no matched sends and receives: transfer times are not measured"
                .to_owned(),
        );
    }
    if !links.is_empty() && inputs.iter().any(|i| i.run.naming == Naming::Pipeweave) {
        notes.push(
            "link times are from the receives' waits (PlanRunner times the wait for the data right before the action that consumes it): each is the time from the later of the send's start and the wait's start to the wait's end, the transfer when the receiver waited from before the send, near zero when the data came before the wait (a wait, not a transfer)"
                .to_owned(),
        );
    }
    if probe.p2p.is_empty() && plan.ranks() > 1 {
        notes.push(
            "the traces hold no link probe (`pipeweave.torch.profile(..., probe=True)` writes one): no link's latency and bandwidth are measured, and a part kept on several ranks has its gradients' all-reduce priced only as far as the step's tail holds one"
                .to_owned(),
        );
    }
    for l in &probe.links {
        if l.bandwidth.is_none() {
            notes.push(format!(
                "the probe's transfers between ranks {} and {} did not take longer with their size (a loaded machine?): the link has a latency, {} s, and no bandwidth",
                l.from, l.to, l.latency
            ));
        }
    }
    if !inputs
        .iter()
        .any(|i| i.run.ranks.iter().any(|r| r.has_saved))
    {
        notes.push("no saved-bytes records in these traces: memory is not measured".to_owned());
    }
    let steps_total: usize = inputs.iter().map(|i| i.run.steps).sum();
    let overhead = outside.finish(steps_total, &mut notes);
    let (step_times, rank_rows) = steps(plan, first.run, &saved);
    let step_time = in_seconds(&step_times).ok_or("the traces hold no step")?;
    let runs: Vec<RunMeasured> = if several {
        inputs
            .iter()
            .map(|i| RunMeasured {
                plan: i.plan_name.to_owned(),
                traces: i.traces.to_vec(),
                steps: u32::try_from(i.run.steps).unwrap_or(u32::MAX),
                when: when(i.run),
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut cuts = Vec::new();
    for (&cut, (ops, from)) in &cut_ops {
        let mut rows = Vec::with_capacity(cut as usize);
        for q in 0..cut {
            let stats = |kind| ops.get(&(q, kind)).and_then(|v| in_seconds(v));
            let Some(f) = stats(Kind::F) else {
                return Err(format!(
                    "the runs that cut the model into {cut} parts time no forward of part {q} alone, so that cut's costs cannot be measured"
                ));
            };
            let runs = |kind| from.get(&(q, kind)).cloned().unwrap_or_default();
            rows.push(Part {
                part: q,
                f,
                b: stats(Kind::B),
                i: stats(Kind::I),
                w: stats(Kind::W),
                saved_bytes: None,
                gradient_bytes: None,
                freed_by_i: None,
                measured_in: Some(Sources {
                    f: runs(Kind::F),
                    b: runs(Kind::B),
                    i: runs(Kind::I),
                    w: runs(Kind::W),
                }),
            });
        }
        cuts.push(Cut {
            parts: cut,
            part: rows,
        });
        notes.push(format!(
            "the runs that cut the model into {cut} parts (not run 1's {parts}) give that cut's F, B, I and W (`[[cut]]`, for plans cut alike) and their links and host time between actions; their pairs and bytes are not measured"
        ));
    }
    if several {
        notes.push(format!(
            "{} runs measured together: each part's F, B, I and W are the statistics of every run that timed them (`measured_in` names the runs), and so are the pairs, links, host gaps and saved bytes; the step and each rank's figures are run 1's ({})",
            inputs.len(),
            pipeweave_diagnostics::visible(first.plan_name)
        ));
    }
    let run = first.run;
    let calibration = Calibration {
        format: FORMAT_NAME.to_owned(),
        version: FORMAT_VERSION,
        measured: Measured {
            when: when(run),
            traces: first.traces.to_vec(),
            plan: first.plan_name.to_owned(),
            ranks: plan.ranks(),
            parts,
            microbatches: plan.num_microbatches(),
            steps: u32::try_from(run.steps).unwrap_or(u32::MAX),
            clock: match run.clock {
                Clock::Cpu => "host",
                Clock::Gpu => "gpu",
            }
            .to_owned(),
            naming: match run.naming {
                Naming::Pipeweave => "pipeweave",
                Naming::PyTorch => "pytorch",
            }
            .to_owned(),
            step_time,
            runs,
        },
        parts: part_rows,
        pairs: pair_rows,
        links,
        ranks: rank_rows,
        saved: saved.rows(),
        overhead,
        probe,
        cuts,
    };
    Ok((calibration, notes))
}

/// When the run's first profiled action ran, UTC, when its traces say.
/// Adds run `k`'s lone actions' durations by (part, kind) to `ops`, and `k` to the runs of each
/// (part, kind) it timed.
fn time_ops(
    plan: &Plan,
    run: &Run,
    k: usize,
    ops: &mut BTreeMap<(u32, Kind), Vec<f64>>,
    from: &mut BTreeMap<(u32, Kind), Vec<u32>>,
) {
    for (rank, r) in run.ranks.iter().enumerate() {
        let program = plan.program(rank as u32);
        for step in &r.steps {
            for (action, t) in program.iter().zip(&step.actions) {
                if let Action::One(op) = *action {
                    let key = (plan.part(op.stage), op.kind);
                    ops.entry(key).or_default().push(t.dur);
                    let runs = from.entry(key).or_default();
                    if runs.last() != Some(&(k as u32)) {
                        runs.push(k as u32);
                    }
                }
            }
        }
    }
}

fn when(run: &Run) -> Option<String> {
    let first = run
        .ranks
        .iter()
        .flat_map(|r| r.steps.first())
        .flat_map(|s| s.actions.iter().map(|t| t.start))
        .fold(f64::INFINITY, f64::min);
    match run.base_time_ns {
        Some(base) => Some(base as f64 / 1000.0 + first),
        None => (first >= EPOCH_2000_US).then_some(first),
    }
    .map(utc)
}

/// The statistics of microseconds, in seconds: each figure divided once, so that a whole number
/// of nanoseconds reads as written (1020 µs as 0.00102 s, not 0.0010199999999999999 s).
fn in_seconds(us: &[f64]) -> Option<Stats> {
    let s = Stats::of(us)?;
    let to = |x: f64| (x * 1000.0).round() / 1e9;
    Some(Stats {
        median: to(s.median),
        q1: to(s.q1),
        q3: to(s.q3),
        min: to(s.min),
        max: to(s.max),
        samples: s.samples,
        // Clamped: the mean rounded to the nanosecond stays between the rounded extremes.
        mean: s.mean.map(|m| to(m).clamp(to(s.min), to(s.max))),
    })
}

/// The median of whole numbers (the lower middle one for an even count, so it stays whole).
fn median_u64(v: &[u64]) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    let mut v = v.to_vec();
    v.sort_unstable();
    Some(v[(v.len() - 1) / 2])
}

/// What the saved-bytes records say.
#[derive(Default)]
struct SavedFigures {
    /// The rise over each forward, by (stage, mb), one per step.
    by_op: BTreeMap<(u32, u32), Vec<u64>>,
    /// The same by part.
    by_part: BTreeMap<u32, Vec<u64>>,
    /// The fall over each I and its forward's rise, by part.
    i_fall: BTreeMap<u32, Vec<(u64, u64)>>,
    /// Each rank's peak.
    peak: Vec<Option<u64>>,
}

impl SavedFigures {
    fn freed_by_i(&self, part: u32) -> Option<f64> {
        let v = self.i_fall.get(&part)?;
        let fall: f64 = v.iter().map(|&(f, _)| f as f64).sum();
        let rise: f64 = v.iter().map(|&(_, r)| r as f64).sum();
        (rise > 0.0).then(|| (fall / rise).clamp(0.0, 1.0))
    }

    fn rows(&self) -> Vec<SavedBytes> {
        self.by_op
            .iter()
            .filter_map(|(&(stage, mb), v)| {
                median_u64(v).map(|bytes| SavedBytes { stage, mb, bytes })
            })
            .collect()
    }
}

/// The saved bytes each forward leaves (its record's bytes less the record before it on the rank)
/// and the part of them each I frees, added to `out`; each rank's peak too, for the first run.
fn saved_bytes(plan: &Plan, run: &Run, out: &mut SavedFigures, first: bool) {
    for (rank, r) in run.ranks.iter().enumerate() {
        let program = plan.program(rank as u32);
        let mut peak: Option<u64> = None;
        let mut before = 0u64;
        for step in &r.steps {
            let mut rose: HashMap<(u32, u32), u64> = HashMap::new();
            for (action, saved) in program.iter().zip(&step.saved) {
                let Some(s) = saved else { continue };
                peak = Some(peak.map_or(s.peak, |p| p.max(s.peak)));
                if let Action::One(op) = *action {
                    match op.kind {
                        Kind::F => {
                            let rise = s.bytes.saturating_sub(before);
                            rose.insert((op.stage, op.mb), rise);
                            out.by_op.entry((op.stage, op.mb)).or_default().push(rise);
                            out.by_part
                                .entry(plan.part(op.stage))
                                .or_default()
                                .push(rise);
                        }
                        Kind::I => {
                            if let Some(&rise) = rose.get(&(op.stage, op.mb)) {
                                let fall = before.saturating_sub(s.bytes).min(rise);
                                out.i_fall
                                    .entry(plan.part(op.stage))
                                    .or_default()
                                    .push((fall, rise));
                            }
                        }
                        _ => {}
                    }
                }
                before = s.bytes;
            }
        }
        if first {
            out.peak.push(peak);
        }
    }
}

/// Each step's time over all ranks, and each rank's figures.
fn steps(plan: &Plan, run: &Run, saved: &SavedFigures) -> (Vec<f64>, Vec<RankMeasured>) {
    let span = |actions: &[Timed]| {
        let start = actions
            .iter()
            .map(|t| t.start)
            .fold(f64::INFINITY, f64::min);
        let end = actions
            .iter()
            .map(Timed::end)
            .fold(f64::NEG_INFINITY, f64::max);
        (start, end)
    };
    let mut step_times = Vec::with_capacity(run.steps);
    for k in 0..run.steps {
        let (mut start, mut end) = (f64::INFINITY, f64::NEG_INFINITY);
        for r in &run.ranks {
            let s = &r.steps[k];
            let (a, b) = span(&s.actions);
            let others: Vec<Timed> = s.others.iter().map(|o| o.timed).collect();
            let (c, d) = span(&others);
            start = start.min(a).min(c);
            end = end.max(b).max(d);
        }
        if end >= start {
            step_times.push(end - start);
        }
    }
    let mut rows = Vec::with_capacity(run.ranks.len());
    for (rank, r) in run.ranks.iter().enumerate() {
        let times: Vec<f64> = r
            .steps
            .iter()
            .map(|s| {
                let (a, b) = span(&s.actions);
                (b - a).max(0.0)
            })
            .collect();
        let busy: Vec<f64> = r
            .steps
            .iter()
            .map(|s| s.actions.iter().map(|t| t.dur).sum::<f64>())
            .collect();
        let (Some(step_time), Some(busy)) = (in_seconds(&times), in_seconds(&busy)) else {
            continue;
        };
        let _ = plan;
        rows.push(RankMeasured {
            rank: rank as u32,
            step_time,
            busy,
            peak_saved_bytes: saved.peak.get(rank).copied().flatten(),
        });
    }
    (step_times, rows)
}

/// Each link's transfer times, added to `samples` by (from rank, to rank, forward): a send on one
/// rank matched with the receive of the same data on its peer, in the same step.
fn links(plan: &Plan, run: &Run, samples: &mut BTreeMap<(u32, u32, bool), Vec<f64>>) {
    // Receives by (dir, receiving stage, mb, step).
    let mut recvs: HashMap<(Dir, u32, u32, usize), Timed> = HashMap::new();
    for r in &run.ranks {
        for (k, s) in r.steps.iter().enumerate() {
            for o in &s.others {
                // PlanRunner's posting is not the receive of the data: its wait is.
                if let Step::Recv { dir, stage, mb, .. } = o.step
                    && !o.post
                {
                    recvs.insert((dir, stage, mb, k), o.timed);
                }
            }
        }
    }
    for (rank, r) in run.ranks.iter().enumerate() {
        for (k, s) in r.steps.iter().enumerate() {
            for o in &s.others {
                let Step::Send {
                    dir,
                    stage,
                    mb,
                    peer,
                } = o.step
                else {
                    continue;
                };
                let Some(to_stage) = plan.receiving_stage(dir, stage) else {
                    continue;
                };
                let Some(recv) = recvs.get(&(dir, to_stage, mb, k)) else {
                    continue;
                };
                let took = recv.end() - o.timed.start.max(recv.start);
                samples
                    .entry((rank as u32, peer, dir == Dir::Fwd))
                    .or_default()
                    .push(took.max(0.0));
            }
        }
    }
}

/// The `[[link]]` rows of the transfer samples.
fn link_rows(samples: BTreeMap<(u32, u32, bool), Vec<f64>>) -> Vec<Link> {
    samples
        .into_iter()
        .filter_map(|((from, to, fwd), v)| {
            in_seconds(&v).map(|transfer| Link {
                from,
                to,
                dir: if fwd { "F" } else { "B" }.to_owned(),
                transfer,
                bytes: None,
                latency: None,
                bandwidth: None,
            })
        })
        .collect()
}

/// Microseconds since the epoch as a UTC time to the second, `2026-12-07T05:31:12Z`.
fn utc(us: f64) -> String {
    let secs = (us / 1e6).floor() as i64;
    let days = secs.div_euclid(86_400);
    let rest = secs.rem_euclid(86_400);
    // Days to a civil date (the proleptic Gregorian calendar), by eras of 400 years.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0.0), "1970-01-01T00:00:00Z");
        assert_eq!(super::utc(1_796_621_472e6), "2026-12-07T05:31:12Z");
        assert_eq!(super::utc(951_782_400e6), "2000-02-29T00:00:00Z");
    }
}
