//! Presets: allowlists a person can remember (`--edit`, `--full-auto`), as `codex exec
//! --full-auto` and `claude -p --permission-mode acceptEdits` have. A preset only adds allow
//! rules after every `--allow` value (so `-a none` cannot clear it); `--deny` still wins, and no
//! preset changes the sandbox: `--full-auto` needs one and refuses `--sandbox off`.

use serde::Serialize;

/// One preset flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Preset {
    /// The file-writing tools, confined to the workspace like every file tool.
    Edit,
    /// `Edit` and `bash`, whose processes run in the sandbox.
    FullAuto,
}

impl Preset {
    pub const ALL: [Preset; 2] = [Preset::Edit, Preset::FullAuto];

    /// The flag, as a person types it.
    pub fn flag(self) -> &'static str {
        match self {
            Preset::Edit => "--edit",
            Preset::FullAuto => "--full-auto",
        }
    }

    /// The allow rules it adds.
    pub fn tools(self) -> &'static [&'static str] {
        match self {
            Preset::Edit => &["write_file", "edit_file"],
            Preset::FullAuto => &["write_file", "edit_file", "bash"],
        }
    }

    /// Whether it runs tool processes, and so must have a sandbox to run them in.
    pub fn needs_sandbox(self) -> bool {
        self == Preset::FullAuto
    }

    /// The presets the two switches turn on, in flag order.
    pub fn chosen(edit: bool, full_auto: bool) -> Vec<Preset> {
        Preset::ALL
            .into_iter()
            .filter(|p| match p {
                Preset::Edit => edit,
                Preset::FullAuto => full_auto,
            })
            .collect()
    }
}

/// `allow` with the presets' rules after it: `-a none,read_file --edit` is read_file and the
/// file-writing tools, not read_file alone.
pub(crate) fn allow_with(allow: &[String], presets: &[Preset]) -> Vec<String> {
    let mut rules = allow.to_vec();
    rules.extend(presets.iter().map(|p| p.tools().join(",")));
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_add_after_every_allow_value_so_none_cannot_clear_them() {
        let allow = vec!["none,read_file".to_owned()];
        let rules = allow_with(&allow, &Preset::chosen(true, false));
        assert_eq!(rules, ["none,read_file", "write_file,edit_file"]);
        let rules = allow_with(&[], &Preset::chosen(false, true));
        assert_eq!(rules, ["write_file,edit_file,bash"]);
        assert!(allow_with(&allow, &Preset::chosen(false, false)) == allow);
    }

    #[test]
    fn only_full_auto_runs_processes() {
        assert!(!Preset::Edit.needs_sandbox());
        assert!(Preset::FullAuto.needs_sandbox());
        assert!(!Preset::Edit.tools().contains(&"bash"));
    }
}
