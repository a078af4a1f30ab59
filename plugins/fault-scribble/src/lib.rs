//! Test fixture: describes itself normally, then, asked for a plan, writes garbage on every open
//! file descriptor from 3 up (the worker's private pipe among them) and answers nothing. The host
//! must turn what arrives into a clean error naming this file.
#![allow(unsafe_code)]

use pipeweave_plugin_api::{Generator, Metadata, Request};
use std::io::Write;
use std::os::fd::FromRawFd;

struct Scribbles;

impl Generator for Scribbles {
    fn metadata() -> Metadata {
        Metadata {
            name: "fault-scribble".into(),
            version: "0.0.0".into(),
            description: "test fixture: writes garbage on every descriptor".into(),
            requires: String::new(),
            params: Vec::new(),
        }
    }

    fn generate(_request: &Request) -> Result<pipeweave_plan::Plan, String> {
        for fd in 3..1024 {
            // SAFETY: none; borrowing descriptors this code does not own is the fault. The file is
            // forgotten, never closed.
            let mut file = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
            let _ = file.write_all(b"garbage that is no frame\n");
        }
        std::thread::sleep(std::time::Duration::from_secs(60));
        Err("unreachable: the host stops this process first".into())
    }
}

pipeweave_plugin_api::export_plugin!(Scribbles);
