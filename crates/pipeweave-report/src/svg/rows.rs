//! The rows of the charts: each rank's name, idle background, cells (or bands, when the chart is
//! too dense to label) and idle time, and the lane of its sends under it.

use super::dense::{self, BandLook};
use super::palette::{IDLE_FILL, Look, SEND_BWD_FILL, SEND_FWD_FILL, Shading};
use super::{CHAR_W, LANE_H, Layout, ROW_GAP, ROW_H, TITLE_H, TimelineChart, Transfer, esc};
use super::{LEFT, kind_name};
use crate::format::{TimeFormat, num, percent};
use pipeweave_eval::TimeUnit;
use pipeweave_plan::{Action, Dir, Interval, Op, Plan};
use std::collections::BTreeSet;
use std::fmt::Write;

/// What the charts drew, for the legend to explain.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// By [`pipeweave_plan::Kind`] as an index, then shade.
    pub kinds: [[bool; 2]; 4],
    pub pairs: bool,
    /// The shades drawn and what they mean: (hatched, shade, meaning).
    pub shades: BTreeSet<(bool, usize, String)>,
    /// Whether a chart was drawn in bands.
    pub bands: bool,
    /// Whether a chart drew its sends one by one, or as the share of time they are in flight.
    pub lanes: bool,
    pub density: bool,
}

/// One chart as it is being drawn.
struct Chart<'c> {
    plan: &'c Plan,
    shading: Shading,
    /// The width the chart's longest label needs: a cell gets its label only if it has that
    /// room, so whether a cell is labelled depends on its size, not on its number's digits.
    label_w: f64,
    dense: bool,
    /// The (hatched, shade) combinations drawn.
    looks: [[bool; 2]; 2],
}

/// The rows of every chart, written one after the other.
pub(super) struct Rows<'a> {
    pub out: String,
    id: &'a str,
    unit: TimeUnit,
    lay: &'a Layout,
    pub seen: Seen,
}

/// The label of an op's cell: its micro-batch numbered within its pipeline, as in the paper's
/// figure (both directions count from 0; the shade tells them apart).
fn local_mb(plan: &Plan, op: Op) -> (usize, u32) {
    let j = plan.mb_pipeline(op.mb).unwrap_or(0);
    let local = plan
        .pipelines()
        .get(j as usize)
        .and_then(|p| p.microbatches.binary_search(&op.mb).ok())
        .map_or(op.mb, |i| i as u32);
    (j as usize, local)
}

/// The transfers sent by each of `ranks` ranks, in their order (one pass: a scan of all the
/// transfers for every rank made drawing them quadratic in the ranks).
fn by_sender(transfers: &[Transfer], ranks: usize) -> Vec<Vec<&Transfer>> {
    let mut by_rank: Vec<Vec<&Transfer>> = vec![Vec::new(); ranks];
    for tr in transfers {
        if let Some(list) = by_rank.get_mut(tr.from_rank as usize) {
            list.push(tr);
        }
    }
    by_rank
}

impl<'a> Rows<'a> {
    pub fn new(id: &'a str, unit: TimeUnit, lay: &'a Layout) -> Rows<'a> {
        Rows {
            out: String::new(),
            id,
            unit,
            lay,
            seen: Seen::default(),
        }
    }

    /// A chart's heading and rows from `y` down; returns the y below them.
    pub fn chart(&mut self, chart: &TimelineChart, mut y: f64) -> f64 {
        let t = chart.timeline;
        let plan = chart.plan;
        let longest = plan
            .pipelines()
            .iter()
            .map(|p| p.microbatches.len().saturating_sub(1).to_string().len())
            .max()
            .unwrap_or(1);
        let label_w = longest as f64 * CHAR_W + 3.0;
        let mut c = Chart {
            plan,
            shading: Shading::of(plan),
            label_w,
            dense: dense::is_dense(plan, &t.timing.intervals, self.lay, label_w),
            looks: [[false; 2]; 2],
        };
        self.seen.bands |= c.dense;
        let _ = writeln!(
            self.out,
            r##"<text x="{}" y="{}" font-size="13" font-weight="bold">{}</text><text x="{}" y="{}" font-size="11" fill="#444" text-anchor="end">makespan {}, bubble {}</text>"##,
            num(LEFT),
            num(y + 16.0),
            esc(&chart.title),
            num(LEFT + self.lay.plot_w),
            num(y + 16.0),
            esc(&self.unit.format(t.timing.makespan)),
            percent(t.bubble_fraction, 2)
        );
        y += TITLE_H;
        let ranks = plan.programs().len();
        let by_rank = chart.transfers.as_deref().map(|t| by_sender(t, ranks));
        for rank in 0..ranks {
            self.rank_row(chart, &mut c, rank, y, &format!("rank {rank}"));
            y += ROW_H;
            if let Some(by_rank) = &by_rank {
                let sent = by_rank[rank].iter().copied();
                if c.dense {
                    self.seen.density = true;
                    self.busy_lane(sent, rank, y + 1.0);
                } else {
                    self.seen.lanes = true;
                    self.lane(sent, y + 1.0);
                }
                y += self.lay.lane;
            }
            y += ROW_GAP;
        }
        if c.shading.shaded() {
            for (hatch, shades) in c.looks.iter().enumerate() {
                for shade in (0..2).filter(|&s| shades[s]) {
                    let meaning = c.shading.meaning(shade, hatch == 1);
                    self.seen.shades.insert((hatch == 1, shade, meaning));
                }
            }
        }
        y
    }

    /// Two timelines of one plan drawn rank by rank, `planned`'s row of each rank above
    /// `measured`'s, under one heading; returns the y below them.
    pub fn paired(
        &mut self,
        title: &str,
        planned: &TimelineChart,
        measured: &TimelineChart,
        mut y: f64,
    ) -> f64 {
        let plan = planned.plan;
        let longest = plan
            .pipelines()
            .iter()
            .map(|p| p.microbatches.len().saturating_sub(1).to_string().len())
            .max()
            .unwrap_or(1);
        let label_w = longest as f64 * CHAR_W + 3.0;
        let state = |t: &pipeweave_sim::Timeline| Chart {
            plan,
            shading: Shading::of(plan),
            label_w,
            dense: dense::is_dense(plan, &t.timing.intervals, self.lay, label_w),
            looks: [[false; 2]; 2],
        };
        let mut a = state(planned.timeline);
        let mut b = state(measured.timeline);
        self.seen.bands |= a.dense || b.dense;
        let _ = writeln!(
            self.out,
            r##"<text x="{}" y="{}" font-size="13" font-weight="bold">{}</text><text x="{}" y="{}" font-size="11" fill="#444" text-anchor="end">planned {}, measured {}</text>"##,
            num(LEFT),
            num(y + 16.0),
            esc(title),
            num(LEFT + self.lay.plot_w),
            num(y + 16.0),
            esc(&self.unit.format(planned.timeline.timing.makespan)),
            esc(&self.unit.format(measured.timeline.timing.makespan)),
        );
        y += TITLE_H;
        for rank in 0..plan.programs().len() {
            self.rank_row(planned, &mut a, rank, y, &format!("rank {rank} plan"));
            y += ROW_H;
            self.rank_row(measured, &mut b, rank, y, &format!("rank {rank} run"));
            y += ROW_H + ROW_GAP * 2.0;
        }
        y
    }

    /// A rank's row at `row_y`: its name, the idle background, its actions and its idle time.
    fn rank_row(
        &mut self,
        chart: &TimelineChart,
        c: &mut Chart,
        rank: usize,
        row_y: f64,
        label: &str,
    ) {
        let t = chart.timeline;
        let _ = write!(
            self.out,
            r#"<text x="{}" y="{}" font-size="11" text-anchor="end" dominant-baseline="central">{}</text>"#,
            num(LEFT - 6.0),
            num(row_y + ROW_H / 2.0),
            esc(label),
        );
        if let Some((x, w)) = self.lay.clip(0.0, t.timing.makespan) {
            let _ = write!(
                self.out,
                r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{IDLE_FILL}"/>"#,
                num(x),
                num(row_y),
                num(w),
                num(ROW_H),
            );
        }
        self.out.push('\n');
        let program = &c.plan.programs()[rank];
        let intervals = t.timing.intervals.get(rank).map_or(&[][..], Vec::as_slice);
        if c.dense {
            for band in dense::bands(c.plan, program, intervals, &c.shading, self.lay) {
                self.band(c, rank, program, &band, row_y);
            }
        } else {
            for (a, iv) in program.iter().zip(intervals) {
                self.action(c, rank, a, iv, row_y);
            }
        }
        let layers = rank_layers(c.plan, rank);
        if let Some(m) = t.ranks.get(rank) {
            let share = if t.timing.makespan > 0.0 {
                m.idle / t.timing.makespan
            } else {
                0.0
            };
            // with the layers below it, the idle time in the upper half of the row
            let y = if layers.is_some() {
                row_y + ROW_H * 0.3
            } else {
                row_y + ROW_H / 2.0
            };
            let _ = writeln!(
                self.out,
                r##"<text x="{}" y="{}" font-size="10" fill="#555" dominant-baseline="central">idle {} ({})</text>"##,
                num(LEFT + self.lay.plot_w + 8.0),
                num(y),
                esc(&self.unit.format(m.idle)),
                percent(share, 0),
            );
        }
        if let Some((short, long)) = layers {
            let _ = writeln!(
                self.out,
                r##"<text x="{}" y="{}" font-size="9" fill="#2a6f3f" dominant-baseline="central" class="layers"><title>{}</title>{}</text>"##,
                num(LEFT + self.lay.plot_w + 8.0),
                num(row_y + ROW_H * 0.75),
                esc(&long),
                esc(&short),
            );
        }
    }

    /// Notes a look as drawn, for the legend.
    fn saw(&mut self, c: &mut Chart, look: Look) {
        self.seen.kinds[look.kind as usize][look.shade] = true;
        c.looks[usize::from(look.hatch)][look.shade] = true;
    }

    /// One action's cell (two halves and a frame for a pair), with its tooltip and border; the
    /// part inside the window.
    fn action(&mut self, c: &mut Chart, rank: usize, a: &Action, iv: &Interval, row_y: f64) {
        let Some((x, w)) = self.lay.clip(iv.start, iv.end) else {
            return;
        };
        let tip = tooltip(rank, a, c, iv.start, iv.end, self.unit);
        match *a {
            Action::One(op) => {
                let look = c.shading.look(c.plan, op);
                self.saw(c, look);
                self.cell(c, op, look, [x, row_y, w, ROW_H], &tip);
            }
            Action::Pair { f, b } => {
                self.seen.pairs = true;
                let (lf, lb) = (c.shading.look(c.plan, f), c.shading.look(c.plan, b));
                self.saw(c, lf);
                self.saw(c, lb);
                let half = ROW_H / 2.0;
                self.cell(c, f, lf, [x, row_y, w, half], &tip);
                self.cell(c, b, lb, [x, row_y + half, w, half], &tip);
                let _ = writeln!(
                    self.out,
                    r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#222" stroke-width="1.2"/>"##,
                    num(x + 0.6),
                    num(row_y + 0.6),
                    num((w - 1.2).max(0.0)),
                    num(ROW_H - 1.2)
                );
            }
        }
        // Cell borders drawn last so neighbouring cells stay apart.
        let _ = writeln!(
            self.out,
            r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#fff" stroke-width="0.8"/>"##,
            num(x),
            num(row_y),
            num(w),
            num(ROW_H)
        );
    }

    /// A rectangle of a look's fill, hatched for odd pipelines.
    fn fill(&mut self, look: Look, [x, y, w, h]: [f64; 4]) {
        let _ = write!(
            self.out,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{}"/>"#,
            num(x),
            num(y),
            num(w),
            num(h),
            look.fill()
        );
        if look.hatch {
            let _ = write!(
                self.out,
                r#"<rect x="{}" y="{}" width="{}" height="{}" fill="url(#{}-hatch)"/>"#,
                num(x),
                num(y),
                num(w),
                num(h),
                esc(self.id)
            );
        }
    }

    /// One op's coloured cell, labelled where the label fits.
    fn cell(&mut self, c: &Chart, op: Op, look: Look, rect: [f64; 4], tip: &str) {
        let _ = write!(self.out, r#"<g class="cell"><title>{}</title>"#, esc(tip));
        self.fill(look, rect);
        self.out.push('\n');
        let [x, y, w, h] = rect;
        if w >= c.label_w && h >= 9.0 {
            let size = if h >= 16.0 { 11.0 } else { 9.5 };
            let ink = match look.ink() {
                "#000" => String::new(),
                ink => format!(r#" fill="{ink}""#),
            };
            let _ = writeln!(
                self.out,
                r#"<text x="{}" y="{}" font-size="{}" text-anchor="middle" dominant-baseline="central"{ink}>{}</text>"#,
                num(x + w / 2.0),
                num(y + h / 2.0),
                num(size),
                local_mb(c.plan, op).1
            );
        }
        self.out.push_str("</g>\n");
    }

    /// A band: a run of actions of one look, without labels or borders.
    fn band(
        &mut self,
        c: &mut Chart,
        rank: usize,
        program: &[Action],
        band: &dense::Band,
        row_y: f64,
    ) {
        let (x, w) = (
            self.lay.x(band.start),
            (band.end - band.start) * self.lay.scale,
        );
        let count = band.last - band.first + 1;
        let what = match band.look {
            BandLook::One(look) => {
                self.saw(c, look);
                format!(
                    "{}, {}",
                    kind_name(look.kind),
                    c.shading.meaning(look.shade, look.hatch)
                )
            }
            BandLook::Pair(lf, lb) => {
                self.seen.pairs = true;
                self.saw(c, lf);
                self.saw(c, lb);
                "overlapped F&B pairs".to_owned()
            }
        };
        let tip = format!(
            "rank {rank}: {count} × {what}: {} to {}, {} to {}",
            program[band.first],
            program[band.last],
            self.unit.format(band.start),
            self.unit.format(band.end)
        );
        let _ = write!(self.out, r#"<g class="band"><title>{}</title>"#, esc(&tip));
        match band.look {
            BandLook::One(look) => self.fill(look, [x, row_y, w, ROW_H]),
            BandLook::Pair(lf, lb) => {
                let half = ROW_H / 2.0;
                self.fill(lf, [x, row_y, w, half]);
                self.fill(lb, [x, row_y + half, w, half]);
            }
        }
        self.out.push_str("</g>\n");
    }

    /// The lane at `lane_y` under a rank: the transfers it sends, from the send to the arrival.
    fn lane<'t>(&mut self, sent: impl Iterator<Item = &'t Transfer>, lane_y: f64) {
        for tr in sent {
            let Some((x, w)) = self.lay.clip(tr.start, tr.end) else {
                continue;
            };
            let (colour, what) = match tr.dir {
                Dir::Fwd => (SEND_FWD_FILL, "activation"),
                Dir::Bwd => (SEND_BWD_FILL, "gradient"),
            };
            let _ = writeln!(
                self.out,
                r#"<rect class="comm" x="{}" y="{}" width="{}" height="{}" fill="{colour}"><title>{}</title></rect>"#,
                num(x),
                num(lane_y),
                num(w.max(2.0)),
                num(LANE_H - 2.0),
                esc(&format!(
                    "rank {} to rank {}: {what} of stage {} for micro-batch {}, {} to {}",
                    tr.from_rank,
                    tr.to_rank,
                    tr.stage,
                    tr.mb,
                    self.unit.format(tr.start),
                    self.unit.format(tr.end)
                ))
            );
        }
    }

    /// The lane at `lane_y` under a dense chart's rank: how densely its sends of activations
    /// (upper half) and gradients (lower half) fill it.
    fn busy_lane<'t>(
        &mut self,
        sent: impl Iterator<Item = &'t Transfer>,
        rank: usize,
        lane_y: f64,
    ) {
        let sent: Vec<&Transfer> = sent.collect();
        let half = (LANE_H - 2.0) / 2.0;
        for (dir, colour, what, y) in [
            (Dir::Fwd, SEND_FWD_FILL, "activations", lane_y),
            (Dir::Bwd, SEND_BWD_FILL, "gradients", lane_y + half),
        ] {
            let spans = sent
                .iter()
                .filter(|tr| tr.dir == dir)
                .map(|tr| (tr.start, tr.end));
            for run in dense::busy(spans, self.lay) {
                let opacity = match run.level {
                    1 => r#" fill-opacity="0.4""#,
                    2 => r#" fill-opacity="0.7""#,
                    _ => "",
                };
                let _ = writeln!(
                    self.out,
                    r#"<rect class="comm-busy" x="{}" y="{}" width="{}" height="{}" fill="{colour}"{opacity}><title>{}</title></rect>"#,
                    num(self.lay.x(run.start)),
                    num(y),
                    num((run.end - run.start) * self.lay.scale),
                    num(half),
                    esc(&format!(
                        "rank {rank} sends {what}: {} from {} to {}, in flight {} of that time",
                        run.sends,
                        self.unit.format(run.start),
                        self.unit.format(run.end),
                        percent(run.share, 0)
                    ))
                );
            }
        }
    }
}

fn tooltip(rank: usize, a: &Action, c: &Chart, start: f64, end: f64, unit: TimeUnit) -> String {
    let describe = |op: Op| {
        let (j, local) = local_mb(c.plan, op);
        let chunk = if c.shading.by_chunk {
            format!(" (chunk {})", c.shading.chunk(op.stage))
        } else {
            String::new()
        };
        format!(
            "{} of stage {}{chunk} for micro-batch {} (pipeline {j}, its micro-batch {local})",
            kind_name(op.kind),
            op.stage,
            op.mb
        )
    };
    let what = match a {
        Action::One(op) => describe(*op),
        Action::Pair { f, b } => format!("overlapped pair: {} with {}", describe(*f), describe(*b)),
    };
    format!(
        "rank {rank}: {a}: {what}, {} to {}",
        unit.format(start),
        unit.format(end)
    )
}

/// The layers the parts on `rank` hold, when the plan carries its split: a short label for the
/// row (`layers 0–15 + embedding`, or `3 parts, 12 layers + head` for several) and the whole
/// list for its tooltip, each part with its recomputation where it recomputes.
pub(super) fn rank_layers(plan: &pipeweave_plan::Plan, rank: usize) -> Option<(String, String)> {
    let split = plan.split()?;
    let s = plan.stages_per_pipeline();
    let recompute = plan.recompute();
    let mut parts: Vec<u32> = plan
        .stages_on_rank(rank as u32)
        .iter()
        .map(|&st| st % s.max(1))
        .collect();
    parts.sort_unstable();
    parts.dedup();
    if parts.is_empty() {
        return None;
    }
    let last = split.len().saturating_sub(1);
    let range = |q: usize| -> String {
        let start: u64 = split.iter().take(q).sum();
        let n = split.get(q).copied().unwrap_or(0);
        let mut t = match n {
            0 => String::new(),
            1 => format!("layer {start}"),
            _ => format!("layers {start}–{}", start + n - 1),
        };
        for (on, what) in [(q == 0, "embedding"), (q == last, "head")] {
            if on {
                t = if t.is_empty() {
                    what.to_owned()
                } else {
                    format!("{t} + {what}")
                };
            }
        }
        t
    };
    let ends = |qs: &[u32]| -> String {
        let mut t = String::new();
        if qs.contains(&0) {
            t.push_str(" + embedding");
        }
        if qs.iter().any(|&q| q as usize == last) {
            t.push_str(" + head");
        }
        t
    };
    let short = match parts.as_slice() {
        [q] => range(*q as usize),
        qs => {
            let layers: u64 = qs.iter().filter_map(|&q| split.get(q as usize)).sum();
            format!("{} parts, {layers} layers{}", qs.len(), ends(qs))
        }
    };
    let long = parts
        .iter()
        .map(|&q| {
            let rc = recompute
                .and_then(|r| r.get(q as usize))
                .filter(|r| r.as_str() != "none")
                .map(|r| format!(", recompute {r}"))
                .unwrap_or_default();
            format!("part {q}: {}{rc}", range(q as usize))
        })
        .collect::<Vec<_>>()
        .join("; ");
    Some((short, format!("rank {rank} holds {long}")))
}
