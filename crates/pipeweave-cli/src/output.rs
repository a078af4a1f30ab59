//! Where output goes: standard output or a file, warnings and failures on standard error, and the
//! exit code (0 success, 1 invalid input or plan, 2 usage error).
//!
//! Output is never lost quietly: a failed write to standard output is an error (exit 1), except a
//! closed pipe (`| head`), which ends the output without a word. A file is written whole or not at
//! all: into a temporary file beside it, flushed to the disk, then renamed over it, so on any error
//! an existing file stays as it was and no temporary file remains. Exports are streamed: written
//! into the temporary file (or to standard output) as they are made, never held whole.

use pipeweave_diagnostics::Renderer;
use pipeweave_export::Document;
use pipeweave_source::{Failure, Files};
use std::io::{ErrorKind, Write};
use std::path::Path;
use std::process::ExitCode;

/// The file name that means standard output (`-o -`, `--svg -`).
pub const STDOUT: &str = "-";

/// Whether `path` means standard output.
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == STDOUT
}

/// Writes `text` to `output` (standard output for none or `-`).
pub fn emit(output: Option<&Path>, text: &str) -> Result<(), Failure> {
    emit_with(output, |out| out.write_all(text.as_bytes()))
}

/// Writes an export to `output` (standard output for none or `-`) as it is made.
pub fn emit_document(output: Option<&Path>, doc: &dyn Document) -> Result<(), Failure> {
    emit_with(output, |out| doc.write_to(out))
}

/// Writes what `write` writes to `output` (standard output for none or `-`).
fn emit_with(
    output: Option<&Path>,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), Failure> {
    match output {
        Some(path) if !is_stdout(path) => write_file_with(path, write)
            .map_err(|e| Failure::invalid(format!("cannot write `{}`: {e}", path.display()))),
        _ => to_stdout(write)
            .map_err(|e| Failure::invalid(format!("cannot write to standard output: {e}"))),
    }
}

/// Writes to standard output and flushes it; a closed pipe is not an error of ours.
fn to_stdout(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        result => result,
    }
}

/// Replaces the file at `path` with `bytes`, or leaves it as it was (see [`write_file_with`]).
#[cfg(test)]
pub fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_file_with(path, |out| out.write_all(bytes))
}

/// Replaces the file at `path` with what `write` writes, or leaves it as it was.
///
/// The bytes go into a new file beside it (same folder, so the rename stays on one file system),
/// which is synced to the disk and then renamed over `path`; its permissions are the old file's,
/// or those of a new file. A link is followed (the file it points to is replaced). A character
/// device (`/dev/null`, `/dev/full`) is written as a stream, in place; a FIFO, a socket or a block
/// device is refused.
pub fn write_file_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    };
    let existing = std::fs::metadata(&target).ok();
    if let Some(m) = &existing {
        if m.is_dir() {
            return Err(std::io::Error::other("it is a folder"));
        }
        if !m.is_file() {
            // A character device (`/dev/null`) is written as a stream; anything else that is no
            // regular file (a FIFO made since the command began) is refused, never waited on.
            if let Some(why) = pipeweave_host::output_problem(&target) {
                return Err(std::io::Error::other(why));
            }
            let mut stream = std::fs::OpenOptions::new().write(true).open(&target)?;
            write(&mut stream)?;
            return stream.flush();
        }
    }
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    let permissions = match &existing {
        Some(m) => Some(m.permissions()),
        None => new_file_permissions(),
    };
    if let Some(p) = &permissions {
        builder.permissions(p.clone());
    }
    // Dropped on any error below: the temporary file is removed.
    let mut temporary = builder.tempfile_in(dir).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!(
                "cannot create a file in `{}`: {}",
                dir.display(),
                os_text(&e)
            ),
        )
    })?;
    write(temporary.as_file_mut())?;
    temporary.as_file().sync_all()?;
    if let Some(p) = permissions.filter(|_| existing.is_some()) {
        // Exactly the old file's (creation applies the umask).
        temporary.as_file().set_permissions(p)?;
    }
    temporary.persist(&target).map_err(|e| e.error)?;
    // The rename itself reaches the disk with the folder.
    if let Ok(folder) = std::fs::File::open(dir) {
        let _ = folder.sync_all();
    }
    Ok(())
}

/// An error's own words, without the ` at path "…"` that `tempfile` appends (the temporary
/// file's name means nothing to the user, and it is gone).
fn os_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at path \"") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// What `std::fs::write` gives a new file: read and write for all, less the umask.
fn new_file_permissions() -> Option<std::fs::Permissions> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        Some(std::fs::Permissions::from_mode(0o666))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Prints rendered text (a warning) on standard error (where a failed write has nowhere to be
/// told, so it is ignored).
pub fn warn(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// A warning on standard error (a control character in it, from a path or a plugin, drawn as its
/// picture).
pub fn warning(message: &str) {
    warn(&format!("warning: {}\n", shown(message)));
}

/// `note: MESSAGE` on standard error: information beside output that goes elsewhere.
pub fn note(message: &str) {
    warn(&format!("note: {}\n", shown(message)));
}

/// `message` with every control character but its line ends drawn as its picture.
fn shown(message: &str) -> String {
    message
        .split('\n')
        .map(|line| pipeweave_diagnostics::visible(line).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The exit code of a command's result, its failure rendered on standard error.
pub fn finish(result: Result<(), Failure>, files: &Files, max_diagnostics: usize) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            let text = Renderer::new(files, max_diagnostics).failure(&f.diagnostics);
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
            ExitCode::from(f.exit_code())
        }
    }
}

#[cfg(test)]
mod tests;
