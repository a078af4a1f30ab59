use super::*;
use pipeweave_plan::{Kind, Op};
use pipeweave_sim::{UnitCosts, simulate};

fn two_rank_1f1b() -> (Plan, Timeline) {
    let a = |s, k, m| Action::One(Op::new(s, k, m));
    use Kind::*;
    let plan = Plan::single(
        2,
        vec![0, 1],
        2,
        vec![
            vec![a(0, F, 0), a(0, F, 1), a(0, B, 0), a(0, B, 1)],
            vec![a(1, F, 0), a(1, B, 0), a(1, F, 1), a(1, B, 1)],
        ],
    )
    .expect("structure");
    let plan = pipeweave_check::validate(plan).expect("1F1B is valid");
    let t = simulate(&plan, &UnitCosts).expect("runs");
    (plan.into_plan(), t)
}

#[test]
fn two_rank_1f1b_whole() {
    let (plan, t) = two_rank_1f1b();
    assert_eq!(
        text_timeline(&plan, &t),
        "\
time    0         2         4         6         8
        |         |         |         |         |
rank 0  [0F0][0F1]..........[0B0     ].....[0B1     ]  busy 6 idle 3
rank 1  .....[1F0][1B0     ][1F1][1B1     ]..........  busy 6 idle 3
makespan 9, bubble fraction 33.33%
"
    );
}

/// A window of ranks and time, on the labels' own scale.
#[test]
fn a_window_of_ranks_and_time() {
    let (plan, t) = two_rank_1f1b();
    let window = TextWindow {
        ranks: 1..=1,
        from: Some(2.0),
        to: Some(6.0),
        width: None,
    };
    assert_eq!(
        text_timeline_window(&plan, &t, &window),
        "\
time    2         4         6
        |         |         |
rank 1  [1B0     ][1F1][1B1]  busy 6 idle 3
makespan 9, bubble fraction 33.33%
"
    );
}

/// Narrower than the labels need: the time axis is scaled to the width, boxes keep what fits of
/// their labels, and no line is longer than the width.
#[test]
fn a_width_scales_the_time_axis() {
    let (plan, t) = two_rank_1f1b();
    let window = TextWindow {
        width: Some(40),
        ..TextWindow::all(&plan)
    };
    let text = text_timeline_window(&plan, &t, &window);
    assert_eq!(
        text,
        "\
time    0        5
        |        |
rank 0  F]F]....[B]..[B ]  busy 6 idle 3
rank 1  ..F][B ]F[B ]....  busy 6 idle 3
makespan 9, bubble fraction 33.33%
"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 40), "{text}");
}

#[test]
fn nice_steps() {
    assert_eq!(nice_step(0.3), 0.5);
    assert_eq!(nice_step(7.0), 10.0);
    assert_eq!(nice_step(1.0), 1.0);
    assert_eq!(nice_step(120.0), 200.0);
    assert_eq!(nice_step(f64::NAN), 1.0);
}
