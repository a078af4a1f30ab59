//! Test fixture: a plugin table that claims a future ABI version. The host must stop after reading
//! the version and call nothing else; the functions below say so if it does not.
#![allow(unsafe_code)]

use pipeweave_plugin_api::abi::{ABI_VERSION, Buffer, PluginEntry, Status};

unsafe extern "C" fn metadata(_out: *mut Buffer) -> Status {
    Status::NULL_OUTPUT
}

unsafe extern "C" fn generate(_request: *const u8, _len: usize, _out: *mut Buffer) -> Status {
    Status::NULL_OUTPUT
}

unsafe extern "C" fn free_buffer(_buffer: Buffer) {}

static ENTRY: PluginEntry = PluginEntry {
    abi_version: ABI_VERSION + 1000,
    metadata,
    generate,
    free_buffer,
};

#[unsafe(no_mangle)]
pub extern "C" fn pipeweave_plugin_entry() -> *const PluginEntry {
    &ENTRY
}
