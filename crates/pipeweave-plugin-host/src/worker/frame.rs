//! The worker's pipe format: the worker first writes [`GREETING`], then both sides write frames of
//! a tag byte, a little-endian `u64` length and that many bytes. The payloads are the plugin
//! protocol's own messages, unchanged; a fault travels as a kind byte and its words.
//!
//! Nothing read here is trusted: the worker runs foreign code, which can write anything on any of
//! its file descriptors. Lengths are bounded before anything is read and unknown tags or faults
//! are errors, never panics.

use crate::library::Fault;
use std::io::{self, Read, Write};

/// The first bytes a worker writes: its format's name and version.
pub(crate) const GREETING: &[u8] = b"pipeweave-plugin-worker 1\n";

/// Host to worker: a protocol `request` message to pass to the plugin's `generate`.
pub(crate) const GENERATE: u8 = b'G';
/// Worker to host, once, right after the greeting: the plugin's `metadata` reply.
pub(crate) const METADATA: u8 = b'M';
/// Worker to host: the plugin's reply to a `GENERATE`.
pub(crate) const REPLY: u8 = b'R';
/// Worker to host: a [`Fault`] instead of a reply (after which the worker goes on serving,
/// unless the library could not be loaded).
pub(crate) const FAULT: u8 = b'F';
/// Worker to host: the worker could not read what the host sent (it stops).
pub(crate) const WORKER_ERROR: u8 = b'W';

/// The tags a host reads.
pub(crate) const REPLY_TAGS: &[u8] = &[METADATA, REPLY, FAULT, WORKER_ERROR];

/// The largest request a worker reads (requests are a few lines).
pub(crate) const MAX_REQUEST: u64 = 1 << 20;

/// The first bytes of every frame: tag and length.
const HEADER: usize = 9;

/// Writes one frame.
pub(crate) fn write_frame(out: &mut dyn Write, tag: u8, payload: &[u8]) -> io::Result<()> {
    let mut header = [0u8; HEADER];
    header[0] = tag;
    header[1..].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    out.write_all(&header)?;
    out.write_all(payload)
}

/// What [`read_frame`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Incoming {
    /// A whole frame: its tag and payload.
    Frame(u8, Vec<u8>),
    /// The other side closed the pipe between two frames.
    End,
    /// A frame announced more bytes than allowed (nothing more was read).
    TooLarge(u64),
    /// A header with a tag not in the expected ones: bytes that are no frame (the header as read).
    NoFrame(Vec<u8>),
}

/// Reads one frame of at most `max` payload bytes whose tag is one of `tags`. The end of the pipe
/// in the middle of a frame is an `UnexpectedEof` error.
pub(crate) fn read_frame(input: &mut dyn Read, max: u64, tags: &[u8]) -> io::Result<Incoming> {
    let mut header = [0u8; HEADER];
    let mut got = 0;
    while got < HEADER {
        match input.read(&mut header[got..]) {
            Ok(0) if got == 0 => return Ok(Incoming::End),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if !tags.contains(&header[0]) {
        return Ok(Incoming::NoFrame(header.to_vec()));
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&header[1..]);
    let len = u64::from_le_bytes(len);
    if len > max {
        return Ok(Incoming::TooLarge(len));
    }
    // Grown as the bytes come, not sized by the announced length.
    let mut payload = Vec::with_capacity(len.min(1 << 16) as usize);
    input.take(len).read_to_end(&mut payload)?;
    if payload.len() as u64 != len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(Incoming::Frame(header[0], payload))
}

/// A fault as a frame payload: a kind byte, then its words or number.
pub(crate) fn encode_fault(fault: &Fault) -> Vec<u8> {
    let (kind, rest): (u8, &[u8]) = match fault {
        Fault::NotLoadable(reason) => (b'L', reason.as_bytes()),
        Fault::MissingEntry => (b'E', &[]),
        Fault::NoTable => (b'T', &[]),
        Fault::AbiMismatch(found) => return [&[b'A'][..], &found.to_le_bytes()].concat(),
        Fault::NullFunction(field) => (b'N', field.as_bytes()),
        Fault::Panicked(message) => (b'P', message.as_bytes()),
        Fault::UnknownStatus(status) => return [&[b'S'][..], &status.to_le_bytes()].concat(),
    };
    [&[kind][..], rest].concat()
}

/// The fault in a payload, or `None` when the bytes are no fault.
pub(crate) fn decode_fault(bytes: &[u8]) -> Option<Fault> {
    let (&kind, rest) = bytes.split_first()?;
    let text = || String::from_utf8(rest.to_vec()).ok();
    let number = || Some(u32::from_le_bytes(rest.try_into().ok()?));
    Some(match kind {
        b'L' => Fault::NotLoadable(text()?),
        b'E' if rest.is_empty() => Fault::MissingEntry,
        b'T' if rest.is_empty() => Fault::NoTable,
        b'A' => Fault::AbiMismatch(number()?),
        b'N' => Fault::NullFunction(text()?),
        b'P' => Fault::Panicked(text()?),
        b'S' => Fault::UnknownStatus(number()?),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_faults_read_back() {
        let mut pipe = GREETING.to_vec();
        write_frame(&mut pipe, REPLY, b"pipeweave-plugin-protocol 1\n").unwrap();
        write_frame(&mut pipe, FAULT, &encode_fault(&Fault::AbiMismatch(7))).unwrap();
        let mut input = &pipe[GREETING.len()..];
        assert_eq!(
            read_frame(&mut input, 100, REPLY_TAGS).unwrap(),
            Incoming::Frame(REPLY, b"pipeweave-plugin-protocol 1\n".to_vec())
        );
        let Incoming::Frame(FAULT, fault) = read_frame(&mut input, 100, REPLY_TAGS).unwrap() else {
            panic!("a fault frame")
        };
        assert_eq!(decode_fault(&fault), Some(Fault::AbiMismatch(7)));
        assert_eq!(
            read_frame(&mut input, 100, REPLY_TAGS).unwrap(),
            Incoming::End
        );
        for fault in [
            Fault::NotLoadable("file too short".into()),
            Fault::MissingEntry,
            Fault::NoTable,
            Fault::NullFunction("generate".into()),
            Fault::Panicked("oops".into()),
            Fault::UnknownStatus(9),
        ] {
            assert_eq!(decode_fault(&encode_fault(&fault)), Some(fault));
        }
    }

    /// The frames carry the protocol's version 2 as they carry version 1: a plugin's metadata with
    /// a `choice` parameter crosses the pipe and is read by the host, and a request that sets an
    /// option is written in version 2 and read back by the plugin's side.
    #[test]
    fn version_2_messages_cross_the_pipe() {
        use pipeweave_plugin_api::protocol::{
            Metadata, ParamSpec, Value, decode_request, encode_metadata, encode_request,
        };
        let meta = Metadata {
            name: "joined".into(),
            version: "1".into(),
            description: "d".into(),
            requires: String::new(),
            params: vec![
                ParamSpec::choice(
                    "joints",
                    &["direct", "doubling", "halving"],
                    "direct",
                    "how",
                ),
                ParamSpec::bool("overlap", true, ""),
            ],
        };
        let path = std::path::Path::new("libjoined.so");
        let mut pipe = Vec::new();
        write_frame(&mut pipe, METADATA, &encode_metadata(&meta)).unwrap();
        let Incoming::Frame(METADATA, bytes) =
            read_frame(&mut &pipe[..], 1 << 20, REPLY_TAGS).unwrap()
        else {
            panic!("a metadata frame")
        };
        assert!(bytes.starts_with(b"pipeweave-plugin-protocol 2\n"));
        let read = crate::reply::metadata(path, &bytes).unwrap();
        assert_eq!(read, meta);
        let settings = [("joints".to_owned(), "halving".to_owned())];
        let request = crate::reply::request(path, &read, 4, 8, &settings).unwrap();
        let mut pipe = Vec::new();
        write_frame(&mut pipe, GENERATE, &encode_request(&request)).unwrap();
        let Incoming::Frame(GENERATE, bytes) =
            read_frame(&mut &pipe[..], MAX_REQUEST, &[GENERATE]).unwrap()
        else {
            panic!("a request frame")
        };
        assert!(bytes.starts_with(b"pipeweave-plugin-protocol 2\n"));
        let served = decode_request(&bytes).unwrap();
        assert_eq!(
            served.value("joints"),
            Some(&Value::Choice("halving".into()))
        );
        assert_eq!(served.value("overlap"), Some(&Value::Bool(true)));
        let wrong = [("joints".to_owned(), "sideways".to_owned())];
        assert!(crate::reply::request(path, &read, 4, 8, &wrong).is_err());
    }

    #[test]
    fn lengths_are_bounded_and_cut_frames_are_errors() {
        let mut pipe = Vec::new();
        write_frame(&mut pipe, REPLY, &[0; 64]).unwrap();
        assert_eq!(
            read_frame(&mut &pipe[..], 63, REPLY_TAGS).unwrap(),
            Incoming::TooLarge(64)
        );
        for cut in [1, 8, 9, 40] {
            let e = read_frame(&mut &pipe[..cut], 64, REPLY_TAGS).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "cut at {cut}");
        }
        // A length past what memory could hold is refused before anything is allocated.
        let mut huge = vec![REPLY];
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            read_frame(&mut &huge[..], 1 << 20, REPLY_TAGS).unwrap(),
            Incoming::TooLarge(u64::MAX)
        );
        // Text is no frame, whatever length its bytes would make.
        assert_eq!(
            read_frame(&mut &b"garbage that is no frame"[..], 1 << 20, REPLY_TAGS).unwrap(),
            Incoming::NoFrame(b"garbage t".to_vec())
        );
        assert_eq!(
            read_frame(&mut &pipe[..], 64, &[GENERATE]).unwrap(),
            Incoming::NoFrame(pipe[..9].to_vec())
        );
        for bytes in [&b""[..], b"X", b"A\x01\x02", b"E!", b"L\xff"] {
            assert_eq!(decode_fault(bytes), None, "{bytes:?}");
        }
    }
}
