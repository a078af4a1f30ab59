//! JSON for tools: every `--format json` is a value of `pipeweave-eval` serialized here.

/// A value as pretty-printed JSON with a final newline: the form of every `--format json`.
pub fn json<T: serde::Serialize>(value: &T) -> String {
    // Serializing plain data into a string fails only for maps with non-string keys, which no
    // output type has.
    let mut s = serde_json::to_string_pretty(value).unwrap_or_default();
    s.push('\n');
    crate::shown::json(s)
}
