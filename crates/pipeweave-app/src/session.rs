//! One run of a command: the host that reaches files and plugins, the files read so far (what
//! diagnostics point into), the command's costs (what a `synth:` schedule is searched under), and
//! what the user is told on the way, once each.

use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::{Diagnostic, Renderer};
use pipeweave_eval::{Costing, SpecRule, Tick, synthesis_terms};
use pipeweave_source::FrontEnd;
use pipeweave_source::{
    Built, Failure, Files, Host, LoadedSpec, Params, Source, SynthesisCosts, SynthesisTerms,
};
use std::collections::BTreeSet;

/// What the user is told while a command works, beside its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Told<'a> {
    /// Diagnostics rendered by the one renderer (a spec's warnings, what reading a plan noted).
    Rendered(&'a str),
    /// A warning in one line (a plugin that failed to load, ranks left out of a drawing).
    Warning(&'a str),
    /// Information beside the result (how a spec was fitted, how long a search took).
    Note(&'a str),
}

/// The outside world's side of a command while it runs: what it tells the user and how far it
/// is. The command line writes to standard error and draws progress bars; the Python binding
/// turns warnings into Python warnings.
pub trait Events {
    /// Tells the user something beside the result.
    fn tell(&mut self, told: Told<'_>);

    /// A point of a sweep is done.
    fn sweep_progress(&mut self, tick: &Tick<'_>) {
        let _ = tick;
    }

    /// A synthesis has tried `evaluations` plans of `budget`; its best makespan is `best`.
    fn synthesis_progress(&mut self, evaluations: u64, budget: u64, best: f64) {
        let _ = (evaluations, budget, best);
    }

    /// The synthesis's search is over (a bar may be cleared).
    fn synthesis_done(&mut self) {}
}

/// Events that go nowhere: for tests and callers that want the result alone.
#[derive(Debug, Default)]
pub struct Quiet;

impl Events for Quiet {
    fn tell(&mut self, _: Told<'_>) {}
}

/// The outside world of one command.
pub struct Session<'a> {
    host: &'a mut dyn Host,
    /// Every text read: what diagnostics point into.
    pub files: Files,
    events: &'a mut dyn Events,
    /// Which front end the words of errors are for.
    pub front: FrontEnd,
    max_diagnostics: usize,
    /// The command's costs: a synthesized schedule is searched under them.
    costing: Costing,
    /// The rendered notes told so far: a plan built again (a sweep) tells nothing new.
    told: BTreeSet<String>,
    /// What standard input was read for (`-` as a plan, a schedule or a spec), once.
    stdin: Option<&'static str>,
}

impl std::fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("front", &self.front)
            .field("costing", &self.costing)
            .finish_non_exhaustive()
    }
}

impl<'a> Session<'a> {
    /// A session over `host` (its folders already set) that tells `events`, rendering at most
    /// `max_diagnostics` diagnostics of a kind at once (0: all).
    pub fn new(
        host: &'a mut dyn Host,
        events: &'a mut dyn Events,
        front: FrontEnd,
        max_diagnostics: usize,
    ) -> Session<'a> {
        Session {
            host,
            files: Files::default(),
            events,
            front,
            max_diagnostics,
            costing: Costing::Unit,
            told: BTreeSet::new(),
            stdin: None,
        }
    }

    /// The host, for what only it knows (the catalog).
    pub(crate) fn host(&mut self) -> &mut dyn Host {
        self.host
    }

    /// The host and the files, both at once (what a resolver's function takes).
    pub(crate) fn host_and_files(&mut self) -> (&mut dyn Host, &mut Files) {
        (self.host, &mut self.files)
    }

    /// The events, for a search's progress.
    pub(crate) fn events(&mut self) -> &mut dyn Events {
        self.events
    }

    /// Tells the user `message` as a warning.
    pub(crate) fn warning(&mut self, message: &str) {
        self.events.tell(Told::Warning(message));
    }

    /// Tells the user `message` as a note.
    pub(crate) fn note(&mut self, message: &str) {
        self.events.tell(Told::Note(message));
    }

    /// `diagnostics` rendered, for the user; `once`: only if this text was not told before.
    fn tell_rendered(&mut self, diagnostics: &[Diagnostic], once: bool) {
        if diagnostics.is_empty() {
            return;
        }
        let text = Renderer::new(&self.files, self.max_diagnostics).many(diagnostics);
        if !once || self.told.insert(text.clone()) {
            self.events.tell(Told::Rendered(&text));
        }
    }

    /// The command's costs, which a synthesized schedule is searched under from now on.
    pub(crate) fn set_costing(&mut self, costing: &Costing) {
        self.costing = costing.clone();
    }

    /// Standard input is one text: named twice (`simulate - --spec -`), the second is refused.
    fn claim_stdin(&mut self, arg: &str, what: &'static str) -> Result<(), Failure> {
        if arg != pipeweave_source::STDIN {
            return Ok(());
        }
        match self.stdin.replace(what) {
            None => Ok(()),
            Some(first) => Err(Failure::usage(format!(
                "standard input (`-`) is read once, for the {first}: give the {what} in a file"
            ))),
        }
    }

    /// Resolves a PLAN or SCHEDULE argument.
    pub fn resolve(&mut self, arg: &str) -> Result<Source, Failure> {
        self.claim_stdin(arg, "plan")?;
        Source::resolve(arg, self.host, &mut self.files)
    }

    /// Builds and validates `source`'s plan for `params` (a synthesized schedule under the
    /// command's costs); what reading it noted is told once.
    pub fn build(&mut self, source: &Source, params: &Params) -> Result<Built, Failure> {
        let terms = CostingTerms(&self.costing);
        let built = source.build_under(params, self.host, &mut self.files, &terms, self.front)?;
        self.tell_rendered(&built.notes, true);
        Ok(built)
    }

    /// The validated plan `arg` names, built with `params` (every plan goes through the
    /// validator).
    pub fn load(&mut self, arg: &str, params: &Params) -> Result<Built, Failure> {
        let source = self.resolve(arg)?;
        self.build(&source, params)
    }

    /// The spec `arg` names, or the built-in default; its warnings are told.
    pub fn spec(&mut self, arg: Option<&str>) -> Result<LoadedSpec, Failure> {
        self.claim_stdin(arg.unwrap_or_default(), "spec")?;
        let spec =
            pipeweave_source::load_spec(arg.unwrap_or("default"), self.host, &mut self.files)?;
        self.tell_rendered(&spec.warnings, false);
        Ok(spec)
    }

    /// On measured costs, what `name`'s plan needed that the run did not measure, as notes.
    pub(crate) fn tell_derived(&mut self, costing: &Costing, name: &str, derived: &[String]) {
        if matches!(costing, Costing::Measured { .. }) {
            for d in derived {
                self.note(&format!("{name}: {d}"));
            }
        }
    }

    /// The costing of the measured-costs file at `path`; a note says where and when they were
    /// measured.
    pub(crate) fn measured_costing(&mut self, path: &str) -> Result<Costing, Failure> {
        let costs = self.measured_costs(path)?;
        Ok(Costing::Measured {
            costs: Box::new(costs),
            file: path.to_owned(),
        })
    }

    /// The costs file at `path`, read and checked; a note says where and when they were measured.
    pub(crate) fn measured_costs(
        &mut self,
        path: &str,
    ) -> Result<pipeweave_calibrate::Calibration, Failure> {
        self.claim_stdin(path, "measured costs")?;
        let text = self.host.read(path)?;
        let file = self.files.add(path, text.clone());
        let costs =
            pipeweave_calibrate::read_costs(&text, file).map_err(Failure::from_diagnostics)?;
        let note = pipeweave_report::measured_text(&costs, path);
        self.note(&note);
        Ok(costs)
    }

    /// The costing of a spec `arg` names, met by `rule`.
    pub(crate) fn spec_costing(
        &mut self,
        arg: Option<&str>,
        rule: SpecRule,
    ) -> Result<Costing, Failure> {
        let loaded = self.spec(arg)?;
        Ok(Costing::Spec {
            spec: Box::new(loaded.spec),
            default: loaded.default,
            rule,
        })
    }
}

/// A command's costing as the terms a synthesized schedule is searched under.
struct CostingTerms<'c>(&'c Costing);

impl SynthesisCosts for CostingTerms<'_> {
    fn terms(&self, skeleton: &ValidPlan) -> Result<Option<SynthesisTerms>, Failure> {
        let terms = synthesis_terms(self.0, skeleton).map_err(Failure::from_diagnostics)?;
        Ok(terms.map(|(costs, budget)| SynthesisTerms {
            costs,
            memory: budget.map(|b| (b.limits, b.weights)),
        }))
    }
}
