//! One action's tasks scheduled on a GPU's two resources, compute and communication, and what the
//! action's time is made of.
//!
//! An action is one or two chains of tasks (a lone F, I, B or W is one; an overlapped F&B pair
//! is two, its forward's and its backward's; tensor-parallel collectives overlapped with the
//! GEMMs are a chain of their own). Each resource runs one task at a time; a task starts once the
//! previous task of its chain has ended and its resource is free; of the tasks that could start,
//! the one whose chain has waited longest goes first (the first chain on a tie).
//!
//! **The cost of overlapping.** Communication kernels run on SMs too, and a kernel that holds every
//! SM blocks one launched after it, so an overlapped F&B pair reserves SMs for its communication
//! for its whole length: its compute runs at `(SMs − comm_sms) / SMs` of its rate (DeepSeek-V3
//! §3.5.1 gives 20 of the H800's 132 SMs to communication; DeepGEMM's `set_num_sms` launches the
//! GEMMs on the rest). Communication that runs beside the compute of a lone action
//! (`tp_comm_overlap`) slows it only while it runs. Rates change only when a task starts or ends,
//! so the schedule is exact, event by event.

/// What a task occupies and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    /// Work on the SMs: GEMMs, attention, element-wise kernels.
    Compute,
    /// A tensor- or sequence-parallel collective.
    Tp,
    /// An expert dispatch or combine.
    AllToAll,
}

/// One task: its kind and its duration at full rate, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Task {
    /// Compute, or which kind of communication.
    pub kind: TaskKind,
    /// Seconds at full rate.
    pub dur: f64,
}

impl Task {
    /// A compute task of `dur` seconds.
    pub fn compute(dur: f64) -> Task {
        Task {
            kind: TaskKind::Compute,
            dur,
        }
    }

    fn is_comm(&self) -> bool {
        self.kind != TaskKind::Compute
    }
}

/// An action's duration and what it is made of: `duration = compute + slowdown + exposed_tp +
/// exposed_all_to_all + p2p`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ActionCost {
    /// Seconds from the action's start to its end.
    pub duration: f64,
    /// Compute at full rate.
    pub compute: f64,
    /// Extra compute time while communication took SMs.
    pub slowdown: f64,
    /// Time a tensor-parallel collective ran and no compute did.
    pub exposed_tp: f64,
    /// Time an expert dispatch or combine ran and no compute did.
    pub exposed_all_to_all: f64,
    /// Time the action held its rank for its own boundary sends (`training.p2p_blocking`): the
    /// transfer and the host's synchronisation after it.
    pub p2p: f64,
}

impl ActionCost {
    /// Communication inside the action that no compute hides.
    pub fn exposed(&self) -> f64 {
        self.exposed_tp + self.exposed_all_to_all + self.p2p
    }

    /// The action holding its rank `secs` longer for its sends.
    pub fn holding(mut self, secs: f64) -> ActionCost {
        self.duration += secs;
        self.p2p += secs;
        self
    }
}

struct Running {
    chain: usize,
    left: f64,
    kind: TaskKind,
}

/// How compute shares the SMs with communication.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Share {
    /// Compute runs at this share of its rate for the whole action (an overlapped pair).
    Reserved(f64),
    /// Compute runs at this share of its rate while communication runs beside it.
    WhileCommunicating(f64),
}

/// Schedules `chains` on the two resources, compute sharing the SMs as `share` says.
pub fn schedule(chains: &[&[Task]], share: Share) -> ActionCost {
    let n = chains.len();
    let mut next = vec![0usize; n];
    let mut ready = vec![0.0f64; n];
    let mut busy = vec![false; n];
    let mut slots: [Option<Running>; 2] = [None, None];
    let mut t = 0.0f64;
    let mut out = ActionCost::default();
    let mut slowdown = 0.0;
    for c in chains {
        out.compute += c
            .iter()
            .filter(|x| !x.is_comm())
            .fold(0.0, |a, x| a + x.dur);
    }
    loop {
        // Start what can start on each idle resource.
        for (slot, comm) in [(0usize, false), (1usize, true)] {
            if slots[slot].is_some() {
                continue;
            }
            let pick = (0..n)
                .filter(|&c| !busy[c] && ready[c] <= t)
                .filter(|&c| chains[c].get(next[c]).is_some_and(|x| x.is_comm() == comm))
                .min_by(|&a, &b| ready[a].total_cmp(&ready[b]).then(a.cmp(&b)));
            if let Some(c) = pick {
                let task = chains[c][next[c]];
                busy[c] = true;
                slots[slot] = Some(Running {
                    chain: c,
                    left: task.dur,
                    kind: task.kind,
                });
            }
        }
        let pending = (0..n).any(|c| next[c] < chains[c].len());
        if !pending {
            break;
        }
        let both = slots[0].is_some() && slots[1].is_some();
        let rate = match share {
            Share::Reserved(r) => r,
            Share::WhileCommunicating(r) if both => r,
            Share::WhileCommunicating(_) => 1.0,
        };
        let mut event = f64::INFINITY;
        if let Some(r) = &slots[0] {
            event = event.min(t + r.left / rate);
        }
        if let Some(r) = &slots[1] {
            event = event.min(t + r.left);
        }
        // A chain waiting for an idle resource may become ready before anything ends.
        for c in 0..n {
            if !busy[c] && ready[c] > t && next[c] < chains[c].len() {
                event = event.min(ready[c]);
            }
        }
        if !event.is_finite() {
            // Nothing runs and nothing becomes ready: every pending task waits on a resource its
            // chain holds, which cannot happen; stop rather than spin.
            break;
        }
        let dt = event - t;
        if let Some(r) = &mut slots[0] {
            slowdown += dt * (1.0 - rate);
            r.left = if t + r.left / rate <= event {
                0.0
            } else {
                r.left - dt * rate
            };
        }
        let computing = slots[0].is_some();
        if let Some(r) = &mut slots[1] {
            if !computing {
                match r.kind {
                    TaskKind::Tp => out.exposed_tp += dt,
                    _ => out.exposed_all_to_all += dt,
                }
            }
            r.left = if t + r.left <= event {
                0.0
            } else {
                r.left - dt
            };
        }
        t = event;
        for slot in &mut slots {
            if slot.as_ref().is_some_and(|r| r.left <= 0.0)
                && let Some(r) = slot.take()
            {
                busy[r.chain] = false;
                next[r.chain] += 1;
                ready[r.chain] = t;
            }
        }
    }
    out.duration = t;
    out.slowdown = slowdown;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comm(kind: TaskKind, dur: f64) -> Task {
        Task { kind, dur }
    }

    #[test]
    fn a_lone_chain_pays_every_transfer() {
        let chain = [
            Task::compute(2.0),
            comm(TaskKind::AllToAll, 1.0),
            Task::compute(3.0),
            comm(TaskKind::Tp, 0.5),
        ];
        let c = schedule(&[&chain], Share::WhileCommunicating(0.5));
        assert_eq!(c.duration, 6.5);
        assert_eq!(c.compute, 5.0);
        assert_eq!(c.slowdown, 0.0);
        assert_eq!(c.exposed_all_to_all, 1.0);
        assert_eq!(c.exposed_tp, 0.5);
    }

    #[test]
    fn overlapped_chains_share_the_sms() {
        // Chain 0 computes 4 s; chain 1 sends 2 s. At rate 0.75 while both run, the compute does
        // 1.5 s of work in the first 2 s, then 2.5 s alone: 4.5 s in all, 0.5 s of slowdown.
        let a = [Task::compute(4.0)];
        let b = [comm(TaskKind::AllToAll, 2.0)];
        let c = schedule(&[&a, &b], Share::WhileCommunicating(0.75));
        assert!((c.duration - 4.5).abs() < 1e-12, "{c:?}");
        assert!((c.slowdown - 0.5).abs() < 1e-12);
        assert_eq!(c.exposed(), 0.0);
        assert!((c.duration - (c.compute + c.slowdown + c.exposed())).abs() < 1e-12);
    }

    #[test]
    fn communication_longer_than_compute_is_exposed() {
        let a = [Task::compute(1.0)];
        let b = [comm(TaskKind::AllToAll, 3.0)];
        let c = schedule(&[&a, &b], Share::WhileCommunicating(0.5));
        // compute ends at 2 s (half rate), the transfer at 3 s: 1 s exposed
        assert!((c.duration - 3.0).abs() < 1e-12);
        assert!((c.exposed_all_to_all - 1.0).abs() < 1e-12);
        assert!((c.slowdown - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_pair_hides_one_half_under_the_other() {
        // Forward: compute 2, dispatch 1, compute 2; backward: compute 3, combine 1, compute 1.
        let f = [
            Task::compute(2.0),
            comm(TaskKind::AllToAll, 1.0),
            Task::compute(2.0),
        ];
        let b = [
            Task::compute(3.0),
            comm(TaskKind::AllToAll, 1.0),
            Task::compute(1.0),
        ];
        let c = schedule(&[&f, &b], Share::Reserved(1.0));
        assert!(c.duration < 10.0);
        assert!(c.duration >= 8.0);
        assert!((c.duration - (c.compute + c.slowdown + c.exposed())).abs() < 1e-12);
    }

    #[test]
    fn a_pair_reserves_sms_for_its_whole_length() {
        // 4 s of compute beside 1 s of communication, with 3 of 4 SMs left to compute: the
        // compute takes 4 / 0.75 s whether or not a transfer runs.
        let a = [Task::compute(4.0)];
        let b = [comm(TaskKind::AllToAll, 1.0)];
        let c = schedule(&[&a, &b], Share::Reserved(0.75));
        assert!((c.duration - 4.0 / 0.75).abs() < 1e-12);
        assert!((c.slowdown - (4.0 / 0.75 - 4.0)).abs() < 1e-12);
    }
}
