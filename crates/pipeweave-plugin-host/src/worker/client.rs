//! The host's side: a plugin in a worker process of its own, started from a command the caller
//! gives (only the caller knows which program serves plugins: the command line runs itself), with
//! a time limit on every request and a bound on every reply.

use super::frame::{self, Incoming};
use crate::{PluginError, reply};
use pipeweave_plan::Plan;
use pipeweave_plugin_api::protocol::{self, Metadata, Request};
use std::ffi::OsString;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// How long a worker may take and how much it may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerOptions {
    /// The longest one request may take: starting the worker, loading the library and reading
    /// its metadata count as one request, each plan as another. Past it the worker is killed.
    pub time_limit: Duration,
    /// The most bytes one reply may hold; a larger one stops the worker before it is read.
    pub max_reply: u64,
}

impl WorkerOptions {
    /// The default time limit: 10 s per request.
    pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(10);
    /// The default reply bound: 256 MiB, about ten million actions (DualPipe at 32 × 1,024 sends
    /// 25 bytes per action).
    pub const DEFAULT_MAX_REPLY: u64 = 256 << 20;
}

impl Default for WorkerOptions {
    fn default() -> WorkerOptions {
        WorkerOptions {
            time_limit: WorkerOptions::DEFAULT_TIME_LIMIT,
            max_reply: WorkerOptions::DEFAULT_MAX_REPLY,
        }
    }
}

/// How often a wait looks whether the worker is still alive.
const POLL: Duration = Duration::from_millis(100);

/// A plugin running in a worker process: one process per plugin, kept for as many requests as
/// the caller makes and started again after a failure. A plugin that exceeded the time limit is
/// not asked again (each request would cost the whole limit).
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
    pub fn generate(&mut self, request: &Request) -> Result<Plan, PluginError> {
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
        let sent = frame::write_frame(&mut process.stdin, frame::GENERATE, request)
            .and_then(|()| process.stdin.flush());
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

/// What the worker sent that is not what was expected, in words.
fn garbage(path: &Path, tag: u8, payload: &[u8]) -> PluginError {
    let detail = if tag == frame::WORKER_ERROR {
        format!(
            "it could not read the request: {}",
            String::from_utf8_lossy(payload)
        )
    } else {
        format!(
            "it sent a reply out of turn (frame `{}` of {} bytes)",
            std::ascii::escape_default(tag),
            payload.len()
        )
    };
    PluginError::Worker {
        path: path.to_path_buf(),
        detail,
    }
}

/// The command a worker is started from, kept to start it again.
#[derive(Debug)]
struct Recipe {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(OsString, Option<OsString>)>,
    dir: Option<PathBuf>,
}

impl Recipe {
    fn of(command: &Command) -> Recipe {
        Recipe {
            program: command.get_program().to_owned(),
            args: command.get_args().map(ToOwned::to_owned).collect(),
            envs: command
                .get_envs()
                .map(|(k, v)| (k.to_owned(), v.map(ToOwned::to_owned)))
                .collect(),
            dir: command.get_current_dir().map(Path::to_path_buf),
        }
    }

    fn command(&self, path: &Path) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args).arg(path);
        for (key, value) in &self.envs {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        if let Some(dir) = &self.dir {
            command.current_dir(dir);
        }
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // A group of its own, so that stopping it stops whatever the plugin started too.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        command
    }
}

/// Starts a worker and reads its greeting and the plugin's metadata.
fn start(
    recipe: &Recipe,
    path: &Path,
    options: &WorkerOptions,
) -> Result<(Process, Metadata), PluginError> {
    const DURING: &str = "loading";
    let failed = |detail: String| PluginError::Worker {
        path: path.to_path_buf(),
        detail,
    };
    let deadline = Instant::now().checked_add(options.time_limit);
    let mut child = recipe.command(path).spawn().map_err(|e| {
        failed(format!(
            "cannot start `{}`: {e}",
            Path::new(&recipe.program).display()
        ))
    })?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(failed("its pipes were not opened".into()));
    };
    let mut process = Process {
        child,
        stdin: BufWriter::new(stdin),
        replies: None,
    };
    let (sender, replies) = mpsc::channel();
    let max = options.max_reply;
    std::thread::Builder::new()
        .name("plugin-worker-replies".into())
        .spawn(move || read_replies(stdout, max, &sender))
        .map_err(|e| failed(format!("cannot start a thread to read it: {e}")))?;
    process.replies = Some(replies);
    let (tag, payload) = process.receive(path, DURING, options, deadline)?;
    match tag {
        frame::METADATA => Ok((process, reply::metadata(path, &payload)?)),
        frame::FAULT => Err(match frame::decode_fault(&payload) {
            // Only the metadata call can panic or answer with a status while loading.
            Some(fault) => fault.into_error(path, "describing itself"),
            None => garbage(path, tag, &payload),
        }),
        _ => Err(garbage(path, tag, &payload)),
    }
}

/// What the reading thread passes on.
#[derive(Debug)]
enum Message {
    Frame(u8, Vec<u8>),
    TooLarge(u64),
    Broken(String),
}

/// Reads the worker's greeting and frames until its pipe ends (then the channel closes).
fn read_replies(stdout: impl Read, max: u64, sender: &Sender<Message>) {
    let mut input = BufReader::with_capacity(1 << 16, stdout);
    let mut greeting = Vec::with_capacity(frame::GREETING.len());
    let read = (&mut input)
        .take(frame::GREETING.len() as u64)
        .read_to_end(&mut greeting);
    if let Err(e) = read {
        let _ = sender.send(Message::Broken(format!("cannot read its pipe: {e}")));
        return;
    }
    if greeting != frame::GREETING {
        // A worker that died while greeting sent a part of the greeting: that is a crash.
        if !frame::GREETING.starts_with(&greeting) {
            let _ = sender.send(Message::Broken(format!(
                "it did not answer as a plugin worker: it began with `{}`",
                greeting.escape_ascii()
            )));
        }
        return;
    }
    loop {
        let message = match frame::read_frame(&mut input, max, frame::REPLY_TAGS) {
            Ok(Incoming::Frame(tag, payload)) => Message::Frame(tag, payload),
            Ok(Incoming::TooLarge(size)) => Message::TooLarge(size),
            Ok(Incoming::NoFrame(header)) => Message::Broken(format!(
                "it sent bytes that are no reply: `{}`",
                header.escape_ascii()
            )),
            // Ended between frames or within one: the worker is gone, its status says why.
            Ok(Incoming::End) => return,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return,
            Err(e) => Message::Broken(format!("cannot read its pipe: {e}")),
        };
        let last = !matches!(message, Message::Frame(..));
        if sender.send(message).is_err() || last {
            return;
        }
    }
}

/// A running worker. Dropping it stops it.
#[derive(Debug)]
struct Process {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    replies: Option<Receiver<Message>>,
}

impl Process {
    /// The next frame, or the error that ends the worker (which is then stopped).
    fn receive(
        &mut self,
        path: &Path,
        during: &'static str,
        options: &WorkerOptions,
        deadline: Option<Instant>,
    ) -> Result<(u8, Vec<u8>), PluginError> {
        let Some(replies) = &self.replies else {
            return Err(self.ended(path, during, options, deadline));
        };
        loop {
            let wait = match deadline {
                Some(deadline) => deadline.saturating_duration_since(Instant::now()),
                None => POLL,
            };
            if wait.is_zero() {
                return Err(self.timed_out(path, during, options));
            }
            match replies.recv_timeout(wait.min(POLL)) {
                Ok(Message::Frame(tag, payload)) => return Ok((tag, payload)),
                Ok(Message::TooLarge(size)) => {
                    return Err(PluginError::ReplyTooLarge {
                        path: path.to_path_buf(),
                        during,
                        size,
                        limit: options.max_reply,
                    });
                }
                Ok(Message::Broken(detail)) => {
                    return Err(PluginError::Worker {
                        path: path.to_path_buf(),
                        detail,
                    });
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Ok(Some(status)) = self.child.try_wait() {
                        // Gone: what it wrote before it went may still be on its way.
                        return match replies.recv_timeout(wait.min(POLL)) {
                            Ok(Message::Frame(tag, payload)) => Ok((tag, payload)),
                            _ => Err(crashed(path, during, status)),
                        };
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.ended(path, during, options, deadline));
                }
            }
        }
    }

    /// The worker's pipe has ended: how it ended, once it has exited (or the time limit is up).
    fn ended(
        &mut self,
        path: &Path,
        during: &'static str,
        options: &WorkerOptions,
        deadline: Option<Instant>,
    ) -> PluginError {
        let mut pause = Duration::from_millis(1);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return crashed(path, during, status),
                Ok(None) => {}
                Err(e) => {
                    return PluginError::Worker {
                        path: path.to_path_buf(),
                        detail: format!("cannot wait for it: {e}"),
                    };
                }
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return self.timed_out(path, during, options);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(POLL);
        }
    }

    fn timed_out(
        &mut self,
        path: &Path,
        during: &'static str,
        options: &WorkerOptions,
    ) -> PluginError {
        self.stop();
        PluginError::TimedOut {
            path: path.to_path_buf(),
            during,
            limit: options.time_limit,
        }
    }

    /// Kills the worker (with whatever it started) and reaps it.
    fn stop(&mut self) {
        // Only while it is unreaped: after that its id may name another process.
        if let Ok(None) = self.child.try_wait() {
            kill_group(&self.child);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Kills the process group the worker leads: the worker and whatever the plugin started.
#[cfg(unix)]
#[allow(unsafe_code)]
fn kill_group(child: &Child) {
    if let Ok(group) = i32::try_from(child.id()) {
        // SAFETY: `kill` only sends a signal, to the group the (unreaped) worker leads.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    }
}

#[cfg(not(unix))]
fn kill_group(_child: &Child) {}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The error for a worker that exited while `during`.
fn crashed(path: &Path, during: &'static str, status: ExitStatus) -> PluginError {
    PluginError::Crashed {
        path: path.to_path_buf(),
        during,
        how: how_it_ended(status),
    }
}

#[cfg(unix)]
fn how_it_ended(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(signal) = status.signal() {
        return match signal_name(signal) {
            Some("SIGABRT") => format!("it aborted (signal {signal}, SIGABRT)"),
            Some(name) => format!("killed by signal {signal} ({name})"),
            None => format!("killed by signal {signal}"),
        };
    }
    exit_words(status)
}

#[cfg(not(unix))]
fn how_it_ended(status: ExitStatus) -> String {
    exit_words(status)
}

fn exit_words(status: ExitStatus) -> String {
    match status.code() {
        Some(0) => "its process exited without answering".to_owned(),
        Some(code) => format!("its process exited with status {code}"),
        None => format!("its process ended ({status})"),
    }
}

#[cfg(unix)]
fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGABRT => "SIGABRT",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGSYS => "SIGSYS",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGHUP => "SIGHUP",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => return None,
    })
}
