//! The one rule for reading the environment: a variable set to the empty string is unset.
//!
//! CI systems and shells make "unset" hard to say: `FOO=` in a workflow's `env:`, an empty
//! secret, `export FOO=` in a script. A run that failed on `GITHUB_STEP_SUMMARY=` ("a value is
//! required for '--step-summary'", a flag the user never gave) or took `ROUNDS_PROFILE=` as a
//! profile named "" helped nobody. So every read of a variable rounds itself acts on goes
//! through [`var`], and clap's `env = "…"` flags through [`unset_empty`], which clap has no
//! setting for (it passes an empty value on to the flag's parser).

/// The variable's value, or `None` when it is unset, empty, or not Unicode.
pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// `command` with every `env = "…"` flag whose variable is empty (now) read as unset, in every
/// subcommand too. clap takes the variable's value when the command is built; this builds it
/// again without the variable, so the flag gets its default, and `--help` does not show
/// `[env: NAME=]`.
pub fn unset_empty(command: clap::Command) -> clap::Command {
    unset_empty_with(command, &|name| {
        std::env::var_os(name).is_some_and(|v| v.is_empty())
    })
}

/// [`unset_empty`] with `empty` saying which variables are set and empty (tests pass their own).
fn unset_empty_with(
    command: clap::Command,
    empty: &dyn Fn(&std::ffi::OsStr) -> bool,
) -> clap::Command {
    let command = command.mut_args(|arg| {
        if arg.get_env().is_some_and(empty) {
            arg.env(None::<&'static str>)
        } else {
            arg
        }
    });
    let names: Vec<String> = command
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    names.iter().fold(command, |command, name| {
        command.mut_subcommand(name, |sub| unset_empty_with(sub, empty))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, Command};

    #[test]
    fn an_empty_variable_leaves_the_flag_unset_in_every_subcommand() {
        let build = || {
            Command::new("p")
                .arg(Arg::new("file").long("file").env("ROUNDS_TEST_EMPTY_FILE"))
                .subcommand(
                    Command::new("sub")
                        .arg(Arg::new("url").long("url").env("ROUNDS_TEST_EMPTY_URL")),
                )
        };
        // clap would read the variables when the args are built; here `empty` decides, and the
        // values come from the matches of a command whose env was reset or not.
        let reset = unset_empty_with(build(), &|_| true);
        for arg in reset.get_arguments() {
            assert_eq!(arg.get_env(), None, "{arg}");
        }
        let sub = reset.find_subcommand("sub").unwrap();
        assert!(sub.get_arguments().all(|a| a.get_env().is_none()));
        // The control: nothing empty, nothing reset.
        let kept = unset_empty_with(build(), &|_| false);
        assert!(kept.get_arguments().any(|a| a.get_env().is_some()));
        let sub = kept.find_subcommand("sub").unwrap();
        assert!(sub.get_arguments().any(|a| a.get_env().is_some()));
    }
}
