//! Links the system libzmq into this package's tests, which run the `zmtp` command against
//! libzmq peers through `zmtp_conformance::ffi` (a dev-dependency that names no library
//! itself). The `zmtp` command does not use libzmq and is built without it.

fn main() {
    println!("cargo:rustc-link-arg-tests=-lzmq");
    println!("cargo:rerun-if-changed=build.rs");
}
