//! The one file the playground may read and write: the `FILE.weave` it was opened with, fixed
//! when the server starts (its path made absolute once, a link resolved once). Saving replaces it
//! whole the way the command line's `-o` does: the text goes into a temporary file beside it,
//! synced to the disk, then renamed over it, so a failed save leaves it as it was.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The largest file the playground opens, in bytes: the same bound as a request body, so that
/// whatever it opens it can also save.
pub const MAX_FILE_BYTES: usize = crate::MAX_BODY_BYTES / 2;

/// The opened file.
#[derive(Debug, Clone)]
pub struct Opened {
    /// Where it is, absolute.
    path: PathBuf,
    /// Its name as the page and diagnostics show it (the file name alone).
    name: String,
}

/// Why a file cannot be opened or saved, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError(pub String);

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FileError {}

impl Opened {
    /// The file at `path`: a `.weave` file that exists (a regular file, or a link to one), or
    /// none yet in an existing folder (the first save creates it).
    pub fn open(path: &Path) -> Result<Opened, FileError> {
        let shown = pipeweave_diagnostics::visible(&path.display().to_string()).into_owned();
        let refuse = |why: &str| Err(FileError(format!("`{shown}`: {why}")));
        if path.extension().is_none_or(|e| e != "weave") {
            return refuse("the playground edits a `.weave` schedule; give a FILE.weave");
        }
        let absolute = match std::fs::canonicalize(path) {
            Ok(p) => p,
            Err(_) if std::fs::symlink_metadata(path).is_ok() => {
                return refuse("it is a link to nothing");
            }
            Err(_) => {
                let parent = match path.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p,
                    _ => Path::new("."),
                };
                let Ok(folder) = std::fs::canonicalize(parent) else {
                    return refuse("there is no folder to write it in");
                };
                let Some(file_name) = path.file_name() else {
                    return refuse("it names no file");
                };
                folder.join(file_name)
            }
        };
        if let Ok(m) = std::fs::metadata(&absolute)
            && !m.is_file()
        {
            return refuse("it is not a regular file");
        }
        let name = absolute
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Opened {
            path: absolute,
            name,
        })
    }

    /// Its name, as shown (the file name alone).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its text now (empty when it does not exist yet).
    pub fn read(&self) -> Result<String, FileError> {
        let shown = pipeweave_diagnostics::visible(&self.name).into_owned();
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
            Err(e) => return Err(FileError(format!("cannot read `{shown}`: {e}"))),
        };
        if bytes.len() > MAX_FILE_BYTES {
            return Err(FileError(format!(
                "`{shown}` has {} bytes, more than the {MAX_FILE_BYTES} the playground edits",
                bytes.len()
            )));
        }
        pipeweave_diagnostics::text_from_bytes(bytes, pipeweave_diagnostics::FileId(0))
            .map_err(|d| FileError(format!("cannot read `{shown}`: {}", d.message)))
    }

    /// Replaces the file with `text`, whole or not at all.
    pub fn save(&self, text: &str) -> Result<(), FileError> {
        let shown = pipeweave_diagnostics::visible(&self.name).into_owned();
        let fail = |e: std::io::Error| FileError(format!("cannot save `{shown}`: {e}"));
        let dir = self.path.parent().unwrap_or(Path::new("/"));
        let prefix = format!(".{}.", self.name);
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        if let Ok(m) = std::fs::metadata(&self.path) {
            builder.permissions(m.permissions());
        }
        // Removed on any error below.
        let mut temporary = builder.tempfile_in(dir).map_err(fail)?;
        temporary.write_all(text.as_bytes()).map_err(fail)?;
        temporary.as_file().sync_all().map_err(fail)?;
        temporary.persist(&self.path).map_err(|e| fail(e.error))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_and_saved_whole() {
        let dir = tempfile::tempdir().expect("a folder");
        let path = dir.path().join("mine.weave");
        std::fs::write(&path, "stages P\n").expect("written");
        let opened = Opened::open(&path).expect("opens");
        assert_eq!(opened.name(), "mine.weave");
        assert_eq!(opened.read().expect("reads"), "stages P\n");
        opened.save("stages 2 * P\n").expect("saves");
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            "stages 2 * P\n"
        );
        // Nothing left beside it.
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .expect("listed")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(left, [std::ffi::OsString::from("mine.weave")]);
    }

    #[test]
    fn a_new_file_is_created_by_the_first_save() {
        let dir = tempfile::tempdir().expect("a folder");
        let path = dir.path().join("new.weave");
        let opened = Opened::open(&path).expect("opens");
        assert_eq!(opened.read().expect("reads"), "");
        opened.save("stages P\n").expect("saves");
        assert!(path.is_file());
    }

    #[test]
    fn what_is_no_weave_file_is_refused() {
        let dir = tempfile::tempdir().expect("a folder");
        let e = |p: &Path| Opened::open(p).expect_err("refused").0;
        assert!(e(&dir.path().join("notes.txt")).contains("give a FILE.weave"));
        assert!(e(&dir.path().join("none/x.weave")).contains("no folder"));
        let folder = dir.path().join("folder.weave");
        std::fs::create_dir(&folder).expect("a folder");
        assert!(e(&folder).contains("not a regular file"));
    }

    #[test]
    fn a_file_past_the_limit_is_refused_when_read() {
        let dir = tempfile::tempdir().expect("a folder");
        let path = dir.path().join("big.weave");
        std::fs::write(&path, vec![b'#'; MAX_FILE_BYTES + 1]).expect("written");
        let opened = Opened::open(&path).expect("opens");
        assert!(opened.read().expect_err("too big").0.contains("more than"));
    }
}
