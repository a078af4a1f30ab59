//! The command line's [`Planner`]: every schedule of the catalog (library, the user's folders,
//! plugins) by the name it shows, built through the session. What `recommend` and `synthesize`
//! search and compare with.

use crate::session::Session;
use pipeweave_check::ValidPlan;
use pipeweave_eval::{PlanRequest, Planner, Unbuilt};
use pipeweave_source::{Catalog, Declared, Origin, PLUGIN_PREFIX, Params, Setting, Source};
use std::convert::Infallible;

/// A schedule of the catalog: the name it shows, the name that resolves to it, what it declares.
#[derive(Debug, Clone)]
pub struct Named {
    pub shown: String,
    pub resolve: String,
    pub declared: Declared,
}

/// Every schedule by the name that resolves to it (plugins by `plugin:NAME`, so a file that
/// happens to share a plugin's name is never taken for it); a schedule and the plugin that builds
/// the same plans are one, named after both and built from the schedule.
pub fn named_schedules(catalog: &Catalog) -> Vec<Named> {
    let mut out = Vec::new();
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
        out.push(Named {
            shown,
            resolve,
            declared: e.declared.clone(),
        });
    }
    out
}

/// Every schedule of the search by the name it shows, resolved on first use (plugins by
/// `plugin:NAME`, so a file that happens to share a plugin's name is never taken for it).
pub struct Schedules<'a> {
    session: &'a mut Session,
    /// (name shown, what to resolve, the source once resolved).
    schedules: Vec<(String, String, Option<Source>)>,
}

impl Schedules<'_> {
    /// The planner of `named` through `session`.
    pub fn new<'a>(session: &'a mut Session, named: &[Named]) -> Schedules<'a> {
        Schedules {
            session,
            schedules: named
                .iter()
                .map(|n| (n.shown.clone(), n.resolve.clone(), None))
                .collect(),
        }
    }
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
