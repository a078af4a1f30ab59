//! One run of a command: the host that reaches files and plugins, and the files read so far (what
//! diagnostics point into), with the steps every command takes: resolve a name, build its plan,
//! read a spec.

use crate::args::PlanArgs;
use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::Renderer;
use pipeweave_eval::{Costing, synthesis_terms};
use pipeweave_host::FsHost;
use pipeweave_plan::Plan;
use pipeweave_source::{
    Built, Failure, Files, FolderFile, Host, LoadedSpec, Params, PluginId, PluginInfo,
    PluginRequest, PluginTarget, Source, SourceKind, SynthesisTerms,
};

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
    /// The costs of the command, which a synthesized schedule (`synth:PLACEMENT`) is searched
    /// under (`None`: unit costs).
    pub costing: Option<Costing>,
}

impl Session {
    /// A session that shows at most `max_diagnostics` diagnostics (0: all).
    pub fn new(max_diagnostics: usize) -> Session {
        Session {
            host: crate::host::host(),
            files: Files::default(),
            max_diagnostics,
            noted: std::collections::BTreeSet::new(),
            costing: None,
        }
    }

    /// Resolves a PLAN or SCHEDULE argument.
    pub fn resolve(&mut self, arg: &str) -> Result<Source, Failure> {
        Source::resolve(arg, &mut self.host, &mut self.files)
    }

    /// Builds and validates `source`'s plan for `params`; what reading it noted goes to standard
    /// error, once.
    pub fn build(&mut self, source: &Source, params: &Params) -> Result<Built, Failure> {
        let built = match &self.costing {
            Some(costing) if source.kind() == SourceKind::Synthesized => {
                let mut host = UnderCosts {
                    host: &mut self.host,
                    costing,
                };
                source.build(params, &mut host, &mut self.files)?
            }
            _ => source.build(params, &mut self.host, &mut self.files)?,
        };
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

/// The session's host, with the command's costs for a synthesized schedule.
struct UnderCosts<'a> {
    host: &'a mut FsHost,
    costing: &'a Costing,
}

impl Host for UnderCosts<'_> {
    fn is_file(&self, path: &str) -> bool {
        self.host.is_file(path)
    }

    fn read(&mut self, path: &str) -> Result<String, Failure> {
        self.host.read(path)
    }

    fn schedule_files(&mut self) -> Vec<FolderFile> {
        self.host.schedule_files()
    }

    fn has_plugin(&mut self, name: &str) -> bool {
        self.host.has_plugin(name)
    }

    fn plugin(&mut self, target: &PluginTarget) -> Result<PluginInfo, Failure> {
        self.host.plugin(target)
    }

    fn plugins(&mut self) -> Vec<Result<PluginInfo, String>> {
        self.host.plugins()
    }

    fn generate(&mut self, plugin: PluginId, request: &PluginRequest) -> Result<Plan, Failure> {
        self.host.generate(plugin, request)
    }

    fn synthesis_terms(&mut self, skeleton: &ValidPlan) -> Result<Option<SynthesisTerms>, Failure> {
        let terms = synthesis_terms(self.costing, skeleton).map_err(Failure::invalid)?;
        Ok(terms.map(|(costs, budget)| SynthesisTerms {
            costs,
            memory: budget.map(|b| (b.limits, b.weights)),
        }))
    }
}
