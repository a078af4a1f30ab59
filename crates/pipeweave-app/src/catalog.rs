//! The catalog of every schedule by name (library, the user's folders, plugins) and the
//! [`Planner`] over it, built through the session: what `list` shows, and what `recommend` and
//! `synthesize` search and compare with.

use crate::session::Session;
use pipeweave_check::ValidPlan;
use pipeweave_eval::{
    ListedParam, ListedSchedule, PlanRequest, Planner, ScheduleListing, Unbuilt, Unreached,
};
use pipeweave_source::{
    Catalog, Declared, Failure, Origin, PLACEMENTS, PLUGIN_PREFIX, Params, SYNTH_PREFIX, Setting,
    Source,
};
use std::convert::Infallible;

/// A schedule of the catalog: the name it shows, the name that resolves to it, what it declares.
#[derive(Debug, Clone)]
pub(crate) struct Named {
    pub shown: String,
    pub resolve: String,
    pub declared: Declared,
}

/// Every schedule by the name that resolves to it (plugins by `plugin:NAME`, so a file that
/// happens to share a plugin's name is never taken for it); a schedule and the plugin that builds
/// the same plans are one, named after both and built from the schedule.
pub(crate) fn named_schedules(catalog: &Catalog) -> Vec<Named> {
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
#[derive(Debug)]
pub(crate) struct Schedules<'s, 'a> {
    session: &'s mut Session<'a>,
    /// (name shown, what to resolve, the source once resolved).
    schedules: Vec<(String, String, Option<Source>)>,
}

impl<'s, 'a> Schedules<'s, 'a> {
    /// The planner of `named` through `session`.
    pub fn new(session: &'s mut Session<'a>, named: &[Named]) -> Schedules<'s, 'a> {
        Schedules {
            session,
            schedules: named
                .iter()
                .map(|n| (n.shown.clone(), n.resolve.clone(), None))
                .collect(),
        }
    }
}

impl Planner for Schedules<'_, '_> {
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

/// How a name is looked up, as `list` says it.
pub const NAMES_RULE: &str = "a name means the library's schedule, else the first schedule folder's file of that name (--schedule-dir, then PIPEWEAVE_SCHEDULE_PATH), else a plugin; plugin:NAME always means the plugin; synth:loop, synth:v and synth:bidirectional are schedules synthesized for that placement under the command's costs (its spec, --costs, else unit costs), with the parameters listed above";

/// Tells the catalog's errors (plugins that fail to load, folder files that cannot be read) as
/// warnings, one each.
pub(crate) fn tell_errors(session: &mut Session<'_>, catalog: &Catalog) {
    for e in &catalog.errors {
        session.warning(e);
    }
}

/// `pipeweave list` (and Python's `list_schedules`): the library, the schedule folders and the
/// plugins, with what each declares, then the files of the folders that a name does not reach.
pub fn list(session: &mut Session<'_>) -> ScheduleListing {
    let catalog = Catalog::read(session.host());
    tell_errors(session, &catalog);
    let mut schedules: Vec<ListedSchedule> = catalog
        .entries
        .iter()
        .map(|e| {
            let (source, file) = match &e.origin {
                Origin::Library => ("library", None),
                Origin::Folder(path) => ("folder", Some(path.clone())),
                Origin::Plugin(path) => ("plugin", Some(path.clone())),
            };
            let same_plans_as = match &e.origin {
                Origin::Plugin(_) => catalog
                    .twins
                    .iter()
                    .find(|(_, p)| *p == e.name)
                    .map(|(schedule, _)| schedule.clone()),
                _ => catalog
                    .twin_of(&e.name)
                    .map(|plugin| format!("{PLUGIN_PREFIX}{plugin}")),
            };
            listed(
                e.resolves_as.clone(),
                source,
                file,
                &e.declared,
                same_plans_as,
            )
        })
        .collect();
    // The synthesized schedules, one per placement, as every command names them.
    for placement in PLACEMENTS {
        let name = format!("{SYNTH_PREFIX}{placement}");
        if let Ok(source) = session.resolve(&name)
            && let Some(d) = source.declared()
        {
            schedules.push(listed(name, "synthesized", None, d, None));
        }
    }
    let unreached = catalog
        .shadowed
        .iter()
        .map(|s| Unreached {
            name: s.name.clone(),
            path: s.path.clone(),
            by: s.by.clone(),
        })
        .collect();
    ScheduleListing {
        schedules,
        unreached,
        names_rule: NAMES_RULE.to_owned(),
    }
}

/// One schedule of the listing.
fn listed(
    name: String,
    source: &'static str,
    file: Option<String>,
    declared: &Declared,
    same_plans_as: Option<String>,
) -> ListedSchedule {
    ListedSchedule {
        name,
        source,
        file,
        description: declared.description.clone(),
        requires: declared.requires.clone(),
        same_plans_as,
        params: declared
            .params
            .iter()
            .map(|p| ListedParam {
                name: p.name.clone(),
                ty: p.ty.to_string(),
                default: p.default.clone(),
                help: p.help.clone(),
            })
            .collect(),
    }
}

/// What `check` found in a schedule without problems.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedSchedule {
    /// The schedule's file, as diagnostics name it.
    pub name: String,
    /// How many (P, M) of the grid it compiled and validated.
    pub combinations: usize,
    /// Why no plan was compiled, when none was.
    pub nothing_compiled: Option<String>,
}

/// `pipeweave check`: a `.weave` schedule (a file, `-`, or a library or folder schedule's name):
/// its syntax and names, then its plans on a grid of P and M.
pub fn check(session: &mut Session<'_>, arg: &str) -> Result<CheckedSchedule, Failure> {
    let (host, files) = session.host_and_files();
    let file = pipeweave_source::weave_file(arg, host, files)?;
    let checked = pipeweave_source::check_schedule(arg, file, &session.files)?;
    Ok(CheckedSchedule {
        name: session.files.name(file).unwrap_or(arg).to_owned(),
        combinations: checked.combinations,
        nothing_compiled: checked.nothing_compiled,
    })
}
