//! Link settings for the `rounds` binary that keep its peak memory low (see the README's
//! benchmark). Only the binary is affected (`rustc-link-arg-bins`): tests, benches and
//! proc-macros link as usual.
//!
//! - Non-PIE on Linux: a PIE must apply ~800 KB of relocations and dirty ~600 KB of
//!   `.data.rel.ro` at every start.
//! - In release builds with rust-lld (the default linker for x86_64-unknown-linux-gnu since Rust
//!   1.90), `bench/symbol-order.txt` lists the functions a typical run executes so the linker
//!   puts them together; otherwise they are scattered over ~10 MB of code and most of it ends up
//!   mapped. `ROUNDS_NO_SYMBOL_ORDER=1` turns this off (bench/symbol-order.sh regenerates the
//!   file with it off).

use std::path::Path;
use std::process::Command;

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    let order = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/symbol-order.txt");
    if ordering_is_safe() && order.exists() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        // The file also names functions of other libraries and of older builds: not errors.
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=bench/symbol-order.txt");
    println!("cargo:rerun-if-env-changed=ROUNDS_NO_SYMBOL_ORDER");
}

/// Whether the linker is rust-lld, which understands `--symbol-ordering-file`: a release build
/// for x86_64-unknown-linux-gnu with rustc 1.90 or later and no custom linker.
fn ordering_is_safe() -> bool {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("ROUNDS_NO_SYMBOL_ORDER") == "1" || var("PROFILE") != "release" {
        return false;
    }
    if var("TARGET") != "x86_64-unknown-linux-gnu" {
        return false;
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    if flags.contains("linker")
        || std::env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some()
    {
        return false;
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = Command::new(rustc).arg("--version").output().ok();
    let minor = version
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| v.split_whitespace().nth(1).map(str::to_owned))
        .and_then(|v| v.split('.').nth(1).and_then(|m| m.parse::<u32>().ok()));
    minor.is_some_and(|m| m >= 90)
}
