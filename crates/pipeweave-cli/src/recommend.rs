//! `pipeweave recommend --spec FILE`: the search of `pipeweave_eval::recommend` over every library
//! schedule, every schedule of the user's folders and every plugin on the search path, printed as
//! a one-page plan.

use crate::output::{emit, warning};
use crate::planner::{Schedules, named_schedules};
use crate::session::Session;
use clap::{Args, ValueEnum};
use pipeweave_eval::SearchSchedule;
use pipeweave_param::ParamType;
use pipeweave_source::{Catalog, Declared, Failure};

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
    let named = named_schedules(&catalog);
    let search: Vec<SearchSchedule> = named
        .iter()
        .map(|n| SearchSchedule {
            name: n.shown.clone(),
            takes_v: n.declared.takes("v"),
            variants: variants(&n.declared),
        })
        .collect();
    let errors = catalog.errors;
    let mut planner = Schedules::new(session, &named);
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
