//! Builds libzmq 4.3.5 from the source vendored in `zeromq-src`, with the draft API, `ws://`
//! and CURVE (through the system libsodium), and links it statically into this package and
//! every executable that depends on it.
//!
//! Such an executable must not also link the system libzmq (`-lzmq`): nothing would fail at
//! link time, the linker would silently answer every `zmq_*` call from whichever library
//! it met first. `zmtp-conformance` names no library, so depending on it is safe.
//!
//! libsodium is found with `pkg-config` (Debian's `libsodium-dev`). Its static library is
//! copied into a directory of its own, and that directory, not Debian's, is what
//! `zeromq-src` adds to the link search path: Debian's (`/usr/lib/x86_64-linux-gnu`) also
//! holds the system's static `libzmq.a` (4.3.4, no draft). Given Debian's directory, this
//! toolchain still bundled the libzmq built here (tried with rustc 1.95), but only search
//! order decides that, so the directory is kept out; the tests check the version anyway.

use std::env;
use std::path::PathBuf;
use std::process::Command;

/// `pkg-config --variable=NAME libsodium`.
fn libsodium_var(name: &str) -> PathBuf {
    let out = Command::new("pkg-config")
        .args([&format!("--variable={name}"), "libsodium"])
        .output()
        .unwrap_or_else(|e| panic!("pkg-config could not run ({e}): install pkg-config"));
    let value = String::from_utf8(out.stdout).expect("pkg-config prints UTF-8");
    let value = value.trim();
    assert!(
        out.status.success() && !value.is_empty(),
        "pkg-config knows no libsodium: install libsodium-dev ({})",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    PathBuf::from(value)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let libdir = libsodium_var("libdir");
    let includedir = libsodium_var("includedir");
    let archive = libdir.join("libsodium.a");
    assert!(
        archive.is_file(),
        "{} is missing: install libsodium-dev",
        archive.display()
    );
    println!("cargo:rerun-if-changed={}", archive.display());

    let private = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("sodium");
    std::fs::create_dir_all(&private).expect("create the libsodium directory");
    std::fs::copy(&archive, private.join("libsodium.a")).expect("copy libsodium.a");

    // libzmq's own sources raise a few compiler warnings (fall-through, unused parameters),
    // which `cc` would print as this package's warnings on every build: not ours to fix.
    for var in ["CFLAGS", "CXXFLAGS"] {
        let mut flags = env::var(var).unwrap_or_default();
        flags.push_str(" -w");
        env::set_var(var, flags);
    }

    let mut build = zeromq_src::Build::new();
    build.enable_draft(true);
    build.with_libsodium(Some(zeromq_src::LibLocation::new(private, includedir)));
    build.build();
}
