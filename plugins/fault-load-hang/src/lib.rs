//! Test fixture: a library whose initialiser, run by the dynamic loader as it opens the file,
//! never returns. The host must stop loading it at its time limit, naming this file.
#![allow(unsafe_code)]

extern "C" fn never_returns() {
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = never_returns;
