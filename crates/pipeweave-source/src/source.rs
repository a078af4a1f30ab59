//! A PLAN or SCHEDULE argument resolved: a library schedule, a `.weave` file, a plugin or a plan
//! file, with what it declares; [`Source::build`] turns it into a validated plan.

use crate::build::{self, Built};
use crate::declared::Declared;
use crate::failure::Failure;
use crate::host::{
    FolderFile, Host, PLUGIN_PREFIX, PluginInfo, PluginTarget, STDIN, SynthesisCosts, UnitTerms,
    looks_like_path, shown_name,
};
use crate::params::Params;
use crate::synthesized::{self, SYNTH_PREFIX, Shape};
use crate::words::{Flag, FrontEnd};
use pipeweave_diagnostics::Files;
use pipeweave_diagnostics::{FileId, visible};
use pipeweave_export::PlanFormat;

/// What a name resolved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// A schedule of the built-in `schedules/` library.
    Library,
    /// A `.weave` file.
    WeaveFile,
    /// A `.weave` file of the user's schedule folders, by its name.
    Folder,
    /// A plugin, by name or library file.
    Plugin,
    /// A plan file: the actions text, PyTorch's CSVs, or a JSON plan.
    PlanFile,
    /// A schedule synthesized for a placement (`synth:PLACEMENT`).
    Synthesized,
}

#[derive(Debug, Clone)]
enum Inner {
    /// A library schedule or a `.weave` file, read into the file table (or why it could not be).
    Weave(Result<(FileId, Declared), Failure>),
    /// A plugin, loaded (or why it could not be).
    Plugin(Result<(PluginInfo, Declared), Failure>),
    /// A synthesized schedule: its placement and what it declares.
    Synthesized(Shape, Declared),
    /// A plan file, read when it is built, in the form its name gives (`.json`: a JSON plan;
    /// `None`: told apart by the text).
    PlanFile { named: Option<PlanFormat> },
}

/// A resolved PLAN or SCHEDULE argument.
///
/// A source that names something that cannot be read or loaded (an unreadable `.weave` file, a
/// broken plugin) still resolves: it declares nothing and building it fails with the reason, so a
/// comparison keeps its row.
#[derive(Debug, Clone)]
pub struct Source {
    /// The argument as the user wrote it: what is read or loaded.
    arg: String,
    /// The argument as it is shown: a path can hold any character, and control characters are
    /// drawn as their pictures ([`pipeweave_diagnostics::visible`]).
    shown: String,
    kind: SourceKind,
    inner: Inner,
}

impl Source {
    /// Resolves `arg`, in this order: `-` (a plan file on standard input); a library schedule's
    /// name; a schedule in the user's folders by its name; a `.weave` file; `synth:PLACEMENT`;
    /// `plugin:NAME` or `plugin:PATH`; an existing file (a plan file; `.json` is a JSON plan); a plugin's name on
    /// the search path. Anything else is an error. A plan file's form is the one its parameters
    /// name, else its name's, else its text's ([`PlanFormat::detect`]).
    pub fn resolve(arg: &str, host: &mut dyn Host, files: &mut Files) -> Result<Source, Failure> {
        let (kind, inner) = if arg == STDIN {
            (SourceKind::PlanFile, Inner::PlanFile { named: None })
        } else if let Some(entry) = pipeweave_dsl::library::get(arg) {
            let file = files.add(format!("schedules/{}.weave", entry.name), entry.source);
            let declared = Declared::of_weave(entry.source);
            (SourceKind::Library, Inner::Weave(Ok((file, declared))))
        } else if let Some(found) = folder_file(arg, host) {
            let read = host.read(&found.path).map(|text| {
                let declared = Declared::of_weave(&text);
                (files.add(found.path, text), declared)
            });
            (SourceKind::Folder, Inner::Weave(read))
        } else if arg.ends_with(".weave") {
            let read = host.read(arg).map(|text| {
                let declared = Declared::of_weave(&text);
                (files.add(shown_name(arg), text), declared)
            });
            (SourceKind::WeaveFile, Inner::Weave(read))
        } else if let Some(placement) = arg.strip_prefix(SYNTH_PREFIX) {
            let shape = Shape::parse(placement)?;
            (
                SourceKind::Synthesized,
                Inner::Synthesized(shape, shape.declared()),
            )
        } else if let Some(target) = arg.strip_prefix(PLUGIN_PREFIX) {
            let plugin = plugin(host, &PluginTarget::parse(target));
            (SourceKind::Plugin, Inner::Plugin(plugin))
        } else if host.is_file(arg) {
            let json = std::path::Path::new(arg)
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("json"));
            let named = json.then_some(PlanFormat::Json);
            (SourceKind::PlanFile, Inner::PlanFile { named })
        } else if !looks_like_path(arg) && host.has_plugin(arg) {
            let plugin = plugin(host, &PluginTarget::Named(arg.to_owned()));
            (SourceKind::Plugin, Inner::Plugin(plugin))
        } else {
            return Err(Failure::invalid(format!(
                "no schedule, plugin or plan file named `{arg}`"
            )));
        };
        Ok(Source {
            arg: arg.to_owned(),
            shown: visible(arg).into_owned(),
            kind,
            inner,
        })
    }

    /// A plan given as text under `name` (the host reads it by that name): a JSON plan when the
    /// text starts with `{`, the actions text otherwise, as for standard input.
    pub fn plan_text(name: &str) -> Source {
        Source {
            arg: name.to_owned(),
            shown: visible(name).into_owned(),
            kind: SourceKind::PlanFile,
            inner: Inner::PlanFile { named: None },
        }
    }

    /// Why it could not be built, in one line: with the place in front for a file the user gave
    /// (a `.weave` file, one of their schedule folders' files, a plan file), as the library's and
    /// plugins' own words otherwise.
    pub fn failure_reason(&self, failure: &Failure, files: &Files) -> String {
        match self.kind {
            SourceKind::WeaveFile | SourceKind::Folder | SourceKind::PlanFile => {
                failure.located_reason(files)
            }
            SourceKind::Library | SourceKind::Plugin | SourceKind::Synthesized => failure.reason(),
        }
    }

    /// The argument as the user wrote it, as it may be shown: control characters (a path can
    /// hold any) drawn as their pictures.
    pub fn name(&self) -> &str {
        &self.shown
    }

    /// What the argument resolved to.
    pub fn kind(&self) -> SourceKind {
        self.kind
    }

    /// Whether it is a plan file, whose ranks and micro-batches are fixed.
    pub fn is_plan_file(&self) -> bool {
        self.kind == SourceKind::PlanFile
    }

    /// The plugin's own name, when it resolved to a plugin that loaded.
    pub fn plugin_name(&self) -> Option<&str> {
        match &self.inner {
            Inner::Plugin(Ok((info, _))) => Some(&info.metadata.name),
            _ => None,
        }
    }

    /// Its parameters and requirements; `None` for a plan file and for a schedule that could not
    /// be read or loaded.
    pub fn declared(&self) -> Option<&Declared> {
        match &self.inner {
            Inner::Weave(Ok((_, d))) | Inner::Plugin(Ok((_, d))) | Inner::Synthesized(_, d) => {
                Some(d)
            }
            _ => None,
        }
    }

    /// Builds and validates the plan for `params` (its evaluation form with
    /// `params.forward_only`). Usage failures: a schedule without P or M, a plan file given
    /// schedule parameters, a setting a schedule cannot take.
    pub fn build(
        &self,
        params: &Params,
        host: &mut dyn Host,
        files: &mut Files,
    ) -> Result<Built, Failure> {
        self.build_under(params, host, files, &UnitTerms, FrontEnd::CommandLine)
    }

    /// [`Source::build`], a synthesized schedule searched under `costs` (the command's), its
    /// errors in `front`'s words.
    pub fn build_under(
        &self,
        params: &Params,
        host: &mut dyn Host,
        files: &mut Files,
        costs: &dyn SynthesisCosts,
        front: FrontEnd,
    ) -> Result<Built, Failure> {
        if !self.is_plan_file() && (params.pipelines.is_some() || params.format.is_some()) {
            let flag = if params.pipelines.is_some() {
                Flag::Pipelines
            } else {
                Flag::PlanFormat
            };
            return Err(Failure::usage(format!(
                "`{}` is a schedule: {} says how to read a plan file",
                self.arg,
                front.flag(flag)
            )));
        }
        let built = match &self.inner {
            Inner::Weave(read) => {
                let (file, declared) = read.as_ref().map_err(Clone::clone)?;
                build::weave(&self.arg, *file, declared, params, files, front)
            }
            Inner::Plugin(plugin) => {
                let (info, declared) = plugin.as_ref().map_err(Clone::clone)?;
                build::plugin(info, declared, params, host, front)
            }
            Inner::Synthesized(shape, declared) => {
                synthesized::build(&self.arg, *shape, declared, params, costs, front)
            }
            Inner::PlanFile { named } => {
                build::plan_file(&self.arg, *named, params, host, files, front)
            }
        }?;
        // One rule for every source: the training plan, valid, then its forwards.
        if params.forward_only {
            built.forward_only()
        } else {
            Ok(built)
        }
    }
}

/// The first file of the user's schedule folders named `arg` (a name, never a path, a file name
/// or `-`).
fn folder_file(arg: &str, host: &mut dyn Host) -> Option<FolderFile> {
    if arg == STDIN
        || looks_like_path(arg)
        || arg.ends_with(".weave")
        || arg.starts_with(PLUGIN_PREFIX)
        || arg.starts_with(SYNTH_PREFIX)
    {
        return None;
    }
    host.schedule_files().into_iter().find(|f| f.name == arg)
}

fn plugin(host: &mut dyn Host, target: &PluginTarget) -> Result<(PluginInfo, Declared), Failure> {
    let info = host.plugin(target)?;
    let declared = Declared::of_plugin(&info.metadata);
    Ok((info, declared))
}

/// The text of a `.weave` schedule to check: a library schedule by name, else one of the user's
/// schedule folders by name, else the file `arg` (`-`: standard input).
pub fn weave_file(arg: &str, host: &mut dyn Host, files: &mut Files) -> Result<FileId, Failure> {
    if let Some(entry) = pipeweave_dsl::library::get(arg) {
        return Ok(files.add(format!("schedules/{}.weave", entry.name), entry.source));
    }
    if let Some(found) = folder_file(arg, host) {
        let text = host.read(&found.path)?;
        return Ok(files.add(found.path, text));
    }
    let text = host.read(arg)?;
    Ok(files.add(shown_name(arg), text))
}
