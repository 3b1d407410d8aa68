//! Gives the shared library libzmq's soname, so that programs linked against it (or
//! against libzmq itself) load it as `libzmq.so.5`.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" || os.ends_with("bsd") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libzmq.so.5");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
