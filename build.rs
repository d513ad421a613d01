//! Links the `rounds` binary with packed relative relocations (DT_RELR) where the toolchain
//! and the C library support them.
//!
//! A position-independent Rust binary carries one 24-byte relocation record per pointer in
//! its read-only data (vtables, string tables): about 49,000 of them, 1.2 MB that the dynamic
//! loader reads at every start. Packed, they take 15 KB, and peak RSS drops by as much
//! (docs/benchmarks.md, "Peak RSS"). The loader of glibc 2.36 and later reads the packed form;
//! an older one cannot, and the binary would not start. So the flag is not assumed: a small
//! program is linked with it, by the same rustc and linker, and run. Where it does not run
//! (an older C library, a linker without the option) or cannot be run here (a cross build),
//! the binary is linked as before.

use std::path::PathBuf;
use std::process::Command;

const FLAG: &str = "-Wl,-z,pack-relative-relocs";

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=ROUNDS_NO_RELR");
    if std::env::var_os("ROUNDS_NO_RELR").is_some() {
        return;
    }
    let (Some(target), Some(host)) = (var("TARGET"), var("HOST")) else {
        return;
    };
    if target != host || !target.ends_with("-linux-gnu") {
        return;
    }
    if probe(&target) {
        println!("cargo::rustc-link-arg-bins={FLAG}");
        // For tests/suite/integrate.rs, which checks the binary is linked so.
        println!("cargo::rustc-env=ROUNDS_RELR=1");
    } else {
        println!(
            "cargo::warning=linking without packed relocations: this toolchain or C library does not support them"
        );
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Whether a program linked with [`FLAG`] builds and runs correctly here. Its table of
/// string slices is pointers the loader must relocate: read wrongly, the program fails.
fn probe(target: &str) -> bool {
    let Some(out) = var("OUT_DIR").map(PathBuf::from) else {
        return false;
    };
    let source = out.join("relr_probe.rs");
    let program = out.join("relr_probe");
    let text = "static WORDS: [&str; 3] = [\"packed\", \"relative\", \"relocations\"];\n\
                fn main() {\n\
                    let words = std::hint::black_box(&WORDS);\n\
                    std::process::exit(if words.concat().len() == 25 { 0 } else { 1 });\n\
                }\n";
    if std::fs::write(&source, text).is_err() {
        return false;
    }
    let rustc = var("RUSTC").unwrap_or_else(|| "rustc".to_owned());
    let mut compile = Command::new(rustc);
    compile
        .arg("--edition=2021")
        .arg("--target")
        .arg(target)
        .arg("-Crelocation-model=pie")
        .arg(format!("-Clink-arg={FLAG}"))
        .arg("-o")
        .arg(&program)
        .arg(&source);
    if let Some(linker) = var("RUSTC_LINKER") {
        compile.arg(format!("-Clinker={linker}"));
    }
    let built = compile.output().is_ok_and(|output| output.status.success());
    built
        && Command::new(&program)
            .status()
            .is_ok_and(|status| status.success())
}
