//! Paths a model invents from the workspace's name. Told the root is `/…/t3/ws`, a small model
//! asks for `ws/greeting.txt`, and each "not found" sends it back with the same path until the
//! run is stuck. A relative path that starts with the workspace's own directory name and does not
//! exist is taken without that name when the rest does exist (or, for a file about to be written,
//! when no such directory exists and the rest's directory does). The path that really exists
//! always wins, and the rest must lead inside the workspace like any other path.

use std::path::Path;

use super::{Workspace, display_relative, normalize};

impl Workspace {
    /// `path` without a leading component equal to the workspace's own name, when that is what
    /// the model must have meant (see the module's doc); `None` otherwise.
    pub(crate) fn unprefixed(&self, path: &str, creating: bool) -> Option<String> {
        let given = Path::new(path);
        if given.is_absolute() {
            return None;
        }
        let rel = normalize(given)?;
        let first = rel.components().next()?.as_os_str();
        let names = std::iter::once(&self.root).chain(self.alias.as_ref());
        if !names.filter_map(|p| p.file_name()).any(|n| n == first) {
            return None;
        }
        let rest = rel.strip_prefix(first).ok()?;
        if rest.as_os_str().is_empty() {
            return None;
        }
        let exists = |p: &Path| self.root.join(p).symlink_metadata().is_ok();
        if exists(&rel) {
            return None;
        }
        let meant = exists(rest)
            || creating
                && !exists(Path::new(first))
                && rest
                    .parent()
                    .is_none_or(|dir| dir.as_os_str().is_empty() || exists(dir));
        if !meant {
            return None;
        }
        let rest = display_relative(rest);
        // Where it really leads (symlinks followed) must be inside, as for any path.
        self.locate(&rest)?;
        Some(rest)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::super::testing::write;
    use super::*;

    #[test]
    fn the_workspace_name_is_dropped_only_when_that_is_what_exists() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir(&root).unwrap();
        let outside = dir.path().canonicalize().unwrap();
        write(&outside, "secret.txt", "s");
        write(&root, "greeting.txt", "hi");
        write(&root, "src/a.rs", "");
        symlink(outside.join("secret.txt"), root.join("out.txt")).unwrap();
        symlink(&outside, root.join("outdir")).unwrap();
        let ws = Workspace::new(&root).unwrap();
        let some = |s: &str| Some(s.to_owned());
        let cases: &[(&str, bool, Option<String>)] = &[
            ("ws/greeting.txt", false, some("greeting.txt")),
            ("./ws/src/a.rs", false, some("src/a.rs")),
            ("ws/new.txt", true, some("new.txt")),
            ("ws/src/new.rs", true, some("src/new.rs")),
            // Nothing to correct: it exists as written, or it names something else.
            ("greeting.txt", false, None),
            ("wsx/greeting.txt", false, None),
            ("ws", false, None),
            ("ws/missing.txt", false, None),
            ("ws/nodir/new.rs", true, None),
            // Attempts to get out through it.
            ("ws/../../secret.txt", false, None),
            ("ws/../secret.txt", false, None),
            ("ws/out.txt", false, None),
            ("ws/outdir/secret.txt", false, None),
            ("ws/outdir/new.txt", true, None),
            (&format!("{}/greeting.txt", root.display()), false, None),
            ("/ws/greeting.txt", false, None),
        ];
        for (path, creating, want) in cases {
            assert_eq!(&ws.unprefixed(path, *creating), want, "{path}");
        }
        // The control: a symlink to the outside is what locate refuses; a plain file is taken.
        assert_eq!(ws.locate("out.txt"), None);
        assert!(ws.locate("greeting.txt").is_some());
        // When ws/greeting.txt really exists inside, the real one wins.
        write(&root, "ws/greeting.txt", "the real one");
        assert_eq!(ws.unprefixed("ws/greeting.txt", false), None);
        assert_eq!(
            ws.unprefixed("ws/new.txt", true),
            None,
            "ws/ is a real directory"
        );
    }
}
