//! The schedules `recommend` searches, built in memory: the library's, compiled, and the three
//! generators the plugins export (what the command line finds), Chimera with its variants. Shared
//! by the recommend tests and the recommend benchmark (`benches/recommend.rs`).

use pipeweave_check::ValidPlan;
use pipeweave_eval::{PlanRequest, Planner, SearchSchedule, Unbuilt};
use std::convert::Infallible;

/// Library schedules compiled in memory; `chimera`, `dualpipe` and `plugin:dualpipev` from the
/// generators (what the plugins return), Chimera with its settings.
pub struct InMemory;

impl InMemory {
    fn build(
        schedule: &str,
        p: u32,
        m: u32,
        v: Option<u32>,
        settings: &[(String, String)],
    ) -> Result<ValidPlan, String> {
        let dual = pipeweave_generators::DualOptions::default();
        let plan = match schedule {
            "chimera" => {
                let mut o = pipeweave_generators::ChimeraOptions::default();
                for (k, x) in settings {
                    match (k.as_str(), x.as_str()) {
                        ("joins", name) => {
                            o.joins = pipeweave_generators::Joins::from_name(name)
                                .ok_or("a way to join units")?
                        }
                        ("pipelines", n) => o.pipelines = n.parse().map_err(|_| "a count")?,
                        _ => return Err(format!("no setting {k}={x}")),
                    }
                }
                pipeweave_generators::chimera(p, m, o)?
            }
            "dualpipe" => pipeweave_generators::dualpipe(p, m, dual)?,
            "plugin:dualpipev" => pipeweave_generators::dualpipev(p, m, dual)?,
            name => {
                let entry = pipeweave_dsl::library::get(name).ok_or("no such schedule")?;
                let mut args = pipeweave_dsl::Args::new(p, m);
                if let Some(v) = v {
                    args = args.with("v", i64::from(v));
                }
                pipeweave_dsl::compile(pipeweave_diagnostics::FileId(0), entry.source, &args)
                    .map_err(|d| d[0].message.clone())?
                    .plan
            }
        };
        pipeweave_check::validate(plan).map_err(|_| "invalid plan".to_string())
    }
}

impl Planner for InMemory {
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
        let (p, m) = (r.ranks.unwrap_or(1), r.microbatches.unwrap_or(1));
        InMemory::build(schedule, p, m, r.stages_per_rank, settings).map_err(Unbuilt::Refused)
    }
}

/// Every library schedule (with `v` where it takes it), Chimera with forward doubling and four
/// pipelines, DualPipe and the DualPipeV plugin.
pub fn schedules() -> Vec<SearchSchedule> {
    let mut out: Vec<SearchSchedule> = pipeweave_dsl::library::all()
        .map(|e| {
            let takes_v = pipeweave_dsl::info(e.source)
                .params
                .iter()
                .any(|p| p.name == "v");
            SearchSchedule::plain(e.name, takes_v)
        })
        .collect();
    // Chimera's variants as the command line finds them from its parameters: four pipelines,
    // doubling and halving joins, and each with four pipelines.
    let setting = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    out.push(SearchSchedule {
        variants: vec![
            vec![setting("joins", "doubling")],
            vec![setting("joins", "halving")],
            vec![setting("pipelines", "4")],
            vec![setting("joins", "doubling"), setting("pipelines", "4")],
            vec![setting("joins", "halving"), setting("pipelines", "4")],
        ],
        ..SearchSchedule::plain("chimera", false)
    });
    for name in ["dualpipe", "plugin:dualpipev"] {
        out.push(SearchSchedule::plain(name, false));
    }
    out
}
