use crate::*;
use pipeweave_plan::{Action, Kind, Op, Pipeline, Plan};

fn parse_line(line: &str) -> Vec<Action> {
    line.split(',')
        .filter(|c| !c.is_empty())
        .map(|c| pipeweave_plan::cell::parse_action(c, u32::MAX).expect("a cell"))
        .collect()
}

fn plan(placement: Vec<u32>, m: u32, lines: &[&str]) -> Plan {
    let ranks = lines.len() as u32;
    Plan::single(
        ranks,
        placement,
        m,
        lines.iter().map(|l| parse_line(l)).collect(),
    )
    .expect("structure")
}

fn messages(plan: &Plan) -> Vec<String> {
    problems(plan).iter().map(ToString::to_string).collect()
}

#[test]
fn a_valid_1f1b_has_no_problems() {
    let p = plan(vec![0, 1], 2, &["0F0,0F1,0B0,0B1", "1F0,1B0,1F1,1B1"]);
    assert_eq!(messages(&p), Vec::<String>::new());
}

#[test]
fn the_tests_textbook_1f1b_is_valid_for_any_shape() {
    for (p, m) in [(1, 1), (2, 1), (3, 2), (4, 8), (8, 3)] {
        let plan = pipeweave_plan::testing::one_f_one_b(p, m);
        assert_eq!(problems(&plan), [], "P = {p}, M = {m}");
        assert_eq!(plan.num_ops(), 2 * (p * m) as usize);
    }
}

#[test]
fn zero_bubble_split_is_accepted() {
    let p = plan(
        vec![0, 1],
        2,
        &["0F0,0F1,0I0,0I1,0W0,0W1", "1F0,1I0,1F1,1W0,1I1,1W1"],
    );
    assert_eq!(messages(&p), Vec::<String>::new());
}

#[test]
fn an_evaluation_plan_runs_every_forward_once_and_nothing_else() {
    // Without saying so, a plan of forwards is a training step that misses its backwards.
    let p = plan(vec![0, 1], 1, &["0F0", "1F0"]);
    assert_eq!(
        messages(&p),
        [
            "rank 0, end of program: stage 0 never runs the backward of micro-batch 0 (0B0)",
            "rank 1, end of program: stage 1 never runs the backward of micro-batch 0 (1B0)",
        ]
    );
    assert_eq!(messages(&p.forward_only()), Vec::<String>::new());
    // Its forwards are still all required, once each.
    let p = plan(vec![0, 1], 2, &["0F0,0F1,0F1", "1F1"]).into_evaluation();
    assert_eq!(
        messages(&p),
        [
            "rank 0, action 3 (0F1): the forward of stage 0, micro-batch 1 runs twice (first at action 2)",
            "rank 1, end of program: stage 1 never runs the forward of micro-batch 0 (1F0)",
        ]
    );
    // A plan that says it is an evaluation step computes no gradient.
    let p = plan(vec![0, 1], 1, &["0F0,0B0", "1F0"]).into_evaluation();
    assert_eq!(
        messages(&p),
        [
            "rank 0, action 2 (0B0): 0B0 computes gradients, but this is an evaluation plan, which runs forwards only"
        ]
    );
}

#[test]
fn work_problems_name_rank_position_and_action() {
    let p = plan(
        vec![0, 1],
        2,
        &["0F0,0F1,0B0,0F1,1F0,0W0,0I1", "1B0,1F0,5F0,1F1,1B1,1F7"],
    );
    assert_eq!(
        messages(&p),
        [
            "rank 0, action 4 (0F1): the forward of stage 0, micro-batch 1 runs twice (first at action 2)",
            "rank 0, action 5 (1F0): 1F0 runs stage 1 on rank 0, but stage 1 lives on rank 1",
            "rank 0, action 6 (0W0): 0W0 computes weight gradients that the full backward 0B0 already computed",
            "rank 0, end of program: stage 0 never runs the weight-gradient backward of micro-batch 1 (0W1)",
            "rank 1, action 1 (1B0): 1B0 runs before the forward of stage 1, micro-batch 0",
            "rank 1, action 3 (5F0): 5F0 names stage 5, but the plan has only 2 stages (0 to 1)",
            "rank 1, action 6 (1F7): 1F7 names micro-batch 7, which pipeline 0 (stage 1) does not carry",
        ]
    );
}

#[test]
fn malformed_pair() {
    let p = Plan::single(
        1,
        vec![0],
        2,
        vec![vec![
            Action::One(Op::new(0, Kind::F, 0)),
            Action::Pair {
                f: Op::new(0, Kind::B, 0),
                b: Op::new(0, Kind::F, 1),
            },
            Action::One(Op::new(0, Kind::B, 1)),
        ]],
    )
    .expect("structure");
    assert_eq!(
        messages(&p),
        [
            "rank 0, action 2 ((0B0;0F1)OVERLAP_F_B): an overlapped pair must be a forward followed by a B or I, found 0B0 with 0F1"
        ]
    );
}

#[test]
fn pair_with_its_own_forward_is_backward_before_forward() {
    let p = Plan::single(
        1,
        vec![0],
        1,
        vec![vec![Action::Pair {
            f: Op::new(0, Kind::F, 0),
            b: Op::new(0, Kind::B, 0),
        }]],
    )
    .expect("structure");
    assert_eq!(
        messages(&p),
        [
            "rank 0, action 1 ((0F0;0B0)OVERLAP_F_B): 0B0 runs before the forward of stage 0, micro-batch 0"
        ]
    );
}

#[test]
fn crossed_order_deadlocks_with_a_cycle() {
    // Rank 1 wants micro-batch 1 first, which rank 0 only computes after the backward of 0.
    let p = plan(vec![0, 1], 2, &["0F0,0B0,0F1,0B1", "1F1,1B1,1F0,1B0"]);
    assert_eq!(
        messages(&p),
        [
            "rank 0, action 2 (0B0): the plan deadlocks: ranks 0 → 1 → 0 wait for each other in a cycle\n  \
          rank 0, action 2 (0B0) waits for the output of 1B0 on rank 1\n  \
          rank 1, action 1 (1F1) waits for the output of 0F1 on rank 0"
        ]
    );
}

#[test]
fn backward_waits_in_a_cycle() {
    let p = plan(vec![0, 1], 1, &["0B0,0F0", "1F0,1B0"]);
    // The order error is reported; deadlock analysis only runs on complete, ordered work.
    assert_eq!(
        messages(&p),
        ["rank 0, action 1 (0B0): 0B0 runs before the forward of stage 0, micro-batch 0"]
    );
    let p = plan(vec![0, 1], 2, &["0F0,0B0,0F1,0B1", "1F1,1B1,1F0,1B0"]);
    let problems = problems(&p);
    assert_eq!(problems.len(), 1);
    assert!(matches!(problems[0].kind, ProblemKind::Deadlock { .. }));
}

#[test]
fn v_turn_out_of_order_waits_for_itself() {
    let p = Plan::single(1, vec![0, 0], 1, vec![parse_line("1F0,0F0,1B0,0B0")]).expect("structure");
    assert_eq!(
        messages(&p),
        [
            "rank 0, action 1 (1F0): the plan deadlocks: rank 0 waits for work that comes later in its own program\n  \
          rank 0, action 1 (1F0) waits for 0F0, which comes later on the same rank"
        ]
    );
}

#[test]
fn two_pipelines_check_micro_batch_ownership() {
    let p = Plan::new(
        2,
        vec![
            Pipeline {
                placement: vec![0, 1],
                microbatches: vec![0],
            },
            Pipeline {
                placement: vec![1, 0],
                microbatches: vec![1],
            },
        ],
        vec![
            parse_line("0F0,3F1,3B1,0B0,0F1"),
            parse_line("2F1,1F0,1B0,2B1"),
        ],
    )
    .expect("structure");
    assert_eq!(
        messages(&p),
        [
            "rank 0, action 5 (0F1): 0F1 names micro-batch 1, which pipeline 0 (stage 0) does not carry"
        ]
    );
}

mod random_plans {
    //! Laws on random plans: the validator copes with any plan, and accepts exactly the plans it
    //! finds no problem with (that an accepted plan simulates to the end is a law of the
    //! simulator's tests).
    use super::*;
    use pipeweave_plan::testing::{any_plan, edited_gpipe};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn any_plan_is_judged_with_problems_in_program_order(plan in any_plan()) {
            let problems = problems(&plan);
            let order: Vec<_> = problems
                .iter()
                .map(|p| (p.rank, p.position.unwrap_or(usize::MAX)))
                .collect();
            prop_assert!(order.is_sorted(), "{order:?}");
        }

        #[test]
        fn sparse_slots_find_what_dense_ones_do(plan in prop_oneof![any_plan(), edited_gpipe()]) {
            let dense = crate::work::check_work(&plan);
            let sparse = crate::work::check_work_sparsely(&plan);
            prop_assert_eq!(dense, sparse);
        }

        #[test]
        fn validate_accepts_exactly_the_plans_without_problems(plan in edited_gpipe()) {
            let found = problems(&plan);
            match validate(plan.clone()) {
                Ok(valid) => {
                    prop_assert!(found.is_empty(), "{found:?}");
                    prop_assert_eq!(valid.plan(), &plan);
                    prop_assert_eq!(valid.into_plan(), plan);
                }
                Err(given) => {
                    prop_assert!(!given.is_empty());
                    prop_assert_eq!(given, found);
                }
            }
        }
    }
}

#[test]
fn many_pipelines_of_one_micro_batch_validate() {
    // 100,000 one-stage pipelines: the validator's table was one slot per stage and micro-batch
    // id (10^10, "149 GiB for the validator's table"), now one per piece of work.
    let plan = pipeweave_plan::testing::one_stage_pipelines(100_000);
    assert_eq!(problems(&plan), []);
    // Crossed: every pipeline's backward before its forward, on one rank.
    let crossed = pipeweave_plan::testing::one_stage_pipelines(3);
    let programs = vec![parse_line("0B0,0F0,1F1,1B1,2F2,2B2")];
    let crossed = Plan::new(1, crossed.pipelines().to_vec(), programs).expect("structure");
    assert_eq!(
        messages(&crossed),
        ["rank 0, action 1 (0B0): 0B0 runs before the forward of stage 0, micro-batch 0"]
    );
}

#[test]
fn missing_work_is_listed_up_to_a_bound_and_counted_beyond() {
    use crate::work::MAX_MISSING_LISTED;
    // A pipeline that lists a million micro-batches and runs one: a thousand problems and a count,
    // not two million problems (most of a gigabyte of messages).
    let p = plan(vec![0], 1_000_000, &["0F0,0B0"]);
    let found = messages(&p);
    assert_eq!(found.len(), MAX_MISSING_LISTED + 1);
    assert_eq!(
        found[0],
        "rank 0, end of program: stage 0 never runs the forward of micro-batch 1 (0F1)"
    );
    assert_eq!(
        found[MAX_MISSING_LISTED],
        "the whole plan: 1998998 more operations never run besides the 1000 reported one by one; \
         every stage runs a forward and a backward of each micro-batch its pipeline lists, so list \
         only the micro-batches the programs run"
    );
    // An evaluation plan misses only forwards; split backwards their Ws.
    let p = plan(vec![0], 5000, &["0F0"]).into_evaluation();
    let found = messages(&p);
    assert!(found[MAX_MISSING_LISTED].starts_with("the whole plan: 3999 more operations"));
    let lines = ["0F0,0F1,0I0,0I1".to_string()
        + &(2..3000)
            .map(|m| format!(",0F{m},0B{m}"))
            .collect::<String>()];
    let p = plan(vec![0], 4000, &[lines[0].as_str()]);
    let found = messages(&p);
    assert_eq!(
        found[..2],
        [
            "rank 0, end of program: stage 0 never runs the weight-gradient backward of micro-batch 0 (0W0)",
            "rank 0, end of program: stage 0 never runs the weight-gradient backward of micro-batch 1 (0W1)",
        ]
    );
    // 2 Ws and 1,000 forwards and backwards each, 998 reported after the Ws.
    assert!(
        found[MAX_MISSING_LISTED].starts_with("the whole plan: 1002 more operations"),
        "{}",
        found[MAX_MISSING_LISTED]
    );
    // Exactly the bound: nothing to count.
    let p = plan(vec![0], 501, &["0F0,0B0"]);
    assert_eq!(messages(&p).len(), MAX_MISSING_LISTED);
}

/// A loop placement whose every rank starts with its second stage's forward: a cycle through all
/// ranks, whose message lists the first and last few ranks and counts the rest (it listed every
/// rank, and a line per rank).
#[test]
fn a_cycle_through_every_rank_is_told_in_bounded_words() {
    let ranks = 1_000u32;
    let program = |r: u32| {
        let (first, second) = if r == 0 { (ranks, 0) } else { (r, ranks + r) };
        let op = |stage, kind| Action::One(Op::new(stage, kind, 0));
        vec![
            op(first, Kind::F),
            op(second, Kind::F),
            op(ranks + r, Kind::B),
            op(r, Kind::B),
        ]
    };
    let placement = (0..2 * ranks).map(|s| s % ranks).collect();
    let p =
        Plan::single(ranks, placement, 1, (0..ranks).map(program).collect()).expect("structure");
    let messages = messages(&p);
    assert_eq!(messages.len(), 1);
    let text = &messages[0];
    assert!(
        text.starts_with(
            "rank 0, action 1 (1000F0): the plan deadlocks: ranks 0 → 999 → 998 → 997 → 996 → 995 \
             → 994 → 993 → … (990 more) → 2 → 1 → 0 wait for each other in a cycle of 1,000 ranks\n  \
             rank 0, action 1 (1000F0) waits for the output of 999F0 on rank 999\n"
        ),
        "{text}"
    );
    assert_eq!(text.lines().count(), 12, "{text}");
    assert!(text.contains("\n  … 990 more ranks wait in the cycle\n  rank 2, action 1 (2F0)"));
    assert!(text.ends_with("rank 1, action 1 (1F0) waits for the output of 0F0 on rank 0"));
    assert!(
        matches!(&problems(&p)[0].kind, ProblemKind::Deadlock { cycle } if cycle.len() == 1_000),
        "the cycle itself is whole"
    );
}

/// The words of a cycle, which the compute_comms check of `pipeweave-export` shares.
#[test]
fn cycle_words_list_at_most_ten_ranks() {
    assert_eq!(
        cycle_words(&[0, 1]),
        "ranks 0 → 1 → 0 wait for each other in a cycle"
    );
    let ten: Vec<u32> = (0..10).collect();
    assert_eq!(
        cycle_words(&ten),
        "ranks 0 → 1 → 2 → 3 → 4 → 5 → 6 → 7 → 8 → 9 → 0 wait for each other in a cycle"
    );
    let all: Vec<u32> = (0..65_536).collect();
    assert_eq!(
        cycle_words(&all),
        "ranks 0 → 1 → 2 → 3 → 4 → 5 → 6 → 7 → … (65,526 more) → 65534 → 65535 → 0 wait for each \
         other in a cycle of 65,536 ranks"
    );
}
