//! The C ABI between the host and a plugin: one entry point, a table of `extern "C"` functions and
//! byte buffers. Nothing but `#[repr(C)]` data and C function pointers crosses the boundary.
//!
//! A plugin exports one symbol, [`ENTRY_SYMBOL`], a function returning a pointer to a static
//! [`PluginEntry`]. The first field of that table is [`PluginEntry::abi_version`], and it stays the
//! first field in every future version: the host reads it, and only it, before anything else, and
//! stops when it differs from [`ABI_VERSION`].
//!
//! Memory: every [`Buffer`] a plugin returns was allocated by the plugin and goes back to it through
//! [`PluginEntry::free_buffer`]; request bytes are allocated by the host and only borrowed by the
//! plugin for the duration of the call.

/// The version of this ABI (the entry table's layout and the meaning of its functions).
pub const ABI_VERSION: u32 = 1;

/// The name of the one symbol a plugin exports (a `extern "C" fn() -> *const PluginEntry`).
pub const ENTRY_SYMBOL: &str = "pipeweave_plugin_entry";

/// The type of the entry point.
pub type EntryFn = unsafe extern "C" fn() -> *const PluginEntry;

/// Bytes allocated by the plugin and handed to the host, which must give them back through
/// [`PluginEntry::free_buffer`] unchanged.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Buffer {
    /// The first byte (null for the empty buffer).
    pub ptr: *mut u8,
    /// How many bytes are filled.
    pub len: usize,
    /// How many bytes the plugin allocated (what it needs to free them).
    pub capacity: usize,
}

impl Buffer {
    /// The empty buffer (owns nothing; freeing it is a no-op).
    pub const EMPTY: Buffer = Buffer {
        ptr: std::ptr::null_mut(),
        len: 0,
        capacity: 0,
    };
}

/// The outcome of a call into the plugin.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status(pub u32);

impl Status {
    /// The call completed; the output buffer holds a protocol message (which may itself be an
    /// error reply).
    pub const OK: Status = Status(0);
    /// The plugin panicked; the output buffer holds the panic message as UTF-8 text.
    pub const PANIC: Status = Status(1);
    /// The host passed a null output pointer; nothing was written.
    pub const NULL_OUTPUT: Status = Status(2);
}

/// The table of functions a plugin provides. `abi_version` must stay the first field forever.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PluginEntry {
    /// Must equal [`ABI_VERSION`]; the host checks it before it reads any other field.
    pub abi_version: u32,
    /// Writes the plugin's metadata (a protocol `metadata` message) to `out`.
    pub metadata: unsafe extern "C" fn(out: *mut Buffer) -> Status,
    /// Reads a protocol `request` message from `request[..len]` and writes a `plan` or `error`
    /// message to `out`.
    pub generate: unsafe extern "C" fn(request: *const u8, len: usize, out: *mut Buffer) -> Status,
    /// Frees a buffer this plugin returned.
    pub free_buffer: unsafe extern "C" fn(buffer: Buffer),
}
