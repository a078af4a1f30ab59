//! Typed parameters: what a file declares, how values of each type reach the program, and which
//! parameters its top-level requirements admit.

use pipeweave_diagnostics::FileId;
use pipeweave_dsl::{Args, ParamType, Value};
use pipeweave_param::IntRange;
use pipeweave_plan::testing::program_lines;

const ORDERED: &str = r#"
doc "forwards in order or in reverse"
same as plugin ordered
param order: choice(forward, reverse) = forward "which way the forwards go"
param lag: int in 0..4 = 1
param drain: bool = true
require lag < P else "lag below P, got {lag} with {order} and {drain}"
stages P
program {
  if order == "reverse" { for k in 0..M { F(M - 1 - k) } } else { repeat M { F } }
  if drain { for k in 0..M { B(M - 1 - k) } } else { repeat M { B } }
}
"#;

#[test]
fn a_file_declares_typed_parameters_and_what_it_requires_in_words() {
    let info = pipeweave_dsl::info(ORDERED);
    let declared: Vec<(&str, &ParamType, Option<&str>)> = info
        .params
        .iter()
        .map(|p| (p.name.as_str(), &p.ty, p.default.as_deref()))
        .collect();
    assert_eq!(
        declared,
        [
            (
                "order",
                &ParamType::choice(&["forward", "reverse"]),
                Some("forward")
            ),
            (
                "lag",
                &ParamType::Int(IntRange {
                    min: Some(0),
                    max: Some(3),
                    multiple_of: None
                }),
                Some("1")
            ),
            ("drain", &ParamType::Bool, Some("true")),
        ]
    );
    assert_eq!(info.requires, ["lag below P, got lag with order and drain"]);
    assert_eq!(info.same_as_plugin.as_deref(), Some("ordered"));
}

#[test]
fn values_of_every_type_reach_the_program() {
    let run = |args: Args| {
        let compiled = pipeweave_dsl::compile(FileId(0), ORDERED, &args).expect("compiles");
        program_lines(&compiled.plan)[0].clone()
    };
    assert_eq!(run(Args::new(2, 2)), "0F0,0F1,0B1,0B0");
    assert_eq!(
        run(Args::new(2, 2).with("order", Value::Choice("reverse".into()))),
        "0F1,0F0,0B1,0B0"
    );
    assert_eq!(run(Args::new(2, 2).with("drain", false)), "0F0,0F1,0B0,0B1");
}

#[test]
fn requirement_messages_show_values_as_their_types_spell_them() {
    let args = Args::new(2, 2)
        .with("lag", 3)
        .with("order", Value::Choice("reverse".into()));
    let diags = pipeweave_dsl::compile(FileId(0), ORDERED, &args).expect_err("lag ≥ P");
    // The values its holes do not show go with the message.
    assert_eq!(
        diags[0].message,
        "lag below P, got 3 with reverse and true (with P = 2, M = 2)"
    );
}

#[test]
fn only_the_top_level_requirements_decide_what_is_admitted() {
    let prepared = pipeweave_dsl::prepare(FileId(0), ORDERED).expect("resolves");
    assert_eq!(prepared.admits(&Args::new(2, 2)), Ok(true));
    assert_eq!(prepared.admits(&Args::new(1, 2)), Ok(false));
    assert_eq!(prepared.admits(&Args::new(1, 2).with("lag", 0)), Ok(true));
    assert_eq!(prepared.admits(&Args::new(2, 2).with("lag", 3)), Ok(false));
    let wrong = prepared
        .admits(&Args::new(2, 2).with("lag", true))
        .expect_err("a bool for an int");
    assert_eq!(
        wrong[0].message,
        "parameter `lag` is an int (a whole number from 0 to 3), not `true`"
    );
    assert!(prepared.without_default().is_empty());
}
