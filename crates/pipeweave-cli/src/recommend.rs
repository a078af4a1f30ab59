//! `pipeweave recommend --spec FILE`: the search of `pipeweave_eval::recommend` over every library
//! schedule and every plugin on the search path, printed as a one-page plan.

use crate::output::{emit, warning};
use crate::session::Session;
use clap::{Args, ValueEnum};
use pipeweave_check::ValidPlan;
use pipeweave_eval::{PlanRequest, Planner, SearchSchedule, Unbuilt};
use pipeweave_source::{Declared, Failure, PLUGIN_PREFIX, Params, Setting, Source};
use std::convert::Infallible;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct RecommendArgs {
    /// The cluster spec: a TOML file, a shipped spec's name, or `default` (the default)
    #[arg(long, value_name = "FILE|NAME")]
    pub spec: Option<String>,
    /// A directory to search for plugins first (repeatable)
    #[arg(long = "plugin-dir", value_name = "DIR")]
    pub plugin_dirs: Vec<PathBuf>,
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
/// off by default switched on (Chimera's forward doubling), a pipeline count of 4 for a schedule
/// that takes `pipelines` (Chimera with four pipelines), and both together.
fn variants(declared: &Declared) -> Vec<Vec<(String, String)>> {
    let mut options: Vec<(String, String)> = declared
        .params
        .iter()
        .filter(|p| p.type_name.as_deref() == Some("bool") && p.default.as_deref() == Some("false"))
        .map(|p| (p.name.clone(), "true".to_owned()))
        .collect();
    if declared.takes("pipelines") {
        options.push(("pipelines".to_owned(), "4".to_owned()));
    }
    // Every non-empty combination, in a fixed order.
    let mut out = Vec::new();
    for mask in 1..(1u32 << options.len().min(4)) {
        out.push(
            options
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, o)| o.clone())
                .collect(),
        );
    }
    out
}

/// `pipeweave recommend`: the plan; the plugins that failed to load are warnings.
pub fn run(args: &RecommendArgs, session: &mut Session) -> Result<(), Failure> {
    let spec = session.spec(args.spec.as_deref())?;
    session.host.with_plugin_dirs(&args.plugin_dirs);
    let mut search = Vec::new();
    let mut schedules = Vec::new();
    for e in pipeweave_source::library() {
        search.push(SearchSchedule {
            name: e.name.clone(),
            takes_v: e.declared.takes("v"),
            variants: variants(&e.declared),
        });
        schedules.push((e.name.clone(), e.name, None));
    }
    let (plugins, errors) = pipeweave_source::plugins(&mut session.host);
    for e in plugins {
        // A plugin that shares a library schedule's name is shown as `plugin:NAME`.
        let name = e.resolvable_name();
        if schedules.iter().any(|(n, _, _)| *n == name) {
            continue;
        }
        search.push(SearchSchedule {
            name: name.clone(),
            takes_v: false,
            variants: variants(&e.declared),
        });
        schedules.push((name, format!("{PLUGIN_PREFIX}{}", e.name), None));
    }
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
