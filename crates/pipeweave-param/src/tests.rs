//! The spelling rule, the words and the declarations, on every type.

use super::*;

fn range(min: Option<i64>, max: Option<i64>, multiple_of: Option<i64>) -> ParamType {
    ParamType::Int(IntRange {
        min,
        max,
        multiple_of,
    })
}

#[test]
fn a_bool_is_true_or_false_and_nothing_else() {
    let ty = ParamType::Bool;
    assert_eq!(ty.read("true"), Some(Value::Bool(true)));
    assert_eq!(ty.read("false"), Some(Value::Bool(false)));
    for bad in ["1", "0", "2", "True", "yes", "", " true"] {
        assert_eq!(ty.read(bad), None, "{bad}");
    }
}

#[test]
fn an_int_is_a_whole_number_in_its_range() {
    let any = ParamType::int();
    assert_eq!(any.read("-3"), Some(Value::Int(-3)));
    assert_eq!(any.read("007"), Some(Value::Int(7)));
    for bad in ["true", "+3", "3.0", "", "-", "9223372036854775808", "1e3"] {
        assert_eq!(any.read(bad), None, "{bad}");
    }
    let lag = range(Some(0), Some(8), None);
    assert_eq!(lag.read("8"), Some(Value::Int(8)));
    assert_eq!(lag.read("9"), None);
    assert_eq!(lag.read("-1"), None);
    let even = range(Some(2), None, Some(2));
    assert_eq!(even.read("4"), Some(Value::Int(4)));
    assert_eq!(even.read("3"), None);
    assert_eq!(even.read("0"), None);
}

#[test]
fn a_choice_is_one_of_its_options_as_spelled() {
    let ty = ParamType::choice(&["direct", "doubling"]);
    assert_eq!(ty.read("direct"), Some(Value::Choice("direct".into())));
    assert_eq!(ty.read("Direct"), None);
    assert_eq!(ty.read("halving"), None);
    assert!(!ty.admits(&Value::Int(0)));
}

#[test]
fn types_read_as_a_weave_file_declares_them() {
    let shown: Vec<String> = [
        ParamType::Bool,
        ParamType::int(),
        range(Some(0), Some(8), None),
        range(Some(1), None, None),
        range(None, Some(8), None),
        range(Some(2), None, Some(2)),
        range(None, None, Some(3)),
        ParamType::choice(&["a", "b"]),
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    assert_eq!(
        shown,
        [
            "bool",
            "int",
            "int in 0..=8",
            "int in 1..",
            "int in ..=8",
            "int in 2.. multiple of 2",
            "int multiple of 3",
            "choice(a, b)"
        ]
    );
}

#[test]
fn errors_name_the_parameter_its_type_and_its_values() {
    let cases = [
        (
            ParamType::Bool,
            "2",
            "parameter `p` is a bool (true or false), not `2`",
        ),
        (
            ParamType::int(),
            "true",
            "parameter `p` is an int (a whole number), not `true`",
        ),
        (
            range(Some(0), Some(8), None),
            "9",
            "parameter `p` is an int (a whole number from 0 to 8), not `9`",
        ),
        (
            range(Some(1), None, None),
            "0",
            "parameter `p` is an int (a whole number of at least 1), not `0`",
        ),
        (
            range(Some(2), None, Some(2)),
            "3",
            "parameter `p` is an int (an even whole number of at least 2), not `3`",
        ),
        (
            range(Some(0), Some(9), Some(3)),
            "4",
            "parameter `p` is an int (a whole number from 0 to 9, a multiple of 3), not `4`",
        ),
        (
            ParamType::choice(&["a", "b", "c"]),
            "d",
            "parameter `p` is a choice (a, b or c), not `d`",
        ),
    ];
    for (ty, text, message) in cases {
        assert_eq!(ty.read(text), None);
        assert_eq!(ty.error("p", text).to_string(), message);
    }
}

#[test]
fn malformed_types_say_why() {
    assert_eq!(
        range(Some(3), Some(1), None).problem().as_deref(),
        Some("the range 3..=1 is empty")
    );
    assert_eq!(
        range(Some(1), Some(1), Some(2)).problem().as_deref(),
        Some("no multiple of 2 lies in the range 1..=1")
    );
    assert!(range(Some(-3), Some(-2), Some(2)).problem().is_none());
    assert!(range(None, None, Some(0)).problem().is_some());
    assert!(ParamType::choice::<&str>(&[]).problem().is_some());
    assert!(ParamType::choice(&["a", "a"]).problem().is_some());
    assert!(ParamType::choice(&["true"]).problem().is_some());
    assert!(ParamType::choice(&["2x"]).problem().is_some());
    assert!(ParamType::choice(&["a-b"]).problem().is_some());
    assert!(ParamType::choice(&["_a", "b2"]).problem().is_none());
}

#[test]
fn settings_are_read_against_the_declared_parameters() {
    let split = ParamType::Bool;
    let lag = range(Some(0), Some(8), None);
    let declared = [("weight_split", &split), ("lag", &lag)];
    let set = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    };
    assert_eq!(
        read_settings(declared, &set(&[("lag", "3"), ("weight_split", "false")])),
        Ok(vec![
            ("lag".to_owned(), Value::Int(3)),
            ("weight_split".to_owned(), Value::Bool(false))
        ])
    );
    let error = |pairs: &[(&str, &str)]| {
        read_settings(declared, &set(pairs))
            .expect_err("refused")
            .to_string()
    };
    assert_eq!(
        error(&[("extra", "1")]),
        "no parameter `extra` (its parameters: weight_split, lag)"
    );
    assert_eq!(
        read_settings([], &set(&[("x", "1")]))
            .expect_err("none")
            .to_string(),
        "no parameter `x` (it takes no parameters)"
    );
    assert_eq!(
        error(&[("lag", "1"), ("lag", "2")]),
        "parameter `lag` is set twice"
    );
    assert_eq!(
        error(&[("lag", "true")]),
        "parameter `lag` is an int (a whole number from 0 to 8), not `true`"
    );
    assert_eq!(
        error(&[("weight_split", "1")]),
        "parameter `weight_split` is a bool (true or false), not `1`"
    );
}
