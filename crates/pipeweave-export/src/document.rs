//! Exports as documents written as they are made: whatever may refuse a plan (a format that cannot
//! hold it, a timeline that does not fit it) is decided when a [`Document`] is made, so writing one
//! can fail only because the writer does; the text goes to the writer in chunks of [`CHUNK`] bytes
//! and is never held whole.

use std::io::{self, Write};

/// The size of the pieces a document is written in.
pub const CHUNK: usize = 1 << 16;

/// An export whose checks passed, ready to be written.
pub trait Document {
    /// Writes the document to `out`, a chunk at a time.
    fn write_to(&self, out: &mut dyn Write) -> io::Result<()>;

    /// The whole document as text (for tests and small plans; the command line streams it).
    fn to_text(&self) -> String {
        let mut out = Vec::new();
        // Writing into a vector cannot fail.
        let _ = self.write_to(&mut out);
        // The exports write UTF-8 only; the lossy conversion merely avoids a panic path.
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

/// The text being written: a buffer the writers append to (the cell and number writers take a
/// `Vec<u8>`), handed to the writer whenever it holds a chunk.
pub(crate) struct Chunks<'w> {
    buf: Vec<u8>,
    out: &'w mut dyn Write,
}

impl<'w> Chunks<'w> {
    pub(crate) fn new(out: &'w mut dyn Write) -> Chunks<'w> {
        Chunks {
            buf: Vec::with_capacity(CHUNK + CHUNK / 4),
            out,
        }
    }

    /// The buffer to append to; call [`Chunks::spill`] after each piece of bounded size.
    #[inline]
    pub(crate) fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    #[inline]
    pub(crate) fn raw(&mut self, text: &str) {
        self.buf.extend_from_slice(text.as_bytes());
    }

    /// Hands the buffer to the writer once it holds a chunk.
    #[inline]
    pub(crate) fn spill(&mut self) -> io::Result<()> {
        if self.buf.len() >= CHUNK {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Writes what is left and flushes the writer.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        self.out.flush()
    }
}
