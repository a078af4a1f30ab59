//! The host's side: a plugin in a worker process of its own, started from a command the caller
//! gives (only the caller knows which program serves plugins: the command line runs itself), with
//! a time limit on every request and a bound on every reply.

use super::frame;
use super::options::WorkerOptions;
use super::process::{Process, Recipe, garbage, start};
use crate::{PluginError, reply};
use pipeweave_check::ValidPlan;
use pipeweave_plugin_api::protocol::{self, Metadata, Request};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// This process's limit on open descriptors (the soft one), where there is one: a caller of
/// many plugins keeps fewer workers running under a small limit (each holds three descriptors of
/// this process, and starting one takes eight more for a moment).
#[cfg(unix)]
#[allow(unsafe_code)]
pub fn descriptor_limit() -> Option<u64> {
    // SAFETY: all-zero bytes are a valid `rlimit`, which `getrlimit` fills in.
    let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `getrlimit` writes into `limit` only.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    // `rlim_t` is not `u64` on every system.
    #[allow(clippy::useless_conversion)]
    let current = u64::try_from(limit.rlim_cur).ok();
    current.filter(|_| limit.rlim_cur != libc::RLIM_INFINITY)
}

/// Elsewhere no limit is known.
#[cfg(not(unix))]
pub fn descriptor_limit() -> Option<u64> {
    None
}

/// A plugin running in a worker process: one process per plugin, kept for as many requests as
/// the caller makes (or until [`Worker::stop`]) and started again after a failure or a stop. A
/// plugin that exceeded the time limit is not asked again (each request would cost the whole
/// limit).
///
/// Stopping the process (a stop, a failure, a time limit, dropping the `Worker`) ends whatever the
/// plugin started with it: the worker's process group, and on Linux the programs that left it
/// too, unless the worker itself crashed (its orphans then went to `init` as it died).
///
/// A crash, an abort, a hang, an oversized reply or bytes that are no reply become a
/// [`PluginError`] naming the plugin file; this process only ever reads bytes from the worker, and
/// decodes them with the plugin protocol's decoder, which never panics.
#[derive(Debug)]
pub struct Worker {
    path: PathBuf,
    recipe: Recipe,
    options: WorkerOptions,
    metadata: Metadata,
    process: Option<Process>,
    timed_out: bool,
}

impl Worker {
    /// Starts `command` with the plugin file `path` (made absolute) as its last argument and
    /// reads the plugin's metadata. The program must call [`crate::serve_stdio`] with that path.
    ///
    /// `command` is kept (its program, arguments, environment changes and folder) to start the
    /// worker again after a failure; its standard input and output become the worker's pipes and
    /// its standard error is this process's.
    pub fn spawn(
        command: Command,
        path: &Path,
        options: WorkerOptions,
    ) -> Result<Worker, PluginError> {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let recipe = Recipe::of(&command);
        let (process, metadata) = start(&recipe, &path, &options)?;
        Ok(Worker {
            path,
            recipe,
            options,
            metadata,
            process: Some(process),
            timed_out: false,
        })
    }

    /// The plugin file (absolute).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The plugin's metadata: its schedule name, description, parameters and requirements.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Whether its process is running (it is started again for the next request when not).
    pub fn is_running(&self) -> bool {
        self.process.is_some()
    }

    /// Stops its process, with whatever the plugin started; the next request starts it again.
    /// A caller of many plugins keeps a few running this way, each process costing descriptors.
    pub fn stop(&mut self) {
        self.process = None;
    }

    /// Checks that the plugin calls itself `name` (the name its file was found by).
    pub fn check_name(self, name: &str) -> Result<Worker, PluginError> {
        reply::check_name(&self.path, &self.metadata, name)?;
        Ok(self)
    }

    /// A request with the user's `--set NAME=VALUE` settings checked against the declared
    /// parameters and every other parameter at its default.
    pub fn request(
        &self,
        ranks: u32,
        microbatches: u32,
        settings: &[(String, String)],
    ) -> Result<Request, PluginError> {
        reply::request(&self.path, &self.metadata, ranks, microbatches, settings)
    }

    /// Asks the plugin for a plan and returns it only once it has the shape asked for, is
    /// structurally sound and is valid.
    pub fn generate(&mut self, request: &Request) -> Result<ValidPlan, PluginError> {
        const DURING: &str = "building a plan";
        if self.timed_out {
            return Err(PluginError::TimedOutBefore {
                path: self.path.clone(),
                limit: self.options.time_limit,
            });
        }
        let (tag, payload) = self.call(&protocol::encode_request(request), DURING)?;
        match tag {
            frame::REPLY => reply::plan(&self.path, &self.metadata, request, &payload),
            frame::FAULT => match frame::decode_fault(&payload) {
                Some(fault) => Err(fault.into_error(&self.path, DURING)),
                None => Err(self.garbage(tag, &payload)),
            },
            _ => Err(self.garbage(tag, &payload)),
        }
    }

    /// Sends one request and waits for its frame; any failure leaves no process behind.
    fn call(&mut self, request: &[u8], during: &'static str) -> Result<(u8, Vec<u8>), PluginError> {
        let process = match &mut self.process {
            Some(process) => process,
            slot => {
                let (process, metadata) = start(&self.recipe, &self.path, &self.options)?;
                if metadata != self.metadata {
                    return Err(PluginError::Malformed {
                        path: self.path.clone(),
                        detail: "it describes itself differently since it was restarted".into(),
                    });
                }
                slot.insert(process)
            }
        };
        let deadline = Instant::now().checked_add(self.options.time_limit);
        let sent = process.send(frame::GENERATE, request);
        let result = match sent {
            Ok(()) => process.receive(&self.path, during, &self.options, deadline),
            // The worker died since its last reply: say how.
            Err(_) => Err(process.ended(&self.path, during, &self.options, deadline)),
        };
        if let Err(e) = &result {
            self.timed_out = matches!(e, PluginError::TimedOut { .. });
            self.process = None;
        }
        result
    }

    /// Bytes that are no reply: the worker is stopped and the bytes described.
    fn garbage(&mut self, tag: u8, payload: &[u8]) -> PluginError {
        self.process = None;
        garbage(&self.path, tag, payload)
    }
}
