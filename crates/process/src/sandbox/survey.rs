//! The temp dir's `.git` directories, found once per run instead of before every command.
//!
//! The temp dir is writable to tools (`Sandbox::for_run`), so its repositories are kept
//! read-only like the workspace's (`sandbox::git`). But it is the machine's, not the run's: a
//! developer's or a CI runner's `/tmp` holds thousands of directories, and walking it before
//! each command cost tens of milliseconds per command (a pre-tool hook on `true` took 41 ms,
//! 35,000 `getdents64` calls for four hooks), up to seconds where it is large. Its
//! repositories are those that were there when the run started: the run finds them then
//! ([`Sandbox::survey_temp`]), and each command's supervisor checks that each is still there
//! and protects it, and walks only the other writable directories (the workspace and
//! `--sandbox-write`, which are the run's own and small).
//!
//! What that leaves out: a repository that appears in the temp dir during the run. One a tool
//! made is the tool's own (it could plant a hook the moment it makes it, walk or no walk); one
//! another process makes beside the run, during it, is not protected.

use std::path::PathBuf;

use super::git::{self, Found};
use super::{EnvError, Mode, Sandbox, hex, identified, unhex};

/// At most this many bytes of the supervisor's environment value name surveyed `.git`
/// directories (an environment string may not pass 128 KiB); a temp dir with more is walked
/// before every command, as before.
const ENV_BUDGET: usize = 32 * 1024;

/// What [`Sandbox::survey_temp`] found: the temp dir, and the `.git` directories below it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Survey {
    /// The directory surveyed; `None` when nothing was (each command walks every writable
    /// directory).
    root: Option<PathBuf>,
    found: Vec<Found>,
}

impl Sandbox {
    /// Finds the temp dir's `.git` directories now, before any tool runs, so that commands
    /// need not walk the temp dir again (see the module doc). Does nothing outside
    /// `workspace-write`, or when the temp dir is not writable to tools or is too large to walk
    /// (each command then walks it and refuses to start, as without a survey).
    pub fn survey_temp(&mut self) {
        // Without a mount namespace to be had, commands protect nothing (see `prepare`).
        if self.mode != Mode::WorkspaceWrite || !(self.require || git::can_unshare()) {
            return;
        }
        let temp = std::env::temp_dir();
        let temp = std::fs::canonicalize(&temp).unwrap_or(temp);
        if !self.write.contains(&temp) {
            return;
        }
        let Ok(found) = git::find_below(std::slice::from_ref(&temp), &self.write) else {
            return;
        };
        let survey = Survey {
            root: Some(temp),
            found,
        };
        if survey.words().map(|w| w.len() + 1).sum::<usize>() <= ENV_BUDGET {
            self.surveyed = survey;
        }
    }

    /// Every `.git` to keep read-only for the next command: found below the writable
    /// directories now, and the surveyed ones that are still there. `Err` as [`git::find`].
    pub(super) fn git_dirs(&self) -> Result<Vec<Found>, Vec<Found>> {
        let Some(root) = &self.surveyed.root else {
            return git::find(&self.write);
        };
        let roots: Vec<PathBuf> = self.write.iter().filter(|w| *w != root).cloned().collect();
        let mut found = git::find_below(&roots, &self.write)?;
        for known in self.surveyed.found.iter().filter_map(Found::now) {
            if !found.iter().any(|f| f.path == known.path) {
                found.push(known);
            }
        }
        Ok(found)
    }
}

impl Survey {
    /// The words of `Sandbox::to_env` that carry the survey: `surveyed=HEX`, then
    /// `git=HEX,DEV,INO` for each `.git`.
    pub(super) fn words(&self) -> impl Iterator<Item = String> + '_ {
        let root = self.root.iter().map(|r| format!("surveyed={}", hex(r)));
        let found =
            (self.found.iter()).map(|f| format!("git={},{},{}", hex(&f.path), f.dev, f.ino));
        root.chain(found)
    }

    /// Reads one word [`Survey::words`] wrote: `key` and its value. `Ok(false)` when `key`
    /// is none of its keys.
    pub(super) fn read(&mut self, key: &str, value: &str) -> Result<bool, EnvError> {
        let bad = || EnvError::Option(format!("{key}={value}"));
        match key {
            "surveyed" => self.root = Some(unhex(value).ok_or_else(bad)?),
            "git" => {
                let (path, dev, ino) = identified(value).ok_or_else(bad)?;
                self.found.push(Found { path, dev, ino });
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A workspace and a temp dir holding `repo/.git`, and the run's sandbox over both.
    fn setup() -> (tempfile::TempDir, PathBuf, Sandbox) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (ws, temp) = (root.join("ws"), root.join("tmp"));
        std::fs::create_dir_all(ws.join("inner/.git")).unwrap();
        std::fs::create_dir_all(temp.join("repo/.git")).unwrap();
        let mut sandbox = Sandbox::new(Mode::WorkspaceWrite);
        sandbox.write = vec![ws, temp.clone()];
        (dir, temp, sandbox)
    }

    fn paths(found: &[Found]) -> Vec<PathBuf> {
        found.iter().map(|f| f.path.clone()).collect()
    }

    #[test]
    fn a_surveyed_temp_dir_is_not_walked_again_and_what_it_held_is_kept_while_it_is_there() {
        let (_dir, temp, mut sandbox) = setup();
        let inner = sandbox.write[0].join("inner/.git");
        // No survey: every writable directory is walked.
        let walked = paths(&sandbox.git_dirs().unwrap());
        assert_eq!(walked, vec![inner.clone(), temp.join("repo/.git")]);

        sandbox.surveyed = Survey {
            root: Some(temp.clone()),
            found: git::find_below(std::slice::from_ref(&temp), &sandbox.write).unwrap(),
        };
        // A repository made in the temp dir after the survey is not looked for...
        std::fs::create_dir_all(temp.join("later/.git")).unwrap();
        let found = paths(&sandbox.git_dirs().unwrap());
        assert_eq!(found, vec![inner.clone(), temp.join("repo/.git")]);
        // ...while the workspace still is, before every command.
        std::fs::create_dir_all(sandbox.write[0].join("new/.git")).unwrap();
        assert!(paths(&sandbox.git_dirs().unwrap()).contains(&sandbox.write[0].join("new/.git")));
        // A surveyed repository that was removed is left out, not an error.
        std::fs::remove_dir_all(temp.join("repo")).unwrap();
        assert!(!paths(&sandbox.git_dirs().unwrap()).contains(&temp.join("repo/.git")));
    }

    #[test]
    fn the_survey_travels_to_the_supervisor_and_bad_words_are_refused() {
        let (_dir, temp, mut sandbox) = setup();
        sandbox.surveyed = Survey {
            root: Some(temp.clone()),
            found: git::find_below(std::slice::from_ref(&temp), &sandbox.write).unwrap(),
        };
        let value = sandbox.to_env().unwrap();
        assert!(value.to_str().unwrap().contains(" surveyed="));
        assert_eq!(Sandbox::from_env(&value).unwrap(), sandbox);
        for bad in ["git=zz,1,2", "git=2f,1", "git=2f,1,x", "surveyed=q"] {
            let value = format!("workspace-write {bad}");
            assert!(Sandbox::from_env(value.as_ref()).is_err(), "{bad}");
        }
    }
}
