use super::*;
use crate::actions::read_actions;

fn plan(src: &str, k: u32) -> Plan {
    read_actions(src, FileId(0), Some(k))
        .expect("valid actions")
        .plan
}

const ONE_F_ONE_B: &str = "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n";

#[test]
fn writes_a_readable_document() {
    let text = write_plan_json(&plan("0F0,0B0\n1F0,1B0\n", 1), None).expect("writes");
    assert_eq!(
        text,
        r#"{
  "format": "pipeweave-plan",
  "version": 1,
  "ranks": 2,
  "stages_per_pipeline": 2,
  "pipelines": [
    {"placement":[0,1],"microbatches":[0]}
  ],
  "parts": [
    {"part":0,"stages":[0],"ranks":[0]},
    {"part":1,"stages":[1],"ranks":[1]}
  ],
  "programs": [
    {
      "rank": 0,
      "actions": [
        {"kind":"F","stage":0,"mb":0},
        {"kind":"B","stage":0,"mb":0}
      ],
      "steps": [
        {"kind":"compute","action":0},
        {"kind":"send","dir":"fwd","stage":0,"mb":0,"peer":1},
        {"kind":"recv","dir":"bwd","stage":0,"mb":0,"peer":1},
        {"kind":"compute","action":1},
        {"kind":"wait_send","dir":"fwd","stage":0,"mb":0,"peer":1},
        {"kind":"reduce_grad","stage":0},
        {"kind":"wait_reduce_grad","stage":0}
      ]
    },
    {
      "rank": 1,
      "actions": [
        {"kind":"F","stage":1,"mb":0},
        {"kind":"B","stage":1,"mb":0}
      ],
      "steps": [
        {"kind":"recv","dir":"fwd","stage":1,"mb":0,"peer":0},
        {"kind":"compute","action":0},
        {"kind":"compute","action":1},
        {"kind":"send","dir":"bwd","stage":1,"mb":0,"peer":0},
        {"kind":"reduce_grad","stage":1},
        {"kind":"wait_reduce_grad","stage":1},
        {"kind":"wait_send","dir":"bwd","stage":1,"mb":0,"peer":0}
      ]
    }
  ]
}
"#
    );
}

#[test]
fn round_trips_with_a_timeline() {
    let p = plan(ONE_F_ONE_B, 1);
    let timing = Timing {
        makespan: 7.1,
        intervals: vec![
            vec![
                Interval {
                    start: 0.0,
                    end: 1.0,
                },
                Interval {
                    start: 1.0,
                    end: 2.0,
                },
                Interval {
                    start: 3.0,
                    end: 5.0,
                },
                Interval {
                    start: 5.1,
                    end: 7.1,
                },
            ],
            vec![
                Interval {
                    start: 1.0,
                    end: 2.0,
                },
                Interval {
                    start: 2.0,
                    end: 4.0,
                },
                Interval {
                    start: 4.0,
                    end: 5.0,
                },
                Interval {
                    start: 0.1 + 0.2,
                    end: 1e300,
                },
            ],
        ],
    };
    let text = write_plan_json(&p, Some(&timing)).expect("writes");
    let back = read_json(&text, FileId(0)).expect("reads");
    assert_eq!(back.plan, p);
    assert_eq!(back.timing.as_ref(), Some(&timing));
    assert_eq!(
        write_plan_json(&back.plan, back.timing.as_ref()).expect("writes"),
        text
    );
}

#[test]
fn refuses_a_timeline_that_does_not_fit() {
    let p = plan(ONE_F_ONE_B, 1);
    let timing = Timing {
        makespan: 1.0,
        intervals: vec![vec![], vec![]],
    };
    let d = write_plan_json(&p, Some(&timing)).expect_err("refused");
    assert_eq!(
        d.message,
        "the timeline has 0 intervals for rank 0 but the rank has 4 actions"
    );
    let nan = Timing {
        makespan: f64::NAN,
        intervals: vec![vec![], vec![]],
    };
    assert!(write_plan_json(&p, Some(&nan)).is_err());
}

fn read_messages(text: &str) -> Vec<String> {
    match read_json(text, FileId(0)) {
        Ok(_) => panic!("expected an error"),
        Err(d) => d.into_iter().map(|d| d.message).collect(),
    }
}

#[test]
fn syntax_errors_point_at_the_place() {
    let text = write_plan_json(&plan(ONE_F_ONE_B, 1), None).expect("writes");
    let broken = text.replacen("\"mb\":1}", "\"mb\":1,}", 1);
    let d = read_json(&broken, FileId(0)).expect_err("trailing comma");
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].message, "invalid JSON plan: key must be a string");
    let at = d[0].span.as_ref().expect("span").range.start;
    assert_eq!(&broken[at..at + 1], "}");

    let wrong_kind = text.replacen("\"kind\":\"B\"", "\"kind\":\"Q\"", 1);
    let msgs = read_messages(&wrong_kind);
    assert!(
        msgs[0].starts_with("invalid JSON plan: unknown variant `Q`"),
        "{msgs:?}"
    );
    assert_eq!(
        read_messages(""),
        ["invalid JSON plan: EOF while parsing a value"]
    );
    assert_eq!(
        read_messages("{\"format\":\"x\"}"),
        ["this is not a pipeweave plan: its format is `x`"]
    );
    assert_eq!(
        read_messages("{\"format\":\"pipeweave-plan\",\"version\":2}"),
        ["unsupported plan version 2: this pipeweave reads version 1"]
    );
    let extra = text.replacen("\"ranks\": 2,", "\"ranks\": 2, \"colour\": 1,", 1);
    let msgs = read_messages(&extra);
    assert!(
        msgs[0].starts_with("invalid JSON plan: unknown field `colour`"),
        "{msgs:?}"
    );
    // What the file says is quoted without its control characters.
    let extra = text.replacen("\"ranks\": 2,", "\"ranks\": 2, \"\\u001b[2J\": 1,", 1);
    let msgs = read_messages(&extra);
    assert!(
        msgs[0].starts_with("invalid JSON plan: unknown field `␛[2J`"),
        "{msgs:?}"
    );
    assert_eq!(
        read_messages("{\"format\":\"x\\u0007\"}"),
        ["this is not a pipeweave plan: its format is `x␇`"]
    );
}

#[test]
fn semantic_errors() {
    let text = write_plan_json(&plan(ONE_F_ONE_B, 1), None).expect("writes");
    // Swap two actions of rank 1 without rewriting the steps.
    let swapped = text.replacen(
        "{\"kind\":\"B\",\"stage\":1,\"mb\":0},\n        {\"kind\":\"F\",\"stage\":1,\"mb\":1}",
        "{\"kind\":\"F\",\"stage\":1,\"mb\":1},\n        {\"kind\":\"B\",\"stage\":1,\"mb\":0}",
        1,
    );
    assert_ne!(swapped, text);
    assert_eq!(
        read_messages(&swapped),
        ["rank 1 step 4 is `1SEND_B0 to rank 0` but lowering its actions gives `1B0`"]
    );
    let dropped = text.replacen("        {\"kind\":\"reduce_grad\",\"stage\":1},\n", "", 1);
    assert_ne!(dropped, text);
    assert_eq!(
        read_messages(&dropped),
        ["rank 1 step 8 is `1WAIT_REDUCE_GRAD` but lowering its actions gives `1REDUCE_GRAD`"]
    );
    let parts = text.replacen("\"ranks\":[1]", "\"ranks\":[0]", 1);
    assert_eq!(
        read_messages(&parts),
        ["the `parts` section does not match the pipelines"]
    );
    let rank = text.replacen("\"rank\": 1,", "\"rank\": 0,", 1);
    assert_eq!(
        read_messages(&rank),
        ["program 1 says it is rank 0; programs are listed in rank order"]
    );
    let placement = text.replacen("\"placement\":[0,1]", "\"placement\":[0,5]", 1);
    assert_eq!(
        read_messages(&placement),
        ["stage 1 of pipeline 0 is placed on rank 5, but the plan has only 2 ranks"]
    );
    let pair = text.replacen(
        "{\"kind\":\"F\",\"stage\":0,\"mb\":0}",
        "{\"kind\":\"pair\",\"f\":{\"kind\":\"B\",\"stage\":0,\"mb\":0},\"b\":{\"kind\":\"F\",\"stage\":0,\"mb\":1}}",
        1,
    );
    let msgs = read_messages(&pair);
    assert_eq!(
        msgs[0],
        "rank 0 action 0 is an overlapped pair `(0B0;0F1)OVERLAP_F_B`; a pair is a forward and then a B or an I"
    );
}

/// The text each problem points at.
fn read_places(text: &str) -> Vec<(String, String)> {
    match read_json(text, FileId(0)) {
        Ok(_) => panic!("expected an error"),
        Err(d) => d
            .into_iter()
            .map(|d| {
                let range = d.span.expect("a place").range;
                (d.message, text[range].to_owned())
            })
            .collect(),
    }
}

/// Problems found after parsing point at the value they are about (before: no place at all).
#[test]
fn semantic_errors_point_at_their_values() {
    let text = write_plan_json(&plan(ONE_F_ONE_B, 1), None).expect("writes");
    let dropped = text.replacen("        {\"kind\":\"reduce_grad\",\"stage\":1},\n", "", 1);
    assert_eq!(
        read_places(&dropped),
        [(
            "rank 1 step 8 is `1WAIT_REDUCE_GRAD` but lowering its actions gives `1REDUCE_GRAD`"
                .to_owned(),
            "{\"kind\":\"wait_reduce_grad\",\"stage\":1}".to_owned()
        )]
    );
    let rank = text.replacen("\"rank\": 1,", "\"rank\": 0,", 1);
    assert_eq!(read_places(&rank)[0].1, "0");
    let version = text.replacen("\"version\": 1", "\"version\": 9", 1);
    assert_eq!(read_places(&version)[0].1, "9");
    // A missing step points at the rank's list of steps.
    let mut doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let steps = doc["programs"][1]["steps"].as_array_mut().expect("steps");
    steps.pop();
    let short = serde_json::to_string_pretty(&doc).expect("writes");
    let places = read_places(&short);
    assert!(
        places[0]
            .0
            .starts_with("rank 1 has 11 steps but lowering its actions gives 12"),
        "{places:?}"
    );
    assert_eq!(places[0].1, "[");
}

/// One rank limit for every reader: a JSON plan of more ranks than a plan may have is refused at
/// its `ranks` before anything is built.
#[test]
fn more_ranks_than_a_plan_may_have() {
    let ranks = pipeweave_plan::MAX_RANKS + 1;
    let programs: Vec<String> = (0..ranks)
        .map(|r| format!("{{\"rank\":{r},\"actions\":[],\"steps\":[]}}"))
        .collect();
    let text = format!(
        "{{\"format\":\"pipeweave-plan\",\"version\":1,\"ranks\":{ranks},\
         \"stages_per_pipeline\":1,\"pipelines\":[{{\"placement\":[0],\"microbatches\":[]}}],\
         \"parts\":[],\"programs\":[{}]}}",
        programs.join(",")
    );
    assert_eq!(
        read_places(&text),
        [(
            "the plan has 65537 ranks; a plan has at most 65536 ranks".to_owned(),
            "65537".to_owned()
        )]
    );
}

#[test]
fn micro_batch_ids_have_the_limit_of_every_format() {
    // The actions format refuses ids above MAX_MICROBATCH_ID: so does JSON, before any table is
    // sized by them (268,435,455 took seconds and gigabytes).
    let text = write_plan_json(&plan(ONE_F_ONE_B, 1), None).expect("writes");
    let huge = text
        .replacen(
            "\"microbatches\":[0,1]",
            "\"microbatches\":[0,268435455]",
            1,
        )
        .replacen(
            "{\"kind\":\"F\",\"stage\":1,\"mb\":1}",
            "{\"kind\":\"F\",\"stage\":1,\"mb\":16777216}",
            1,
        );
    let places = read_places(&huge);
    assert_eq!(
        places,
        [
            (
                "pipeline 0 carries micro-batch 268435455, above the largest id a plan may use (16777215)"
                    .to_owned(),
                "268435455".to_owned()
            ),
            (
                "rank 1 action 2 names micro-batch 16777216, above the largest id a plan may use (16777215)"
                    .to_owned(),
                "16777216".to_owned()
            ),
        ]
    );
    // In a pair, the op whose id it is.
    let pair = text.replacen(
        "{\"kind\":\"F\",\"stage\":0,\"mb\":0}",
        "{\"kind\":\"pair\",\"f\":{\"kind\":\"F\",\"stage\":0,\"mb\":0},\"b\":{\"kind\":\"B\",\"stage\":0,\"mb\":20000000}}",
        1,
    );
    assert_eq!(read_places(&pair)[0].1, "20000000");
}

#[test]
fn hand_written_pieces_are_what_serde_writes() {
    let nums = [0, 1, 9, 10, 99, 100, 12_345, u32::MAX];
    let kinds = [Kind::F, Kind::B, Kind::I, Kind::W];
    let text = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut out = Vec::new();
        f(&mut out);
        String::from_utf8(out).expect("UTF-8")
    };
    for (i, &stage) in nums.iter().enumerate() {
        let mb = nums[(i + 3) % nums.len()];
        let peer = nums[(i + 5) % nums.len()];
        for kind in kinds {
            let one = Action::One(Op::new(stage, kind, mb));
            let pair = Action::Pair {
                f: Op::new(mb, Kind::F, stage),
                b: Op::new(stage, kind, peer),
            };
            for a in [one, pair] {
                let want = serde_json::to_string(&action_to_wire(&a)).expect("serializes");
                assert_eq!(text(&|out| push_action(out, &a)), want);
            }
        }
        for dir in [Dir::Fwd, Dir::Bwd] {
            let steps = [
                Step::Compute(Action::One(Op::new(stage, Kind::F, mb))),
                Step::Recv {
                    dir,
                    stage,
                    mb,
                    peer,
                },
                Step::Send {
                    dir,
                    stage,
                    mb,
                    peer,
                },
                Step::WaitSend {
                    dir,
                    stage,
                    mb,
                    peer,
                },
                Step::ReduceGrad { stage },
                Step::WaitReduceGrad { stage },
            ];
            for step in steps {
                let compute = mb as usize * 3;
                let want =
                    serde_json::to_string(&step_to_wire(&step, compute)).expect("serializes");
                assert_eq!(text(&|out| push_step(out, &step, compute)), want);
            }
        }
    }
    let times: Vec<Interval> = [0.0, 1.0, 0.1, 1.0 / 3.0, 2000.0, 1e16, 1.5e-7, 123_456.789]
        .windows(2)
        .map(|w| Interval {
            start: w[0],
            end: w[1],
        })
        .collect();
    for n in 0..=times.len() {
        let pairs: Vec<[f64; 2]> = times[..n].iter().map(|t| [t.start, t.end]).collect();
        let want = serde_json::to_string(&pairs).expect("serializes");
        let mut out = Vec::new();
        let mut c = Chunks::new(&mut out);
        push_intervals(&mut c, &times[..n]).expect("writes");
        c.finish().expect("writes");
        assert_eq!(String::from_utf8(out).expect("UTF-8"), want);
    }
}

#[test]
fn a_negative_makespan_is_said_to_be_negative() {
    let p = plan(ONE_F_ONE_B, 1);
    let valid = pipeweave_check::validate(p).expect("valid");
    let timeline = back_to_back(&valid);
    let text = write_json(&valid, Some(&timeline)).expect("writes");
    let negative = text.replacen("\"makespan\": 7.0", "\"makespan\": -1", 1);
    assert_ne!(negative, text);
    assert_eq!(
        read_messages(&negative),
        [
            "the timeline's makespan -1 is negative; it is the time from the start of the step to its end, 0 or more"
        ]
    );
}

/// One unit per action, back to back on each rank (a timeline that fits, without the simulator).
fn back_to_back(plan: &Plan) -> Timing {
    let intervals: Vec<Vec<Interval>> = plan
        .programs()
        .iter()
        .map(|p| {
            (0..p.len())
                .map(|i| Interval {
                    start: i as f64,
                    end: i as f64 + 1.0,
                })
                .collect()
        })
        .collect();
    Timing {
        intervals,
        makespan: 7.0,
    }
}

/// A JSON plan of `n` one-stage pipelines of a micro-batch each on one rank, whose program runs
/// nothing (the audit's 10 MB file of 200,000 pipelines).
fn pipelines_running_nothing(n: u32) -> String {
    let pipelines: Vec<String> = (0..n)
        .map(|j| format!("{{\"placement\":[0],\"microbatches\":[{j}]}}"))
        .collect();
    let stages: Vec<String> = (0..n).map(|j| j.to_string()).collect();
    format!(
        "{{\"format\":\"pipeweave-plan\",\"version\":1,\"ranks\":1,\"stages_per_pipeline\":1,\
         \"pipelines\":[{}],\"parts\":[{{\"part\":0,\"stages\":[{}],\"ranks\":[{}]}}],\
         \"programs\":[{{\"rank\":0,\"actions\":[],\"steps\":[]}}]}}",
        pipelines.join(","),
        stages.join(","),
        vec!["0"; n as usize].join(",")
    )
}

/// The reader lowers the plan to check its steps: with a table per stage and micro-batch id, 200,000
/// pipelines asked for 40 GB and aborted ("memory allocation of 40000000000 bytes failed"), and
/// 100,000 did under a 4 GB limit. The lowering's table follows the actions now, and is asked for
/// fallibly.
#[test]
fn many_pipelines_are_read_at_the_cost_of_their_actions() {
    let text = pipelines_running_nothing(100_000);
    let read = read_json(&text, FileId(0)).expect("reads");
    assert_eq!(read.plan.model_copies(), 100_000);
    let problems = pipeweave_check::problems(&read.plan);
    assert_eq!(problems.len(), 1001, "a thousand missing ops and a count");
    assert!(
        problems[1000]
            .to_string()
            .starts_with("the whole plan: 199000 more operations never run"),
        "{}",
        problems[1000]
    );
}
