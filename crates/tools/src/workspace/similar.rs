//! The names beside a path that does not exist, closest first: a model that misspells a path, or
//! guesses one from another language's layout, learns what is there instead of guessing again.

use std::path::PathBuf;

use super::{Workspace, display_relative};

/// Entries of one directory looked at, at most: a huge directory must not make an error slow.
const MAX_SCAN: usize = 10_000;

impl Workspace {
    /// For a path that does not exist: the deepest directory on the way to it that does
    /// (workspace-relative, "." for the root) and up to `n` of its names, closest to the missing
    /// one first by edit distance (ignoring case), directories ending in `/`. Only names `keep`
    /// accepts (by workspace-relative path) are given; `.git` never is. `None` when the path
    /// exists, lies outside, or its directory cannot be read.
    pub(crate) fn similar(
        &self,
        path: &str,
        n: usize,
        keep: &dyn Fn(&str) -> bool,
    ) -> Option<(String, Vec<String>)> {
        let rel = self.relative(path).ok()?;
        let mut dir = PathBuf::new();
        let mut missing = None;
        for part in rel.components() {
            let next = dir.join(part);
            if self.root.join(&next).symlink_metadata().is_err() {
                missing = Some(part.as_os_str().to_string_lossy().to_lowercase());
                break;
            }
            dir = next;
        }
        let missing = missing?;
        // The directory must really be inside: a symlink on the way could lead out.
        let real = std::fs::canonicalize(self.root.join(&dir)).ok()?;
        if !real.starts_with(&self.root) || !real.is_dir() {
            return None;
        }
        let mut names: Vec<(usize, String)> = std::fs::read_dir(&real)
            .ok()?
            .take(MAX_SCAN)
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                if name == ".git" || !keep(&display_relative(&dir.join(&name))) {
                    return None;
                }
                let distance = distance(&missing, &name.to_lowercase());
                let shown = if entry.file_type().ok()?.is_dir() {
                    format!("{name}/")
                } else {
                    name
                };
                Some((distance, shown))
            })
            .collect();
        names.sort();
        let names = names.into_iter().take(n).map(|(_, name)| name).collect();
        Some((display_relative(&dir), names))
    }

    /// For a path that does not exist: up to `n` places elsewhere in the workspace with its
    /// file name (workspace-relative; directories ending in `/`), as a walk finds them (what
    /// .gitignore ignores is not looked at). A model often gives a file's bare name, or guesses
    /// its folder, when the file is one or two folders down. Only names `keep` accepts.
    pub(crate) fn named_elsewhere(
        &self,
        path: &str,
        n: usize,
        keep: &dyn Fn(&str) -> bool,
    ) -> Vec<String> {
        let Some(name) = self.relative(path).ok().and_then(|rel| {
            let name = rel.file_name()?.to_str()?.to_owned();
            (!self.root.join(&rel).exists()).then_some(name)
        }) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for entry in self.walker(&self.root).build().take(MAX_SCAN).flatten() {
            if entry.depth() == 0 || entry.file_name().to_str() != Some(name.as_str()) {
                continue;
            }
            let shown = self.display(entry.path());
            if !keep(&shown) {
                continue;
            }
            let dir = entry.file_type().is_some_and(|t| t.is_dir());
            found.push(if dir { format!("{shown}/") } else { shown });
            if found.len() == n {
                break;
            }
        }
        found
    }
}

/// Levenshtein distance, by characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::testing::{workspace, write};

    #[test]
    fn a_missing_paths_name_is_found_where_it_is() {
        let (_dir, root, ws) = workspace();
        write(&root, "deploy/service.ini", "port = 1\n");
        write(&root, "old/deploy/service.ini", "port = 2\n");
        write(&root, "secret/service.ini", "x\n");
        write(&root, "tools/migrations/001.sql", "\n");
        let all = |_: &str| true;
        let mut got = ws.named_elsewhere("service.ini", 5, &all);
        got.sort();
        assert_eq!(
            got,
            [
                "deploy/service.ini",
                "old/deploy/service.ini",
                "secret/service.ini"
            ]
        );
        let keep = |rel: &str| !rel.starts_with("secret/");
        assert_eq!(ws.named_elsewhere("conf/service.ini", 5, &keep).len(), 2);
        assert_eq!(ws.named_elsewhere("service.ini", 1, &all).len(), 1);
        assert_eq!(
            ws.named_elsewhere("migrations", 5, &all),
            ["tools/migrations/"]
        );
        // A path that exists, a name nothing has, a path outside: nothing.
        assert!(ws.named_elsewhere("deploy/service.ini", 5, &all).is_empty());
        assert!(ws.named_elsewhere("nothing.ini", 5, &all).is_empty());
        assert!(ws.named_elsewhere("../service.ini", 5, &all).is_empty());
    }

    #[test]
    fn edit_distance() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("main.py", "main.py"), 0);
        assert_eq!(distance("mian.py", "main.py"), 2);
        assert_eq!(distance("zürich", "zurich"), 1);
    }

    #[test]
    fn the_closest_names_in_the_deepest_existing_directory() {
        let (_dir, root, ws) = workspace();
        for f in [
            "src/main.py",
            "src/man.py",
            "src/util.py",
            "src/zzz.txt",
            "src/pkg/x.py",
        ] {
            write(&root, f, "");
        }
        write(&root, "README.md", "");
        std::fs::create_dir(root.join(".git")).unwrap();
        let all = |_: &str| true;
        let got = ws.similar("src/mian.py", 3, &all);
        let want = (
            "src".to_owned(),
            vec![
                "man.py".to_owned(),
                "main.py".to_owned(),
                "util.py".to_owned(),
            ],
        );
        assert_eq!(got, Some(want));
        // A missing directory on the way: its siblings, case ignored; .git never.
        let got = ws.similar("SRC/main.py", 2, &all);
        assert_eq!(
            got,
            Some((
                ".".to_owned(),
                vec!["src/".to_owned(), "README.md".to_owned()]
            ))
        );
        // What `keep` refuses is not named.
        let got = ws.similar("src/mian.py", 1, &|rel: &str| rel != "src/man.py");
        assert_eq!(got, Some(("src".to_owned(), vec!["main.py".to_owned()])));
        assert_eq!(ws.similar("src/main.py", 3, &all), None, "it exists");
        assert_eq!(ws.similar("../elsewhere", 3, &all), None);
    }
}
