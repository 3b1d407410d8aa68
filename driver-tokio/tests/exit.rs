//! A program that sends and then ends delivers every message: the example
//! `tokio_send_and_exit` run as a process, against a PULL that counts what arrives.

#[test]
fn a_program_that_sends_and_exits_delivers_every_message() {
    zmtp_testkit::programs::sends_and_exits_delivering_everything("tokio_send_and_exit");
}

/// The warnings logged through `log` by this test binary.
struct Warnings(std::sync::Mutex<Vec<String>>);

impl log::Log for Warnings {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Warn
    }
    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
            seen.push(record.args().to_string());
        }
    }
    fn flush(&self) {}
}

static WARNINGS: Warnings = Warnings(std::sync::Mutex::new(Vec::new()));

#[test]
fn a_socket_whose_runtime_ends_before_it_is_flushed_warns() {
    log::set_logger(&WARNINGS).expect("the only logger of this binary");
    log::set_max_level(log::LevelFilter::Warn);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let push = zmtp_tokio::Socket::new(zmtp_tokio::SocketType::Push).unwrap();
        // The discard port: nobody listens there on a test machine.
        push.connect("tcp://127.0.0.1:9").unwrap();
        push.send("lost").await.unwrap();
        push.send("lost too").await.unwrap();
        // Dropped: it lingers (forever, by default) on tasks of this runtime.
    });
    assert!(WARNINGS.0.lock().unwrap().is_empty(), "still lingering");
    drop(runtime);
    let seen = WARNINGS.0.lock().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0].contains("Push socket") && seen[0].contains("2 message(s)"),
        "{seen:?}"
    );
}
