//! The decoders never panic, whatever the bytes (they come from foreign code): arbitrary bytes, and
//! valid messages with a few bytes changed, inserted, removed or lines repeated. Whatever a decoder
//! accepts encodes to a message it decodes to the same value. The `protocol` fuzz target
//! (`fuzz/`) checks the same laws for longer, guided by coverage.

use crate::protocol::*;
use crate::{Metadata, ParamSpec, Request, Value};
use pipeweave_plan::testing::{any_plan, expressible_plan};
use proptest::collection::vec;
use proptest::prelude::*;

/// Decodes `bytes` as every kind of message; a panic fails the property, and every value a
/// decoder accepts must survive encoding.
fn decode_all(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(meta) = decode_metadata(bytes) {
        prop_assert_eq!(decode_metadata(&encode_metadata(&meta)), Ok(meta));
    }
    if let Ok(request) = decode_request(bytes) {
        prop_assert_eq!(decode_request(&encode_request(&request)), Ok(request));
    }
    match decode_response(bytes) {
        Ok(response) => {
            let again = decode_response(&encode_response(&response));
            prop_assert_eq!(again.as_ref(), Ok(&response));
            if let Response::Plan(plan) = response {
                // Building the plan checks its structure; it may refuse, never panic.
                let _ = plan.into_plan();
            }
        }
        Err(e) => {
            prop_assert!(!e.message.is_empty());
        }
    }
    Ok(())
}

fn metadata() -> Metadata {
    Metadata {
        name: "dualpipe".into(),
        version: "0.1.0".into(),
        description: "two directions\nat once \\ with a backslash".into(),
        requires: "M >= 2P".into(),
        params: vec![
            ParamSpec::bool("overlap", true, "run F&B as one pair"),
            ParamSpec::int("pipelines", 2, "").constrained(Some(2), Some(64), Some(2)),
        ],
    }
}

/// Valid messages of every kind: metadata, a request, an error reply and a plan reply (of a plan
/// whose pairs are a forward and a backward: the cell text has no other pairs).
fn valid_message() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(encode_metadata(&metadata())),
        (1u32..9, 1u32..17, any::<bool>(), -3i64..9).prop_map(|(ranks, microbatches, b, n)| {
            encode_request(&Request {
                ranks,
                microbatches,
                params: vec![
                    ("overlap".into(), Value::Bool(b)),
                    ("k".into(), Value::Int(n)),
                ],
            })
        }),
        Just(encode_response(&Response::Error(
            "needs an even\nnumber of ranks".into()
        ))),
        expressible_plan()
            .prop_map(|plan| encode_response(&Response::Plan(PlanMessage::from_plan(&plan)))),
    ]
}

/// One edit of a message; positions are taken modulo its length.
#[derive(Debug, Clone)]
enum Edit {
    Set(usize, u8),
    Insert(usize, u8),
    Remove(usize),
    /// Repeats the line holding this position.
    RepeatLine(usize),
    Truncate(usize),
}

/// The bytes that matter to the decoders, and any byte.
fn byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        prop::sample::select(b"0123456789,;() \n\r\\=-FBIWe".to_vec()),
        any::<u8>(),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), byte()).prop_map(|(at, b)| Edit::Set(at, b)),
        (any::<usize>(), byte()).prop_map(|(at, b)| Edit::Insert(at, b)),
        any::<usize>().prop_map(Edit::Remove),
        any::<usize>().prop_map(Edit::RepeatLine),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

fn apply(bytes: &mut Vec<u8>, edit: &Edit) {
    let len = bytes.len();
    if len == 0 {
        return;
    }
    match *edit {
        Edit::Set(at, b) => bytes[at % len] = b,
        Edit::Insert(at, b) => bytes.insert(at % (len + 1), b),
        Edit::Remove(at) => {
            bytes.remove(at % len);
        }
        Edit::RepeatLine(at) => {
            let at = at % len;
            let start = bytes[..at]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            let end = bytes[at..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(len, |i| at + i + 1);
            let line = bytes[start..end].to_vec();
            bytes.splice(end..end, line);
        }
        Edit::Truncate(at) => bytes.truncate(at % len),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..512)) {
        decode_all(&bytes)?;
    }

    #[test]
    fn arbitrary_bytes_after_a_valid_header_never_panic(
        kind in prop::sample::select(vec!["metadata", "request", "plan", "error"]),
        body in vec(byte(), 0..256),
    ) {
        let mut bytes = format!("{MAGIC} {PROTOCOL_VERSION}\n{kind}\n").into_bytes();
        bytes.extend(body);
        decode_all(&bytes)?;
    }

    #[test]
    fn edited_valid_messages_never_panic(
        message in valid_message(),
        edits in vec(edit(), 1..4),
    ) {
        let mut bytes = message;
        for e in &edits {
            apply(&mut bytes, e);
        }
        decode_all(&bytes)?;
    }

    #[test]
    fn plans_with_ill_formed_pairs_are_refused_not_misread(plan in any_plan()) {
        let bytes = encode_response(&Response::Plan(PlanMessage::from_plan(&plan)));
        if let Ok(Response::Plan(read)) = decode_response(&bytes) {
            prop_assert_eq!(read, PlanMessage::from_plan(&plan));
        }
    }

    #[test]
    fn valid_messages_decode_to_what_was_encoded(plan in expressible_plan()) {
        let message = PlanMessage::from_plan(&plan);
        let bytes = encode_response(&Response::Plan(message.clone()));
        prop_assert_eq!(decode_response(&bytes), Ok(Response::Plan(message)));
    }
}
