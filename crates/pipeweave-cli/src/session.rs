//! One run of a command: the host that reaches files and plugins, and the files read so far (what
//! diagnostics point into), with the steps every command takes: resolve a name, build its plan,
//! read a spec.

use crate::args::PlanArgs;
use pipeweave_diagnostics::Renderer;
use pipeweave_host::FsHost;
use pipeweave_source::{Built, Failure, Files, LoadedSpec, Params, Source};

/// The outside world of one command.
#[derive(Debug)]
pub struct Session {
    /// Files and plugins.
    pub host: FsHost,
    /// Every text read.
    pub files: Files,
    /// How many diagnostics to show (`--max-diagnostics`; 0: all).
    pub max_diagnostics: usize,
    /// The notes shown so far, as shown: a plan built again (a sweep) notes nothing new.
    noted: std::collections::BTreeSet<String>,
}

impl Session {
    /// A session that shows at most `max_diagnostics` diagnostics (0: all).
    pub fn new(max_diagnostics: usize) -> Session {
        Session {
            host: crate::host::host(),
            files: Files::default(),
            max_diagnostics,
            noted: std::collections::BTreeSet::new(),
        }
    }

    /// Resolves a PLAN or SCHEDULE argument.
    pub fn resolve(&mut self, arg: &str) -> Result<Source, Failure> {
        Source::resolve(arg, &mut self.host, &mut self.files)
    }

    /// Builds and validates `source`'s plan for `params`; what reading it noted goes to standard
    /// error, once.
    pub fn build(&mut self, source: &Source, params: &Params) -> Result<Built, Failure> {
        let built = source.build(params, &mut self.host, &mut self.files)?;
        if !built.notes.is_empty() {
            let text = Renderer::new(&self.files, self.max_diagnostics).many(&built.notes);
            if self.noted.insert(text.clone()) {
                crate::output::warn(&text);
            }
        }
        Ok(built)
    }

    /// The validated plan the arguments name (every plan goes through the validator).
    pub fn load(&mut self, args: &PlanArgs) -> Result<Built, Failure> {
        self.host.with_plugin_dirs(&args.params.plugin_dirs);
        self.host.with_schedule_dirs(&args.params.schedule_dirs);
        let source = self.resolve(&args.plan)?;
        self.build(&source, &args.params.params())
    }

    /// The spec `--spec` names, or the built-in default; its warnings go to standard error.
    pub fn spec(&mut self, arg: Option<&str>) -> Result<LoadedSpec, Failure> {
        let spec =
            pipeweave_source::load_spec(arg.unwrap_or("default"), &mut self.host, &mut self.files)?;
        let renderer = Renderer::new(&self.files, self.max_diagnostics);
        crate::output::warn(&renderer.many(&spec.warnings));
        Ok(spec)
    }
}
