use super::*;

fn write_plan(plan: &Plan) -> String {
    ActionsText { plan }.to_text()
}
use pipeweave_plan::Kind::*;
use pipeweave_plan::Op;

fn read(source: &str, k: u32) -> Result<ActionsFile, Vec<Diagnostic>> {
    read_actions(source, FileId(0), Some(k))
}

fn messages(source: &str, k: u32) -> Vec<String> {
    match read(source, k) {
        Ok(_) => panic!("expected an error for {source:?}"),
        Err(d) => d.into_iter().map(|d| d.message).collect(),
    }
}

fn one(stage: u32, kind: Kind, mb: u32) -> Action {
    Action::One(Op::new(stage, kind, mb))
}

#[test]
fn reads_a_two_rank_plan_with_spans() {
    let src = "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n";
    let file = read(src, 1).expect("valid");
    assert_eq!(file.plan.ranks(), 2);
    assert_eq!(file.plan.pipelines()[0].placement, vec![0, 1]);
    assert_eq!(file.plan.pipelines()[0].microbatches, vec![0, 1]);
    assert_eq!(file.plan.program(1)[1], one(1, B, 0));
    assert_eq!(file.spans[1][1], 20..23);
    assert_eq!(&src[file.spans[1][1].clone()], "1B0");
}

#[test]
fn tolerates_crlf_blanks_and_empty_cells() {
    let a = read("0F0,,0B0\r\n\r\n1F0, 1B0 ,\r\n\r\n\r\n", 1).expect("valid");
    assert_eq!(
        a.plan.ranks(),
        3,
        "the blank line in the middle is an idle rank"
    );
    assert!(a.plan.program(1).is_empty());
    assert_eq!(a.plan.pipelines()[0].placement, vec![0, 2]);
    assert_eq!(a.plan.program(2), &[one(1, F, 0), one(1, B, 0)]);
    let b = read("0F0,,0B0\n\n1F0,1B0", 1).expect("valid without a final newline");
    assert_eq!(a.plan, b.plan);
}

#[test]
fn idle_last_rank_round_trips() {
    let plan = Plan::single(
        3,
        vec![0],
        1,
        vec![vec![one(0, F, 0), one(0, B, 0)], vec![], vec![]],
    )
    .expect("structure");
    let text = write_plan(&plan);
    assert_eq!(text, "0F0,0B0\n,\n,\n");
    assert_eq!(read(&text, 1).expect("valid").plan, plan);
    let middle = Plan::single(
        3,
        vec![0, 2],
        1,
        vec![vec![one(0, F, 0)], vec![], vec![one(1, F, 0)]],
    )
    .expect("structure");
    assert_eq!(write_plan(&middle), "0F0\n\n1F0\n");
}

#[test]
fn reads_pairs_and_two_pipelines() {
    let src = "0F0,(0F1;3B2)OVERLAP_F_B,0B0,0B1,3F2,3F3,3B3\n1F0,2F2,1B0,2B2,1F1,1B1,2F3,2B3\n";
    let file = read(src, 2).expect("valid");
    let plan = &file.plan;
    assert_eq!(plan.stages_per_pipeline(), 2);
    assert_eq!(plan.pipelines()[0].placement, vec![0, 1]);
    assert_eq!(plan.pipelines()[1].placement, vec![1, 0]);
    assert_eq!(plan.pipelines()[0].microbatches, vec![0, 1]);
    assert_eq!(plan.pipelines()[1].microbatches, vec![2, 3]);
    assert_eq!(
        plan.program(0)[1],
        Action::Pair {
            f: Op::new(0, F, 1),
            b: Op::new(3, B, 2)
        }
    );
    assert_eq!(write_plan(plan), src);
}

#[test]
fn strict_about_trailing_garbage() {
    assert_eq!(messages("0F1xyz", 1), ["unexpected `xyz` after `0F1`"]);
    assert_eq!(messages("0F1 2", 1), ["unexpected ` 2` after `0F1`"]);
}

#[test]
fn every_bad_cell_is_reported() {
    assert_eq!(
        messages(
            "x,0Q1,0F,3,0F1\n0SEND_F1,(0B1;1F0)OVERLAP_F_B,(0F1;1W0)OVERLAP_F_B",
            1
        ),
        [
            "expected a stage number, found `x`",
            "unknown action kind `Q`: expected F, B, I or W",
            "expected a micro-batch number after `0F`, found the end of the cell",
            "expected an action kind (F, B, I or W) after `3`, found the end of the cell",
            "`SEND_F` is not a compute action",
            "an overlapped pair needs a forward first",
            "the second action of an overlapped pair must be a B or an I",
            "the second action of an overlapped pair must be a B or an I",
        ]
    );
}

#[test]
fn pair_shape_errors() {
    assert_eq!(
        messages("(0F1;3B0)", 1),
        ["an overlapped pair must end with `)OVERLAP_F_B`, found `)`"]
    );
    assert_eq!(
        messages("(0F1)OVERLAP_F_B", 1),
        ["an overlapped pair needs two actions separated by `;`"]
    );
    assert_eq!(
        messages("(0F1;3B0", 1),
        ["an overlapped pair must end with `)OVERLAP_F_B`"]
    );
}

#[test]
fn numbers_out_of_range() {
    assert_eq!(
        messages("99999999999F0", 1),
        ["stage number `99999999999` is too large"]
    );
    assert_eq!(
        messages("0F16777216", 1),
        ["micro-batch number `16777216` is too large (at most 16777215)"]
    );
}

#[test]
fn the_largest_stage_id_is_a_gap_not_an_overflow() {
    // Found by the `actions` fuzz target: the next stage after u32::MAX overflowed.
    assert_eq!(
        messages("0F0\n4294967295F0\n", 1),
        ["stages 1 to 4294967294 appear on no rank"]
    );
    assert_eq!(
        messages("4294967295F0", 1),
        ["stages 0 to 4294967294 appear on no rank"]
    );
}

#[test]
fn structural_errors() {
    let d = read("0F0,1F0\n1B0", 1).expect_err("stage on two ranks");
    assert_eq!(d.len(), 1);
    assert_eq!(
        d[0].message,
        "stage 1 appears on rank 0 (line 1) and rank 1 (line 2)"
    );
    assert_eq!(d[0].span.as_ref().map(|s| s.range.clone()), Some(8..11));
    assert_eq!(d[0].labels[0].span.range, 4..7);

    assert_eq!(
        messages("0F0\n3F0\n", 1),
        ["stages 1 to 2 appear on no rank"]
    );
    assert_eq!(messages("0F0\n2F0\n", 1), ["stage 1 appears on no rank"]);
    assert_eq!(
        messages("0F0\n1F0\n2F0\n", 2),
        ["3 stages cannot be split into 2 pipelines of equal length"]
    );
    assert_eq!(
        messages("0F0,1F0\n", 2),
        ["micro-batch 0 appears in pipeline 0 and pipeline 1"]
    );
    assert_eq!(messages("", 1), ["the file holds no ranks"]);
    assert_eq!(messages("\n\r\n  \n", 1), ["the file holds no ranks"]);
    assert_eq!(messages(",,\n,", 1), ["the file holds no actions"]);
    assert_eq!(
        messages("0F0", 0),
        ["the number of pipelines must be at least 1"]
    );
}

#[test]
fn spans_point_at_the_offending_part() {
    let d = read("0F0, 0Q1", 1).expect_err("bad kind");
    assert_eq!(d[0].span.as_ref().map(|s| s.range.clone()), Some(6..7));
    let d = read("0F0,(0F1;1W0)OVERLAP_F_B", 1).expect_err("bad pair");
    assert_eq!(d[0].span.as_ref().map(|s| s.range.clone()), Some(9..12));
    let d = read("é", 1).expect_err("not a cell");
    assert_eq!(d[0].span.as_ref().map(|s| s.range.clone()), Some(0..2));
}

/// One rank limit for every reader: a million blank lines before one cell were a million ranks.
#[test]
fn more_lines_than_a_plan_may_have_ranks() {
    let max = pipeweave_plan::MAX_RANKS as usize;
    let at_limit = "\n".repeat(max - 1) + "0F0,0B0\n";
    assert_eq!(
        read(&at_limit, 1).expect("reads").plan.ranks() as usize,
        max
    );
    let past = "\n".repeat(max) + "0F0,0B0\n";
    let d = read(&past, 1).expect_err("one rank too many");
    assert_eq!(
        d[0].message,
        "the file has more than 65536 ranks (lines); a plan has at most 65536 ranks"
    );
    assert_eq!(d[0].span.as_ref().map(|s| s.range.start), Some(max));
}

#[test]
fn pipelines_not_given_are_as_many_as_the_micro_batches_show() {
    let pipelines = |src: &str| {
        let plan = read_actions(src, FileId(0), None).expect("reads").plan;
        (plan.model_copies(), plan.stages_per_pipeline())
    };
    // Every micro-batch runs through every stage: one pipeline, PyTorch's CSV.
    assert_eq!(pipelines("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n"), (1, 2));
    // Chimera's two pipelines: micro-batches 0 and 1 on stages 0 to 3, 2 and 3 on 4 to 7.
    let chimera = "0F0,0F1,7F2,7B2,7F3,7B3,0B0,0B1\n\
                   1F0,6F2,1F1,6F3,6B2,1B0,6B3,1B1\n\
                   5F2,2F0,5F3,2F1,2B0,5B2,2B1,5B3\n\
                   4F2,4F3,3F0,3B0,3F1,3B1,4B2,4B3\n";
    assert_eq!(pipelines(chimera), (2, 4));
    let one = read_actions(chimera, FileId(0), Some(1))
        .expect("reads")
        .plan;
    assert_eq!(one.model_copies(), 1, "a number given is taken");
    // Micro-batches that each stay on one stage: pipelines of one stage.
    assert_eq!(pipelines("0F0,0B0\n1F1,1B1\n"), (2, 1));
    // One micro-batch crossing the middle keeps the file one pipeline.
    assert_eq!(pipelines("0F0,0B0,0F2,0B2\n1F0,1B0,1F1,1B1\n"), (1, 2));
    // Three pipelines of two stages, not six of one: micro-batch 4 crosses between 4 and 5.
    let three = "0F0,1F0,1B0,0B0\n2F2,3F2,3B2,2B2\n4F4,5F4,5B4,4B4\n";
    assert_eq!(pipelines(three), (3, 2));
}
