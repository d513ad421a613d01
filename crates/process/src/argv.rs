//! rounds' own command line, as other processes see it: every process of the machine (its tools
//! included, sandboxed or not) can read `/proc/<rounds>/cmdline`. A value that says where a
//! secret is (`--api-key-file PATH`) or holds one (`--store URL` with a password) told a tool
//! which file to read and encode past the redactor (issue 31). Once the arguments are copied
//! into the program's own memory, [`hide_values`] overwrites those values in place with `*`, in
//! the memory the kernel shows as the command line: the flag stays visible, its value does not.
//!
//! The memory is found from `/proc/self/stat` (`arg_start`, `arg_end`) and used only when its
//! bytes are exactly `/proc/self/cmdline` and the arguments the program was given: anything
//! else (another libc that moved them, a kernel without `/proc`) leaves the command line as it
//! is. It runs first thing in `main`, before any other thread exists.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

/// The flags whose values are hidden.
pub(crate) const HIDDEN: &[&str] = &["--api-key-file", "--store"];

/// The byte ranges of `args` (the whole command line, program first) that hold a value of one
/// of `flags`: the argument after `--flag`, or what follows `=` in `--flag=VALUE`. Nothing
/// after a `--` is a flag.
pub(crate) fn value_ranges(args: &[OsString], flags: &[&str]) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut offset = 0;
    let mut hide_next = false;
    let mut options = true;
    for (i, arg) in args.iter().enumerate() {
        let bytes = arg.as_bytes();
        if hide_next {
            ranges.push((offset, bytes.len()));
            hide_next = false;
        } else if i > 0 && options {
            if bytes == b"--" {
                options = false;
            }
            for flag in flags {
                let flag = flag.as_bytes();
                if bytes == flag {
                    hide_next = true;
                } else if bytes.len() > flag.len()
                    && bytes.starts_with(flag)
                    && bytes[flag.len()] == b'='
                {
                    let start = flag.len() + 1;
                    ranges.push((offset + start, bytes.len() - start));
                }
            }
        }
        offset += bytes.len() + 1;
    }
    ranges.retain(|&(_, len)| len > 0);
    ranges
}

/// `arg_start` and `arg_end` from `/proc/self/stat` (fields 48 and 49; the fields after the
/// command name, which may hold spaces and parentheses, are counted from its closing one).
fn arg_area(stat: &str) -> Option<(usize, usize)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (the state).
    let start = fields.get(48 - 3)?.parse().ok()?;
    let end = fields.get(49 - 3)?.parse().ok()?;
    (start < end).then_some((start, end))
}

/// Overwrites the values of [`HIDDEN`] flags in this process's command line with `*`; `args`
/// is the command line the program was given. Does nothing when there is none to hide or the
/// command line's memory is not exactly where and what it should be.
#[allow(unsafe_code)]
pub fn hide_values(args: &[OsString]) {
    let ranges = value_ranges(args, HIDDEN);
    if ranges.is_empty() {
        return;
    }
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return;
    };
    let Ok(shown) = std::fs::read("/proc/self/cmdline") else {
        return;
    };
    let Some((start, end)) = arg_area(&stat) else {
        return;
    };
    let given: Vec<u8> = args
        .iter()
        .flat_map(|a| a.as_bytes().iter().copied().chain([0]))
        .collect();
    if shown != given || end - start != given.len() {
        return;
    }
    // SAFETY: [start, end) is this process's argument area, as the kernel reports it, and it
    // holds exactly the command line just read from `/proc/self/cmdline` (so it is mapped and
    // readable). It is the initial stack, writable; nothing holds a reference into it (std
    // copies the arguments when asked for them), and no other thread runs yet.
    let area = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, end - start) };
    if *area != *given {
        return;
    }
    for (at, len) in ranges {
        if let Some(value) = area.get_mut(at..at + len) {
            value.fill(b'*');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    /// The command line with the ranges starred, as `/proc/PID/cmdline` would then show it.
    fn shown(words: &[&str]) -> String {
        let a = args(words);
        let mut bytes: Vec<u8> = a
            .iter()
            .flat_map(|w| w.as_bytes().iter().copied().chain([b' ']))
            .collect();
        for (at, len) in value_ranges(&a, HIDDEN) {
            bytes[at..at + len].fill(b'*');
        }
        String::from_utf8(bytes).unwrap().trim_end().to_owned()
    }

    #[test]
    fn the_values_of_secret_flags_are_found_in_each_form_and_nothing_else() {
        let table: &[(&[&str], &str)] = &[
            (
                &["rounds", "--api-key-file", "/k/key", "hi"],
                "rounds --api-key-file ****** hi",
            ),
            (
                &["rounds", "--api-key-file=/k/key", "hi"],
                "rounds --api-key-file=****** hi",
            ),
            (
                &["rounds", "batch", "--store", "postgres://u:pw@h/db", "j"],
                "rounds batch --store ******************** j",
            ),
            // A prompt that names the flag after `--` is the prompt's.
            (
                &["rounds", "--", "--api-key-file", "x"],
                "rounds -- --api-key-file x",
            ),
            // The program's own name and other flags are left alone.
            (
                &["--api-key-file", "-m", "m", "--api-key-files", "v"],
                "--api-key-file -m m --api-key-files v",
            ),
            (&["rounds", "--api-key-file"], "rounds --api-key-file"),
            (&["rounds", "--api-key-file="], "rounds --api-key-file="),
        ];
        for (words, want) in table {
            assert_eq!(shown(words), *want, "{words:?}");
        }
    }

    #[test]
    fn the_argument_area_is_read_past_a_command_name_with_spaces_and_parentheses() {
        let mut fields: Vec<String> = (3..=52).map(|n| n.to_string()).collect();
        fields[48 - 3] = "1000".into();
        fields[49 - 3] = "1042".into();
        let stat = format!("77 (a) b (c) {}", fields.join(" "));
        assert_eq!(arg_area(&stat), Some((1000, 1042)));
        assert_eq!(arg_area("77 (x) S 1"), None);
        let own = std::fs::read_to_string("/proc/self/stat").unwrap();
        let (start, end) = arg_area(&own).unwrap();
        let cmdline = std::fs::read("/proc/self/cmdline").unwrap();
        assert_eq!(end - start, cmdline.len());
    }
}
