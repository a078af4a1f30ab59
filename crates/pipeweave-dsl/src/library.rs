//! The built-in schedule library: the `.weave` files of the workspace's `schedules/` folder,
//! embedded at build time (see `build.rs`).

/// (name, source) of every library schedule, sorted by name.
static LIBRARY: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/library.rs"));

/// One schedule of the library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The file name without `.weave`, e.g. `zb-v`.
    pub name: &'static str,
    /// The schedule's `.weave` text.
    pub source: &'static str,
}

/// Every library schedule, sorted by name.
pub fn all() -> impl Iterator<Item = Entry> {
    LIBRARY.iter().map(|&(name, source)| Entry { name, source })
}

/// The library schedule called `name`, if any.
pub fn get(name: &str) -> Option<Entry> {
    all().find(|e| e.name == name)
}
