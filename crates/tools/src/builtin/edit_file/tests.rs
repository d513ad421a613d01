use std::os::unix::fs::{PermissionsExt, symlink};

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::Tool;
use crate::Workspace;
use crate::builtin::typed::Typed;
use crate::policy::Subject;
use crate::workspace::testing::{self, workspace, write};
use serde_json::Value;
use std::sync::Arc;

async fn call(ws: &Workspace, input: Value) -> Result<String, String> {
    testing::call(&Typed::new(EditFile), ws, input)
        .await
        .map_err(|e| e.to_string())
}

async fn replace(ws: &Workspace, path: &str, old: &str, new: &str) -> Result<String, String> {
    call(
        ws,
        json!({"path": path, "old_string": old, "new_string": new}),
    )
    .await
}

fn read(root: &std::path::Path, rel: &str) -> Vec<u8> {
    std::fs::read(root.join(rel)).unwrap()
}

fn names(root: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

const TEN: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n";

#[tokio::test]
async fn single_replacement_with_diff() {
    let (_dir, root, ws) = workspace();
    write(&root, "src/n.txt", TEN);
    let got = replace(&ws, "./src/n.txt", "five\n", "FIVE\nfive and a half\n").await;
    let want = "edited src/n.txt: 1 replacement\n\
                --- a/src/n.txt\n\
                +++ b/src/n.txt\n\
                @@ -2,7 +2,8 @@\n \
                two\n \
                three\n \
                four\n\
                -five\n\
                +FIVE\n\
                +five and a half\n \
                six\n \
                seven\n \
                eight\n";
    assert_eq!(got, Ok(want.to_owned()));
    assert_eq!(
        String::from_utf8(read(&root, "src/n.txt")).unwrap(),
        TEN.replace("five\n", "FIVE\nfive and a half\n")
    );
    assert_eq!(names(&root.join("src")), ["n.txt"]);
}

#[tokio::test]
async fn replace_all_counts_and_separate_hunks() {
    let (_dir, root, ws) = workspace();
    let content = format!("x = 1\n{}x = 1\n", "pad\n".repeat(10));
    write(&root, "f.py", &content);
    let got = call(
        &ws,
        json!({"path": "f.py", "old_string": "x = 1", "new_string": "x = 2", "replace_all": true}),
    )
    .await;
    let want = "edited f.py: 2 replacements\n--- a/f.py\n+++ b/f.py\n\
                @@ -1,4 +1,4 @@\n-x = 1\n+x = 2\n pad\n pad\n pad\n\
                @@ -9,4 +9,4 @@\n pad\n pad\n pad\n-x = 1\n+x = 2\n";
    assert_eq!(got, Ok(want.to_owned()));
    assert_eq!(
        read(&root, "f.py"),
        content.replace("x = 1", "x = 2").as_bytes()
    );
}

#[tokio::test]
async fn zero_matches_say_why() {
    let (_dir, root, ws) = workspace();
    write(&root, "a.rs", "fn main() {\n\tlet x = 1;\n}\n");
    write(&root, "mixed.txt", "a\r\nb\nc\r\n");
    let got = replace(&ws, "a.rs", "nothing like it", "y").await;
    assert_eq!(
        got,
        Err(r#"old_string was not found in "a.rs". Read the file again and copy old_string exactly."#.to_owned())
    );
    let got = replace(&ws, "a.rs", "let  x = 1;\n}", "y").await;
    assert_eq!(
        got,
        Err(
            "old_string was not found in \"a.rs\". A match ignoring whitespace starts at \
             line 2: check indentation, tabs versus spaces and trailing spaces. Read the file \
             again and copy old_string exactly. The closest lines are 2-3:\n     2\t\tlet x \
             = 1;\n     3\t}\n"
                .to_owned()
        )
    );
    let got = replace(&ws, "mixed.txt", "a\nb\nc", "y").await;
    assert_eq!(
        got,
        Err(
            "old_string was not found in \"mixed.txt\". It matches if line endings are \
             ignored: the file mixes CRLF and LF line endings there; copy the text with its \
             exact line endings. Read the file again and copy old_string exactly."
                .to_owned()
        )
    );
    assert_eq!(read(&root, "a.rs"), b"fn main() {\n\tlet x = 1;\n}\n");
    assert_eq!(read(&root, "mixed.txt"), b"a\r\nb\nc\r\n");
}

#[tokio::test]
async fn a_near_match_is_applied_reindented_and_said() {
    let (_dir, root, ws) = workspace();
    write(&root, "a.rs", "fn main() {\n\tlet x = 1;\n}\n");
    let got = replace(&ws, "a.rs", "    let x = 1;\n}", "    let x = 2;\n}").await;
    assert_eq!(
        got,
        Ok(
            "edited a.rs: 1 replacement (old_string matched lines 2-3 only with indentation \
            and trailing whitespace ignored; replaced them with new_string re-indented to the \
            file's indentation)\n--- a/a.rs\n+++ b/a.rs\n@@ -1,3 +1,3 @@\n fn main() {\n\
            -\tlet x = 1;\n+\tlet x = 2;\n }\n"
                .to_owned()
        )
    );
    assert_eq!(read(&root, "a.rs"), b"fn main() {\n\tlet x = 2;\n}\n");
    // Two places match that way: nothing is edited, and both are named.
    write(&root, "b.py", "if a:\n    x = 1\nif b:\n        x = 1\n");
    let got = replace(&ws, "b.py", "x = 1  ", "x = 2").await;
    assert_eq!(
        got,
        Err(
            "old_string was not found in \"b.py\"; with indentation ignored it matches at \
             lines 2, 4: copy it exactly, with surrounding lines so that it matches once"
                .to_owned()
        )
    );
    assert_eq!(
        read(&root, "b.py"),
        b"if a:\n    x = 1\nif b:\n        x = 1\n"
    );
}

#[tokio::test]
async fn multiple_matches_need_context_or_replace_all() {
    let (_dir, root, ws) = workspace();
    write(&root, "f.txt", "ok\nok\nfine\nok\n");
    let got = replace(&ws, "f.txt", "ok", "KO").await;
    assert_eq!(
        got,
        Err(
            "old_string occurs 3 times in \"f.txt\" (at lines 1, 2, 4); add surrounding \
             lines to old_string so that it matches exactly once, or set replace_all to true \
             to replace every occurrence"
                .to_owned()
        )
    );
    assert_eq!(read(&root, "f.txt"), b"ok\nok\nfine\nok\n");
    let got = replace(&ws, "f.txt", "ok\nfine", "ok\nbetter").await;
    assert!(got.is_ok(), "{got:?}");
    assert_eq!(read(&root, "f.txt"), b"ok\nok\nbetter\nok\n");
}

#[tokio::test]
async fn crlf_file_stays_crlf() {
    let (_dir, root, ws) = workspace();
    write(&root, "w.txt", "alpha\r\nbeta\r\ngamma\r\n");
    let got = replace(&ws, "w.txt", "alpha\nbeta\n", "alpha\nBETA\nbeta2\n").await;
    assert_eq!(
        got,
        Ok("edited w.txt: 1 replacement\n--- a/w.txt\n+++ b/w.txt\n\
            @@ -1,3 +1,4 @@\n alpha\n-beta\n+BETA\n+beta2\n gamma\n"
            .to_owned())
    );
    assert_eq!(read(&root, "w.txt"), b"alpha\r\nBETA\r\nbeta2\r\ngamma\r\n");
    // A single-line old_string with a multi-line new_string: the new lines get CRLF too.
    replace(&ws, "w.txt", "gamma", "gamma\ndelta")
        .await
        .unwrap();
    assert_eq!(
        read(&root, "w.txt"),
        b"alpha\r\nBETA\r\nbeta2\r\ngamma\r\ndelta\r\n"
    );
    // And an LF file stays LF when the model sends CRLF.
    write(&root, "u.txt", "a\nb\n");
    replace(&ws, "u.txt", "a\r\nb", "a\r\nc").await.unwrap();
    assert_eq!(read(&root, "u.txt"), b"a\nc\n");
}

#[tokio::test]
async fn missing_final_newline_stays_missing() {
    let (_dir, root, ws) = workspace();
    write(&root, "n.txt", "first\nlast");
    let got = replace(&ws, "n.txt", "first", "1st").await;
    assert_eq!(
        got,
        Ok("edited n.txt: 1 replacement\n--- a/n.txt\n+++ b/n.txt\n\
            @@ -1,2 +1,2 @@\n-first\n+1st\n last\n\\ No newline at end of file\n"
            .to_owned())
    );
    assert_eq!(read(&root, "n.txt"), b"1st\nlast");
    replace(&ws, "n.txt", "last", "end").await.unwrap();
    assert_eq!(read(&root, "n.txt"), b"1st\nend");
}

#[tokio::test]
async fn refusals_leave_files_untouched() {
    let (_dir, root, ws) = workspace();
    write(&root, "bin.dat", b"ab\0cd");
    write(&root, "latin1.txt", b"caf\xe9\n");
    write(&root, "t.txt", "same");
    let binary = |p: &str| {
        Err(format!(
            "{p:?} looks binary (it has NUL bytes or is not valid UTF-8); edit_file only \
             edits UTF-8 text files"
        ))
    };
    assert_eq!(replace(&ws, "bin.dat", "ab", "x").await, binary("bin.dat"));
    assert_eq!(
        replace(&ws, "latin1.txt", "caf", "x").await,
        binary("latin1.txt")
    );
    assert_eq!(
        replace(&ws, "t.txt", "same", "same").await,
        Err("old_string and new_string are identical; there is nothing to change".to_owned())
    );
    // The schema refuses an empty old_string before the tool runs; the tool refuses it too.
    let empty = json!({"path": "t.txt", "old_string": "", "new_string": "x"});
    let ran = Typed::new(EditFile)
        .run(empty, &testing::context(&ws))
        .await;
    assert_eq!(
        ran.map_err(|e| e.to_string()),
        Err(
            "old_string is empty; to create a file or replace all of it, use write_file".to_owned()
        )
    );
    assert_eq!(
        replace(&ws, "../t.txt", "same", "x").await,
        Err(r#"path "../t.txt" is outside the workspace"#.to_owned())
    );
    assert_eq!(
        replace(&ws, "missing.txt", "a", "b").await,
        Err(r#"no such file or directory: "missing.txt"; the closest names in the workspace root: "latin1.txt", "bin.dat", "t.txt""#.to_owned())
    );
    let out = tempfile::tempdir().unwrap();
    write(out.path(), "secret", "same");
    symlink(out.path().join("secret"), root.join("out-link")).unwrap();
    assert_eq!(
        replace(&ws, "out-link", "same", "x").await,
        Err(r#"path "out-link" resolves outside the workspace (symlink)"#.to_owned())
    );
    assert_eq!(read(out.path(), "secret"), b"same");
    assert_eq!(read(&root, "bin.dat"), b"ab\0cd");
    assert_eq!(read(&root, "latin1.txt"), b"caf\xe9\n");
    assert_eq!(read(&root, "t.txt"), b"same");
    assert_eq!(names(&root), ["bin.dat", "latin1.txt", "out-link", "t.txt"]);
}

#[tokio::test]
async fn permissions_kept_and_symlink_inside_edits_its_target() {
    let (_dir, root, ws) = workspace();
    write(&root, "real.sh", "echo hi\n");
    let path = root.join("real.sh");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
    symlink("real.sh", root.join("link.sh")).unwrap();
    let got = replace(&ws, "link.sh", "hi", "bye").await.unwrap();
    assert!(
        got.starts_with("edited real.sh: 1 replacement\n--- a/real.sh\n"),
        "{got}"
    );
    assert_eq!(read(&root, "real.sh"), b"echo bye\n");
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o750);
    assert!(
        root.join("link.sh")
            .symlink_metadata()
            .unwrap()
            .is_symlink()
    );
    assert_eq!(names(&root), ["link.sh", "real.sh"]);
}

#[tokio::test]
async fn long_diffs_are_cut() {
    let (_dir, root, ws) = workspace();
    let content: String = (1..=300).map(|n| format!("v{n}\n")).collect();
    write(&root, "many.txt", &content);
    let got = call(
        &ws,
        json!({"path": "many.txt", "old_string": "v", "new_string": "w", "replace_all": true}),
    )
    .await
    .unwrap();
    let lines: Vec<&str> = got.lines().collect();
    // Header, ---, +++, then 200 diff lines (one hunk: 1 header + 600 changes) and the note.
    assert_eq!(lines.len(), 3 + MAX_DIFF_LINES + 1);
    assert_eq!(lines[0], "edited many.txt: 300 replacements");
    assert_eq!(lines[3], "@@ -1,300 +1,300 @@");
    assert_eq!(
        lines[lines.len() - 1],
        "[diff cut after 200 lines; 401 more lines not shown]"
    );
    assert_eq!(
        read(&root, "many.txt"),
        content.replace('v', "w").as_bytes()
    );
}

#[test]
fn long_lines_are_shortened_on_char_boundaries() {
    let line = format!("{}é{}\r\n", "a".repeat(MAX_LINE_BYTES - 1), "b".repeat(10));
    assert_eq!(
        shorten(&line),
        format!("{}[… 12 more bytes]", "a".repeat(MAX_LINE_BYTES - 1))
    );
    assert_eq!(shorten("short\r\n"), "short");
}

#[test]
fn spec_compiles_and_subject_is_relative() {
    let (_dir, root, ws) = workspace();
    let tool = Arc::new(Typed::new(EditFile));
    assert_eq!(tool.spec().class, Class::Mutating);
    let mut registry = crate::Registry::default();
    registry.register(tool.clone());
    let entry = registry.get("edit_file").unwrap();
    assert!(
        !entry
            .validator()
            .unwrap()
            .is_valid(&json!({"path": "a", "old_string": "", "new_string": "b"}))
    );
    assert!(
        !entry
            .validator()
            .unwrap()
            .is_valid(&json!({"path": "a", "old_string": "a", "new_string": "b", "extra": 1}))
    );
    assert!(
        entry
            .validator()
            .unwrap()
            .is_valid(&json!({"path": "a", "old_string": "a", "new_string": ""}))
    );
    assert_eq!(
        tool.subject(&json!({"path": root.join("x/y.rs")}), &ws),
        Some(Subject::Path("x/y.rs".to_owned()))
    );
    assert_eq!(tool.subject(&json!({"path": "/etc/passwd"}), &ws), None);
}
