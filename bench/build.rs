//! Links the system libzmq (the libzmq column of the benchmark, through
//! `zmtp_conformance::ffi`, which names no library itself) into this package's executables.

fn main() {
    println!("cargo:rustc-link-arg=-lzmq");
    println!("cargo:rerun-if-changed=build.rs");
}
