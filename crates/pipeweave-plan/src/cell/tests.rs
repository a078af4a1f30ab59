use super::*;
use crate::action::Kind::*;

fn text(f: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut out = Vec::new();
    f(&mut out);
    String::from_utf8(out).expect("UTF-8")
}

fn one(stage: u32, kind: Kind, mb: u32) -> Action {
    Action::One(Op::new(stage, kind, mb))
}

#[test]
fn numbers_are_decimal() {
    for n in [
        0,
        1,
        9,
        10,
        99,
        100,
        101,
        999,
        1000,
        12_345,
        4_294_967_295,
        u64::MAX,
    ] {
        assert_eq!(text(|out| push_uint(out, n)), n.to_string());
    }
}

#[test]
fn cells_are_pytorchs() {
    let cases = [
        (Step::Compute(one(3, I, 0)), "3I0"),
        (Step::Compute(one(u32::MAX, W, 10)), "4294967295W10"),
        (
            Step::Compute(Action::Pair {
                f: Op::new(0, F, 3),
                b: Op::new(7, B, 5),
            }),
            "(0F3;7B5)OVERLAP_F_B",
        ),
        (
            Step::Recv {
                dir: Dir::Fwd,
                stage: 1,
                mb: 0,
                peer: 1,
            },
            "1RECV_F0",
        ),
        (
            Step::Send {
                dir: Dir::Bwd,
                stage: 12,
                mb: 345,
                peer: 0,
            },
            "12SEND_B345",
        ),
        (
            Step::WaitSend {
                dir: Dir::Fwd,
                stage: 0,
                mb: 99,
                peer: 1,
            },
            "0WAIT_SEND_F99",
        ),
        (Step::ReduceGrad { stage: 2 }, "2REDUCE_GRAD"),
        (Step::WaitReduceGrad { stage: 20 }, "20WAIT_REDUCE_GRAD"),
    ];
    for (step, cell) in cases {
        assert_eq!(text(|out| push_step(out, &step)), cell);
        assert_eq!(step.to_string(), cell, "Display is the same writer");
        if let Step::Compute(a) = step {
            assert_eq!(text(|out| push_action(out, &a)), cell);
            assert_eq!(a.to_string(), cell);
        }
    }
}

#[test]
fn the_longest_cell_fits_the_display_buffer() {
    let big = Op::new(u32::MAX, F, u32::MAX);
    let pair = Action::Pair { f: big, b: big };
    assert_eq!(pair.to_string().len(), MAX_CELL_LEN);
}

#[test]
fn cells_read_back() {
    let nums = [0, 1, 9, 10, 99, 100, 12_345, u32::MAX];
    for (i, &stage) in nums.iter().enumerate() {
        let mb = nums[(i + 3) % nums.len()];
        for kind in [F, B, I, W] {
            let mut actions = vec![one(stage, kind, mb)];
            if kind.is_input_backward() {
                actions.push(Action::Pair {
                    f: Op::new(mb, F, stage),
                    b: Op::new(stage, kind, mb),
                });
            }
            for a in actions {
                assert_eq!(parse_action(&a.to_string(), u32::MAX), Ok(a));
            }
        }
    }
    assert_eq!(parse_action("007F01", u32::MAX), Ok(one(7, F, 1)));
}

/// The problems of a cell as (message, the text of the cell they point at).
fn problems(cell: &str, max_mb: u32) -> Vec<(String, &str)> {
    match parse_action(cell, max_mb) {
        Ok(a) => panic!("{cell} reads as {a}"),
        Err(errors) => errors
            .iter()
            .map(|e| (e.to_string(), &cell[e.range.clone()]))
            .collect(),
    }
}

type Problems = &'static [(&'static str, &'static str)];

#[test]
fn every_problem_is_located_in_the_cell() {
    // (cell, [(message, the text it points at)]), micro-batches up to 9.
    let cases: [(&str, Problems); 18] = [
        (
            "",
            &[("expected a stage number, found the end of the cell", "")],
        ),
        ("x", &[("expected a stage number, found `x`", "x")]),
        ("é1F0", &[("expected a stage number, found `é`", "é")]),
        (
            "0Q1",
            &[("unknown action kind `Q`: expected F, B, I or W", "Q")],
        ),
        (
            "0F",
            &[(
                "expected a micro-batch number after `0F`, found the end of the cell",
                "",
            )],
        ),
        (
            "3",
            &[(
                "expected an action kind (F, B, I or W) after `3`, found the end of the cell",
                "",
            )],
        ),
        (
            "0SEND_F1",
            &[("`SEND_F` is not a compute action", "SEND_F")],
        ),
        ("0F1xyz", &[("unexpected `xyz` after `0F1`", "xyz")]),
        // Control characters are quoted by their codes: a message may reach a terminal.
        (
            "0F1\u{1b}[2J",
            &[("unexpected `\\u{1b}[2J` after `0F1`", "\u{1b}[2J")],
        ),
        (
            "\u{7}",
            &[("expected a stage number, found `\\u{7}`", "\u{7}")],
        ),
        (
            "0\u{9b}1",
            &[(
                "unknown action kind `\\u{9b}`: expected F, B, I or W",
                "\u{9b}",
            )],
        ),
        (
            "(0F1;3B0)\u{1b}",
            &[(
                "an overlapped pair must end with `)OVERLAP_F_B`, found `)\\u{1b}`",
                "(0F1;3B0)\u{1b}",
            )],
        ),
        (
            "99999999999F0",
            &[("stage number `99999999999` is too large", "99999999999")],
        ),
        (
            "0F10",
            &[("micro-batch number `10` is too large (at most 9)", "10")],
        ),
        (
            "(0F1;3B0)",
            &[(
                "an overlapped pair must end with `)OVERLAP_F_B`, found `)`",
                "(0F1;3B0)",
            )],
        ),
        (
            "(0F1)OVERLAP_F_B",
            &[(
                "an overlapped pair needs two actions separated by `;`",
                "(0F1)OVERLAP_F_B",
            )],
        ),
        (
            "(0B1;1W0)OVERLAP_F_B",
            &[
                ("an overlapped pair needs a forward first", "0B1"),
                (
                    "the second action of an overlapped pair must be a B or an I",
                    "1W0",
                ),
            ],
        ),
        (
            "(0F1x;1B)OVERLAP_F_B",
            &[
                ("unexpected `x` after `0F1`", "x"),
                (
                    "expected a micro-batch number after `1B`, found the end of the cell",
                    "",
                ),
            ],
        ),
    ];
    for (cell, expected) in cases {
        let expected: Vec<(String, &str)> =
            expected.iter().map(|&(m, at)| (m.to_owned(), at)).collect();
        assert_eq!(problems(cell, 9), expected, "{cell}");
    }
}

#[test]
fn step_cells_read_back() {
    let nums = [0, 1, 10, 12_345, u32::MAX];
    for (i, &stage) in nums.iter().enumerate() {
        let mb = nums[(i + 2) % nums.len()];
        let mut cells = vec![
            StepCell::ReduceGrad { stage },
            StepCell::WaitReduceGrad { stage },
            StepCell::Unshard { stage },
            StepCell::Reshard { stage },
            StepCell::Compute(one(stage, W, mb)),
            StepCell::Compute(Action::Pair {
                f: Op::new(stage, F, mb),
                b: Op::new(mb, I, stage),
            }),
        ];
        for dir in [Dir::Fwd, Dir::Bwd] {
            cells.push(StepCell::Recv { dir, stage, mb });
            cells.push(StepCell::Send { dir, stage, mb });
            cells.push(StepCell::WaitSend { dir, stage, mb });
        }
        for cell in cells {
            let text = cell.to_string();
            assert_eq!(parse_step(&text, u32::MAX), Ok(cell), "{text}");
            assert!(is_step_cell(&text) != matches!(cell, StepCell::Compute(_)));
        }
    }
    // A lowered step's cell is its step cell's: the peer is left out.
    let step = Step::WaitSend {
        dir: Dir::Bwd,
        stage: 3,
        mb: 7,
        peer: 2,
    };
    assert_eq!(StepCell::from(step).to_string(), step.to_string());
    assert_eq!(
        parse_step("007SEND_F01", 9),
        Ok(StepCell::Send {
            dir: Dir::Fwd,
            stage: 7,
            mb: 1
        })
    );
}

#[test]
fn every_problem_of_a_step_cell_is_located() {
    let step_problems = |cell: &'static str| -> Vec<(String, &'static str)> {
        match parse_step(cell, 9) {
            Ok(s) => panic!("{cell} reads as {s}"),
            Err(errors) => errors
                .iter()
                .map(|e| (e.to_string(), &cell[e.range.clone()]))
                .collect(),
        }
    };
    let cases: [(&str, Problems); 8] = [
        (
            "1SEND_F",
            &[(
                "expected a micro-batch number after `1SEND_F`, found the end of the cell",
                "",
            )],
        ),
        (
            "1RECV_Bx",
            &[(
                "expected a micro-batch number after `1RECV_B`, found `x`",
                "x",
            )],
        ),
        (
            "1REDUCE_GRAD5",
            &[("unexpected `5` after `1REDUCE_GRAD`", "5")],
        ),
        ("2UNSHARD ", &[("unexpected ` ` after `2UNSHARD`", " ")]),
        (
            "1WAIT_SEND_F3x",
            &[("unexpected `x` after `1WAIT_SEND_F3`", "x")],
        ),
        (
            "1SEND_F10",
            &[("micro-batch number `10` is too large (at most 9)", "10")],
        ),
        (
            "99999999999RESHARD",
            &[("stage number `99999999999` is too large", "99999999999")],
        ),
        (
            "0OVERLAP_F_B",
            &[("`OVERLAP_F_B` is not a compute action", "OVERLAP_F_B")],
        ),
    ];
    for (cell, expected) in cases {
        let expected: Vec<(String, &str)> =
            expected.iter().map(|&(m, at)| (m.to_owned(), at)).collect();
        assert_eq!(step_problems(cell), expected, "{cell}");
    }
}
