//! TLS for `wss://`, written once for every driver: the configuration a socket is given
//! ([`Tls`]) and a non-blocking stream that runs rustls over any raw byte stream
//! ([`TlsStream`]).
//!
//! The socket's bytes over `wss://` are those of `ws://` (the HTTP upgrade, then
//! WebSocket frames, all in the core); TLS sits between them and the TCP stream. The
//! stream keeps the shape every driver already moves bytes with: `read` and
//! `write_vectored` that never block, `WouldBlock` when the raw stream has nothing or takes
//! nothing. Two things are new to a driver, and each driver checks them:
//!
//! - [`TlsStream::pending_output`]: TLS records made but not yet taken by the raw stream
//!   (a write the raw stream took only part of, or a handshake message that a read
//!   produced). The driver writes them out with [`TlsStream::flush`] when the raw stream
//!   becomes writable, as it would any other output. A write reports its bytes only once
//!   their records are out (it says `WouldBlock` until then, and the driver offers the
//!   same bytes again), so a socket's LINGER and its count of what was not delivered
//!   stay true over TLS.
//! - [`TlsStream::buffered_input`]: plaintext decrypted but not yet read (a read whose
//!   buffer filled). The driver reads again without waiting for the raw stream.
//!
//! Certificates are verified by rustls with the `ring` provider: a client checks the
//! server's chain against the roots it was given ([`Tls::with_roots_pem`],
//! [`Tls::with_roots_file`]) or, by default, the platform's ([`Tls::with_platform_roots`]),
//! and the name or address it connected to.

use std::fmt;
use std::io::{self, IoSlice, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub use rustls;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, Connection, RootCertStore, ServerConfig};
use rustls::{ServerConnection, SupportedProtocolVersion};
use zmtp_proto::socket::endpoint::{Host, WsEndpoint};
use zmtp_proto::socket::Endpoint;

/// The TLS settings of a socket's `wss://` endpoints: the certificate it presents when it
/// binds, and the roots it trusts when it connects.
///
/// ```no_run
/// use zmtp_driver::Tls;
///
/// // A server: a certificate chain and its key, as PEM files.
/// let server = Tls::new().with_identity_files("cert.pem", "key.pem")?;
/// // A client that trusts one CA (without roots, a client trusts the platform's).
/// let client = Tls::new().with_roots_file("ca.pem")?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// A socket that binds `wss://` without an identity fails to bind
/// (`InvalidInput`). Anything rustls can do (client certificates, other roots, ALPN) is
/// reached with [`with_server_config`](Tls::with_server_config) and
/// [`with_client_config`](Tls::with_client_config), with the [`rustls`] this crate
/// re-exports.
#[derive(Clone, Default)]
pub struct Tls {
    server: Option<Arc<ServerConfig>>,
    client: Option<Arc<ClientConfig>>,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls")
            .field("identity", &self.server.is_some())
            .field("roots", &self.client.is_some())
            .finish()
    }
}

/// TLS 1.3 and 1.2, as rustls offers them.
fn versions() -> &'static [&'static SupportedProtocolVersion] {
    rustls::DEFAULT_VERSIONS
}

/// The *ring* provider. rustls 0.23.48 deprecates its constructor because *ring* has no
/// post-quantum key exchange; its replacement (aws-lc-rs) needs a C toolchain and cmake to
/// build, which this crate does not ask of its users, so the classic groups (X25519, P-256,
/// P-384) are what TLS endpoints offer until rustls gives *ring* a hybrid group.
#[allow(deprecated)]
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn invalid(what: impl fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// The certificates of a PEM text (at least one).
fn certificates(pem: &[u8], what: &str) -> io::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(format!("{what}: {e}")))?;
    if certs.is_empty() {
        return Err(invalid(format!("{what}: no PEM certificate")));
    }
    Ok(certs)
}

fn read_file(path: &Path) -> io::Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

impl Tls {
    /// No identity, and the platform's roots.
    pub fn new() -> Tls {
        Tls::default()
    }

    /// The certificate chain (leaf first) and private key (PKCS#8, PKCS#1 or SEC1) a
    /// listening socket presents, as PEM text.
    pub fn with_identity_pem(mut self, cert_chain: &[u8], key: &[u8]) -> io::Result<Tls> {
        let certs = certificates(cert_chain, "certificate chain")?;
        let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| invalid(format!("key: {e}")))?;
        let config = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(versions())
            .map_err(invalid)?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(invalid)?;
        self.server = Some(Arc::new(config));
        Ok(self)
    }

    /// [`with_identity_pem`](Tls::with_identity_pem) from two files.
    pub fn with_identity_files(
        self,
        cert_chain: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> io::Result<Tls> {
        let chain = read_file(cert_chain.as_ref())?;
        let key = read_file(key.as_ref())?;
        self.with_identity_pem(&chain, &key)
    }

    /// Trust these roots (PEM certificates) and no others when connecting.
    pub fn with_roots_pem(mut self, roots: &[u8]) -> io::Result<Tls> {
        let mut store = RootCertStore::empty();
        for cert in certificates(roots, "roots")? {
            store.add(cert).map_err(invalid)?;
        }
        self.client = Some(client_config(store)?);
        Ok(self)
    }

    /// [`with_roots_pem`](Tls::with_roots_pem) from a file.
    pub fn with_roots_file(self, roots: impl AsRef<Path>) -> io::Result<Tls> {
        let pem = read_file(roots.as_ref())?;
        self.with_roots_pem(&pem)
    }

    /// Trust the platform's roots when connecting (the default): the PEM bundle named by
    /// `SSL_CERT_FILE`, or the first of the usual system bundles that exists.
    pub fn with_platform_roots(mut self) -> io::Result<Tls> {
        self.client = Some(platform_client()?);
        Ok(self)
    }

    /// Use this rustls server configuration when listening.
    pub fn with_server_config(mut self, config: Arc<ServerConfig>) -> Tls {
        self.server = Some(config);
        self
    }

    /// Use this rustls client configuration when connecting.
    pub fn with_client_config(mut self, config: Arc<ClientConfig>) -> Tls {
        self.client = Some(config);
        self
    }

    /// The configuration a listening socket runs: an error when no identity was given.
    pub fn server_config(&self) -> io::Result<Arc<ServerConfig>> {
        self.server.clone().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "wss:// needs a certificate and key to listen (set the socket's TLS identity)",
            )
        })
    }

    /// The configuration a connecting socket runs: the given roots, or the platform's.
    pub fn client_config(&self) -> io::Result<Arc<ClientConfig>> {
        match &self.client {
            Some(c) => Ok(c.clone()),
            None => platform_client(),
        }
    }
}

fn client_config(roots: RootCertStore) -> io::Result<Arc<ClientConfig>> {
    let config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(versions())
        .map_err(invalid)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The usual places of a system's PEM bundle of trusted roots.
const PLATFORM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
    "/usr/local/etc/openssl/cert.pem",
];

/// A client configuration with the platform's roots, read once per process.
fn platform_client() -> io::Result<Arc<ClientConfig>> {
    static PLATFORM: OnceLock<Result<Arc<ClientConfig>, String>> = OnceLock::new();
    PLATFORM
        .get_or_init(|| {
            let path = std::env::var_os("SSL_CERT_FILE")
                .map(std::path::PathBuf::from)
                .or_else(|| {
                    PLATFORM_BUNDLES
                        .iter()
                        .map(Path::new)
                        .find(|p| p.exists())
                        .map(Path::to_path_buf)
                })
                .ok_or("no platform roots: set SSL_CERT_FILE or give the socket roots")?;
            let pem = read_file(&path).map_err(|e| e.to_string())?;
            let mut store = RootCertStore::empty();
            let certs = CertificateDer::pem_slice_iter(&pem).filter_map(Result::ok);
            let (added, _ignored) = store.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!("{}: no usable root certificate", path.display()));
            }
            client_config(store).map_err(|e| e.to_string())
        })
        .clone()
        .map_err(invalid)
}

/// The name a client checks the server's certificate against: the host it connected to.
pub fn server_name(host: &Host) -> io::Result<ServerName<'static>> {
    match host {
        Host::Ipv4(a) => Ok(ServerName::IpAddress(std::net::IpAddr::V4(*a).into())),
        Host::Ipv6(a) => Ok(ServerName::IpAddress(std::net::IpAddr::V6(*a).into())),
        Host::Name(n) => ServerName::try_from(n.clone()).map_err(invalid),
        Host::Any => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "wss:// cannot connect to '*'",
        )),
    }
}

/// The TLS side of one `wss://` endpoint of a socket, made when it listens or connects:
/// what each of its streams gets ([`wrap`](TlsSide::wrap)).
#[derive(Clone, Debug)]
pub enum TlsSide {
    /// A connecting socket: its roots, and the name the server's certificate must have.
    Client {
        /// The rustls configuration.
        config: Arc<ClientConfig>,
        /// The host connected to.
        name: ServerName<'static>,
    },
    /// A listening socket: its identity.
    Server(Arc<ServerConfig>),
}

impl TlsSide {
    /// The side an endpoint needs: `None` unless it is `wss://`; for a `wss://` endpoint
    /// to `listen` on, `tls`'s identity (an error without one), to connect to, `tls`'s
    /// roots and the endpoint's host.
    pub fn for_endpoint(tls: &Tls, addr: &Endpoint, listen: bool) -> io::Result<Option<Self>> {
        match addr {
            Endpoint::Ws(WsEndpoint { tls: true, tcp, .. }) => {
                if listen {
                    Ok(Some(TlsSide::Server(tls.server_config()?)))
                } else {
                    Ok(Some(TlsSide::Client {
                        config: tls.client_config()?,
                        name: server_name(&tcp.host)?,
                    }))
                }
            }
            _ => Ok(None),
        }
    }

    /// A session of this side on `raw`.
    pub fn wrap<S: RawIo>(&self, raw: S) -> io::Result<TlsStream<S>> {
        match self {
            TlsSide::Client { config, name } => {
                TlsStream::client(raw, config.clone(), name.clone())
            }
            TlsSide::Server(config) => TlsStream::server(raw, config.clone()),
        }
    }
}

/// A raw, non-blocking byte stream under TLS (a TCP stream).
pub trait RawIo {
    /// Read what is there (`WouldBlock` if nothing, `Ok(0)` at the end).
    fn read_raw(&self, buf: &mut [u8]) -> io::Result<usize>;
    /// Write what the stream takes now (`WouldBlock` if nothing).
    fn write_raw(&self, data: &[u8]) -> io::Result<usize>;
}

impl RawIo for TcpStream {
    fn read_raw(&self, buf: &mut [u8]) -> io::Result<usize> {
        (&mut &*self).read(buf)
    }

    fn write_raw(&self, data: &[u8]) -> io::Result<usize> {
        (&mut &*self).write(data)
    }
}

/// [`RawIo`] as `Read` and `Write`, for rustls.
struct Raw<'a, S>(&'a S);

impl<S: RawIo> Read for Raw<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read_raw(buf)
    }
}

impl<S: RawIo> Write for Raw<'_, S> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0.write_raw(data)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A TLS session over a raw non-blocking stream `S`, itself non-blocking: see the
/// [module](self) for what a driver does with it.
pub struct TlsStream<S> {
    raw: S,
    /// `None` once handed over to another raw stream ([`TlsStream::hand_over`]).
    conn: Mutex<Option<Session>>,
    /// Plaintext may be waiting in the session (a read filled its buffer).
    buffered: AtomicBool,
}

/// The rustls session, and what a write has not yet told its caller.
struct Session {
    conn: Connection,
    /// Plaintext bytes taken by the last write whose records the raw stream has not all
    /// taken: reported written only once they have (see [`TlsStream::write_vectored`]).
    owed: usize,
}

impl<S: fmt::Debug> fmt::Debug for TlsStream<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsStream").field("raw", &self.raw).finish()
    }
}

impl<S: RawIo> TlsStream<S> {
    /// The client side of a session on `raw`, checking the server's certificate for
    /// `name`. The handshake runs as the stream is written and read.
    pub fn client(
        raw: S,
        config: Arc<ClientConfig>,
        name: ServerName<'static>,
    ) -> io::Result<Self> {
        let conn = ClientConnection::new(config, name).map_err(invalid)?;
        Ok(Self::new(raw, conn.into()))
    }

    /// The server side of a session on `raw`.
    pub fn server(raw: S, config: Arc<ServerConfig>) -> io::Result<Self> {
        let conn = ServerConnection::new(config).map_err(invalid)?;
        Ok(Self::new(raw, conn.into()))
    }

    fn new(raw: S, conn: Connection) -> Self {
        TlsStream {
            raw,
            conn: Mutex::new(Some(Session { conn, owed: 0 })),
            buffered: AtomicBool::new(false),
        }
    }

    /// The raw stream.
    pub fn get_ref(&self) -> &S {
        &self.raw
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Session>> {
        // A panic elsewhere while holding it leaves a session that fails its next call.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Run `f` on the session; a session handed over fails as a closed stream would.
    fn with<T>(&self, f: impl FnOnce(&mut Session) -> io::Result<T>) -> io::Result<T> {
        match self.lock().as_mut() {
            Some(session) => f(session),
            None => Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "the TLS session was handed over to another stream",
            )),
        }
    }

    /// Move the session, mid-stream, onto `raw`: another handle to the same connection
    /// (a duplicated descriptor), for a socket that moves to another driver. This stream
    /// is left without a session: its reads and writes fail from now on. `None` if it was
    /// handed over already.
    pub fn hand_over<T: RawIo>(&self, raw: T) -> Option<TlsStream<T>> {
        let session = self.lock().take()?;
        Some(TlsStream {
            raw,
            conn: Mutex::new(Some(session)),
            buffered: AtomicBool::new(self.buffered.load(Ordering::Acquire)),
        })
    }

    /// Read plaintext into `dst`: as much as there is, until `dst` is full or the raw
    /// stream has nothing more. `Ok(0)` is the end of the stream, `WouldBlock` means
    /// nothing yet. A TLS failure (a bad certificate, a forged record) is `InvalidData`.
    pub fn read(&self, dst: &mut [u8]) -> io::Result<usize> {
        let result = self.with(|s| read_into(&mut s.conn, &self.raw, dst));
        let full = matches!(result, Ok(n) if n == dst.len() && n > 0);
        self.buffered.store(full, Ordering::Release);
        result
    }

    /// Encrypt what the session takes of `bufs` and write the records out.
    ///
    /// Bytes are reported written only once all their records are in the raw stream, so
    /// that a socket's accounting (LINGER, what was not delivered) stays true: when the
    /// raw stream does not take every record, the call says `WouldBlock`, and the caller
    /// offers the same bytes again when the stream is writable; the first call that
    /// finds the records gone reports them, without encrypting them twice. (Callers must
    /// offer unreported bytes again, first; every driver's output queue does.)
    pub fn write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.with(|session| self.write_session(session, bufs))
    }

    /// [`write_vectored`](Self::write_vectored), under the session's lock.
    fn write_session(&self, session: &mut Session, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let Session { conn, owed } = session;
        if !write_out(conn, &self.raw)? {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        if *owed > 0 {
            let offered: usize = bufs.iter().map(|b| b.len()).sum();
            let n = (*owed).min(offered);
            *owed -= n;
            return Ok(n);
        }
        let n = conn.writer().write_vectored(bufs)?;
        if n == 0 && bufs.iter().any(|b| !b.is_empty()) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        if write_out(conn, &self.raw)? {
            Ok(n)
        } else {
            *owed = n;
            Err(io::ErrorKind::WouldBlock.into())
        }
    }

    /// [`write_vectored`](Self::write_vectored) of one buffer.
    pub fn write(&self, data: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(data)])
    }

    /// Write out pending records: `Ok(true)` when none is left.
    pub fn flush(&self) -> io::Result<bool> {
        self.with(|s| write_out(&mut s.conn, &self.raw))
    }

    /// Records are waiting for the raw stream to take them (of a write that said
    /// `WouldBlock`, or handshake messages a read made).
    pub fn pending_output(&self) -> bool {
        self.lock().as_ref().is_some_and(|s| s.conn.wants_write())
    }

    /// Plaintext may be waiting to be read without the raw stream being readable.
    pub fn buffered_input(&self) -> bool {
        self.buffered.load(Ordering::Acquire)
    }
}

/// [`TlsStream::read`], under its lock.
fn read_into<S: RawIo>(conn: &mut Connection, raw: &S, dst: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    loop {
        // Plaintext already decrypted first.
        while filled < dst.len() {
            match conn
                .reader()
                .read(dst.get_mut(filled..).unwrap_or_default())
            {
                Ok(0) => return Ok(filled),
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                // The peer closed mid-handshake: say so, since nothing else will (a peer
                // that does not speak TLS may answer a ClientHello this way).
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && conn.is_handshaking() => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        CLOSED_MID_HANDSHAKE,
                    ))
                }
                // The peer closed without `close_notify`: the end, as for TCP.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(filled),
                Err(e) => return Err(e),
            }
        }
        if filled == dst.len() {
            return Ok(filled);
        }
        match conn.read_tls(&mut Raw(raw)) {
            // The end of the raw stream: rustls notes it, and the reader then says so.
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && filled > 0 => return Ok(filled),
            Err(e) => return Err(e),
        }
        if let Err(e) = conn.process_new_packets() {
            // The alert rustls made, if the stream takes it: the stream closes anyway.
            let _ = conn.write_tls(&mut Raw(raw));
            return Err(invalid(handshake_failure(&e, conn.is_handshaking())));
        }
        // Handshake messages the records called for.
        write_out(conn, raw)?;
    }
}

/// Why a stream that closed during the TLS handshake failed.
const CLOSED_MID_HANDSHAKE: &str =
    "TLS: the peer closed the connection during the handshake (does it speak TLS?)";

/// A TLS failure in words: rustls's reason, and whether the peer seems not to speak TLS
/// at all (its first bytes were not a TLS record).
fn handshake_failure(e: &rustls::Error, handshaking: bool) -> String {
    match e {
        rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType)
            if handshaking =>
        {
            format!("TLS: {e} (the peer does not speak TLS?)")
        }
        e => format!("TLS: {e}"),
    }
}

/// Write pending records until the raw stream would block: `Ok(true)` when all went.
fn write_out<S: RawIo>(conn: &mut Connection, raw: &S) -> io::Result<bool> {
    while conn.wants_write() {
        match conn.write_tls(&mut Raw(raw)) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::time::{Duration, Instant};
    use zmtp_testkit::tls::{CA, OTHER_CA, SERVER_CERT, SERVER_KEY};

    fn tcp_pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        c.set_nonblocking(true).unwrap();
        s.set_nonblocking(true).unwrap();
        (c, s)
    }

    fn pair(roots: &[u8], host: Host) -> (TlsStream<TcpStream>, TlsStream<TcpStream>) {
        let (c, s) = tcp_pair();
        let client = Tls::new().with_roots_pem(roots).unwrap();
        let server = Tls::new()
            .with_identity_pem(SERVER_CERT, SERVER_KEY)
            .unwrap();
        let client = TlsStream::client(
            c,
            client.client_config().unwrap(),
            server_name(&host).unwrap(),
        )
        .unwrap();
        let server = TlsStream::server(s, server.server_config().unwrap()).unwrap();
        (client, server)
    }

    fn local() -> Host {
        Host::Ipv4([127, 0, 0, 1].into())
    }

    /// Send `data` from `a` to `b` with both driven as a driver would (writes, flushes of
    /// pending records, reads on both sides for the handshake), until `b` read it all or
    /// one side failed.
    fn transfer(
        a: &TlsStream<TcpStream>,
        b: &TlsStream<TcpStream>,
        data: &[u8],
    ) -> io::Result<Vec<u8>> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let (mut sent, mut got) = (0, Vec::new());
        let mut buf = vec![0u8; 7000];
        while got.len() < data.len() {
            assert!(
                Instant::now() < deadline,
                "stuck at {} of {}",
                got.len(),
                data.len()
            );
            if sent < data.len() {
                match a.write(&data[sent..]) {
                    Ok(n) => sent += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            } else if a.pending_output() {
                a.flush()?;
            }
            for (side, keep) in [(a, false), (b, true)] {
                loop {
                    match side.read(&mut buf) {
                        Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                        Ok(n) if keep => got.extend_from_slice(&buf[..n]),
                        Ok(_) => panic!("unexpected data"),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) => return Err(e),
                    }
                }
                side.flush()?;
            }
        }
        Ok(got)
    }

    #[test]
    fn a_client_and_a_server_exchange_data_both_ways() {
        let (client, server) = pair(CA, local());
        assert_eq!(transfer(&client, &server, b"hello").unwrap(), b"hello");
        // Far more than the session buffers and the socket buffers take at once.
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(transfer(&server, &client, &big).unwrap(), big);
        assert_eq!(transfer(&client, &server, &big).unwrap(), big);
    }

    /// A session handed over to a duplicate of its stream goes on where it was; the
    /// stream it left fails its reads and writes.
    #[test]
    fn a_session_handed_over_goes_on_over_the_new_stream() {
        let (client, server) = pair(CA, local());
        assert_eq!(transfer(&client, &server, b"before").unwrap(), b"before");
        let moved = client
            .hand_over(client.get_ref().try_clone().unwrap())
            .unwrap();
        assert_eq!(
            client.write(b"x").unwrap_err().kind(),
            io::ErrorKind::NotConnected
        );
        assert!(client
            .hand_over(client.get_ref().try_clone().unwrap())
            .is_none());
        drop(client);
        let big: Vec<u8> = (0..1_000_000u32).map(|i| (i % 241) as u8).collect();
        assert_eq!(transfer(&moved, &server, &big).unwrap(), big);
        assert_eq!(transfer(&server, &moved, b"after").unwrap(), b"after");
    }

    /// What a write reports written is in the raw stream: a peer that reads only after
    /// the writer stopped (records the stream did not take are never sent) still gets
    /// every byte reported.
    #[test]
    fn reported_bytes_are_in_the_stream() {
        let (client, server) = pair(CA, local());
        assert_eq!(transfer(&client, &server, b"x").unwrap(), b"x");
        let data: Vec<u8> = (0..8_000_000u32).map(|i| (i % 249) as u8).collect();
        let (mut reported, mut blocked) = (0, 0);
        while blocked < 3 && reported < data.len() {
            match client.write(&data[reported..]) {
                Ok(n) => reported += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => blocked += 1,
                Err(e) => panic!("{e}"),
            }
        }
        assert!(blocked == 3, "the stream never filled");
        // The writer ends here: its stream sends what it took, then FIN; records the
        // stream did not take are never sent.
        client
            .get_ref()
            .shutdown(std::net::Shutdown::Write)
            .unwrap();
        let mut got = Vec::new();
        let mut buf = vec![0u8; 65536];
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match server.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    assert!(Instant::now() < deadline);
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => panic!("after {} bytes: {e}", got.len()),
            }
        }
        assert!(
            got.len() >= reported,
            "reported {reported}, delivered {}",
            got.len()
        );
        assert_eq!(got[..reported], data[..reported]);
    }

    #[test]
    fn names_are_checked() {
        // localhost is in the certificate; 127.0.0.2 is not.
        let (client, server) = pair(CA, Host::Name("localhost".into()));
        assert_eq!(transfer(&client, &server, b"x").unwrap(), b"x");
        let (client, server) = pair(CA, Host::Ipv4([127, 0, 0, 2].into()));
        let e = transfer(&client, &server, b"x").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
        assert_eq!(
            e.to_string(),
            "TLS: invalid peer certificate: certificate not valid for name \"127.0.0.2\"; \
             certificate is only valid for DnsName(\"localhost\"), IpAddress(127.0.0.1) or \
             IpAddress(0::1)"
        );
    }

    #[test]
    fn an_untrusted_server_is_refused() {
        let (client, server) = pair(OTHER_CA, local());
        let e = transfer(&client, &server, b"x").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
        assert_eq!(
            e.to_string(),
            "TLS: invalid peer certificate: UnknownIssuer"
        );
    }

    /// A client's first read after `peer` did something (or nothing) to the raw stream.
    fn client_read_error(peer: impl FnOnce(&TcpStream)) -> io::Error {
        let (c, s) = tcp_pair();
        let roots = Tls::new().with_roots_pem(CA).unwrap();
        let client = TlsStream::client(
            c,
            roots.client_config().unwrap(),
            server_name(&local()).unwrap(),
        )
        .unwrap();
        client.flush().unwrap();
        peer(&s);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match client.read(&mut [0u8; 100]) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    assert!(Instant::now() < deadline);
                    std::thread::sleep(Duration::from_millis(5));
                }
                other => break other.unwrap_err(),
            }
        }
    }

    #[test]
    fn a_client_says_when_the_server_does_not_speak_tls() {
        // A ZMTP greeting where a ServerHello should be.
        let e = client_read_error(|s| {
            let mut s = s;
            s.write_all(&[0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 3, 1])
                .unwrap();
        });
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
        assert_eq!(
            e.to_string(),
            "TLS: received corrupt message of type InvalidContentType (the peer does not \
             speak TLS?)"
        );
        // A peer that closes on the ClientHello (read first: closing on unread bytes
        // would reset the connection instead).
        let e = client_read_error(|s| {
            let mut s = s;
            let deadline = Instant::now() + Duration::from_secs(5);
            while !matches!(s.read(&mut [0u8; 1000]), Ok(n) if n > 0) {
                assert!(Instant::now() < deadline);
                std::thread::sleep(Duration::from_millis(5));
            }
            s.shutdown(std::net::Shutdown::Write).unwrap();
        });
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}");
        assert_eq!(
            e.to_string(),
            "TLS: the peer closed the connection during the handshake (does it speak TLS?)"
        );
    }

    #[test]
    fn a_server_refuses_what_is_not_tls() {
        let (c, s) = tcp_pair();
        let tls = Tls::new()
            .with_identity_pem(SERVER_CERT, SERVER_KEY)
            .unwrap();
        let server = TlsStream::server(s, tls.server_config().unwrap()).unwrap();
        (&c).write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let e = loop {
            match server.read(&mut [0u8; 100]) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    assert!(Instant::now() < deadline);
                    std::thread::sleep(Duration::from_millis(5));
                }
                other => break other.unwrap_err(),
            }
        };
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    }

    #[test]
    fn bad_settings_are_errors() {
        let e = Tls::new().server_config().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        let e = Tls::new()
            .with_identity_pem(b"nonsense", SERVER_KEY)
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        let e = Tls::new().with_identity_pem(SERVER_CERT, b"").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        let e = Tls::new().with_roots_pem(b"").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        let e = Tls::new()
            .with_roots_file("/nonexistent/ca.pem")
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(server_name(&Host::Any).is_err());
        let wss = Endpoint::parse("wss://127.0.0.1:1").unwrap();
        assert!(TlsSide::for_endpoint(&Tls::new(), &wss, true).is_err());
        let ws = Endpoint::parse("ws://127.0.0.1:1").unwrap();
        assert!(TlsSide::for_endpoint(&Tls::new(), &ws, true)
            .unwrap()
            .is_none());
    }
}
