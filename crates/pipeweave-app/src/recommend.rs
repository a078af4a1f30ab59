//! `pipeweave recommend` (and Python's `recommend`): the search of `pipeweave_eval::recommend`
//! over every library schedule, every schedule of the user's folders and every plugin on the
//! search path.

use crate::catalog::{Schedules, named_schedules, tell_errors};
use crate::finished::finished;
use crate::session::Session;
use pipeweave_eval::{MeasuredRecommendation, Recommendation, SearchSchedule, Split};
use pipeweave_param::ParamType;
use pipeweave_source::{Catalog, Declared, Failure};

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

/// The schedules the search tries: every named one, with its variants.
fn searched(named: &[crate::catalog::Named]) -> Vec<SearchSchedule> {
    named
        .iter()
        .map(|n| SearchSchedule {
            name: n.shown.clone(),
            takes_v: n.declared.takes("v"),
            variants: variants(&n.declared),
        })
        .collect()
}

/// `pipeweave recommend --costs-from FILE`: every schedule the search knows, with its `v` and its
/// variants, at the profiled run's ranks and micro-batches, priced with the costs measured in it
/// (`pipeweave_eval::recommend_measured`), fastest first.
pub fn recommend_measured(
    session: &mut Session<'_>,
    costs_from: &str,
) -> Result<MeasuredRecommendation, Failure> {
    let costs = session.measured_costs(costs_from)?;
    let file = costs_from.to_owned();
    let catalog = Catalog::read(session.host());
    let named = named_schedules(&catalog);
    let search = searched(&named);
    let mut planner = Schedules::new(session, &named);
    let r = match pipeweave_eval::recommend_measured(&costs, &file, &search, &mut planner) {
        Ok(r) => r,
        Err(never) => match never {},
    };
    tell_errors(session, &catalog);
    finished("recommend", r)
}

/// `pipeweave recommend`: the plan the search finds on the spec `spec` names (the built-in default
/// when `None`), the layers' split searched with each configuration when `split` is `auto` (the
/// front ends' default) or even; plugins that fail to load are told as warnings.
pub fn recommend(
    session: &mut Session<'_>,
    spec: Option<&str>,
    split: &Split,
) -> Result<Recommendation, Failure> {
    let auto = match split {
        Split::Auto => true,
        Split::Even => false,
        other => {
            return Err(Failure::usage(format!(
                "recommend searches every shape, so its split is `auto` or `even`, not `{other}`"
            )));
        }
    };
    let spec = session.spec(spec)?;
    let catalog = Catalog::read(session.host());
    let named = named_schedules(&catalog);
    let search = searched(&named);
    let mut planner = Schedules::new(session, &named);
    let r = match pipeweave_eval::recommend(&spec.spec, spec.default, &search, auto, &mut planner) {
        Ok(r) => r,
        Err(never) => match never {},
    };
    tell_errors(session, &catalog);
    finished("recommend", r)
}
