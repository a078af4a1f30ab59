//! `pipeweave recommend --spec FILE`: the search of `pipeweave_report::recommend` over every
//! library schedule and every plugin on the search path, printed as a one-page plan.

use crate::render::Sources;
use crate::specs;
use crate::{Failure, plugins};
use clap::{Args, ValueEnum};
use pipeweave_diagnostics::FileId;
use pipeweave_eval::{PlanRequest, Planner, SearchSchedule, Unbuilt};
use pipeweave_plan::Plan;
use pipeweave_plugin_host::{Plugin, discover, load_found};
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

/// Library schedules compiled in memory and plugins loaded once.
struct Schedules {
    plugins: Vec<(String, Plugin)>,
}

impl Planner for Schedules {
    type Stop = std::convert::Infallible;

    fn plan(&mut self, schedule: &str, r: &PlanRequest) -> Result<Plan, Unbuilt<Self::Stop>> {
        let (ranks, mbs) = (r.ranks.unwrap_or(1), r.microbatches.unwrap_or(1));
        self.build(schedule, ranks, mbs, r.stages_per_rank)
            .map_err(Unbuilt::Refused)
    }
}

impl Schedules {
    fn build(&self, schedule: &str, ranks: u32, mbs: u32, v: Option<u32>) -> Result<Plan, String> {
        if let Some((_, plugin)) = self.plugins.iter().find(|(n, _)| n == schedule) {
            let request = plugin.request(ranks, mbs, &[]).map_err(|e| e.to_string())?;
            // The host validates every plan a plugin returns.
            return plugin.generate(&request).map_err(|e| match e {
                pipeweave_plugin_host::PluginError::Refused { message, .. } => message,
                e => e.to_string(),
            });
        }
        let entry = pipeweave_dsl::library::get(schedule)
            .ok_or_else(|| format!("no schedule named `{schedule}`"))?;
        let mut args = pipeweave_dsl::Args::new(ranks, mbs);
        if let Some(v) = v {
            args = args.with("v", i64::from(v));
        }
        let compiled = pipeweave_dsl::compile(FileId(0), entry.source, &args).map_err(|d| {
            d.iter()
                .find(|d| d.is_error())
                .map_or_else(|| "does not compile".to_owned(), |d| d.message.clone())
        })?;
        let problems = pipeweave_check::validate(&compiled.plan);
        match problems.first() {
            None => Ok(compiled.plan),
            Some(p) => Err(format!("invalid plan: {p}")),
        }
    }
}

/// `pipeweave recommend`: the plan as text, and the plugins that failed to load as warnings.
pub fn run(args: &RecommendArgs, sources: &mut Sources) -> Result<(String, Vec<String>), Failure> {
    let spec = specs::load_or_default(args.spec.as_deref(), sources)?;
    let mut search: Vec<SearchSchedule> = pipeweave_dsl::library::all()
        .map(|e| SearchSchedule {
            name: e.name.to_owned(),
            takes_v: pipeweave_dsl::info(e.source)
                .params
                .iter()
                .any(|p| p.name == "v"),
        })
        .collect();
    let mut loaded = Vec::new();
    let mut warnings = Vec::new();
    for found in discover(&plugins::search_path(&args.plugin_dirs)) {
        match load_found(&found) {
            Ok(p) => {
                let name = p.metadata().name.clone();
                // A plugin that shares a library schedule's name is picked as `plugin:NAME`.
                let name = if pipeweave_dsl::library::get(&name).is_some() {
                    format!("{}{name}", plugins::PREFIX)
                } else {
                    name
                };
                if !loaded.iter().any(|(n, _): &(String, Plugin)| *n == name) {
                    search.push(SearchSchedule {
                        name: name.clone(),
                        takes_v: false,
                    });
                    loaded.push((name, p));
                }
            }
            Err(e) => warnings.push(e.to_string()),
        }
    }
    let mut planner = Schedules { plugins: loaded };
    let r = match pipeweave_eval::recommend(&spec.spec, spec.default, &search, &mut planner) {
        Ok(r) => r,
        Err(never) => match never {},
    };
    let text = match args.format {
        RecommendFormat::Text => pipeweave_report::recommend_text(&r),
        RecommendFormat::Markdown => pipeweave_report::recommend_markdown(&r),
        RecommendFormat::Json => pipeweave_report::recommend_json(&r),
    };
    Ok((text, warnings))
}
