//! Resolving names, declaring, building.

use crate::MemoryHost;
use pipeweave_param::ParamType;
use pipeweave_source::{
    Catalog, Failure, FailureKind, Files, FolderFile, Origin, Params, Setting, Source, SourceKind,
    library, load_spec, looks_like_path, plugins,
};

fn params(p: u32, m: u32) -> Params {
    Params {
        ranks: Some(p),
        microbatches: Some(m),
        ..Params::default()
    }
}

fn resolve(arg: &str, host: &mut MemoryHost, files: &mut Files) -> Source {
    Source::resolve(arg, host, files).unwrap_or_else(|f| panic!("{arg}: {f:?}"))
}

#[test]
fn names_resolve_in_order() {
    let mut host = MemoryHost::with(&[
        ("mine.weave", "stages P\nprogram { }\n"),
        ("plan.actions", "0F0,0B0\n"),
        ("plan.json", "{}"),
        // A file named like a library schedule is still the library schedule.
        ("1f1b", "0F0,0B0\n"),
    ]);
    let mut files = Files::default();
    let kinds: Vec<SourceKind> = [
        "1f1b",
        "mine.weave",
        "plugin:dualpipe",
        "plugin:lib/libdualpipe.so",
        "plan.actions",
        "plan.json",
        "dualpipe",
    ]
    .iter()
    .map(|a| resolve(a, &mut host, &mut files).kind())
    .collect();
    use SourceKind::*;
    assert_eq!(
        kinds,
        [
            Library, WeaveFile, Plugin, Plugin, PlanFile, PlanFile, Plugin
        ]
    );
    let err = Source::resolve("nothing", &mut host, &mut files).expect_err("unknown");
    assert_eq!(
        err,
        Failure::invalid("no schedule, plugin or plan file named `nothing`")
    );
    // A path is never looked up as a plugin's name.
    assert!(Source::resolve("lib/dualpipe", &mut host, &mut files).is_err());
    assert!(looks_like_path("a/b") && looks_like_path("libx.so") && !looks_like_path("zb-v"));
}

#[test]
fn sources_declare_parameters_and_requirements() {
    let mut host = MemoryHost::default();
    let mut files = Files::default();
    let dualpipev = resolve("dualpipev", &mut host, &mut files);
    let d = dualpipev.declared().expect("declares");
    // A requirement in the schedule's own words, never its condition.
    assert_eq!(d.requires, "DualPipeV needs M ≥ 2P micro-batches");
    assert_eq!(d.same_as_plugin.as_deref(), Some("dualpipev"));
    assert!(d.takes("overlap") && !d.takes("v"));
    assert_eq!(d.params[0].ty, ParamType::Bool);
    assert_eq!(d.params[0].default.as_deref(), Some("true"));
    // `v` is typed: at least 1.
    let interleaved = resolve("interleaved-1f1b", &mut host, &mut files);
    let d = interleaved.declared().expect("declares");
    assert!(d.takes("v"));
    assert_eq!(d.params[0].ty.to_string(), "int in 1..");
    assert_eq!(
        d.requires,
        "M must be a multiple of max(1, M / P), rounds here, as PyTorch requires"
    );
    let plugin = resolve("dualpipe", &mut host, &mut files);
    let d = plugin.declared().expect("declares");
    assert_eq!(d.requires, "an even number of ranks P");
    assert_eq!(d.params[0].ty, ParamType::Bool);
    assert_eq!(d.params[0].default.as_deref(), Some("true"));
    // Library and plugins, as `list` shows them.
    assert!(library().iter().any(|e| e.name == "zb-v"));
    let (entries, errors) = plugins(&mut host);
    assert_eq!(
        entries[0].origin,
        Origin::Plugin("lib/libdualpipe.so".into())
    );
    assert_eq!(entries[0].resolves_as, "dualpipe");
    assert_eq!(errors, ["a broken plugin"]);
}

#[test]
fn unreadable_and_broken_sources_resolve_and_fail_to_build() {
    let mut host = MemoryHost::default();
    let mut files = Files::default();
    for arg in ["missing.weave", "plugin:elsewhere"] {
        let s = resolve(arg, &mut host, &mut files);
        assert!(s.declared().is_none(), "{arg}");
        let f = s
            .build(&params(4, 8), &mut host, &mut files)
            .expect_err("no plan");
        assert_eq!(f.kind, FailureKind::Invalid, "{arg}");
    }
}

#[test]
fn building_checks_parameters() {
    let mut host = MemoryHost::with(&[("plan.actions", "0F0,0B0\n")]);
    let mut files = Files::default();
    let usage = |r: Result<_, Failure>| r.expect_err("usage").diagnostics[0].message.clone();
    let gpipe = resolve("gpipe", &mut host, &mut files);
    assert_eq!(
        usage(gpipe.build(&Params::default(), &mut host, &mut files)),
        "`gpipe` is a schedule: give --ranks/-p and --microbatches/-m"
    );
    let mut bad = params(4, 8);
    bad.settings.push("x=maybe".parse().expect("NAME=VALUE"));
    // A parameter the schedule does not declare is the command line's mistake, as for plugins.
    let f = gpipe.build(&bad, &mut host, &mut files).expect_err("usage");
    assert!(f.is_usage());
    assert_eq!(
        f.diagnostics[0].message,
        "gpipe: no parameter `x` (it takes no parameters)"
    );
    let interleaved = resolve("interleaved-1f1b", &mut host, &mut files);
    let mut bad = params(4, 8);
    bad.settings.push("v=maybe".parse().expect("NAME=VALUE"));
    assert_eq!(
        usage(interleaved.build(&bad, &mut host, &mut files)),
        "interleaved-1f1b: parameter `v` is an int (a whole number of at least 1), not `maybe`"
    );
    let mut bad = params(4, 8);
    bad.stages_per_rank = Some(2);
    assert_eq!(
        usage(gpipe.build(&bad, &mut host, &mut files)),
        "gpipe: -v sets the parameter `v`, which it does not have (it takes no parameters)"
    );
    // A broken file's parameters are not known: its errors come first, not a usage error.
    let mut broken_host = MemoryHost::with(&[("bad.weave", "stages P\nprogram { F B r2 }\n")]);
    let broken = resolve("bad.weave", &mut broken_host, &mut files);
    let f = broken
        .build(&bad, &mut broken_host, &mut files)
        .expect_err("a syntax error");
    assert_eq!(f.kind, FailureKind::Invalid);
    assert!(
        f.diagnostics[0].message.starts_with("expected an action"),
        "{}",
        f.diagnostics[0].message
    );
    // One rule for every schedule: the library's and the plugin's bools read alike.
    let dualpipev = resolve("dualpipev", &mut host, &mut files);
    let plugin = resolve("plugin:dualpipe", &mut host, &mut files);
    for (source, name) in [(&dualpipev, "dualpipev"), (&plugin, "dualpipe")] {
        for text in ["2", "1", "yes"] {
            let mut bad = params(4, 8);
            bad.settings.push(Setting {
                name: "overlap".into(),
                value: text.into(),
            });
            let f = source
                .build(&bad, &mut host, &mut files)
                .expect_err("refused");
            assert!(f.is_usage());
            assert_eq!(
                f.diagnostics[0].message,
                format!("{name}: parameter `overlap` is a bool (true or false), not `{text}`")
            );
        }
        let mut v = params(4, 8);
        v.stages_per_rank = Some(2);
        let f = source.build(&v, &mut host, &mut files).expect_err("no v");
        assert!(f.is_usage());
        assert!(
            f.diagnostics[0].message.starts_with(&format!(
                "{name}: -v sets the parameter `v`, which it does not have ("
            )),
            "{}",
            f.diagnostics[0].message
        );
    }
    let interleaved = resolve("interleaved-1f1b", &mut host, &mut files);
    let mut zero = params(4, 8);
    zero.stages_per_rank = Some(0);
    assert_eq!(
        usage(interleaved.build(&zero, &mut host, &mut files)),
        "interleaved-1f1b: parameter `v` is an int (a whole number of at least 1), not `0`"
    );
    let mut extra = params(4, 8);
    extra.settings.push("v=true".parse().expect("NAME=VALUE"));
    assert_eq!(
        usage(interleaved.build(&extra, &mut host, &mut files)),
        "interleaved-1f1b: parameter `v` is an int (a whole number of at least 1), not `true`"
    );
    let file = resolve("plan.actions", &mut host, &mut files);
    let f = file
        .build(&params(4, 8), &mut host, &mut files)
        .expect_err("usage");
    assert!(f.is_usage() && f.exit_code() == 2);
    let built = file
        .build(&Params::default(), &mut host, &mut files)
        .expect("builds");
    assert_eq!(built.name, "plan.actions");
    assert!(built.origins.is_some());
    let plugin = resolve("plugin:dualpipe", &mut host, &mut files);
    let f = plugin
        .build(&Params::default(), &mut host, &mut files)
        .expect_err("no P");
    assert_eq!(
        f.diagnostics[0].message,
        "the plugin schedule `dualpipe` needs --ranks/-p (requires: an even number of ranks P)"
    );
    let mut plain = params(4, 8);
    plain.settings.push(Setting {
        name: "overlap".into(),
        value: "false".into(),
    });
    let built = plugin.build(&plain, &mut host, &mut files).expect("builds");
    assert_eq!(built.name, "plugin:dualpipe");
    assert_eq!(
        host.requests[0].settings,
        [("overlap".into(), "false".into())]
    );
    assert_eq!(
        "overlap".parse::<Setting>().expect_err("no =").to_string(),
        "--set expects NAME=VALUE, found `overlap`"
    );
}

#[test]
/// A plugin's invalid plan is refused by the host's validation, with the problems.
fn a_plugins_invalid_plan_is_refused() {
    let mut host = MemoryHost::default();
    let mut files = Files::default();
    let plugin = resolve("plugin:dualpipe", &mut host, &mut files);
    let mut reverse = params(4, 8);
    reverse.settings.push(Setting {
        name: "reverse".into(),
        value: "true".into(),
    });
    let f = plugin
        .build(&reverse, &mut host, &mut files)
        .expect_err("invalid");
    assert_eq!(f.kind, FailureKind::Invalid);
    assert!(f.reason().starts_with("rank 0, action 1"), "{}", f.reason());
}

#[test]
fn failures_point_into_the_files_read() {
    let mut host = MemoryHost::with(&[("deadlock.actions", "0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n")]);
    let mut files = Files::default();
    let s = resolve("deadlock.actions", &mut host, &mut files);
    let f = s
        .build(&Params::default(), &mut host, &mut files)
        .expect_err("deadlocks");
    let span = f.diagnostics[0].span.clone().expect("a place");
    assert_eq!(files.name(span.file), Some("deadlock.actions"));
    assert!(f.reason().contains("deadlocks"), "{}", f.reason());
    // A requirement of a schedule is a diagnostic in the library file.
    let dualpipev = resolve("dualpipev", &mut host, &mut files);
    let f = dualpipev
        .build(&params(4, 4), &mut host, &mut files)
        .expect_err("M < 2P");
    assert_eq!(
        f.reason(),
        "DualPipeV needs M ≥ 2P micro-batches (with P = 4, M = 4, weight_split = true, overlap = true)"
    );
    let span = f.diagnostics[0].span.clone().expect("a place");
    assert_eq!(files.name(span.file), Some("schedules/dualpipev.weave"));
}

#[test]
fn specs_by_file_and_by_name() {
    let unit = pipeweave_spec::shipped_spec("unit")
        .expect("shipped")
        .source;
    let mut host = MemoryHost::with(&[("my.toml", unit)]);
    let mut files = Files::default();
    let by_file = load_spec("my.toml", &mut host, &mut files).expect("file");
    let by_name = load_spec("unit", &mut host, &mut files).expect("name");
    // The same spec, read from two files.
    assert_eq!(by_file.spec.parallelism, by_name.spec.parallelism);
    assert_eq!(by_file.spec.model, by_name.spec.model);
    let names: Vec<&str> = files.iter().map(|(_, name, _)| name).collect();
    assert_eq!(names, ["my.toml", "specs/unit.toml"]);
    assert!(
        load_spec("default", &mut host, &mut files)
            .expect("default")
            .default
    );
    let f = load_spec("nowhere", &mut host, &mut files).expect_err("unknown");
    assert!(
        f.reason()
            .starts_with("no spec file or shipped spec named `nowhere`")
    );
    let bad = load_spec(
        "bad.toml",
        &mut MemoryHost::with(&[("bad.toml", "[x")]),
        &mut files,
    );
    assert!(!bad.expect_err("syntax").diagnostics.is_empty());
}

#[test]
fn schedule_folders_come_after_the_library_and_before_plugins() {
    let mut host = MemoryHost::with(&[
        (
            "a/mine.weave",
            "doc \"mine\"\nstages P\nprogram { repeat M { F } repeat M { B } }\n",
        ),
        (
            "a/1f1b.weave",
            "doc \"not the library's\"\nstages P\nprogram { }\n",
        ),
        (
            "b/mine.weave",
            "doc \"a second mine\"\nstages P\nprogram { }\n",
        ),
        (
            "b/dualpipe.weave",
            "doc \"shadows the plugin's name\"\nstages P\nprogram { repeat M { F } repeat M { B } }\n",
        ),
    ]);
    host.folders = [
        "a/mine.weave",
        "a/1f1b.weave",
        "b/mine.weave",
        "b/dualpipe.weave",
    ]
    .iter()
    .map(|path| FolderFile {
        name: path[2..].trim_end_matches(".weave").to_owned(),
        path: (*path).to_owned(),
    })
    .collect();
    let mut files = Files::default();
    let kind = |arg: &str, host: &mut MemoryHost, files: &mut Files| {
        let s = resolve(arg, host, files);
        (s.kind(), s.declared().map(|d| d.description.clone()))
    };
    use SourceKind::*;
    assert_eq!(
        kind("mine", &mut host, &mut files),
        (Folder, Some("mine".to_owned()))
    );
    assert_eq!(kind("1f1b", &mut host, &mut files).0, Library);
    assert_eq!(
        kind("dualpipe", &mut host, &mut files),
        (Folder, Some("shadows the plugin's name".to_owned()))
    );
    assert_eq!(kind("plugin:dualpipe", &mut host, &mut files).0, Plugin);
    let built = resolve("mine", &mut host, &mut files)
        .build(&params(2, 2), &mut host, &mut files)
        .expect("builds");
    assert_eq!(built.name, "mine");
    let catalog = Catalog::read(&mut host);
    let folder: Vec<(&str, &str)> = catalog
        .entries
        .iter()
        .filter(|e| matches!(e.origin, Origin::Folder(_)))
        .map(|e| (e.name.as_str(), e.resolves_as.as_str()))
        .collect();
    assert_eq!(folder, [("mine", "mine"), ("dualpipe", "dualpipe")]);
    let plugin = catalog
        .entries
        .iter()
        .find(|e| matches!(e.origin, Origin::Plugin(_)))
        .expect("the plugin");
    assert_eq!(plugin.resolves_as, "plugin:dualpipe");
    let shadowed: Vec<(&str, &str)> = catalog
        .shadowed
        .iter()
        .map(|s| (s.path.as_str(), s.by.as_str()))
        .collect();
    assert_eq!(
        shadowed,
        [
            ("a/1f1b.weave", "the library's 1f1b"),
            ("b/mine.weave", "a/mine.weave")
        ]
    );
    assert_eq!(catalog.errors, ["a broken plugin"]);
}

/// `-` is standard input: a plan file whose form its text tells (JSON starts with `{`), named
/// `<stdin>` in messages.
#[test]
fn a_dash_is_a_plan_file_on_standard_input() {
    let mut files = Files::default();
    for (text, ranks) in [("0F0,0B0\n1F0,1B0\n", 2), ("{ \"format\": 1 }", 0)] {
        let mut host = MemoryHost::with(&[("-", text)]);
        let source = resolve("-", &mut host, &mut files);
        assert_eq!(source.kind(), SourceKind::PlanFile);
        match source.build(&Params::default(), &mut host, &mut files) {
            Ok(built) => {
                assert_eq!(
                    (built.plan.ranks(), built.name.as_str()),
                    (ranks, "<stdin>")
                );
            }
            // Read as JSON: the reader's own complaint, not the actions reader's.
            Err(f) => assert!(f.reason().contains("pipeweave plan"), "{f:?}"),
        }
    }
}

/// A row that could not run says where, for a file the user wrote (before: "not run: unknown name
/// `r2`" without the file or the line).
#[test]
fn located_reasons() {
    let mut host = MemoryHost::with(&[("bad.weave", "stages P\nprogram { F B r2 }\n")]);
    let mut files = Files::default();
    let source = resolve("bad.weave", &mut host, &mut files);
    let f = source
        .build(&params(4, 8), &mut host, &mut files)
        .expect_err("a syntax error");
    let reason = f.located_reason(&files);
    assert!(
        reason.starts_with("bad.weave:2:15: expected an action"),
        "{reason}"
    );
    assert_eq!(
        Failure::invalid("no place").located_reason(&files),
        "no place"
    );
}

/// `synth:PLACEMENT` is a schedule synthesized for the placement under unit costs: it declares
/// its parameters, builds the plan `pipeweave-synth` finds (the same every time), keeps within its
/// activation limit, and refuses what it cannot take in words.
#[test]
fn synthesized_schedules() {
    let mut host = MemoryHost::default();
    let mut files = Files::default();
    let v = resolve("synth:v", &mut host, &mut files);
    assert_eq!(v.kind(), SourceKind::Synthesized);
    let d = v.declared().expect("declares");
    let names: Vec<&str> = d.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["activations", "evaluations", "seed", "weight_split"]
    );
    assert_eq!(d.params[0].default.as_deref(), Some("2 * P"));
    let build = |source: &Source, p: Params, host: &mut MemoryHost, files: &mut Files| {
        source.build(&p, host, files)
    };
    let built = build(&v, params(4, 8), &mut host, &mut files).expect("builds");
    let again = build(&v, params(4, 8), &mut host, &mut files).expect("builds");
    assert_eq!(built.plan.plan(), again.plan.plan());
    assert_eq!(built.name, "synth:v");
    // ZB-V's makespan under unit costs at its memory, 2P per rank: 6M + P − 1.
    let t = pipeweave_sim::simulate(&built.plan, &pipeweave_sim::UnitCosts).unwrap();
    assert_eq!(t.timing.makespan, 51.0);
    // Half the memory: every rank within it, and slower.
    let mut half = params(4, 8);
    half.settings = vec!["activations=4".parse::<Setting>().unwrap()];
    let built = build(&v, half, &mut host, &mut files).expect("builds");
    for r in 0..4 {
        assert!(pipeweave_sim::live_activations(built.plan.program(r)).peak <= 4);
    }
    assert!(
        pipeweave_sim::simulate(&built.plan, &pipeweave_sim::UnitCosts)
            .unwrap()
            .timing
            .makespan
            > 51.0
    );
    // The loop takes -v, two pipelines take pairs.
    let looped = resolve("synth:loop", &mut host, &mut files);
    let mut p = params(4, 8);
    p.stages_per_rank = Some(2);
    let built = build(&looped, p, &mut host, &mut files).expect("builds");
    assert_eq!(built.plan.num_stages(), 8);
    let two = resolve("synth:bidirectional", &mut host, &mut files);
    assert!(two.declared().expect("declares").takes("pairs"));
    assert_eq!(
        build(&two, params(4, 8), &mut host, &mut files)
            .expect("builds")
            .plan
            .pipelines()
            .len(),
        2
    );
    // What it cannot take, in words.
    let err = Source::resolve("synth:w", &mut host, &mut files).expect_err("no such placement");
    assert_eq!(err.kind, FailureKind::Invalid);
    assert!(
        err.reason()
            .contains("`synth:loop`, `synth:v`, `synth:bidirectional`")
    );
    let err = build(&v, Params::default(), &mut host, &mut files).expect_err("no P or M");
    assert_eq!(
        err,
        Failure::usage(
            "`synth:v` is a synthesized schedule: give --ranks/-p and --microbatches/-m"
        )
    );
    let mut p = params(4, 8);
    p.settings = vec!["pairs=true".parse::<Setting>().unwrap()];
    let err = build(&v, p, &mut host, &mut files).expect_err("no pairs in a V");
    assert_eq!(err.kind, FailureKind::Usage);
    assert!(
        err.reason().contains("no parameter `pairs`"),
        "{}",
        err.reason()
    );
    let err = build(&two, params(4, 7), &mut host, &mut files).expect_err("M odd");
    assert_eq!(err.kind, FailureKind::Invalid);
    assert!(err.reason().contains("M must be even"), "{}", err.reason());
    let mut p = params(4, 8);
    p.settings = vec!["activations=1".parse::<Setting>().unwrap()];
    let err = build(&v, p, &mut host, &mut files).expect_err("too little memory");
    assert_eq!(err.kind, FailureKind::Invalid);
}

/// Names are shown as they are kept: a plan file's path with control characters names its plan
/// with their pictures, and a folder file whose name holds one is not a schedule name (its
/// error, printed as it is, holds none either).
#[test]
fn names_with_control_characters_are_never_shown_as_they_are() {
    let plan = "clear\u{1b}[2J.actions";
    let mut host = MemoryHost::with(&[
        (plan, "0F0,0B0\n"),
        ("a/ring\u{7}.weave", "stages P\nprogram { }\n"),
    ]);
    host.folders = vec![FolderFile {
        name: "ring\u{7}".to_owned(),
        path: "a/ring\u{7}.weave".to_owned(),
    }];
    let mut files = Files::default();
    let source = resolve(plan, &mut host, &mut files);
    assert_eq!(source.name(), "clear␛[2J.actions");
    let built = source
        .build(&Params::default(), &mut host, &mut files)
        .expect("builds");
    assert_eq!(built.name, "clear␛[2J.actions");
    let catalog = Catalog::read(&mut host);
    assert!(!catalog.entries.iter().any(|e| e.name.contains('\u{7}')));
    assert_eq!(
        catalog.errors,
        [
            "`a/ring␇.weave` is not a schedule name: it holds a control character (U+0007); rename the file",
            "a broken plugin"
        ]
    );
}
