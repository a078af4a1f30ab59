//! Tables sized in advance, allocated so that running out of memory is an error naming the size
//! asked for, not an abort of the process: the passes over a big plan ask for the bulk of their
//! memory up front (the programs being built, the lowered steps, the timing, the per-(stage,
//! micro-batch) tables), so a plan too big for the memory left is refused there, cleanly.

use std::fmt;

/// A table that could not be allocated: how many bytes, for what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfMemory {
    /// The bytes asked for.
    pub bytes: usize,
    /// What they were for ("the lowered programs").
    pub what: &'static str,
}

impl fmt::Display for OutOfMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "out of memory: {} for {} could not be allocated",
            size(self.bytes),
            self.what
        )
    }
}

impl std::error::Error for OutOfMemory {}

/// A size in bytes in words: `1.5 GiB`, `537 MiB`, `912 KiB`, `100 bytes`.
fn size(bytes: usize) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    let mut x = bytes as f64;
    if x < 1024.0 {
        return format!("{bytes} bytes");
    }
    let mut unit = "";
    for u in UNITS {
        if x < 1024.0 {
            break;
        }
        x /= 1024.0;
        unit = u;
    }
    if x < 10.0 {
        format!("{x:.1} {unit}")
    } else {
        format!("{x:.0} {unit}")
    }
}

/// Room for `n` values of `T`, or the error naming the size.
pub fn with_capacity<T>(n: usize, what: &'static str) -> Result<Vec<T>, OutOfMemory> {
    #[cfg(any(test, feature = "testing"))]
    ledger::record(n.saturating_mul(std::mem::size_of::<T>()));
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| OutOfMemory {
        bytes: n.saturating_mul(std::mem::size_of::<T>()),
        what,
    })?;
    Ok(v)
}

/// `n` copies of `value`, or the error naming the size.
pub fn filled<T: Clone>(n: usize, value: T, what: &'static str) -> Result<Vec<T>, OutOfMemory> {
    let mut v = with_capacity(n, what)?;
    v.resize(n, value);
    Ok(v)
}

/// `n` zeros (the type's default, which must be all zero bytes to be fast), or the error naming the
/// size: the room is asked for first, then given back and taken again zeroed, so that the pages
/// come from the system already zero rather than being written over (as `vec![0; n]` does).
pub fn zeroed<T: Clone + Default>(n: usize, what: &'static str) -> Result<Vec<T>, OutOfMemory> {
    drop(with_capacity::<T>(n, what)?);
    Ok(vec![T::default(); n])
}

/// Makes room for one more value in `v` (doubling, as `push` does), or the error naming the size.
#[inline]
pub fn grow<T>(v: &mut Vec<T>, what: &'static str) -> Result<(), OutOfMemory> {
    if v.len() < v.capacity() {
        return Ok(());
    }
    let more = v.len().max(4);
    #[cfg(any(test, feature = "testing"))]
    ledger::record(more.saturating_mul(std::mem::size_of::<T>()));
    v.try_reserve(more).map_err(|_| OutOfMemory {
        bytes: (v.len() + more).saturating_mul(std::mem::size_of::<T>()),
        what,
    })
}

/// What the tables asked for through this module add up to, on this thread (tests and
/// benchmarks only): the passes ask for their big tables here, so the bytes a pass asked for say
/// whether its tables follow its work (`tests/it/linear.rs`).
#[cfg(any(test, feature = "testing"))]
pub mod ledger {
    use std::cell::Cell;

    thread_local! {
        static ASKED: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn record(bytes: usize) {
        ASKED.with(|a| a.set(a.get().saturating_add(bytes)));
    }

    /// Runs `f`; returns what it returned and the bytes of the tables it asked for through this
    /// module (whether or not they were given, and however long they were kept).
    pub fn asked<T>(f: impl FnOnce() -> T) -> (T, usize) {
        let before = ASKED.with(Cell::get);
        let value = f();
        (value, ASKED.with(Cell::get).saturating_sub(before))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_said_in_words() {
        assert_eq!(size(100), "100 bytes");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(537 << 20), "537 MiB");
        assert_eq!(size(3 << 30), "3.0 GiB");
    }

    #[test]
    fn a_table_too_big_is_an_error() {
        let e = filled(usize::MAX / 8, 0u64, "the test table").expect_err("too big");
        assert_eq!(e.what, "the test table");
        assert!(e.to_string().starts_with("out of memory: "), "{e}");
        assert_eq!(filled(3, 7u8, "three").expect("small"), [7, 7, 7]);
        assert_eq!(zeroed::<u64>(2, "two").expect("small"), [0, 0]);
        assert!(zeroed::<u64>(usize::MAX / 8, "too many").is_err());
    }

    #[test]
    fn the_ledger_counts_what_was_asked_for() {
        let (_, bytes) = ledger::asked(|| {
            let _ = filled(10, 0u32, "ten");
            let _ = zeroed::<u64>(3, "three");
            let mut v: Vec<u16> = Vec::new();
            grow(&mut v, "one more").expect("small");
        });
        assert_eq!(bytes, 40 + 24 + 8);
    }
}
