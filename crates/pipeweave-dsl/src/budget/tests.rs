use super::*;
use crate::compile::{Args, bind_params, run_top};
use crate::library;
use pipeweave_diagnostics::FileId;
use pipeweave_param::Value;

/// Every library schedule and setting, on small shapes: a plan that holds an I or a W comes from a
/// program the check says may write one (the bound is never too low), and a program it says may
/// write one does for some shape (the bound is not needlessly high).
#[test]
fn the_split_is_read_from_the_program_as_the_plans_have_it() {
    let settings: [&[(&str, Value)]; 4] = [
        &[],
        &[("weight_split", Value::Bool(false))],
        &[("overlap", Value::Bool(false))],
        &[("v", Value::Int(3))],
    ];
    for entry in library::all() {
        let prepared = crate::prepare(FileId(0), entry.source).expect("resolves");
        for extra in settings {
            let mut said = None;
            let mut seen = false;
            for p in 2..=6u32 {
                for m in 1..=2 * p {
                    let mut args = Args::new(p, m);
                    for (name, value) in extra {
                        args = args.with(name, value.clone());
                    }
                    let Ok(mut env) = bind_params(FileId(0), &prepared.resolved, &args) else {
                        continue;
                    };
                    if run_top(FileId(0), &prepared.resolved, &mut env).is_err() {
                        continue;
                    }
                    let Ok(compiled) = prepared.compile(&args) else {
                        continue;
                    };
                    let splits = compiled
                        .plan
                        .programs()
                        .iter()
                        .flatten()
                        .flat_map(|a| a.ops())
                        .any(|op| splitting(op.kind));
                    let may = may_split(&prepared.resolved, &env);
                    assert!(
                        may || !splits,
                        "{} {extra:?} P={p} M={m}: splits but was not expected to",
                        entry.name
                    );
                    said = Some(said.unwrap_or(false) || may);
                    seen |= splits;
                }
            }
            if let Some(said) = said {
                assert_eq!(said, seen, "{} {extra:?}", entry.name);
            }
        }
    }
}

/// ZB-V splits every backward: 3·S·M operations. At M = 16,777,215 on one rank (two stages) that
/// is 100,663,290, refused before building (the check counted 2·S·M and the build ran for 3 s and
/// 1.9 GB before stopping at 67,108,864).
#[test]
fn split_schedules_are_refused_before_building() {
    let zb_v = library::get("zb-v").expect("in the library");
    let diags = crate::compile(FileId(0), zb_v.source, &Args::new(1, 16_777_215))
        .expect_err("too many operations");
    assert_eq!(
        diags[0].message,
        "2 stages and 16777215 micro-batches make as many as 100663290 operations (a forward and a \
         backward split into an input-gradient and a weight-gradient half, of every micro-batch on \
         every stage), more than the 67108864 a plan may have"
    );
    // DualPipeV without its split counts two per piece of work, and says so as before.
    let dualpipev = library::get("dualpipev").expect("in the library");
    let args = Args::new(2, 16_777_214).with("weight_split", Value::Bool(false));
    let diags = crate::compile(FileId(0), dualpipev.source, &args).expect_err("too many");
    assert!(
        diags[0]
            .message
            .starts_with("4 stages and 16777214 micro-batches make at least 134217712 operations"),
        "{}",
        diags[0].message
    );
    let args = Args::new(2, 16_777_214);
    let diags = crate::compile(FileId(0), dualpipev.source, &args).expect_err("too many");
    assert!(
        diags[0]
            .message
            .contains("make as many as 201326568 operations"),
        "{}",
        diags[0].message
    );
}
