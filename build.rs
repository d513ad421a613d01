//! Links the `rounds` binary as a non-PIE executable on Linux. A PIE must apply ~800 KB of
//! relocations and dirty ~600 KB of `.data.rel.ro` at every start, which is most of the gap
//! between rounds' peak RSS and its 10 MiB target (see the README's benchmark). Only the binary
//! is affected (`rustc-link-arg-bins`): tests, benches and proc-macros link as usual.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
