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

/// One raw call to make, on the filtered thread.
type Call = Box<dyn Fn() -> Result<(), i32> + Send>;

/// Runs `calls` (each a name and a closure making one raw call) on a thread of its own, in
/// `filter` when given; returns each result by name.
fn on_thread(
    filter: Option<BpfProgram>,
    calls: Vec<(&'static str, Call)>,
) -> Vec<(&'static str, Result<(), i32>)> {
    std::thread::spawn(move || {
        if let Some(filter) = &filter {
            seccompiler::apply_filter(filter).unwrap();
        }
        calls
            .into_iter()
            .map(|(name, call)| (name, call()))
            .collect()
    })
    .join()
    .unwrap()
}

/// Calls that reach another process by its pid (`other`) or the caller itself (pid 0), each
/// setting what the target already has, so the unfiltered control changes nothing; and whether
/// the filter must refuse it.
fn process_calls(other: i64) -> Vec<(&'static str, bool, Call)> {
    let prlimit = move |pid: i64| {
        move || {
            let mut now = libc::rlimit64 {
                rlim_cur: 0,
                rlim_max: 0,
            };
            let null = std::ptr::null::<libc::rlimit64>() as i64;
            let now_ptr = &mut now as *mut libc::rlimit64 as i64;
            sys(
                libc::SYS_prlimit64,
                [pid, libc::RLIMIT_CORE as i64, null, now_ptr, 0],
            )?;
            let same = &now as *const libc::rlimit64 as i64;
            sys(
                libc::SYS_prlimit64,
                [pid, libc::RLIMIT_CORE as i64, same, 0, 0],
            )
        }
    };
    let affinity = move |pid: i64| {
        move || {
            let mut mask = [0u8; 128];
            let ptr = mask.as_mut_ptr() as i64;
            // sched_getaffinity returns the size it wrote.
            // SAFETY: the kernel writes at most 128 bytes into `mask`.
            let n = unsafe { libc::syscall(libc::SYS_sched_getaffinity, pid, 128, ptr) };
            if n < 0 {
                return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
            }
            sys(libc::SYS_sched_setaffinity, [pid, n, ptr, 0, 0])
        }
    };
    let priority = move |pid: i64| {
        move || {
            // SAFETY: getpriority takes integers.
            let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, pid as libc::id_t) };
            sys(
                libc::SYS_setpriority,
                [libc::PRIO_PROCESS as i64, pid, nice.into(), 0, 0],
            )
        }
    };
    let ioprio = move |pid: i64| {
        move || {
            // SAFETY: ioprio_get takes integers.
            let now = unsafe { libc::syscall(libc::SYS_ioprio_get, 1, pid) };
            sys(libc::SYS_ioprio_set, [1, pid, now, 0, 0])
        }
    };
    let scheduler = move |pid: i64| {
        move || {
            let mut param = libc::sched_param { sched_priority: 0 };
            let ptr = &mut param as *mut libc::sched_param as i64;
            sys(libc::SYS_sched_getparam, [pid, ptr, 0, 0, 0])?;
            sys(libc::SYS_sched_setparam, [pid, ptr, 0, 0, 0])
        }
    };
    vec![
        ("prlimit other", true, Box::new(prlimit(other))),
        ("prlimit self", false, Box::new(prlimit(0))),
        ("sched_setaffinity other", true, Box::new(affinity(other))),
        ("sched_setaffinity self", false, Box::new(affinity(0))),
        ("setpriority other", true, Box::new(priority(other))),
        ("setpriority self", false, Box::new(priority(0))),
        ("ioprio_set other", true, Box::new(ioprio(other))),
        ("ioprio_set self", false, Box::new(ioprio(0))),
        ("sched_setparam other", true, Box::new(scheduler(other))),
        ("sched_setparam self", false, Box::new(scheduler(0))),
        (
            "keyctl session keyring",
            true,
            // KEYCTL_GET_KEYRING_ID of KEY_SPEC_SESSION_KEYRING, without creating one.
            Box::new(|| sys(libc::SYS_keyctl, [0, -3, 0, 0, 0])),
        ),
    ]
}

#[test]
fn limits_priorities_and_affinity_of_other_processes_are_refused_and_of_self_are_not() {
    if ARCH.is_none() {
        eprintln!("skipped: no seccomp filter for this architecture");
        return;
    }
    let mut target = std::process::Command::new("sleep")
        .arg("5")
        .spawn()
        .unwrap();
    let other = i64::from(target.id());
    let run = |filter| {
        let calls = process_calls(other);
        let refused: Vec<bool> = calls.iter().map(|c| c.1).collect();
        let results = on_thread(filter, calls.into_iter().map(|(n, _, f)| (n, f)).collect());
        results.into_iter().zip(refused).collect::<Vec<_>>()
    };
    for ((name, got), refused) in run(Some(process_filter().unwrap())) {
        if refused {
            assert_eq!(got, Err(libc::EPERM), "{name} was not refused");
        } else {
            assert_eq!(got, Ok(()), "{name} was refused");
        }
    }
    // The control: unfiltered, every call reaches its target (the keyring may not exist).
    for ((name, got), _) in run(None) {
        if name.starts_with("keyctl") {
            assert_ne!(got, Err(libc::EPERM), "{name}");
        } else {
            assert_eq!(got, Ok(()), "{name} failed unfiltered");
        }
    }
    let _ = target.kill();
    let _ = target.wait();
}

/// Each way of making a file with a mode, in `dir`: setuid and setgid refused, 0644 not.
fn create_calls_table(dir: &std::path::Path) -> Vec<(String, bool, Call)> {
    let path = |name: &str| CString::new(dir.join(name).as_os_str().as_bytes()).unwrap();
    let at = libc::AT_FDCWD as i64;
    let mut calls: Vec<(String, bool, Call)> = Vec::new();
    for (mode, refused) in [
        (0o4755, true),
        (0o2755, true),
        (0o6755, true),
        (0o644, false),
    ] {
        let p = path(&format!("openat-{mode:o}"));
        calls.push((
            format!("openat O_CREAT {mode:o}"),
            refused,
            Box::new(move || {
                let flags = (libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC) as i64;
                // SAFETY: openat of a C string we hold.
                let fd = unsafe { libc::syscall(libc::SYS_openat, at, p.as_ptr(), flags, mode) };
                if fd < 0 {
                    return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
                }
                // SAFETY: the descriptor is ours.
                unsafe { libc::close(fd as i32) };
                Ok(())
            }),
        ));
        let p = path(&format!("mknodat-{mode:o}"));
        calls.push((
            format!("mknodat S_IFREG {mode:o}"),
            refused,
            Box::new(move || {
                let mode = i64::from(libc::S_IFREG) | mode;
                sys(libc::SYS_mknodat, [at, p.as_ptr() as i64, mode, 0, 0])
            }),
        ));
        #[cfg(target_arch = "x86_64")]
        {
            let p = path(&format!("creat-{mode:o}"));
            calls.push((
                format!("creat {mode:o}"),
                refused,
                Box::new(move || {
                    // SAFETY: creat of a C string we hold.
                    let fd = unsafe { libc::syscall(libc::SYS_creat, p.as_ptr(), mode) };
                    if fd < 0 {
                        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
                    }
                    // SAFETY: the descriptor is ours.
                    unsafe { libc::close(fd as i32) };
                    Ok(())
                }),
            ));
        }
    }
    // openat without O_CREAT ignores its mode: not refused, whatever the register holds.
    let p = path("openat-4755");
    calls.push((
        "openat existing, no O_CREAT, mode 4755".into(),
        false,
        Box::new(move || {
            // SAFETY: openat of a C string we hold.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_openat,
                    at,
                    p.as_ptr(),
                    libc::O_RDONLY as i64,
                    0o4755,
                )
            };
            if fd < 0 {
                return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
            }
            // SAFETY: the descriptor is ours.
            unsafe { libc::close(fd as i32) };
            Ok(())
        }),
    ));
    calls
}

#[test]
fn files_cannot_be_created_setuid_or_setgid_and_openat2_looks_absent() {
    if ARCH.is_none() {
        eprintln!("skipped: no seccomp filter for this architecture");
        return;
    }
    let filtered = tempfile::tempdir().unwrap();
    let calls = create_calls_table(filtered.path());
    let refused: Vec<(String, bool)> = calls.iter().map(|c| (c.0.clone(), c.1)).collect();
    // The existing file the last row opens, made before the filter.
    std::fs::write(filtered.path().join("openat-4755"), "").unwrap();
    let results = on_thread(
        Some(file_owner_filter().unwrap()),
        calls.into_iter().map(|(_, _, f)| ("", f)).collect(),
    );
    for ((name, refused), (_, got)) in refused.iter().zip(results) {
        if *refused {
            assert_eq!(got, Err(libc::EPERM), "{name} was not refused");
        } else {
            assert_eq!(got, Ok(()), "{name} was refused");
        }
    }
    for entry in std::fs::read_dir(filtered.path()).unwrap() {
        let mode = entry.unwrap().metadata().unwrap().permissions().mode();
        assert_eq!(mode & 0o6000, 0, "a special bit was set");
    }
    // The control: unfiltered, the same calls make files with the bits (root keeps them; any
    // user keeps setuid on their own file).
    let open = tempfile::tempdir().unwrap();
    let calls = create_calls_table(open.path());
    std::fs::write(open.path().join("openat-4755"), "").unwrap();
    std::fs::remove_file(open.path().join("openat-4755")).unwrap();
    let results = on_thread(None, calls.into_iter().map(|(_, _, f)| ("", f)).collect());
    assert!(results.iter().all(|(_, got)| got.is_ok()), "{results:?}");
    let special = std::fs::read_dir(open.path())
        .unwrap()
        .filter(|e| {
            let mode = e.as_ref().unwrap().metadata().unwrap().permissions().mode();
            mode & 0o4000 != 0
        })
        .count();
    assert!(special >= 2, "setuid files made unfiltered: {special}");

    // struct open_how: flags, mode, resolve.
    let how: [u64; 3] = [(libc::O_CREAT | libc::O_WRONLY) as u64, 0o4755, 0];
    let p = CString::new(open.path().join("openat2").as_os_str().as_bytes()).unwrap();
    let openat2 = move || {
        let size = std::mem::size_of_val(&how) as i64;
        let how = how.as_ptr() as i64;
        sys(
            SYS_OPENAT2,
            [libc::AT_FDCWD as i64, p.as_ptr() as i64, how, size, 0],
        )
    };
    let got = on_thread(
        Some(openat2_filter().unwrap()),
        vec![("openat2", Box::new(openat2))],
    );
    assert_eq!(got[0].1, Err(libc::ENOSYS));
}

#[test]
fn sysv_ipc_mounts_and_namespaces_are_refused() {
    if ARCH.is_none() {
        eprintln!("skipped: no seccomp filter for this architecture");
        return;
    }
    let shmget = || {
        // SAFETY: shmget and shmctl take integers; the segment made is removed at once.
        let id = unsafe { libc::shmget(libc::IPC_PRIVATE, 4096, libc::IPC_CREAT | 0o600) };
        if id < 0 {
            return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
        }
        unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
        Ok(())
    };
    let msgget = || sys(libc::SYS_msgget, [libc::IPC_PRIVATE as i64, 0o600, 0, 0, 0]);
    let got = on_thread(
        Some(ipc_filter().unwrap()),
        vec![("shmget", Box::new(shmget)), ("msgget", Box::new(msgget))],
    );
    assert_eq!(
        got,
        [("shmget", Err(libc::EPERM)), ("msgget", Err(libc::EPERM))]
    );
    let control = on_thread(None, vec![("shmget", Box::new(shmget))]);
    assert_eq!(control, [("shmget", Ok(()))]);

    // unshare(0) changes nothing and succeeds unfiltered.
    let unshare = || sys(libc::SYS_unshare, [0, 0, 0, 0, 0]);
    let umount = || {
        sys(
            libc::SYS_umount2,
            [c"/nonexistent".as_ptr() as i64, 0, 0, 0, 0],
        )
    };
    let got = on_thread(
        Some(namespace_filter().unwrap()),
        vec![
            ("unshare", Box::new(unshare)),
            ("umount2", Box::new(umount)),
        ],
    );
    assert_eq!(
        got,
        [("unshare", Err(libc::EPERM)), ("umount2", Err(libc::EPERM))]
    );
    let control = on_thread(None, vec![("unshare", Box::new(unshare))]);
    assert_eq!(control, [("unshare", Ok(()))]);
}
