//! `pipeweave compare`: several schedules under the same P and M on one spec, as tables of figures
//! and traits (text, Markdown, CSV or JSON).
//!
//! A schedule that cannot be built for the parameters (a failed requirement, an invalid plan)
//! keeps its row with the reason; a name that is no schedule, plugin or file at all is an error.

use crate::render::Sources;
use crate::specs::{self, LoadedSpec};
use crate::{Failure, ScheduleParams};
use clap::{Args, ValueEnum};
use pipeweave_diagnostics::FileId;
use pipeweave_dsl::syntax::ItemKind;
use pipeweave_eval::Comparison;
use pipeweave_spec::Spec;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Library schedules, `.weave` files, plugins (`NAME` or `plugin:NAME`) or plan files
    #[arg(value_name = "SCHEDULE", required = true)]
    pub schedules: Vec<String>,
    /// The cluster spec: a TOML file, a shipped spec's name, or `default` (the default)
    #[arg(long, value_name = "FILE|NAME")]
    pub spec: Option<String>,
    #[command(flatten)]
    pub params: ScheduleParams,
    /// Also show the makespan with unit costs (F = I = W = 1)
    #[arg(long)]
    pub units: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    pub format: CompareFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Text,
    Markdown,
    Csv,
    Json,
}

/// A failure in one line of plain words, for a row that could not run.
pub fn reason(failure: &Failure) -> String {
    let text = match failure {
        Failure::Invalid(t) | Failure::Usage(t) => t.clone(),
        Failure::Diagnostics(diags) => {
            let errors: Vec<&str> = diags
                .iter()
                .filter(|d| d.is_error())
                .map(|d| d.message.as_str())
                .collect();
            match errors.as_slice() {
                [] => "invalid input".to_owned(),
                [one] => (*one).to_owned(),
                [first, rest @ ..] => format!("{first} (and {} more problems)", rest.len()),
            }
        }
    };
    let line = text.lines().next().unwrap_or_default().trim();
    line.strip_prefix("error: ").unwrap_or(line).to_owned()
}

/// What a schedule declares: its parameters and its requirements in words.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Declared {
    pub params: Vec<String>,
    pub requires: String,
}

/// The parameters and requirements of a library schedule, `.weave` file or plugin; `None` for a
/// plan file or a name nothing answers to.
pub fn declared(schedule: &str, plugin_dirs: &[PathBuf]) -> Option<Declared> {
    let source = if let Some(entry) = pipeweave_dsl::library::get(schedule) {
        Some(entry.source.to_owned())
    } else if schedule.ends_with(".weave") {
        std::fs::read_to_string(schedule).ok()
    } else {
        None
    };
    if let Some(source) = source {
        let (parsed, _) = pipeweave_dsl::parse(FileId(0), &source);
        let params = parsed.params().map(|(n, _, _)| n.text.clone()).collect();
        let requires: Vec<String> = parsed
            .items
            .iter()
            .filter_map(|i| match &i.kind {
                ItemKind::Require(r) => source.get(r.cond.span.clone()).map(str::to_owned),
                _ => None,
            })
            // `v >= 1` is a sanity check, not something a user plans around.
            .filter(|c| !c.starts_with("v >="))
            .collect();
        return Some(Declared {
            params,
            requires: requires.join("; "),
        });
    }
    let target = schedule
        .strip_prefix(crate::plugins::PREFIX)
        .unwrap_or(schedule);
    if Path::new(schedule).exists() && !schedule.starts_with(crate::plugins::PREFIX) {
        return None;
    }
    let search = crate::plugins::search_path(plugin_dirs);
    let plugin = if target.contains('/') {
        pipeweave_plugin_host::Plugin::load(Path::new(target)).ok()?
    } else {
        pipeweave_plugin_host::load_named(target, &search).ok()?
    };
    let m = plugin.metadata();
    Some(Declared {
        params: m.params.iter().map(|p| p.name.clone()).collect(),
        requires: m.requires.clone(),
    })
}

/// Whether anything answers to `schedule`: a library schedule, a `.weave` or plan file, a plugin.
fn exists(schedule: &str, plugin_dirs: &[PathBuf]) -> bool {
    crate::schedule::is_schedule(schedule)
        || schedule.starts_with(crate::plugins::PREFIX)
        || Path::new(schedule).exists()
        || crate::plugins::exists(schedule, plugin_dirs)
}

/// The parameters every schedule is built with: the command line's, with P and M given.
#[derive(Debug, Clone)]
pub struct Common {
    pub params: ScheduleParams,
    pub ranks: u32,
    pub microbatches: u32,
}

impl Common {
    /// P and M from the command line, else the spec's.
    pub fn new(params: &ScheduleParams, spec: &Spec) -> Common {
        Common {
            params: params.clone(),
            ranks: params.ranks.unwrap_or(spec.parallelism.pp),
            microbatches: params.microbatches.unwrap_or(spec.training.microbatches),
        }
    }
}

/// Builds the comparison of `schedules` on `spec`: each row loaded, validated and simulated on
/// the spec adapted to its plan.
pub fn comparison(
    schedules: &[String],
    common: &Common,
    spec: &LoadedSpec,
    units: bool,
    sources: &mut Sources,
) -> Result<Comparison, Failure> {
    for s in schedules {
        if !exists(s, &common.params.plugin_dirs) {
            return Err(Failure::Invalid(format!(
                "error: no schedule, plugin or plan file named `{s}`\n"
            )));
        }
    }
    let declared: Vec<Option<Declared>> = schedules
        .iter()
        .map(|s| declared(s, &common.params.plugin_dirs))
        .collect();
    common.params.check_set(declared.iter().flatten())?;
    let mut c = Comparison::new(
        &spec.spec,
        spec.default,
        common.ranks,
        common.microbatches,
        units,
    );
    for (s, d) in schedules.iter().zip(&declared) {
        let args = common.params.for_schedule(
            s,
            d.as_ref(),
            Some(common.ranks),
            Some(common.microbatches),
        );
        let requires = d.as_ref().map(|d| d.requires.clone()).unwrap_or_default();
        match crate::load_valid(&args, sources) {
            Ok(loaded) => c.push(&spec.spec, s.clone(), requires, Ok(&loaded.plan)),
            Err(f) => c.push(&spec.spec, s.clone(), requires, Err(reason(&f))),
        }
    }
    Ok(c)
}

/// `pipeweave compare`: the rendered comparison, and whether any schedule ran.
pub fn run(args: &CompareArgs, sources: &mut Sources) -> Result<(String, bool), Failure> {
    let spec = specs::load_or_default(args.spec.as_deref(), sources)?;
    let common = Common::new(&args.params, &spec.spec);
    let c = comparison(&args.schedules, &common, &spec, args.units, sources)?;
    let text = match args.format {
        CompareFormat::Text => pipeweave_report::compare_text(&c),
        CompareFormat::Markdown => pipeweave_report::compare_markdown(&c),
        CompareFormat::Csv => pipeweave_report::compare_csv(&c),
        CompareFormat::Json => pipeweave_report::compare_json(&c),
    };
    Ok((text, c.simulated() > 0))
}
