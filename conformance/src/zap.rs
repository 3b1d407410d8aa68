//! A libzmq ZAP handler (RFC 27) for tests: a REP socket bound at `inproc://zeromq.zap.01`
//! in a libzmq context, served by a thread, answering each request with a verdict chosen by
//! a policy and recording every request it saw.
//!
//! A libzmq PLAIN server needs one (without a handler it closes right after HELLO); a CURVE
//! server consults it when it exists; NULL only with a ZAP domain set. libzmq checks the
//! reply strictly: six frames after the delimiter (REP adds the delimiter), version
//! `"1.0"`, the request id echoed, a status of the form `[2-5]00`, and metadata that parses.
//!
//! ```no_run
//! use zmtp_conformance::ffi::Ctx;
//! use zmtp_conformance::zap::ZapHandler;
//! let ctx = Ctx::new();
//! let zap = ZapHandler::plain(&ctx, b"admin", b"secret");
//! // ... a PLAIN server socket of `ctx` now authenticates its clients ...
//! assert!(zap.requests().iter().all(|r| r.mechanism == "PLAIN"));
//! ```

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::ffi::{Ctx, ZmqError, ZMQ_LINGER, ZMQ_RCVTIMEO, ZMQ_REP, ZMQ_SNDTIMEO};

/// The endpoint libzmq sends ZAP requests to (RFC 27).
pub const ZAP_ENDPOINT: &str = "inproc://zeromq.zap.01";

/// How long the handler thread waits for a request before checking whether to stop.
const POLL_MS: i32 = 10;

/// One ZAP request, as the handler received it (the frames after the delimiter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZapRequest {
    /// Protocol version (`"1.0"`).
    pub version: Vec<u8>,
    /// Request id (libzmq always sends `"1"`).
    pub request_id: Vec<u8>,
    /// The server socket's `ZMQ_ZAP_DOMAIN` (may be empty).
    pub domain: Vec<u8>,
    /// The client's address: its IP as text for TCP (no port), empty or a path for IPC.
    pub address: Vec<u8>,
    /// The server socket's own routing id (not the client's Identity; notes G14).
    pub identity: Vec<u8>,
    /// `"NULL"`, `"PLAIN"`, `"CURVE"` or `"GSSAPI"`.
    pub mechanism: String,
    /// The credentials: none for NULL, user name and password for PLAIN, the client's
    /// 32-byte long-term public key for CURVE.
    pub credentials: Vec<Vec<u8>>,
}

impl ZapRequest {
    /// Parse a request's frames; `None` if there are fewer than the six mandatory frames.
    pub fn parse(frames: &[Vec<u8>]) -> Option<ZapRequest> {
        let [version, request_id, domain, address, identity, mechanism, credentials @ ..] = frames
        else {
            return None;
        };
        Some(ZapRequest {
            version: version.clone(),
            request_id: request_id.clone(),
            domain: domain.clone(),
            address: address.clone(),
            identity: identity.clone(),
            mechanism: String::from_utf8_lossy(mechanism).into_owned(),
            credentials: credentials.to_vec(),
        })
    }
}

/// The verdict a policy returns for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZapReply {
    /// Status code: 200 (allow), 300 (temporary failure), 400 (deny), 500 (internal error).
    pub status: u16,
    /// Status text (free-form).
    pub text: String,
    /// User id; becomes the connection's `User-Id` property on success.
    pub user_id: Vec<u8>,
    /// Metadata in ZMTP property encoding (empty for none).
    pub metadata: Vec<u8>,
}

impl ZapReply {
    /// 200 with user id `user_id`.
    pub fn allow(user_id: &[u8]) -> ZapReply {
        ZapReply {
            status: 200,
            text: "OK".into(),
            user_id: user_id.to_vec(),
            metadata: Vec::new(),
        }
    }

    /// A refusal (or anything else) with `status` and no user id.
    pub fn status(status: u16) -> ZapReply {
        ZapReply {
            status,
            text: match status {
                200 => "OK",
                300 => "Try again",
                400 => "Denied",
                _ => "Internal error",
            }
            .into(),
            user_id: Vec::new(),
            metadata: Vec::new(),
        }
    }
}

/// A policy: the verdict for each request.
pub type Policy = Box<dyn Fn(&ZapRequest) -> ZapReply + Send + 'static>;

/// A running ZAP handler in a libzmq context. Dropping it stops the thread and closes the
/// socket; it borrows the context, so it is dropped before the context terminates.
pub struct ZapHandler<'ctx> {
    stop: Arc<AtomicBool>,
    requests: Arc<Mutex<Vec<ZapRequest>>>,
    thread: Option<JoinHandle<()>>,
    _ctx: PhantomData<&'ctx Ctx>,
}

impl std::fmt::Debug for ZapHandler<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZapHandler")
            .field("requests", &self.requests())
            .finish_non_exhaustive()
    }
}

impl<'ctx> ZapHandler<'ctx> {
    /// Bind the handler in `ctx` and serve requests with `policy`. Returns once the socket
    /// is bound, so that sockets created afterwards find it.
    ///
    /// # Panics
    /// If the socket cannot be created or bound (for example, a handler already runs in
    /// this context).
    pub fn start(
        ctx: &'ctx Ctx,
        policy: impl Fn(&ZapRequest) -> ZapReply + Send + 'static,
    ) -> ZapHandler<'ctx> {
        ZapHandler::try_start(ctx, Box::new(policy))
            .unwrap_or_else(|e| panic!("cannot start the ZAP handler: {e}"))
    }

    /// Like [`start`](Self::start), returning the error instead of panicking.
    pub fn try_start(ctx: &'ctx Ctx, policy: Policy) -> Result<ZapHandler<'ctx>, ZmqError> {
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (bound_tx, bound_rx) = mpsc::channel::<Result<(), ZmqError>>();
        // SAFETY: the thread uses this reference only to create and bind its socket, before
        // it reports on `bound_tx`; this function waits for that report, while `ctx` is
        // borrowed for `'ctx`. From then on the thread uses only its socket, which it closes
        // before exiting: when stopped by `Drop` (which joins it, and runs before `ctx` can
        // be dropped), or, had the handler been leaked, when `zmq_ctx_term` makes its
        // receive fail with ETERM (the libzmq context outlives every socket of it).
        let ctx_for_thread: &'static Ctx = unsafe { &*(ctx as *const Ctx) };
        let thread = {
            let stop = Arc::clone(&stop);
            let requests = Arc::clone(&requests);
            std::thread::Builder::new()
                .name("zap-handler".into())
                .spawn(move || serve(ctx_for_thread, policy, stop, requests, bound_tx))
                .expect("spawn the ZAP handler thread")
        };
        match bound_rx.recv() {
            Ok(Ok(())) => Ok(ZapHandler {
                stop,
                requests,
                thread: Some(thread),
                _ctx: PhantomData,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                panic!("the ZAP handler thread died before binding");
            }
        }
    }

    /// A PLAIN handler: 200 (user id = the user name) for exactly `username`/`password`,
    /// 400 for anything else.
    pub fn plain(ctx: &'ctx Ctx, username: &[u8], password: &[u8]) -> ZapHandler<'ctx> {
        let (username, password) = (username.to_vec(), password.to_vec());
        ZapHandler::start(ctx, move |r| {
            if r.mechanism == "PLAIN" && r.credentials == [username.clone(), password.clone()] {
                ZapReply::allow(&username)
            } else {
                ZapReply::status(400)
            }
        })
    }

    /// A CURVE handler: 200 for a client whose public key is in `allowed`, 400 otherwise.
    pub fn curve(ctx: &'ctx Ctx, allowed: &[[u8; 32]]) -> ZapHandler<'ctx> {
        let allowed = allowed.to_vec();
        ZapHandler::start(ctx, move |r| {
            let known = r.mechanism == "CURVE"
                && r.credentials.len() == 1
                && allowed.iter().any(|k| k[..] == r.credentials[0][..]);
            if known {
                ZapReply::allow(b"curve-client")
            } else {
                ZapReply::status(400)
            }
        })
    }

    /// A handler answering `status` to every request.
    pub fn fixed(ctx: &'ctx Ctx, status: u16) -> ZapHandler<'ctx> {
        ZapHandler::start(ctx, move |_| ZapReply::status(status))
    }

    /// Every request answered so far, oldest first.
    pub fn requests(&self) -> Vec<ZapRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Wait at most `timeout` until at least `n` requests were answered; returns them all.
    pub fn wait_requests(&self, n: usize, timeout: Duration) -> Vec<ZapRequest> {
        let deadline = Instant::now() + timeout;
        loop {
            let seen = self.requests();
            if seen.len() >= n || Instant::now() >= deadline {
                return seen;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for ZapHandler<'_> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            // A panic in the policy has been reported on stderr already.
            let _ = thread.join();
        }
    }
}

/// The handler thread: bind, report, then answer requests until stopped.
fn serve(
    ctx: &Ctx,
    policy: Policy,
    stop: Arc<AtomicBool>,
    requests: Arc<Mutex<Vec<ZapRequest>>>,
    bound: mpsc::Sender<Result<(), ZmqError>>,
) {
    let setup = || {
        let rep = ctx.socket(ZMQ_REP)?;
        rep.set_int(ZMQ_LINGER, 0)?;
        rep.set_int(ZMQ_RCVTIMEO, POLL_MS)?;
        rep.set_int(ZMQ_SNDTIMEO, 1000)?;
        rep.bind(ZAP_ENDPOINT)?;
        Ok(rep)
    };
    let rep = match setup() {
        Ok(rep) => rep,
        Err(e) => {
            let _ = bound.send(Err(e));
            return;
        }
    };
    let _ = bound.send(Ok(()));
    while !stop.load(Ordering::Relaxed) {
        let frames = match rep.recv_multipart() {
            Ok(frames) => frames,
            Err(e) if e.is_again() || e.is_interrupted() => continue,
            Err(_) => break, // ETERM: the context is going away.
        };
        let reply = match ZapRequest::parse(&frames) {
            Some(request) => {
                let reply = policy(&request);
                let id = request.request_id.clone();
                requests
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .push(request);
                (id, reply)
            }
            // Not a ZAP request: answer something libzmq rejects rather than nothing, so
            // that the REP state machine stays usable.
            None => (Vec::new(), ZapReply::status(500)),
        };
        let (id, reply) = reply;
        let status = reply.status.to_string();
        let sent = rep.send_multipart(&[
            b"1.0",
            &id,
            status.as_bytes(),
            reply.text.as_bytes(),
            &reply.user_id,
            &reply.metadata,
        ]);
        if sent.is_err() {
            break;
        }
    }
}
