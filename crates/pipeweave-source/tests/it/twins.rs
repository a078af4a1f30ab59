//! A library schedule that says `same as plugin NAME` builds exactly the plugin's plans: the same
//! parameters, and the same plan (or both a refusal) for every P from 2 to 8, every M up to 4P
//! and every combination of its bool and choice parameters. `list`, `compare` and `recommend` show
//! the pair as one schedule on the strength of this test.

use pipeweave_diagnostics::FileId;
use pipeweave_param::{ParamType, Value};
use pipeweave_plugin_api::{Generator, Metadata, Request};
use pipeweave_source::{Declared, library};

/// A plugin's generator, called in-process.
type Generate = fn(&Request) -> Result<pipeweave_plan::Plan, String>;

/// The plugins of the workspace, by name: their metadata and generator.
fn plugin(name: &str) -> Option<(Metadata, Generate)> {
    use pipeweave_generators::{Chimera, DualPipe, DualPipeV};
    match name {
        "dualpipev" => Some((DualPipeV::metadata(), DualPipeV::generate)),
        "dualpipe" => Some((DualPipe::metadata(), DualPipe::generate)),
        "chimera" => Some((Chimera::metadata(), Chimera::generate)),
        _ => None,
    }
}

/// Every combination of the bool and choice parameters' values, the others at their defaults.
fn combinations(declared: &Declared) -> Vec<Vec<(String, Value)>> {
    let mut all = vec![Vec::new()];
    for p in &declared.params {
        let values: Vec<Value> = match &p.ty {
            ParamType::Bool => vec![Value::Bool(true), Value::Bool(false)],
            ParamType::Choice(options) => options.iter().cloned().map(Value::Choice).collect(),
            ParamType::Int(_) => continue,
        };
        all = all
            .into_iter()
            .flat_map(|set| {
                values.iter().map(move |v| {
                    let mut set = set.clone();
                    set.push((p.name.clone(), v.clone()));
                    set
                })
            })
            .collect();
    }
    all
}

#[test]
fn library_schedules_build_the_same_plans_as_the_plugins_they_name() {
    let mut twins = 0;
    for entry in library() {
        let Some(name) = entry.declared.same_as_plugin.clone() else {
            continue;
        };
        twins += 1;
        let (metadata, generate) =
            plugin(&name).unwrap_or_else(|| panic!("{}: no plugin `{name}`", entry.name));
        assert!(
            entry.declared.same_params(&Declared::of_plugin(&metadata)),
            "{}: the parameters differ from plugin:{name}'s",
            entry.name
        );
        let source = pipeweave_dsl::library::get(&entry.name)
            .expect("in the library")
            .source;
        let prepared = pipeweave_dsl::prepare(FileId(0), source).expect("resolves");
        let mut compared = 0;
        for set in combinations(&entry.declared) {
            for p in 2..=8u32 {
                for m in 1..=4 * p {
                    let mut args = pipeweave_dsl::Args::new(p, m);
                    for (n, v) in &set {
                        args = args.with(n, v.clone());
                    }
                    let request = Request {
                        ranks: p,
                        microbatches: m,
                        params: set.clone(),
                    };
                    let ours = prepared.compile(&args).map(|c| c.plan);
                    let theirs = generate(&request);
                    match (ours, theirs) {
                        (Ok(a), Ok(b)) => {
                            assert_eq!(a, b, "{} {set:?} P={p} M={m}", entry.name);
                            compared += 1;
                        }
                        (Err(_), Err(_)) => {}
                        (a, b) => panic!(
                            "{} {set:?} P={p} M={m}: the library {} but the plugin {}",
                            entry.name,
                            if a.is_ok() { "builds" } else { "refuses" },
                            if b.is_ok() { "builds" } else { "refuses" },
                        ),
                    }
                }
            }
        }
        assert!(
            compared > 100,
            "{}: only {compared} plans compared",
            entry.name
        );
    }
    assert!(twins > 0, "no library schedule names a plugin");
}
