//! What the simulator needs to know about time: durations of compute actions and transfer latency.
//!
//! The default is unit cost: F = I = W = 1, B = I + W = 2, an overlapped pair = F + B, no transfer time.
//! `pipeweave-spec` derives real costs from a cluster and model description.

use pipeweave_plan::{Action, Kind, Op};

/// Durations of one model part's compute, in any consistent time unit (seconds for specs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageCosts {
    /// Forward.
    pub f: f64,
    /// Backward for inputs.
    pub i: f64,
    /// Backward for weights.
    pub w: f64,
    /// Full backward (usually `i + w`).
    pub b: f64,
}

impl StageCosts {
    /// Unit costs: F = I = W = 1, B = I + W = 2.
    pub const UNIT: StageCosts = StageCosts {
        f: 1.0,
        i: 1.0,
        w: 1.0,
        b: 2.0,
    };

    /// The duration of an op of `kind`.
    pub fn of(&self, kind: Kind) -> f64 {
        match kind {
            Kind::F => self.f,
            Kind::B => self.b,
            Kind::I => self.i,
            Kind::W => self.w,
        }
    }
}

/// The simulator's view of time. Stage ids are global; `part` of a stage is its position.
pub trait CostModel {
    /// Duration of a single operation.
    fn op(&self, op: Op) -> f64;

    /// Duration of an overlapped pair (forward `f` with backward `b`, started together).
    fn pair(&self, f: Op, b: Op) -> f64 {
        self.op(f) + self.op(b)
    }

    /// Latency of moving an activation (forward) or gradient (backward) from stage `from` to stage
    /// `to`, when they sit on different ranks. Zero when they share a rank is the simulator's call.
    fn transfer(&self, _from: u32, _to: u32) -> f64 {
        0.0
    }

    /// How much of an action's duration is communication that no compute hides (e.g. a lone
    /// forward's expert all-to-all). Reported as exposed communication; zero by default.
    fn exposed_op(&self, _op: Op) -> f64 {
        0.0
    }

    /// Host time a rank spends between the end of its previous action and the start of `action`
    /// (launching it, posting its transfers, the framework's own code), in which it can also wait
    /// for the action's inputs: the action starts at the later of its rank's previous end plus
    /// this and its inputs' arrival. Not counted before a rank's first action; zero by default.
    fn host_gap(&self, _action: Action) -> f64 {
        0.0
    }

    /// Host time a rank spends right after `action` ends, before its next action can start:
    /// posting the sends of what the action computed (a launcher's thread posts each one), and
    /// the waits for sends the action proves consumed. Its outputs still depart at the action's
    /// end; a wait for the next action's inputs hides this, as it hides
    /// [`CostModel::host_gap`]. Not counted after a rank's last action (the step's end is its
    /// last action's); zero by default.
    fn host_after(&self, _action: Action) -> f64 {
        0.0
    }

    /// Exposed communication inside an overlapped pair.
    fn exposed_pair(&self, _f: Op, _b: Op) -> f64 {
        0.0
    }

    /// With blocking sends: the seconds at the end of `op`'s duration ([`CostModel::op`], or its
    /// half of a pair's) that it holds its rank for its send to another rank, which starts only
    /// once the receiver has posted its receive (NCCL's send completes only after the matching
    /// receive is posted). `None` (the default): sends do not block, nothing waits for a peer.
    fn rendezvous(&self, _op: Op) -> Option<f64> {
        None
    }

    /// Whether any send blocks ([`CostModel::rendezvous`]): the simulator keeps the state of
    /// blocked senders only then.
    fn blocking_sends(&self) -> bool {
        false
    }

    /// Whether forward `op`, run right before `next` on its rank, sends its output only with
    /// `next`'s, once `next` has run (Megatron-LM's interleaved schedule without overlapped
    /// communication: `send_forward_backward_recv_forward_backward` after each forward and
    /// backward of the steady state). `false` by default.
    fn sends_after_next(&self, _op: Op, _next: Op) -> bool {
        false
    }

    /// Whether any forward sends after the next action ([`CostModel::sends_after_next`]).
    fn defers_sends(&self) -> bool {
        false
    }
}

/// Unit costs: F = I = W = 1, B = 2, pair = F + B (or F + I), no transfer time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UnitCosts;

impl CostModel for UnitCosts {
    fn op(&self, op: Op) -> f64 {
        StageCosts::UNIT.of(op.kind)
    }
}

/// The same costs on every stage and one transfer latency for every boundary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UniformCosts {
    /// Every stage's compute durations.
    pub stage: StageCosts,
    /// Duration of an overlapped pair F&B (used when the pair's backward is B; with I the pair
    /// takes `pair − b + i`). `None`: F + B, no overlap gain.
    pub pair: Option<f64>,
    /// Latency of every transfer between stages on different ranks, in the costs' time unit.
    pub transfer: f64,
}

impl Default for UniformCosts {
    fn default() -> Self {
        UniformCosts {
            stage: StageCosts::UNIT,
            pair: None,
            transfer: 0.0,
        }
    }
}

impl CostModel for UniformCosts {
    fn op(&self, op: Op) -> f64 {
        self.stage.of(op.kind)
    }

    fn pair(&self, f: Op, b: Op) -> f64 {
        match self.pair {
            Some(p) if b.kind == Kind::B => p,
            Some(p) => p - self.stage.b + self.stage.of(b.kind),
            None => self.op(f) + self.op(b),
        }
    }

    fn transfer(&self, _from: u32, _to: u32) -> f64 {
        self.transfer
    }
}

/// The largest duration [`UniformCosts::parse`] takes: a step of the largest plan (about 10^13
/// actions) still lasts a finite time, far below `f64::MAX`.
pub const MAX_COST: f64 = 1e12;

impl UniformCosts {
    /// Reads `F=1,B=2,...` (keys F, B, I, W, pair or `F&B`, transfer; each a duration from 0 to
    /// [`MAX_COST`], each given once): B defaults to I + W, a pair to F + B, F must be positive,
    /// and a pair takes at least as long as the longer of its forward and its backward (so that
    /// no overlapped pair, with its backward whole or as I, lasts less than nothing). Messages
    /// name the text as `flag` (`--costs` on the command line).
    pub fn parse(text: &str, flag: &str) -> Result<UniformCosts, String> {
        let mut c = UniformCosts::default();
        let (mut b, mut pair) = (None, None);
        let mut given: Vec<&str> = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((k, v)) = item.split_once('=') else {
                return Err(format!("{flag} expects KEY=VALUE pairs, found `{item}`"));
            };
            let key = match k.trim() {
                "f" => "F",
                "i" => "I",
                "w" => "W",
                "b" => "B",
                "F&B" => "pair",
                other => other,
            };
            if given.contains(&key) {
                return Err(format!("{flag}: {key} is given twice"));
            }
            given.push(key);
            let value: f64 = v
                .trim()
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| {
                    format!("{flag}: `{}` is not a duration (a number ≥ 0)", v.trim())
                })?;
            if value > MAX_COST {
                return Err(format!(
                    "{flag}: {}={} is too large (at most {MAX_COST:e}, so that every figure of a \
                 step stays a finite number)",
                    k.trim(),
                    v.trim()
                ));
            }
            match k.trim() {
                "F" | "f" => c.stage.f = value,
                "I" | "i" => c.stage.i = value,
                "W" | "w" => c.stage.w = value,
                "B" | "b" => b = Some(value),
                "pair" | "F&B" => pair = Some(value),
                "transfer" => c.transfer = value,
                other => {
                    return Err(format!(
                        "{flag}: unknown key `{other}`; expected F, B, I, W, pair or transfer"
                    ));
                }
            }
        }
        c.stage.b = b.unwrap_or(c.stage.i + c.stage.w);
        c.pair = pair;
        if c.stage.f <= 0.0 {
            // Every plan has forwards: with F > 0 a step has a length, and the bubble a ratio.
            return Err(format!(
                "{flag}: F must be greater than 0 (a step of instant forwards has no length)"
            ));
        }
        if let Some(p) = pair {
            let longer = c.stage.f.max(c.stage.b);
            if p < longer {
                return Err(format!(
                    "{flag}: pair={p} is shorter than the longer half of an overlapped pair (F={}, B={}): a pair runs both, so it takes at least {longer}",
                    c.stage.f, c.stage.b
                ));
            }
        }
        Ok(c)
    }
}
