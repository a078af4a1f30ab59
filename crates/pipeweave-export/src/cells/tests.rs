use super::*;

fn text(f: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut out = Vec::new();
    f(&mut out);
    String::from_utf8(out).expect("UTF-8")
}

#[test]
fn cells_are_the_display_of_their_values() {
    let nums = [0, 1, 9, 10, 99, 100, 12_345, u32::MAX];
    for (i, &stage) in nums.iter().enumerate() {
        let mb = nums[(i + 3) % nums.len()];
        for kind in [Kind::F, Kind::B, Kind::I, Kind::W] {
            let actions = [
                Action::One(Op::new(stage, kind, mb)),
                Action::Pair {
                    f: Op::new(mb, Kind::F, stage),
                    b: Op::new(stage, kind, mb),
                },
            ];
            for a in actions {
                assert_eq!(text(|out| push_action(out, &a)), a.to_string());
            }
        }
        for dir in [Dir::Fwd, Dir::Bwd] {
            let peer = nums[(i + 5) % nums.len()];
            let steps = [
                Step::Compute(Action::One(Op::new(stage, Kind::W, mb))),
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
                assert_eq!(text(|out| push_step(out, &step)), step.to_string());
            }
        }
    }
}
