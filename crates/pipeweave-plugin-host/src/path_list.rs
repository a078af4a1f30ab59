//! The folder-list variables (`PIPEWEAVE_PLUGIN_PATH`, `PIPEWEAVE_SCHEDULE_PATH`), read by one
//! rule: entries separated like `PATH`, empty ones skipped, the first [`MAX_ENTRIES`] read; an
//! entry is searched only when it is an absolute path of at most [`MAX_ENTRY_BYTES`] bytes that
//! names a folder (after links). Every other entry is named with why, in a bounded number of
//! warnings. The caller reads the variable and gives its value: this reads no environment, only
//! what the entries name.

use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

/// The most entries of one variable that are read; the rest are named in one warning.
pub const MAX_ENTRIES: usize = 256;

/// The longest entry searched, in bytes (Linux's `PATH_MAX`).
pub const MAX_ENTRY_BYTES: usize = 4096;

/// The most warnings about one variable's entries; the rest are counted in one more.
const MAX_WARNINGS: usize = 8;

/// The most characters of an entry shown in a message.
const SHOWN_CHARS: usize = 80;

/// Why an entry of a folder-list variable is not searched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// A relative path: it would depend on the folder pipeweave runs in (and running pipeweave in
    /// a folder must not load a library that happens to lie there).
    Relative,
    /// Longer than [`MAX_ENTRY_BYTES`].
    TooLong,
    /// Nothing is there.
    Missing,
    /// Something is there, but no folder.
    NotAFolder,
    /// What is there cannot be looked at; the system's words.
    Unreadable(String),
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::Relative => f.write_str("only absolute paths are"),
            Why::TooLong => write!(f, "it is longer than {MAX_ENTRY_BYTES} bytes"),
            Why::Missing => f.write_str("there is no such folder"),
            Why::NotAFolder => f.write_str("it is not a folder"),
            Why::Unreadable(e) => write!(f, "it cannot be read: {e}"),
        }
    }
}

/// An entry of a folder-list variable that is not searched, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsearched {
    /// The variable's name.
    pub variable: &'static str,
    /// The entry as given.
    pub entry: PathBuf,
    /// Why it is not searched.
    pub why: Why,
}

impl fmt::Display for Unsearched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {} entry `{}` is not searched: {}",
            self.variable,
            shown(&self.entry),
            self.why
        )
    }
}

/// An entry as a message shows it: its first characters when it is long.
fn shown(entry: &Path) -> String {
    let text = entry.display().to_string();
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
        None => text,
    }
}

/// A folder-list variable as read: the folders to search, in order and each once, and what is
/// not searched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathList {
    /// The folders to search, in the variable's order, without repeats.
    pub folders: Vec<PathBuf>,
    /// The entries that are not searched, each once, in the variable's order.
    pub unsearched: Vec<Unsearched>,
    /// How many entries there were past [`MAX_ENTRIES`] (never read).
    pub unread: usize,
    variable: &'static str,
}

impl PathList {
    /// Reads `value`, the value of the variable `variable`.
    pub fn read(variable: &'static str, value: &OsStr) -> PathList {
        let mut list = PathList {
            variable,
            ..PathList::default()
        };
        let mut entries = std::env::split_paths(value).filter(|e| !e.as_os_str().is_empty());
        for entry in entries.by_ref().take(MAX_ENTRIES) {
            if list.folders.contains(&entry) || list.unsearched.iter().any(|u| u.entry == entry) {
                continue;
            }
            match why_not(&entry) {
                None => list.folders.push(entry),
                Some(why) => list.unsearched.push(Unsearched {
                    variable,
                    entry,
                    why,
                }),
            }
        }
        list.unread = entries.count();
        list
    }

    /// The warnings to show about the variable: one per entry not searched, at most a few, then
    /// how many more; and how many entries were not read.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings: Vec<String> = self
            .unsearched
            .iter()
            .take(MAX_WARNINGS)
            .map(ToString::to_string)
            .collect();
        if let Some(more) = self.unsearched.len().checked_sub(MAX_WARNINGS)
            && more > 0
        {
            warnings.push(more_unsearched(more, self.variable));
        }
        if self.unread > 0 {
            warnings.push(format!(
                "{} has {} entries; only the first {MAX_ENTRIES} are read",
                self.variable,
                MAX_ENTRIES + self.unread
            ));
        }
        warnings
    }
}

/// How many more entries of `variable` are not searched, in words.
pub(crate) fn more_unsearched(more: usize, variable: &str) -> String {
    match more {
        1 => format!("1 more entry of {variable} is not searched"),
        n => format!("{n} more entries of {variable} are not searched"),
    }
}

/// Why `entry` is not searched, or `None` when it is.
fn why_not(entry: &Path) -> Option<Why> {
    if !entry.is_absolute() {
        return Some(Why::Relative);
    }
    if entry.as_os_str().len() > MAX_ENTRY_BYTES {
        return Some(Why::TooLong);
    }
    match std::fs::metadata(entry) {
        Ok(m) if m.is_dir() => None,
        Ok(_) => Some(Why::NotAFolder),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(Why::Missing),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => Some(Why::Missing),
        Err(e) => Some(Why::Unreadable(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_absolute_folders_are_searched_and_the_rest_are_named() {
        let dir = std::env::temp_dir().join(format!("pipeweave-path-list-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a-file");
        std::fs::write(&file, "").unwrap();
        let long = PathBuf::from(format!("/{}", "x".repeat(MAX_ENTRY_BYTES)));
        let missing = dir.join("missing");
        let value = std::env::join_paths([
            Path::new("relative"),
            &dir,
            Path::new(""),
            &file,
            &missing,
            &dir,
            &long,
            Path::new("relative"),
        ])
        .unwrap();
        let list = PathList::read("VAR", &value);
        assert_eq!(list.folders, std::slice::from_ref(&dir));
        let whys: Vec<&Why> = list.unsearched.iter().map(|u| &u.why).collect();
        assert_eq!(
            whys,
            [
                &Why::Relative,
                &Why::NotAFolder,
                &Why::Missing,
                &Why::TooLong
            ]
        );
        let warnings = list.warnings();
        assert_eq!(
            warnings[0],
            "the VAR entry `relative` is not searched: only absolute paths are"
        );
        assert!(warnings[1].ends_with("a-file` is not searched: it is not a folder"));
        assert!(warnings[2].ends_with("missing` is not searched: there is no such folder"));
        assert_eq!(
            warnings[3],
            format!(
                "the VAR entry `/{}… (4097 bytes)` is not searched: it is longer than 4096 bytes",
                "x".repeat(79)
            )
        );
        assert_eq!(warnings.len(), 4);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A variable of a hundred thousand entries is read to its 256th, with ten warnings at most.
    #[test]
    fn many_entries_are_bounded() {
        let entries: Vec<String> = (0..100_000).map(|i| format!("r{i}")).collect();
        let list = PathList::read("VAR", &std::env::join_paths(&entries).unwrap());
        assert_eq!(list.unsearched.len(), MAX_ENTRIES);
        assert_eq!(list.unread, 100_000 - MAX_ENTRIES);
        let warnings = list.warnings();
        assert_eq!(warnings.len(), MAX_WARNINGS + 2);
        assert_eq!(
            warnings[MAX_WARNINGS..],
            [
                "248 more entries of VAR are not searched",
                "VAR has 100000 entries; only the first 256 are read",
            ]
        );
    }
}
