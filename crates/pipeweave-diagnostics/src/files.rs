//! The texts read for one run, by [`FileId`]: what diagnostics' spans point into.

use crate::FileId;

/// Every source text a run has read (schedules, plan files, specs) with the name to show for it.
#[derive(Debug, Clone, Default)]
pub struct Files {
    files: Vec<(String, String)>,
}

impl Files {
    /// Adds a text and returns its id.
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        self.files.push((name.into(), text.into()));
        FileId((self.files.len() - 1) as u32)
    }

    /// The name of file `id` (a path or `schedules/NAME.weave`).
    pub fn name(&self, id: FileId) -> Option<&str> {
        self.files.get(id.0 as usize).map(|(n, _)| n.as_str())
    }

    /// The text of file `id`.
    pub fn text(&self, id: FileId) -> Option<&str> {
        self.files.get(id.0 as usize).map(|(_, t)| t.as_str())
    }

    /// Every file as (id, name, text), in the order added.
    pub fn iter(&self) -> impl Iterator<Item = (FileId, &str, &str)> {
        self.files
            .iter()
            .enumerate()
            .map(|(i, (n, t))| (FileId(i as u32), n.as_str(), t.as_str()))
    }
}
