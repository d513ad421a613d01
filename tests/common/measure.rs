//! Running a process to its end while sampling its peak RSS, for the benchmarks.

// Each bench reads only what it reports.
#![allow(dead_code)]

use std::process::Command;
use std::time::{Duration, Instant};

/// What a measured run came to.
pub struct Measured {
    /// The exit code (-1 for a signal).
    pub code: i32,
    pub wall: Duration,
    /// `VmHWM` from `/proc`, sampled every millisecond, in KiB.
    pub peak_kib: u64,
    /// The largest `RssAnon` sampled, in KiB: the part of the peak that is the process's own
    /// memory (heap, stacks, relocated data). The rest is the binary's and the C library's
    /// pages, shared with every process that maps them, and how many of those are mapped
    /// depends on how the kernel holds the file in its page cache as much as on the code.
    pub anon_kib: u64,
}

/// Runs `cmd` to completion, sampling the child's peak RSS.
pub fn measured(mut cmd: Command) -> Measured {
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let status = format!("/proc/{}/status", child.id());
    let (mut peak_kib, mut anon_kib) = (0, 0);
    loop {
        if let Ok(text) = std::fs::read_to_string(&status) {
            let kib = |field: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(field))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                    .unwrap_or(0)
            };
            peak_kib = peak_kib.max(kib("VmHWM:"));
            anon_kib = anon_kib.max(kib("RssAnon:"));
        }
        if let Some(code) = child.try_wait().unwrap() {
            return Measured {
                code: code.code().unwrap_or(-1),
                wall: started.elapsed(),
                peak_kib,
                anon_kib,
            };
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
