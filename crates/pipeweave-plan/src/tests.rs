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

/// Every rank's lowered program in PyTorch's cell form, one line a rank.
fn programs_text(lowered: &LoweredPlan) -> Vec<String> {
    lowered
        .programs()
        .map(|r| r.map(|s| s.to_string()).collect::<Vec<_>>().join(","))
        .collect()
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
    assert_eq!(plan.receiving_stage(Dir::Fwd, 4), Some(5));
    assert_eq!(plan.receiving_stage(Dir::Bwd, 4), None);
    assert_eq!(plan.sending_stage(Dir::Fwd, 4), None);
    assert_eq!(plan.sending_stage(Dir::Bwd, 6), Some(7));
    assert_eq!(plan.mb_pipeline(3), Some(1));
    assert_eq!(plan.stages_on_rank(0), vec![0, 7]);
    assert_eq!(plan.model_copies(), 2);
}

#[test]
fn lowering_places_comms_and_reductions() {
    let plan = two_rank_1f1b();
    let lowered = lower(&plan);
    let text = programs_text(&lowered);
    assert_eq!(
        text,
        [
            "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0WAIT_SEND_F0,0RECV_B1,0B1,0WAIT_SEND_F1,0REDUCE_GRAD,0WAIT_REDUCE_GRAD",
            "1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD,1WAIT_REDUCE_GRAD,1WAIT_SEND_B0,1WAIT_SEND_B1",
        ]
    );
    let computes: Vec<usize> = (lowered.program(1).enumerate())
        .filter(|(_, s)| matches!(s, Step::Compute(_)))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(computes, vec![1, 3, 5, 6]);
}

#[test]
fn forward_only_keeps_the_forwards_in_order() {
    use Kind::*;
    let plan = Plan::single(
        2,
        vec![0, 1],
        2,
        vec![
            vec![
                op(0, F, 0),
                op(0, F, 1),
                op(0, I, 0),
                op(0, W, 0),
                op(0, B, 1),
            ],
            vec![
                op(1, F, 0),
                Action::Pair {
                    f: Op::new(1, F, 1),
                    b: Op::new(1, B, 0),
                },
                op(1, B, 1),
            ],
        ],
    )
    .expect("valid structure");
    assert!(!plan.is_forward_only());
    let eval = plan.forward_only();
    assert!(eval.is_forward_only());
    assert_eq!(eval.pipelines(), plan.pipelines());
    assert_eq!(eval.program(0), [op(0, F, 0), op(0, F, 1)]);
    assert_eq!(eval.program(1), [op(1, F, 0), op(1, F, 1)]);
    // Forwards send their outputs; nothing is received back and no gradient is reduced.
    assert_eq!(
        programs_text(&lower(&eval)),
        [
            "0F0,0SEND_F0,0F1,0SEND_F1,0WAIT_SEND_F0,0WAIT_SEND_F1",
            "1RECV_F0,1F0,1RECV_F1,1F1",
        ]
    );
}

#[test]
fn sends_and_reductions_come_with_their_actions() {
    let plan = two_rank_1f1b();
    let lowered = lower(&plan);
    let sends: Vec<(u32, usize, Dir, u32, u32, u32)> = lowered
        .sends()
        .map(|s| (s.rank, s.action, s.dir, s.stage, s.to_stage, s.peer))
        .collect();
    assert_eq!(
        sends,
        [
            (0, 0, Dir::Fwd, 0, 1, 1),
            (0, 1, Dir::Fwd, 0, 1, 1),
            (1, 1, Dir::Bwd, 1, 0, 0),
            (1, 3, Dir::Bwd, 1, 0, 0),
        ]
    );
    let reductions: Vec<Reduction> = lowered.reductions().collect();
    assert_eq!(
        reductions,
        [
            Reduction {
                rank: 0,
                action: 3,
                stage: 0
            },
            Reduction {
                rank: 1,
                action: 3,
                stage: 1
            },
        ]
    );
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
    let text: Vec<String> = lowered.program(0).map(|s| s.to_string()).collect();
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

#[test]
fn invalid_plans_still_lower() {
    use Kind::*;
    // Rank 0 repeats a forward (two sends, one wait) and names a micro-batch the plan does not
    // have (no communication); the programs come out exact, without gaps.
    let plan = Plan::single(
        2,
        vec![0, 1],
        1,
        vec![
            vec![op(0, F, 0), op(0, F, 0), op(0, B, 0), op(0, F, 7)],
            vec![op(1, F, 0), op(1, B, 0)],
        ],
    )
    .expect("valid structure");
    let lowered = lower(&plan);
    let text = programs_text(&lowered);
    assert_eq!(
        text,
        [
            "0F0,0SEND_F0,0F0,0SEND_F0,0RECV_B0,0B0,0WAIT_SEND_F0,0REDUCE_GRAD,0WAIT_REDUCE_GRAD,0F7",
            "1RECV_F0,1F0,1RECV_F0,1B0,1SEND_B0,1REDUCE_GRAD,1WAIT_REDUCE_GRAD,1WAIT_SEND_B0",
        ]
    );
    assert_eq!(lowered.num_steps(), 18);
    assert_eq!(lowered.program(1).len(), 8);
    assert_eq!(
        lowered.program(1).next_back(),
        Some(Step::WaitSend {
            dir: Dir::Bwd,
            stage: 1,
            mb: 0,
            peer: 0
        })
    );
}

#[test]
fn work_on_a_rank_that_does_not_host_its_stage_sends_nothing() {
    use Kind::*;
    // Stage 0 lives on rank 1 and stage 1 on rank 0; rank 1 also runs stage 1's backward (the
    // minimal case proptest found: its send would have named rank 0 as the receiver's peer).
    let plan = Plan::single(
        2,
        vec![1, 0],
        1,
        vec![
            vec![],
            vec![Action::Pair {
                f: Op::new(1, B, 0),
                b: Op::new(0, F, 0),
            }],
        ],
    )
    .expect("valid structure");
    let lowered = lower(&plan);
    let text = programs_text(&lowered);
    assert_eq!(
        text,
        [
            "1RECV_F0",
            "(1B0;0F0)OVERLAP_F_B,0SEND_F0,1REDUCE_GRAD,1WAIT_REDUCE_GRAD,0WAIT_SEND_F0",
        ]
    );
}

mod any_plan {
    //! Lowering works on any plan, valid or not: it never panics, keeps every compute action in
    //! order, pairs every receive with a send and every wait with an earlier send of its own rank,
    //! and posts the receives of every pair of ranks in the order of the sends (what launchers that
    //! match messages in posting order, PyTorch's untagged channel among them, need).
    use super::*;
    use proptest::prelude::*;

    pub(super) fn check(plan: &Plan) -> Result<(), TestCaseError> {
        let lowered = lower(plan);
        let mut sends = std::collections::BTreeMap::new();
        let mut recvs = std::collections::BTreeMap::new();
        // Per (sender, receiver): the messages in the order the sender posts them, and in the
        // order the receiver posts its receives.
        let mut sent_in_order = std::collections::BTreeMap::<_, Vec<_>>::new();
        let mut received_in_order = std::collections::BTreeMap::<_, Vec<_>>::new();
        let mut total = 0;
        // Each send with the last action before it, each reduction likewise, walked step by step.
        let (mut walked, mut reduced) = (Vec::new(), Vec::new());
        for r in 0..plan.ranks() {
            let steps: Vec<Step> = lowered.program(r).collect();
            prop_assert_eq!(steps.len(), lowered.program(r).len());
            total += steps.len();
            let computes: Vec<Action> = steps
                .iter()
                .filter_map(|s| match s {
                    Step::Compute(a) => Some(*a),
                    _ => None,
                })
                .collect();
            prop_assert_eq!(&computes[..], plan.program(r));
            let mut posted = Vec::new();
            let mut last_action = None;
            for s in &steps {
                match *s {
                    Step::Compute(_) => last_action = Some(last_action.map_or(0, |i| i + 1)),
                    Step::Send {
                        dir,
                        stage,
                        mb,
                        peer,
                    } => {
                        posted.push((dir, stage, mb, peer));
                        *sends.entry((r, peer, dir, stage, mb)).or_insert(0) += 1;
                        sent_in_order
                            .entry((r, peer))
                            .or_default()
                            .push((dir, Some(stage), mb));
                        let to_stage = plan.receiving_stage(dir, stage);
                        prop_assert!(to_stage.is_some(), "rank {r}: {s} has no receiver");
                        walked.push(Sent {
                            rank: r,
                            action: last_action.unwrap_or(usize::MAX),
                            dir,
                            stage,
                            to_stage: to_stage.unwrap_or_default(),
                            mb,
                            peer,
                        });
                    }
                    Step::ReduceGrad { stage } => reduced.push(Reduction {
                        rank: r,
                        action: last_action.unwrap_or(usize::MAX),
                        stage,
                    }),
                    Step::WaitSend {
                        dir,
                        stage,
                        mb,
                        peer,
                    } => {
                        let i = posted.iter().position(|&p| p == (dir, stage, mb, peer));
                        prop_assert!(i.is_some(), "rank {r}: {s} before its send");
                        posted.remove(i.unwrap_or_default());
                    }
                    Step::Recv {
                        dir,
                        stage,
                        mb,
                        peer,
                    } => {
                        let sender = plan.sending_stage(dir, stage);
                        prop_assert!(sender.is_some(), "rank {r}: {s} has no sender");
                        *recvs
                            .entry((peer, r, dir, sender.unwrap_or_default(), mb))
                            .or_insert(0) += 1;
                        received_in_order
                            .entry((peer, r))
                            .or_default()
                            .push((dir, sender, mb));
                    }
                    _ => {}
                }
            }
        }
        prop_assert_eq!(total, lowered.num_steps());
        prop_assert_eq!(sends, recvs);
        prop_assert_eq!(sent_in_order, received_in_order);
        prop_assert_eq!(&lowered.sends().collect::<Vec<_>>(), &walked);
        prop_assert_eq!(&lowered.reductions().collect::<Vec<_>>(), &reduced);
        // The same, found from the plan without lowering it.
        prop_assert_eq!(crate::sends(plan).collect::<Vec<_>>(), walked);
        prop_assert_eq!(crate::reductions(plan), reduced);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn lowering_any_plan_keeps_its_invariants(plan in crate::testing::any_plan()) {
            check(&plan)?;
        }
    }
}

mod rounds {
    //! The event-driven rounds of the lowering give exactly the plain round-robin's programs, on
    //! any plan, valid or not.
    use super::*;
    use crate::lower::{lower_plainly, lower_sparsely};
    use crate::testing::{action, any_plan, edited_gpipe, one_f_one_b, pipelines};
    use proptest::collection::vec;
    use proptest::prelude::*;

    /// The event-driven rounds give the plain ones, and sparse slots the dense ones.
    fn same(plan: &Plan) -> Result<(), TestCaseError> {
        let (events, plain) = (lower(plan), lower_plainly(plan).expect("lowers"));
        prop_assert_eq!(&events.starts, &plain.starts);
        prop_assert_eq!(&events.codes, &plain.codes);
        let sparse = lower_sparsely(plan).expect("lowers");
        prop_assert_eq!(&events.starts, &sparse.starts);
        prop_assert_eq!(&events.codes, &sparse.codes);
        Ok(())
    }

    fn pair(f: (u32, Kind, u32), b: (u32, Kind, u32)) -> Action {
        Action::Pair {
            f: Op::new(f.0, f.1, f.2),
            b: Op::new(b.0, b.1, b.2),
        }
    }

    /// Plans of up to 9 ranks (so that ranks wake ranks before and after them), with up to two
    /// pipelines placed at random and programs of random actions, mostly on the plan's stages and
    /// micro-batches.
    fn wide_plan() -> impl Strategy<Value = Plan> {
        (1u32..10, 1usize..6, 1usize..3, 1u32..4).prop_flat_map(|(ranks, s, k, m)| {
            let stages = (s * k) as u32;
            let placement = vec(vec(0..ranks, s), k);
            let programs = vec(
                vec(action(stages + 1, k as u32 * m + 1), 0..16),
                ranks as usize,
            );
            (placement, programs).prop_map(move |(placement, programs)| {
                Plan::new(ranks, pipelines(placement, m), programs).expect("generated structure")
            })
        })
    }

    #[test]
    fn plans_proptest_once_found_hard() {
        use Kind::*;
        // Shrunk cases from a proptest run against an earlier version of the event-driven rounds:
        // work on ranks that do not host its stage, repeated work and pairs of any two ops.
        let plans = [
            Plan::single(
                2,
                vec![1, 0],
                1,
                vec![
                    vec![op(1, F, 0), op(1, B, 0)],
                    vec![op(0, B, 0), op(0, F, 0), op(0, B, 0)],
                ],
            ),
            Plan::single(
                2,
                vec![0, 1],
                2,
                vec![
                    vec![op(0, F, 0), op(1, B, 0), op(0, F, 0), op(0, F, 0)],
                    vec![op(0, B, 0), op(0, F, 0), op(0, F, 0)],
                ],
            ),
            Plan::new(
                2,
                pipelines(vec![vec![0, 0], vec![1, 0]], 1),
                vec![
                    vec![
                        op(0, F, 0),
                        op(1, F, 0),
                        op(1, B, 0),
                        op(0, B, 0),
                        op(3, F, 1),
                        op(3, B, 1),
                    ],
                    vec![pair((0, B, 0), (0, F, 0)), op(2, F, 1), op(2, B, 1)],
                ],
            ),
            Plan::single(
                2,
                vec![1, 0, 0],
                1,
                vec![
                    vec![op(1, F, 0), op(2, F, 0), op(2, B, 0), op(1, B, 0)],
                    vec![pair((0, F, 0), (1, B, 0)), op(0, F, 0), op(0, B, 0)],
                ],
            ),
        ];
        for plan in plans {
            let plan = plan.expect("valid structure");
            same(&plan).expect("the same programs");
            super::any_plan::check(&plan).expect("the lowering's invariants");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn event_driven_rounds_are_the_plain_ones(
            plan in prop_oneof![any_plan(), edited_gpipe(), wide_plan()]
        ) {
            same(&plan)?;
        }

        #[test]
        fn event_driven_rounds_are_the_plain_ones_on_1f1b(p in 1u32..40, m in 1u32..6) {
            same(&one_f_one_b(p, m))?;
        }
    }
}

#[test]
fn tables_by_piece_of_work_follow_the_work_not_the_shape() {
    use crate::WorkSlots;
    use crate::testing::one_stage_pipelines;
    // 100,000 one-stage pipelines of a micro-batch each: a slot per pipeline (a table by stage and
    // micro-batch id had 10^10, and the lowering asked for them before anything else).
    let n = 100_000;
    let plan = one_stage_pipelines(n);
    assert_eq!(plan.work_slots(), n as usize);
    let slots = WorkSlots::new(&plan).expect("small");
    assert!(slots.is_dense());
    assert_eq!(slots.len(), n as usize);
    assert_eq!(plan.work_slot(n - 1, n - 1), Some(n as usize - 1));
    assert_eq!(plan.work_slot(0, 1), None, "micro-batch 1 is pipeline 1's");
    // Each pipeline's stage reduces its gradients after its backward, waited for at the end.
    let lowered = try_lower(&plan).expect("lowers");
    assert_eq!(lowered.num_steps(), 4 * n as usize);

    // A pipeline listing a million micro-batches and running one: the table holds what the
    // actions name, not what the pipeline lists.
    let plan = Plan::single(
        1,
        vec![0],
        1_000_000,
        vec![vec![op(0, Kind::F, 0), op(0, Kind::B, 0)]],
    )
    .expect("valid structure");
    assert_eq!(plan.work_slots(), 1_000_000);
    let slots = WorkSlots::new(&plan).expect("small");
    assert!(!slots.is_dense());
    assert_eq!(slots.len(), 1);
    assert_eq!(slots.slot(&plan, 0, 0), Some(0));
    assert_eq!(slots.slot(&plan, 0, 7), None);
    assert_eq!(
        programs_text(&lower(&plan)),
        ["0F0,0B0,0REDUCE_GRAD,0WAIT_REDUCE_GRAD"]
    );
}

#[test]
fn micro_batches_are_indexed_in_ascending_order_whatever_their_ids() {
    // Scattered ids (sorted for their index) and dense ones (walked), in two pipelines.
    for ids in [vec![3u32, 1_000_000, 70], (0..20).collect()] {
        let (even, odd): (Vec<u32>, Vec<u32>) = ids.iter().partition(|&&m| m % 2 == 0);
        let plan = Plan::new(
            1,
            vec![
                Pipeline {
                    placement: vec![0],
                    microbatches: even.clone(),
                },
                Pipeline {
                    placement: vec![0],
                    microbatches: odd.clone(),
                },
            ],
            vec![vec![]],
        )
        .expect("valid structure");
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        for (i, &m) in sorted.iter().enumerate() {
            let j = u32::from(m % 2 == 1);
            assert_eq!(plan.mb_pipeline(m), Some(j));
            assert_eq!(plan.work_slot(j, m), Some(i), "micro-batch {m}");
            assert_eq!(plan.work_slot(1 - j, m), None);
        }
        assert_eq!(plan.mb_pipeline(5_000), None);
        assert_eq!(plan.work_slots(), ids.len());
    }
}
