//! The trace's JSON read as a stream: the top-level object key by key, `traceEvents` one event at
//! a time (never the whole list in memory), and serde_json's errors as located diagnostics.

use super::{Reading, Top};
use pipeweave_diagnostics::{Diagnostic, FileId, Span, visible};
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;

/// The fields of an event this reader may look at; any other field is skipped.
#[derive(Deserialize)]
pub(super) struct RawEvent<'a> {
    #[serde(borrow, default)]
    pub(super) ph: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) cat: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) ts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) dur: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) args: Option<&'a RawValue>,
}

#[derive(Deserialize)]
pub(super) struct SavedArgs<'a> {
    #[serde(borrow, default)]
    pub(super) action: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) bytes: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) peak: Option<&'a RawValue>,
}

#[derive(Deserialize)]
pub(super) struct DistributedInfo<'a> {
    #[serde(borrow, default)]
    pub(super) rank: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) world_size: Option<&'a RawValue>,
}

/// The top-level object, read key by key: `traceEvents` streamed, `distributedInfo` read, the
/// rest skipped.
pub(super) struct TopSeed<'r, 'a> {
    pub(super) reading: &'r mut Reading<'a>,
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for TopSeed<'_, 'a> {
    type Value = Top;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Top, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for TopSeed<'_, 'a> {
    type Value = Top;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a trace object with `traceEvents`")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Top, M::Error> {
        let mut events_given = false;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "traceEvents" => {
                    if events_given {
                        return Err(de::Error::custom("`traceEvents` is given twice"));
                    }
                    events_given = true;
                    map.next_value_seed(EventsSeed {
                        reading: &mut *self.reading,
                    })?;
                }
                "baseTimeNanoseconds" => {
                    let raw: &'de RawValue = map.next_value()?;
                    let at = self.reading.range_of(raw);
                    match serde_json::from_str::<u64>(raw.get()) {
                        Ok(ns) => self.reading.base_time_ns = Some(ns),
                        Err(_) => self.reading.error_at(
                            at,
                            "`baseTimeNanoseconds` must be a whole number of nanoseconds"
                                .to_owned(),
                        ),
                    }
                }
                "pipeweave" => {
                    let raw: &'de RawValue = map.next_value()?;
                    self.reading.meta(raw);
                }
                "distributedInfo" => {
                    let raw: &'de RawValue = map.next_value()?;
                    self.reading.distributed(raw);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Top { events_given })
    }
}

/// `traceEvents`, one event at a time.
struct EventsSeed<'r, 'a> {
    reading: &'r mut Reading<'a>,
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for EventsSeed<'_, 'a> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for EventsSeed<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of events")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
        while let Some(raw) = seq.next_element::<&'de RawValue>()? {
            if self.reading.event(raw).is_err() {
                self.reading.stopped = true;
                return Err(de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

/// What to add when a value that fails to read as a number is written as one: it is out of range.
pub(super) fn out_of_range(raw: &RawValue) -> &'static str {
    if raw
        .get()
        .starts_with(|c: char| c == '-' || c.is_ascii_digit())
    {
        ", and this one is out of range"
    } else {
        ""
    }
}

/// A serde_json error as a diagnostic at its line and column.
pub(super) fn syntax(text: &str, file: FileId, e: &serde_json::Error) -> Diagnostic {
    let offset = offset_of(text, e.line(), e.column());
    let message = e.to_string();
    let message = message
        .rfind(" at line ")
        .map_or(&message[..], |i| &message[..i]);
    let message = if e.is_eof() {
        "the trace ends early: the file is cut short".to_owned()
    } else {
        format!("invalid trace JSON: {}", visible(message))
    };
    let end = text[offset..]
        .chars()
        .next()
        .map_or(offset, |c| offset + c.len_utf8());
    Diagnostic::error(message).with_span(Span::new(file, offset..end))
}

/// The byte offset of serde_json's 1-based line and byte column.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line.max(1) {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    let mut at = (start + column.saturating_sub(1)).min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}
