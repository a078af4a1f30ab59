//! Several schedules built with the same parameters, as `compare`, `render`, `sweep` and `report`
//! take them: resolved once, `--set` handed to the schedules that declare it, each built (and
//! simulated, and compared) on its own so one that cannot run never stops the others.

use crate::args::{CostArgs, ScheduleParams, TimeWindowArgs};
use crate::session::Session;
use pipeweave_check::ValidPlan;
use pipeweave_eval::{Comparison, Costing, PlanRequest, Planner, Run, SpecRule, Unbuilt};
use pipeweave_report::{
    SvgWindow, TimeFormat, TimelineChart, shape_text, timelines_svg_window, transfers,
};
use pipeweave_sim::UniformCosts;
use pipeweave_source::{Built, Failure, Params, Setting, Source};
use pipeweave_spec::Spec;

/// What a comparison is on: the spec, how it meets each plan, and the durations of the makespan
/// column when it has one.
#[derive(Debug, Clone, Copy)]
pub struct CompareOn<'a> {
    /// The spec.
    pub spec: &'a Spec,
    /// Whether it is the built-in default.
    pub default: bool,
    /// How it meets each plan.
    pub rule: SpecRule,
    /// The makespan column's costs (unit costs or `--costs`), when it is shown.
    pub units: Option<UniformCosts>,
}

/// The schedules of one command, resolved, with the command line's parameters.
#[derive(Debug)]
pub struct Many {
    /// In the order given.
    pub sources: Vec<Source>,
    params: ScheduleParams,
}

impl Many {
    /// Resolves every schedule (a name nothing answers to is an error) and checks that every
    /// `--set` names a parameter at least one of them declares.
    pub fn resolve(
        names: &[String],
        params: &ScheduleParams,
        session: &mut Session,
    ) -> Result<Many, Failure> {
        session.host.with_plugin_dirs(&params.plugin_dirs);
        session.host.with_schedule_dirs(&params.schedule_dirs);
        let sources = names
            .iter()
            .map(|n| session.resolve(n))
            .collect::<Result<Vec<_>, _>>()?;
        for s in &params.set {
            if !sources
                .iter()
                .filter_map(Source::declared)
                .any(|d| d.takes(&s.name))
            {
                return Err(Failure::usage(format!(
                    "--set {}={}: none of the schedules has a parameter `{}`",
                    s.name, s.value, s.name
                )));
            }
        }
        Ok(Many {
            sources,
            params: params.clone(),
        })
    }

    /// P and M as the command line gives them (`None` where it does not).
    pub fn given(&self) -> PlanRequest {
        PlanRequest {
            ranks: self.params.ranks,
            microbatches: self.params.microbatches,
            stages_per_rank: None,
        }
    }

    /// P and M given on the command line, else `costing`'s (a spec's, M following P where the
    /// spec's rule keeps the global batch).
    pub fn shape(&self, costing: &Costing) -> Result<PlanRequest, Failure> {
        let (ranks, microbatches) = costing
            .shape(self.params.ranks, self.params.microbatches)
            .map_err(Failure::invalid)?;
        Ok(PlanRequest {
            ranks,
            microbatches,
            stages_per_rank: None,
        })
    }

    /// The parameters of `source`: P and M from `request` (none for a plan file), `v` (the
    /// request's, else `-v`) and `--set` only where it declares them.
    fn params_for(&self, source: &Source, request: &PlanRequest) -> Params {
        let takes = |name: &str| source.declared().is_some_and(|d| d.takes(name));
        let file = source.is_plan_file();
        Params {
            ranks: request.ranks.filter(|_| !file),
            microbatches: request.microbatches.filter(|_| !file),
            stages_per_rank: request
                .stages_per_rank
                .or(self.params.stages_per_rank)
                .filter(|_| takes("v")),
            settings: self
                .params
                .set
                .iter()
                .filter(|s| takes(&s.name))
                .cloned()
                .collect(),
            pipelines: self.params.pipelines,
            format: self.params.plan_format.map(Into::into),
            forward_only: self.params.forward_only,
        }
    }

    /// Builds every schedule for `request`; a usage failure stops, any other stays with its
    /// schedule.
    pub fn build_all(
        &self,
        request: &PlanRequest,
        session: &mut Session,
    ) -> Result<Vec<Result<Built, Failure>>, Failure> {
        let mut out = Vec::with_capacity(self.sources.len());
        for source in &self.sources {
            match session.build(source, &self.params_for(source, request)) {
                Err(f) if f.is_usage() => return Err(f),
                built => out.push(built),
            }
        }
        Ok(out)
    }

    /// Pairs of schedules given together that say they build the same plans: (i, j) with
    /// source i a `.weave` schedule declaring `same as plugin NAME`, source j that plugin, both
    /// with the same parameters.
    fn twins(&self) -> Vec<(usize, usize)> {
        let mut pairs = Vec::new();
        for (i, s) in self.sources.iter().enumerate() {
            let Some(declared) = s.declared() else {
                continue;
            };
            let Some(plugin) = declared.same_as_plugin.as_deref() else {
                continue;
            };
            let twin = self.sources.iter().position(|t| {
                t.plugin_name() == Some(plugin)
                    && t.declared().is_some_and(|d| d.same_params(declared))
            });
            if let Some(j) = twin {
                pairs.push((i, j));
            }
        }
        pairs
    }

    /// The comparison on `spec` (the built-in default when `default`) of every schedule at
    /// `request`'s P and M (the spec's where it has none). Plans already built (`prebuilt`: the
    /// request they were built for and the outcome of each schedule, in order) serve when they
    /// have the same P and M; otherwise every schedule is built now.
    ///
    /// A library schedule and the plugin it says builds the same plans, given together, share one
    /// row named after both (`dualpipev = plugin:dualpipev`) when their plans are indeed equal
    /// here (or both refuse); otherwise each keeps its row and the library's says they differ.
    pub fn compare(
        &self,
        on: &CompareOn<'_>,
        request: &PlanRequest,
        prebuilt: Option<(&PlanRequest, &[Result<Built, Failure>])>,
        session: &mut Session,
    ) -> Result<Comparison, Failure> {
        let spec = on.spec;
        let (ranks, microbatches) =
            pipeweave_eval::plan_shape(spec, on.rule, request.ranks, request.microbatches)
                .map_err(Failure::invalid)?;
        let at = PlanRequest {
            ranks: Some(ranks),
            microbatches: Some(microbatches),
            stages_per_rank: None,
        };
        let prebuilt = prebuilt
            .filter(|(r, _)| (r.ranks, r.microbatches) == (at.ranks, at.microbatches))
            .map(|(_, built)| built);
        let built: Vec<Result<Built, Failure>> = self
            .sources
            .iter()
            .enumerate()
            .map(|(i, source)| match prebuilt.and_then(|b| b.get(i)) {
                Some(b) => b.clone(),
                None => session.build(source, &self.params_for(source, &at)),
            })
            .collect();
        let mut merged = vec![false; self.sources.len()];
        let mut names: Vec<String> = self.sources.iter().map(|s| s.name().to_owned()).collect();
        let mut notes: Vec<Vec<String>> = vec![Vec::new(); self.sources.len()];
        for (i, j) in self.twins() {
            let same = match (&built[i], &built[j]) {
                (Ok(a), Ok(b)) => a.plan == b.plan,
                (Err(_), Err(_)) => true,
                _ => false,
            };
            let (a, b) = (self.sources[i].name(), self.sources[j].name());
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
        c.rule = on.rule;
        for (i, source) in self.sources.iter().enumerate() {
            if merged[i] {
                continue;
            }
            let requires = source
                .declared()
                .map(|d| d.requires.clone())
                .unwrap_or_default();
            let plan = built[i]
                .as_ref()
                .map(|b| &b.plan)
                .map_err(|f| source.failure_reason(f, &session.files));
            c.push(spec, names[i].clone(), requires, plan);
            if let Some(row) = c.rows.last_mut() {
                row.notes.append(&mut notes[i]);
            }
        }
        Ok(c)
    }

    /// A planner over these schedules for a sweep: a usage failure stops it, any other failure
    /// is a point with the reason.
    pub fn planner<'a>(&'a self, session: &'a mut Session) -> ManyPlanner<'a> {
        ManyPlanner {
            many: self,
            session,
        }
    }
}

/// Builds the plans of a sweep (see [`Many::planner`]).
#[derive(Debug)]
pub struct ManyPlanner<'a> {
    many: &'a Many,
    session: &'a mut Session,
}

impl<'a> ManyPlanner<'a> {
    fn source(&self, name: &str) -> Option<&'a Source> {
        let many: &'a Many = self.many;
        many.sources.iter().find(|s| s.name() == name)
    }
}

impl Planner for ManyPlanner<'_> {
    type Stop = Failure;

    fn plan(
        &mut self,
        schedule: &str,
        request: &PlanRequest,
    ) -> Result<ValidPlan, Unbuilt<Failure>> {
        self.plan_with(schedule, request, &[])
    }

    /// The plan with `settings` in place of the command line's for those names; a schedule
    /// that does not declare a swept parameter (a setting, or `v` in the request) refuses.
    fn plan_with(
        &mut self,
        schedule: &str,
        request: &PlanRequest,
        settings: &[(String, String)],
    ) -> Result<ValidPlan, Unbuilt<Failure>> {
        let Some(source) = self.source(schedule) else {
            return Err(Unbuilt::Refused(format!("no schedule named `{schedule}`")));
        };
        let takes = |name: &str| source.declared().is_some_and(|d| d.takes(name));
        if request.stages_per_rank.is_some() && !takes("v") {
            return Err(Unbuilt::Refused(format!(
                "{schedule} takes no stages per rank (`v`)"
            )));
        }
        let mut params = self.many.params_for(source, request);
        for (name, value) in settings {
            if !takes(name) {
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
        self.source(schedule).is_some_and(Source::is_plan_file)
    }
}

/// Unit costs, `--costs`, or the spec `--spec` names with its rule.
pub fn costing(costs: &CostArgs, session: &mut Session) -> Result<Costing, Failure> {
    let costing = match &costs.spec.name {
        None => {
            costs.spec.check_without_spec()?;
            costs.costs.map_or(Costing::Unit, Costing::Uniform)
        }
        Some(arg) => {
            let loaded = session.spec(Some(arg))?;
            Costing::Spec {
                spec: Box::new(loaded.spec),
                default: loaded.default,
                rule: costs.spec.rule(),
            }
        }
    };
    // A synthesized schedule is searched under the command's costs.
    session.costing = Some(costing.clone());
    Ok(costing)
}

/// One schedule built and simulated, named as the user wrote it (`dualpipe`, not the resolver's
/// `plugin:dualpipe`), so figures and tables match the command line.
#[derive(Debug)]
pub struct Drawn {
    /// The SCHEDULE argument.
    pub name: String,
    /// Its plan.
    pub plan: ValidPlan,
    /// The plan simulated.
    pub run: Run,
}

/// Simulates `plan`, the SCHEDULE argument `name`'s, under `costing`; fails, with the reason,
/// when the spec cannot take the plan.
pub fn draw(name: &str, plan: &ValidPlan, costing: &Costing) -> Result<Drawn, String> {
    let run = costing.run(plan)?;
    let sim = pipeweave_eval::Simulation::new(name, plan, &run.timeline, None);
    if let Some((path, x)) = pipeweave_eval::non_finite(&sim) {
        return Err(format!(
            "the figure `{path}` came out as {x}, not a finite number; an input is too large or \
             too small for pipeweave to compute with"
        ));
    }
    Ok(Drawn {
        name: name.to_owned(),
        plan: plan.clone(),
        run,
    })
}

/// Checks `--from` and `--to` before anything is built: the window must end after it starts.
pub fn check_window(window: &TimeWindowArgs) -> Result<(), Failure> {
    match (window.from, window.to) {
        (Some(from), Some(to)) if from >= to => Err(Failure::usage(format!(
            "--from {from} --to {to}: the window must end after it starts"
        ))),
        _ => Ok(()),
    }
}

/// The window of the drawing: `--from` must fall inside the longest of the runs' steps.
pub fn window(
    window: &TimeWindowArgs,
    drawn: &[Drawn],
    costing: &Costing,
) -> Result<SvgWindow, Failure> {
    let longest = drawn
        .iter()
        .map(|d| d.run.timeline.timing.makespan)
        .fold(0.0f64, f64::max);
    if let Some(from) = window.from.filter(|f| *f >= longest) {
        let ends = if drawn.len() > 1 {
            "the longest step ends"
        } else {
            "the step ends"
        };
        return Err(Failure::usage(format!(
            "--from {from}: {ends} at {}",
            costing.unit().format(longest)
        )));
    }
    Ok(SvgWindow {
        from: window.from,
        to: window.to,
    })
}

/// The SVG of the runs' timelines, stacked on one time scale, in `window`.
pub fn timelines(
    drawn: &[Drawn],
    costing: &Costing,
    comms: bool,
    id: &str,
    window: &SvgWindow,
) -> String {
    let charts: Vec<TimelineChart> = drawn
        .iter()
        .map(|d| TimelineChart {
            title: format!(
                "{} ({})",
                d.name,
                shape_text(&pipeweave_eval::Shape::of(&d.plan))
            ),
            plan: &d.plan,
            timeline: &d.run.timeline,
            transfers: comms.then(|| transfers(&d.plan, &d.run.timeline, d.run.costs.as_ref())),
        })
        .collect();
    timelines_svg_window(&charts, costing.unit(), id, window)
}
