//! `--forward-only`: the evaluation step of any schedule, plugin or plan file (its forwards in its
//! order), validated, simulated, drawn and exported; PyTorch's CSVs refuse it with the reason.
//! The plugins must be built (`cargo build --workspace`); the binary finds them next to itself.

use std::path::PathBuf;
use std::process::Command;

/// Runs `pipeweave` in the reference folder with no plugin or schedule path from the environment.
fn pipeweave(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(args)
        .env_remove("PIPEWEAVE_PLUGIN_PATH")
        .env_remove("PIPEWEAVE_SCHEDULE_PATH")
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/reference"))
        .output()
        .expect("the pipeweave binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// DeepSeek's DualPipe under no grad: the training order with every backward gone and each F&B
/// pair its forward alone.
#[test]
fn dualpipe_and_dualpipev_evaluation_steps() {
    for name in ["dualpipe", "dualpipev"] {
        let (code, out, err) = pipeweave(&["show", name, "-p", "4", "-m", "8", "--forward-only"]);
        assert_eq!((code, err.as_str()), (0, ""), "{name}");
        insta::assert_snapshot!(format!("show_{name}_p4_m8_forward_only"), out);
    }
}

#[test]
fn every_source_takes_it_and_validate_says_so() {
    let (code, out, err) = pipeweave(&["validate", "zb-v", "-p", "2", "-m", "4", "--forward-only"]);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out, @"zb-v: valid and deadlock free (2 ranks, 1 pipeline × 4 stages, 4 micro-batches, 1 model copy, 16 compute operations, forwards only: an evaluation step)");
    let (code, out, err) = pipeweave(&[
        "convert",
        "torch/textbook_1F1B_p4_m8.actions",
        "--forward-only",
        "--to",
        "actions",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out, @r"
    0F0,0F1,0F2,0F3,0F4,0F5,0F6,0F7
    1F0,1F1,1F2,1F3,1F4,1F5,1F6,1F7
    2F0,2F1,2F2,2F3,2F4,2F5,2F6,2F7
    3F0,3F1,3F2,3F3,3F4,3F5,3F6,3F7
    ");
}

/// Simulated: the forwards alone (M + P − 1 unit slots for 1F1B) and no activation saved.
#[test]
fn simulated_with_no_activation_saved() {
    let (code, out, err) = pipeweave(&[
        "simulate",
        "1f1b",
        "-p",
        "4",
        "-m",
        "8",
        "--forward-only",
        "--format",
        "json",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    let json: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(json["makespan"], 11.0, "{out}");
    let ranks = json["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), 4);
    assert!(ranks.iter().all(|r| r["peak_activations"] == 0), "{out}");
}

/// The JSON plan says it (and reads back as the same evaluation plan); the actions text is read
/// as one when told; PyTorch's CSVs refuse it.
#[test]
fn exported_to_json_and_refused_by_pytorchs_csvs() {
    let dir = std::env::temp_dir().join(format!("pipeweave-forward-only-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("eval.json");
    let path = file.to_str().expect("utf-8 path");
    let (code, _, err) = pipeweave(&[
        "export",
        "dualpipev",
        "-p",
        "4",
        "-m",
        "8",
        "--forward-only",
        "--to",
        "json",
        "-o",
        path,
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    let (code, out, err) = pipeweave(&["validate", path]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(
        out.ends_with("64 compute operations, forwards only: an evaluation step)\n"),
        "{out}"
    );
    // The actions text has no place to say so: read back, it is a training step missing its
    // backwards, unless --forward-only says it is an evaluation step.
    let file = dir.join("eval.actions");
    let actions = file.to_str().expect("utf-8 path");
    let (code, _, err) = pipeweave(&["convert", path, "--to", "actions", "-o", actions]);
    assert_eq!((code, err.as_str()), (0, ""));
    let (code, _, err) = pipeweave(&["validate", actions]);
    assert_eq!(code, 1);
    assert!(
        err.contains("never runs the backward of micro-batch 0"),
        "{err}"
    );
    let (code, out, err) = pipeweave(&["validate", actions, "--forward-only"]);
    std::fs::remove_dir_all(&dir).expect("temp dir removed");
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(
        out.ends_with("forwards only: an evaluation step)\n"),
        "{out}"
    );
    for to in ["pytorch", "pytorch-comms"] {
        let (code, out, err) = pipeweave(&[
            "export",
            "1f1b",
            "-p",
            "2",
            "-m",
            "2",
            "--forward-only",
            "--to",
            to,
        ]);
        assert_eq!((code, out.as_str()), (1, ""), "{to}");
        insta::assert_snapshot!(format!("export_forward_only_to_{to}"), err);
    }
}
