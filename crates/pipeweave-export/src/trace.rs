//! Chrome trace export (the JSON Trace Event Format that Perfetto and chrome://tracing open).
//!
//! One process per rank (`rank r`), with tracks (threads):
//! - `compute`: one slice per action, named by its cell (`3F2`, `(0F3;7B5)OVERLAP_F_B`);
//! - `send N` / `recv N`: one slice per transfer of the lowered plan, from the moment the producing
//!   action ends (the send is posted) to the moment the consuming action starts on the peer (the
//!   data has arrived and is used); transfers that overlap in time go to separate numbered tracks;
//! - `reduce N`: the gradient reduction of each stage, from the moment this rank starts it to the
//!   moment the last replica of the same model part starts it (an all-reduce ends no earlier);
//! - flow arrows from every producing slice to the slice that consumes its output on another rank.
//!
//! Times come from a [`Timing`] (the simulator's, filled in by the caller); `us_per_unit` says how
//! many microseconds one unit of the timeline is (1e6 for a timeline in seconds).

use crate::timing::Timing;
use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::{Action, Dir, Kind, Plan, Step, lower};
use serde::Serialize;
use std::collections::HashMap;
use std::io::Write as _;

const COMPUTE_TID: u32 = 0;
const SEND_TID: u32 = 1000;
const RECV_TID: u32 = 2000;
const REDUCE_TID: u32 = 3000;

#[derive(Debug, Serialize)]
struct Event<'a> {
    name: &'a str,
    ph: &'static str,
    pid: u32,
    tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Args<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Args<'a> {
    Name {
        name: &'a str,
    },
    SortIndex {
        sort_index: u32,
    },
    Op {
        stage: u32,
        mb: u32,
        kind: &'static str,
        pipeline: u32,
        part: u32,
    },
    Pair {
        forward: String,
        backward: String,
    },
    Transfer {
        stage: u32,
        mb: u32,
        from_rank: u32,
        to_rank: u32,
    },
    Reduce {
        stage: u32,
        part: u32,
        replicas: &'a [u32],
    },
}

impl<'a> Event<'a> {
    fn meta(pid: u32, tid: u32, name: &'a str, args: Args<'a>) -> Event<'a> {
        Event {
            name,
            ph: "M",
            pid,
            tid,
            ts: None,
            dur: None,
            cat: None,
            id: None,
            bp: None,
            args: Some(args),
        }
    }

    fn slice(pid: u32, tid: u32, name: &'a str, cat: &'static str, ts: f64, dur: f64) -> Event<'a> {
        Event {
            name,
            ph: "X",
            pid,
            tid,
            ts: Some(ts),
            dur: Some(dur),
            cat: Some(cat),
            id: None,
            bp: None,
            args: None,
        }
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::F => "forward",
        Kind::B => "full backward",
        Kind::I => "backward for inputs",
        Kind::W => "backward for weights",
    }
}

fn kind_cat(kind: Kind) -> &'static str {
    match kind {
        Kind::F => "F",
        Kind::B => "B",
        Kind::I => "I",
        Kind::W => "W",
    }
}

/// A communication slice before lanes are assigned.
struct CommSlice {
    rank: u32,
    base_tid: u32,
    name: String,
    cat: &'static str,
    start: f64,
    end: f64,
    args: CommArgs,
}

enum CommArgs {
    Transfer {
        stage: u32,
        mb: u32,
        from: u32,
        to: u32,
    },
    Reduce {
        stage: u32,
        part: u32,
        replicas: Vec<u32>,
    },
}

/// Writes the Chrome trace of a plan run along `timing`.
pub fn write_chrome_trace(
    plan: &Plan,
    timing: &Timing,
    us_per_unit: f64,
) -> Result<String, Diagnostic> {
    timing.check(plan)?;
    if !(us_per_unit.is_finite() && us_per_unit > 0.0) {
        return Err(Diagnostic::error(format!(
            "the time scale must be a positive number of microseconds per unit, not {us_per_unit}"
        )));
    }
    let us = |t: f64| t * us_per_unit;
    let lowered = lower(plan);
    let cells: Vec<Vec<String>> = plan
        .programs()
        .iter()
        .map(|p| p.iter().map(ToString::to_string).collect())
        .collect();

    // Where each op runs: (stage, kind, mb) → (rank, action index). Lookups only, never iterated.
    let mut runs: HashMap<(u32, Kind, u32), (u32, usize)> = HashMap::with_capacity(plan.num_ops());
    for (r, program) in plan.programs().iter().enumerate() {
        for (i, a) in program.iter().enumerate() {
            for op in a.ops() {
                runs.entry((op.stage, op.kind, op.mb))
                    .or_insert((r as u32, i));
            }
        }
    }
    let consumer = |dir: Dir, stage: u32, mb: u32| -> Option<(u32, usize)> {
        match dir {
            Dir::Fwd => runs.get(&(stage + 1, Kind::F, mb)).copied(),
            Dir::Bwd => {
                let prev = stage.checked_sub(1)?;
                runs.get(&(prev, Kind::B, mb))
                    .or_else(|| runs.get(&(prev, Kind::I, mb)))
                    .copied()
            }
        }
    };

    // The moment every rank starts each stage's gradient reduction (end of the action before it).
    let mut reduce_at: Vec<Option<f64>> = vec![None; plan.num_stages() as usize];
    let mut comms: Vec<CommSlice> = Vec::new();
    let mut flows: Vec<(u32, f64, u32, f64)> = Vec::new();
    let dir_word = |d: Dir| match d {
        Dir::Fwd => "F",
        Dir::Bwd => "B",
    };
    for (r, steps) in lowered.steps.iter().enumerate() {
        let r = r as u32;
        let mut last_compute: Option<usize> = None;
        for step in steps {
            match *step {
                Step::Compute(_) => last_compute = Some(last_compute.map_or(0, |i| i + 1)),
                Step::Send {
                    dir,
                    stage,
                    mb,
                    peer,
                } => {
                    let Some(i) = last_compute else { continue };
                    let sent = timing.intervals[r as usize][i];
                    let Some((to_rank, j)) = consumer(dir, stage, mb) else {
                        continue;
                    };
                    let used = timing.intervals[to_rank as usize][j].start;
                    let end = used.max(sent.end);
                    let d = dir_word(dir);
                    let args = || CommArgs::Transfer {
                        stage,
                        mb,
                        from: r,
                        to: peer,
                    };
                    comms.push(CommSlice {
                        rank: r,
                        base_tid: SEND_TID,
                        name: format!("{stage}SEND_{d}{mb} to rank {peer}"),
                        cat: "send",
                        start: sent.end,
                        end,
                        args: args(),
                    });
                    comms.push(CommSlice {
                        rank: peer,
                        base_tid: RECV_TID,
                        name: format!(
                            "{}RECV_{d}{mb} from rank {r}",
                            match dir {
                                Dir::Fwd => stage + 1,
                                Dir::Bwd => stage.saturating_sub(1),
                            }
                        ),
                        cat: "recv",
                        start: sent.end,
                        end,
                        args: args(),
                    });
                    flows.push((r, sent.start, to_rank, used));
                }
                Step::ReduceGrad { stage } => {
                    if let (Some(i), Some(slot)) = (last_compute, reduce_at.get_mut(stage as usize))
                    {
                        *slot = Some(timing.intervals[r as usize][i].end);
                    }
                }
                Step::Recv { .. } | Step::WaitSend { .. } | Step::WaitReduceGrad { .. } => {}
            }
        }
    }
    let s = plan.stages_per_pipeline();
    for stage in 0..plan.num_stages() {
        let (Some(start), Some(rank)) = (reduce_at[stage as usize], plan.stage_rank(stage)) else {
            continue;
        };
        let part = plan.part(stage);
        let replicas: Vec<u32> = (0..plan.model_copies()).map(|j| j * s + part).collect();
        let end = replicas
            .iter()
            .filter_map(|&x| reduce_at[x as usize])
            .fold(start, f64::max);
        comms.push(CommSlice {
            rank,
            base_tid: REDUCE_TID,
            name: format!("{stage}REDUCE_GRAD"),
            cat: "reduce",
            start,
            end,
            args: CommArgs::Reduce {
                stage,
                part,
                replicas,
            },
        });
    }

    // Lanes: slices of one rank and kind that overlap in time go to separate tracks.
    // Sort an index rather than the slices themselves (moving them is most of the cost); the index
    // breaks ties, so the order is the stable one.
    let mut order: Vec<usize> = (0..comms.len()).collect();
    order.sort_unstable_by(|&i, &j| {
        let (a, b) = (&comms[i], &comms[j]);
        (a.rank, a.base_tid)
            .cmp(&(b.rank, b.base_tid))
            .then(a.start.total_cmp(&b.start))
            .then(a.end.total_cmp(&b.end))
            .then(i.cmp(&j))
    });
    let mut slots: Vec<Option<CommSlice>> = comms.into_iter().map(Some).collect();
    let comms: Vec<CommSlice> = order.iter().filter_map(|&i| slots[i].take()).collect();
    let mut lanes_of: Vec<(u32, u32, usize)> = Vec::new(); // (rank, base tid, lanes used)
    let mut tids: Vec<u32> = Vec::with_capacity(comms.len());
    let mut lane_end: Vec<f64> = Vec::new();
    let mut group: Option<(u32, u32)> = None;
    for c in &comms {
        if group != Some((c.rank, c.base_tid)) {
            if let Some((rank, base)) = group {
                lanes_of.push((rank, base, lane_end.len()));
            }
            group = Some((c.rank, c.base_tid));
            lane_end.clear();
        }
        let lane = match lane_end.iter().position(|&e| e <= c.start) {
            Some(l) => l,
            None => {
                lane_end.push(f64::NEG_INFINITY);
                lane_end.len() - 1
            }
        };
        lane_end[lane] = c.end;
        tids.push(c.base_tid + lane as u32);
    }
    if let Some((rank, base)) = group {
        lanes_of.push((rank, base, lane_end.len()));
    }

    let mut out: Vec<u8> = Vec::with_capacity(plan.num_ops() * 200 + comms.len() * 200);
    write_events(
        &mut out, plan, timing, &cells, &comms, &tids, &lanes_of, &flows, us,
    )
    .map_err(|e| Diagnostic::error(format!("cannot write the trace: {e}")))?;
    String::from_utf8(out).map_err(|e| Diagnostic::error(format!("cannot write the trace: {e}")))
}

#[allow(clippy::too_many_arguments)]
fn write_events(
    out: &mut Vec<u8>,
    plan: &Plan,
    timing: &Timing,
    cells: &[Vec<String>],
    comms: &[CommSlice],
    tids: &[u32],
    lanes_of: &[(u32, u32, usize)],
    flows: &[(u32, f64, u32, f64)],
    us: impl Fn(f64) -> f64,
) -> serde_json::Result<()> {
    let io = serde_json::Error::io;
    out.extend_from_slice(b"{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    let mut first = true;
    let mut emit = |out: &mut Vec<u8>, e: &Event<'_>| -> serde_json::Result<()> {
        if !first {
            out.extend_from_slice(b",\n");
        }
        first = false;
        serde_json::to_writer(&mut *out, e)
    };
    let rank_names: Vec<String> = (0..plan.ranks()).map(|r| format!("rank {r}")).collect();
    for r in 0..plan.ranks() {
        emit(
            out,
            &Event::meta(
                r,
                0,
                "process_name",
                Args::Name {
                    name: &rank_names[r as usize],
                },
            ),
        )?;
        emit(
            out,
            &Event::meta(
                r,
                0,
                "process_sort_index",
                Args::SortIndex { sort_index: r },
            ),
        )?;
        emit(
            out,
            &Event::meta(
                r,
                COMPUTE_TID,
                "thread_name",
                Args::Name { name: "compute" },
            ),
        )?;
        emit(
            out,
            &Event::meta(
                r,
                COMPUTE_TID,
                "thread_sort_index",
                Args::SortIndex { sort_index: 0 },
            ),
        )?;
    }
    for &(rank, base, lanes) in lanes_of {
        let word = match base {
            SEND_TID => "send",
            RECV_TID => "recv",
            _ => "reduce",
        };
        for lane in 0..lanes as u32 {
            let name = format!("{word} {lane}");
            emit(
                out,
                &Event::meta(rank, base + lane, "thread_name", Args::Name { name: &name }),
            )?;
            emit(
                out,
                &Event::meta(
                    rank,
                    base + lane,
                    "thread_sort_index",
                    Args::SortIndex {
                        sort_index: base + lane,
                    },
                ),
            )?;
        }
    }
    let s = plan.stages_per_pipeline();
    for (r, program) in plan.programs().iter().enumerate() {
        for (i, a) in program.iter().enumerate() {
            let t = timing.intervals[r][i];
            let name = cells[r][i].as_str();
            let (cat, args) = match a {
                Action::One(op) => (
                    kind_cat(op.kind),
                    Args::Op {
                        stage: op.stage,
                        mb: op.mb,
                        kind: kind_name(op.kind),
                        pipeline: op.stage / s,
                        part: op.stage % s,
                    },
                ),
                Action::Pair { f, b } => (
                    "pair",
                    Args::Pair {
                        forward: f.to_string(),
                        backward: b.to_string(),
                    },
                ),
            };
            let mut e = Event::slice(
                r as u32,
                COMPUTE_TID,
                name,
                cat,
                us(t.start),
                us(t.end - t.start),
            );
            e.args = Some(args);
            emit(out, &e)?;
        }
    }
    for (c, &tid) in comms.iter().zip(tids) {
        let mut e = Event::slice(
            c.rank,
            tid,
            &c.name,
            c.cat,
            us(c.start),
            us(c.end - c.start),
        );
        e.args = Some(match &c.args {
            CommArgs::Transfer {
                stage,
                mb,
                from,
                to,
            } => Args::Transfer {
                stage: *stage,
                mb: *mb,
                from_rank: *from,
                to_rank: *to,
            },
            CommArgs::Reduce {
                stage,
                part,
                replicas,
            } => Args::Reduce {
                stage: *stage,
                part: *part,
                replicas,
            },
        });
        emit(out, &e)?;
    }
    for (id, &(from, from_ts, to, to_ts)) in flows.iter().enumerate() {
        let mut start = Event::slice(from, COMPUTE_TID, "data", "flow", us(from_ts), 0.0);
        start.ph = "s";
        start.dur = None;
        start.id = Some(id as u64);
        emit(out, &start)?;
        let mut finish = Event::slice(to, COMPUTE_TID, "data", "flow", us(to_ts), 0.0);
        finish.ph = "f";
        finish.dur = None;
        finish.id = Some(id as u64);
        finish.bp = Some("e");
        emit(out, &finish)?;
    }
    writeln!(out, "\n]}}").map_err(io)?;
    Ok(())
}

#[cfg(test)]
mod tests;
