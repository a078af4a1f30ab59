//! Test fixture: describes itself normally, then writes through a pointer to an unmapped page
//! when asked for a plan: a segmentation fault, on purpose (this crate's `unsafe` is the fault).
//! The host must report it as an error naming this file.
#![allow(unsafe_code)]

use pipeweave_plugin_api::{Generator, Metadata, Request};

struct Segfaults;

impl Generator for Segfaults {
    fn metadata() -> Metadata {
        Metadata {
            name: "fault-segfault".into(),
            version: "0.0.0".into(),
            description: "test fixture: a bad memory access while building a plan".into(),
            requires: String::new(),
            params: Vec::new(),
        }
    }

    fn generate(_request: &Request) -> Result<pipeweave_plan::Plan, String> {
        // Address 1: non-null and aligned (so no debug check stops it first), never mapped.
        let bad = std::ptr::NonNull::<u8>::dangling().as_ptr();
        // SAFETY: none; this is the fault the fixture exists for.
        unsafe { bad.write_volatile(1) };
        Err("unreachable: the write above kills the process".into())
    }
}

pipeweave_plugin_api::export_plugin!(Segfaults);
