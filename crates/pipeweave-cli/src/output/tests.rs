use super::*;

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("pipeweave-output-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("a folder")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn a_file_is_replaced_whole_and_keeps_its_permissions() {
    let dir = scratch("replace");
    let target = dir.join("plan.actions");
    write_file(&target, b"first\n").expect("writes");
    assert_eq!(std::fs::read(&target).expect("reads"), b"first\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        write_file(&target, b"second\n").expect("writes");
        let mode = std::fs::metadata(&target)
            .expect("exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640);
    }
    assert_eq!(std::fs::read(&target).expect("reads"), b"second\n");
    // Nothing but the target is left in the folder.
    assert_eq!(entries(&dir), ["plan.actions"]);
    std::fs::remove_dir_all(&dir).expect("cleans up");
}

#[cfg(unix)]
#[test]
fn a_link_is_followed() {
    let dir = scratch("link");
    let real = dir.join("real.svg");
    std::fs::write(&real, "old").expect("writes");
    std::os::unix::fs::symlink("real.svg", dir.join("link.svg")).expect("links");
    write_file(&dir.join("link.svg"), b"new").expect("writes");
    assert_eq!(std::fs::read_to_string(&real).expect("reads"), "new");
    let link = std::fs::symlink_metadata(dir.join("link.svg")).expect("exists");
    assert!(link.file_type().is_symlink());
    std::fs::remove_dir_all(&dir).expect("cleans up");
}

#[test]
fn folders_and_unwritable_places_are_errors_that_leave_nothing() {
    let dir = scratch("refuse");
    let err = write_file(&dir, b"x").expect_err("a folder");
    assert_eq!(err.to_string(), "it is a folder");
    let err = write_file(&dir.join("missing/x.svg"), b"x").expect_err("no such folder");
    assert!(
        err.to_string().starts_with("cannot create a file in `"),
        "{err}"
    );
    assert!(!err.to_string().contains("at path"), "{err}");
    assert!(entries(&dir).is_empty());
    std::fs::remove_dir_all(&dir).expect("cleans up");
}

#[cfg(target_os = "linux")]
#[test]
fn devices_are_written_in_place() {
    write_file(Path::new("/dev/null"), b"into the void").expect("writes");
    let err = write_file(Path::new("/dev/full"), b"x").expect_err("a full disk");
    assert_eq!(err.kind(), ErrorKind::StorageFull);
}
