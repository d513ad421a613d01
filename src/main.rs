//! The `rounds` binary: parse, run, exit. Everything else lives in the library.

use std::process::ExitCode;

fn main() -> ExitCode {
    // Nothing reads the loader's relocation table again: a release's binary (no packed
    // relocations) holds 0.9 MiB less for the whole run, and so does every tool's supervisor.
    rounds_process::relocations::release();
    // Tool processes run under a re-exec of this binary (see `process::supervisor`).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|a| a == rounds_process::SUPERVISE_ARG)
    {
        let code = rounds_process::supervisor::main(&args[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // Before anything else runs: a key file's path or a store's URL in rounds' command line
    // is readable by every process of the machine, its tools included.
    rounds_process::argv::hide_values(&args);
    ExitCode::from(rounds::main(args))
}
