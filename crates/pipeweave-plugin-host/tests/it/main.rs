//! Loads the real plugins and the fault fixtures from the build directory, in this process and in
//! worker processes (`worker.rs`, with the crate's example worker).
//!
//! `cargo test` does not build `cdylib` crates: build the workspace first (`cargo build
//! --workspace`, as the test script does). A missing library fails with that hint.

mod worker;

use pipeweave_plan::{Action, Plan};
use pipeweave_plugin_host::{Origin, Plugin, PluginError, SearchPath, discover, find, load_named};
use std::path::{Path, PathBuf};

/// `target/<profile>`: the test binary lives in its `deps` folder.
pub(crate) fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(Path::parent).unwrap().to_path_buf()
}

fn search() -> SearchPath {
    let mut s = SearchPath::new();
    s.push(build_dir(), Origin::BuildDir);
    s
}

pub(crate) fn library(crate_lib_name: &str) -> PathBuf {
    let path = build_dir().join(libloading::library_filename(crate_lib_name));
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --workspace` before the tests",
        path.display()
    );
    path
}

fn plugin(name: &str) -> Plugin {
    library(&format!("pipeweave_plugin_{name}"));
    load_named(name, &search()).unwrap_or_else(|e| panic!("{e}"))
}

/// `--set` settings of a test case.
pub(crate) type Settings = &'static [(&'static str, &'static str)];

pub(crate) fn rows(plan: &Plan) -> Vec<String> {
    plan.programs()
        .iter()
        .map(|p| {
            p.iter()
                .map(Action::to_string)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect()
}

fn generate(
    name: &str,
    ranks: u32,
    mbs: u32,
    settings: &[(&str, &str)],
) -> Result<Plan, PluginError> {
    let p = plugin(name);
    let settings: Vec<(String, String)> = settings
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let request = p.request(ranks, mbs, &settings)?;
    p.generate(&request)
        .map(pipeweave_check::ValidPlan::into_plan)
}

/// The error text with the build directory replaced, for snapshots.
pub(crate) fn message(e: &PluginError) -> String {
    e.to_string()
        .replace(&build_dir().display().to_string(), "[BUILD]")
}

pub(crate) fn reference(path: &str) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/reference");
    std::fs::read_to_string(dir.join(path))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_three_plugins_describe_themselves() {
    let mut text = String::new();
    for name in ["chimera", "dualpipe", "dualpipev"] {
        let p = plugin(name);
        let m = p.metadata();
        text.push_str(&format!(
            "{} {}: {}\n  requires: {}\n",
            m.name, m.version, m.description, m.requires
        ));
        for param in &m.params {
            text.push_str(&format!(
                "  --set {}=<{}> default {} ({}): {}\n",
                param.name,
                param.ty,
                param.default_value(),
                param.ty.allowed(),
                param.help
            ));
        }
    }
    insta::assert_snapshot!(text);
}

/// Every reference vector the plugins reproduce: file, plugin, P, M, settings.
pub(crate) fn reference_cases() -> &'static [(&'static str, &'static str, u32, u32, Settings)] {
    &[
        ("dualpipe/dualpipe_pp4_n8.actions", "dualpipe", 4, 8, &[]),
        (
            "dualpipe/dualpipe_pp4_n8_noovl.actions",
            "dualpipe",
            4,
            8,
            &[("overlap", "false")],
        ),
        (
            "dualpipe/dualpipe_pp4_n8_nozb.actions",
            "dualpipe",
            4,
            8,
            &[("weight_split", "false")],
        ),
        (
            "dualpipe/dualpipe_pp4_n8_nozb_noovl.actions",
            "dualpipe",
            4,
            8,
            &[("weight_split", "false"), ("overlap", "false")],
        ),
        ("dualpipe/dualpipe_pp4_n16.actions", "dualpipe", 4, 16, &[]),
        ("dualpipe/dualpipe_pp8_n20.actions", "dualpipe", 8, 20, &[]),
        ("dualpipe/dualpipev_pp4_n8.actions", "dualpipev", 4, 8, &[]),
        (
            "dualpipe/dualpipev_pp4_n10.actions",
            "dualpipev",
            4,
            10,
            &[],
        ),
        (
            "dualpipe/dualpipev_pp4_n10_noovl.actions",
            "dualpipev",
            4,
            10,
            &[("overlap", "false")],
        ),
        (
            "dualpipe/dualpipev_pp4_n10_nozb.actions",
            "dualpipev",
            4,
            10,
            &[("weight_split", "false")],
        ),
        (
            "dualpipe/dualpipev_pp4_n10_nozb_noovl.actions",
            "dualpipev",
            4,
            10,
            &[("weight_split", "false"), ("overlap", "false")],
        ),
        ("torch/DualPipeV_v2_p4_m8.actions", "dualpipev", 4, 8, &[]),
        ("chimera/chimera_d4_n4_k2.actions", "chimera", 4, 4, &[]),
        (
            "chimera/chimera_d4_n8_k2.actions",
            "chimera",
            4,
            8,
            &[("pipelines", "2")],
        ),
        (
            "chimera/chimera_d8_n8_k4.actions",
            "chimera",
            8,
            8,
            &[("pipelines", "4")],
        ),
    ]
}

#[test]
fn plugins_reproduce_every_reference_vector() {
    let cases = reference_cases();
    for (file, name, ranks, mbs, settings) in cases {
        let plan = generate(name, *ranks, *mbs, settings).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(rows(&plan), reference(file), "{file}");
    }
}

#[test]
fn unmet_requirements_and_bad_settings_are_clean_errors() {
    let cases: &[(&str, u32, u32, Settings)] = &[
        ("dualpipe", 3, 8, &[]),
        ("dualpipe", 4, 6, &[]),
        ("dualpipev", 4, 7, &[]),
        ("chimera", 6, 12, &[("pipelines", "4")]),
        ("chimera", 4, 8, &[("pipelines", "3")]),
        ("chimera", 4, 6, &[("joins", "doubling")]),
        ("chimera", 4, 8, &[("doubling", "true")]),
        ("dualpipe", 4, 8, &[("overlap", "maybe")]),
        (
            "dualpipe",
            4,
            8,
            &[("overlap", "true"), ("overlap", "false")],
        ),
    ];
    let mut text = String::new();
    for (name, ranks, mbs, settings) in cases {
        let e = generate(name, *ranks, *mbs, settings).unwrap_err();
        assert!(
            matches!(
                e,
                PluginError::Refused { .. } | PluginError::BadSetting { .. }
            ),
            "{e:?}"
        );
        text.push_str(&format!(
            "{name} P={ranks} M={mbs} {settings:?}\n  {}\n",
            message(&e)
        ));
    }
    insta::assert_snapshot!(text);
}

fn load_fixture(lib: &str) -> Result<Plugin, PluginError> {
    Plugin::load(&library(lib))
}

#[test]
fn every_fault_fixture_gives_its_clean_error_and_the_process_survives() {
    let mut text = String::new();
    let record = |text: &mut String, what: &str, e: PluginError| {
        text.push_str(&format!("{what}:\n  {}\n", message(&e)));
    };

    // A panic inside the plugin, caught on its side.
    let p = load_fixture("pipeweave_fixture_panic").unwrap();
    let request = p.request(4, 8, &[]).unwrap();
    let e = p.generate(&request).unwrap_err();
    assert!(matches!(e, PluginError::Panicked { .. }), "{e:?}");
    record(&mut text, "panic", e);
    // The same library keeps working after a panic.
    assert!(matches!(
        p.generate(&request),
        Err(PluginError::Panicked { .. })
    ));

    let e = load_fixture("pipeweave_fixture_abi").unwrap_err();
    assert!(
        matches!(
            e,
            PluginError::AbiMismatch {
                found: 1001,
                expected: 1,
                ..
            }
        ),
        "{e:?}"
    );
    record(&mut text, "abi", e);

    let p = load_fixture("pipeweave_fixture_broken_plan").unwrap();
    let e = p.generate(&p.request(2, 1, &[]).unwrap()).unwrap_err();
    let PluginError::InvalidPlan { problems, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(problems.len(), 2, "one missing backward per stage");
    record(&mut text, "broken plan", e);

    let p = load_fixture("pipeweave_fixture_garbage").unwrap();
    let e = p.generate(&p.request(2, 2, &[]).unwrap()).unwrap_err();
    assert!(matches!(e, PluginError::Malformed { .. }), "{e:?}");
    record(&mut text, "garbage", e);

    let e = load_fixture("pipeweave_fixture_no_entry").unwrap_err();
    assert!(matches!(e, PluginError::MissingEntry { .. }), "{e:?}");
    record(&mut text, "no entry point", e);

    // Every pointer of the entry table is checked before anything is called through it.
    let e = load_fixture("pipeweave_fixture_null_entry").unwrap_err();
    assert!(
        matches!(&e, PluginError::NullFunction { field, .. } if field == "generate"),
        "{e:?}"
    );
    record(&mut text, "null generate", e);

    // A valid plan of another shape than asked for.
    let p = load_fixture("pipeweave_fixture_wrong_shape").unwrap();
    for wrong in ["0", "1", "2"] {
        let settings = [("wrong".to_owned(), wrong.to_owned())];
        let e = p
            .generate(&p.request(4, 8, &settings).unwrap())
            .unwrap_err();
        assert!(matches!(e, PluginError::WrongShape { .. }), "{e:?}");
        record(&mut text, &format!("wrong shape {wrong}"), e);
    }

    // Not a library at all: a text file with a plugin's name.
    let dir = std::env::temp_dir().join(format!("pipeweave-host-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fake = dir.join(pipeweave_plugin_host::file_name("fake"));
    std::fs::write(&fake, "this is not a shared library\n").unwrap();
    let mut fake_search = SearchPath::new();
    fake_search.push(dir.clone(), Origin::PluginDir);
    let e = load_named("fake", &fake_search).unwrap_err();
    assert!(matches!(e, PluginError::NotLoadable { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with(&format!("{} is not a loadable library: ", fake.display()))
    );
    text.push_str(
        "not a library:\n  [TMP]/libpipeweave_plugin_fake.so is not a loadable library: …\n",
    );
    std::fs::remove_dir_all(&dir).unwrap();

    let e = find("nothing-here", &search()).unwrap_err();
    assert!(matches!(e, PluginError::NotFound { .. }), "{e:?}");
    record(&mut text, "not found", e);

    let e = find("../etc/passwd", &search()).unwrap_err();
    record(&mut text, "bad name", e);

    insta::assert_snapshot!(text);
}

#[test]
fn discover_lists_the_plugins_and_hides_the_fixtures() {
    for name in ["chimera", "dualpipe", "dualpipev"] {
        plugin(name);
    }
    let names: Vec<String> = discover(&search()).into_iter().map(|f| f.name).collect();
    for name in ["chimera", "dualpipe", "dualpipev"] {
        assert!(names.iter().any(|n| n == name), "{names:?}");
    }
    assert!(
        !names
            .iter()
            .any(|n| n.contains("fault") || n.contains("fixture")),
        "{names:?}"
    );
}

/// A fresh folder of this test's own.
fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pipeweave-search-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_search_order_is_plugin_dir_env_exe_then_build_dir() {
    let dir = temp_dir("order");
    let (a, b) = (dir.join("a"), dir.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let env = std::env::join_paths([&a, &b]).unwrap();
    let s = SearchPath::standard(
        &[PathBuf::from("/flag")],
        Some(&env),
        Some(Path::new("/bin/dir/pipeweave")),
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let dirs: Vec<(PathBuf, Origin)> = s.dirs().map(|(d, o)| (d.to_path_buf(), o)).collect();
    assert_eq!(dirs[0], (PathBuf::from("/flag"), Origin::PluginDir));
    assert_eq!(dirs[1], (a, Origin::EnvPath));
    assert_eq!(dirs[2], (b, Origin::EnvPath));
    assert_eq!(dirs[3], (PathBuf::from("/bin/dir"), Origin::ExeDir));
    // The workspace's build folders (a path compiled in) are searched by debug builds only.
    if cfg!(debug_assertions) {
        assert_eq!(dirs.len(), 6);
        assert!(dirs[4].0.ends_with("target/debug") && dirs[4].1 == Origin::BuildDir);
        assert!(dirs[5].0.ends_with("target/release") && dirs[5].1 == Origin::BuildDir);
    } else {
        assert_eq!(dirs.len(), 4);
    }

    // The first directory holding the file wins.
    let mut s = SearchPath::new();
    s.push(PathBuf::from("/nonexistent/first"), Origin::PluginDir);
    s.push(build_dir(), Origin::BuildDir);
    assert_eq!(
        find("dualpipe", &s).unwrap(),
        library("pipeweave_plugin_dualpipe")
    );
}

#[test]
fn relative_entries_of_the_plugin_path_are_refused_and_named() {
    let dir = temp_dir("relative");
    let env = std::env::join_paths([
        Path::new("plugins"),
        &dir,
        Path::new("."),
        Path::new(""),
        Path::new("../x"),
    ])
    .unwrap();
    let s = SearchPath::standard(&[], Some(&env), None);
    let env_dirs: Vec<PathBuf> = s
        .dirs()
        .filter(|(_, o)| *o == Origin::EnvPath)
        .map(|(d, _)| d.to_path_buf())
        .collect();
    assert_eq!(env_dirs, std::slice::from_ref(&dir));
    let refused: Vec<&Path> = s.unsearched().iter().map(|u| u.entry.as_path()).collect();
    assert_eq!(
        refused,
        [Path::new("plugins"), Path::new("."), Path::new("../x")]
    );
    assert_eq!(
        s.warnings(),
        [
            "the PIPEWEAVE_PLUGIN_PATH entry `plugins` is not searched: only absolute paths are",
            "the PIPEWEAVE_PLUGIN_PATH entry `.` is not searched: only absolute paths are",
            "the PIPEWEAVE_PLUGIN_PATH entry `../x` is not searched: only absolute paths are",
        ]
    );
    // A plugin that is not found says which entries were not searched.
    let e = find("nothing-here", &s).unwrap_err();
    let text = e.to_string();
    assert!(
        text.ends_with(
            "; the PIPEWEAVE_PLUGIN_PATH entry `plugins` is not searched: only absolute paths are; the PIPEWEAVE_PLUGIN_PATH entry `.` is not searched: only absolute paths are; the PIPEWEAVE_PLUGIN_PATH entry `../x` is not searched: only absolute paths are"
        ),
        "{text}"
    );
    assert!(
        text.contains(&format!("{} (PIPEWEAVE_PLUGIN_PATH)", dir.display())),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Entries that are files, missing folders or too long are named as relative ones are, and a
/// plugin that is not found names the first three and counts the rest.
#[test]
fn plugin_path_entries_that_are_no_folders_are_refused_and_named() {
    let dir = temp_dir("no-folders");
    let file = dir.join("file");
    std::fs::write(&file, "").unwrap();
    let long = PathBuf::from(format!("/{}", "y".repeat(5000)));
    let env = std::env::join_paths([
        file.clone(),
        dir.join("missing"),
        long,
        PathBuf::from("rel"),
        dir.clone(),
    ])
    .unwrap();
    let s = SearchPath::standard(&[], Some(&env), None);
    let text = find("nothing-here", &s).unwrap_err().to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    let shown = dir.display().to_string();
    let text = text.replace(&shown, "[TMP]");
    assert!(
        text.ends_with(&format!(
            "; the PIPEWEAVE_PLUGIN_PATH entry `[TMP]/file` is not searched: it is not a folder\
             ; the PIPEWEAVE_PLUGIN_PATH entry `[TMP]/missing` is not searched: there is no such folder\
             ; the PIPEWEAVE_PLUGIN_PATH entry `/{}… (5001 bytes)` is not searched: it is longer than 4096 bytes\
             ; 1 more entry of PIPEWEAVE_PLUGIN_PATH is not searched",
            "y".repeat(79)
        )),
        "{text}"
    );
    assert!(text.contains("[TMP] (PIPEWEAVE_PLUGIN_PATH)"), "{text}");
}

#[test]
fn plans_from_plugins_simulate_with_the_published_bubble() {
    let plan = generate("dualpipe", 8, 20, &[]).unwrap();
    let plan = pipeweave_check::validate(plan).expect("the host returns valid plans");
    let t = pipeweave_sim::simulate(&plan, &pipeweave_sim::UnitCosts).unwrap();
    assert_eq!(t.timing.makespan, 66.0);
    assert!(t.ranks.iter().all(|r| r.idle == 6.0));
}
