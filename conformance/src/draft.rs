//! The draft socket types' scenarios: CLIENT-SERVER, RADIO-DISH, SCATTER-GATHER,
//! PEER-PEER and CHANNEL-CHANNEL, written once against [`DraftSocket`] and run for every
//! pair of implementations: our drivers against each other here, and against a
//! draft-enabled libzmq where one is linked (its own test binaries implement
//! [`DraftMaker`] for it).
//!
//! | scenario | pairs | checks |
//! |---|---|---|
//! | `routing` | CLIENT-SERVER, over NULL and CURVE | two clients, each gets the replies to its own routing id; order; multipart refused on both sides |
//! | `groups` | RADIO-DISH, over NULL and CURVE | only joined groups arrive, with their group; a join and a leave during traffic take effect; groups match whole |
//! | `order` | SCATTER-GATHER, CHANNEL-CHANNEL | a numbered stream arrives in order (both ways for CHANNEL); multipart refused |
//! | `peer` | PEER-PEER | `connect_peer`'s id addresses the peer at once; the reply comes back with that id |
//!
//! Every combination runs with either side binding, over each transport both
//! implementations offer. Waits are bounded; a failure is a panic caught per scenario.

use std::time::{Duration, Instant};

use zmtp_proto::curve_crypto::KeyPair;
use zmtp_proto::mechanism::Security;
use zmtp_proto::socket::{Message, Options, SendError};
use zmtp_proto::SocketType;

use crate::matrix::{caught, PanicCapture};
use crate::our::{OurDriver, OurSocket, Transport};

/// Upper bound of any wait; a scenario that hits it fails.
const TIMEOUT: Duration = Duration::from_secs(5);
/// Messages of an ordered stream.
const STREAM: usize = 200;

/// A message of a draft type: one frame and its metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Draft {
    /// The frame.
    pub body: Vec<u8>,
    /// SERVER and PEER: the peer's routing id.
    pub routing_id: Option<u32>,
    /// RADIO and DISH: the group.
    pub group: Option<Vec<u8>>,
}

impl Draft {
    /// A message with just a body.
    pub fn new(body: impl Into<Vec<u8>>) -> Draft {
        Draft {
            body: body.into(),
            ..Draft::default()
        }
    }

    /// Addressed to the peer `id` (SERVER, PEER).
    pub fn to(id: u32, body: impl Into<Vec<u8>>) -> Draft {
        Draft {
            routing_id: Some(id),
            ..Draft::new(body)
        }
    }

    /// For `group` (RADIO).
    pub fn in_group(group: &[u8], body: impl Into<Vec<u8>>) -> Draft {
        Draft {
            group: Some(group.to_vec()),
            ..Draft::new(body)
        }
    }
}

/// Why a send was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Try again later (no peer, HWM).
    WouldBlock,
    /// Anything else, described.
    Other(String),
}

/// One socket of a draft type, of any implementation. Every call returns at once.
pub trait DraftSocket {
    /// Bind; returns the resolved endpoint.
    fn bind(&mut self, endpoint: &str) -> Result<String, String>;
    /// Start connecting.
    fn connect(&mut self, endpoint: &str) -> Result<(), String>;
    /// PEER: start connecting; the routing id of the peer there.
    fn connect_peer(&mut self, endpoint: &str) -> Result<u32, String>;
    /// DISH: join a group.
    fn join(&mut self, group: &[u8]);
    /// DISH: leave a group.
    fn leave(&mut self, group: &[u8]);
    /// One send attempt.
    fn try_send(&mut self, msg: &Draft) -> Result<(), Refusal>;
    /// One attempt to send `frames` as one multipart message (every draft type refuses).
    fn try_send_multipart(&mut self, frames: &[&[u8]]) -> Result<(), Refusal>;
    /// A message, if one is ready.
    fn try_recv(&mut self) -> Option<Draft>;
    /// One round of progress (nothing for implementations with their own threads).
    fn pump(&mut self);
}

/// The CURVE role of a socket in a scenario.
#[derive(Debug, Clone)]
pub enum Curve {
    /// NULL security.
    Off,
    /// A CURVE server with these keys.
    Server(KeyPair),
    /// A CURVE client of the server whose public key is `server`.
    Client {
        /// The server's public key.
        server: [u8; 32],
        /// Our keys.
        keys: KeyPair,
    },
}

/// Makes the sockets of one implementation.
pub trait DraftMaker {
    /// Its name in reports (`tokio`, `libzmq`...).
    fn name(&self) -> &'static str;
    /// A new socket of `ty` with `curve` security.
    fn socket(&self, ty: SocketType, curve: &Curve) -> Box<dyn DraftSocket>;
    /// The transports it offers.
    fn transports(&self) -> &'static [Transport];
    /// Which `inproc://` names its sockets reach ([`OurDriver::inproc_names`]).
    fn inproc_names(&self) -> &'static str {
        "process"
    }
}

/// Our driver `D` as a [`DraftMaker`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Ours<D>(std::marker::PhantomData<D>);

impl<D> Ours<D> {
    /// The maker of driver `D`'s sockets.
    pub fn new() -> Ours<D> {
        Ours(std::marker::PhantomData)
    }
}

impl<D: OurDriver> DraftMaker for Ours<D> {
    fn name(&self) -> &'static str {
        D::name()
    }

    fn socket(&self, ty: SocketType, curve: &Curve) -> Box<dyn DraftSocket> {
        let mut opts = Options::default();
        opts.linger = Some(Duration::ZERO);
        opts.reconnect_ivl = Some(Duration::from_millis(20));
        opts.security = match curve {
            Curve::Off => Security::Null,
            Curve::Server(keys) => Security::CurveServer { keys: keys.clone() },
            Curve::Client { server, keys } => Security::CurveClient {
                server_key: zmtp_proto::curve_crypto::PublicKey(*server),
                keys: keys.clone(),
            },
        };
        Box::new(OurDraft(D::socket(ty, opts)))
    }

    fn transports(&self) -> &'static [Transport] {
        D::own_transports()
    }

    fn inproc_names(&self) -> &'static str {
        D::inproc_names()
    }
}

/// One of our sockets behind [`DraftSocket`].
struct OurDraft<S>(S);

fn refusal(e: SendError) -> Refusal {
    match e {
        SendError::WouldBlock(_) => Refusal::WouldBlock,
        other => Refusal::Other(other.to_string()),
    }
}

impl<S: OurSocket> DraftSocket for OurDraft<S> {
    fn bind(&mut self, endpoint: &str) -> Result<String, String> {
        self.0.bind(endpoint)
    }

    fn connect(&mut self, endpoint: &str) -> Result<(), String> {
        self.0.connect(endpoint)
    }

    fn connect_peer(&mut self, endpoint: &str) -> Result<u32, String> {
        self.0.connect_peer(endpoint)
    }

    fn join(&mut self, group: &[u8]) {
        self.0.join(group);
    }

    fn leave(&mut self, group: &[u8]) {
        self.0.leave(group);
    }

    fn try_send(&mut self, msg: &Draft) -> Result<(), Refusal> {
        let mut m = Message::from(msg.body.clone());
        if let Some(id) = msg.routing_id {
            m.set_routing_id(id)
                .map_err(|e| Refusal::Other(e.to_string()))?;
        }
        if let Some(group) = &msg.group {
            m.set_group(group)
                .map_err(|e| Refusal::Other(e.to_string()))?;
        }
        self.0.send(m, Duration::ZERO).map_err(refusal)
    }

    fn try_send_multipart(&mut self, frames: &[&[u8]]) -> Result<(), Refusal> {
        self.0
            .send(Message::from(frames), Duration::ZERO)
            .map_err(refusal)
    }

    fn try_recv(&mut self) -> Option<Draft> {
        let msg = self.0.recv(Duration::ZERO)?;
        assert_eq!(msg.len(), 1, "a draft type received {} frames", msg.len());
        Some(Draft {
            body: msg.frames()[0].to_vec(),
            routing_id: msg.routing_id(),
            group: msg.group().map(<[u8]>::to_vec),
        })
    }

    fn pump(&mut self) {
        self.0.pump(Duration::ZERO);
    }
}

// ----- scenarios -----------------------------------------------------------------------------

/// The scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// CLIENT-SERVER replies by routing id.
    Routing,
    /// RADIO-DISH group filtering.
    Groups,
    /// SCATTER-GATHER and CHANNEL-CHANNEL ordered streams.
    Order,
    /// PEER-PEER with `connect_peer`.
    Peer,
}

impl Scenario {
    /// Every scenario with its pair of socket types (`A`, `B`) and whether it also runs
    /// over CURVE.
    pub const ALL: [(Scenario, SocketType, SocketType, bool); 5] = [
        (
            Scenario::Routing,
            SocketType::Client,
            SocketType::Server,
            true,
        ),
        (Scenario::Groups, SocketType::Radio, SocketType::Dish, true),
        (
            Scenario::Order,
            SocketType::Scatter,
            SocketType::Gather,
            false,
        ),
        (
            Scenario::Order,
            SocketType::Channel,
            SocketType::Channel,
            false,
        ),
        (Scenario::Peer, SocketType::Peer, SocketType::Peer, false),
    ];

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Routing => "routing",
            Scenario::Groups => "groups",
            Scenario::Order => "order",
            Scenario::Peer => "peer",
        }
    }
}

/// The sockets of one scenario, with bounded waits that pump all of them.
struct Net {
    socks: Vec<Box<dyn DraftSocket>>,
}

impl Net {
    fn add(&mut self, s: Box<dyn DraftSocket>) -> usize {
        self.socks.push(s);
        self.socks.len() - 1
    }

    fn idle(&mut self) {
        for s in &mut self.socks {
            s.pump();
        }
        std::thread::sleep(Duration::from_micros(200));
    }

    fn send(&mut self, h: usize, msg: &Draft) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            match self.socks[h].try_send(msg) {
                Ok(()) => return,
                Err(Refusal::WouldBlock) if Instant::now() < deadline => self.idle(),
                Err(e) => panic!("send {msg:?}: {e:?}"),
            }
        }
    }

    fn recv(&mut self, h: usize) -> Draft {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(msg) = self.socks[h].try_recv() {
                return msg;
            }
            assert!(Instant::now() < deadline, "nothing received");
            self.idle();
        }
    }

    /// Nothing arrives at `h` for a while.
    fn quiet(&mut self, h: usize) {
        let deadline = Instant::now() + Duration::from_millis(100);
        while Instant::now() < deadline {
            if let Some(msg) = self.socks[h].try_recv() {
                panic!("unexpected message {msg:?}");
            }
            self.idle();
        }
    }

    fn refuses_multipart(&mut self, h: usize) {
        let r = self.socks[h].try_send_multipart(&[b"a", b"b"]);
        assert!(
            matches!(r, Err(Refusal::Other(_))),
            "a multipart send must be refused, got {r:?}"
        );
    }

    /// Connect `from` to `to`, one of them binding first; a PEER connects with
    /// `connect_peer` and its id for the peer is returned.
    fn link(&mut self, binder: usize, other: usize, transport: Transport, peer: bool) -> u32 {
        let ep = self.socks[binder]
            .bind(&transport.fresh_endpoint())
            .unwrap_or_else(|e| panic!("bind: {e}"));
        if peer {
            self.socks[other].connect_peer(&ep).expect("connect_peer")
        } else {
            self.socks[other].connect(&ep).expect("connect");
            0
        }
    }
}

/// One combination: the pair's `A` made by `a`, `B` by `b`.
struct Case<'m> {
    scenario: Scenario,
    ty_a: SocketType,
    ty_b: SocketType,
    a: &'m dyn DraftMaker,
    b: &'m dyn DraftMaker,
    transport: Transport,
    a_binds: bool,
    curve: bool,
}

impl Case<'_> {
    fn name(&self) -> String {
        let bind = |binds: bool| if binds { "(bind)" } else { "" };
        format!(
            "{}-{} {} {}={}{} {}={}{} {}{}",
            self.ty_a.name(),
            self.ty_b.name(),
            self.transport.name(),
            self.ty_a.name(),
            self.a.name(),
            bind(self.a_binds),
            self.ty_b.name(),
            self.b.name(),
            bind(!self.a_binds),
            self.scenario.name(),
            if self.curve { " curve" } else { "" },
        )
    }

    /// The security of `A` and `B`: the binding side is the CURVE server.
    fn curves(&self) -> (Curve, Curve) {
        if !self.curve {
            return (Curve::Off, Curve::Off);
        }
        let server = crate::security::server_keys();
        let client = Curve::Client {
            server: server.public.0,
            keys: crate::security::client_keys(),
        };
        if self.a_binds {
            (Curve::Server(server), client)
        } else {
            (client, Curve::Server(server))
        }
    }

    fn run(&self) {
        let (ca, cb) = self.curves();
        let mut net = Net { socks: Vec::new() };
        let a = net.add(self.a.socket(self.ty_a, &ca));
        let b = net.add(self.b.socket(self.ty_b, &cb));
        match self.scenario {
            Scenario::Routing => self.routing(&mut net, a, b, &ca),
            Scenario::Groups => self.groups(&mut net, a, b),
            Scenario::Order => self.order(&mut net, a, b),
            Scenario::Peer => self.peer(&mut net, a, b),
        }
    }

    fn connect(&self, net: &mut Net, a: usize, b: usize) {
        if self.a_binds {
            net.link(a, b, self.transport, false);
        } else {
            net.link(b, a, self.transport, false);
        }
    }

    /// Two clients (`a` and one more of its kind); each gets the replies to its own id.
    fn routing(&self, net: &mut Net, a: usize, server: usize, curve_a: &Curve) {
        let a2 = net.add(self.a.socket(self.ty_a, curve_a));
        if self.a_binds {
            // Two binding clients, the server connecting to both.
            for client in [a, a2] {
                let ep = net.socks[client]
                    .bind(&self.transport.fresh_endpoint())
                    .expect("bind");
                net.socks[server].connect(&ep).expect("connect");
            }
        } else {
            let ep = net.socks[server]
                .bind(&self.transport.fresh_endpoint())
                .expect("bind");
            for client in [a, a2] {
                net.socks[client].connect(&ep).expect("connect");
            }
        }
        let mut ids = Vec::new();
        for (k, client) in [a, a2].into_iter().enumerate() {
            net.send(client, &Draft::new(format!("hello {k}")));
            let got = net.recv(server);
            assert_eq!(got.body, format!("hello {k}").into_bytes());
            let id = got.routing_id.expect("a SERVER's message has a routing id");
            assert!(!ids.contains(&id), "two clients with one id {id}");
            ids.push(id);
        }
        // Replies interleaved, each to its client, in order.
        for i in 0..STREAM {
            for (k, &id) in ids.iter().enumerate() {
                net.send(server, &Draft::to(id, format!("{k}:{i}")));
            }
        }
        for (k, client) in [a, a2].into_iter().enumerate() {
            for i in 0..STREAM {
                let got = net.recv(client);
                assert_eq!(got.body, format!("{k}:{i}").into_bytes(), "client {k}");
                assert_eq!(got.routing_id, None, "a CLIENT's message has no routing id");
            }
        }
        net.refuses_multipart(a);
        net.refuses_multipart(server);
        // An unknown id is refused.
        let unknown = (1..).find(|i| !ids.contains(i)).unwrap_or(1);
        let r = net.socks[server].try_send(&Draft::to(unknown, "x"));
        assert!(matches!(r, Err(Refusal::Other(_))), "unknown id: {r:?}");
    }

    /// DISH joins, RADIO sends to joined and other groups.
    fn groups(&self, net: &mut Net, radio: usize, dish: usize) {
        net.socks[dish].join(b"weather");
        self.connect(net, radio, dish);
        // The join reaches the RADIO some time after the connection: until then it drops.
        let deadline = Instant::now() + TIMEOUT;
        let first = loop {
            net.send(radio, &Draft::in_group(b"sport", "goal"));
            net.send(radio, &Draft::in_group(b"weather", "rain"));
            net.send(radio, &Draft::in_group(b"weath", "prefix"));
            net.idle();
            if let Some(got) = net.socks[dish].try_recv() {
                break got;
            }
            assert!(Instant::now() < deadline, "the DISH never got its group");
        };
        assert_eq!(first, Draft::in_group(b"weather", "rain"));
        // Drain the rest: only "weather" messages.
        while let Some(got) = net.socks[dish].try_recv() {
            assert_eq!(got, Draft::in_group(b"weather", "rain"));
        }
        // A join during traffic: "sport" arrives once the RADIO has it, in order after it.
        net.socks[dish].join(b"sport");
        let deadline = Instant::now() + TIMEOUT;
        let mut n = 0;
        'joined: loop {
            net.send(radio, &Draft::in_group(b"sport", format!("s{n}")));
            n += 1;
            net.idle();
            if let Some(got) = net.socks[dish].try_recv() {
                assert_eq!(got.group.as_deref(), Some(&b"sport"[..]));
                break 'joined;
            }
            assert!(
                Instant::now() < deadline,
                "the second join never took effect"
            );
        }
        // Leave "weather": after a marker in "sport" arrives, nothing of "weather" does.
        net.socks[dish].leave(b"weather");
        let deadline = Instant::now() + TIMEOUT;
        loop {
            net.send(radio, &Draft::in_group(b"weather", "late"));
            net.send(radio, &Draft::in_group(b"sport", "marker"));
            net.idle();
            let mut saw_weather = false;
            let mut saw_marker = false;
            while let Some(got) = net.socks[dish].try_recv() {
                saw_weather |= got.group.as_deref() == Some(&b"weather"[..]);
                saw_marker |= got.body == b"marker";
            }
            if saw_marker && !saw_weather {
                break;
            }
            assert!(Instant::now() < deadline, "the leave never took effect");
        }
        net.send(radio, &Draft::in_group(b"weather", "gone"));
        net.quiet(dish);
        net.refuses_multipart(radio);
    }

    /// A numbered stream `A` to `B`, and back where `B` sends (CHANNEL).
    fn order(&self, net: &mut Net, a: usize, b: usize) {
        self.connect(net, a, b);
        let mut ways = vec![(a, b)];
        if self.ty_b == SocketType::Channel {
            ways.push((b, a));
        }
        for (from, to) in ways {
            for i in 0..STREAM {
                net.send(from, &Draft::new(format!("{i}")));
            }
            for i in 0..STREAM {
                assert_eq!(net.recv(to).body, format!("{i}").into_bytes());
            }
            net.refuses_multipart(from);
        }
    }

    /// `connect_peer` gives an id usable at once; the reply carries it.
    fn peer(&self, net: &mut Net, a: usize, b: usize) {
        let (connector, binder) = if self.a_binds { (b, a) } else { (a, b) };
        let id = net.link(binder, connector, self.transport, true);
        assert_ne!(id, 0);
        net.send(connector, &Draft::to(id, "hello"));
        let got = net.recv(binder);
        assert_eq!(got.body, b"hello");
        let back = got.routing_id.expect("a PEER's message has a routing id");
        for i in 0..STREAM {
            net.send(binder, &Draft::to(back, format!("{i}")));
        }
        for i in 0..STREAM {
            let got = net.recv(connector);
            assert_eq!(got, Draft::to(id, format!("{i}")));
        }
        net.refuses_multipart(connector);
    }
}

/// The result of one scenario of one combination.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// What ran, e.g. `CLIENT-SERVER tcp CLIENT=tokio(bind) SERVER=libzmq routing curve`.
    pub name: String,
    /// `None` if it passed.
    pub error: Option<String>,
    /// How long it took.
    pub elapsed: Duration,
}

/// Run every scenario for `A` made by `a` and `B` by `b`, and again the other way round
/// unless `a` and `b` are the same maker; either side binding; over every transport both
/// offer. Only names containing every string of `filter` run.
pub fn run(
    a: &dyn DraftMaker,
    b: &dyn DraftMaker,
    filter: &[String],
    mut progress: impl FnMut(&Outcome),
) -> Vec<Outcome> {
    let mut makers = vec![(a, b)];
    if a.name() != b.name() {
        makers.push((b, a));
    }
    let mut cases = Vec::new();
    for (ma, mb) in makers {
        for &transport in ma.transports() {
            if !mb.transports().contains(&transport) {
                continue;
            }
            if transport == Transport::Inproc && ma.inproc_names() != mb.inproc_names() {
                continue;
            }
            for (scenario, ty_a, ty_b, curve) in Scenario::ALL {
                for curve in [false, true].into_iter().filter(|&c| !c || curve) {
                    for a_binds in [true, false] {
                        cases.push(Case {
                            scenario,
                            ty_a,
                            ty_b,
                            a: ma,
                            b: mb,
                            transport,
                            a_binds,
                            curve,
                        });
                    }
                }
            }
        }
    }
    let mut outcomes = Vec::new();
    let _quiet = PanicCapture::install();
    for case in cases {
        let name = case.name();
        if !filter.iter().all(|f| name.contains(f.as_str())) {
            continue;
        }
        let start = Instant::now();
        let error = caught(|| case.run());
        let outcome = Outcome {
            name,
            error,
            elapsed: start.elapsed(),
        };
        progress(&outcome);
        outcomes.push(outcome);
    }
    outcomes
}

/// The command line of a test binary that runs draft scenarios: arguments that do not start
/// with `-` filter by name, `--verbose` (or `-v`) prints every case and not only failures.
/// It gathers the outcomes of several [`run`]s and prints one summary line at the end.
#[derive(Debug)]
pub struct Runner {
    filter: Vec<String>,
    verbose: bool,
    started: Instant,
    outcomes: Vec<Outcome>,
}

impl Runner {
    /// A runner for this process's arguments.
    pub fn from_args() -> Runner {
        let args: Vec<String> = std::env::args().skip(1).collect();
        Runner {
            verbose: args.iter().any(|a| a == "--verbose" || a == "-v"),
            filter: args.into_iter().filter(|a| !a.starts_with('-')).collect(),
            started: Instant::now(),
            outcomes: Vec::new(),
        }
    }

    /// [`run`] `a` against `b` with this runner's filter, printing each failure (and each
    /// success when verbose); returns how many of these cases failed.
    pub fn run(&mut self, a: &dyn DraftMaker, b: &dyn DraftMaker) -> usize {
        let verbose = self.verbose;
        let outcomes = run(a, b, &self.filter, |o| match &o.error {
            Some(e) => println!("FAIL {} ({} ms): {e}", o.name, o.elapsed.as_millis()),
            None if verbose => println!("ok   {} ({} ms)", o.name, o.elapsed.as_millis()),
            None => {}
        });
        let failed = outcomes.iter().filter(|o| o.error.is_some()).count();
        self.outcomes.extend(outcomes);
        failed
    }

    /// Print the summary line (`draft types: N cases run, N passed, N failed in S s`) and
    /// exit with status 1 if any case failed or none ran.
    pub fn finish(self) {
        let failed = self.outcomes.iter().filter(|o| o.error.is_some()).count();
        println!(
            "draft types: {} cases run, {} passed, {failed} failed in {:.1} s",
            self.outcomes.len(),
            self.outcomes.len() - failed,
            self.started.elapsed().as_secs_f64()
        );
        if failed > 0 || self.outcomes.is_empty() {
            std::process::exit(1);
        }
    }
}
