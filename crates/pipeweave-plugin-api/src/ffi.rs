//! The plugin side of the ABI: the bodies behind the functions [`crate::export_plugin!`] exports.
//!
//! Every function here is an entry point called from the host through C: each one catches panics,
//! because unwinding out of an `extern "C"` function aborts the whole process. This module is the
//! only place in the crate that touches raw pointers.
#![allow(unsafe_code)]

use crate::Generator;
use crate::abi::{Buffer, Status};
use crate::protocol::{self, PlanMessage, Response};
use std::any::Any;
use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// Where the last panic on this thread happened, recorded by the quiet hook below.
    static PANIC_LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

static QUIET_HOOK: Once = Once::new();

/// Replaces the panic hook of the plugin's own copy of the standard library (a `cdylib` links its
/// own) so that a panic is reported once, as the host's error, instead of also being printed here.
fn install_quiet_hook() {
    QUIET_HOOK.call_once(|| {
        panic::set_hook(Box::new(|info| {
            let location = info
                .location()
                .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
            PANIC_LOCATION.with(|slot| *slot.borrow_mut() = location);
        }));
    });
}

fn panic_text(payload: &(dyn Any + Send)) -> String {
    let message = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    };
    match PANIC_LOCATION.with(|slot| slot.borrow_mut().take()) {
        Some(at) => format!("{message} (at {at})"),
        None => message,
    }
}

fn into_buffer(bytes: Vec<u8>) -> Buffer {
    let mut bytes = std::mem::ManuallyDrop::new(bytes);
    Buffer {
        ptr: bytes.as_mut_ptr(),
        len: bytes.len(),
        capacity: bytes.capacity(),
    }
}

/// Runs `body`, writing its bytes (or the panic message) to `out`: the shared body of every entry
/// point. Public for hand-written plugins (such as the fault fixtures) that skip the macro.
///
/// # Safety
/// `out` must be null or point to a `Buffer` writable for the call.
pub unsafe fn guarded(out: *mut Buffer, body: impl FnOnce() -> Vec<u8>) -> Status {
    if out.is_null() {
        return Status::NULL_OUTPUT;
    }
    install_quiet_hook();
    let (status, bytes) = match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(bytes) => (Status::OK, bytes),
        Err(payload) => {
            let text = panic_text(&*payload);
            // Dropping a payload runs foreign code that may panic again; never let that escape.
            let _ = panic::catch_unwind(AssertUnwindSafe(move || drop(payload)));
            (Status::PANIC, text.into_bytes())
        }
    };
    // SAFETY: `out` is non-null and the caller guarantees it points to a writable `Buffer`.
    unsafe { out.write(into_buffer(bytes)) };
    status
}

/// The body of the exported `metadata` function.
///
/// # Safety
/// `out` must be null or point to a `Buffer` writable for the call.
pub unsafe fn metadata<G: Generator>(out: *mut Buffer) -> Status {
    // SAFETY: passed on from the caller.
    unsafe { guarded(out, || protocol::encode_metadata(&G::metadata())) }
}

/// The body of the exported `generate` function.
///
/// # Safety
/// `request` must point to `len` readable bytes (or be null with `len == 0`) for the whole call,
/// and `out` must be null or point to a `Buffer` writable for the call.
pub unsafe fn generate<G: Generator>(request: *const u8, len: usize, out: *mut Buffer) -> Status {
    let bytes: &[u8] = if request.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: the caller guarantees `len` readable bytes at `request` during this call.
        unsafe { std::slice::from_raw_parts(request, len) }
    };
    // SAFETY: `out` as the caller guarantees.
    unsafe {
        guarded(out, || {
            let response = match protocol::decode_request(bytes) {
                Ok(request) => match G::generate(&request) {
                    Ok(plan) => Response::Plan(PlanMessage::from_plan(&plan)),
                    Err(message) => Response::Error(message),
                },
                Err(e) => Response::Error(format!("the plugin could not read the request: {e}")),
            };
            protocol::encode_response(&response)
        })
    }
}

/// The body of the exported `free_buffer` function.
///
/// # Safety
/// `buffer` must have been returned by this plugin's `metadata` or `generate` and not freed yet.
pub unsafe fn free_buffer(buffer: Buffer) {
    if buffer.ptr.is_null() {
        return;
    }
    let _ = panic::catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the buffer came from `into_buffer` in this library (same allocator), unchanged.
        drop(unsafe { Vec::from_raw_parts(buffer.ptr, buffer.len, buffer.capacity) });
    }));
}
