//! The parameters a schedule is built with, declared once for every command that builds one
//! (`validate`, `simulate`, `show`, `convert`, `export` on one PLAN; `compare`, `render`,
//! `sweep`, `report` on several).

use crate::compare::Declared;
use crate::{Failure, PlanArgs};
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Args)]
pub struct ScheduleParams {
    /// Ranks P, for schedules (default with a spec: its `parallelism.pp`)
    #[arg(short = 'p', long = "ranks", value_name = "P")]
    pub ranks: Option<u32>,
    /// Micro-batches M, for schedules (default with a spec: its `training.microbatches`)
    #[arg(short = 'm', long = "microbatches", value_name = "M")]
    pub microbatches: Option<u32>,
    /// Stages per rank v, for the schedules that take it
    #[arg(short = 'v', long = "stages-per-rank", value_name = "V")]
    pub stages_per_rank: Option<u32>,
    /// Any other schedule parameter (repeatable; with several schedules, given to those that
    /// declare it)
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Pipelines in an actions file (of equal length; stage q of each computes the same model part)
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub pipelines: u32,
    /// A directory to search for plugins first (repeatable; then PIPEWEAVE_PLUGIN_PATH, then
    /// next to the executable)
    #[arg(long = "plugin-dir", value_name = "DIR")]
    pub plugin_dirs: Vec<PathBuf>,
}

impl ScheduleParams {
    /// Checks, for several schedules built together, that every `--set` is `NAME=VALUE` and names
    /// a parameter at least one of them declares.
    pub fn check_set<'a>(
        &self,
        declared: impl Iterator<Item = &'a Declared> + Clone,
    ) -> Result<(), Failure> {
        for kv in &self.set {
            let Some((name, _)) = kv.split_once('=') else {
                return Err(Failure::Usage(format!(
                    "--set expects NAME=VALUE, found `{kv}`"
                )));
            };
            let name = name.trim();
            if !declared.clone().any(|d| d.params.iter().any(|p| p == name)) {
                return Err(Failure::Usage(format!(
                    "--set {kv}: none of the schedules has a parameter `{name}`"
                )));
            }
        }
        Ok(())
    }

    /// The arguments of `schedule`, one of several built together: P and M as given unless it is
    /// a plan file, `-v` and `--set` only where it declares them.
    pub fn for_schedule(
        &self,
        schedule: &str,
        declared: Option<&Declared>,
        ranks: Option<u32>,
        microbatches: Option<u32>,
    ) -> PlanArgs {
        let takes = |name: &str| declared.is_some_and(|d| d.params.iter().any(|p| p == name));
        let is_file = declared.is_none() && Path::new(schedule).exists();
        PlanArgs {
            plan: schedule.to_owned(),
            params: ScheduleParams {
                ranks: ranks.filter(|_| !is_file),
                microbatches: microbatches.filter(|_| !is_file),
                stages_per_rank: self.stages_per_rank.filter(|_| takes("v")),
                set: self
                    .set
                    .iter()
                    .filter(|kv| takes(kv.split_once('=').map_or(kv.as_str(), |(k, _)| k.trim())))
                    .cloned()
                    .collect(),
                pipelines: self.pipelines,
                plugin_dirs: self.plugin_dirs.clone(),
            },
        }
    }
}
