use super::*;
use crate::actions::read_actions;
use pipeweave_diagnostics::FileId;

fn plan(src: &str, k: u32) -> ValidPlan {
    let read = read_actions(src, FileId(0), Some(k)).expect("valid actions");
    pipeweave_check::validate(read.plan).expect("a valid plan")
}

#[test]
fn compute_only_is_the_actions_text() {
    let p = plan("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n", 1);
    assert_eq!(
        write_pytorch(&p).expect("writes"),
        "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n"
    );
}

#[test]
fn compute_comms_has_waits_and_reduction_pairs() {
    let p = plan("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n", 1);
    assert_eq!(
        write_pytorch_comms(&p).expect("writes"),
        "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0WAIT_SEND_F0,0RECV_B1,0B1,0WAIT_SEND_F1,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n\
         1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD,1WAIT_REDUCE_GRAD,1WAIT_SEND_B0,1WAIT_SEND_B1\n"
    );
}

#[test]
fn refuses_several_pipelines_with_the_alternative() {
    let p = plan("0F0,0B0,3F1,3B1\n1F0,1B0,2F1,2B1\n", 2);
    let d = write_pytorch(&p).expect_err("refused");
    assert_eq!(
        d.message,
        "PyTorch's pipeline runtime cannot run a plan of 2 pipelines"
    );
    assert_eq!(
        d.notes[1],
        "this plan computes model parts on several ranks: part 0 on ranks 0 and 1, part 1 on ranks 0 and 1"
    );
    assert!(d.help.as_deref().is_some_and(|h| h.contains("`json`")));
    assert_eq!(write_pytorch_comms(&p).expect_err("refused"), d);
}

#[test]
fn refuses_micro_batches_not_from_zero() {
    let p = plan("0F1,0B1,0F3,0B3\n", 1);
    let d = write_pytorch(&p).expect_err("refused");
    assert_eq!(
        d.message,
        "PyTorch numbers micro-batches from 0 to M−1, but this plan carries micro-batches 1, 3"
    );
}

#[test]
fn messages_between_two_ranks_pair_up_in_order() {
    // ZB-V on 2 ranks: rank 0 sends stage 0's activations and stage 3's gradients to rank 1 on
    // the one channel PyTorch's runtime has per pair of ranks. The lowering posts rank 1's
    // receives in the order rank 0 sends, exactly as PyTorch 2.15's own lowering does (that it
    // always does is a law of the lowering, checked on any plan in `pipeweave-plan`).
    let src = "0F0,0F1,0F2,3F0,3I0,3W0,3F1,3I1,3W1,0F3,0I0,0W0,3F2,3I2,3W2,0I1,0W1,3F3,3I3,3W3,0I2,0W2,0I3,0W3\n\
               1F0,2F0,1F1,2F1,2I0,2W0,1F2,1I0,1W0,2F2,2I1,2W1,1F3,1I1,1W1,2F3,2I2,2W2,1I2,2I3,1I3,1W2,2W3,1W3\n";
    let p = plan(src, 1);
    let recorded =
        include_str!("../../../../tests/data/torch-lowered/ZBVZeroBubble_v2_p2_m4.comms");
    assert_eq!(write_pytorch_comms(&p).expect("writes"), recorded);
}

#[test]
fn compute_comms_reads_back_as_its_plan() {
    let p = plan("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n", 1);
    let text = write_pytorch_comms(&p).expect("writes");
    let file = read_pytorch_comms(&text, FileId(0)).expect("reads");
    assert_eq!(file.plan, *p);
    assert_eq!(file.check(), vec![]);
    assert_eq!(file.notes(), vec![]);
    // As Python's csv module writes it: `\r\n` line ends.
    let crlf = text.replace('\n', "\r\n");
    let file = read_pytorch_comms(&crlf, FileId(0)).expect("reads");
    assert_eq!((&file.plan, file.check()), (p.plan(), vec![]));
    let cells: Vec<&str> = file.steps[1]
        .iter()
        .map(|s| &crlf[s.span.clone()])
        .collect();
    assert_eq!(cells[..3], ["1RECV_F0", "1RECV_F1", "1SEND_B0"]);
    assert_eq!((file.steps[1][1].cell, file.steps[1][1].after), (2, 1));
}

#[test]
fn every_line_of_compute_comms_is_a_rank() {
    // An idle last rank is an empty line, which the actions format would drop.
    let p = plan("0F0,0B0\n,\n", 1);
    assert_eq!(p.ranks(), 2);
    let text = write_pytorch_comms(&p).expect("writes");
    assert_eq!(text, "0F0,0B0,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n\n");
    let file = read_pytorch_comms(&text, FileId(0)).expect("reads");
    assert_eq!(file.plan, *p);
    assert_eq!(file.check(), vec![]);
}

#[test]
fn sharding_is_left_out_of_the_plan_with_a_note() {
    let text = "0UNSHARD,0F0,0B0,0REDUCE_GRAD,0WAIT_REDUCE_GRAD,0RESHARD\n";
    let file = read_pytorch_comms(text, FileId(3)).expect("reads");
    assert_eq!(file.plan, *plan("0F0,0B0\n", 1));
    assert_eq!(file.check(), vec![]);
    let notes = file.notes();
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].severity, pipeweave_diagnostics::Severity::Note);
    assert_eq!(
        notes[0].message,
        "`UNSHARD` and `RESHARD` are left out of the plan (2 cells)"
    );
    let span = notes[0].span.as_ref().expect("placed");
    assert_eq!(
        (span.file, &text[span.range.clone()]),
        (FileId(3), "0UNSHARD")
    );
}
