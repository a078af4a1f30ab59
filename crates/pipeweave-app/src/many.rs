//! Several schedules built with the same parameters, as `compare`, `render`, `sweep` and `report`
//! take them: resolved once, `--set` handed to the schedules that declare it, each built (and
//! simulated, and compared) on its own so one that cannot run never stops the others.

use crate::request::Loaded;
use crate::session::Session;
use pipeweave_check::ValidPlan;
use pipeweave_eval::{Comparison, Costing, PlanRequest, Planner, SpecRule, Unbuilt};
use pipeweave_sim::UniformCosts;
use pipeweave_source::FrontEnd;
use pipeweave_source::{Built, Declared, Failure, Files, Params, Setting, Source};
use pipeweave_spec::Spec;

/// What a comparison is on: the spec, how it meets each plan, and the durations of the makespan
/// column when it has one.
#[derive(Debug, Clone)]
pub(crate) struct CompareOn<'a> {
    /// The spec.
    pub spec: &'a Spec,
    /// Whether it is the built-in default.
    pub default: bool,
    /// How it meets each plan.
    pub rule: SpecRule,
    /// The makespan column's costs (unit costs or `--costs`), when it is shown.
    pub units: Option<UniformCosts>,
    /// Measured costs (`--costs-from`: the file and its costs) every plan is also priced with.
    pub measured: Option<(&'a str, &'a pipeweave_calibrate::Calibration)>,
}

/// One schedule of several: a name resolved, or a plan a front end already holds.
#[derive(Debug)]
pub(crate) enum Member {
    /// A name, resolved.
    Named(Box<Source>),
    /// A plan already built (Python's `Plan`): a fixed shape, like a plan file.
    Loaded(Box<Loaded>),
}

impl Member {
    /// The argument as the user wrote it.
    pub fn name(&self) -> &str {
        match self {
            Member::Named(s) => s.name(),
            Member::Loaded(l) => &l.arg,
        }
    }

    /// What it declares.
    pub fn declared(&self) -> Option<&Declared> {
        match self {
            Member::Named(s) => s.declared(),
            Member::Loaded(l) => l.declared.as_ref(),
        }
    }

    /// The plugin's own name, for a plugin.
    fn plugin_name(&self) -> Option<&str> {
        match self {
            Member::Named(s) => s.plugin_name(),
            Member::Loaded(l) => l.plugin.as_deref(),
        }
    }

    /// Whether its P and M are fixed (a plan file, or a plan already built).
    pub fn fixed_shape(&self) -> bool {
        match self {
            Member::Named(s) => s.is_plan_file(),
            Member::Loaded(_) => true,
        }
    }

    /// Whether it takes the parameter `name`.
    fn takes(&self, name: &str) -> bool {
        self.declared().is_some_and(|d| d.takes(name))
    }

    /// Why it could not be built, in one line (with its place for a file the user gave).
    pub fn failure_reason(&self, failure: &Failure, files: &Files) -> String {
        match self {
            Member::Named(s) => s.failure_reason(failure, files),
            Member::Loaded(_) => failure.reason(),
        }
    }
}

/// The schedules of one command, resolved, with the command's parameters.
#[derive(Debug)]
pub(crate) struct Many {
    /// In the order given.
    pub members: Vec<Member>,
    params: Params,
}

impl Many {
    /// Resolves every schedule (a name nothing answers to is an error), after `first` when a front
    /// end holds its plan already, and checks that every `--set` names a parameter at least one of
    /// them declares.
    pub fn resolve(
        session: &mut Session<'_>,
        names: &[String],
        params: &Params,
        first: Option<Loaded>,
    ) -> Result<Many, Failure> {
        let mut members: Vec<Member> = first
            .map(|l| Member::Loaded(Box::new(l)))
            .into_iter()
            .collect();
        for n in names {
            members.push(Member::Named(Box::new(session.resolve(n)?)));
        }
        if (params.pipelines.is_some() || params.format.is_some())
            && !members.iter().any(Member::fixed_shape)
        {
            let flag = if params.pipelines.is_some() {
                "--pipelines"
            } else {
                "--plan-format"
            };
            return Err(Failure::usage(format!(
                "{flag} says how to read a plan file, and none of the schedules is one"
            )));
        }
        for s in &params.settings {
            if !members.iter().any(|m| m.takes(&s.name)) {
                let given = match session.front {
                    FrontEnd::CommandLine => format!("--set {}={}", s.name, s.value),
                    FrontEnd::Python => format!("{}={}", s.name, s.value),
                };
                return Err(Failure::usage(format!(
                    "{given}: none of the schedules has a parameter `{}`",
                    s.name
                )));
            }
        }
        Ok(Many {
            members,
            params: params.clone(),
        })
    }

    /// The schedules' names as given.
    pub fn names(&self) -> Vec<String> {
        self.members.iter().map(|m| m.name().to_owned()).collect()
    }

    /// P and M as the command gives them (`None` where it does not).
    pub fn given(&self) -> PlanRequest {
        PlanRequest {
            ranks: self.params.ranks,
            microbatches: self.params.microbatches,
            stages_per_rank: None,
        }
    }

    /// P and M given to the command, else `costing`'s (a spec's, M following P where the spec's
    /// rule keeps the global batch).
    pub fn shape(&self, costing: &Costing) -> Result<PlanRequest, Failure> {
        let (ranks, microbatches) = costing
            .shape(self.params.ranks, self.params.microbatches)
            .map_err(|d| Failure::from_diagnostics(vec![d]).about_spec())?;
        Ok(PlanRequest {
            ranks,
            microbatches,
            stages_per_rank: None,
        })
    }

    /// The parameters of `member`: P and M from `request` (none for a fixed shape), `v` (the
    /// request's, else the command's) and `--set` only where it declares them.
    fn params_for(&self, member: &Member, request: &PlanRequest) -> Params {
        let fixed = member.fixed_shape();
        Params {
            ranks: request.ranks.filter(|_| !fixed),
            microbatches: request.microbatches.filter(|_| !fixed),
            stages_per_rank: request
                .stages_per_rank
                .or(self.params.stages_per_rank)
                .filter(|_| member.takes("v")),
            settings: self
                .params
                .settings
                .iter()
                .filter(|s| member.takes(&s.name))
                .cloned()
                .collect(),
            pipelines: self.params.pipelines.filter(|_| fixed),
            format: self.params.format.filter(|_| fixed),
            forward_only: self.params.forward_only,
        }
    }

    /// Builds `member` for `request`.
    fn build(
        &self,
        member: &Member,
        request: &PlanRequest,
        session: &mut Session<'_>,
    ) -> Result<Built, Failure> {
        match member {
            Member::Named(source) => session.build(source, &self.params_for(member, request)),
            Member::Loaded(l) => Ok(l.built.clone()),
        }
    }

    /// Builds every schedule for `request`; a usage failure stops, any other stays with its
    /// schedule.
    pub fn build_all(
        &self,
        request: &PlanRequest,
        session: &mut Session<'_>,
    ) -> Result<Vec<Result<Built, Failure>>, Failure> {
        let mut out = Vec::with_capacity(self.members.len());
        for member in &self.members {
            match self.build(member, request, session) {
                Err(f) if f.is_usage() => return Err(f),
                built => out.push(built),
            }
        }
        Ok(out)
    }

    /// Reads every plan file among the schedules, once: a sweep gives a plan file no value (its
    /// shape is fixed), but a file that cannot be read, or `--pipelines` and `--plan-format`
    /// that say how to read it, are not passed over in silence.
    pub fn read_files(&self, session: &mut Session<'_>) -> Result<(), Failure> {
        for member in &self.members {
            if let Member::Named(source) = member
                && source.is_plan_file()
            {
                self.build(member, &self.given(), session)?;
            }
        }
        Ok(())
    }

    /// Pairs of schedules given together that say they build the same plans: (i, j) with member
    /// i a `.weave` schedule declaring `same as plugin NAME`, member j that plugin, both with the
    /// same parameters.
    fn twins(&self) -> Vec<(usize, usize)> {
        let mut pairs = Vec::new();
        for (i, s) in self.members.iter().enumerate() {
            let Some(declared) = s.declared() else {
                continue;
            };
            let Some(plugin) = declared.same_as_plugin.as_deref() else {
                continue;
            };
            let twin = self.members.iter().position(|t| {
                t.plugin_name() == Some(plugin)
                    && t.declared().is_some_and(|d| d.same_params(declared))
            });
            if let Some(j) = twin {
                pairs.push((i, j));
            }
        }
        pairs
    }

    /// The comparison on `on.spec` of every schedule at `request`'s P and M (the spec's where it
    /// has none). Plans already built (`prebuilt`: the request they were built for and the
    /// outcome of each schedule, in order) serve when they have the same P and M; otherwise every
    /// schedule is built now.
    ///
    /// A library schedule and the plugin it says builds the same plans, given together, share one
    /// row named after both (`dualpipev = plugin:dualpipev`) when their plans are indeed equal
    /// here (or both refuse); otherwise each keeps its row and the library's says they differ.
    pub fn compare(
        &self,
        on: &CompareOn<'_>,
        request: &PlanRequest,
        prebuilt: Option<(&PlanRequest, &[Result<Built, Failure>])>,
        session: &mut Session<'_>,
    ) -> Result<Comparison, Failure> {
        let spec = on.spec;
        let (ranks, microbatches) =
            pipeweave_eval::plan_shape(spec, &on.rule, request.ranks, request.microbatches)
                .map_err(|d| Failure::from_diagnostics(vec![d]).about_spec())?;
        let at = PlanRequest {
            ranks: Some(ranks),
            microbatches: Some(microbatches),
            stages_per_rank: None,
        };
        let prebuilt = prebuilt
            .filter(|(r, _)| (r.ranks, r.microbatches) == (at.ranks, at.microbatches))
            .map(|(_, built)| built);
        let mut built: Vec<Result<Built, Failure>> = Vec::with_capacity(self.members.len());
        for (i, member) in self.members.iter().enumerate() {
            built.push(match prebuilt.and_then(|b| b.get(i)) {
                Some(b) => b.clone(),
                None => self.build(member, &at, session),
            });
        }
        let mut merged = vec![false; self.members.len()];
        let mut names = self.names();
        let mut notes: Vec<Vec<String>> = vec![Vec::new(); self.members.len()];
        for (i, j) in self.twins() {
            let same = match (&built[i], &built[j]) {
                (Ok(a), Ok(b)) => a.plan == b.plan,
                (Err(_), Err(_)) => true,
                _ => false,
            };
            let (a, b) = (self.members[i].name(), self.members[j].name());
            if same {
                merged[j] = true;
                names[i] = format!("{a} = {b}");
                if built[i].is_ok() {
                    notes[i].push("both build this same plan".to_owned());
                }
            } else {
                notes[i].push(format!(
                    "says it builds the same plans as {b}, but they differ here"
                ));
            }
        }
        let mut c = Comparison::new(spec, on.default, ranks, microbatches, on.units.is_some());
        c.costs = on.units;
        c.rule = on.rule.clone();
        if let Some((file, costs)) = on.measured {
            c.costs_from = Some(file.to_owned());
            c.measured = Some(Box::new(costs.clone()));
        }
        for (i, member) in self.members.iter().enumerate() {
            if merged[i] {
                continue;
            }
            let requires = member
                .declared()
                .map(|d| d.requires.clone())
                .unwrap_or_default();
            let plan = built[i]
                .as_ref()
                .map(|b| &b.plan)
                .map_err(|f| member.failure_reason(f, &session.files));
            c.push(spec, names[i].clone(), requires, plan);
            if let Some(row) = c.rows.last_mut() {
                row.notes.append(&mut notes[i]);
            }
        }
        Ok(c)
    }

    /// A planner over these schedules for a sweep: a usage failure stops it, any other failure
    /// is a point with the reason.
    pub fn planner<'m, 's, 'a>(&'m self, session: &'s mut Session<'a>) -> ManyPlanner<'m, 's, 'a> {
        ManyPlanner {
            many: self,
            session,
        }
    }
}

/// Builds the plans of a sweep (see [`Many::planner`]).
#[derive(Debug)]
pub(crate) struct ManyPlanner<'m, 's, 'a> {
    many: &'m Many,
    session: &'s mut Session<'a>,
}

impl<'m> ManyPlanner<'m, '_, '_> {
    fn member(&self, name: &str) -> Option<&'m Member> {
        let many: &'m Many = self.many;
        many.members.iter().find(|s| s.name() == name)
    }
}

impl Planner for ManyPlanner<'_, '_, '_> {
    type Stop = Failure;

    fn plan(
        &mut self,
        schedule: &str,
        request: &PlanRequest,
    ) -> Result<ValidPlan, Unbuilt<Failure>> {
        self.plan_with(schedule, request, &[])
    }

    /// The plan with `settings` in place of the command's for those names; a schedule that does
    /// not declare a swept parameter (a setting, or `v` in the request) refuses.
    fn plan_with(
        &mut self,
        schedule: &str,
        request: &PlanRequest,
        settings: &[(String, String)],
    ) -> Result<ValidPlan, Unbuilt<Failure>> {
        let Some(member) = self.member(schedule) else {
            return Err(Unbuilt::Refused(format!("no schedule named `{schedule}`")));
        };
        if request.stages_per_rank.is_some() && !member.takes("v") {
            return Err(Unbuilt::Refused(format!(
                "{schedule} takes no stages per rank (`v`)"
            )));
        }
        let source = match member {
            Member::Named(source) => source,
            Member::Loaded(l) => return Ok(l.built.plan.clone()),
        };
        let mut params = self.many.params_for(member, request);
        for (name, value) in settings {
            if !member.takes(name) {
                return Err(Unbuilt::Refused(format!(
                    "{schedule} has no parameter `{name}`"
                )));
            }
            params.settings.retain(|s| s.name != *name);
            params.settings.push(Setting {
                name: name.clone(),
                value: value.clone(),
            });
        }
        match self.session.build(source, &params) {
            Ok(built) => Ok(built.plan),
            Err(f) if f.is_usage() => Err(Unbuilt::Stop(f)),
            Err(f) => Err(Unbuilt::Refused(
                source.failure_reason(&f, &self.session.files),
            )),
        }
    }

    fn fixed_shape(&self, schedule: &str) -> bool {
        self.member(schedule).is_some_and(Member::fixed_shape)
    }

    fn progress(&mut self, tick: pipeweave_eval::Tick<'_>) {
        self.session.events().sweep_progress(&tick);
    }
}
