//! DualPipe and DualPipeV: DeepSeek's eight-step program per rank (`DualPipe.step()` and
//! `DualPipeV.step()` of deepseek-ai/DualPipe), reproduced order for order.
//!
//! Each rank runs two *phases* (local directions). With `H` half the depth, `h` the rank's position
//! in its phase 0 and `C` the micro-batches per phase, the steps are (formulas.md):
//!
//! | step | iterations   | actions per iteration                                   |
//! |------|--------------|---------------------------------------------------------|
//! | 1    | 2(H−h−1)     | F0                                                      |
//! | 2    | h+1          | F0, F1                                                  |
//! | 3    | H−h−1        | I1, W, F1                                               |
//! | 4    | C−2H+h+1     | F0&B1, F1&B0 (middle rank: first F0&B1 runs unpaired)   |
//! | 5    | H−h−1        | B1, F1&B0                                               |
//! | 6    | h+1          | B1, B0 (the last h+1 of these backwards are I)          |
//! | 7    | H−h−1        | W, I0                                                   |
//! | 8    | h+1          | W                                                       |
//!
//! W pops the oldest deferred weight gradient (FIFO). Without the weight split every I is a full B
//! and W does nothing; without overlap a pair F&B runs as F then B.

use pipeweave_plan::{Action, Kind, Op, Pipeline, Plan};
use std::collections::VecDeque;

/// The options both schedules share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DualOptions {
    /// Defer weight gradients (I now, W later) where DeepSeek's code enables it.
    pub weight_split: bool,
    /// Run each F&B as one overlapped pair (otherwise F, then a full B).
    pub overlap: bool,
}

impl Default for DualOptions {
    fn default() -> DualOptions {
        DualOptions {
            weight_split: true,
            overlap: true,
        }
    }
}

/// The largest ranks × micro-batches product accepted, so a request cannot exhaust memory.
pub(crate) const MAX_WORK: u64 = 1 << 22;

/// What one phase of a rank computes: its global stage and the global id of its first micro-batch.
#[derive(Debug, Clone, Copy)]
struct Phase {
    stage: u32,
    first_mb: u32,
}

/// The shape of one rank's program.
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// H: half the depth (DualPipe: P/2; DualPipeV: P).
    half: u32,
    /// h: the rank's position in its phase 0.
    h: u32,
    /// C: micro-batches per phase.
    chunks: u32,
}

struct RankProgram {
    phases: [Phase; 2],
    next_f: [u32; 2],
    next_b: [u32; 2],
    deferred: VecDeque<Op>,
    opts: DualOptions,
    out: Vec<Action>,
}

impl RankProgram {
    fn forward_op(&mut self, p: usize) -> Op {
        let op = Op::new(
            self.phases[p].stage,
            Kind::F,
            self.phases[p].first_mb + self.next_f[p],
        );
        self.next_f[p] += 1;
        op
    }

    fn backward_op(&mut self, p: usize, kind: Kind) -> Op {
        let op = Op::new(
            self.phases[p].stage,
            kind,
            self.phases[p].first_mb + self.next_b[p],
        );
        self.next_b[p] += 1;
        op
    }

    fn forward(&mut self, p: usize) {
        let op = self.forward_op(p);
        self.out.push(Action::One(op));
    }

    /// A backward outside a pair; `split` is where DeepSeek's code enables the zero-bubble split.
    fn backward(&mut self, p: usize, split: bool) {
        let kind = if split && self.opts.weight_split {
            Kind::I
        } else {
            Kind::B
        };
        let op = self.backward_op(p, kind);
        if kind == Kind::I {
            self.deferred.push_back(Op::new(op.stage, Kind::W, op.mb));
        }
        self.out.push(Action::One(op));
    }

    fn weight(&mut self) {
        if let Some(w) = self.deferred.pop_front() {
            self.out.push(Action::One(w));
        }
    }

    /// Forward of phase `f` with a full backward of phase `b`.
    fn forward_backward(&mut self, f: usize, b: usize) {
        let fw = self.forward_op(f);
        let bw = self.backward_op(b, Kind::B);
        if self.opts.overlap {
            self.out.push(Action::Pair { f: fw, b: bw });
        } else {
            self.out.push(Action::One(fw));
            self.out.push(Action::One(bw));
        }
    }
}

fn rank_program(shape: Shape, phases: [Phase; 2], opts: DualOptions) -> Vec<Action> {
    let Shape { half, h, chunks } = shape;
    let middle = h + 1 == half;
    let mut r = RankProgram {
        phases,
        next_f: [0; 2],
        next_b: [0; 2],
        deferred: VecDeque::new(),
        opts,
        out: Vec::with_capacity(3 * chunks as usize * 2),
    };
    let outer = half - h - 1;
    for _ in 0..2 * outer {
        r.forward(0);
    }
    for _ in 0..=h {
        r.forward(0);
        r.forward(1);
    }
    for _ in 0..outer {
        r.backward(1, true);
        r.weight();
        r.forward(1);
    }
    // The callers check chunks ≥ 2·half − h, so the main step runs at least once.
    let main = chunks + h + 1 - 2 * half;
    for i in 0..main {
        if i == 0 && middle {
            // DeepSeek keeps this first pair apart on the middle ranks to shrink the bubble.
            r.forward(0);
            r.backward(1, false);
        } else {
            r.forward_backward(0, 1);
        }
        r.forward_backward(1, 0);
    }
    for _ in 0..outer {
        r.backward(1, false);
        r.forward_backward(1, 0);
    }
    // Of the 2(h+1) backwards of step 6 the last h+1 are split (DeepSeek switches halfway).
    let mut k = 0;
    for _ in 0..=h {
        r.backward(1, k > h);
        k += 1;
        r.backward(0, k > h);
        k += 1;
    }
    for _ in 0..outer {
        r.weight();
        r.backward(0, true);
    }
    for _ in 0..=h {
        r.weight();
    }
    r.out
}

fn check_size(name: &str, ranks: u32, microbatches: u32) -> Result<(), String> {
    if ranks == 0 {
        return Err(format!("{name} needs at least one rank"));
    }
    if u64::from(ranks) * u64::from(microbatches) > MAX_WORK {
        return Err(format!(
            "{name} supports at most {MAX_WORK} ranks × micro-batches, got {ranks} × {microbatches}"
        ));
    }
    Ok(())
}

/// DualPipe on `ranks` ranks with `microbatches` micro-batches.
///
/// Numbering: pipeline 0 flows rank 0 → P−1 and carries micro-batches 0..M/2; pipeline 1 flows
/// P−1 → 0 (its stage q on rank P−1−q) and carries M/2..M.
pub fn dualpipe(ranks: u32, microbatches: u32, opts: DualOptions) -> Result<Plan, String> {
    check_size("dualpipe", ranks, microbatches)?;
    let (p, m) = (ranks, microbatches);
    if p % 2 != 0 {
        return Err(format!("dualpipe needs an even number of ranks, got {p}"));
    }
    if m % 2 != 0 {
        return Err(format!(
            "dualpipe needs an even number of micro-batches, got {m}"
        ));
    }
    if m < 2 * p {
        return Err(format!(
            "dualpipe needs at least twice as many micro-batches as ranks ({}), got {m}",
            2 * p
        ));
    }
    let (half, chunks) = (p / 2, m / 2);
    let programs = (0..p)
        .map(|r| {
            let h = r.min(p - 1 - r);
            let down = Phase {
                stage: r,
                first_mb: 0,
            };
            let up = Phase {
                stage: p + (p - 1 - r),
                first_mb: chunks,
            };
            let phases = if r < half { [down, up] } else { [up, down] };
            rank_program(Shape { half, h, chunks }, phases, opts)
        })
        .collect();
    let pipelines = vec![
        Pipeline {
            placement: (0..p).collect(),
            microbatches: (0..chunks).collect(),
        },
        Pipeline {
            placement: (0..p).rev().collect(),
            microbatches: (chunks..m).collect(),
        },
    ];
    Plan::new(p, pipelines, programs).map_err(|e| format!("dualpipe built a broken plan: {e}"))
}

/// DualPipeV on `ranks` ranks: one pipeline of 2P stages in a V (rank r holds stages r and
/// 2P−1−r), `microbatches` micro-batches.
pub fn dualpipev(ranks: u32, microbatches: u32, opts: DualOptions) -> Result<Plan, String> {
    check_size("dualpipev", ranks, microbatches)?;
    let (p, m) = (ranks, microbatches);
    if m < 2 * p {
        return Err(format!(
            "dualpipev needs at least twice as many micro-batches as ranks ({}), got {m}",
            2 * p
        ));
    }
    let programs = (0..p)
        .map(|r| {
            let phases = [
                Phase {
                    stage: r,
                    first_mb: 0,
                },
                Phase {
                    stage: 2 * p - 1 - r,
                    first_mb: 0,
                },
            ];
            rank_program(
                Shape {
                    half: p,
                    h: r,
                    chunks: m,
                },
                phases,
                opts,
            )
        })
        .collect();
    let placement = (0..p).chain((0..p).rev()).collect();
    Plan::single(p, placement, m, programs)
        .map_err(|e| format!("dualpipev built a broken plan: {e}"))
}
