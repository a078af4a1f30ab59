//! `--costs` on every command that simulates: `simulate`, `show` and `export` as before, and
//! `render`, `sweep`, `compare` (its makespan column) and `report` too.

use crate::draw::{pipeweave, read, scratch};

/// 1F1B at P = 4, M = 8 with a backward three times a forward: (M + P − 1)(F + B) = 11 × 4 = 44
/// units instead of unit costs' 33, on every command.
#[test]
fn costs_reach_every_command_that_simulates() {
    let dir = scratch("costs");
    let shape = ["-p", "4", "-m", "8", "--costs", "F=1,B=3"];
    let mut text = String::new();
    let commands: [&[&str]; 5] = [
        &["simulate", "1f1b"],
        &["render", "1f1b", "gpipe", "--svg", "costs.svg"],
        &["sweep", "1f1b", "--over", "m=4,8", "--metric", "step-time"],
        &["compare", "1f1b", "--spec", "unit", "--format", "csv"],
        &["report", "1f1b", "--over", "m=8", "-o", "report.html"],
    ];
    for command in commands {
        let args: Vec<&str> = command.iter().chain(&shape).copied().collect();
        let (code, out, err) = pipeweave(&dir, &args);
        assert_eq!((code, err.as_str()), (0, ""), "{args:?}");
        text.push_str(&format!("$ pipeweave {}\n", args.join(" ")));
        for line in out.lines().take(4) {
            text.push_str(&format!("  {line}\n"));
        }
    }
    insta::assert_snapshot!(text);
    let page = read(&dir.join("report.html"));
    assert!(
        page.contains("uniform costs: F = 1, I = 1, W = 1, B = 3"),
        "the page says so"
    );
    // A spec and uniform costs are two answers to one question.
    let (code, _, err) = pipeweave(
        &dir,
        &[
            "render", "1f1b", "--spec", "unit", "--costs", "F=1", "--svg", "x.svg",
        ],
    );
    assert_eq!(code, 2, "{err}");
}
