//! Everything the resolver needs from the outside world, behind one trait: reading files, listing
//! the user's schedule folders, finding, describing and running plugins. `pipeweave-host`
//! implements it with `std::fs` and plugin worker processes for both front ends.
//!
//! What a synthesized schedule is searched under is not the outside world's business: it comes
//! from the command, through [`SynthesisCosts`] (the application layer gives its costing).

use crate::failure::Failure;
use pipeweave_check::ValidPlan;

use pipeweave_plugin_api::Metadata;
use pipeweave_sim::CostModel;

/// The prefix that picks a plugin explicitly (`plugin:dualpipe`, `plugin:./libmine.so`).
pub const PLUGIN_PREFIX: &str = "plugin:";

/// The argument that names standard input: a plan file where a PLAN or SCHEDULE is expected, a
/// schedule for `check`, a spec for `--spec`. A host reads it as the path `-`.
pub const STDIN: &str = "-";

/// What diagnostics call standard input.
pub const STDIN_NAME: &str = "<stdin>";

/// The name to show for the file `path` reads: `<stdin>` for [`STDIN`], else the path.
pub fn shown_name(path: &str) -> &str {
    if path == STDIN { STDIN_NAME } else { path }
}

/// A plugin as the user names it after `plugin:`, or a bare name on the search path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginTarget {
    /// A name looked up on the host's search path.
    Named(String),
    /// A library file.
    Path(String),
}

impl PluginTarget {
    /// `target` as a path when it looks like one ([`looks_like_path`]), else as a name.
    pub fn parse(target: &str) -> PluginTarget {
        if looks_like_path(target) {
            PluginTarget::Path(target.to_owned())
        } else {
            PluginTarget::Named(target.to_owned())
        }
    }
}

/// The one rule for "is this a path": it has a directory separator or ends like a shared library.
/// A name without either is a schedule, spec or plugin name first.
pub fn looks_like_path(text: &str) -> bool {
    text.contains('/')
        || text.contains(std::path::MAIN_SEPARATOR)
        || text.ends_with(std::env::consts::DLL_SUFFIX)
}

/// A `.weave` file in one of the user's schedule folders (`--schedule-dir`,
/// `PIPEWEAVE_SCHEDULE_PATH`): a schedule by the name of its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderFile {
    /// The file name without `.weave`: the schedule's name.
    pub name: String,
    /// The file's path, as the host reads it.
    pub path: String,
}

/// A plugin the host has loaded, by the handle the host gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PluginId(pub usize);

/// A loaded plugin: its handle, what it says about itself, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginInfo {
    /// The host's handle for [`Host::generate`].
    pub id: PluginId,
    /// The plugin's name, parameters and requirements.
    pub metadata: Metadata,
    /// Where the host found it (a file path), for people.
    pub location: String,
}

/// What a plugin is asked to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginRequest {
    /// Ranks P.
    pub ranks: u32,
    /// Micro-batches M.
    pub microbatches: u32,
    /// `NAME=VALUE` settings as the user wrote them; the host checks them against the plugin's
    /// declared parameters (an unknown name or a bad value is a usage failure).
    pub settings: Vec<(String, String)>,
}

/// The outside world of the resolver.
pub trait Host {
    /// Whether `path` names something to read: [`STDIN`], or an existing entry that is not a
    /// folder (a FIFO or a device answers yes, so that [`Host::read`] can say why it refuses it).
    fn is_file(&self, path: &str) -> bool;

    /// The text of the file at `path` ([`STDIN`]: standard input, read once and kept); a failure
    /// names the file and says why it cannot be read (missing, not a regular file, not UTF-8).
    fn read(&mut self, path: &str) -> Result<String, Failure>;

    /// The text of a profiler trace at `path`: as [`Host::read`] by default; a host that reads
    /// files also unzips a gzipped one (`.json.gz`, told by its first bytes), within a bound.
    fn read_trace(&mut self, path: &str) -> Result<String, Failure> {
        self.read(path)
    }

    /// Every `.weave` file of the user's schedule folders, in search order: folder by folder, by
    /// name within one. Of several files with one name, the first is the one the name means.
    /// None by default.
    fn schedule_files(&mut self) -> Vec<FolderFile> {
        Vec::new()
    }

    /// Whether a plugin called `name` is on the search path (without running it).
    fn has_plugin(&mut self, name: &str) -> bool;

    /// The plugin `target` names, loaded at most once per host.
    fn plugin(&mut self, target: &PluginTarget) -> Result<PluginInfo, Failure>;

    /// Every plugin on the search path, sorted by name; a plugin that cannot be loaded is its
    /// failure in words (it never hides the others).
    fn plugins(&mut self) -> Vec<Result<PluginInfo, String>>;

    /// The plan `plugin` builds for `request`, validated by the host (once) before it is
    /// returned.
    fn generate(&mut self, plugin: PluginId, request: &PluginRequest)
    -> Result<ValidPlan, Failure>;
}

/// What a synthesized schedule (`synth:PLACEMENT`) is searched under: the command's costs and, on
/// a spec, each rank's memory, for a plan of its placement.
pub trait SynthesisCosts {
    /// The terms for a plan of the placement (`skeleton`); `None`: unit costs and 1F1B's memory.
    fn terms(&self, skeleton: &ValidPlan) -> Result<Option<SynthesisTerms>, Failure>;
}

/// Unit costs and 1F1B's memory: what a synthesized schedule is searched under when the command
/// gives nothing else.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnitTerms;

impl SynthesisCosts for UnitTerms {
    fn terms(&self, _: &ValidPlan) -> Result<Option<SynthesisTerms>, Failure> {
        Ok(None)
    }
}

/// The costs and memory a synthesized schedule is searched under, where a command gives more than
/// unit costs.
pub struct SynthesisTerms {
    /// The costs of a plan of the placement.
    pub costs: Box<dyn CostModel>,
    /// On a spec: each rank's limit in activation units and each stage's weight in those units
    /// (what the rank's memory leaves for activations); `None`: 1F1B's memory.
    pub memory: Option<(Vec<u32>, Vec<u32>)>,
}

impl std::fmt::Debug for SynthesisTerms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SynthesisTerms")
            .field("memory", &self.memory)
            .finish_non_exhaustive()
    }
}
