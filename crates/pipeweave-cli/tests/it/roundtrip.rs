//! Every file `pipeweave` writes, it reads back to the same plan, the form told by the text alone:
//! the library schedules and the plugins (built next to the binary by `cargo build --workspace`)
//! exported to `actions`, `pytorch`, `pytorch-comms` and `json`, then converted from standard input.

use proptest::prelude::*;
use std::process::{Command, Output, Stdio};

/// Runs `pipeweave` with `stdin` on its standard input (none when `None`).
fn run(args: &[String], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(args)
        .env_remove("PIPEWEAVE_PLUGIN_PATH")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the pipeweave binary runs");
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        use std::io::Write as _;
        pipe.write_all(bytes).expect("pipeweave reads its input");
    }
    child.wait_with_output().expect("pipeweave ends")
}

fn args(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

/// Runs `pipeweave COMMAND - --to TO` on `text`: the output, or the error and exit code.
fn from_stdin(command: &str, text: &[u8], to: &str) -> Result<Vec<u8>, String> {
    let out = run(&args(&[command, "-", "--to", to, "-o", "-"]), Some(text));
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(format!(
            "{command} to {to}: exit {:?}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The "done when" of the round trip: `export --to pytorch-comms` followed by `convert --to
/// actions` gives back the compute-only CSV byte for byte, for every library schedule at P = 2 to
/// 8 (with M = 2P, which every one of them takes, and M = 3P + 1 where it is allowed).
#[test]
fn pytorch_comms_converts_back_to_the_compute_only_csv() {
    let mut checked = 0;
    for entry in pipeweave_dsl::library::all() {
        for p in 2..=8u32 {
            for (m, always) in [(2 * p, true), (3 * p + 1, false)] {
                let (p, m) = (p.to_string(), m.to_string());
                let what = format!("{} -p {p} -m {m}", entry.name);
                let export = |to: &str| {
                    run(
                        &args(&["export", entry.name, "-p", &p, "-m", &m, "--to", to]),
                        None,
                    )
                };
                let csv = export("pytorch");
                if !csv.status.success() && !always {
                    // A requirement of the schedule (exit 1 with the reason); M = 2P meets all.
                    assert_eq!(csv.status.code(), Some(1), "{what}");
                    continue;
                }
                assert!(
                    csv.status.success(),
                    "{what}: {}",
                    String::from_utf8_lossy(&csv.stderr)
                );
                let comms = export("pytorch-comms");
                assert!(comms.status.success(), "{what}");
                let back = from_stdin("convert", &comms.stdout, "actions")
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert!(back == csv.stdout, "{what}: the compute-only CSV differs");
                checked += 1;
            }
        }
    }
    // 9 schedules × 7 sizes at M = 2P, and most at M = 3P + 1.
    assert!(checked >= 9 * 7 + 30, "{checked}");
}

/// A `--set` parameter and the values the property tries.
type Setting = (&'static str, &'static [&'static str]);

/// The schedules of the property: the library's and the plugins', each with the `--set`
/// parameters it takes.
fn schedules() -> Vec<(String, Vec<Setting>)> {
    let mut out: Vec<(String, Vec<Setting>)> = pipeweave_dsl::library::all()
        .map(|e| {
            let sets: Vec<Setting> = match e.name {
                "dualpipev" => vec![("weight_split", &["0", "1"]), ("overlap", &["0", "1"])],
                _ => Vec::new(),
            };
            (e.name.to_owned(), sets)
        })
        .collect();
    let dual: Vec<Setting> = vec![
        ("weight_split", &["false", "true"]),
        ("overlap", &["false", "true"]),
    ];
    out.push(("plugin:dualpipe".into(), dual.clone()));
    out.push(("plugin:dualpipev".into(), dual));
    out.push((
        "plugin:chimera".into(),
        vec![
            ("pipelines", &["2", "4"]),
            ("joins", &["direct", "doubling", "halving"]),
        ],
    ));
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, max_shrink_iters: 16, ..ProptestConfig::default() })]

    /// Over the library schedules and the plugins at random sizes and settings: every format the
    /// plan can be exported to converts back to the same bytes and to the same actions.
    #[test]
    fn every_export_reads_back_to_the_same_plan(
        which in 0usize..14,
        half in 1u32..=4,
        odd: bool,
        rounds in 1u32..=3,
        extra in prop_oneof![3 => Just(0u32), 1 => 1u32..4],
        v in 1u32..=3,
        choices in proptest::collection::vec(0usize..2, 2),
    ) {
        let all = schedules();
        prop_assert_eq!(all.len(), 14);
        let (name, sets) = &all[which];
        // P = 2 to 8, odd for the library's schedules now and then (the plugins want it even); M
        // a multiple of 2P (as most schedules and the plugins want), sometimes a little more.
        let p = 2 * half - u32::from(odd && half > 1 && !name.starts_with("plugin:"));
        let m = 2 * p * rounds + extra;
        let (p, m) = (p.to_string(), m.to_string());
        let mut shape = args(&[name, "-p", &p, "-m", &m]);
        if name.starts_with("interleaved") || name == "looped-bfs" || name == "megatron-a2a-overlap" {
            shape.extend(args(&["-v", &v.to_string()]));
        } else if name == "megatron-interleaved" {
            shape.extend(args(&["-v", &(v + 1).to_string()]));
        }
        for ((param, values), &c) in sets.iter().zip(&choices) {
            shape.extend(args(&["--set", &format!("{param}={}", values[c])]));
        }
        let what = shape.join(" ");
        let with = |cmd: &str, to: &str| {
            let mut a = args(&[cmd]);
            a.extend(shape.iter().cloned());
            a.extend(args(&["--to", to, "-o", "-"]));
            run(&a, None)
        };
        let compiled = with("compile", "actions");
        // A size or setting the schedule does not take is refused with exit 1.
        prop_assume!(compiled.status.success());
        for to in ["actions", "pytorch", "pytorch-comms", "json"] {
            let written = with("export", to);
            if !written.status.success() {
                // Only a plan PyTorch cannot run (Chimera, DualPipe) is refused, with the reason.
                let err = String::from_utf8_lossy(&written.stderr);
                prop_assert!(to.starts_with("pytorch") && err.contains("cannot run"), "{what} to {to}: {err}");
                continue;
            }
            let again = from_stdin("export", &written.stdout, to).map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
            prop_assert!(again == written.stdout, "{what}: {to} does not read back to the same bytes");
            let actions = from_stdin("convert", &written.stdout, "actions").map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
            prop_assert!(actions == compiled.stdout, "{what}: {to} does not read back to the same plan");
        }
    }
}

/// Runs `pipeweave` in tests/data/torch-lowered (PyTorch's own lowerings, recorded from torch
/// 2.15.0): (exit code, stdout, stderr).
fn in_torch_lowered(words: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(words)
        .current_dir(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/torch-lowered"
        ))
        .output()
        .expect("the pipeweave binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// PyTorch's own compute_comms CSVs are plans on every command; `--plan-format` forces a form;
/// `--pipelines` does not go with PyTorch's CSVs, which hold one pipeline.
#[test]
fn pytorchs_csvs_are_plans_and_the_form_can_be_forced() {
    let (code, out, err) = in_torch_lowered(&["validate", "textbook_1F1B_p4_m8.comms"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        out,
        "textbook_1F1B_p4_m8.comms: valid and deadlock free (4 ranks, 1 pipeline × 4 stages, 8 micro-batches, 1 model copy, 64 compute operations)\n"
    );
    // FSDP's lowering: the sharding steps are left out with one note, shown once.
    let (code, out, err) = in_torch_lowered(&[
        "convert",
        "textbook_GPipe_p4_m8.fsdp.comms",
        "--to",
        "actions",
    ]);
    assert_eq!(code, 0, "{err}");
    let gpipe = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/reference/torch/textbook_GPipe_p4_m8.actions"
    ))
    .expect("reference");
    assert_eq!(out, gpipe);
    insta::assert_snapshot!(err, @r"
    note: `UNSHARD` and `RESHARD` are left out of the plan (8 cells)
      ┌─ textbook_GPipe_p4_m8.fsdp.comms:1:1
      │
    1 │ 0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0F2,0SEND_F2,0F3,0SEND_F3,0F4,0SE…
      │ ^^^^^^^^ the first of them
      │
      = they are FSDP's gathering and freeing of a stage's parameters on the stage's own rank: they change neither the order of the computation nor the messages between ranks
    ");
    for command in ["show", "simulate", "render", "compare"] {
        let mut words = vec![command, "ZBVZeroBubble_v2_p4_m8.fsdp.comms"];
        if command == "render" {
            words.extend(["--svg", "-"]);
        }
        let (code, _, err) = in_torch_lowered(&words);
        assert_eq!(code, 0, "{command}: {err}");
    }
    // Forced to the actions text, the steps are not compute actions.
    let (code, _, err) = in_torch_lowered(&[
        "validate",
        "textbook_1F1B_p4_m8.comms",
        "--plan-format",
        "actions",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("error: `SEND_F` is not a compute action\n"),
        "{err}"
    );
    assert!(
        err.contains("a PyTorch compute_comms CSV is read as `pytorch-comms`"),
        "{err}"
    );
    // Forced to compute_comms, a compute-only CSV has no communication.
    let (code, _, err) = in_torch_lowered(&[
        "validate",
        "../reference/torch/textbook_1F1B_p4_m8.actions",
        "--plan-format",
        "pytorch-comms",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("error: the file holds no communication, but its plan sends, receives and reduces (152 steps)\n"),
        "{err}"
    );
    let (code, _, err) =
        in_torch_lowered(&["validate", "textbook_1F1B_p4_m8.comms", "--pipelines", "2"]);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "error: `textbook_1F1B_p4_m8.comms` is read as a PyTorch compute_comms CSV, which holds one pipeline: --pipelines 2 applies to the actions format (--plan-format actions)\n"
    );
}
