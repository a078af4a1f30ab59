use crate::*;

fn op(stage: u32, kind: Kind, mb: u32) -> Action {
    Action::One(Op::new(stage, kind, mb))
}

fn two_rank_1f1b() -> Plan {
    use Kind::*;
    Plan::single(
        2,
        vec![0, 1],
        2,
        vec![
            vec![op(0, F, 0), op(0, F, 1), op(0, B, 0), op(0, B, 1)],
            vec![op(1, F, 0), op(1, B, 0), op(1, F, 1), op(1, B, 1)],
        ],
    )
    .expect("valid structure")
}

#[test]
fn structure_is_checked() {
    let err = Plan::single(2, vec![0, 2], 1, vec![vec![], vec![]]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "stage 1 of pipeline 0 is placed on rank 2, but the plan has only 2 ranks"
    );
    let err = Plan::new(
        1,
        vec![
            Pipeline {
                placement: vec![0],
                microbatches: vec![0, 1],
            },
            Pipeline {
                placement: vec![0],
                microbatches: vec![1],
            },
        ],
        vec![vec![]],
    )
    .unwrap_err();
    assert_eq!(
        err,
        PlanError::MicrobatchInTwoPipelines {
            mb: 1,
            first: 0,
            second: 1
        }
    );
}

#[test]
fn numbering_is_pipeline_major() {
    let plan = Plan::new(
        4,
        vec![
            Pipeline {
                placement: vec![0, 1, 2, 3],
                microbatches: vec![0, 1],
            },
            Pipeline {
                placement: vec![3, 2, 1, 0],
                microbatches: vec![2, 3],
            },
        ],
        vec![vec![]; 4],
    )
    .expect("valid structure");
    assert_eq!(plan.num_stages(), 8);
    assert_eq!(plan.stage_rank(5), Some(2));
    assert_eq!(plan.part(5), 1);
    assert_eq!(plan.next_stage(3), None);
    assert_eq!(plan.next_stage(4), Some(5));
    assert_eq!(plan.prev_stage(4), None);
    assert_eq!(plan.mb_pipeline(3), Some(1));
    assert_eq!(plan.stages_on_rank(0), vec![0, 7]);
    assert_eq!(plan.model_copies(), 2);
}

#[test]
fn lowering_places_comms_and_reductions() {
    let lowered = lower(&two_rank_1f1b());
    let text: Vec<String> = lowered
        .steps
        .iter()
        .map(|r| {
            r.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    assert_eq!(
        text,
        [
            "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0WAIT_SEND_F0,0RECV_B1,0B1,0WAIT_SEND_F1,0REDUCE_GRAD,0WAIT_REDUCE_GRAD",
            "1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD,1WAIT_REDUCE_GRAD,1WAIT_SEND_B0,1WAIT_SEND_B1",
        ]
    );
    assert_eq!(lowered.compute_index[1], vec![1, 3, 5, 6]);
}

#[test]
fn no_comms_at_the_turn_of_a_v() {
    use Kind::*;
    let plan = Plan::single(
        1,
        vec![0, 0],
        1,
        vec![vec![op(0, F, 0), op(1, F, 0), op(1, B, 0), op(0, B, 0)]],
    )
    .expect("valid structure");
    let lowered = lower(&plan);
    let text: Vec<String> = lowered.steps[0].iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "0F0",
            "1F0",
            "1B0",
            "1REDUCE_GRAD",
            "1WAIT_REDUCE_GRAD",
            "0B0",
            "0REDUCE_GRAD",
            "0WAIT_REDUCE_GRAD"
        ]
    );
}

#[test]
fn pair_display_is_pytorch_cell() {
    let a = Action::Pair {
        f: Op::new(0, Kind::F, 3),
        b: Op::new(7, Kind::B, 5),
    };
    assert_eq!(a.to_string(), "(0F3;7B5)OVERLAP_F_B");
}
