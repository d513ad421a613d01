//! The count a listing ends with. A small model asked how many files of one type a folder holds
//! counts the lines of a listing and gets it wrong (every entry, or one too many); a listing
//! that ends with its entries counted by kind (`[9 entries: 7 .py files, 2 directories]`)
//! gives the number to copy.

use std::collections::BTreeMap;

/// Entries counted by kind: directories, and files by extension.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    dirs: usize,
    /// Files by extension ("" for none).
    files: BTreeMap<String, usize>,
    other: usize,
}

impl Tally {
    pub(crate) fn dir(&mut self) {
        self.dirs += 1;
    }

    pub(crate) fn file(&mut self, name: &str) {
        let ext = match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => ext.to_lowercase(),
            _ => String::new(),
        };
        *self.files.entry(ext).or_default() += 1;
    }

    /// A symlink or a special file.
    pub(crate) fn other(&mut self) {
        self.other += 1;
    }

    pub(crate) fn total(&self) -> usize {
        self.dirs + self.other + self.files.values().sum::<usize>()
    }

    /// `[N noun: 7 .py files, 1 .txt file, 2 directories]`: files by extension, the most first.
    pub(crate) fn line(&self, noun: &str) -> String {
        let mut files: Vec<(&String, &usize)> = self.files.iter().collect();
        files.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let mut parts: Vec<String> = files
            .into_iter()
            .map(|(ext, &n)| {
                let what = if ext.is_empty() {
                    "file without an extension".to_owned()
                } else {
                    format!(".{ext} file")
                };
                counted(n, &what)
            })
            .collect();
        if self.dirs > 0 {
            parts.push(counted(self.dirs, "directory"));
        }
        if self.other > 0 {
            parts.push(counted(self.other, "other entry"));
        }
        format!("[{} {noun}: {}]", self.total(), parts.join(", "))
    }
}

/// `n what`, the noun made plural when `n` is not one.
fn counted(n: usize, what: &str) -> String {
    if n == 1 {
        return format!("1 {what}");
    }
    let plural = if let Some(stem) = what.strip_suffix("directory") {
        format!("{stem}directories")
    } else if let Some(stem) = what.strip_suffix("entry") {
        format!("{stem}entries")
    } else if let Some((head, tail)) = what.split_once(" without") {
        format!("{head}s without{tail}")
    } else {
        format!("{what}s")
    };
    format!("{n} {plural}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_files_by_extension_the_most_first_then_directories() {
        let mut t = Tally::default();
        for name in [
            "a.py",
            "b.py",
            "c.PY",
            "notes.txt",
            "Makefile",
            ".env",
            "x.tar.gz",
        ] {
            t.file(name);
        }
        t.dir();
        t.dir();
        t.other();
        assert_eq!(t.total(), 10);
        assert_eq!(
            t.line("entries"),
            "[10 entries: 3 .py files, 2 files without an extension, 1 .gz file, 1 .txt file, \
             2 directories, 1 other entry]"
        );
        let mut one = Tally::default();
        one.file("a.rs");
        one.dir();
        assert_eq!(one.line("matches"), "[2 matches: 1 .rs file, 1 directory]");
    }
}
