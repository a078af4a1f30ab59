//! The C ABI, byte protocol and export macro for pipeweave schedule plugins: what a plugin author
//! depends on.
//!
//! A plugin is a `cdylib` that implements [`Generator`] and exports it with [`export_plugin!`]:
//!
//! ```text
//! pipeweave_plugin_api::export_plugin!(my_schedules::MySchedule);
//! ```
//!
//! Across the boundary travel only C data ([`abi`]) and text messages ([`protocol`]); the host
//! (`pipeweave-plugin-host`) checks the ABI version first, converts the reply into a
//! `pipeweave_plan::Plan` and validates it before anyone uses it. This crate does no loading.

#![warn(missing_docs)]

pub mod abi;
#[doc(hidden)]
pub mod ffi;
pub mod protocol;

pub use protocol::{IntRange, Metadata, ParamSpec, ParamType, Request, Value};

/// A schedule generator a plugin exports.
///
/// Both functions may panic: the exported entry points catch it and report it to the host.
pub trait Generator {
    /// The name, version, description and parameters of the schedule.
    fn metadata() -> Metadata;

    /// Builds the plan for a request, or says in plain words why it cannot.
    fn generate(request: &Request) -> Result<pipeweave_plan::Plan, String>;
}

/// Exports a [`Generator`] as a pipeweave plugin: the entry point `pipeweave_plugin_entry`
/// returning the ABI table, with panics caught in every function of it.
#[macro_export]
macro_rules! export_plugin {
    ($generator:ty) => {
        #[allow(unsafe_code)]
        unsafe extern "C" fn __pipeweave_metadata(
            out: *mut $crate::abi::Buffer,
        ) -> $crate::abi::Status {
            // SAFETY: the host passes a writable `Buffer` (or null, which is refused).
            unsafe { $crate::ffi::metadata::<$generator>(out) }
        }

        #[allow(unsafe_code)]
        unsafe extern "C" fn __pipeweave_generate(
            request: *const u8,
            len: usize,
            out: *mut $crate::abi::Buffer,
        ) -> $crate::abi::Status {
            // SAFETY: the host passes `len` readable bytes at `request` for the call.
            unsafe { $crate::ffi::generate::<$generator>(request, len, out) }
        }

        #[allow(unsafe_code)]
        unsafe extern "C" fn __pipeweave_free_buffer(buffer: $crate::abi::Buffer) {
            // SAFETY: the host returns only buffers this plugin gave it, once each.
            unsafe { $crate::ffi::free_buffer(buffer) }
        }

        static __PIPEWEAVE_ENTRY: $crate::abi::PluginEntry = $crate::abi::PluginEntry {
            abi_version: $crate::abi::ABI_VERSION,
            metadata: __pipeweave_metadata,
            generate: __pipeweave_generate,
            free_buffer: __pipeweave_free_buffer,
        };

        /// The plugin's one entry point (see `pipeweave_plugin_api::abi`); it cannot panic.
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        pub extern "C" fn pipeweave_plugin_entry() -> *const $crate::abi::PluginEntry {
            &__PIPEWEAVE_ENTRY
        }
    };
}

#[cfg(test)]
mod tests;
