#![allow(unsafe_code)]

use super::*;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;

#[test]
fn the_filters_compile_where_seccomp_is_supported() {
    match ARCH {
        Some(_) => {
            assert!(!socket_filter().unwrap().is_empty());
            assert!(!file_owner_filter().unwrap().is_empty());
        }
        None => {
            assert!(socket_filter().is_err());
            assert!(file_owner_filter().is_err());
        }
    }
}

/// One raw system call: `Ok` or the errno.
fn sys(nr: i64, args: [i64; 5]) -> Result<(), i32> {
    // SAFETY: every call below passes integers and pointers to NUL-terminated strings that
    // outlive the call; none writes memory.
    let rc = unsafe { libc::syscall(nr, args[0], args[1], args[2], args[3], args[4]) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

/// A call to try, and whether the filter must refuse it.
struct Try {
    name: &'static str,
    nr: i64,
    args: [i64; 5],
    refused: bool,
}

/// Every form of chmod and chown on `file` (whose open descriptor is `fd`): setuid and setgid
/// modes and every chown must be refused, ordinary modes allowed.
fn table(path: &CString, fd: i64) -> Vec<Try> {
    let p = path.as_ptr() as i64;
    let at = libc::AT_FDCWD as i64;
    let t = |name, nr, args, refused| Try {
        name,
        nr,
        args,
        refused,
    };
    #[allow(unused_mut)]
    let mut calls = vec![
        t("fchmod u+s", libc::SYS_fchmod, [fd, 0o4755, 0, 0, 0], true),
        t("fchmod 600", libc::SYS_fchmod, [fd, 0o600, 0, 0, 0], false),
        t(
            "fchmodat g+s",
            libc::SYS_fchmodat,
            [at, p, 0o2755, 0, 0],
            true,
        ),
        t(
            "fchmodat 644",
            libc::SYS_fchmodat,
            [at, p, 0o644, 0, 0],
            false,
        ),
        t("fchmodat2 u+s", SYS_FCHMODAT2, [at, p, 0o4700, 0, 0], true),
        t("fchmodat2 g+s", SYS_FCHMODAT2, [at, p, 0o2700, 0, 0], true),
        t("fchown", libc::SYS_fchown, [fd, -1, -1, 0, 0], true),
        t("fchownat", libc::SYS_fchownat, [at, p, -1, -1, 0], true),
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        t("chmod u+s", libc::SYS_chmod, [p, 0o4755, 0, 0, 0], true),
        t("chmod g+s", libc::SYS_chmod, [p, 0o2755, 0, 0, 0], true),
        // Only the mode bits count: the rest of the register does not hide them.
        t(
            "chmod u+s high",
            libc::SYS_chmod,
            [p, (7 << 32) | 0o4755, 0, 0, 0],
            true,
        ),
        t("chmod 755", libc::SYS_chmod, [p, 0o755, 0, 0, 0], false),
        t(
            "x32 chmod u+s",
            0x4000_0000 + libc::SYS_chmod,
            [p, 0o4755, 0, 0, 0],
            true,
        ),
        t(
            "x32 fchmodat2 u+s",
            0x4000_0000 + SYS_FCHMODAT2,
            [at, p, 0o4755, 0, 0],
            true,
        ),
        t("chown", libc::SYS_chown, [p, -1, -1, 0, 0], true),
        t("lchown", libc::SYS_lchown, [p, -1, -1, 0, 0], true),
        t(
            "x32 fchownat",
            0x4000_0000 + libc::SYS_fchownat,
            [at, p, -1, -1, 0],
            true,
        ),
    ]);
    calls
}

/// Runs the table on a thread of its own, in `filter` when given (a filter binds only the
/// thread that installs it, and its children); returns each call's result by name.
fn run_table(filter: Option<BpfProgram>) -> Vec<(&'static str, bool, Result<(), i32>, u32)> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, "x").unwrap();
    let handle = std::fs::File::open(&file).unwrap();
    let path = CString::new(file.as_os_str().as_bytes()).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            if let Some(filter) = &filter {
                seccompiler::apply_filter(filter).unwrap();
            }
            use std::os::fd::AsRawFd;
            table(&path, handle.as_raw_fd().into())
                .into_iter()
                .map(|t| {
                    std::fs::set_permissions(&file, PermissionsExt::from_mode(0o644)).unwrap();
                    let got = sys(t.nr, t.args);
                    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
                    (t.name, t.refused, got, mode & 0o6000)
                })
                .collect()
        })
        .join()
        .unwrap()
    })
}

#[test]
fn setuid_modes_and_chown_are_refused_and_ordinary_modes_are_not() {
    if ARCH.is_none() {
        eprintln!("skipped: no seccomp filter for this architecture");
        return;
    }
    for (name, refused, got, special) in run_table(Some(file_owner_filter().unwrap())) {
        if refused {
            assert_eq!(got, Err(libc::EPERM), "{name} was not refused");
            assert_eq!(special, 0, "{name} set a setuid or setgid bit");
        } else {
            assert_eq!(got, Ok(()), "{name} was refused");
        }
    }
}

#[test]
fn without_the_filter_the_same_calls_set_setuid_bits() {
    // The control of the test above: each refused call does its harm without the filter.
    for (name, refused, got, special) in run_table(None) {
        if name.starts_with("x32") {
            // x32 is often compiled out (ENOSYS); what matters is that nothing but the filter
            // gave EPERM above.
            assert_ne!(got, Err(libc::EPERM), "{name}");
            continue;
        }
        if name.starts_with("fchmodat2") && got == Err(libc::ENOSYS) {
            eprintln!("note: this kernel has no fchmodat2 (Linux 6.6)");
            continue;
        }
        assert_eq!(got, Ok(()), "{name}");
        if refused && !name.contains("chown") {
            assert_ne!(special, 0, "{name} set no special bit even unfiltered");
        }
    }
}
