use std::os::unix::fs::symlink;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;

use super::testing::{mkfifo, workspace, write};
use super::*;

fn outside(p: &str) -> PathError {
    PathError::Outside(p.to_owned())
}

fn symlink_outside(p: &str) -> PathError {
    PathError::SymlinkOutside(p.to_owned())
}

#[test]
fn new_refuses_missing_dir_and_file() {
    let (_dir, root, _ws) = workspace();
    write(&root, "f", "x");
    let missing = Workspace::new(&root.join("nope")).unwrap_err();
    assert_eq!(
        missing.to_string(),
        format!("workspace directory {:?} does not exist", root.join("nope"))
    );
    assert!(matches!(
        Workspace::new(&root.join("f")),
        Err(WorkspaceError::NotADirectory(_))
    ));
}

#[test]
fn relative_normalizes_lexically() {
    let (_dir, root, ws) = workspace();
    assert_eq!(ws.relative("src/a.rs"), Ok(PathBuf::from("src/a.rs")));
    assert_eq!(ws.relative("./src/./a.rs"), Ok(PathBuf::from("src/a.rs")));
    assert_eq!(ws.relative("src/x/../a.rs"), Ok(PathBuf::from("src/a.rs")));
    assert_eq!(ws.relative(""), Ok(PathBuf::new()));
    assert_eq!(ws.relative("."), Ok(PathBuf::new()));
    let abs = root.join("src/a.rs");
    assert_eq!(
        ws.relative(abs.to_str().unwrap()),
        Ok(PathBuf::from("src/a.rs"))
    );
    assert_eq!(ws.relative(root.to_str().unwrap()), Ok(PathBuf::new()));
    assert_eq!(
        ws.subject("./src//a.rs"),
        Some(Subject::Path("src/a.rs".to_owned()))
    );
    assert_eq!(ws.subject("."), Some(Subject::Path(".".to_owned())));
    assert_eq!(ws.subject("../x"), None);
}

#[test]
fn shell_targets_are_where_the_kernel_would_open_them() {
    let (dir, root, ws) = workspace();
    let outside_dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(outside_dir.path().join("deep")).unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    symlink(outside_dir.path().join("deep"), root.join("out")).unwrap();
    symlink(outside_dir.path().join("gone"), root.join("dangling")).unwrap();
    symlink(root.join("sub"), root.join("in")).unwrap();
    let target = |p: &str| ws.shell_target(p);
    let at = |written: &str, real: &str| Some((written.to_owned(), real.to_owned()));
    assert_eq!(target("new.txt"), at("new.txt", "new.txt"));
    assert_eq!(target("./sub/new.txt"), at("sub/new.txt", "sub/new.txt"));
    // Written through a link, it leads to the link's target: rules see both.
    assert_eq!(target("in/x"), at("in/x", "sub/x"));
    let abs = root.join("sub/x");
    assert_eq!(target(abs.to_str().unwrap()), at("sub/x", "sub/x"));
    // Lexically these stay inside; the kernel follows the link first.
    for escape in ["out/x", "out/../x", "dangling", "../x", "/etc/passwd"] {
        assert_eq!(target(escape), None, "{escape}");
    }
    drop(dir);
}

/// Issue 12 §5 and 17 §4: where a path leads is what the allowlist must judge too. Each row is
/// a path as written and where the kernel would open it (`None`: outside, or not resolvable).
#[test]
fn locate_follows_symlinks_as_the_kernel_would() {
    let (dir, root, ws) = workspace();
    let outside_dir = tempfile::tempdir().unwrap();
    let out = outside_dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(out.join("sub")).unwrap();
    write(&root, "secrets/key", "k");
    write(&root, ".env", "e");
    write(&root, "src/main.rs", "");
    symlink("../secrets", root.join("src/docs")).unwrap();
    symlink(".env", root.join("settings")).unwrap();
    symlink(out.join("sub"), root.join("src/deep")).unwrap();
    symlink(&out, root.join("src/out")).unwrap();
    symlink("nowhere", root.join("dangling")).unwrap();
    symlink("loop", root.join("loop")).unwrap();
    let abs = root.join("src/main.rs");
    let climb = format!("src/{}{}", "../".repeat(20), &out.to_str().unwrap()[1..]);
    let table: &[(&str, Option<&str>)] = &[
        ("src/main.rs", Some("src/main.rs")),
        ("./src//main.rs", Some("src/main.rs")),
        (abs.to_str().unwrap(), Some("src/main.rs")),
        (".", Some(".")),
        ("src/new/file.rs", Some("src/new/file.rs")),
        ("src/docs/key", Some("secrets/key")),
        ("src/docs/new", Some("secrets/new")),
        ("src/docs", Some("secrets")),
        ("settings", Some(".env")),
        // `..` after a symlink climbs from where it leads: `src/docs/..` is the root.
        ("src/docs/../src/main.rs", Some("src/main.rs")),
        ("src/docs/../../x", None),
        ("src/deep/../sub", None),
        ("src/out", None),
        ("src/out/x", None),
        ("src/../../x", None),
        (&climb, None),
        ("/etc", None),
        ("dangling", None),
        ("loop", None),
    ];
    for (path, want) in table {
        assert_eq!(ws.locate(path).as_deref(), *want, "{path}");
    }
    drop(dir);
}

#[test]
fn dotdot_escapes_are_refused() {
    let (_dir, _root, ws) = workspace();
    for p in ["../x", "a/../../x", "..", "./.."] {
        assert_eq!(ws.relative(p), Err(outside(p)), "{p}");
        assert_eq!(ws.resolve(p), Err(outside(p)), "{p}");
    }
    assert_eq!(
        ws.resolve("../x").unwrap_err().to_string(),
        r#"path "../x" is outside the workspace"#
    );
}

#[test]
fn absolute_paths_outside_refused_inside_accepted() {
    let (_dir, root, ws) = workspace();
    write(&root, "a.txt", "hi");
    assert_eq!(ws.resolve("/etc/passwd"), Err(outside("/etc/passwd")));
    let sneaky = format!("{}/../x", root.display());
    assert_eq!(ws.resolve(&sneaky), Err(outside(&sneaky)));
    let inside = root.join("a.txt");
    assert_eq!(ws.resolve(inside.to_str().unwrap()), Ok(inside.clone()));
    assert_eq!(ws.display(&inside), "a.txt");
    assert_eq!(ws.display(&root), ".");
}

#[test]
fn prefix_look_alike_sibling_is_refused() {
    let parent = tempfile::tempdir().unwrap();
    let parent = parent.path().canonicalize().unwrap();
    let root = parent.join("ws");
    let evil = parent.join("ws-evil");
    std::fs::create_dir(&root).unwrap();
    write(&evil, "f", "secret");
    let ws = Workspace::new(&root).unwrap();
    let abs = evil.join("f").to_str().unwrap().to_owned();
    assert_eq!(ws.resolve(&abs), Err(outside(&abs)));
    assert_eq!(ws.resolve("../ws-evil/f"), Err(outside("../ws-evil/f")));
    // And through a symlink, where only the component-wise check can tell.
    symlink(&evil, root.join("l")).unwrap();
    assert_eq!(ws.resolve("l/f"), Err(symlink_outside("l/f")));
}

#[test]
fn symlinks_escaping_are_refused() {
    let (_dir, root, ws) = workspace();
    let out = tempfile::tempdir().unwrap();
    let out = out.path().canonicalize().unwrap();
    write(&out, "secret", "s");
    symlink(out.join("secret"), root.join("file-link")).unwrap();
    symlink(&out, root.join("dir-link")).unwrap();
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    symlink(&out, root.join("a/b/deep-link")).unwrap();
    for p in [
        "file-link",
        "dir-link/secret",
        "a/b/deep-link/secret",
        "dir-link",
    ] {
        assert_eq!(ws.resolve(p), Err(symlink_outside(p)), "{p}");
    }
    // A missing name behind an escaping link gets the same answer as an existing one.
    assert_eq!(
        ws.resolve("dir-link/nope"),
        Err(symlink_outside("dir-link/nope"))
    );
    assert_eq!(
        ws.open_file("file-link").unwrap_err().to_string(),
        r#"path "file-link" resolves outside the workspace (symlink)"#
    );
}

#[test]
fn dangling_and_missing_are_refused() {
    let (_dir, root, ws) = workspace();
    symlink(root.join("nowhere"), root.join("dangling")).unwrap();
    assert_eq!(
        ws.resolve("dangling"),
        Err(PathError::BrokenSymlink("dangling".to_owned()))
    );
    assert_eq!(
        ws.resolve("a.txt").unwrap_err().to_string(),
        r#"no such file or directory: "a.txt""#
    );
}

#[test]
fn symlink_inside_pointing_inside_is_accepted() {
    let (_dir, root, ws) = workspace();
    write(&root, "real/f.txt", "hello");
    symlink("real", root.join("alias")).unwrap();
    symlink("real/f.txt", root.join("f-link")).unwrap();
    assert_eq!(ws.resolve("alias/f.txt"), Ok(root.join("real/f.txt")));
    let (mut file, real) = ws.open_file("f-link").unwrap();
    assert_eq!(real, root.join("real/f.txt"));
    let mut text = String::new();
    io::Read::read_to_string(&mut file, &mut text).unwrap();
    assert_eq!(text, "hello");
}

#[test]
fn fifo_is_refused_without_blocking() {
    let (_dir, root, ws) = workspace();
    mkfifo(&root.join("fifo"));
    let started = Instant::now();
    let err = ws.open_file("fifo").unwrap_err();
    assert_eq!(
        err.to_string(),
        r#""fifo" is not a regular file (it is a FIFO)"#
    );
    // Past the lstat pre-check too: the open itself must not block and fstat must refuse.
    let err = ws.open_checked(&root.join("fifo"), "fifo").unwrap_err();
    assert!(matches!(
        err,
        PathError::NotRegularFile { kind: "a FIFO", .. }
    ));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn opening_a_fifo_does_not_block() {
    // The case the lstat pre-check cannot cover: a FIFO swapped in just before the open.
    let (_dir, root, _ws) = workspace();
    let fifo = root.join("fifo");
    mkfifo(&fifo);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(open_nofollow(&fifo, 0).is_ok()));
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(true));
}

#[test]
fn directory_is_refused_by_open_file() {
    let (_dir, root, ws) = workspace();
    std::fs::create_dir(root.join("d")).unwrap();
    assert_eq!(
        ws.open_file("d").unwrap_err().to_string(),
        r#""d" is not a regular file (it is a directory)"#
    );
}

#[test]
fn opened_handle_outside_is_refused() {
    // Simulates a directory swapped for a symlink after `resolve`: the path handed to
    // open_checked goes through a symlink that O_NOFOLLOW cannot see (not the last component).
    let (_dir, root, ws) = workspace();
    let out = tempfile::tempdir().unwrap();
    write(out.path(), "secret", "s");
    symlink(out.path(), root.join("swapped")).unwrap();
    assert_eq!(
        ws.open_checked(&root.join("swapped/secret"), "swapped/secret")
            .unwrap_err(),
        symlink_outside("swapped/secret")
    );
    assert_eq!(
        ws.open_dir(&root.join("swapped"), "swapped").unwrap_err(),
        PathError::Changed("swapped".to_owned())
    );
    // The last component swapped for a symlink, even one pointing inside, is not followed.
    write(&root, "inside.txt", "x");
    symlink(root.join("inside.txt"), root.join("leaf")).unwrap();
    assert_eq!(
        ws.open_checked(&root.join("leaf"), "leaf").unwrap_err(),
        PathError::Changed("leaf".to_owned())
    );
}

#[test]
fn open_dir_lists_the_directory() {
    let (_dir, root, ws) = workspace();
    write(&root, "d/x", "1");
    write(&root, "d/y", "2");
    let mut names: Vec<String> = ws
        .open_dir(&root.join("d"), "d")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["x", "y"]);
    assert_eq!(
        ws.open_dir(&root.join("d/x"), "d/x").unwrap_err(),
        PathError::NotADirectory("d/x".to_owned())
    );
}
