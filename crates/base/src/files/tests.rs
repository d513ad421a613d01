use std::os::unix::fs::{PermissionsExt, symlink};

use super::*;

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// A directory with `victim` (a file rounds must never touch) and `outside/` (a directory it
/// must never write into).
fn scene() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    (dir, victim, outside)
}

#[test]
fn files_and_directories_are_private() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/t.jsonl");
    create_private(&path).unwrap();
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&dir.path().join("a/b")), 0o700);
    assert_eq!(mode(&dir.path().join("a")), 0o700);
    write_private(&dir.path().join("c/page.html"), b"<p>").unwrap();
    assert_eq!(read(&dir.path().join("c/page.html")), "<p>");
    assert_eq!(mode(&dir.path().join("c/page.html")), 0o600);
    // Nothing but the file is left beside it (no temp file).
    let names: Vec<_> = std::fs::read_dir(dir.path().join("c")).unwrap().collect();
    assert_eq!(names.len(), 1);
}

#[test]
fn a_symlink_in_any_component_is_refused_and_the_control_follows_it() {
    let (dir, _victim, outside) = scene();
    let root = dir.path();
    std::fs::create_dir(root.join("real")).unwrap();
    symlink(&outside, root.join("real/link")).unwrap();
    symlink(&outside, root.join("top")).unwrap();
    for hostile in [
        "real/link/t.jsonl",
        "real/link/new/t.jsonl",
        "top/t.jsonl",
        "top/../t",
    ] {
        let path = root.join(hostile);
        let err = create_private(&path).unwrap_err();
        assert!(
            err.to_string().contains("symbolic link"),
            "{hostile}: {err}"
        );
        assert!(err.to_string().contains("link") || err.to_string().contains("top"));
        let err = Target::new(&path).and_then(|t| t.append()).unwrap_err();
        assert!(
            err.to_string().contains("symbolic link"),
            "{hostile}: {err}"
        );
        let err = write_private(&path, b"x").unwrap_err();
        assert!(
            err.to_string().contains("symbolic link"),
            "{hostile}: {err}"
        );
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    // The control: a plain create follows the link and writes outside.
    std::fs::write(root.join("real/link/t.jsonl"), "x").unwrap();
    assert!(outside.join("t.jsonl").exists());
}

#[test]
fn a_link_at_the_name_is_refused_or_replaced_never_written_through() {
    let (dir, victim, _) = scene();
    let root = dir.path();
    let soft = root.join("soft.jsonl");
    symlink(&victim, &soft).unwrap();
    let err = create_private(&soft).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    let err = Target::new(&soft).unwrap().append().unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(write_private(&soft, b"x").is_err());

    let hard = root.join("hard.jsonl");
    std::fs::hard_link(&victim, &hard).unwrap();
    // Created anew: the name now holds a new file, the victim is untouched.
    let mut f = create_private(&hard).unwrap();
    f.write_all(b"mine").unwrap();
    assert_eq!(read(&hard), "mine");
    assert_eq!(read(&victim), "precious");
    std::fs::hard_link(&victim, root.join("hard2")).unwrap();
    write_private(&root.join("hard2"), b"mine").unwrap();
    assert_eq!(read(&victim), "precious");
    // Appending through a hard link is refused.
    std::fs::hard_link(&victim, root.join("summary.md")).unwrap();
    let err = Target::new(&root.join("summary.md"))
        .unwrap()
        .append()
        .unwrap_err();
    assert!(err.to_string().contains("hard link"), "{err}");
    assert_eq!(read(&victim), "precious");

    // The controls: what a plain open does with the same links.
    std::fs::OpenOptions::new()
        .append(true)
        .open(root.join("summary.md"))
        .unwrap()
        .write_all(b" appended")
        .unwrap();
    assert_eq!(read(&victim), "precious appended");
    File::create(&soft).unwrap();
    assert_eq!(read(&victim), "");
}

#[test]
fn an_open_directory_stays_where_it_was_when_its_path_is_swapped() {
    let (dir, _victim, outside) = scene();
    let root = dir.path();
    let out = root.join("out");
    let kept = Dir::create_all(&out).unwrap();
    // A tool renames the directory away and plants a link to elsewhere in its place.
    std::fs::rename(&out, root.join("moved")).unwrap();
    symlink(&outside, &out).unwrap();
    let mut f = kept.target("t.jsonl").unwrap().create().unwrap();
    f.write_all(b"line").unwrap();
    kept.target("r.json").unwrap().write(b"{}").unwrap();
    let sub = kept.subdir(OsStr::new("t.outputs")).unwrap();
    sub.target("a.txt").unwrap().write(b"a").unwrap();
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(read(&root.join("moved/t.jsonl")), "line");
    assert_eq!(read(&root.join("moved/t.outputs/a.txt")), "a");
    // The control: writing by path goes where the link leads.
    std::fs::write(out.join("t.jsonl"), "x").unwrap();
    assert!(outside.join("t.jsonl").exists());
}

#[test]
fn a_renamed_directory_names_what_is_made_in_it_by_the_new_path() {
    let dir = tempfile::tempdir().unwrap();
    let opened = Dir::create_all(&dir.path().join("out")).unwrap();
    let named = Dir::renamed(opened, PathBuf::from("/shown/out"));
    let sub = named.subdir(OsStr::new("t.outputs")).unwrap();
    assert_eq!(sub.path(), Path::new("/shown/out/t.outputs"));
    let target = sub.target("a.txt").unwrap();
    assert_eq!(target.path(), Path::new("/shown/out/t.outputs/a.txt"));
    // The name is only a name: the file goes to the directory that was opened.
    target.write(b"a").unwrap();
    assert_eq!(read(&dir.path().join("out/t.outputs/a.txt")), "a");
}

#[test]
fn a_symlink_planted_as_a_subdirectory_is_refused() {
    let (dir, _victim, outside) = scene();
    let kept = Dir::create_all(dir.path()).unwrap();
    symlink(&outside, dir.path().join("t.outputs")).unwrap();
    let err = kept.subdir(OsStr::new("t.outputs")).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
}

#[test]
fn temp_directories_are_new_private_and_unpredictable() {
    let base = tempfile::tempdir().unwrap();
    let parent = Dir::create_all(base.path()).unwrap();
    let a = parent.unique("rounds-").unwrap();
    let b = parent.unique("rounds-").unwrap();
    assert_ne!(a.path(), b.path());
    assert_eq!(mode(a.path()), 0o700);
    let name = a.path().file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("rounds-") && name.len() == "rounds-".len() + 16);
    assert_ne!(a.identity().unwrap(), b.identity().unwrap());
}

#[test]
fn names_that_are_not_one_component_are_refused() {
    let base = tempfile::tempdir().unwrap();
    let dir = Dir::create_all(base.path()).unwrap();
    for bad in ["", ".", "..", "a/b", "/etc/passwd"] {
        assert!(dir.target(bad).is_err(), "{bad:?}");
        assert!(dir.subdir(OsStr::new(bad)).is_err(), "{bad:?}");
    }
}

#[test]
fn rename_new_never_replaces() {
    let base = tempfile::tempdir().unwrap();
    let dir = Dir::create_all(base.path()).unwrap();
    let attempts = dir.subdir(OsStr::new("attempts")).unwrap();
    dir.target("a").unwrap().write(b"1").unwrap();
    attempts.target("a.1").unwrap().write(b"old").unwrap();
    assert!(
        dir.rename_new(OsStr::new("a"), &attempts, OsStr::new("a.1"))
            .is_err()
    );
    dir.rename_new(OsStr::new("a"), &attempts, OsStr::new("a.2"))
        .unwrap();
    assert_eq!(read(&base.path().join("attempts/a.2")), "1");
    assert_eq!(read(&base.path().join("attempts/a.1")), "old");
}

#[test]
fn clearing_goes_through_the_handle_wherever_the_directory_went() {
    let (dir, victim, outside) = scene();
    let root = dir.path();
    std::fs::write(outside.join("theirs"), "keep").unwrap();
    let out = Dir::create_all(&root.join("out")).unwrap();
    out.target("a.txt").unwrap().write(b"saved").unwrap();
    std::fs::rename(root.join("out"), root.join("moved")).unwrap();
    symlink(&outside, root.join("out")).unwrap();
    out.clear();
    assert_eq!(std::fs::read_dir(root.join("moved")).unwrap().count(), 0);
    assert_eq!(read(&outside.join("theirs")), "keep");
    assert_eq!(read(&victim), "precious");
}
