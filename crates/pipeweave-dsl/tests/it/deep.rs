//! Deep nesting never crashes: items at the nesting limit compile on a thread with a quarter of a
//! test thread's stack (debug builds included), one level more is a located error in plain words,
//! and a 100,000-level item is refused at level 65 without recursing over the rest.

use pipeweave_diagnostics::{Diagnostic, FileId};
use pipeweave_dsl::Args;

/// The nesting limit the language documents.
const LIMIT: usize = 64;

/// A quarter of the 2 MiB a Rust test thread gets: what the deepest item may use at most.
const SMALL_STACK: usize = 512 * 1024;

/// Runs `f` on a thread with `SMALL_STACK` bytes of stack (a stack overflow aborts the test
/// process, so a failure cannot go unnoticed).
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(SMALL_STACK)
        .spawn(f)
        .expect("a thread starts")
        .join()
        .expect("the thread does not panic")
}

fn schedule(top: &str, program: &str) -> String {
    format!("stages P\n{top}\nprogram {{\n{program}\n}}\n")
}

/// Items nesting `levels` deep in every way the language nests, each building the deepest tree
/// it can: conditionals in every position, brackets around prefix and infix operators (the
/// most an expression may have), `else if` chains, and nested blocks with actions inside.
fn shapes(levels: usize) -> Vec<(&'static str, String)> {
    let ops = |n: usize| "- ".repeat(n);
    let in_block = levels - 1; // the program's `{` is a level
    vec![
        (
            "conditional in the else branch",
            schedule(
                &format!(
                    "let x = {}{}1",
                    "if 1 then 1 else ".repeat(levels),
                    ops(128)
                ),
                "F B",
            ),
        ),
        (
            "conditional in the condition",
            schedule(
                &format!(
                    "let x = {}1{}",
                    "if ".repeat(levels),
                    " then 1 else 1".repeat(levels)
                ),
                "F B",
            ),
        ),
        (
            "conditional in the then branch",
            schedule(
                &format!(
                    "let x = {}1{}",
                    "if 1 then ".repeat(levels),
                    " else 1".repeat(levels)
                ),
                "F B",
            ),
        ),
        (
            "brackets around operators",
            schedule(
                &format!(
                    "let x = {}{}1{}",
                    "min(".repeat(levels / 2),
                    "(".repeat(levels - levels / 2),
                    format!("{})", " + 1".repeat(2)).repeat(levels - levels / 2)
                        + &")".repeat(levels / 2)
                ),
                "F B",
            ),
        ),
        (
            "else if chain",
            schedule(
                "",
                &format!(
                    "if 0 {{ F }}{} else {{ F B }}",
                    " else if 0 { F }".repeat(in_block - 2)
                ),
            ),
        ),
        (
            "nested blocks",
            schedule("", &{
                // The program's `{`, the statements' blocks, `B(` and the `if` in it.
                let blocks = levels - 3;
                let open: String = (0..blocks)
                    .map(|i| {
                        if i % 2 == 0 {
                            "repeat 1 { ".to_owned()
                        } else {
                            format!("for i{i} in 0..1 {{ ")
                        }
                    })
                    .collect();
                format!(
                    "{open}F(0) B(if 1 then {}0 else 0){}",
                    "- ".repeat(120),
                    " }".repeat(blocks)
                )
            }),
        ),
    ]
}

fn messages(diags: &[Diagnostic]) -> Vec<String> {
    diags.iter().map(|d| d.message.clone()).collect()
}

#[test]
fn items_at_the_limit_compile_on_a_small_stack() {
    for (shape, source) in shapes(LIMIT) {
        let result = on_small_stack(move || {
            let check = pipeweave_dsl::check(FileId(0), &source);
            let compiled = pipeweave_dsl::compile(FileId(0), &source, &Args::new(1, 1));
            (check, compiled.map(|c| c.plan.num_ops()))
        });
        assert_eq!(result.0, [], "{shape}");
        assert_eq!(result.1.map_err(|d| messages(&d)), Ok(2), "{shape}");
    }
}

#[test]
fn one_level_more_is_a_located_error() {
    for (shape, source) in shapes(LIMIT + 1) {
        let diags = on_small_stack({
            let source = source.clone();
            move || pipeweave_dsl::check(FileId(0), &source)
        });
        assert_eq!(
            messages(&diags),
            ["nested more than 64 levels deep"],
            "{shape}"
        );
        let span = diags[0].span.as_ref().map(|s| s.range.clone());
        let token = span.and_then(|r| source.get(r)).unwrap_or_default();
        assert!(
            ["if", "(", "min(", "{"].contains(&token),
            "{shape}: {token:?}"
        );
    }
}

#[test]
fn a_hundred_thousand_levels_are_refused_at_level_65() {
    let conditional = format!(
        "stages P\nlet x = {}1\nprogram {{ F B }}\n",
        "if 1 then 1 else ".repeat(100_000)
    );
    let chain = schedule(
        "",
        &format!("if 0 {{ F }}{}", "\nelse if 0 { F }".repeat(100_000)),
    );
    // The 65th `if` of the conditional; in the chain, the block of the 62nd `else if` (the
    // program's block, the first `if` and its block are levels 1 to 3).
    let if_65 = "stages P\nlet x = ".len() + LIMIT * "if 1 then 1 else ".len();
    let block_65 = "stages P\n\nprogram {\nif 0 { F }".len()
        + (LIMIT - 3) * "\nelse if 0 { F }".len()
        + "\nelse if 0 ".len();
    for (source, at) in [
        (conditional, if_65..if_65 + 2),
        (chain, block_65..block_65 + 1),
    ] {
        let diags = on_small_stack(move || {
            pipeweave_dsl::compile(FileId(0), &source, &Args::new(2, 2)).map(|_| ())
        })
        .unwrap_err();
        assert_eq!(messages(&diags), ["nested more than 64 levels deep"]);
        assert_eq!(diags[0].span.as_ref().map(|s| s.range.clone()), Some(at));
        assert_eq!(
            diags[0].notes,
            ["each bracket, block and `if` is a level, and so is each `else if`"]
        );
    }
}
