//! Test fixture: describes itself normally, then answers a request with bytes that are not a
//! protocol message. Written against the raw ABI, without the export macro.
#![allow(unsafe_code)]

use pipeweave_plugin_api::abi::{ABI_VERSION, Buffer, PluginEntry, Status};
use pipeweave_plugin_api::{Generator, Metadata, Request, ffi};

struct Garbage;

impl Generator for Garbage {
    fn metadata() -> Metadata {
        Metadata {
            name: "fault-garbage".into(),
            version: "0.0.0".into(),
            description: "test fixture: answers with garbage".into(),
            requires: String::new(),
            params: Vec::new(),
        }
    }

    fn generate(_request: &Request) -> Result<pipeweave_plan::Plan, String> {
        Err("unused: the raw entry point below answers instead".into())
    }
}

unsafe extern "C" fn metadata(out: *mut Buffer) -> Status {
    // SAFETY: the host passes a writable `Buffer`.
    unsafe { ffi::metadata::<Garbage>(out) }
}

unsafe extern "C" fn generate(_request: *const u8, _len: usize, out: *mut Buffer) -> Status {
    // SAFETY: the host passes a writable `Buffer`.
    unsafe { ffi::guarded(out, || b"\x89PNG\r\n\x1a\n not a plan \xff".to_vec()) }
}

unsafe extern "C" fn free_buffer(buffer: Buffer) {
    // SAFETY: the host returns only buffers `ffi::guarded` made, once each.
    unsafe { ffi::free_buffer(buffer) }
}

static ENTRY: PluginEntry = PluginEntry {
    abi_version: ABI_VERSION,
    metadata,
    generate,
    free_buffer,
};

#[unsafe(no_mangle)]
pub extern "C" fn pipeweave_plugin_entry() -> *const PluginEntry {
    &ENTRY
}
