//! One running worker process, the host's side: starting it from its recipe, reading its frames
//! in a thread of its own, passing its output on (bounded, `output`), and stopping it with
//! whatever the plugin started.

use super::frame::{self, Incoming};
use super::options::WorkerOptions;
use super::output;
use crate::{PluginError, reply};
use pipeweave_plugin_api::protocol::Metadata;
use std::ffi::OsString;
use std::io::{self, BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// How often a wait looks whether the worker is still alive.
const POLL: Duration = Duration::from_millis(100);

/// How long a worker asked to stop (its input closed) has to end itself and what the plugin
/// started, and how long its output may take to arrive after that, before it is killed.
const GRACE: Duration = Duration::from_secs(1);

/// What the worker sent that is not what was expected, in words.
pub(super) fn garbage(path: &Path, tag: u8, payload: &[u8]) -> PluginError {
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
pub(super) struct Recipe {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(OsString, Option<OsString>)>,
    dir: Option<PathBuf>,
}

impl Recipe {
    pub(super) fn of(command: &Command) -> Recipe {
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
            .stderr(Stdio::piped());
        // A group of its own, so that stopping it stops whatever the plugin started too.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        command
    }
}

/// Starts a worker and reads its greeting and the plugin's metadata.
pub(super) fn start(
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
    let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
        return Err(failed("its pipes were not opened".into()));
    };
    let mut process = Process {
        child,
        reaped: false,
        stdin: Some(BufWriter::new(stdin)),
        replies: None,
        output: None,
    };
    process.output = Some(
        output::forward(stderr, path, options.max_output)
            .map_err(|e| failed(format!("cannot start a thread to read its output: {e}")))?,
    );
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
pub(super) struct Process {
    child: Child,
    /// Whether the child was waited for: its id may name another process since.
    reaped: bool,
    /// Its input; closing it asks the worker to end.
    stdin: Option<BufWriter<ChildStdin>>,
    replies: Option<Receiver<Message>>,
    /// Says when all of its output was passed on.
    output: Option<Receiver<()>>,
}

impl Process {
    /// Writes one request frame.
    pub(super) fn send(&mut self, tag: u8, payload: &[u8]) -> io::Result<()> {
        let Some(stdin) = &mut self.stdin else {
            return Err(io::ErrorKind::BrokenPipe.into());
        };
        frame::write_frame(stdin, tag, payload)?;
        io::Write::flush(stdin)
    }

    /// The next frame, or the error that ends the worker (which is then stopped).
    pub(super) fn receive(
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
                    if let Ok(Some(status)) = exited(&mut self.child, &mut self.reaped) {
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
    pub(super) fn ended(
        &mut self,
        path: &Path,
        during: &'static str,
        options: &WorkerOptions,
        deadline: Option<Instant>,
    ) -> PluginError {
        let mut pause = Duration::from_millis(1);
        loop {
            match exited(&mut self.child, &mut self.reaped) {
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

    /// Stops the worker with whatever the plugin started, and reaps it. Closing its input asks
    /// it to end, which it does at once, even in a plugin call that never returns, after ending
    /// the programs the plugin started (`serve_stdio`); whatever is left of its process group
    /// after a grace period is killed.
    fn stop(&mut self) {
        self.stdin = None;
        let until = Instant::now() + GRACE;
        // Its pipe closes as it ends: waiting for that costs no polling delay.
        if let Some(replies) = self.replies.take() {
            while replies
                .recv_timeout(until.saturating_duration_since(Instant::now()))
                .is_ok()
            {}
        }
        let mut pause = Duration::from_micros(50);
        while matches!(exited(&mut self.child, &mut self.reaped), Ok(None))
            && Instant::now() < until
        {
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(50));
        }
        // Only while it is unreaped: after that its id may name another process.
        if !self.reaped {
            kill_group(&self.child);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.reaped = true;
        // Its output, and the note of what was dropped, come before anything said after this.
        if let Some(done) = self.output.take() {
            let _ = done.recv_timeout(GRACE);
        }
    }
}

/// How the worker `child` ended, once it has; on Linux without reaping it, so that its process
/// group can still be killed by its id (`reaped` says whether it was reaped).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn exited(child: &mut Child, reaped: &mut bool) -> io::Result<Option<ExitStatus>> {
    use std::os::unix::process::ExitStatusExt as _;
    if *reaped {
        return child.try_wait();
    }
    let pid: libc::id_t = child.id();
    // SAFETY: all-zero bytes are a valid `siginfo_t`, which `waitid` fills in.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let options = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    // SAFETY: `waitid` writes into `info` only; `WNOWAIT` leaves the child waitable.
    if unsafe { libc::waitid(libc::P_PID, pid, &mut info, options) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `si_pid` and `si_status` are the fields `waitid` fills for a child's end.
    let (who, status) = unsafe { (info.si_pid(), info.si_status()) };
    if who == 0 {
        return Ok(None);
    }
    // As `wait` would have said it: an exit code in the second byte, else the signal.
    let raw = match info.si_code {
        libc::CLD_EXITED => (status & 0xff) << 8,
        libc::CLD_DUMPED => status | 0x80,
        _ => status,
    };
    Ok(Some(ExitStatus::from_raw(raw)))
}

#[cfg(not(target_os = "linux"))]
fn exited(child: &mut Child, reaped: &mut bool) -> io::Result<Option<ExitStatus>> {
    let status = child.try_wait()?;
    *reaped |= status.is_some();
    Ok(status)
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
