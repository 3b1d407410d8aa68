//! The library as C programs see it: the shared object's name and symbols, and programs
//! from the ZeroMQ guide compiled against our `zmq.h` and linked to our `libzmq.so.5`,
//! talking to the same programs linked to the system's libzmq, both ways.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The directory holding the `libzmq.so` cargo built for these tests.
fn built_library() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let deps = exe.parent().expect("the test's directory");
    for dir in [deps, deps.parent().unwrap_or(deps)] {
        let lib = dir.join("libzmq.so");
        if lib.exists() {
            return lib;
        }
    }
    panic!("libzmq.so not found next to {}", exe.display());
}

/// A fresh directory with `libzmq.so` and `libzmq.so.5` naming our library.
fn library_dir() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "zmtp-libzmq-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let lib = built_library();
    for name in ["libzmq.so", "libzmq.so.5"] {
        std::os::unix::fs::symlink(&lib, dir.join(name)).unwrap();
    }
    dir
}

fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(name)
}

/// Which libzmq a program is built against and linked to.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Lib {
    /// Our header and library.
    Ours,
    /// The system's libzmq (Debian's libzmq3-dev).
    System,
}

/// Compile `name` (in `tests/c/`) into `dir` against `lib`.
fn compile(name: &str, lib: Lib, dir: &Path) -> PathBuf {
    let out = dir.join(format!("{}-{lib:?}", name.trim_end_matches(".c")));
    let mut cc = Command::new("cc");
    cc.arg("-Wall")
        .arg("-Werror")
        .arg("-o")
        .arg(&out)
        .arg(source(name));
    if lib == Lib::Ours {
        let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
        cc.arg("-I").arg(include).arg("-L").arg(dir);
        cc.arg(format!("-Wl,-rpath,{}", dir.display()));
    }
    cc.arg("-lzmq");
    let done = cc.output().expect("a C compiler (cc)");
    assert!(
        done.status.success(),
        "cc {name} ({lib:?}): {}",
        String::from_utf8_lossy(&done.stderr)
    );
    out
}

fn system_libzmq() -> bool {
    Path::new("/usr/include/zmq.h").exists()
}

fn free_endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    format!("tcp://{}", listener.local_addr().unwrap())
}

/// Wait for `child`, at most `limit`; kill it if it takes longer.
fn finish(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "timed out; stdout {:?} stderr {:?}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn spawn(program: &Path, args: &[&str]) -> Child {
    Command::new(program)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// What a program printed, checked to have succeeded.
fn stdout_of(out: &Output, who: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{who} failed: {:?}; stdout {stdout:?} stderr {:?}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The version a program reports: ours says 4.3.5; the system's library what its header
/// says (4.3.4 on Debian 12), so a program loading the wrong library is caught.
fn version_of(lib: Lib) -> String {
    match lib {
        Lib::Ours => "4.3.5".into(),
        Lib::System => {
            let header = std::fs::read_to_string("/usr/include/zmq.h").unwrap_or_default();
            let part = |name: &str| {
                header
                    .lines()
                    .find_map(|l| l.strip_prefix(&format!("#define ZMQ_VERSION_{name} ")))
                    .unwrap_or("?")
                    .trim()
                    .to_owned()
            };
            format!("{}.{}.{}", part("MAJOR"), part("MINOR"), part("PATCH"))
        }
    }
}

fn request_reply(server_lib: Lib, client_lib: Lib, client_args: &[&str]) {
    let dir = library_dir();
    let server = compile("hwserver.c", server_lib, &dir);
    let client = compile("hwclient.c", client_lib, &dir);
    let endpoint = free_endpoint();
    let count = "20";
    let server = spawn(&server, &[&endpoint, count]);
    let mut args = vec![endpoint.as_str(), count];
    args.extend_from_slice(client_args);
    let client = spawn(&client, &args);
    let client_out = stdout_of(&finish(client, Duration::from_secs(30)), "client");
    let server_out = stdout_of(&finish(server, Duration::from_secs(30)), "server");
    println!("{server_lib:?} server: {server_out}{client_lib:?} client: {client_out}");
    assert!(
        client_out.starts_with(&format!("client done {}", version_of(client_lib))),
        "{client_out}"
    );
    assert!(
        server_out.starts_with(&format!("server done {}", version_of(server_lib))),
        "{server_out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ours_with_ours() {
    request_reply(Lib::Ours, Lib::Ours, &[]);
    request_reply(Lib::Ours, Lib::Ours, &["poll"]);
}

#[test]
fn our_server_system_client() {
    if !system_libzmq() {
        eprintln!("skipped: no system libzmq (/usr/include/zmq.h)");
        return;
    }
    request_reply(Lib::Ours, Lib::System, &[]);
    request_reply(Lib::Ours, Lib::System, &["poll"]);
}

#[test]
fn system_server_our_client() {
    if !system_libzmq() {
        eprintln!("skipped: no system libzmq (/usr/include/zmq.h)");
        return;
    }
    request_reply(Lib::System, Lib::Ours, &[]);
    request_reply(Lib::System, Lib::Ours, &["poll"]);
}

#[test]
fn soname_and_symbols() {
    let lib = built_library();
    let dynamic = Command::new("readelf").arg("-d").arg(&lib).output();
    let Ok(dynamic) = dynamic else {
        eprintln!("skipped: no readelf");
        return;
    };
    let dynamic = String::from_utf8_lossy(&dynamic.stdout);
    assert!(
        dynamic.contains("Library soname: [libzmq.so.5]"),
        "{dynamic}"
    );
    let symbols = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .expect("nm");
    let symbols = String::from_utf8_lossy(&symbols.stdout);
    let exported: Vec<&str> = symbols
        .lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let (_, kind, name) = (parts.next()?, parts.next()?, parts.next()?);
            (kind == "T").then_some(name)
        })
        .collect();
    for name in [
        "zmq_version",
        "zmq_errno",
        "zmq_strerror",
        "zmq_has",
        "zmq_ctx_new",
        "zmq_ctx_term",
        "zmq_ctx_shutdown",
        "zmq_ctx_set",
        "zmq_ctx_get",
        "zmq_init",
        "zmq_term",
        "zmq_ctx_destroy",
        "zmq_socket",
        "zmq_close",
        "zmq_setsockopt",
        "zmq_getsockopt",
        "zmq_bind",
        "zmq_connect",
        "zmq_unbind",
        "zmq_disconnect",
        "zmq_send",
        "zmq_send_const",
        "zmq_recv",
        "zmq_msg_init",
        "zmq_msg_init_size",
        "zmq_msg_init_data",
        "zmq_msg_init_buffer",
        "zmq_msg_send",
        "zmq_msg_recv",
        "zmq_msg_close",
        "zmq_msg_move",
        "zmq_msg_copy",
        "zmq_msg_data",
        "zmq_msg_size",
        "zmq_msg_more",
        "zmq_msg_get",
        "zmq_msg_set",
        "zmq_msg_gets",
        "zmq_msg_routing_id",
        "zmq_msg_set_routing_id",
        "zmq_msg_group",
        "zmq_msg_set_group",
        "zmq_sendmsg",
        "zmq_recvmsg",
        "zmq_poll",
        "zmq_ppoll",
        "zmq_socket_get_peer_state",
        "zmq_proxy",
        "zmq_proxy_steerable",
        "zmq_z85_encode",
        "zmq_z85_decode",
        "zmq_curve_keypair",
        "zmq_curve_public",
        "zmq_atomic_counter_new",
        "zmq_atomic_counter_set",
        "zmq_atomic_counter_inc",
        "zmq_atomic_counter_dec",
        "zmq_atomic_counter_value",
        "zmq_atomic_counter_destroy",
        "zmq_stopwatch_start",
        "zmq_stopwatch_intermediate",
        "zmq_stopwatch_stop",
        "zmq_sleep",
        "zmq_join",
        "zmq_leave",
        "zmq_connect_peer",
    ] {
        assert!(exported.contains(&name), "{name} is not exported");
    }
    // Only the C API: no Rust symbols leak out as exported functions.
    let foreign: Vec<&&str> = exported.iter().filter(|n| !n.starts_with("zmq_")).collect();
    assert!(foreign.is_empty(), "exported beyond the C API: {foreign:?}");
}

/// `ZMQ_FD` in `poll(2)` with `ZMQ_EVENTS`, libzmq's edge-triggered way, on our library
/// and (for comparison, the same program) on the system's.
#[test]
fn fd_and_events_in_an_event_loop() {
    let dir = library_dir();
    let mut libs = vec![Lib::Ours];
    if system_libzmq() {
        libs.push(Lib::System);
    }
    for lib in libs {
        let program = compile("fd_events.c", lib, &dir);
        let out = finish(spawn(&program, &["500"]), Duration::from_secs(60));
        let stdout = stdout_of(&out, "fd_events");
        println!("{lib:?}: {stdout}");
        assert!(stdout.starts_with("fd ok 500"), "{stdout}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Build `name` (in `tests/c/`) with `compiler` and `flags` against our header, linked
/// with `libs` found first in `dir` (our library), whose path the program keeps.
fn build_binding(compiler: &str, flags: &[&str], name: &str, libs: &[&str], dir: &Path) -> PathBuf {
    let out = dir.join(name.split('.').next().unwrap_or(name));
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let done = Command::new(compiler)
        .args(flags)
        .arg(source(name))
        .arg("-I")
        .arg(include)
        .arg("-L")
        .arg(dir)
        .arg(format!("-Wl,-rpath,{}", dir.display()))
        .args(libs)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("{compiler}: {e}"));
    assert!(
        done.status.success(),
        "{compiler} {name}: {}",
        String::from_utf8_lossy(&done.stderr)
    );
    out
}

/// cppzmq (Debian's cppzmq-dev), a binding written for libzmq, compiled against our header
/// and linked to our library.
#[test]
fn cppzmq_binding() {
    if !Path::new("/usr/include/zmq.hpp").exists() {
        eprintln!("skipped: no cppzmq (/usr/include/zmq.hpp)");
        return;
    }
    let dir = library_dir();
    let out = build_binding("c++", &["-std=c++17"], "cppzmq_hello.cpp", &["-lzmq"], &dir);
    let run = finish(spawn(&out, &[]), Duration::from_secs(30));
    let stdout = stdout_of(&run, "cppzmq_hello");
    assert_eq!(stdout.trim(), "World from 4.3.5");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A program that sends and returns from `main` without `zmq_ctx_term` (closing nothing,
/// or only its socket) loses nothing: the library's exit hook closes what is open and
/// waits for what was queued, per `ZMQ_LINGER`. Before the hook, 0.5 % of 100,000 was lost.
/// A cleanup the program registered with `atexit` before its first context, which runs
/// after the hook, still closes and terminates successfully.
#[test]
fn exit_without_closing_loses_nothing() {
    let dir = library_dir();
    let program = compile("exit_without_close.c", Lib::Ours, &dir);
    let ctx = zmtp_mio::Context::new().unwrap();
    for mode in ["open", "closed", "cleanup"] {
        let pull = ctx.socket(zmtp_mio::SocketType::Pull).unwrap();
        let endpoint = pull.bind("tcp://127.0.0.1:*").unwrap();
        let count = 100_000;
        let sender = spawn(&program, &[&endpoint, &count.to_string(), mode]);
        let out = stdout_of(&finish(sender, Duration::from_secs(60)), mode);
        assert_eq!(out.trim(), format!("sent {count}"));
        // Everything was written before the program ended: it is all here already.
        let mut received = 0;
        while let Ok(msg) = pull.recv_timeout(Some(Duration::from_millis(500))) {
            assert_eq!(msg.to_string(), format!("message {received}"), "{mode}");
            received += 1;
        }
        assert_eq!(received, count, "{mode}: messages received");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// With no peer, the exit waits per `ZMQ_LINGER` and says on standard error what it
/// waits for and what it lost: never a quiet loss.
#[test]
fn exit_without_a_peer_says_what_it_lost() {
    let dir = library_dir();
    let program = compile("exit_without_close.c", Lib::Ours, &dir);
    let nobody = free_endpoint();

    // LINGER 300 ms: the program ends after it, naming the lost messages.
    let start = Instant::now();
    let out = finish(
        spawn(&program, &[&nobody, "5", "linger=300"]),
        Duration::from_secs(30),
    );
    let stdout = stdout_of(&out, "linger=300");
    assert_eq!(stdout.trim(), "sent 5");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("a PUSH socket lost 5 message(s)") && stderr.contains(&nobody),
        "{stderr}"
    );
    assert!(start.elapsed() >= Duration::from_millis(300));

    // The default LINGER (forever): the program waits, and after two seconds says why.
    let mut child = spawn(&program, &[&nobody, "1", "open"]);
    std::thread::sleep(Duration::from_secs(3));
    assert!(child.try_wait().unwrap().is_none(), "it must still wait");
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("waiting for a PUSH socket to write 1 message(s)")
            && stderr.contains(&nobody),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// pyzmq (the wheel from PyPI, which bundles a libzmq of its own) with our library
/// preloaded in its place: REQ/REP, multipart ROUTER/DEALER, PUB/SUB with a filter and
/// `zmq.Poller`, zero-copy frames (`zmq_msg_init_data` with a free function), a monitor,
/// and `zmq.asyncio` (`ZMQ_FD` and `ZMQ_EVENTS`, edge-triggered). The threads the context
/// starts show which library runs: ours names its I/O thread `zmtp-mio`.
#[test]
fn pyzmq_binding() {
    let has_pyzmq = Command::new("python3")
        .args(["-c", "import zmq"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_pyzmq {
        eprintln!("skipped: no pyzmq for python3 (the test command installs it)");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/pyzmq_smoke.py");
    let child = Command::new("python3")
        .arg(&script)
        .env("LD_PRELOAD", built_library())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    let out = stdout_of(&finish(child, Duration::from_secs(120)), "pyzmq");
    println!("{out}");
    let threads = out
        .lines()
        .find(|l| l.starts_with("threads:"))
        .unwrap_or("");
    assert!(
        threads.split_whitespace().any(|t| t == "zmtp-mio"),
        "not our library: {threads}"
    );
    assert!(out.trim_end().ends_with("all ok"), "{out}");
}

/// czmq (Debian's libczmq, built against libzmq) loading our `libzmq.so.5`: zsock REQ/REP,
/// PUB/SUB with a zpoller, and a zactor (whose pipe is an inproc PAIR) echoing a
/// multipart zmsg.
#[test]
fn czmq_binding() {
    if !Path::new("/usr/include/czmq.h").exists() {
        eprintln!("skipped: no czmq (/usr/include/czmq.h; the test command installs it)");
        return;
    }
    let dir = library_dir();
    let out = build_binding(
        "cc",
        &["-Wall", "-Werror"],
        "czmq_smoke.c",
        &["-lczmq", "-lzmq"],
        &dir,
    );
    // libczmq needs libzmq.so.5 itself: the loader's path makes it ours.
    let child = Command::new(&out)
        .env("LD_LIBRARY_PATH", &dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = stdout_of(&finish(child, Duration::from_secs(30)), "czmq_smoke");
    println!("{stdout}");
    assert!(stdout.starts_with("libzmq 4.3.5\n"), "not ours: {stdout}");
    assert!(stdout.trim_end().ends_with("all ok"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
