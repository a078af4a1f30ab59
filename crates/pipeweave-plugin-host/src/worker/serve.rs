//! The worker's side: load one plugin library and answer requests for it over a pipe, until the
//! host closes the pipe. Any program can be the worker by calling [`serve_stdio`] (the command
//! line does in its hidden `__plugin-worker` subcommand; a Python binding can from its own
//! module); [`serve`] is the same loop over any reader and writer.
#![allow(unsafe_code)]

use super::descendants;
use super::frame::{self, Incoming};
use crate::library::Library;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

/// Serves the plugin library at `path`: writes the greeting, loads the library and writes its
/// metadata (or the fault that stopped it), then answers every request frame read from `input`
/// until `input` ends. Returns an error only when the pipe itself fails.
///
/// The reply bytes are the plugin's, passed on unread: the host decodes them.
pub fn serve(path: &Path, input: &mut dyn Read, output: &mut dyn Write) -> io::Result<()> {
    output.write_all(frame::GREETING)?;
    let opened = Library::open(path).and_then(|library| {
        library
            .metadata(|bytes| frame::write_frame(output, frame::METADATA, bytes))
            .map(|written| (library, written))
    });
    let library = match opened {
        Ok((library, written)) => {
            written?;
            library
        }
        Err(fault) => {
            frame::write_frame(output, frame::FAULT, &frame::encode_fault(&fault))?;
            return output.flush();
        }
    };
    output.flush()?;
    loop {
        let request = match frame::read_frame(input, frame::MAX_REQUEST, &[frame::GENERATE]) {
            Ok(Incoming::End) => return Ok(()),
            Ok(Incoming::Frame(_, request)) => request,
            Ok(Incoming::NoFrame(header)) => {
                let shown = header.escape_ascii();
                return refuse(output, &format!("bytes that are no request: `{shown}`"));
            }
            Ok(Incoming::TooLarge(len)) => {
                return refuse(output, &format!("a request of {len} bytes"));
            }
            Err(e) => return refuse(output, &format!("cannot read a request: {e}")),
        };
        match library.generate(&request, |bytes| {
            frame::write_frame(output, frame::REPLY, bytes)
        }) {
            Ok(written) => written?,
            Err(fault) => frame::write_frame(output, frame::FAULT, &frame::encode_fault(&fault))?,
        }
        output.flush()?;
    }
}

/// Tells the host why the worker stops reading.
fn refuse(output: &mut dyn Write, why: &str) -> io::Result<()> {
    frame::write_frame(output, frame::WORKER_ERROR, why.as_bytes())?;
    output.flush()
}

/// Serves the plugin library at `path` over this process's standard input and output, which the
/// host has made pipes (see [`crate::Worker`]). Call it first thing in the worker process.
///
/// Before the library is loaded, the pipes are moved to private descriptors: standard output
/// becomes standard error and standard input `/dev/null`, so a plugin that prints or reads
/// cannot break the frames. The worker also leaves no core dump when a plugin crashes it (the
/// host reports the crash).
///
/// The worker ends when the host closes its end of the pipe (to stop it, or because the host is
/// gone), even in the middle of a plugin call that never returns, and it ends whatever the plugin
/// started first, programs that left its process group included (on Linux; see `descendants`).
pub fn serve_stdio(path: &Path) -> io::Result<()> {
    let (input, output) = private_stdio()?;
    no_core_dumps();
    descendants::adopt_orphans();
    let input = guarded(input)?;
    exit_with_parent();
    let served = serve(
        path,
        &mut BufReader::new(input),
        &mut BufWriter::with_capacity(1 << 16, output),
    );
    descendants::end_descendants();
    served
}

/// The host's pipe, read by a thread of its own that passes the bytes on through a pipe inside
/// this process: when the host's pipe ends, that thread ends the worker, whatever the plugin's
/// code is doing on the main thread.
fn guarded(mut input: Box<dyn Read + Send>) -> io::Result<Box<dyn Read>> {
    let (inside, mut passed) = io::pipe()?;
    std::thread::Builder::new()
        .name("plugin-worker-guard".into())
        .spawn(move || {
            let mut buffer = vec![0u8; 1 << 16];
            loop {
                match input.read(&mut buffer) {
                    Ok(0) => break,
                    // Requests are read whole before the plugin is called, so this never waits
                    // on a busy main thread for long.
                    Ok(n) => {
                        if passed.write_all(&buffer[..n]).is_err() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            descendants::end_worker(0)
        })?;
    Ok(Box::new(inside))
}

#[cfg(unix)]
fn private_stdio() -> io::Result<(Box<dyn Read + Send>, Box<dyn Write>)> {
    use std::os::fd::{AsFd, AsRawFd};
    // Copies with close-on-exec set, so a program the plugin starts does not hold the pipes.
    let input = io::stdin().as_fd().try_clone_to_owned()?;
    let output = io::stdout().as_fd().try_clone_to_owned()?;
    let null = std::fs::File::open("/dev/null")?;
    // SAFETY: `dup2` replaces this process's descriptors 0 and 1, which stay open (now on
    // `/dev/null` and standard error); the pipes live on in the copies above.
    let replaced = unsafe { libc::dup2(null.as_raw_fd(), 0) >= 0 && libc::dup2(2, 1) >= 0 };
    if !replaced {
        return Err(io::Error::last_os_error());
    }
    Ok((
        Box::new(std::fs::File::from(input)),
        Box::new(std::fs::File::from(output)),
    ))
}

/// Elsewhere the pipes stay where they are (a plugin that prints breaks the frames).
#[cfg(not(unix))]
fn private_stdio() -> io::Result<(Box<dyn Read + Send>, Box<dyn Write>)> {
    Ok((Box::new(io::stdin()), Box::new(io::stdout())))
}

/// A crash of the plugin is reported by the host; a core file of it would only fill the disk.
fn no_core_dumps() {
    #[cfg(unix)]
    {
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `setrlimit` reads the limit we pass; failing leaves the limit as it was.
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &none) };
    }
}

/// Ends the worker when the parent process is gone (the worker is handed to another parent then),
/// should its pipe outlive it: a plugin call that never returns must not outlive the host, which
/// could no longer stop it.
fn exit_with_parent() {
    #[cfg(unix)]
    {
        let parent = std::os::unix::process::parent_id();
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(std::time::Duration::from_millis(200));
                if std::os::unix::process::parent_id() != parent {
                    descendants::end_worker(1);
                }
            }
        });
    }
}
