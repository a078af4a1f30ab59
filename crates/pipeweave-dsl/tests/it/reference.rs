//! The library orders equal the reference implementations: PyTorch 2.15's schedule classes
//! (recorded for P 2..8 and M 1..4P in tests/data/torch-recorded by record.py there), DeepSeek's
//! DualPipeV with its options, and the textbook GPipe and 1F1B orders.

use crate::common::compile_library;
use pipeweave_dsl::Args;
use pipeweave_plan::testing::program_lines;
use std::collections::BTreeMap;
use std::path::Path;

fn data(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// (P, M) → one line per rank, from a recorded file.
fn recorded(file: &str) -> BTreeMap<(u32, u32), Vec<String>> {
    let text = data(&format!("tests/data/torch-recorded/{file}"));
    let mut out: BTreeMap<(u32, u32), Vec<String>> = BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# P=") {
            let (p, m) = rest.split_once(" M=").expect("header has P and M");
            let key = (p.parse().expect("P"), m.parse().expect("M"));
            out.insert(key, Vec::new());
            current = Some(key);
        } else if !line.starts_with('#') {
            let key = current.expect("a header before rows");
            out.get_mut(&key).expect("inserted").push(line.to_owned());
        }
    }
    out
}

/// Compares every recorded configuration; reports all mismatches at once.
fn compare(schedule: &str, file: &str, extra: &[(&str, i64)]) {
    let expected = recorded(file);
    assert!(!expected.is_empty(), "{file} holds no configuration");
    let mut failures = Vec::new();
    for (&(p, m), rows) in &expected {
        let mut args = Args::new(p, m);
        for &(n, v) in extra {
            args = args.with(n, v);
        }
        failures.extend(differs(schedule, &args, rows, &format!("P={p} M={m}")));
    }
    assert!(
        failures.is_empty(),
        "{schedule} differs from {file} in {} of {} configurations:\n{}",
        failures.len(),
        expected.len(),
        failures.join("\n")
    );
}

#[test]
fn interleaved_1f1b_equals_pytorch() {
    for v in [2, 3, 4] {
        compare(
            "interleaved-1f1b",
            &format!("Interleaved1F1B_v{v}.txt"),
            &[("v", v)],
        );
    }
}

#[test]
fn looped_bfs_equals_pytorch() {
    for v in [2, 3] {
        compare("looped-bfs", &format!("LoopedBFS_v{v}.txt"), &[("v", v)]);
    }
}

#[test]
fn interleaved_zb_equals_pytorch() {
    for v in [1, 2, 3] {
        compare(
            "interleaved-zb",
            &format!("InterleavedZeroBubble_v{v}.txt"),
            &[("v", v)],
        );
    }
}

#[test]
fn zb_h1_equals_pytorch_zero_bubble_with_one_stage_per_rank() {
    compare("zb-h1", "InterleavedZeroBubble_v1.txt", &[]);
}

#[test]
fn zb_v_equals_pytorch() {
    compare("zb-v", "ZBVZeroBubble_v2.txt", &[]);
}

#[test]
fn dualpipev_equals_pytorch() {
    compare("dualpipev", "DualPipeV_v2.txt", &[]);
}

/// DeepSeek's own DualPipeV, with and without the weight-gradient split and the overlap.
#[test]
fn dualpipev_equals_deepseek_with_every_option() {
    let cases = [
        ("dualpipev_pp4_n10", 1, 1, 4, 10),
        ("dualpipev_pp4_n8", 1, 1, 4, 8),
        ("dualpipev_pp4_n10_nozb", 0, 1, 4, 10),
        ("dualpipev_pp4_n10_noovl", 1, 0, 4, 10),
        ("dualpipev_pp4_n10_nozb_noovl", 0, 0, 4, 10),
    ];
    for (file, split, overlap, p, m) in cases {
        let expected: Vec<String> = data(&format!(
            "../../tests/data/reference/dualpipe/{file}.actions"
        ))
        .lines()
        .map(str::to_owned)
        .collect();
        let args = Args::new(p, m)
            .with("weight_split", split == 1)
            .with("overlap", overlap == 1);
        let plan = compile_library("dualpipev", &args).expect("compiles").plan;
        assert_eq!(program_lines(&plan), expected, "{file}");
    }
}

/// The textbook orders, written out for any P and M.
#[test]
fn gpipe_and_1f1b_equal_the_textbook() {
    for p in 2..=8u32 {
        for m in 1..=4 * p {
            let gpipe: Vec<String> = (0..p)
                .map(|r| {
                    let f = (0..m).map(|k| format!("{r}F{k}"));
                    let b = (0..m).map(|k| format!("{r}B{k}"));
                    f.chain(b).collect::<Vec<_>>().join(",")
                })
                .collect();
            let plan = compile_library("gpipe", &Args::new(p, m))
                .expect("compiles")
                .plan;
            assert_eq!(program_lines(&plan), gpipe, "gpipe P={p} M={m}");

            let one: Vec<String> = (0..p)
                .map(|r| {
                    let warm = (p - 1 - r).min(m);
                    let mut cells: Vec<String> = (0..warm).map(|k| format!("{r}F{k}")).collect();
                    for k in 0..m - warm {
                        cells.push(format!("{r}F{}", k + warm));
                        cells.push(format!("{r}B{k}"));
                    }
                    cells.extend((m - warm..m).map(|k| format!("{r}B{k}")));
                    cells.join(",")
                })
                .collect();
            let plan = compile_library("1f1b", &Args::new(p, m))
                .expect("compiles")
                .plan;
            assert_eq!(program_lines(&plan), one, "1f1b P={p} M={m}");
        }
    }
    for (file, p, m) in [
        ("textbook_1F1B_p4_m8", 4, 8),
        ("textbook_1F1B_p8_m16", 8, 16),
    ] {
        let expected: Vec<String> =
            data(&format!("../../tests/data/reference/torch/{file}.actions"))
                .lines()
                .map(str::to_owned)
                .collect();
        let plan = compile_library("1f1b", &Args::new(p, m))
            .expect("compiles")
            .plan;
        assert_eq!(program_lines(&plan), expected, "{file}");
    }
    let expected: Vec<String> =
        data("../../tests/data/reference/torch/textbook_GPipe_p4_m8.actions")
            .lines()
            .map(str::to_owned)
            .collect();
    let plan = compile_library("gpipe", &Args::new(4, 8))
        .expect("compiles")
        .plan;
    assert_eq!(program_lines(&plan), expected);
}

/// (P, M, v, G) → one line per rank, from a file recorded from Megatron-Core by
/// tests/data/reference/megatron/record.py.
fn recorded_megatron(file: &str) -> BTreeMap<(u32, u32, i64, i64), Vec<String>> {
    let text = data(&format!("../../tests/data/reference/megatron/{file}"));
    let mut out: BTreeMap<(u32, u32, i64, i64), Vec<String>> = BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# P=") {
            let fields: Vec<&str> = rest.split(' ').collect();
            let value = |i: usize, key: &str| {
                fields[i]
                    .strip_prefix(key)
                    .unwrap_or_else(|| panic!("{file}: `{line}` lacks {key}"))
                    .to_owned()
            };
            let key = (
                fields[0].parse().expect("P"),
                value(1, "M=").parse().expect("M"),
                value(2, "v=").parse().expect("v"),
                value(3, "G=").parse().expect("G"),
            );
            out.insert(key, Vec::new());
            current = Some(key);
        } else if !line.starts_with('#') {
            let key = current.expect("a header before rows");
            out.get_mut(&key).expect("inserted").push(line.to_owned());
        }
    }
    out
}

/// How the library schedule's plan for `args` differs from a recorded order (one program line
/// per rank): that it does not compile, or the first rank whose program differs.
fn differs(schedule: &str, args: &Args, rows: &[String], at: &str) -> Option<String> {
    match compile_library(schedule, args) {
        Err(e) => Some(format!("{at}: does not compile: {e}")),
        Ok(c) => {
            let got = program_lines(&c.plan);
            (got != rows).then(|| {
                let r = got.iter().zip(rows).position(|(a, b)| a != b).unwrap_or(0);
                format!(
                    "{at} rank {r}:\n  expected {}\n  got      {}",
                    rows.get(r).map_or("", String::as_str),
                    got.get(r).map_or("", String::as_str)
                )
            })
        }
    }
}

/// Compares every configuration Megatron-Core's order functions were recorded at.
fn compare_megatron(schedule: &str, file: &str) {
    let expected = recorded_megatron(file);
    assert!(expected.len() > 100, "{file} holds too few configurations");
    let mut failures = Vec::new();
    for (&(p, m, v, g), rows) in &expected {
        let args = Args::new(p, m).with("v", v).with("group", g);
        failures.extend(differs(
            schedule,
            &args,
            rows,
            &format!("P={p} M={m} v={v} G={g}"),
        ));
    }
    assert!(
        failures.is_empty(),
        "{schedule} differs from {file} in {} of {} configurations:\n{}",
        failures.len(),
        expected.len(),
        failures.join("\n")
    );
}

#[test]
fn megatron_interleaved_equals_megatron_core_with_every_group_size() {
    for v in [2, 3, 4] {
        compare_megatron("megatron-interleaved", &format!("Interleaved_v{v}.txt"));
    }
}

#[test]
fn megatron_a2a_overlap_equals_megatron_core_combined_1f1b() {
    for v in [1, 2, 3] {
        compare_megatron(
            "megatron-a2a-overlap",
            &format!("InterleavedA2AOverlap_v{v}.txt"),
        );
    }
}

/// Megatron-Core refuses a group outside P..=M and a last group smaller than P; so do these.
#[test]
fn megatron_schedules_refuse_what_megatron_core_refuses() {
    for schedule in ["megatron-interleaved", "megatron-a2a-overlap"] {
        for (p, m, g) in [(4, 8, 3), (4, 8, 9), (4, 10, 4)] {
            let args = Args::new(p, m).with("group", g);
            assert!(
                compile_library(schedule, &args).is_err(),
                "{schedule} P={p} M={m} G={g} compiles"
            );
        }
    }
}

/// At Llama 3 405B's shape (P 16, v 8, M 32) Megatron-Core's default group (P) gives PyTorch's
/// interleaved order action for action: the order is not why the run fits (docs/cost-model.md).
#[test]
fn megatron_interleaved_at_llama3_shape_is_pytorchs_order() {
    let args = Args::new(16, 32).with("v", 8);
    let megatron = compile_library("megatron-interleaved", &args).expect("compiles");
    let pytorch = compile_library("interleaved-1f1b", &args).expect("compiles");
    assert_eq!(program_lines(&megatron.plan), program_lines(&pytorch.plan));
}
