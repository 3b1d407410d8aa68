//! What a ROUTER or STREAM can route to, asked before a message is complete (libzmq's
//! ROUTER under `ZMQ_ROUTER_MANDATORY`, and its STREAM always, refuse an unknown peer on
//! the message's first frame).

use crate::Socket;

impl Socket {
    /// ROUTER, STREAM: whether a peer has routing id `id` now (false on other types, or
    /// once the socket is closed).
    ///
    /// ```
    /// use zmtp_mio::{Context, Options, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let router = ctx.socket(SocketType::Router)?;
    /// let endpoint = router.bind("tcp://127.0.0.1:*")?;
    /// assert!(!router.routes_to(b"worker"));
    /// let dealer = ctx.socket_with(SocketType::Dealer, Options::default().with_routing_id("worker"))?;
    /// dealer.connect(&endpoint)?;
    /// dealer.send("ready")?;
    /// router.recv()?; // the handshake is done: the peer is known
    /// assert!(router.routes_to(b"worker"));
    /// # Ok(()) }
    /// ```
    pub fn routes_to(&self, id: &[u8]) -> bool {
        let st = self.shared.lock();
        st.sockets
            .get(&self.id)
            .is_some_and(|s| s.core.routes_to(id))
    }

    /// ROUTER, STREAM: whether the peer with routing id `id` has room for a message now
    /// (below SNDHWM); `None` when no peer has that id, on other types, or once the
    /// socket is closed.
    pub fn route_has_room(&self, id: &[u8]) -> Option<bool> {
        let st = self.shared.lock();
        st.sockets.get(&self.id)?.core.route_has_room(id)
    }
}
