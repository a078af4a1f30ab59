//! The JSON plan: exact round trips and the JSON Schema in `schemas/`, on any plan the readers
//! take (the writer of plans not known to be valid).

use crate::common::{reference_vectors, schema_validator, unit_timing};
use pipeweave_diagnostics::FileId;
use pipeweave_export::unvalidated::write_json;
use pipeweave_export::{read_actions, read_json};
use pipeweave_plan::testing::expressible_plan;
use proptest::prelude::*;

fn assert_valid(text: &str, what: &str) {
    let value: serde_json::Value = serde_json::from_str(text).expect("exports are JSON");
    let validator = schema_validator();
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} does not match the schema: {errors:#?}"
    );
}

#[test]
fn every_reference_vector_exports_valid_json_that_round_trips() {
    for (path, text, k) in reference_vectors() {
        let plan = read_actions(&text, FileId(0), Some(k)).expect("reads").plan;
        for timing in [None, Some(unit_timing(&plan))] {
            let json = write_json(&plan, timing.as_ref()).expect("writes");
            assert_valid(&json, &path);
            let back = read_json(&json, FileId(0)).unwrap_or_else(|d| panic!("{path}: {d:?}"));
            assert_eq!(back.plan, plan, "{path}");
            assert_eq!(back.timing, timing, "{path}");
            assert_eq!(
                write_json(&back.plan, back.timing.as_ref()).expect("writes"),
                json
            );
        }
    }
}

#[test]
fn the_schema_rejects_what_the_reader_rejects() {
    let plan = read_actions("0F0,0B0\n1F0,1B0\n", FileId(0), Some(1))
        .expect("reads")
        .plan;
    let json = write_json(&plan, None).expect("writes");
    let validator = schema_validator();
    for (from, to) in [
        ("\"version\": 1", "\"version\": 2"),
        ("\"kind\":\"B\"", "\"kind\":\"Q\""),
        ("\"dir\":\"fwd\"", "\"dir\":\"up\""),
        ("\"ranks\": 2,", "\"ranks\": 2, \"extra\": true,"),
        ("\"mb\":0,\"peer\":1", "\"mb\":-1,\"peer\":1"),
    ] {
        let bad = json.replacen(from, to, 1);
        assert_ne!(bad, json);
        let value: serde_json::Value = serde_json::from_str(&bad).expect("still JSON");
        assert!(!validator.is_valid(&value), "the schema accepts {to}");
        assert!(
            read_json(&bad, FileId(0)).is_err(),
            "the reader accepts {to}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn random_plans_round_trip_through_json(plan in expressible_plan(), with_timing in any::<bool>()) {
        let timing = with_timing.then(|| unit_timing(&plan));
        let json = write_json(&plan, timing.as_ref()).expect("writes");
        assert_valid(&json, "a random plan");
        let back = read_json(&json, FileId(0)).expect("reads");
        prop_assert_eq!(back.plan, plan);
        prop_assert_eq!(back.timing, timing);
    }

    #[test]
    fn mutated_json_never_panics(plan in expressible_plan(), at in any::<prop::sample::Index>(), c in prop::sample::select(vec!['0', '9', '"', ',', '{', '}', '[', ']', 'x', '-', '.', 'e'])) {
        let json = write_json(&plan, None).expect("writes");
        let mut chars: Vec<char> = json.chars().collect();
        let i = at.index(chars.len());
        chars[i] = c;
        let text: String = chars.into_iter().collect();
        if let Err(diags) = read_json(&text, FileId(0)) {
            for d in diags {
                if let Some(span) = d.span {
                    prop_assert!(span.range.end <= text.len());
                }
            }
        }
    }
}
