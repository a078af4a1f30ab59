//! Every schedule available by name: the built-in library, the user's schedule folders and the
//! plugins on the host's search path, for `list` and for searches over all schedules.

use crate::declared::Declared;
use crate::host::{Host, PLUGIN_PREFIX};
use pipeweave_diagnostics::visible;
use std::borrow::Cow;

/// Where a schedule comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The built-in `schedules/` library.
    Library,
    /// A `.weave` file of the user's schedule folders, at this path.
    Folder(String),
    /// A plugin, at this location.
    Plugin(String),
}

/// One schedule available by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its own name: a library schedule's or a folder file's (the file name without `.weave`),
    /// or a plugin's.
    pub name: String,
    /// The name that resolves to it: its own, or `plugin:NAME` for a plugin whose name a library
    /// or folder schedule takes first.
    pub resolves_as: String,
    /// Where it comes from.
    pub origin: Origin,
    /// What it declares.
    pub declared: Declared,
}

/// A file of the user's schedule folders that its name does not reach: an earlier schedule
/// (the library's, or a file in an earlier folder) has the name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shadowed {
    /// The name.
    pub name: String,
    /// The file that is not reached.
    pub path: String,
    /// What the name means instead: `the library's` or another file's path.
    pub by: String,
}

/// Every schedule available by name, in the order names are looked up.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// The library (by name), the folders' schedules (in search order), the plugins (by name).
    pub entries: Vec<Entry>,
    /// Folder files whose names mean something else.
    pub shadowed: Vec<Shadowed>,
    /// Plugins that could not be loaded and folder files that could not be read, in words (a
    /// broken one never hides the others).
    pub errors: Vec<String>,
    /// The (schedule, plugin) pairs that build the same plans (see [`twins`]).
    pub twins: Vec<(String, String)>,
}

impl Catalog {
    /// Reads everything the host offers: the library, the folders, the plugins.
    pub fn read(host: &mut dyn Host) -> Catalog {
        let mut entries = library();
        let mut shadowed = Vec::new();
        let mut errors = Vec::new();
        for file in host.schedule_files() {
            // A name is typed and shown: a file whose name holds a control character is not one.
            if let Some((_, c)) = pipeweave_diagnostics::first_control(&file.name) {
                errors.push(format!(
                    "`{}` is not a schedule name: it holds a control character ({}); rename the file",
                    visible(&file.path),
                    pipeweave_diagnostics::code_point(c)
                ));
                continue;
            }
            if let Some(first) = entries.iter().find(|e| e.name == file.name) {
                let by = match &first.origin {
                    Origin::Folder(path) => path.clone(),
                    _ => format!("the library's {}", first.name),
                };
                shadowed.push(Shadowed {
                    name: file.name,
                    path: file.path,
                    by,
                });
                continue;
            }
            match host.read(&file.path) {
                Ok(text) => entries.push(Entry {
                    resolves_as: file.name.clone(),
                    name: file.name,
                    origin: Origin::Folder(file.path),
                    declared: Declared::of_weave(&text),
                }),
                Err(f) => errors.push(f.reason()),
            }
        }
        let (mut plugins, plugin_errors) = plugins(host);
        errors.extend(plugin_errors);
        // The front ends print these as they are; a path in them can hold any character.
        for e in &mut errors {
            if let Cow::Owned(shown) = visible(e) {
                *e = shown;
            }
        }
        for p in &mut plugins {
            if entries.iter().any(|e| e.name == p.name) {
                p.resolves_as = format!("{PLUGIN_PREFIX}{}", p.name);
            }
        }
        let twins = twins(&entries, &plugins);
        entries.extend(plugins);
        Catalog {
            entries,
            shadowed,
            errors,
            twins,
        }
    }

    /// The plugin twin of the schedule `name` (a library or folder schedule), if it has one.
    pub fn twin_of(&self, name: &str) -> Option<&str> {
        self.twins
            .iter()
            .find(|(s, _)| s == name)
            .map(|(_, p)| p.as_str())
    }

    /// Whether the plugin `name` has a schedule twin.
    pub fn is_twin_plugin(&self, name: &str) -> bool {
        self.twins.iter().any(|(_, p)| p == name)
    }
}

/// Every library schedule, sorted by name.
pub fn library() -> Vec<Entry> {
    pipeweave_dsl::library::all()
        .map(|e| Entry {
            name: e.name.to_owned(),
            resolves_as: e.name.to_owned(),
            origin: Origin::Library,
            declared: Declared::of_weave(e.source),
        })
        .collect()
}

/// The pairs (schedule, plugin) that build the same plans: the `.weave` schedule says so
/// (`same as plugin NAME`), the plugin is there, and both declare the same parameters (names,
/// types, defaults). The library's claims are proven by a test over a grid of P, M and every
/// option; `compare` checks a claim again on the plans of its row.
pub fn twins(schedules: &[Entry], plugins: &[Entry]) -> Vec<(String, String)> {
    schedules
        .iter()
        .filter(|s| !matches!(s.origin, Origin::Plugin(_)))
        .filter_map(|s| {
            let name = s.declared.same_as_plugin.as_ref()?;
            let plugin = plugins
                .iter()
                .find(|p| p.name == *name && matches!(p.origin, Origin::Plugin(_)))?;
            s.declared
                .same_params(&plugin.declared)
                .then(|| (s.name.clone(), plugin.name.clone()))
        })
        .collect()
}

/// Every plugin on the host's search path, sorted by name, and the failures of those that could
/// not be loaded (a broken plugin never hides the others). A plugin that shares a library
/// schedule's name resolves as `plugin:NAME`.
pub fn plugins(host: &mut dyn Host) -> (Vec<Entry>, Vec<String>) {
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    for found in host.plugins() {
        match found {
            Ok(info) => {
                let name = info.metadata.name.clone();
                let resolves_as = if pipeweave_dsl::library::get(&name).is_some() {
                    format!("{PLUGIN_PREFIX}{name}")
                } else {
                    name.clone()
                };
                entries.push(Entry {
                    name,
                    resolves_as,
                    origin: Origin::Plugin(info.location.clone()),
                    declared: Declared::of_plugin(&info.metadata),
                });
            }
            Err(e) => errors.push(e),
        }
    }
    (entries, errors)
}
