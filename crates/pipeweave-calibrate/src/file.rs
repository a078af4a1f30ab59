//! The costs file (`costs.toml`, `format = "pipeweave-costs"`, version 5; version 1, without
//! `[overhead]`, version 2, without `[[measured.run]]` and `measured_in`, version 3, without
//! `[overhead.send]`, `[overhead.wait_send]`, `[probe]`, `[[cut]]` and the links' and parts'
//! bytes, and version 4, without `[overhead.post_recv]`, are read too): what `pipeweave
//! calibrate` measured, as TOML.
//! `docs/plan-vs-actual.md` documents every key.

use crate::probe::ProbeCosts;
use crate::stats::Stats;
use pipeweave_diagnostics::{Diagnostic, FileId, Span, visible};
use serde::{Deserialize, Serialize};

/// The value of `format`.
pub const FORMAT_NAME: &str = "pipeweave-costs";
/// The version this crate writes (it reads this one and every earlier one).
pub const FORMAT_VERSION: u32 = 5;

/// The most parts, pairs, links, ranks and saved-bytes rows a costs file may have.
const MAX_ROWS: usize = 1 << 20;

/// What a profiled run measured: the costs file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// [`FORMAT_NAME`].
    pub format: String,
    /// [`FORMAT_VERSION`].
    pub version: u32,
    /// Where and when, from what.
    pub measured: Measured,
    /// Each model part's compute, in part order (`[[part]]`).
    #[serde(rename = "part")]
    pub parts: Vec<Part>,
    /// Each overlapped F&B pair measured (`[[pair]]`).
    #[serde(rename = "pair", default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<PairCost>,
    /// Each link's transfers (`[[link]]`).
    #[serde(rename = "link", default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Link>,
    /// Each rank's step (`[[rank]]`).
    #[serde(rename = "rank", default)]
    pub ranks: Vec<RankMeasured>,
    /// Saved-activation bytes per stage and micro-batch (`[[saved]]`), when the traces have them.
    #[serde(rename = "saved", default, skip_serializing_if = "Vec::is_empty")]
    pub saved: Vec<SavedBytes>,
    /// The step's time outside the actions' spans (`[overhead]`, version 2), where measured.
    #[serde(default, skip_serializing_if = "Overhead::is_empty")]
    pub overhead: Overhead,
    /// The link probe's points and each link's latency and bandwidth (`[probe]`, version 4),
    /// when the traces have a probe.
    #[serde(default, skip_serializing_if = "ProbeCosts::is_empty")]
    pub probe: ProbeCosts,
    /// The model cut into other numbers of parts than `measured.parts`, each as runs measured
    /// with it cut so (`[[cut]]`, version 4): what prices a plan cut alike.
    #[serde(rename = "cut", default, skip_serializing_if = "Vec::is_empty")]
    pub cuts: Vec<Cut>,
}

/// The compute of a model cut into `parts` parts, from the runs that cut it so (`[[cut]]`,
/// version 4): each part's F, and B, I, W where measured, with the runs each is from. A part
/// of a cut holds no bytes: saved bytes and gradients are measured on the first run's cut.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cut {
    /// How many parts the model is cut into.
    pub parts: u32,
    /// Each part's compute, in part order (`[[cut.part]]`).
    #[serde(rename = "part")]
    pub part: Vec<Part>,
}

/// The time a step spends outside any action's span, measured per step (`[overhead]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overhead {
    /// The whole step: from the earliest start of a profiler step span (`ProfilerStep#N`) on any
    /// rank to the latest end of one, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<Stats>,
    /// From the step's start (as `step`) to the first compute action's start on any rank: what
    /// the runner does before its first action (PlanRunner's agreement all-reduce), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<Stats>,
    /// From the last compute action's end on any rank to the step's end: what the runner does
    /// after (gradient reductions, waits for sends, the loss all-reduce), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<Stats>,
    /// Host time between one compute action's end and the next's start on a rank, less the waits
    /// for data and the sends' postings and waits timed there, by the kind of the next action
    /// (`[overhead.gap]`).
    #[serde(default, skip_serializing_if = "Gaps::is_empty")]
    pub gap: Gaps,
    /// Host time of posting one send: every send's span (`SEND_F`, `SEND_B`), seconds
    /// (`[overhead.send]`, version 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send: Option<Stats>,
    /// Host time of waiting for one send whose data its peer has consumed: the spans of the waits
    /// for sends (`WAIT_SEND_F`, `WAIT_SEND_B`) that stand between two compute actions, seconds
    /// (`[overhead.wait_send]`, version 4). Those after a rank's last action are in `tail`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_send: Option<Stats>,
    /// Host time of posting one receive: PlanRunner's `pw post` spans and PyTorch's runtime's
    /// `RECV_F`, `RECV_B` spans, seconds (`[overhead.post_recv]`, version 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_recv: Option<Stats>,
}

impl Overhead {
    /// Whether nothing was measured.
    pub fn is_empty(&self) -> bool {
        self.step.is_none()
            && self.head.is_none()
            && self.tail.is_none()
            && self.gap.is_empty()
            && self.send.is_none()
            && self.wait_send.is_none()
            && self.post_recv.is_none()
    }
}

/// Host time before an action of each kind, seconds (`[overhead.gap]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gaps {
    /// Before a forward.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f: Option<Stats>,
    /// Before a full backward.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<Stats>,
    /// Before a backward for the inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub i: Option<Stats>,
    /// Before a backward for the weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub w: Option<Stats>,
    /// Before an overlapped F&B pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<Stats>,
}

impl Gaps {
    /// Whether no kind was measured.
    pub fn is_empty(&self) -> bool {
        self.all().iter().all(|(_, s)| s.is_none())
    }

    /// Each kind's key and statistic.
    pub fn all(&self) -> [(&'static str, Option<Stats>); 5] {
        [
            ("f", self.f),
            ("b", self.b),
            ("i", self.i),
            ("w", self.w),
            ("pair", self.pair),
        ]
    }
}

/// Where and when the costs were measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measured {
    /// When the first profiled action ran, UTC (`2026-12-07T05:31:12Z`), from the traces' own
    /// clock; absent when the traces do not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// The trace files, as given.
    pub traces: Vec<String>,
    /// The plan the traces ran, as given.
    pub plan: String,
    /// Its ranks.
    pub ranks: u32,
    /// Its model parts (stages per pipeline): part q is the model's q-th of `parts` equal slices.
    pub parts: u32,
    /// Its micro-batches.
    pub microbatches: u32,
    /// How many steps were measured.
    pub steps: u32,
    /// Whose clock the durations are: `host` (the CPU thread's) or `gpu` (the device's).
    pub clock: String,
    /// Who named the actions: `pipeweave` (`pw <cell>`) or `pytorch` (`PP:<cell>`).
    pub naming: String,
    /// The step: from the first action's start on any rank to the last action's end on any rank,
    /// seconds.
    pub step_time: Stats,
    /// Every run measured together, the first one that of `plan`, `traces` and `steps` above
    /// (`[[measured.run]]`, version 3), when there are several; each part's `measured_in` says
    /// which of them its figures are from.
    #[serde(rename = "run", default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunMeasured>,
}

/// One of several runs measured together (`[[measured.run]]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunMeasured {
    /// The plan it ran, as given.
    pub plan: String,
    /// Its trace files, as given.
    pub traces: Vec<String>,
    /// How many steps were measured.
    pub steps: u32,
    /// When its first profiled action ran, UTC, when the traces say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
}

/// Which of the runs measured together (their index in `[[measured.run]]`) each of a part's
/// figures was measured in (`measured_in`, version 3).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sources {
    /// The runs whose forwards `f` is from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub f: Vec<u32>,
    /// The runs whose full backwards `b` is from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub b: Vec<u32>,
    /// The runs whose I `i` is from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub i: Vec<u32>,
    /// The runs whose W `w` is from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub w: Vec<u32>,
}

/// One model part's compute: each kind the run measured, seconds per action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// The part (stage position).
    pub part: u32,
    /// Forward.
    pub f: Stats,
    /// Full backward.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<Stats>,
    /// Backward for the inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub i: Option<Stats>,
    /// Backward for the weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub w: Option<Stats>,
    /// Bytes a forward of this part leaves saved for its backward (the median over its micro-
    /// batches and steps of the saved bytes' rise over the forward).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved_bytes: Option<u64>,
    /// The fraction of those bytes an I frees; the W after it frees the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freed_by_i: Option<f64>,
    /// Which runs each figure is from, when several were measured together (version 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_in: Option<Sources>,
    /// The bytes of its gradients (version 4), when the traces record them: what the reduction
    /// among the copies of a part kept on several ranks all-reduces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gradient_bytes: Option<u64>,
}

/// An overlapped F&B pair: its duration and its slowdown against its halves run alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairCost {
    /// The forward's part.
    pub f_part: u32,
    /// The backward's part.
    pub b_part: u32,
    /// The backward's kind: `B` or `I`.
    pub b_kind: String,
    /// The pair, seconds.
    pub duration: Stats,
    /// The pair's median over the sum of its halves' medians run alone (1: no gain from the
    /// overlap; below 1: the overlap hides some of the work).
    pub slowdown: f64,
}

/// The transfers from one rank to another in one direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// The sending rank.
    pub from: u32,
    /// The receiving rank.
    pub to: u32,
    /// `F` (activations) or `B` (gradients).
    pub dir: String,
    /// Seconds from the later of the send's and the receive's starts to the receive's end: the
    /// time the data took once both sides were there.
    pub transfer: Stats,
    /// The bytes of the largest message it carries per micro-batch (version 4), when the traces
    /// record them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Seconds a message takes whatever its size, from the probe's fit of its two ranks
    /// (version 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<f64>,
    /// Bytes per second beyond the latency, from the probe's fit (version 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<f64>,
}

/// One rank's step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankMeasured {
    /// The rank.
    pub rank: u32,
    /// From its first action's start to its last action's end, seconds.
    pub step_time: Stats,
    /// Seconds its actions ran (the sum of their durations).
    pub busy: Stats,
    /// The most saved-activation bytes it held at once, when its trace records them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_saved_bytes: Option<u64>,
}

/// Saved-activation bytes a forward left for its backward.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedBytes {
    /// The global stage.
    pub stage: u32,
    /// The micro-batch.
    pub mb: u32,
    /// The median over the steps.
    pub bytes: u64,
}

/// The costs file as TOML, with a header saying what it is.
pub fn write_costs(c: &Calibration) -> Result<String, String> {
    let body = toml::to_string(c).map_err(|e| format!("cannot write the costs: {e}"))?;
    let links = if c.links.is_empty() || !c.probe.links.is_empty() {
        ""
    } else {
        "# A link's `transfer` is one time per link: the traces hold no link probe, so no bandwidth is measured.\n"
    };
    Ok(format!(
        "# Measured costs, written by `pipeweave calibrate` (docs/plan-vs-actual.md): seconds and bytes.\n{links}{body}"
    ))
}

/// Reads a costs file; every problem is a diagnostic in `file`.
pub fn read_costs(text: &str, file: FileId) -> Result<Calibration, Vec<Diagnostic>> {
    let c: Calibration = toml::from_str(text).map_err(|e| {
        let range = e.span().unwrap_or(0..0);
        let range = range.start.min(text.len())..range.end.min(text.len());
        vec![
            Diagnostic::error(format!(
                "invalid costs file: {}",
                visible(e.message().trim_end_matches('\n'))
            ))
            .with_span(Span::new(file, range)),
        ]
    })?;
    let problems = check(&c);
    if problems.is_empty() {
        Ok(c)
    } else {
        Err(problems
            .into_iter()
            .map(|p| {
                let at = located(text, &p);
                Diagnostic::error(p).with_span(Span::new(file, at))
            })
            .collect())
    }
}

/// Where in the text a problem of `check` is: the table its message names, for the tables of
/// `[overhead]`, `[probe]`, `[[cut]]`, `[[measured.run]]` and `measured_in`; the file's start
/// otherwise.
fn located(text: &str, problem: &str) -> std::ops::Range<usize> {
    let probe = ["[[probe.link]]", "[[probe.p2p]]", "[[probe.all_reduce]]"]
        .into_iter()
        .find(|t| problem.starts_with(&format!("`{t}`")));
    let needle = if let Some(table) = probe {
        Some(table)
    } else if problem.starts_with("`[probe]`") {
        Some("[[probe.")
    } else if problem.starts_with("`[[cut]]`") {
        Some("[[cut]]")
    } else if problem.contains("`gradient_bytes`") {
        Some("gradient_bytes")
    } else if problem.starts_with("`[[measured.run]]`") {
        Some("[[measured.run]]")
    } else if problem.contains("`measured_in") {
        Some("measured_in")
    } else {
        None
    };
    if let Some(needle) = needle
        && let Some(i) = text.find(needle)
    {
        return i..i + needle.len();
    }
    if problem.starts_with("`[overhead]`") {
        return text
            .find("[overhead")
            .map_or(0..0, |i| i..i + "[overhead".len());
    }
    let Some(key) = problem
        .strip_prefix("`overhead.")
        .and_then(|rest| rest.split('`').next())
    else {
        return 0..0;
    };
    // `[overhead.gap.f]`, `[overhead.head]`, or inline under `[overhead]` / `[overhead.gap]`.
    let header = format!("[overhead.{key}]");
    let parent = if key.starts_with("gap.") {
        "[overhead.gap]"
    } else {
        "[overhead]"
    };
    for needle in [header.as_str(), parent, "[overhead"] {
        if let Some(i) = text.find(needle) {
            return i..i + needle.len();
        }
    }
    0..0
}

/// What is wrong in a costs file that parsed, in words naming the key.
fn check(c: &Calibration) -> Vec<String> {
    let mut out = Vec::new();
    if c.format != FORMAT_NAME {
        out.push(format!(
            "`format` is `{}`, expected `{FORMAT_NAME}`",
            visible(&c.format)
        ));
        return out;
    }
    if c.version == 0 || c.version > FORMAT_VERSION {
        out.push(format!(
            "`version` {} is not one this pipeweave reads (1 to {FORMAT_VERSION})",
            c.version
        ));
        return out;
    }
    if c.version < 3
        && (!c.measured.runs.is_empty() || c.parts.iter().any(|p| p.measured_in.is_some()))
    {
        out.push(format!(
            "`[[measured.run]]` and `measured_in` are keys of version 3, and this file says `version = {}`",
            c.version
        ));
    }
    let v4_keys = !c.probe.is_empty()
        || !c.cuts.is_empty()
        || c.parts.iter().any(|p| p.gradient_bytes.is_some())
        || c.links
            .iter()
            .any(|l| l.bytes.is_some() || l.latency.is_some() || l.bandwidth.is_some());
    if c.version < 4 && v4_keys {
        out.push(format!(
            "`[probe]`, `[[cut]]`, a link's `bytes`, `latency` and `bandwidth` and a part's `gradient_bytes` are keys of version 4, and this file says `version = {}`",
            c.version
        ));
    }
    if c.version < 2 && !c.overhead.is_empty() {
        out.push(format!(
            "`[overhead]` is a key of version 2, and this file says `version = {}`",
            c.version
        ));
    }
    for (key, s) in [
        ("send", c.overhead.send),
        ("wait_send", c.overhead.wait_send),
    ] {
        if c.version < 4 && s.is_some() {
            out.push(format!(
                "`overhead.{key}` is a key of version 4, and this file says `version = {}`",
                c.version
            ));
        }
    }
    if c.version < 5 && c.overhead.post_recv.is_some() {
        out.push(format!(
            "`overhead.post_recv` is a key of version 5, and this file says `version = {}`",
            c.version
        ));
    }
    let o = &c.overhead;
    for (key, s) in [
        ("step", o.step),
        ("head", o.head),
        ("tail", o.tail),
        ("send", o.send),
        ("wait_send", o.wait_send),
        ("post_recv", o.post_recv),
    ] {
        if let Some(s) = s
            && !s.is_sound()
        {
            out.push(format!(
                "`overhead.{key}` is no sound statistic (finite, at least 0, min ≤ q1 ≤ median ≤ q3 ≤ max, samples ≥ 1)"
            ));
        }
    }
    for (key, s) in o.gap.all() {
        if let Some(s) = s
            && !s.is_sound()
        {
            out.push(format!(
                "`overhead.gap.{key}` is no sound statistic (finite, at least 0, min ≤ q1 ≤ median ≤ q3 ≤ max, samples ≥ 1)"
            ));
        }
    }
    if let (Some(step), Some(head), Some(tail)) = (o.step, o.head, o.tail)
        && head.median + tail.median > step.max
    {
        out.push(format!(
            "`overhead.head` and `overhead.tail` ({} s and {} s) are longer together than the longest step, `overhead.step.max` {} s",
            head.median, tail.median, step.max
        ));
    }
    let m = &c.measured;
    for (n, what) in [
        (c.parts.len(), "parts"),
        (c.pairs.len(), "pairs"),
        (c.links.len(), "links"),
        (c.ranks.len(), "ranks"),
        (c.saved.len(), "saved rows"),
        (c.measured.runs.len(), "runs"),
        (c.probe.links.len(), "probed links"),
        (c.probe.p2p.len(), "probed transfers"),
        (c.probe.all_reduce.len(), "probed all-reduces"),
        (c.cuts.len(), "cuts"),
        (c.cuts.iter().map(|k| k.part.len()).sum(), "parts of cuts"),
    ] {
        if n > MAX_ROWS {
            out.push(format!("{n} {what} are more than any plan has"));
            return out;
        }
    }
    if m.parts == 0 || c.parts.len() != m.parts as usize {
        out.push(format!(
            "`measured.parts` is {} but the file has {} `[[part]]` tables",
            m.parts,
            c.parts.len()
        ));
    }
    if !m.step_time.is_sound() {
        out.push("`measured.step_time` is no sound statistic (finite, at least 0, min ≤ q1 ≤ median ≤ q3 ≤ max, samples ≥ 1)".to_owned());
    }
    check_parts(&c.parts, "", m.runs.len(), &mut out);
    let mut cut_seen = std::collections::BTreeSet::new();
    for k in &c.cuts {
        let name = format!("`[[cut]]` of {} parts", k.parts);
        if k.parts == 0 || k.parts == m.parts || !cut_seen.insert(k.parts) {
            out.push(format!(
                "{name}: a cut is into a number of parts other than `measured.parts` ({}) and every other cut's",
                m.parts
            ));
        }
        if k.part.len() != k.parts as usize {
            out.push(format!("{name} has {} `[[cut.part]]` tables", k.part.len()));
        }
        if k.part.iter().any(|p| {
            p.saved_bytes.is_some() || p.freed_by_i.is_some() || p.gradient_bytes.is_some()
        }) {
            out.push(format!(
                "{name}: a part of a cut holds no bytes (`saved_bytes`, `freed_by_i` and `gradient_bytes` are the first run's, under `[[part]]`)"
            ));
        }
        check_parts(&k.part, &format!("{name}, "), m.runs.len(), &mut out);
    }
    for p in &c.parts {
        if p.gradient_bytes.is_some_and(|b| b > 1 << 53) {
            out.push(format!(
                "part {}: `gradient_bytes` is more than 2^53",
                p.part
            ));
        }
    }
    for p in &c.pairs {
        if p.f_part >= m.parts || p.b_part >= m.parts {
            out.push(format!(
                "a pair names part {} or {}, beyond the {} parts",
                p.f_part, p.b_part, m.parts
            ));
        }
        if !matches!(p.b_kind.as_str(), "B" | "I") {
            out.push(format!(
                "a pair's `b_kind` is `{}`, expected `B` or `I`",
                visible(&p.b_kind)
            ));
        }
        if !p.duration.is_sound() || !p.slowdown.is_finite() || p.slowdown <= 0.0 {
            out.push(
                "a pair's `duration` or `slowdown` is not a positive finite figure".to_owned(),
            );
        }
    }
    for l in &c.links {
        if l.from >= m.ranks || l.to >= m.ranks || l.from == l.to {
            out.push(format!(
                "link {} → {} is no link between two of the {} ranks",
                l.from, l.to, m.ranks
            ));
        }
        if !matches!(l.dir.as_str(), "F" | "B") {
            out.push(format!(
                "a link's `dir` is `{}`, expected `F` or `B`",
                visible(&l.dir)
            ));
        }
        if !l.transfer.is_sound() {
            out.push(format!(
                "link {} → {}: `transfer` is no sound statistic",
                l.from, l.to
            ));
        }
        if l.latency.is_some_and(|x| !(x.is_finite() && x >= 0.0))
            || l.bandwidth.is_some_and(|x| !(x.is_finite() && x > 0.0))
            || l.bytes.is_some_and(|x| x > 1 << 53)
        {
            out.push(format!(
                "link {} → {}: `latency` must be seconds from 0, `bandwidth` positive bytes per second, `bytes` at most 2^53",
                l.from, l.to
            ));
        }
    }
    for r in &c.ranks {
        if r.rank >= m.ranks || !r.step_time.is_sound() || !r.busy.is_sound() {
            out.push(format!(
                "`[[rank]]` {} is beyond the ranks or has no sound statistics",
                r.rank
            ));
        }
    }
    crate::probe::check(&c.probe, m.ranks, &mut out);
    out.truncate(20);
    out
}

/// What is wrong in a list of parts (`[[part]]`, or a cut's `[[cut.part]]`; `what` prefixes each
/// message), `runs` the runs `[[measured.run]]` lists.
fn check_parts(parts: &[Part], what: &str, runs: usize, out: &mut Vec<String>) {
    for (q, p) in parts.iter().enumerate() {
        if p.part as usize != q {
            out.push(format!(
                "{what}`[[part]]` {q} says `part = {}`: parts go in order from 0",
                p.part
            ));
        }
        for (k, s) in [
            ("f", Some(&p.f)),
            ("b", p.b.as_ref()),
            ("i", p.i.as_ref()),
            ("w", p.w.as_ref()),
        ] {
            if let Some(s) = s
                && !s.is_sound()
            {
                out.push(format!("{what}part {q}: `{k}` is no sound statistic"));
            }
        }
        if p.f.median <= 0.0 {
            out.push(format!(
                "{what}part {q}: a forward takes some time, `f.median` is {}",
                p.f.median
            ));
        }
        if let Some(x) = p.freed_by_i
            && !(0.0..=1.0).contains(&x)
        {
            out.push(format!(
                "{what}part {q}: `freed_by_i` {x} is no fraction from 0 to 1"
            ));
        }
        if let Some(from) = &p.measured_in {
            for (k, v) in [
                ("f", &from.f),
                ("b", &from.b),
                ("i", &from.i),
                ("w", &from.w),
            ] {
                if let Some(&r) = v.iter().find(|&&r| r as usize >= runs) {
                    out.push(format!(
                        "{what}part {q}: `measured_in.{k}` names run {r}, and `[[measured.run]]` has {runs}"
                    ));
                }
            }
        }
    }
}
