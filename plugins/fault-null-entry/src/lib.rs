//! Test fixture: an entry table of the right ABI version whose `generate` pointer is null (as a
//! hand-written C plugin could have). The host must refuse it at load, naming the field, and call
//! nothing through the table.
#![allow(unsafe_code)]

use pipeweave_plugin_api::abi::{ABI_VERSION, Buffer, PluginEntry, Status};
use pipeweave_plugin_api::{Generator, Metadata, Request, ffi};

struct NullEntry;

impl Generator for NullEntry {
    fn metadata() -> Metadata {
        Metadata {
            name: "fault-null-entry".into(),
            version: "0.0.0".into(),
            description: "test fixture: a null generate pointer".into(),
            requires: String::new(),
            params: Vec::new(),
        }
    }

    fn generate(_request: &Request) -> Result<pipeweave_plan::Plan, String> {
        Err("unused: the table below has no generate".into())
    }
}

unsafe extern "C" fn metadata(out: *mut Buffer) -> Status {
    // SAFETY: the host passes a writable `Buffer`.
    unsafe { ffi::metadata::<NullEntry>(out) }
}

unsafe extern "C" fn free_buffer(buffer: Buffer) {
    // SAFETY: the host returns only buffers `ffi::metadata` made, once each.
    unsafe { ffi::free_buffer(buffer) }
}

/// `PluginEntry`'s layout with nullable pointers: what a C plugin can hand over.
#[repr(C)]
struct Table {
    abi_version: u32,
    metadata: Option<unsafe extern "C" fn(*mut Buffer) -> Status>,
    generate: Option<unsafe extern "C" fn(*const u8, usize, *mut Buffer) -> Status>,
    free_buffer: Option<unsafe extern "C" fn(Buffer)>,
}

static ENTRY: Table = Table {
    abi_version: ABI_VERSION,
    metadata: Some(metadata),
    generate: None,
    free_buffer: Some(free_buffer),
};

#[unsafe(no_mangle)]
pub extern "C" fn pipeweave_plugin_entry() -> *const PluginEntry {
    (&raw const ENTRY).cast()
}
