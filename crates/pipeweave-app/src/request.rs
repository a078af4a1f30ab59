//! What several commands take: the costs a plan is priced with (unit costs, uniform costs, or a
//! spec met by the one rule) and a plan loaded with what its source declares.

use crate::session::Session;
use pipeweave_eval::{Costing, SpecRule, Split};
use pipeweave_sim::UniformCosts;
use pipeweave_source::Flag;
use pipeweave_source::{Built, Declared, Failure, Params, Source, SourceKind};

/// The costs a command prices plans with: unit costs by default, uniform costs, or a cluster spec
/// met by a rule.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CostsArg {
    /// Uniform costs (`--costs`).
    pub uniform: Option<UniformCosts>,
    /// A cluster spec: a TOML file (`-`: standard input), a shipped spec's name, or `default`.
    pub spec: Option<String>,
    /// How the spec meets each plan (`--strict-spec`, `--keep-dp`, `--global-batch`).
    pub rule: SpecRule,
    /// A measured-costs file (`--costs-from`), as `calibrate` writes it.
    pub costs_from: Option<String>,
}

impl CostsArg {
    /// Whether the command was given costs (uniform or a spec), not unit costs by default.
    pub fn is_given(&self) -> bool {
        self.uniform.is_some() || self.spec.is_some() || self.costs_from.is_some()
    }
}

impl Session<'_> {
    /// Refuses a plan and a spec both on standard input before either is read.
    pub(crate) fn plan_and_spec(&self, plan: &str, costs: &CostsArg) -> Result<(), Failure> {
        if plan == pipeweave_source::STDIN && costs.spec.as_deref() == Some(pipeweave_source::STDIN)
        {
            return Err(Failure::usage(
                "standard input (`-`) is read once, for the plan: give the spec in a file",
            ));
        }
        Ok(())
    }

    /// Checks a spec rule's flags: they need a spec (`spec`: whether one is given), and a strict
    /// spec fits nothing.
    pub(crate) fn check_rule(&self, rule: &SpecRule, spec: bool) -> Result<(), Failure> {
        let name = |f| self.front.flag(f);
        let given = [
            (rule.strict, Flag::StrictSpec),
            (rule.keep_dp, Flag::KeepDp),
            (rule.global_batch, Flag::GlobalBatch),
            (rule.split != Split::Spec, Flag::Split),
            (rule.recompute.is_some(), Flag::Recompute),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag));
        if let (Some(flag), false) = (given, spec) {
            return Err(Failure::usage(format!(
                "{} says how a spec meets the plans; give one with {}",
                name(flag),
                name(Flag::Spec)
            )));
        }
        if rule.strict && (rule.keep_dp || rule.global_batch) {
            let fit = if rule.keep_dp {
                Flag::KeepDp
            } else {
                Flag::GlobalBatch
            };
            return Err(Failure::usage(format!(
                "{} refuses a plan of another shape, and {} says how to fit one: give one or the other",
                name(Flag::StrictSpec),
                name(fit)
            )));
        }
        Ok(())
    }

    /// The costing `costs` asks for (the spec read, its warnings told), which a synthesized
    /// schedule is then searched under.
    pub fn costing(&mut self, costs: &CostsArg) -> Result<Costing, Failure> {
        self.check_rule(&costs.rule, costs.spec.is_some())?;
        if let Some(file) = &costs.costs_from {
            let other = if costs.spec.is_some() {
                Some(Flag::Spec)
            } else if costs.uniform.is_some() {
                Some(Flag::Costs)
            } else {
                None
            };
            if let Some(other) = other {
                return Err(Failure::usage(format!(
                    "give {} or {}, not both",
                    self.front.flag(Flag::CostsFrom),
                    self.front.flag(other)
                )));
            }
            let costing = self.measured_costing(file)?;
            self.set_costing(&costing);
            return Ok(costing);
        }
        let costing = match (&costs.spec, costs.uniform) {
            (Some(_), Some(_)) => {
                return Err(Failure::usage(format!(
                    "give {} or {}, not both",
                    self.front.flag(Flag::Spec),
                    self.front.flag(Flag::Costs)
                )));
            }
            (Some(spec), None) => self.spec_costing(Some(spec), costs.rule.clone())?,
            (None, Some(uniform)) => Costing::Uniform(uniform),
            (None, None) => Costing::Unit,
        };
        self.set_costing(&costing);
        Ok(costing)
    }

    /// The plan `arg` names under `costing`: on a spec, P and M are the spec's where `params`
    /// leave them out (a plan file has its own).
    pub fn load_on(
        &mut self,
        arg: &str,
        params: &Params,
        costing: &Costing,
    ) -> Result<Loaded, Failure> {
        let source = self.resolve(arg)?;
        let mut params = params.clone();
        if let Costing::Spec { spec, rule, .. } = costing
            && !source.is_plan_file()
        {
            let (p, m) = pipeweave_eval::plan_shape(spec, rule, params.ranks, params.microbatches)
                .map_err(|d| {
                    Failure::invalid(format!("spec {}: {}", spec.name, d.message)).about_spec()
                })?;
            params.ranks = Some(p);
            params.microbatches = Some(m);
        }
        let built = self.build(&source, &params)?;
        Ok(Loaded::new(&source, built))
    }
}

/// A plan built from a PLAN or SCHEDULE argument, with what its source declares: what a front end
/// keeps of a compiled plan (Python's `Plan`) to compare it later as the command line would.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The argument as the user wrote it.
    pub arg: String,
    /// The validated plan.
    pub built: Built,
    /// What the source declares: parameters, requirements, a twin plugin; `None` for a plan file.
    pub declared: Option<Declared>,
    /// The plugin's own name, for a plugin.
    pub plugin: Option<String>,
    /// What the argument resolved to.
    pub kind: SourceKind,
}

impl Loaded {
    /// `built`, the plan of `source`.
    pub fn new(source: &Source, built: Built) -> Loaded {
        Loaded {
            arg: source.name().to_owned(),
            built,
            declared: source.declared().cloned(),
            plugin: source.plugin_name().map(str::to_owned),
            kind: source.kind(),
        }
    }

    /// What the schedule requires of P and M, in its own words (empty for a plan file).
    pub fn requires(&self) -> &str {
        self.declared.as_ref().map_or("", |d| d.requires.as_str())
    }
}
