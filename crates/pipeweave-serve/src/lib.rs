//! The playground: `pipeweave serve [--port N] [FILE.weave]`, a local web app to write `.weave`
//! schedules live. The page (a CodeMirror editor, the timeline, comparison tables, the controls
//! and the downloads; `web/`, bundled into this binary) asks this server to build what is typed;
//! the server answers through the application layer, as the command line would.
//!
//! Every request is hostile until shown otherwise (`guard.rs`): the server listens on 127.0.0.1
//! only; a request whose `Host` or `Origin` is not the server's own is refused (DNS rebinding, a
//! site posting to localhost); bodies are bounded; every compile and simulation runs on a bounded
//! pool under the language's own budgets and a time limit, answered as an error in the page; a
//! panic in one request answers that request with an error and the server goes on. The only file
//! it reads or writes is the one it was opened with (`opened.rs`): the resolver sees the editor's
//! text and the library alone (`host.rs`).
//!
//! Printing is the command line's: [`serve`] hands it the address to print.

mod assets;
mod guard;
mod host;
mod opened;
mod server;
pub mod wire;
mod work;

pub use guard::refusal;
pub use opened::{FileError, MAX_FILE_BYTES, Opened};
pub use work::{ExportFile, FORMATS, MAX_EXPORT_BYTES, build, export};

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::time::Duration;

/// The largest request body the server reads, in bytes (a `.weave` file twice over, with the
/// controls).
pub const MAX_BODY_BYTES: usize = 2 << 20;

/// The longest one compile, simulation and drawing may take before the page is told it took too
/// long. The language's budgets (`MAX_OPS` operations, 2²⁶ program steps) end any schedule well
/// before; this bounds what a client waits for.
pub const TIME_LIMIT: Duration = Duration::from_secs(30);

/// How many builds run at once (the others wait for a turn, at most [`TIME_LIMIT`]).
pub const WORKERS: usize = 2;

/// What `pipeweave serve` was asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The port on 127.0.0.1 (0: any free port).
    pub port: u16,
    /// The `.weave` file to edit (none: a scratch text, which cannot be saved).
    pub file: Option<PathBuf>,
}

/// Why the server could not start or stopped.
#[derive(Debug)]
pub enum ServeError {
    /// The file cannot be opened.
    File(FileError),
    /// The port cannot be listened on, or the runtime failed.
    Io(String),
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::File(e) => write!(f, "{e}"),
            ServeError::Io(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for ServeError {}

/// Serves the playground until the process is interrupted (Ctrl-C): `ready` is told the page's
/// address once the server listens.
pub fn serve(options: &Options, ready: impl FnOnce(&str)) -> Result<(), ServeError> {
    let opened = match &options.file {
        Some(path) => {
            let opened = Opened::open(path).map_err(ServeError::File)?;
            // Refused now rather than in the page: a file the playground cannot edit.
            opened.read().map_err(ServeError::File)?;
            Some(opened)
        }
        None => None,
    };
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, options.port)).map_err(|e| {
        ServeError::Io(format!(
            "cannot listen on 127.0.0.1:{}: {e}{}",
            options.port,
            if e.kind() == std::io::ErrorKind::AddrInUse {
                "; pick another --port, or --port 0 for any free one"
            } else {
                ""
            }
        ))
    })?;
    let address: SocketAddr = listener
        .local_addr()
        .map_err(|e| ServeError::Io(format!("cannot read the address listened on: {e}")))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| ServeError::Io(format!("cannot set up the listener: {e}")))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(WORKERS * 4)
        .enable_all()
        .build()
        .map_err(|e| ServeError::Io(format!("cannot start the server's runtime: {e}")))?;
    ready(&format!("http://{address}/"));
    runtime.block_on(server::run(listener, address.port(), opened))
}
