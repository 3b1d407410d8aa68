//! Links the system libzmq, the implementation the benchmark compares against.

fn main() {
    println!("cargo:rustc-link-lib=zmq");
    println!("cargo:rerun-if-changed=build.rs");
}
