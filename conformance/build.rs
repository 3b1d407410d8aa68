//! Links the system libzmq (Debian's 4.3.4, the interop peer) into this package's own
//! executables only: the library's unit tests, the integration tests and the doctests.
//!
//! The library itself is link-neutral: `src/ffi.rs` declares libzmq's functions without a
//! `#[link]` attribute, and this script emits `rustc-link-arg` (which applies to this
//! package's targets) rather than `rustc-link-lib` (which would follow the library into
//! every dependent). Each dependent chooses its libzmq: `bench/` and `zmtp-cli/` link the
//! system one in their own build scripts, `conformance-draft/` links a static draft build.
//! A binary must never get both: the linker would silently pick whichever it meets first.

fn main() {
    println!("cargo:rustc-link-arg=-lzmq");
    println!("cargo:rerun-if-changed=build.rs");
}
