//! Numbers for people, one rule per quantity for every view: durations (abstract units or
//! seconds), counts with SI suffixes, percentages, bytes in GiB, GPU-hours, and the coordinates of
//! SVG drawings.

use pipeweave_eval::TimeUnit;

/// A time in abstract units: integers without decimals, others with up to four decimals.
pub fn format_time(t: f64) -> String {
    if (t - t.round()).abs() < 1e-9 {
        format!("{}", t.round() as i64)
    } else {
        let s = format!("{t:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Seconds for people: `1.234 s`, `56.7 ms`, `12.3 µs`, and from a million seconds (eleven
/// days) on with an exponent, `2.365e15 s`.
///
/// The one rule for every duration in seconds: a fixed number of decimals per unit, so the
/// figures of a column line up and read alike in every view (tables, timelines, tooltips). A spec
/// in range may still describe a step of years (a bucket of one parameter, a million layers):
/// its sixteen digits and three decimals would say nothing more than four significant ones do.
pub fn seconds(s: f64) -> String {
    let a = s.abs();
    if a >= 1e6 {
        format!("{s:.3e} s")
    } else if a >= 1.0 {
        format!("{s:.3} s")
    } else if a >= 1e-3 || a == 0.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

/// Durations in a timeline's unit.
pub trait TimeFormat {
    /// A duration for a label, a table or a tooltip.
    fn format(self, t: f64) -> String;
    /// How a time axis names its unit for times up to `max`, and the factor from the unit to the
    /// axis's (seconds are shown as ms below 1 s).
    fn axis(self, max: f64) -> (&'static str, f64);
}

impl TimeFormat for TimeUnit {
    fn format(self, t: f64) -> String {
        match self {
            TimeUnit::Units => format_time(t),
            TimeUnit::Seconds => seconds(t),
        }
    }

    fn axis(self, max: f64) -> (&'static str, f64) {
        match self {
            TimeUnit::Units => ("time (units)", 1.0),
            TimeUnit::Seconds if max < 1.0 => ("time (ms)", 1e3),
            TimeUnit::Seconds => ("time (s)", 1.0),
        }
    }
}

/// A count with an SI suffix and three significant digits: `1.23M`.
pub fn si(x: f64) -> String {
    let (v, suffix) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(scale, _)| x.abs() >= *scale)
        .map_or((x, ""), |(scale, s)| (x / scale, s));
    let a = v.abs();
    let digits = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$}{suffix}")
}

/// A fraction as a percentage with `decimals` decimals: `27.27%`.
pub fn percent(fraction: f64, decimals: usize) -> String {
    format!("{:.decimals$}%", fraction * 100.0)
}

/// Bytes in GiB (2³⁰).
pub fn gib(bytes: f64) -> f64 {
    bytes / (1024.0 * 1024.0 * 1024.0)
}

/// Bytes as a number of GiB with one decimal, where a heading or the sentence names the unit:
/// `12.3`.
pub fn gib_number(bytes: f64) -> String {
    format!("{:.1}", gib(bytes))
}

/// Bytes as MiB with one decimal, for sizes well under a GiB: `12.3 MiB`.
pub fn mib_text(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / f64::from(1u32 << 20))
}

/// Bytes as GiB with one decimal: `12.3 GiB`.
pub fn gib_text(bytes: f64) -> String {
    format!("{} GiB", gib_number(bytes))
}

/// GPU-hours (per million tokens) with four decimals: `0.0123`.
pub fn gpu_hours(hours: f64) -> String {
    format!("{hours:.4}")
}

/// A number with about four significant digits, trailing zeros dropped (axis ticks).
pub(crate) fn sig(x: f64) -> String {
    let a = x.abs();
    let decimals = if a >= 1000.0 {
        0
    } else if a >= 100.0 {
        1
    } else if a >= 10.0 {
        2
    } else {
        3
    };
    trim(format!("{x:.decimals$}"))
}

fn trim(s: String) -> String {
    if s.contains('.') {
        let t = s.trim_end_matches('0').trim_end_matches('.');
        if t == "-0" { "0".into() } else { t.into() }
    } else {
        s
    }
}

/// A coordinate: two decimals at most, so output does not depend on float noise.
pub(crate) fn num(x: f64) -> String {
    let x = if x.is_finite() { x } else { 0.0 };
    trim(format!("{x:.2}"))
}

/// Layers per part with runs folded: `3, 4×14, 2` (the first part also holds the embedding, the
/// last the head).
pub fn split_text(layers: &[u64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < layers.len() {
        let n = layers[i];
        let run = layers[i..].iter().take_while(|&&x| x == n).count();
        out.push(if run == 1 {
            n.to_string()
        } else {
            format!("{n}×{run}")
        });
        i += run;
    }
    out.join(", ")
}

/// Each part's recomputation in runs: `full` when every part runs it, else `full×2, none×6`.
pub fn recompute_text<S: AsRef<str>>(per_part: &[S]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < per_part.len() {
        let x = per_part[i].as_ref();
        let run = per_part[i..].iter().take_while(|y| y.as_ref() == x).count();
        out.push(if run == 1 || run == per_part.len() {
            x.to_owned()
        } else {
            format!("{x}×{run}")
        });
        i += run;
    }
    out.join(", ")
}

/// Each part's recomputation counted: `full on 44 of 64 parts` or `full on 2, selective on 10 of
/// 16 parts` (the rest recompute nothing); the one word when every part runs it.
pub fn recompute_summary<S: AsRef<str>>(per_part: &[S]) -> String {
    let n = per_part.len();
    let count = |k: &str| per_part.iter().filter(|r| r.as_ref() == k).count();
    let kinds: Vec<(&str, usize)> = ["full", "selective"]
        .into_iter()
        .map(|k| (k, count(k)))
        .filter(|&(_, c)| c > 0)
        .collect();
    match kinds.as_slice() {
        [] => "none".to_owned(),
        [(k, c)] if *c == n => (*k).to_owned(),
        _ => format!(
            "{} of {n} parts",
            kinds
                .iter()
                .map(|(k, c)| format!("{k} on {c}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A split with each part's recomputation where any part recomputes: `4×16` or
/// `1×13, 2×3 · recompute full, none×3`.
pub fn split_recompute_text<S: AsRef<str>>(layers: &[u64], recompute: &[S]) -> String {
    let split = split_text(layers);
    if recompute.iter().all(|r| r.as_ref() == "none") {
        split
    } else {
        format!("{split} · recompute {}", recompute_text(recompute))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(format_time(66.0), "66");
        assert_eq!(format_time(0.125), "0.125");
        assert_eq!(format_time(1.0 / 3.0), "0.3333");
    }

    #[test]
    fn seconds_in_their_unit_and_beyond_any_sense_with_an_exponent() {
        assert_eq!(seconds(1.2345), "1.234 s");
        assert_eq!(seconds(0.0567), "56.7 ms");
        assert_eq!(seconds(0.0), "0.0 ms");
        assert_eq!(seconds(12.3e-6), "12.3 µs");
        assert_eq!(seconds(999_999.999), "999999.999 s");
        assert_eq!(seconds(-42.0), "-42.000 s");
        // a step the audit saw printed as `2365070921731570.500 s`
        assert_eq!(seconds(2_365_070_921_731_570.5), "2.365e15 s");
        assert_eq!(seconds(1e6), "1.000e6 s");
        assert_eq!(seconds(-3.5e7), "-3.500e7 s");
        assert_eq!(seconds(f64::INFINITY), "inf s");
    }

    #[test]
    fn counts_and_shares() {
        assert_eq!(si(1234.0), "1.23k");
        assert_eq!(si(118_000.0), "118k");
        assert_eq!(si(12.0), "12.0");
        assert_eq!(percent(0.2727, 2), "27.27%");
        assert_eq!(gib_text(1.5 * 1024.0 * 1024.0 * 1024.0), "1.5 GiB");
        assert_eq!(gib_number(80e9), "74.5");
        assert_eq!(gpu_hours(0.012_345_6), "0.0123");
    }
}
