//! Plans built in code for the tests.

use pipeweave_plan::{Action, Kind, Op, Plan};

/// Textbook 1F1B on `p` ranks with `m` micro-batches (warm-up forwards, one forward one backward,
/// cool-down backwards), one stage per rank.
pub fn one_f_one_b(p: u32, m: u32) -> Plan {
    let programs = (0..p)
        .map(|r| {
            let warmup = (p - r - 1).min(m);
            let mut prog = Vec::new();
            let f = |mb| Action::One(Op::new(r, Kind::F, mb));
            let b = |mb| Action::One(Op::new(r, Kind::B, mb));
            for mb in 0..warmup {
                prog.push(f(mb));
            }
            for i in 0..m - warmup {
                prog.push(f(warmup + i));
                prog.push(b(i));
            }
            for i in m - warmup..m {
                prog.push(b(i));
            }
            prog
        })
        .collect();
    Plan::single(p, (0..p).collect(), m, programs).expect("1F1B has a valid structure")
}
