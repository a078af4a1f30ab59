//! The trace's `pipeweave` object, which `pipeweave.torch.profile` writes: the bytes of the plan's
//! messages and of each part's gradients on the rank, and the link probe's timings. Every field is
//! checked (whole numbers of bytes, ranks below the plan's bound, finite times in seconds) and
//! every list bounded; a problem is a diagnostic at the value.

use super::Reading;
use pipeweave_plan::MAX_RANKS;
use serde::Deserialize;
use serde::de::{Deserializer as _, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;
use std::ops::Range;

/// The most entries of each list of the object: far beyond any plan's messages or any probe.
pub const MAX_META_ROWS: usize = 1 << 14;
/// The longest time a probe's point may take, seconds (an hour: no transfer of a probe does).
pub const MAX_PROBE_SECONDS: f64 = 3600.0;

/// What `pipeweave.torch.profile` records about the plan's transfers on one rank.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceMeta {
    /// Every message between two ranks of the plan, per micro-batch.
    pub messages: Vec<Message>,
    /// Each part the rank hosts, with its gradient bytes.
    pub gradients: Vec<PartGradient>,
    /// The link probe, when the run made one.
    pub probe: Option<Probe>,
}

/// A message between two ranks, per micro-batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// The sending stage (global).
    pub stage: u32,
    /// Forward (activations) or not (gradients).
    pub forward: bool,
    /// The sending rank.
    pub from: u32,
    /// The receiving rank.
    pub to: u32,
    /// Its bytes.
    pub bytes: u64,
}

/// A part's gradient bytes on the rank: what its gradient reduction all-reduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartGradient {
    /// The model part (stage position).
    pub part: u32,
    /// Its parameters' gradient bytes.
    pub bytes: u64,
}

/// The link probe's points that this rank timed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Probe {
    /// Timings per point (the least is the point's time).
    pub repeats: u32,
    /// One-way transfers (half a round trip).
    pub p2p: Vec<ProbePoint>,
    /// All-reduces of two ranks.
    pub all_reduce: Vec<ProbePoint>,
}

/// One point of the probe: `bytes` between ranks `from` and `to` (a pair of an all-reduce, lower
/// first) took `seconds`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbePoint {
    /// The first rank (the sender, or the lower of an all-reduce's two).
    pub from: u32,
    /// The other rank.
    pub to: u32,
    /// The bytes moved (sent, or all-reduced).
    pub bytes: u64,
    /// Seconds it took (the least of the repeats).
    pub seconds: f64,
}

#[derive(Deserialize)]
struct RawMeta<'a> {
    #[serde(borrow, default)]
    messages: Option<&'a RawValue>,
    #[serde(borrow, default)]
    gradients: Option<&'a RawValue>,
    #[serde(borrow, default)]
    probe: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RawProbe<'a> {
    #[serde(borrow, default)]
    repeats: Option<&'a RawValue>,
    #[serde(borrow, default)]
    p2p: Option<&'a RawValue>,
    #[serde(borrow, default)]
    all_reduce: Option<&'a RawValue>,
}

/// The fields of one row of any of the lists; which a row needs depends on its list.
#[derive(Deserialize)]
struct RawRow<'a> {
    #[serde(borrow, default)]
    stage: Option<&'a RawValue>,
    #[serde(borrow, default)]
    dir: Option<&'a RawValue>,
    #[serde(borrow, default)]
    from: Option<&'a RawValue>,
    #[serde(borrow, default)]
    to: Option<&'a RawValue>,
    #[serde(borrow, default)]
    ranks: Option<&'a RawValue>,
    #[serde(borrow, default)]
    part: Option<&'a RawValue>,
    #[serde(borrow, default)]
    bytes: Option<&'a RawValue>,
    #[serde(borrow, default)]
    time: Option<&'a RawValue>,
}

impl<'a> Reading<'a> {
    /// The top-level `pipeweave` object.
    pub(super) fn meta(&mut self, raw: &'a RawValue) {
        let at = self.range_of(raw);
        let m = object(raw).and_then(|raw| serde_json::from_str::<RawMeta<'a>>(raw.get()).ok());
        let Some(m) = m else {
            self.error_at(at, "`pipeweave` must be an object".to_owned());
            return;
        };
        let mut meta = TraceMeta::default();
        for (at, row) in self.rows(m.messages, "pipeweave.messages") {
            let stage = self.whole(
                row.stage,
                "pipeweave.messages",
                "stage",
                u64::from(u32::MAX),
                &at,
            );
            let from = self.rank_of(row.from, "pipeweave.messages", "from", &at);
            let to = self.rank_of(row.to, "pipeweave.messages", "to", &at);
            let bytes = self.byte_count(row.bytes, "pipeweave.messages", &at);
            let dir = match row
                .dir
                .map(|d| (d, serde_json::from_str::<String>(d.get())))
            {
                Some((_, Ok(d))) if d == "F" || d == "B" => Some(d == "F"),
                Some((d, _)) => {
                    let where_ = self.range_of(d);
                    self.error_at(
                        where_,
                        "`pipeweave.messages` `dir` must be \"F\" or \"B\"".to_owned(),
                    );
                    None
                }
                None => {
                    self.error_at(
                        at.clone(),
                        "a row of `pipeweave.messages` has no `dir`".to_owned(),
                    );
                    None
                }
            };
            if let (Some(stage), Some(forward), Some(from), Some(to), Some(bytes)) =
                (stage, dir, from, to, bytes)
            {
                meta.messages.push(Message {
                    stage: stage as u32,
                    forward,
                    from,
                    to,
                    bytes,
                });
            }
        }
        for (at, row) in self.rows(m.gradients, "pipeweave.gradients") {
            let part = self.whole(
                row.part,
                "pipeweave.gradients",
                "part",
                u64::from(u32::MAX),
                &at,
            );
            let bytes = self.byte_count(row.bytes, "pipeweave.gradients", &at);
            if let (Some(part), Some(bytes)) = (part, bytes) {
                meta.gradients.push(PartGradient {
                    part: part as u32,
                    bytes,
                });
            }
        }
        if let Some(raw) = m.probe {
            meta.probe = self.probe(raw);
        }
        self.meta = Some(meta);
    }

    fn probe(&mut self, raw: &'a RawValue) -> Option<Probe> {
        let at = self.range_of(raw);
        let p = object(raw).and_then(|raw| serde_json::from_str::<RawProbe<'a>>(raw.get()).ok());
        let Some(p) = p else {
            self.error_at(at, "`pipeweave.probe` must be an object".to_owned());
            return None;
        };
        let Some(repeats) = p.repeats else {
            self.error_at(at, "`pipeweave.probe` has no `repeats`".to_owned());
            return None;
        };
        let repeats = self.whole(Some(repeats), "pipeweave.probe", "repeats", 1 << 20, &at)?;
        let mut probe = Probe {
            repeats: repeats as u32,
            ..Probe::default()
        };
        for (at, row) in self.rows(p.p2p, "pipeweave.probe.p2p") {
            let from = self.rank_of(row.from, "pipeweave.probe.p2p", "from", &at);
            let to = self.rank_of(row.to, "pipeweave.probe.p2p", "to", &at);
            let point = self.point(&row, "pipeweave.probe.p2p", &at);
            if let (Some(from), Some(to), Some((bytes, seconds))) = (from, to, point) {
                if from == to {
                    self.error_at(
                        at,
                        format!("`pipeweave.probe.p2p` names rank {from} to itself"),
                    );
                    continue;
                }
                probe.p2p.push(ProbePoint {
                    from,
                    to,
                    bytes,
                    seconds,
                });
            }
        }
        for (at, row) in self.rows(p.all_reduce, "pipeweave.probe.all_reduce") {
            let ranks = row
                .ranks
                .map(|r| (r, serde_json::from_str::<[u32; 2]>(r.get())));
            let ranks = match ranks {
                Some((_, Ok([a, b]))) if a < b && b < MAX_RANKS => Some((a, b)),
                Some((r, _)) => {
                    let where_ = self.range_of(r);
                    self.error_at(where_, format!("`pipeweave.probe.all_reduce` `ranks` must be two ranks below {MAX_RANKS}, the lower first"));
                    None
                }
                None => {
                    self.error_at(
                        at.clone(),
                        "a row of `pipeweave.probe.all_reduce` has no `ranks`".to_owned(),
                    );
                    None
                }
            };
            let point = self.point(&row, "pipeweave.probe.all_reduce", &at);
            if let (Some((from, to)), Some((bytes, seconds))) = (ranks, point) {
                probe.all_reduce.push(ProbePoint {
                    from,
                    to,
                    bytes,
                    seconds,
                });
            }
        }
        Some(probe)
    }

    /// The rows of a list (at most [`MAX_META_ROWS`]); a list that is none, or too long, is a
    /// problem and gives no rows.
    fn rows(&mut self, raw: Option<&'a RawValue>, what: &str) -> Vec<(Range<usize>, RawRow<'a>)> {
        let Some(raw) = raw else { return Vec::new() };
        let at = self.range_of(raw);
        let mut de = serde_json::Deserializer::from_str(raw.get());
        let long = std::cell::Cell::new(false);
        let items = match de.deserialize_seq(BoundedList(&long)) {
            Ok(items) => items,
            Err(_) if long.get() => {
                self.error_at(at, format!("`{what}` has more than {MAX_META_ROWS} rows"));
                return Vec::new();
            }
            Err(_) => {
                self.error_at(at, format!("`{what}` must be a list"));
                return Vec::new();
            }
        };
        let mut rows = Vec::with_capacity(items.len());
        for item in items {
            let where_ = self.range_of(item);
            match object(item).and_then(|item| serde_json::from_str::<RawRow<'a>>(item.get()).ok())
            {
                Some(row) => rows.push((where_, row)),
                None => self.error_at(where_, format!("a row of `{what}` must be an object")),
            }
        }
        rows
    }

    /// A whole number from 0 to `max`, with where a missing one was wanted.
    fn whole(
        &mut self,
        raw: Option<&'a RawValue>,
        what: &str,
        field: &str,
        max: u64,
        row: &Range<usize>,
    ) -> Option<u64> {
        let Some(raw) = raw else {
            self.error_at(row.clone(), format!("a row of `{what}` has no `{field}`"));
            return None;
        };
        match serde_json::from_str::<u64>(raw.get()) {
            Ok(v) if v <= max => Some(v),
            _ => {
                let where_ = self.range_of(raw);
                self.error_at(
                    where_,
                    format!("`{what}` `{field}` must be a whole number from 0 to {max}"),
                );
                None
            }
        }
    }

    fn rank_of(
        &mut self,
        raw: Option<&'a RawValue>,
        what: &str,
        field: &str,
        row: &Range<usize>,
    ) -> Option<u32> {
        self.whole(raw, what, field, u64::from(MAX_RANKS) - 1, row)
            .map(|v| v as u32)
    }

    fn byte_count(
        &mut self,
        raw: Option<&'a RawValue>,
        what: &str,
        row: &Range<usize>,
    ) -> Option<u64> {
        let Some(raw) = raw else {
            self.error_at(row.clone(), format!("a row of `{what}` has no `bytes`"));
            return None;
        };
        self.bytes(raw, "bytes")
    }

    /// A point's bytes and seconds.
    fn point(&mut self, row: &RawRow<'a>, what: &str, at: &Range<usize>) -> Option<(u64, f64)> {
        let bytes = self.byte_count(row.bytes, what, at);
        let seconds = match row.time {
            None => {
                self.error_at(at.clone(), format!("a row of `{what}` has no `time`"));
                None
            }
            Some(raw) => match serde_json::from_str::<f64>(raw.get()) {
                Ok(t) if t.is_finite() && t > 0.0 && t <= MAX_PROBE_SECONDS => Some(t),
                _ => {
                    let where_ = self.range_of(raw);
                    self.error_at(where_, format!("`{what}` `time` must be a number of seconds above 0 and at most {MAX_PROBE_SECONDS}"));
                    None
                }
            },
        };
        Some((bytes?, seconds?))
    }
}

/// The value when it is a JSON object (serde would take a list for a struct too, field by
/// position).
fn object(raw: &RawValue) -> Option<&RawValue> {
    raw.get().starts_with('{').then_some(raw)
}

/// A list's items, read one at a time and no more than [`MAX_META_ROWS`] (an error beyond, with
/// the flag set).
struct BoundedList<'f>(&'f std::cell::Cell<bool>);

impl<'de> Visitor<'de> for BoundedList<'_> {
    type Value = Vec<&'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<&'de RawValue>()? {
            if items.len() == MAX_META_ROWS {
                self.0.set(true);
                return Err(serde::de::Error::custom("too long"));
            }
            items.push(item);
        }
        Ok(items)
    }
}
