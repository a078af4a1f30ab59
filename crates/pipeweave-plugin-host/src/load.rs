//! Loading a plugin library and calling it: the only `unsafe` for loading in pipeweave.
//!
//! Order of checks, each stopping with an error naming the file: the library loads; it exports
//! the entry point; the entry table's first field is our ABI version (read before any other
//! field); its metadata decodes. Every later call catches the plugin's panics on its side (the
//! export macro does) and reports them here as [`PluginError::Panicked`].
#![allow(unsafe_code)]

use crate::PluginError;
use pipeweave_plan::Plan;
use pipeweave_plugin_api::abi::{ABI_VERSION, Buffer, ENTRY_SYMBOL, EntryFn, PluginEntry, Status};
use pipeweave_plugin_api::protocol::{self, Metadata, Request, Response};
use std::path::{Path, PathBuf};

/// A loaded plugin. The library stays loaded for the life of the process.
#[derive(Debug, Clone)]
pub struct Plugin {
    path: PathBuf,
    table: PluginEntry,
    metadata: Metadata,
}

impl Plugin {
    /// Loads the library at `path` and reads its metadata.
    pub fn load(path: &Path) -> Result<Plugin, PluginError> {
        let path = path.to_path_buf();
        // SAFETY: loading runs the library's initialisers. We accept that risk for files the user
        // pointed us to (by name on the search path or by path); it is what loading a plugin is.
        let library =
            unsafe { libloading::Library::new(&path) }.map_err(|e| PluginError::NotLoadable {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        // Never unloaded: leak the handle so the code behind every pointer below stays mapped.
        let library: &'static libloading::Library = Box::leak(Box::new(library));
        // SAFETY: the symbol is declared by the ABI as `EntryFn`; a library exporting the name with
        // another type breaks the plugin contract, which we cannot detect.
        let entry: EntryFn = match unsafe { library.get::<EntryFn>(ENTRY_SYMBOL.as_bytes()) } {
            Ok(symbol) => *symbol,
            Err(_) => {
                return Err(PluginError::MissingEntry {
                    path,
                    symbol: ENTRY_SYMBOL,
                });
            }
        };
        // SAFETY: the entry point takes nothing and returns a pointer to a static table.
        let table_ptr = unsafe { entry() };
        if table_ptr.is_null() {
            return Err(PluginError::Malformed {
                path,
                detail: "the entry point returned no table".to_owned(),
            });
        }
        // SAFETY: every ABI version starts the table with the `u32` version; read only that first.
        let found = unsafe { table_ptr.cast::<u32>().read() };
        if found != ABI_VERSION {
            return Err(PluginError::AbiMismatch {
                path,
                found,
                expected: ABI_VERSION,
            });
        }
        // SAFETY: same version, so the table has the layout of `PluginEntry`.
        let table = unsafe { table_ptr.read() };
        let bytes = call(&path, &table, "describing itself", |out| {
            // SAFETY: `out` points to a live `Buffer`, as `metadata` requires.
            unsafe { (table.metadata)(out) }
        })?;
        let metadata = protocol::decode_metadata(&bytes).map_err(|e| PluginError::Malformed {
            path: path.clone(),
            detail: format!("its metadata: {e}"),
        })?;
        if !crate::is_plugin_name(&metadata.name) {
            return Err(PluginError::Malformed {
                path,
                detail: format!(
                    "it calls itself `{}`, which is not a plugin name",
                    metadata.name
                ),
            });
        }
        Ok(Plugin {
            path,
            table,
            metadata,
        })
    }

    /// The library file the plugin was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the plugin said about itself when it was loaded.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// A request with the user's `--set NAME=VALUE` settings checked against the declared
    /// parameters and every other parameter at its default.
    pub fn request(
        &self,
        ranks: u32,
        microbatches: u32,
        settings: &[(String, String)],
    ) -> Result<Request, PluginError> {
        let bad = |message: String| PluginError::BadSetting {
            path: self.path.clone(),
            name: self.metadata.name.clone(),
            message,
        };
        for (i, (name, _)) in settings.iter().enumerate() {
            if self.metadata.param(name).is_none() {
                let known: Vec<&str> = self
                    .metadata
                    .params
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect();
                let hint = if known.is_empty() {
                    "it takes no parameters".to_owned()
                } else {
                    format!("its parameters: {}", known.join(", "))
                };
                return Err(bad(format!("no parameter `{name}` ({hint})")));
            }
            if settings[..i].iter().any(|(n, _)| n == name) {
                return Err(bad(format!("parameter `{name}` is set twice")));
            }
        }
        let mut params = Vec::with_capacity(self.metadata.params.len());
        for spec in &self.metadata.params {
            let value = match settings.iter().find(|(n, _)| *n == spec.name) {
                Some((_, text)) => spec.parse(text).map_err(bad)?,
                None => spec.default_value(),
            };
            params.push((spec.name.clone(), value));
        }
        Ok(Request {
            ranks,
            microbatches,
            params,
        })
    }

    /// Asks the plugin for a plan and returns it only once it is structurally sound and valid.
    pub fn generate(&self, request: &Request) -> Result<Plan, PluginError> {
        let bytes = protocol::encode_request(request);
        let table = self.table;
        let reply = call(&self.path, &table, "building a plan", |out| {
            // SAFETY: `bytes` outlives the call and `out` points to a live `Buffer`.
            unsafe { (table.generate)(bytes.as_ptr(), bytes.len(), out) }
        })?;
        let malformed = |detail: String| PluginError::Malformed {
            path: self.path.clone(),
            detail,
        };
        let message =
            match protocol::decode_response(&reply).map_err(|e| malformed(e.to_string()))? {
                Response::Error(message) => {
                    return Err(PluginError::Refused {
                        path: self.path.clone(),
                        name: self.metadata.name.clone(),
                        message,
                    });
                }
                Response::Plan(message) => message,
            };
        let plan = message
            .into_plan()
            .map_err(|e| malformed(format!("an impossible plan: {e}")))?;
        let problems = pipeweave_check::problems(&plan);
        if !problems.is_empty() {
            return Err(PluginError::InvalidPlan {
                path: self.path.clone(),
                problems,
            });
        }
        Ok(plan)
    }
}

/// Calls one plugin function with an output buffer, copies the reply and frees the buffer on the
/// plugin's side.
fn call(
    path: &Path,
    table: &PluginEntry,
    during: &'static str,
    f: impl FnOnce(*mut Buffer) -> Status,
) -> Result<Vec<u8>, PluginError> {
    let mut buffer = Buffer::EMPTY;
    let status = f(&mut buffer);
    let bytes = if buffer.ptr.is_null() || buffer.len == 0 || buffer.len > isize::MAX as usize {
        Vec::new()
    } else {
        // SAFETY: the plugin hands over `len` initialised bytes at `ptr`, valid until freed below.
        unsafe { std::slice::from_raw_parts(buffer.ptr, buffer.len) }.to_vec()
    };
    // SAFETY: the buffer came from this plugin and is returned exactly once.
    unsafe { (table.free_buffer)(buffer) };
    match status {
        Status::OK => Ok(bytes),
        Status::PANIC => Err(PluginError::Panicked {
            path: path.to_path_buf(),
            during,
            message: String::from_utf8_lossy(&bytes).into_owned(),
        }),
        Status(other) => Err(PluginError::Malformed {
            path: path.to_path_buf(),
            detail: format!("unknown status {other} while {during}"),
        }),
    }
}
