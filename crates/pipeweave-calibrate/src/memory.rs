//! Saved-activation bytes that follow the schedule: each forward leaves its part's measured bytes
//! saved; a B frees them; a split backward frees them in two steps, the I the share the run
//! measured (`freed_by_i`) and the deferred W the rest, which it keeps until it runs.
//!
//! Where the run did not split its backwards, the share a deferred W keeps is the Zero Bubble
//! papers' convention for a transformer layer: of the activation memory a layer's backward needs,
//! M_B = 34·sbh (+ 5·as²b for attention scores, none kept with FlashAttention), the weight
//! gradient needs M_W = 32·sbh (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024,
//! section 3.2), so W keeps 32/34 of it and I frees 2/34.

use crate::file::Calibration;
use crate::model::share;
use pipeweave_plan::{Kind, Plan};

/// The share of a forward's saved bytes a deferred W keeps when the run did not measure it: the
/// Zero Bubble papers' M_W / M_B = 32 / 34.
pub const ZB_KEPT_BY_W: f64 = 32.0 / 34.0;

/// Each rank's predicted peak of saved-activation bytes for `plan`, from the bytes the run
/// measured per part, with notes on what was assumed; `None` when the run recorded no saved bytes.
pub fn saved_peaks(c: &Calibration, plan: &Plan) -> Option<(Vec<u64>, Vec<String>)> {
    if c.parts.iter().any(|p| p.saved_bytes.is_none()) {
        return None;
    }
    let measured = c.measured.parts;
    let target = plan.stages_per_pipeline();
    let bytes: Vec<f64> = (0..target)
        .map(|q| {
            share(q, target, measured, |m| {
                c.parts[m as usize].saved_bytes.unwrap_or(0) as f64
            })
        })
        .collect();
    let mut notes = Vec::new();
    let measured_split = c.parts.iter().all(|p| p.freed_by_i.is_some());
    let freed: Vec<f64> = (0..target)
        .map(|q| {
            if measured_split {
                // The measured share, weighted by the bytes of the measured parts it covers.
                let freed = share(q, target, measured, |m| {
                    let p = &c.parts[m as usize];
                    p.saved_bytes.unwrap_or(0) as f64 * p.freed_by_i.unwrap_or(0.0)
                });
                if bytes[q as usize] > 0.0 {
                    freed / bytes[q as usize]
                } else {
                    0.0
                }
            } else {
                1.0 - ZB_KEPT_BY_W
            }
        })
        .collect();
    let splits = plan
        .programs()
        .iter()
        .flatten()
        .flat_map(|a| a.ops())
        .any(|op| op.kind == Kind::W);
    if splits && !measured_split {
        notes.push(
            "the run split no backward: a deferred W keeps 32/34 of its forward's saved bytes until it runs (the Zero Bubble papers' convention)"
                .to_owned(),
        );
    }
    let peaks = plan
        .programs()
        .iter()
        .map(|program| {
            if !program
                .iter()
                .flat_map(|a| a.ops())
                .any(|op| op.kind.is_input_backward())
            {
                return 0;
            }
            let (mut live, mut peak) = (0.0f64, 0.0f64);
            for action in program {
                for op in action.ops() {
                    let q = plan.part(op.stage) as usize;
                    let b = bytes[q];
                    live += match op.kind {
                        Kind::F => b,
                        Kind::B => -b,
                        Kind::I => -b * freed[q],
                        Kind::W => -b * (1.0 - freed[q]),
                    };
                    // After each half of a pair too: its forward's bytes are saved before its
                    // backward frees its own (PlanRunner runs the F half first).
                    peak = peak.max(live);
                }
            }
            peak.round().max(0.0) as u64
        })
        .collect();
    Some((peaks, notes))
}
