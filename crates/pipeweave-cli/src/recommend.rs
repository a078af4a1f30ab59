//! `pipeweave recommend --spec FILE`: the search of `pipeweave_eval::recommend` over every library
//! schedule, every schedule of the user's folders and every plugin on the search path, printed as
//! a one-page plan.

use crate::output::{emit, warning};
use crate::session::Session;
use clap::{Args, ValueEnum};
use pipeweave_check::ValidPlan;
use pipeweave_eval::{PlanRequest, Planner, SearchSchedule, Unbuilt};
use pipeweave_param::ParamType;
use pipeweave_source::{
    Catalog, Declared, Failure, Origin, PLUGIN_PREFIX, Params, Setting, Source,
};
use std::convert::Infallible;

#[derive(Debug, Args)]
pub struct RecommendArgs {
    /// The cluster spec: a TOML file, a shipped spec's name, or `default` (the default)
    #[arg(long, value_name = "FILE|NAME")]
    pub spec: Option<String>,
    #[command(flatten)]
    pub dirs: crate::args::Dirs,
    /// Output format
    #[arg(long, value_enum, default_value_t = RecommendFormat::Text)]
    pub format: RecommendFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RecommendFormat {
    Text,
    Markdown,
    Json,
}

/// Every schedule of the search by the name it shows, resolved on first use (plugins by
/// `plugin:NAME`, so a file that happens to share a plugin's name is never taken for it).
struct Schedules<'a> {
    session: &'a mut Session,
    /// (name shown, what to resolve, the source once resolved).
    schedules: Vec<(String, String, Option<Source>)>,
}

impl Planner for Schedules<'_> {
    type Stop = Infallible;

    fn plan(&mut self, schedule: &str, r: &PlanRequest) -> Result<ValidPlan, Unbuilt<Infallible>> {
        self.plan_with(schedule, r, &[])
    }

    fn plan_with(
        &mut self,
        schedule: &str,
        r: &PlanRequest,
        settings: &[(String, String)],
    ) -> Result<ValidPlan, Unbuilt<Infallible>> {
        let Some(entry) = self.schedules.iter_mut().find(|(n, _, _)| n == schedule) else {
            return Err(Unbuilt::Refused(format!("no schedule named `{schedule}`")));
        };
        let source = match &mut entry.2 {
            Some(source) => source,
            slot => {
                let resolved = self
                    .session
                    .resolve(&entry.1)
                    .map_err(|f| Unbuilt::Refused(f.reason()))?;
                slot.insert(resolved)
            }
        };
        let params = Params {
            ranks: r.ranks,
            microbatches: r.microbatches,
            stages_per_rank: r.stages_per_rank,
            settings: settings
                .iter()
                .map(|(name, value)| Setting {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect(),
            ..Params::default()
        };
        // A requirement's own message: the first error, as the schedule words it.
        self.session
            .build(source, &params)
            .map(|b| b.plan)
            .map_err(|f| {
                let first = f.diagnostics.iter().find(|d| d.is_error());
                Unbuilt::Refused(first.map_or_else(|| f.reason(), |d| d.message.clone()))
            })
    }
}

/// A schedule's variants the search tries besides its defaults: every boolean parameter that is
/// off by default switched on, every other option of a choice (Chimera's `joins=doubling` and
/// `joins=halving`), a pipeline count of 4 for a schedule that takes `pipelines` (Chimera with
/// four pipelines), and their combinations (at most one value per parameter).
fn variants(declared: &Declared) -> Vec<Vec<(String, String)>> {
    // One group of alternatives per parameter.
    let mut groups: Vec<Vec<(String, String)>> = Vec::new();
    for p in &declared.params {
        let values: Vec<String> = match &p.ty {
            ParamType::Bool if p.default.as_deref() == Some("false") => vec!["true".to_owned()],
            ParamType::Choice(options) => options
                .iter()
                .filter(|o| Some(o.as_str()) != p.default.as_deref())
                .cloned()
                .collect(),
            _ => Vec::new(),
        };
        if !values.is_empty() {
            groups.push(values.into_iter().map(|v| (p.name.clone(), v)).collect());
        }
    }
    if declared.takes("pipelines") {
        groups.push(vec![("pipelines".to_owned(), "4".to_owned())]);
    }
    groups.truncate(4);
    // Every non-empty combination, in a fixed order: each group contributes nothing or one value.
    let mut out: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for group in &groups {
        let mut next = Vec::with_capacity(out.len() * (group.len() + 1));
        for chosen in &out {
            next.push(chosen.clone());
            for value in group {
                let mut with = chosen.clone();
                with.push(value.clone());
                next.push(with);
            }
        }
        out = next;
    }
    out.retain(|v| !v.is_empty());
    out.sort_by_key(|v| v.len());
    out
}

/// `pipeweave recommend`: the plan; the plugins that failed to load are warnings.
pub fn run(args: &RecommendArgs, session: &mut Session) -> Result<(), Failure> {
    let spec = session.spec(args.spec.as_deref())?;
    session.host.with_plugin_dirs(&args.dirs.plugin_dirs);
    session.host.with_schedule_dirs(&args.dirs.schedule_dirs);
    let catalog = Catalog::read(&mut session.host);
    // Every schedule by the name that resolves to it (plugins by `plugin:NAME`, so a file that
    // happens to share a plugin's name is never taken for it); a schedule and the plugin that
    // builds the same plans are one candidate, named after both and built from the schedule.
    let mut search = Vec::new();
    let mut schedules = Vec::new();
    for e in &catalog.entries {
        let (shown, resolve) = match &e.origin {
            Origin::Plugin(_) if catalog.is_twin_plugin(&e.name) => continue,
            Origin::Plugin(_) => (e.resolves_as.clone(), format!("{PLUGIN_PREFIX}{}", e.name)),
            _ => match catalog.twin_of(&e.name) {
                Some(plugin) => (
                    format!("{} = {PLUGIN_PREFIX}{plugin}", e.name),
                    e.name.clone(),
                ),
                None => (e.name.clone(), e.name.clone()),
            },
        };
        search.push(SearchSchedule {
            name: shown.clone(),
            takes_v: e.declared.takes("v"),
            variants: variants(&e.declared),
        });
        schedules.push((shown, resolve, None));
    }
    let errors = catalog.errors;
    let mut planner = Schedules { session, schedules };
    let r = match pipeweave_eval::recommend(&spec.spec, spec.default, &search, &mut planner) {
        Ok(r) => r,
        Err(never) => match never {},
    };
    for e in errors {
        warning(&e);
    }
    crate::output::finite("recommend", pipeweave_eval::non_finite(&r))?;
    let text = match args.format {
        RecommendFormat::Text => pipeweave_report::recommend_text(&r),
        RecommendFormat::Markdown => pipeweave_report::recommend_markdown(&r),
        RecommendFormat::Json => pipeweave_report::recommend_json(&r),
    };
    emit(None, &text)
}
