//! Test fixture: a loadable library that exports a function, but not the plugin entry point.
#![allow(unsafe_code)]

#[unsafe(no_mangle)]
pub extern "C" fn pipeweave_fixture_something_else() -> u32 {
    7
}
