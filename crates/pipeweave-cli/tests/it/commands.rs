//! Snapshots of the commands on the reference vectors, and the exit codes of usage errors.

use std::path::PathBuf;
use std::process::Command;

fn reference(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/reference")
        .join(path)
}

/// Runs `pipeweave` in the reference folder (so paths in output are short) and returns
/// (exit code, stdout, stderr).
fn pipeweave(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(args)
        .current_dir(reference(""))
        .output()
        .expect("the pipeweave binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn show_1f1b_p4_m8() {
    let (code, out, err) = pipeweave(&["show", "torch/textbook_1F1B_p4_m8.actions"]);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out);
}

#[test]
fn show_dualpipe_p4_m8() {
    let (code, out, err) = pipeweave(&[
        "show",
        "dualpipe/dualpipe_pp4_n8.actions",
        "--pipelines",
        "2",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out);
}

#[test]
fn show_zbv_with_costs() {
    let (code, out, err) = pipeweave(&[
        "show",
        "torch/ZBVZeroBubble_v2_p2_m4.actions",
        "--costs",
        "F=1,I=1.5,W=0.5,transfer=0.25",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out);
}

#[test]
fn simulate_text_and_json() {
    let (code, out, _) = pipeweave(&["simulate", "torch/textbook_1F1B_p8_m16.actions"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("simulate_1f1b_p8_m16_text", out);
    let (code, out, _) = pipeweave(&[
        "simulate",
        "dualpipe/dualpipe_pp8_n20.actions",
        "--pipelines",
        "2",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json output");
    assert_eq!(v["makespan"], 66.0);
    for r in v["ranks"].as_array().expect("ranks") {
        assert_eq!(r["idle"], 6.0);
    }
    insta::assert_snapshot!("simulate_dualpipe_p8_m20_json", out);
}

#[test]
fn validate_reports_the_shape() {
    let (code, out, err) = pipeweave(&[
        "validate",
        "chimera/chimera_d8_n8_k4.actions",
        "--pipelines",
        "4",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out, @"chimera/chimera_d8_n8_k4.actions: valid and deadlock free (8 ranks, 4 pipelines × 8 stages, 8 micro-batches, 4 model copies, 128 compute operations)");
}

#[test]
fn convert_round_trips_actions() {
    for file in [
        "dualpipe/dualpipev_pp4_n10.actions",
        "torch/InterleavedZeroBubble_v2_p4_m8.actions",
    ] {
        let (code, out, _) = pipeweave(&["convert", file, "--to", "actions"]);
        assert_eq!(code, 0);
        let original = std::fs::read_to_string(reference(file)).expect("reference file");
        assert_eq!(out.trim_end(), original.trim_end(), "{file}");
    }
}

#[test]
fn usage_errors_exit_2() {
    let (code, _, err) = pipeweave(&[
        "simulate",
        "torch/textbook_1F1B_p4_m8.actions",
        "--costs",
        "F=x",
    ]);
    assert_eq!(code, 2);
    insta::assert_snapshot!(err, @"error: --costs: `x` is not a duration (a number ≥ 0)");
    let (code, _, _) = pipeweave(&["frobnicate"]);
    assert_eq!(code, 2);
    let (code, _, err) = pipeweave(&["validate", "torch/textbook_1F1B_p4_m8.actions", "-p", "4"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn missing_files_exit_1() {
    let (code, _, err) = pipeweave(&["validate", "no/such/plan.actions"]);
    assert_eq!(code, 1);
    assert!(err.contains("no/such/plan.actions"), "{err}");
}

#[test]
fn export_pytorch_comms_is_pytorchs_own_lowering() {
    let (code, out, err) = pipeweave(&[
        "export",
        "1f1b",
        "-p",
        "2",
        "-m",
        "2",
        "--to",
        "pytorch-comms",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    // What torch 2.15.0's `_add_reduce_grad`/`_add_send_recv`/`_add_wait_send` build from the
    // compute-only CSV `0F0,0F1,0B0,0B1` / `1F0,1B0,1F1,1B1`.
    assert_eq!(
        out,
        "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0WAIT_SEND_F0,0RECV_B1,0B1,0WAIT_SEND_F1,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n\
         1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD,1WAIT_REDUCE_GRAD,1WAIT_SEND_B0,1WAIT_SEND_B1\n"
    );
}

#[test]
fn export_refuses_what_pytorch_cannot_run() {
    let (code, out, err) = pipeweave(&[
        "export", "dualpipe", "-p", "4", "-m", "8", "--to", "pytorch",
    ]);
    assert_eq!((code, out.as_str()), (1, ""));
    insta::assert_snapshot!(err);
}

#[test]
fn export_json_round_trips_through_the_cli() {
    let dir = std::env::temp_dir().join(format!("pipeweave-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("zbv.json");
    let path = file.to_str().expect("utf-8 path");
    let (code, _, err) = pipeweave(&[
        "export", "zb-v", "-p", "2", "-m", "4", "--to", "json", "-o", path,
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    let (code, out, _) = pipeweave(&["convert", path, "--to", "actions"]);
    assert_eq!(code, 0);
    let expected = std::fs::read_to_string(reference("torch/ZBVZeroBubble_v2_p2_m4.actions"))
        .expect("reference");
    assert_eq!(out, expected);
    let (code, trace, _) = pipeweave(&["export", path, "--to", "chrome-trace"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&trace).expect("a trace is JSON");
    assert!(v["traceEvents"].as_array().is_some_and(|e| !e.is_empty()));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Files are read as bytes: a leading byte-order mark is dropped (spans and columns are those of
/// the text after it), and bytes that are not UTF-8 are named by offset, line and column.
#[test]
fn byte_order_marks_are_skipped_and_bad_bytes_located() {
    let dir = std::env::temp_dir().join(format!("pipeweave-cli-utf8-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files: [(&str, &[u8]); 4] = [
        (
            "bom.weave",
            b"\xef\xbb\xbfstages P * * 2\nprogram { F B }\n",
        ),
        ("bad.weave", b"stages P\nprogram { F \xc3\xa9 B \xff }\n"),
        ("bad.toml", b"name = \"x\xfe\"\n"),
        ("bom.actions", b"\xef\xbb\xbf0F0,0B0\n"),
    ];
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
            .args(args)
            .current_dir(&dir)
            .output()
            .expect("the pipeweave binary runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["check", "bom.weave"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("error: expected an expression, found `*`\n  ┌─ bom.weave:1:12\n"),
        "{err}"
    );
    assert_eq!(
        run(&["check", "bad.weave"]),
        (
            1,
            "error: cannot read `bad.weave`: the file is not UTF-8 text: byte 26 (line 2, column 17) is 0xff\n"
                .to_owned()
        )
    );
    assert_eq!(
        run(&["simulate", "1f1b", "-p", "2", "-m", "2", "--spec", "bad.toml"]),
        (
            1,
            "error: cannot read `bad.toml`: the file is not UTF-8 text: byte 9 (line 1, column 10) is 0xfe\n"
                .to_owned()
        )
    );
    assert_eq!(run(&["validate", "bom.actions"]), (0, String::new()));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `show` draws a window of ranks and time, as wide as `--width` (the time axis scaled down to
/// fit); past 512 ranks the rest are left out with a note, so a huge plan prints a bounded text.
#[test]
fn show_a_window() {
    let (code, out, err) = pipeweave(&["show", "1f1b", "-p", "4", "-m", "8", "--width", "60"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(out.lines().all(|l| l.chars().count() <= 60), "{out}");
    insta::assert_snapshot!("show_1f1b_width_60", out);
    let (code, out, _) = pipeweave(&[
        "show",
        "1f1b",
        "-p",
        "4",
        "-m",
        "8",
        "--rank-range",
        "1..2",
        "--from",
        "5",
        "--to",
        "20",
    ]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("show_1f1b_window", out);
    let (code, out, err) = pipeweave(&["show", "1f1b", "-p", "600", "-m", "2"]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().filter(|l| l.starts_with("rank ")).count(), 512);
    assert!(out.lines().all(|l| l.chars().count() <= 1000));
    assert_eq!(
        err,
        "warning: ranks 512 to 599 are not shown (at most 512 rows at once; --rank-range A..B \
         shows others)\n"
    );
    for (args, message) in [
        (
            &["--rank-range", "7..9"][..],
            "error: --rank-range 7..9: the plan has ranks 0 to 3\n",
        ),
        (
            &["--from", "9", "--to", "2"],
            "error: --from 9 --to 2: the window must end after it starts\n",
        ),
        (&["--from", "40"], "error: --from 40: the step ends at 33\n"),
        (
            &["--width", "3"],
            "error: --width 3: the width is a whole number of characters, at least 40\n",
        ),
        (
            &["--rank-range", "3..1"],
            "error: --rank-range 3..1: the range runs backwards\n",
        ),
    ] {
        let (code, _, err) = pipeweave(&[&["show", "1f1b", "-p", "4", "-m", "8"], args].concat());
        assert_eq!((code, err.as_str()), (2, message), "{args:?}");
    }
}
