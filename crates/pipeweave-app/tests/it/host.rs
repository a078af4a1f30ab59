//! A host with its files in memory and the shipped generators (`dualpipe`, `dualpipev`,
//! `chimera`) as plugins, run in this process, with the settings read by the one rule of
//! `pipeweave-param`, as the plugin host reads them.

use pipeweave_app::{Events, FrontEnd, Session, Told};
use pipeweave_check::ValidPlan;
use pipeweave_eval::Tick;
use pipeweave_plugin_api::{Generator, Metadata, Request};
use pipeweave_source::{
    Failure, FolderFile, Host, PluginId, PluginInfo, PluginRequest, PluginTarget,
};

const PLUGINS: [&str; 3] = ["chimera", "dualpipe", "dualpipev"];

fn metadata(id: usize) -> Metadata {
    match id {
        0 => pipeweave_generators::Chimera::metadata(),
        1 => pipeweave_generators::DualPipe::metadata(),
        _ => pipeweave_generators::DualPipeV::metadata(),
    }
}

/// Files by path, folder schedules, and the generators as plugins.
#[derive(Debug, Default)]
pub struct MemoryHost {
    pub files: Vec<(String, String)>,
    pub folders: Vec<FolderFile>,
}

impl MemoryHost {
    /// A host that reads `files` (path, text).
    pub fn with(files: &[(&str, &str)]) -> MemoryHost {
        MemoryHost {
            files: files
                .iter()
                .map(|(p, t)| (p.to_string(), t.to_string()))
                .collect(),
            folders: Vec::new(),
        }
    }

    fn info(id: usize) -> PluginInfo {
        PluginInfo {
            id: PluginId(id),
            metadata: metadata(id),
            location: format!("lib/libpipeweave_plugin_{}.so", PLUGINS[id]),
        }
    }
}

impl Host for MemoryHost {
    fn is_file(&self, path: &str) -> bool {
        self.files.iter().any(|(p, _)| p == path)
    }

    fn read(&mut self, path: &str) -> Result<String, Failure> {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, t)| t.clone())
            .ok_or_else(|| Failure::invalid(format!("cannot read `{path}`: not found")))
    }

    fn schedule_files(&mut self) -> Vec<FolderFile> {
        self.folders.clone()
    }

    fn has_plugin(&mut self, name: &str) -> bool {
        PLUGINS.contains(&name)
    }

    fn plugin(&mut self, target: &PluginTarget) -> Result<PluginInfo, Failure> {
        let name = match target {
            PluginTarget::Named(n) | PluginTarget::Path(n) => n,
        };
        PLUGINS
            .iter()
            .position(|p| p == name)
            .map(MemoryHost::info)
            .ok_or_else(|| Failure::invalid(format!("no plugin `{name}`")))
    }

    fn plugins(&mut self) -> Vec<Result<PluginInfo, String>> {
        (0..PLUGINS.len())
            .map(|i| Ok(MemoryHost::info(i)))
            .collect()
    }

    fn generate(
        &mut self,
        plugin: PluginId,
        request: &PluginRequest,
    ) -> Result<ValidPlan, Failure> {
        let metadata = metadata(plugin.0);
        let declared = metadata.params.iter().map(|p| (p.name.as_str(), &p.ty));
        let given = pipeweave_param::read_settings(declared, &request.settings)
            .map_err(|e| Failure::usage(e.to_string()))?;
        let params = metadata
            .params
            .iter()
            .map(|spec| {
                let value = given
                    .iter()
                    .find(|(n, _)| *n == spec.name)
                    .map_or_else(|| spec.default_value(), |(_, v)| v.clone());
                (spec.name.clone(), value)
            })
            .collect();
        let request = Request {
            ranks: request.ranks,
            microbatches: request.microbatches,
            params,
        };
        let plan = match plugin.0 {
            0 => pipeweave_generators::Chimera::generate(&request),
            1 => pipeweave_generators::DualPipe::generate(&request),
            _ => pipeweave_generators::DualPipeV::generate(&request),
        };
        let plan = plan.map_err(|e| Failure::invalid(format!("{}: {e}", PLUGINS[plugin.0])))?;
        // As the plugin host does: what a plugin returns is validated before it is handed on.
        pipeweave_check::validate(plan)
            .map_err(|p| Failure::invalid(format!("{} problems", p.len())))
    }
}

/// What a command told, as the command line would print it, and the sweep's ticks.
#[derive(Debug, Default)]
pub struct Heard {
    pub told: Vec<String>,
    pub ticks: Vec<(u64, u64)>,
}

impl Events for Heard {
    fn tell(&mut self, told: Told<'_>) {
        self.told.push(match told {
            Told::Rendered(text) => text.trim_end().to_owned(),
            Told::Warning(m) => format!("warning: {m}"),
            Told::Note(m) => format!("note: {m}"),
        });
    }

    fn sweep_progress(&mut self, tick: &Tick<'_>) {
        self.ticks.push((tick.done, tick.total));
    }
}

/// Runs `f` in a session of `front` over `host`; returns its result and what it told.
pub fn run<T>(
    host: &mut MemoryHost,
    front: FrontEnd,
    f: impl FnOnce(&mut Session<'_>) -> T,
) -> (T, Heard) {
    let mut heard = Heard::default();
    let out = {
        let mut session = Session::new(host, &mut heard, front, 0);
        f(&mut session)
    };
    (out, heard)
}
