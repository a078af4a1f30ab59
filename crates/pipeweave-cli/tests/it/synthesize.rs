//! `pipeweave synthesize`: the report with unit costs, the plan it writes and reads back, the
//! library it is set against on every shipped spec, and its errors.

use std::path::PathBuf;
use std::process::Command;

fn pipeweave(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(args)
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .env_remove("PIPEWEAVE_PLUGIN_PATH")
        .output()
        .expect("the pipeweave binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn reports_with_unit_costs() {
    let mut text = String::new();
    for args in [
        &["-p", "4", "-m", "8"][..],
        &[
            "-p",
            "4",
            "-m",
            "8",
            "--activations",
            "2",
            "--evaluations",
            "500",
            "--exact-nodes",
            "200000",
        ],
        &["-p", "4", "-m", "8", "--placement", "v"],
        &["-p", "4", "-m", "8", "-v", "2", "--evaluations", "500"],
        &[
            "-p",
            "4",
            "-m",
            "8",
            "--placement",
            "bidirectional",
            "--evaluations",
            "500",
            "--exact-nodes",
            "20000",
        ],
    ] {
        let mut all = vec!["synthesize"];
        all.extend_from_slice(args);
        // Bounded by --evaluations and --exact-nodes alone, so that a loaded machine gives the
        // same report.
        let mut run = all.clone();
        run.extend_from_slice(&["--time-limit", "60m"]);
        let (code, out, _) = pipeweave(&run);
        assert_eq!(code, 0, "{all:?}");
        text.push_str(&format!("$ pipeweave {}\n{out}\n", all.join(" ")));
    }
    insta::assert_snapshot!(text);
}

#[test]
fn the_written_plan_is_a_plan_every_command_reads() {
    let dir = std::env::temp_dir().join(format!("pipeweave-synth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("plan.json");
    let f = file.to_str().unwrap();
    let synthesize = [
        "synthesize",
        "-p",
        "4",
        "-m",
        "8",
        "--placement",
        "bidirectional",
        "--evaluations",
        "300",
        "--exact-nodes",
        "0",
        "-o",
        f,
    ];
    let (code, out, _) = pipeweave(&synthesize);
    assert_eq!(code, 0, "{out}");
    let (code, out, err) = pipeweave(&["simulate", f]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("makespan         26"), "{out}");
    // The same inputs and seed give the same file.
    let first = std::fs::read(&file).unwrap();
    pipeweave(&synthesize);
    assert_eq!(std::fs::read(&file).unwrap(), first);
    let (code, _, err) = pipeweave(&["compare", f, "dualpipe", "-p", "4", "-m", "8"]);
    assert_eq!(code, 0, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// On every shipped spec and placement the synthesized plan is no slower than the fastest
/// library schedule or plugin that places its stages alike within the same memory (the search
/// may start from that plan): within the spec's memory, and within what that schedule holds on
/// each rank (`--library-memory`); where none fits, the synthesized one still does.
#[test]
fn no_worse_than_the_library_on_every_shipped_spec() {
    let mut table = String::new();
    for spec in [
        "unit",
        "dense-70b-h100-pp8",
        "gpt2-1.3b-p100-32",
        "deepseek-v3-h800-pp16-ep64",
        "llama3.1-405b-h100-pp16",
    ] {
        for placement in [
            &["--placement", "loop"][..],
            &["--placement", "loop", "-v", "2"],
            &["--placement", "v"],
            &["--placement", "bidirectional"],
        ] {
            // Bounded by its budgets alone, never by the clock (a loaded machine's debug build
            // would otherwise cut the exact method at the default 10 s).
            let mut args = vec![
                "synthesize",
                "--spec",
                spec,
                "--evaluations",
                "100",
                "--time-limit",
                "10m",
                "--format",
                "json",
            ];
            args.extend_from_slice(placement);
            let (code, out, err) = pipeweave(&args);
            assert_eq!(code, 0, "{args:?}: {err}");
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            let makespan = v["makespan"].as_f64().unwrap();
            let library = &v["library"];
            let mut at_its_memory = String::new();
            if let Some(l) = library["makespan"].as_f64() {
                assert!(makespan <= l * (1.0 + 1e-9), "{args:?}: {makespan} > {l}");
                args.push("--library-memory");
                let (code, out, err) = pipeweave(&args);
                assert_eq!(code, 0, "{args:?}: {err}");
                let v: serde_json::Value = serde_json::from_str(&out).unwrap();
                let m = v["makespan"].as_f64().unwrap();
                assert!(m <= l * (1.0 + 1e-9), "{args:?}: {m} > {l}");
                at_its_memory = format!(", {m:.6} at its memory");
            }
            table.push_str(&format!(
                "{spec} {}: {:.6}{at_its_memory} against {} {}\n",
                placement.join(" "),
                makespan,
                library["schedule"],
                library["makespan"]
                    .as_f64()
                    .map_or("-".into(), |l| format!("{l:.6}"))
            ));
        }
    }
    // The rows stand as the search finds them with its fixed seed and budget.
    insta::assert_snapshot!(table);
}

#[test]
fn errors_are_plain() {
    let mut text = String::new();
    for (args, expected) in [
        (&["synthesize"][..], 2),
        (
            &[
                "synthesize",
                "-p",
                "4",
                "-m",
                "8",
                "--placement",
                "v",
                "-v",
                "2",
            ],
            2,
        ),
        (
            &["synthesize", "-p", "4", "-m", "8", "--memory-limit", "40"],
            2,
        ),
        (
            &[
                "synthesize",
                "-p",
                "4",
                "-m",
                "8",
                "--placement",
                "v",
                "--activations",
                "1",
            ],
            1,
        ),
        (
            &[
                "synthesize",
                "-p",
                "4",
                "-m",
                "7",
                "--placement",
                "bidirectional",
            ],
            1,
        ),
        (
            &["synthesize", "-p", "4", "-m", "8", "--time-limit", "soon"],
            2,
        ),
        (&["synthesize", "-p", "300", "-m", "8"], 2),
        (
            &[
                "synthesize",
                "--spec",
                "dense-70b-h100-pp8",
                "--memory-limit",
                "1",
            ],
            1,
        ),
        (
            &[
                "synthesize",
                "--spec",
                "dense-70b-h100-pp8",
                "--memory-limit",
                "-3",
            ],
            2,
        ),
    ] {
        let (code, _, err) = pipeweave(args);
        assert_eq!(code, expected, "{args:?}: {err}");
        let first = err.lines().next().unwrap_or("");
        text.push_str(&format!("$ pipeweave {}\n{first}\n", args.join(" ")));
    }
    insta::assert_snapshot!(text);
}

/// `synth:PLACEMENT` names a synthesized schedule wherever a schedule goes: compared with the
/// library's, exported for PyTorch, swept; the same plan every run.
#[test]
fn synth_names_a_schedule_everywhere() {
    let costs = "F=1,I=1.5,W=0.5,transfer=0.25";
    let (code, out, err) = pipeweave(&[
        "compare", "synth:v", "zb-v", "-p", "4", "-m", "8", "--costs", costs,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("synth:v") && out.contains("zb-v"), "{out}");
    let export = ["export", "synth:v", "-p", "4", "-m", "8", "--to", "pytorch"];
    let (code, first, err) = pipeweave(&export);
    assert_eq!(code, 0, "{err}");
    let (_, second, _) = pipeweave(&export);
    assert_eq!(first, second, "the same plan every run");
    assert!(first.lines().count() >= 4);
    let (code, out, err) = pipeweave(&[
        "sweep",
        "synth:bidirectional",
        "dualpipe",
        "-p",
        "4",
        "--over",
        "microbatches=8,12",
        "--format",
        "csv",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("synth:bidirectional"), "{out}");
    let (code, _, err) = pipeweave(&["simulate", "synth:x", "-p", "4", "-m", "8"]);
    assert_eq!(code, 1, "an unknown name, as any schedule's");
    assert!(
        err.contains("one of `synth:loop`, `synth:v`, `synth:bidirectional`"),
        "{err}"
    );
    let (code, _, err) = pipeweave(&[
        "simulate",
        "synth:loop",
        "-p",
        "4",
        "-m",
        "8",
        "--set",
        "activations=0",
    ]);
    assert_eq!(code, 2, "{err}");
}

/// Under an address-space limit (`ulimit -v`, through `sh -c`) a synthesis too big for it is
/// refused before the work with an error naming the size (exit 1), where it aborted (exit 134):
/// `synth:loop` at P = 256, M = 340 under 60 MB, and `synthesize` itself. The limit is what the
/// binary needs to start here (a debug build maps more than a release one) and 32 MiB more, far
/// below the synthesis's 75 MiB.
#[test]
fn too_little_memory_is_an_error_naming_the_size() {
    let under = |kib: u64, args: &[&str]| {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_pipeweave"))
            .args(args)
            .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")))
            .env_remove("PIPEWEAVE_PLUGIN_PATH")
            .output()
            .expect("sh runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let start = (1..64)
        .map(|i| i * 16 * 1024)
        .find(|&kib| under(kib, &["--version"]).0 == 0)
        .expect("the binary starts within 1 GiB");
    for args in [
        &["simulate", "synth:loop", "-p", "256", "-m", "340"][..],
        &["synthesize", "-p", "256", "-m", "340"],
    ] {
        let (code, err) = under(start + 32 * 1024, args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(
            err.contains("out of memory: 75 MiB for the synthesis's tables could not be allocated"),
            "{args:?}: {err}"
        );
    }
}
