//! Hand-written JSON output for the large exports: numbers and strings appended to a byte buffer.
//!
//! Going through serde for every small object of a big trace costs thousands of instructions per
//! object (map serializers, per-key escaping, tiny copies); these helpers write straight into the
//! output. Their text is exactly what serde_json writes for the same values (the tests compare
//! them), so the exports stay byte-for-byte what they were. The buffer is bytes rather than a
//! `String` so that appending a few digits needs no UTF-8 check; everything appended is UTF-8 (it
//! comes from `&str`s and ASCII), and the caller converts the whole buffer once at the end.

use std::io::Write as _;

/// Integers are written by the cell writer's `push_uint` (why not `itoa`: see there).
pub(crate) use pipeweave_plan::cell::push_uint;

/// Below this magnitude serde_json writes a whole number as its digits and `.0`.
const PLAIN_INTEGRAL_BELOW: f64 = 1e15;

/// Appends a float as serde_json writes an `f64`: the shortest text that reads back as the same
/// value (`2000.0`, `0.1`, `1e16`, `1.5e-7`), and `null` when it is not finite.
pub(crate) fn push_f64(out: &mut Vec<u8>, v: f64) {
    // Timelines are mostly whole numbers (unit costs scaled to microseconds): write them without
    // the general shortest-digits search. (A cast, not `fract`, tells them: `fract` is a call.)
    let magnitude = v.abs();
    if magnitude < PLAIN_INTEGRAL_BELOW {
        // Exact for a whole magnitude below the bound, which is well inside u64's range.
        let whole = magnitude as u64;
        if magnitude - whole as f64 == 0.0 {
            push_whole(out, v.is_sign_negative(), whole);
            return;
        }
    }
    match serde_json::Number::from_f64(v) {
        // serde_json's own float formatting (the `Display` of a number is the text it writes).
        // Writing into a `Vec` cannot fail.
        Some(n) => {
            let _ = write!(out, "{n}");
        }
        None => out.extend_from_slice(b"null"),
    }
}

/// Appends a whole number below 10¹⁵ as serde_json writes it as an `f64`: its digits and `.0`,
/// made in a buffer and appended in one copy (the trace's times run to eight digits and more,
/// where pushing digit by digit cost a fifth of the trace).
#[inline]
fn push_whole(out: &mut Vec<u8>, negative: bool, whole: u64) {
    const PAIRS: &[u8; 200] = b"\
        0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut buf = [0u8; 24];
    buf[22..].copy_from_slice(b".0");
    let mut i = 22;
    let mut n = whole;
    while n >= 100 {
        let d = (n % 100) as usize * 2;
        n /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[d..d + 2]);
    }
    if n >= 10 {
        let d = n as usize * 2;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[d..d + 2]);
    } else {
        i -= 1;
        buf[i] = b'0' + n as u8;
    }
    if negative {
        i -= 1;
        buf[i] = b'-';
    }
    out.extend_from_slice(&buf[i..]);
}

/// Appends a JSON string literal with its quotes, escaping as serde_json does: `"` and `\` with a
/// backslash, control characters as `\n`, `\t`, … or `\u00XX`; everything else as it is.
pub(crate) fn push_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    // Copy runs of bytes that need no escape in one go (bytes of non-ASCII characters never do).
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[run..i]);
        run = i + 1;
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(escape);
        }
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests;
