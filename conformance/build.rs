//! Links the system libzmq (the interop peer the tests run against).

fn main() {
    println!("cargo:rustc-link-lib=zmq");
    println!("cargo:rerun-if-changed=build.rs");
}
