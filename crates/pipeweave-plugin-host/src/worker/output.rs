//! A worker's standard output and error (what the plugin prints, what the dynamic loader says)
//! passed on to this process's standard error, bounded: a worker process passes on at most its
//! [`WorkerOptions::max_output`](super::WorkerOptions) bytes and all workers together at most
//! [`ALL_WORKERS`]; the rest is read and dropped (so the worker never blocks on a full pipe), and
//! counted in one warning once the worker's output ends.

use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver};

/// The most bytes all the workers of this process pass on together.
pub(crate) const ALL_WORKERS: u64 = 64 << 10;

/// What the workers of this process have passed on so far.
static PASSED_ON: AtomicU64 = AtomicU64::new(0);

/// Takes up to `wanted` bytes from what all the workers may still pass on; how many it got.
fn take_from_all(wanted: u64) -> u64 {
    let mut got = 0;
    let _ = PASSED_ON.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |passed| {
        got = wanted.min(ALL_WORKERS.saturating_sub(passed));
        Some(passed + got)
    });
    got
}

/// Passes on what the worker of the plugin `path` writes on `from`, in a thread of its own, at
/// most `limit` bytes of it; the channel says when the output has ended and any note of what was
/// dropped is written.
pub(crate) fn forward(
    from: impl Read + Send + 'static,
    path: &Path,
    limit: u64,
) -> io::Result<Receiver<()>> {
    let path = path.to_path_buf();
    let (done, ended) = mpsc::channel();
    std::thread::Builder::new()
        .name("plugin-worker-output".into())
        .spawn(move || {
            let mut sink = io::stderr();
            pass_on(from, &mut sink, &path, limit, take_from_all);
            let _ = done.send(());
        })?;
    Ok(ended)
}

/// Copies at most `limit` bytes of `from` to `to` (as far as `budget` grants them), reads the rest
/// to its end, and then says on `to` how many bytes were dropped, if any. Write errors are ignored
/// (a closed standard error must not block the worker).
fn pass_on(
    mut from: impl Read,
    to: &mut dyn Write,
    path: &Path,
    limit: u64,
    mut budget: impl FnMut(u64) -> u64,
) {
    let mut buffer = vec![0u8; 1 << 16];
    let (mut shown, mut dropped) = (0u64, 0u64);
    let mut ends_a_line = true;
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let granted = budget((n as u64).min(limit - shown));
        // `granted` is at most `n`, a `usize`.
        let kept = &buffer[..granted as usize];
        if let Some(&last) = kept.last() {
            let _ = to.write_all(kept);
            ends_a_line = last == b'\n';
        }
        shown += granted;
        dropped += n as u64 - granted;
    }
    if dropped > 0 {
        let newline = if ends_a_line { "" } else { "\n" };
        let _ = writeln!(
            to,
            "{newline}warning: {dropped} more bytes of output from the plugin {} were dropped (after the first {shown})",
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passed(output: &[u8], limit: u64, budget: u64) -> String {
        let mut left = budget;
        let mut to = Vec::new();
        pass_on(output, &mut to, Path::new("/p/libx.so"), limit, |wanted| {
            let got = wanted.min(left);
            left -= got;
            got
        });
        String::from_utf8(to).unwrap()
    }

    #[test]
    fn output_within_the_limit_is_passed_on_as_it_is() {
        assert_eq!(passed(b"one\ntwo", 7, 100), "one\ntwo");
        assert_eq!(passed(b"", 0, 0), "");
    }

    #[test]
    fn output_past_the_limit_is_dropped_and_counted() {
        let many = "line\n".repeat(100_000);
        assert_eq!(
            passed(many.as_bytes(), 10, 100),
            "line\nline\nwarning: 499990 more bytes of output from the plugin /p/libx.so were dropped (after the first 10)\n"
        );
        // Cut in a line: the warning starts on a line of its own.
        assert_eq!(
            passed(b"abcdef", 3, 100),
            "abc\nwarning: 3 more bytes of output from the plugin /p/libx.so were dropped (after the first 3)\n"
        );
        // What all the workers may still pass on bounds each one too.
        assert_eq!(
            passed(b"abcdef", 5, 2),
            "ab\nwarning: 4 more bytes of output from the plugin /p/libx.so were dropped (after the first 2)\n"
        );
    }
}
