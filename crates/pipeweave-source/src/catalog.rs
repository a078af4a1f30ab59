//! Every schedule available by name: the built-in library and the plugins on the host's search
//! path, for `list` and for searches over all schedules.

use crate::declared::Declared;
use crate::host::{Host, PLUGIN_PREFIX};

/// Where a schedule comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The built-in `schedules/` library.
    Library,
    /// A plugin, at this location.
    Plugin(String),
}

/// One schedule available by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name it is known by (a library schedule's or a plugin's own name).
    pub name: String,
    /// Where it comes from.
    pub origin: Origin,
    /// What it declares.
    pub declared: Declared,
}

impl Entry {
    /// The name that resolves to this entry: a plugin that shares a library schedule's name is
    /// `plugin:NAME`.
    pub fn resolvable_name(&self) -> String {
        match self.origin {
            Origin::Plugin(_) if pipeweave_dsl::library::get(&self.name).is_some() => {
                format!("{PLUGIN_PREFIX}{}", self.name)
            }
            _ => self.name.clone(),
        }
    }
}

/// Every library schedule, sorted by name.
pub fn library() -> Vec<Entry> {
    pipeweave_dsl::library::all()
        .map(|e| Entry {
            name: e.name.to_owned(),
            origin: Origin::Library,
            declared: Declared::of_weave(e.source),
        })
        .collect()
}

/// The pairs (library schedule, plugin) that build the same plans: the library schedule says so
/// (`same as plugin NAME`), the plugin is there, and both declare the same parameters (names,
/// types, defaults). The library's claim is proven by a test over a grid of P, M and every
/// option; `compare` checks it again on the plans of its row.
pub fn twins(library: &[Entry], plugins: &[Entry]) -> Vec<(String, String)> {
    library
        .iter()
        .filter_map(|l| {
            let name = l.declared.same_as_plugin.as_ref()?;
            let plugin = plugins.iter().find(|p| p.name == *name)?;
            l.declared
                .same_params(&plugin.declared)
                .then(|| (l.name.clone(), plugin.name.clone()))
        })
        .collect()
}

/// Every plugin on the host's search path, sorted by name, and the failures of those that could
/// not be loaded (a broken plugin never hides the others).
pub fn plugins(host: &mut dyn Host) -> (Vec<Entry>, Vec<String>) {
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    for found in host.plugins() {
        match found {
            Ok(info) => entries.push(Entry {
                name: info.metadata.name.clone(),
                origin: Origin::Plugin(info.location.clone()),
                declared: Declared::of_plugin(&info.metadata),
            }),
            Err(e) => errors.push(e),
        }
    }
    (entries, errors)
}
