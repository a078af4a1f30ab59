//! Test fixture: describes itself normally, then answers a request with 257 MiB of zeros, more than
//! the host's default bound on a reply (256 MiB). The host must stop it without reading the
//! reply, naming this file. (The zeros are mapped lazily: the fixture itself costs little.)

use pipeweave_plugin_api::abi::{ABI_VERSION, Buffer, PluginEntry, Status};
use pipeweave_plugin_api::{Generator, Metadata, Request, ffi};

struct Huge;

impl Generator for Huge {
    fn metadata() -> Metadata {
        Metadata {
            name: "fault-huge".into(),
            version: "0.0.0".into(),
            description: "test fixture: answers with 257 MiB".into(),
            requires: String::new(),
            params: Vec::new(),
        }
    }

    fn generate(_request: &Request) -> Result<pipeweave_plan::Plan, String> {
        Err("unused: the raw entry point below answers instead".into())
    }
}

#[allow(unsafe_code)]
unsafe extern "C" fn metadata(out: *mut Buffer) -> Status {
    // SAFETY: the host passes a writable `Buffer`.
    unsafe { ffi::metadata::<Huge>(out) }
}

#[allow(unsafe_code)]
unsafe extern "C" fn generate(_request: *const u8, _len: usize, out: *mut Buffer) -> Status {
    // SAFETY: the host passes a writable `Buffer`.
    unsafe { ffi::guarded(out, || vec![0; 257 << 20]) }
}

#[allow(unsafe_code)]
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

#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn pipeweave_plugin_entry() -> *const PluginEntry {
    &ENTRY
}
