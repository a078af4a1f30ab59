//! The timelines' colours: a fill per kind and shade, the ink of a label on it, and how an op gets
//! its shade (its chunk, or its pipeline) and its hatching (its pipeline).
//!
//! The fills are our own: the hues of Okabe and Ito's colour-universal-design palette for F
//! (orange `#E69F00`), B (bluish green `#009E73`) and I (sky blue `#56B4E9`) and a purple for W,
//! each at a CIELAB lightness of its own. The lightnesses interleave (F light 88, I light 80,
//! F dark 72, I dark 64, B light 56, W light 42, B dark 34, W dark 26), so every fill has a grey
//! of its own; under protanopia, deuteranopia and tritanopia, which fold the hues onto a
//! blue–yellow axis, the fills that fold together still differ in lightness. The tests below check
//! both with the CIE formulas and Machado, Oliveira and Fernandes' (2009) simulation matrices.
//! Two shades per kind is what that leaves room for: a third would put grey levels closer than a
//! reader can tell apart.

use pipeweave_plan::{Kind, Op, Plan};

/// Fills by [kind][shade]: shade 0 light, shade 1 dark.
const FILLS: [[&str; 2]; 4] = [
    ["#fdd7a6", "#dfa64c"], // F
    ["#229871", "#115b43"], // B
    ["#8bcefa", "#30a5dd"], // I
    ["#8a489e", "#602074"], // W
];

/// Idle time, behind the cells: lighter than every fill.
pub(super) const IDLE_FILL: &str = "#f4f4f4";
/// Activations in flight (the forward's hue, lighter).
pub(super) const SEND_FWD_FILL: &str = "#c48b25";
/// Gradients in flight (the backward's hue, darker).
pub(super) const SEND_BWD_FILL: &str = "#115b43";

/// The fill of a kind in a shade (0 light, 1 dark).
pub(super) fn fill(kind: Kind, shade: usize) -> &'static str {
    FILLS[kind as usize][shade.min(1)]
}

/// The colour of a label on a fill: black on the light fills, white on the dark ones (a WCAG
/// contrast of at least 4.5 either way, checked below).
pub(super) fn ink(kind: Kind, shade: usize) -> &'static str {
    match (kind, shade.min(1)) {
        (Kind::F | Kind::I, _) | (Kind::B, 0) => "#000",
        (Kind::B, _) | (Kind::W, _) => "#fff",
    }
}

/// How an op looks: its kind's colour in a shade, hatched or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Look {
    pub kind: Kind,
    /// 0 light, 1 dark.
    pub shade: usize,
    /// Odd pipelines (the second direction of Chimera and DualPipe) are hatched.
    pub hatch: bool,
}

impl Look {
    pub fn fill(self) -> &'static str {
        fill(self.kind, self.shade)
    }

    pub fn ink(self) -> &'static str {
        ink(self.kind, self.shade)
    }
}

/// What the shades of a plan mean: chunks when a rank hosts several stages of one pipeline (V
/// and interleaved placements), pipelines otherwise (Chimera, DualPipe).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Shading {
    /// Per global stage: its chunk, the how-many-th stage of its pipeline its rank hosts, counted
    /// from the model's input (a V's returning half is chunk 1).
    chunk: Vec<u32>,
    /// Whether shades tell chunks apart (else they tell pipelines apart).
    pub by_chunk: bool,
    /// Whether a rank hosts more than two stages of a pipeline, so shades alternate.
    pub many_chunks: bool,
    pub pipelines: usize,
}

impl Shading {
    pub fn of(plan: &Plan) -> Shading {
        let mut chunk = Vec::with_capacity(plan.num_stages() as usize);
        for p in plan.pipelines() {
            let mut seen = vec![0u32; plan.ranks() as usize];
            for &rank in &p.placement {
                chunk.push(seen.get(rank as usize).copied().unwrap_or(0));
                if let Some(n) = seen.get_mut(rank as usize) {
                    *n += 1;
                }
            }
        }
        let most = chunk.iter().copied().max().unwrap_or(0);
        Shading {
            chunk,
            by_chunk: most > 0,
            many_chunks: most > 1,
            pipelines: plan.pipelines().len(),
        }
    }

    /// The chunk of a stage (0 for one the plan does not have).
    pub fn chunk(&self, stage: u32) -> u32 {
        self.chunk.get(stage as usize).copied().unwrap_or(0)
    }

    /// Whether the plan's shades mean something (several chunks or several pipelines).
    pub fn shaded(&self) -> bool {
        self.by_chunk || self.pipelines > 1
    }

    pub fn look(&self, plan: &Plan, op: Op) -> Look {
        let pipeline = if plan.is_stage(op.stage) {
            plan.locate(op.stage).0 as usize
        } else {
            0
        };
        let shade = if self.by_chunk {
            self.chunk(op.stage) as usize % 2
        } else {
            pipeline % 2
        };
        Look {
            kind: op.kind,
            shade,
            hatch: pipeline % 2 == 1,
        }
    }

    /// What a shade (and hatching) means, for the legend.
    pub fn meaning(&self, shade: usize, hatch: bool) -> String {
        let tone = match (shade, hatch) {
            (0, false) => "light",
            (0, true) => "light, hatched",
            (_, false) => "dark",
            (_, true) => "dark, hatched",
        };
        let pipelines = |odd: bool| match (self.pipelines > 2, odd) {
            (false, false) => "pipeline 0",
            (false, true) => "pipeline 1",
            (true, false) => "pipelines 0, 2, …",
            (true, true) => "pipelines 1, 3, …",
        };
        if !self.by_chunk {
            return format!("{} ({tone})", pipelines(hatch));
        }
        let chunks = match (self.many_chunks, shade) {
            (false, 0) => "chunk 0",
            (false, _) => "chunk 1",
            (true, 0) => "chunks 0, 2, …",
            (true, _) => "chunks 1, 3, …",
        };
        if self.pipelines > 1 {
            format!("{}, {chunks} ({tone})", pipelines(hatch))
        } else {
            format!("{chunks} ({tone})")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sRGB `#rrggbb` to linear RGB (IEC 61966-2-1).
    fn linear(hex: &str) -> [f64; 3] {
        let channel = |i: usize| {
            let c = f64::from(u8::from_str_radix(&hex[i..i + 2], 16).expect("hex")) / 255.0;
            if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        [channel(1), channel(3), channel(5)]
    }

    fn times(m: &[[f64; 3]; 3], v: [f64; 3]) -> [f64; 3] {
        m.map(|row| row[0] * v[0] + row[1] * v[1] + row[2] * v[2])
    }

    /// Linear RGB to CIELAB (D65).
    fn lab(rgb: [f64; 3]) -> [f64; 3] {
        const XYZ: [[f64; 3]; 3] = [
            [0.4124564, 0.3575761, 0.1804375],
            [0.2126729, 0.7151522, 0.0721750],
            [0.0193339, 0.1191920, 0.9503041],
        ];
        const WHITE: [f64; 3] = [0.95047, 1.0, 1.08883];
        let f = |t: f64| {
            if t > 216.0 / 24389.0 {
                t.cbrt()
            } else {
                (24389.0 / 27.0 * t + 16.0) / 116.0
            }
        };
        let xyz = times(&XYZ, rgb);
        let [fx, fy, fz] = [0, 1, 2].map(|i| f(xyz[i] / WHITE[i]));
        [116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)]
    }

    /// Machado, Oliveira and Fernandes (2009), severity 1, on linear RGB.
    const PROTANOPIA: [[f64; 3]; 3] = [
        [0.152286, 1.052583, -0.204868],
        [0.114503, 0.786281, 0.099216],
        [-0.003882, -0.048116, 1.051998],
    ];
    const DEUTERANOPIA: [[f64; 3]; 3] = [
        [0.367322, 0.860646, -0.227968],
        [0.280085, 0.672501, 0.047413],
        [-0.011820, 0.042940, 0.968881],
    ];
    const TRITANOPIA: [[f64; 3]; 3] = [
        [1.255528, -0.076749, -0.178779],
        [-0.078411, 0.930809, 0.147602],
        [0.004733, 0.691367, 0.303900],
    ];

    fn seen(hex: &str, vision: Option<&[[f64; 3]; 3]>) -> [f64; 3] {
        let rgb = linear(hex);
        let rgb = vision.map_or(rgb, |m| times(m, rgb).map(|c| c.clamp(0.0, 1.0)));
        lab(rgb)
    }

    fn distance(a: [f64; 3], b: [f64; 3]) -> f64 {
        ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
    }

    /// Every fill a timeline row can hold: the eight cells and idle.
    fn row_fills() -> Vec<&'static str> {
        let mut all: Vec<&str> = FILLS.iter().flatten().copied().collect();
        all.push(IDLE_FILL);
        all
    }

    #[test]
    fn fills_differ_for_every_vision() {
        let fills = row_fills();
        for (name, vision) in [
            ("normal", None),
            ("protanopia", Some(&PROTANOPIA)),
            ("deuteranopia", Some(&DEUTERANOPIA)),
            ("tritanopia", Some(&TRITANOPIA)),
        ] {
            for (i, a) in fills.iter().enumerate() {
                for b in &fills[i + 1..] {
                    // CIE76 ΔE: 2.3 is a just-noticeable difference; 12 is plain at a glance.
                    let d = distance(seen(a, vision), seen(b, vision));
                    assert!(d >= 12.0, "{name}: {a} and {b} differ by ΔE {d:.1}");
                }
            }
        }
        let d = distance(seen(SEND_FWD_FILL, None), seen(SEND_BWD_FILL, None));
        assert!(d >= 40.0, "the lanes' colours differ by ΔE {d:.1}");
    }

    #[test]
    fn fills_differ_in_grey() {
        let fills = row_fills();
        for (i, a) in fills.iter().enumerate() {
            for b in &fills[i + 1..] {
                let d = (seen(a, None)[0] - seen(b, None)[0]).abs();
                assert!(d >= 7.5, "{a} and {b} differ by {d:.1} in lightness");
            }
        }
        let d = (seen(SEND_FWD_FILL, None)[0] - seen(SEND_BWD_FILL, None)[0]).abs();
        assert!(
            d >= 20.0,
            "the lanes' colours differ by {d:.1} in lightness"
        );
    }

    #[test]
    fn labels_are_legible() {
        let luminance = |hex: &str| times(&[[0.2126729, 0.7151522, 0.0721750]; 3], linear(hex))[0];
        for kind in [Kind::F, Kind::B, Kind::I, Kind::W] {
            for shade in 0..2 {
                let (back, text) = (luminance(fill(kind, shade)), ink(kind, shade));
                let text = if text == "#000" { 0.0 } else { 1.0 };
                let ratio = (back.max(text) + 0.05) / (back.min(text) + 0.05);
                assert!(ratio >= 4.5, "{kind:?} shade {shade}: contrast {ratio:.2}");
            }
        }
    }
}
