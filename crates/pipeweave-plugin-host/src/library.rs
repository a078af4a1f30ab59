//! A plugin library in this process: loading it and calling its entry table. The only `unsafe` for
//! loading in pipeweave; every call gives the plugin's raw reply bytes or a [`Fault`].
//!
//! Order of checks, each stopping with a fault: the library loads (every symbol bound at once, so
//! a missing one is a load error with the loader's words); it exports the entry point, which is not
//! null; the entry point returns a table; the table's first field is our ABI version (read before
//! any other field); no function pointer of the table is null. Only then is anything called.
//! The plugin catches its own panics (the export macro does) and reports them as
//! [`Fault::Panicked`]; a crash or a hang here takes this process with it, which is why the
//! command line calls plugins in a worker process ([`crate::Worker`]).
#![allow(unsafe_code)]

use pipeweave_plugin_api::abi::{ABI_VERSION, Buffer, ENTRY_SYMBOL, EntryFn, PluginEntry, Status};
use std::mem::{align_of, offset_of, size_of};
use std::path::Path;

type MetadataFn = unsafe extern "C" fn(out: *mut Buffer) -> Status;
type GenerateFn = unsafe extern "C" fn(request: *const u8, len: usize, out: *mut Buffer) -> Status;
type FreeFn = unsafe extern "C" fn(buffer: Buffer);

/// [`PluginEntry`] as a plugin may really hand it over: any function pointer may be null. Reading
/// a table with a null pointer as a `PluginEntry` would already be undefined behaviour, so the
/// table is read as this mirror and checked field by field.
#[repr(C)]
struct RawEntry {
    abi_version: u32,
    metadata: Option<MetadataFn>,
    generate: Option<GenerateFn>,
    free_buffer: Option<FreeFn>,
}

// The mirror has the ABI table's layout, field by field.
const _: () = {
    assert!(size_of::<RawEntry>() == size_of::<PluginEntry>());
    assert!(align_of::<RawEntry>() == align_of::<PluginEntry>());
    assert!(offset_of!(RawEntry, abi_version) == offset_of!(PluginEntry, abi_version));
    assert!(offset_of!(RawEntry, metadata) == offset_of!(PluginEntry, metadata));
    assert!(offset_of!(RawEntry, generate) == offset_of!(PluginEntry, generate));
    assert!(offset_of!(RawEntry, free_buffer) == offset_of!(PluginEntry, free_buffer));
};

/// What went wrong inside the library, without the file's name (the caller knows it): loading and
/// calling give these, and the worker sends them over its pipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The dynamic loader refused the file; its words.
    NotLoadable(String),
    /// No entry point symbol, or a null one.
    MissingEntry,
    /// The entry point returned a null table.
    NoTable,
    /// The table's ABI version.
    AbiMismatch(u32),
    /// The name of a null field of the table.
    NullFunction(String),
    /// The plugin panicked (caught on its side); the panic message.
    Panicked(String),
    /// A status the ABI does not define.
    UnknownStatus(u32),
}

impl Fault {
    /// The error for the plugin at `path`, `during` naming the call (for panics and statuses).
    pub(crate) fn into_error(self, path: &Path, during: &'static str) -> crate::PluginError {
        use crate::PluginError as E;
        let path = path.to_path_buf();
        match self {
            Fault::NotLoadable(reason) => E::NotLoadable { path, reason },
            Fault::MissingEntry => E::MissingEntry {
                path,
                symbol: ENTRY_SYMBOL,
            },
            Fault::NoTable => E::Malformed {
                path,
                detail: "the entry point returned no table".to_owned(),
            },
            Fault::AbiMismatch(found) => E::AbiMismatch {
                path,
                found,
                expected: ABI_VERSION,
            },
            Fault::NullFunction(field) => E::NullFunction { path, field },
            Fault::Panicked(message) => E::Panicked {
                path,
                during,
                message,
            },
            Fault::UnknownStatus(status) => E::Malformed {
                path,
                detail: format!("unknown status {status} while {during}"),
            },
        }
    }
}

/// A loaded plugin library: its checked entry table. The library is never unloaded (a `dlclose`
/// can run thread-local destructors of code that is gone), so the pointers stay valid for the
/// rest of the process.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Library {
    metadata: MetadataFn,
    generate: GenerateFn,
    free_buffer: FreeFn,
}

impl Library {
    /// Loads the library at `path` (made absolute first: a name without a `/` would make the
    /// dynamic loader search `LD_LIBRARY_PATH` and its own folders) and checks its entry table.
    pub(crate) fn open(path: &Path) -> Result<Library, Fault> {
        let path = std::path::absolute(path).map_err(|e| Fault::NotLoadable(e.to_string()))?;
        let library =
            open_library(&path).map_err(|e| Fault::NotLoadable(loader_words(&e, &path)))?;
        // Never unloaded: leak the handle so the code behind every pointer below stays mapped.
        let library: &'static libloading::Library = Box::leak(Box::new(library));
        // SAFETY: the symbol is declared by the ABI as `EntryFn` (read as nullable); a library
        // exporting the name with another type breaks the plugin contract, which we cannot detect.
        let entry = unsafe { library.get::<Option<EntryFn>>(ENTRY_SYMBOL.as_bytes()) };
        let Ok(Some(entry)) = entry.as_deref().copied() else {
            return Err(Fault::MissingEntry);
        };
        // SAFETY: the entry point takes nothing and returns a pointer to a static table.
        let table = unsafe { entry() }.cast::<RawEntry>();
        if table.is_null() {
            return Err(Fault::NoTable);
        }
        // SAFETY: every ABI version starts the table with the `u32` version; read only that first
        // (unaligned: nothing but the contract says the pointer is aligned).
        let found = unsafe { table.cast::<u32>().read_unaligned() };
        if found != ABI_VERSION {
            return Err(Fault::AbiMismatch(found));
        }
        // SAFETY: same version, so the table has the layout of `PluginEntry`, which `RawEntry`
        // mirrors with every pointer nullable.
        let raw = unsafe { table.read_unaligned() };
        let null = |field: &str| Fault::NullFunction(field.to_owned());
        Ok(Library {
            metadata: raw.metadata.ok_or_else(|| null("metadata"))?,
            generate: raw.generate.ok_or_else(|| null("generate"))?,
            free_buffer: raw.free_buffer.ok_or_else(|| null("free_buffer"))?,
        })
    }

    /// Asks for the plugin's metadata; `use_bytes` sees the reply before it is freed.
    pub(crate) fn metadata<T>(&self, use_bytes: impl FnOnce(&[u8]) -> T) -> Result<T, Fault> {
        let f = self.metadata;
        // SAFETY: `out` points to a live `Buffer`, as `metadata` requires.
        self.call(|out| unsafe { f(out) }, use_bytes)
    }

    /// Asks for a plan; `request` is a protocol request message, `use_bytes` sees the reply
    /// before it is freed.
    pub(crate) fn generate<T>(
        &self,
        request: &[u8],
        use_bytes: impl FnOnce(&[u8]) -> T,
    ) -> Result<T, Fault> {
        let f = self.generate;
        // SAFETY: `request` outlives the call and `out` points to a live `Buffer`.
        self.call(
            |out| unsafe { f(request.as_ptr(), request.len(), out) },
            use_bytes,
        )
    }

    /// Calls one plugin function with an output buffer, shows the reply to `use_bytes` and frees
    /// the buffer on the plugin's side.
    fn call<T>(
        &self,
        f: impl FnOnce(*mut Buffer) -> Status,
        use_bytes: impl FnOnce(&[u8]) -> T,
    ) -> Result<T, Fault> {
        let mut buffer = Buffer::EMPTY;
        let status = f(&mut buffer);
        let bytes: &[u8] =
            if buffer.ptr.is_null() || buffer.len == 0 || buffer.len > isize::MAX as usize {
                &[]
            } else {
                // SAFETY: the plugin hands over `len` initialised bytes at `ptr`, valid until
                // freed below; the slice does not outlive this function.
                unsafe { std::slice::from_raw_parts(buffer.ptr, buffer.len) }
            };
        let result = match status {
            Status::OK => Ok(use_bytes(bytes)),
            Status::PANIC => Err(Fault::Panicked(String::from_utf8_lossy(bytes).into_owned())),
            Status(other) => Err(Fault::UnknownStatus(other)),
        };
        let free = self.free_buffer;
        // SAFETY: the buffer came from this plugin and is returned exactly once.
        unsafe { free(buffer) };
        result
    }
}

/// Opens the library with every symbol bound now (`RTLD_NOW`): a library that needs a symbol
/// nobody provides is refused here, in the loader's words, instead of failing at its first call.
#[cfg(unix)]
fn open_library(path: &Path) -> Result<libloading::Library, libloading::Error> {
    use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
    // SAFETY: loading runs the library's initialisers. We accept that risk for files the user
    // pointed us to (by name on the search path or by path); it is what loading a plugin is.
    unsafe { Library::open(Some(path), RTLD_NOW | RTLD_LOCAL) }.map(Into::into)
}

#[cfg(not(unix))]
fn open_library(path: &Path) -> Result<libloading::Library, libloading::Error> {
    // SAFETY: as above: loading runs the library's initialisers.
    unsafe { libloading::Library::new(path) }
}

/// The loader's own words for a failure (`dlerror`'s text, which libloading keeps as the error's
/// source), without the file name it starts with (the caller names the file).
fn loader_words(e: &libloading::Error, path: &Path) -> String {
    let mut words = e.to_string();
    if let Some(source) = std::error::Error::source(e) {
        let source = source.to_string();
        let prefix = format!("{}: ", path.display());
        words = source.strip_prefix(&prefix).unwrap_or(&source).to_owned();
    }
    words
}
