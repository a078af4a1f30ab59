//! `pipeweave recommend --spec FILE`: the search of `pipeweave_eval::recommend` over every library
//! schedule and every plugin on the search path, printed as a one-page plan.

use crate::output::{emit, warning};
use crate::session::Session;
use clap::{Args, ValueEnum};
use pipeweave_eval::{PlanRequest, Planner, SearchSchedule, Unbuilt};
use pipeweave_plan::Plan;
use pipeweave_source::{Failure, PLUGIN_PREFIX, Params, Source};
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

    fn plan(&mut self, schedule: &str, r: &PlanRequest) -> Result<Plan, Unbuilt<Infallible>> {
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

/// `pipeweave recommend`: the plan; the plugins that failed to load are warnings.
pub fn run(args: &RecommendArgs, session: &mut Session) -> Result<(), Failure> {
    let spec = session.spec(args.spec.as_deref())?;
    session.host.with_plugin_dirs(&args.plugin_dirs);
    let library = pipeweave_source::library();
    let (plugins, errors) = pipeweave_source::plugins(&mut session.host);
    // A library schedule and the plugin that builds the same plans are one candidate, named
    // after both and built from the library.
    let twins = pipeweave_source::twins(&library, &plugins);
    let mut search = Vec::new();
    let mut schedules = Vec::new();
    for e in library {
        let shown = match twins.iter().find(|(l, _)| *l == e.name) {
            Some((_, plugin)) => format!("{} = {PLUGIN_PREFIX}{plugin}", e.name),
            None => e.name.clone(),
        };
        search.push(SearchSchedule {
            name: shown.clone(),
            takes_v: e.declared.takes("v"),
        });
        schedules.push((shown, e.name, None));
    }
    for e in plugins {
        if twins.iter().any(|(_, p)| *p == e.name) {
            continue;
        }
        // A plugin that shares a library schedule's name is shown as `plugin:NAME`.
        let name = e.resolvable_name();
        if schedules.iter().any(|(n, _, _)| *n == name) {
            continue;
        }
        search.push(SearchSchedule {
            name: name.clone(),
            takes_v: false,
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
    let text = match args.format {
        RecommendFormat::Text => pipeweave_report::recommend_text(&r),
        RecommendFormat::Markdown => pipeweave_report::recommend_markdown(&r),
        RecommendFormat::Json => pipeweave_report::recommend_json(&r),
    };
    emit(None, &text)
}
