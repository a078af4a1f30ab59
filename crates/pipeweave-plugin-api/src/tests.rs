//! Round trips and refusals of the protocol codec.

use crate::protocol::*;
use pipeweave_plan::{Action, Kind, Op, Pipeline};

fn sample_metadata() -> Metadata {
    Metadata {
        name: "chimera".into(),
        version: "0.1.0".into(),
        description: "two pipelines in opposite directions, with a \\ backslash".into(),
        requires: "an even number of ranks".into(),
        params: vec![
            ParamSpec::int("pipelines", 2, "how many pipelines").constrained(
                Some(2),
                None,
                Some(2),
            ),
            ParamSpec::bool("forward_doubling", false, ""),
        ],
    }
}

#[test]
fn metadata_round_trips() {
    let meta = sample_metadata();
    let bytes = encode_metadata(&meta);
    assert_eq!(decode_metadata(&bytes), Ok(meta));
}

#[test]
fn metadata_text_is_readable() {
    let text = String::from_utf8(encode_metadata(&sample_metadata())).unwrap();
    assert_eq!(
        text,
        "pipeweave-plugin-protocol 1\nmetadata\nname chimera\nversion 0.1.0\n\
         description two pipelines in opposite directions, with a \\\\ backslash\n\
         requires an even number of ranks\n\
         param pipelines int 2 min=2 multiple_of=2\nparam-help how many pipelines\n\
         param forward_doubling bool false\nend\n"
    );
}

#[test]
fn request_round_trips() {
    let req = Request {
        ranks: 8,
        microbatches: 20,
        params: vec![
            ("overlap".into(), Value::Bool(false)),
            ("k".into(), Value::Int(-3)),
        ],
    };
    assert_eq!(decode_request(&encode_request(&req)), Ok(req));
}

#[test]
fn plan_and_error_round_trip() {
    let f = Op::new(0, Kind::F, 3);
    let b = Op::new(7, Kind::B, 5);
    let plan = PlanMessage {
        ranks: 2,
        pipelines: vec![Pipeline {
            placement: vec![0, 1],
            microbatches: vec![0, 1],
        }],
        programs: vec![vec![Action::One(f), Action::Pair { f, b }], vec![]],
    };
    let resp = Response::Plan(plan);
    let bytes = encode_response(&resp);
    assert_eq!(
        String::from_utf8(bytes.clone()).unwrap(),
        "pipeweave-plugin-protocol 1\nplan\nranks 2\npipeline placement=0,1 microbatches=0,1\n\
         program 0F3,(0F3;7B5)OVERLAP_F_B\nprogram\nend\n"
    );
    assert_eq!(decode_response(&bytes), Ok(resp));
    let e = Response::Error("needs an even\nnumber".into());
    assert_eq!(decode_response(&encode_response(&e)), Ok(e));
}

fn refusal(text: &[u8]) -> String {
    match decode_response(text) {
        Ok(r) => panic!("accepted {r:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn malformed_responses_are_refused_with_a_line() {
    let cases: &[(&[u8], &str)] = &[
        (
            b"\xff\xfe garbage",
            "not UTF-8 text (invalid byte at offset 0)",
        ),
        (
            b"hello",
            "line 1: expected `pipeweave-plugin-protocol 2`, found `hello`",
        ),
        (
            b"pipeweave-plugin-protocol 7\nplan\n",
            "line 1: protocol version `7`, but this pipeweave reads versions 1 to 2",
        ),
        (
            b"pipeweave-plugin-protocol 1\nplan\nranks 1\nprogram 0F0\n",
            "line 4: the message ends without `end`",
        ),
        (
            b"pipeweave-plugin-protocol 1\nplan\nranks 1\nprogram 0X0\nend\n",
            "line 4: `0X0` is not an action",
        ),
        (
            b"pipeweave-plugin-protocol 1\nplan\nranks 1\nprogram 0F0,,0B0\nend\n",
            "line 4: `` is not an action",
        ),
        (
            b"pipeweave-plugin-protocol 1\nplan\nranks 2\nprogram 0F0\nend\n",
            "line 5: 1 programs for 2 ranks",
        ),
        (
            b"pipeweave-plugin-protocol 1\nplan\nranks 1\nprogram\nend\nmore",
            "line 6: text after `end`",
        ),
        (
            b"pipeweave-plugin-protocol 1\nplan\nranks -1\n",
            "line 3: ranks must be a whole number, found `-1`",
        ),
        (
            b"pipeweave-plugin-protocol 1\nplan\nranks 99999999999\n",
            "line 3: ranks `99999999999` is too large",
        ),
        (
            b"pipeweave-plugin-protocol 1\nplan\nranks 1\nprogram (0B0;1F1)OVERLAP_F_B\nend\n",
            "line 4: `(0B0;1F1)OVERLAP_F_B` is not an action",
        ),
        (
            b"pipeweave-plugin-protocol 1\nplan\nranks 1\nprogram 0F16777216\nend\n",
            "line 4: `0F16777216` is not an action: micro-batch number `16777216` is too large (at most 16777215)",
        ),
        (
            b"pipeweave-plugin-protocol 1\nplan\nranks 1\npipeline placement=0 microbatches=0,268435455\n",
            "line 4: micro-batch 268435455 is too large (at most 16777215)",
        ),
        (
            b"pipeweave-plugin-protocol 1\nerror\nmessage bad \\q\nend\n",
            "line 3: unknown escape `\\q`",
        ),
        (
            b"pipeweave-plugin-protocol 1\nmetadata\n",
            "line 2: expected a `plan` message, found `metadata`",
        ),
    ];
    for (bytes, expected) in cases {
        assert_eq!(
            refusal(bytes),
            *expected,
            "for {:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn parameters_parse_and_check_constraints() {
    let meta = sample_metadata();
    let k = meta.param("pipelines").unwrap();
    assert_eq!(k.parse("4"), Ok(Value::Int(4)));
    let even = "parameter `pipelines` is an int (an even whole number of at least 2)";
    assert_eq!(k.parse("3"), Err(format!("{even}, not `3`")));
    assert_eq!(k.parse("0"), Err(format!("{even}, not `0`")));
    assert_eq!(k.parse("two"), Err(format!("{even}, not `two`")));
    let fd = meta.param("forward_doubling").unwrap();
    assert_eq!(fd.parse("true"), Ok(Value::Bool(true)));
    let bool_error = |found: &str| {
        format!("parameter `forward_doubling` is a bool (true or false), not `{found}`")
    };
    assert_eq!(fd.parse("yes"), Err(bool_error("yes")));
    // The one spelling rule: a number is never read as a truth value.
    assert_eq!(fd.parse("1"), Err(bool_error("1")));
    assert_eq!(fd.check(&Value::Int(1)), Err(bool_error("1")));
}

#[test]
fn metadata_with_a_default_breaking_its_constraints_is_refused() {
    let text = b"pipeweave-plugin-protocol 1\nmetadata\nname x\nversion 1\ndescription d\nrequires \nparam k int 3 multiple_of=2\nend\n";
    let e = decode_metadata(text).unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 7: the default breaks the constraints: parameter `k` is an int (an even whole number), not `3`"
    );
}

fn choice_metadata() -> Metadata {
    Metadata {
        params: vec![
            ParamSpec::choice(
                "joints",
                &["direct", "doubling", "halving"],
                "direct",
                "how units join",
            ),
            ParamSpec::bool("overlap", true, ""),
        ],
        ..sample_metadata()
    }
}

#[test]
fn a_choice_is_written_in_version_2_and_everything_else_in_version_1() {
    let bytes = encode_metadata(&choice_metadata());
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(
        text.starts_with("pipeweave-plugin-protocol 2\nmetadata\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "param joints choice direct options=direct,doubling,halving\nparam-help how units join\n"
        ),
        "{text}"
    );
    assert_eq!(decode_metadata(&bytes), Ok(choice_metadata()));
    let request = Request {
        ranks: 4,
        microbatches: 8,
        params: vec![
            ("joints".into(), Value::Choice("halving".into())),
            ("overlap".into(), Value::Bool(true)),
        ],
    };
    let bytes = encode_request(&request);
    assert!(bytes.starts_with(b"pipeweave-plugin-protocol 2\nrequest\n"));
    assert_eq!(decode_request(&bytes), Ok(request));
    let plain = Request {
        ranks: 4,
        microbatches: 8,
        params: vec![("overlap".into(), Value::Bool(true))],
    };
    assert!(encode_request(&plain).starts_with(b"pipeweave-plugin-protocol 1\nrequest\n"));
}

#[test]
fn version_1_messages_are_still_read_but_hold_no_choice() {
    let v1 = b"pipeweave-plugin-protocol 1\nmetadata\nname x\nversion 1\ndescription d\nrequires \nparam k choice a options=a,b\nend\n";
    assert_eq!(
        decode_metadata(v1).unwrap_err().to_string(),
        "line 7: parameter `k` is a choice, which needs protocol version 2"
    );
    let v2 = String::from_utf8_lossy(v1).replace("protocol 1", "protocol 2");
    let meta = decode_metadata(v2.as_bytes()).expect("a choice in version 2");
    assert_eq!(meta.params[0].ty, ParamType::choice(&["a", "b"]));
    let request = b"pipeweave-plugin-protocol 1\nrequest\nranks 2\nmicrobatches 4\nset k a\nend\n";
    assert_eq!(
        decode_request(request).unwrap_err().to_string(),
        "line 5: a parameter value must be a whole number, found `a`"
    );
    let bad = [
        (
            "param k choice c options=a,b",
            "line 7: the default breaks the constraints: parameter `k` is a choice (a or b), not `c`",
        ),
        (
            "param k choice a options=a,a",
            "line 7: parameter `k`: the option `a` is listed twice",
        ),
        (
            "param k choice a options=a,true",
            "line 7: parameter `k`: `true` cannot be an option: options are names (letters, digits and `_`), not true or false",
        ),
        (
            "param k choice a",
            "line 7: choice `k` needs `options=a,b,...`",
        ),
        (
            "param k int 1 min=3 max=2",
            "line 7: parameter `k`: the range 3..=2 is empty",
        ),
    ];
    for (line, expected) in bad {
        let text = format!(
            "pipeweave-plugin-protocol 2\nmetadata\nname x\nversion 1\ndescription d\nrequires \n{line}\nend\n"
        );
        assert_eq!(
            decode_metadata(text.as_bytes()).unwrap_err().to_string(),
            expected
        );
    }
}

/// What a plugin sends is shown on a terminal: a control character in it is refused, written
/// (anywhere in a message) or escaped (a line end where a field is one line).
#[test]
fn control_characters_from_a_plugin_are_refused() {
    let metadata = |name: &str, description: &str, param: &str| {
        format!(
            "pipeweave-plugin-protocol 1\nmetadata\nname {name}\nversion 1\ndescription {description}\nrequires \n{param}\nend\n"
        )
    };
    let cases = [
        (
            metadata("clear\u{1b}[2J", "d", ""),
            "line 3: a control character (U+001B at column 11): a message holds none but its line ends",
        ),
        (
            metadata("x", "ring\u{7}", ""),
            "line 5: a control character (U+0007 at column 17): a message holds none but its line ends",
        ),
        (
            metadata("x", "d", "param k\u{9b} bool true"),
            "line 7: a control character (U+009B at column 8): a message holds none but its line ends",
        ),
        (
            metadata("x", "d", "param k bool true\r"),
            "line 7: a control character (U+000D at column 18): a message holds none but its line ends",
        ),
        (
            metadata("two\\nlines", "d", ""),
            "line 3: the plugin's name holds a line end (U+000A): it is shown on one line",
        ),
        (
            metadata("x", "back to the start\\r", ""),
            "line 5: the description holds a line end (U+000D): it is shown on one line",
        ),
        (
            metadata("x", "d", "param a\\nb bool true"),
            "line 7: a parameter's name holds a line end (U+000A): it is shown on one line",
        ),
        (
            metadata("x", "d", "param k bool true\nparam-help two\\nlines"),
            "line 8: a parameter's help holds a line end (U+000A): it is shown on one line",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(
            decode_metadata(text.as_bytes()).map_err(|e| e.to_string()),
            Err(expected.to_owned()),
            "{text:?}"
        );
    }
    let requires = "pipeweave-plugin-protocol 1\nmetadata\nname x\nversion 1\ndescription d\nrequires a\\nb\nend\n";
    assert_eq!(
        decode_metadata(requires.as_bytes()).map_err(|e| e.to_string()),
        Err(
            "line 6: the requirements text holds a line end (U+000A): it is shown on one line"
                .to_owned()
        )
    );
    // An error message may hold line ends, and nothing else.
    let error = |text: &str| format!("pipeweave-plugin-protocol 1\nerror\nmessage {text}\nend\n");
    assert_eq!(
        decode_response(error("needs\\ntwo").as_bytes()),
        Ok(Response::Error("needs\ntwo".into()))
    );
    assert_eq!(
        refusal(error("needs\u{1b}[2J").as_bytes()),
        "line 3: a control character (U+001B at column 14): a message holds none but its line ends"
    );
    assert_eq!(
        refusal(error("back\\r").as_bytes()),
        "line 3: the message holds a carriage return (U+000D): it may hold line ends only"
    );
}

mod decode;
