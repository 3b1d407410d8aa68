//! A context: the sockets a program makes, closed and flushed together at its end.

use std::sync::{Arc, Mutex, Weak};

use zmtp_proto::socket::{CloseReport, Options};
use zmtp_proto::SocketType;

use crate::core::Inner;
use crate::{Error, Runtime, Socket};

/// The sockets made through it, and the runtime they run on: what libzmq's and pyzmq's
/// `Context` is to a program.
///
/// A dropped [`Socket`] closes in the background, lingering (per LINGER) while its
/// queued messages are written, on its runtime's tasks; if the runtime ends first, the
/// socket lingers on with blocking I/O and the process waits for it at exit (see
/// [`linger_all`](crate::linger_all)), so a program that returns from `main` right after
/// its last `send` loses nothing. [`Context::term`] is the end that reports: it closes
/// every socket made through the context, the dropped ones included, waits until each has
/// written its queue or run out of LINGER, as `zmq_ctx_term` does, and returns what
/// LINGER cut off.
///
/// Cheap to clone: clones share the sockets.
pub struct Context<R: Runtime> {
    shared: Arc<Shared<R>>,
}

struct Shared<R: Runtime> {
    runtime: R,
    /// Every socket made through the context that may still be open.
    sockets: Mutex<Vec<Weak<Inner<R>>>>,
}

impl<R: Runtime> Clone for Context<R> {
    fn clone(&self) -> Context<R> {
        Context {
            shared: self.shared.clone(),
        }
    }
}

impl<R: Runtime> std::fmt::Debug for Context<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").finish_non_exhaustive()
    }
}

impl<R: Runtime> Context<R> {
    /// A context for the runtime this is called in ([`Error::NoRuntime`] outside one).
    pub fn new() -> Result<Context<R>, Error> {
        Ok(Context::with_runtime(R::current().ok_or(Error::NoRuntime)?))
    }

    /// A context whose sockets run on `runtime`.
    pub fn with_runtime(runtime: R) -> Context<R> {
        Context {
            shared: Arc::new(Shared {
                runtime,
                sockets: Mutex::new(Vec::new()),
            }),
        }
    }

    /// A socket of type `ty` with libzmq's default options.
    pub fn socket(&self, ty: SocketType) -> Result<Socket<R>, Error> {
        self.socket_with(ty, Options::default())
    }

    /// A socket of type `ty` with `options`.
    pub fn socket_with(&self, ty: SocketType, options: Options) -> Result<Socket<R>, Error> {
        let socket = Socket::with_runtime(self.shared.runtime.clone(), ty, options)?;
        let mut sockets = self
            .shared
            .sockets
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // Sockets that are gone (closed, their tasks ended) are forgotten.
        sockets.retain(|s| s.strong_count() > 0);
        sockets.push(Arc::downgrade(&socket.inner));
        Ok(socket)
    }

    /// Close every socket made through this context (those still in use too: their
    /// operations then fail with [`Error::Closed`]) and wait until each has written its
    /// queued messages or run out of LINGER (`zmq_ctx_term`, pyzmq's `Context.destroy`).
    /// Returns what LINGER cut off, summed over the sockets.
    ///
    /// With the default LINGER (forever), this waits until every queued message has
    /// been written, however long a peer takes to appear; set LINGER on the sockets to
    /// bound the wait.
    pub async fn term(self) -> CloseReport {
        let sockets: Vec<Arc<Inner<R>>> = {
            let mut sockets = self
                .shared
                .sockets
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            sockets.drain(..).filter_map(|s| s.upgrade()).collect()
        };
        // Every socket starts closing before any is waited for: they linger together.
        for inner in &sockets {
            inner.start_close();
        }
        let mut report = CloseReport::default();
        for inner in &sockets {
            report = report.merged(inner.close().await);
        }
        report
    }
}
