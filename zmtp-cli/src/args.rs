//! Command-line parsing with clap: every subcommand has its own help, and every mistake
//! becomes a one-line [`Failure::Usage`].

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use zmtp_async::GROUP_MAX_LEN;
use zmtp_tokio::{z85, SocketType, Tls};

use crate::hex;
use crate::Failure;

/// The text after the options list of `zmtp --help`.
const MAIN_AFTER: &str = "\
Endpoints (EP): tcp://HOST:PORT (bind tcp://*:PORT, or tcp://127.0.0.1:* for any free port),
ws://HOST:PORT[/path] (ZMTP over WebSocket, as tcp), wss://HOST:PORT[/path] (the same over
TLS: --tls-cert and --tls-key to bind, --tls-ca to trust a CA other than the system's),
ipc:///path, ipc://@abstract-name, inproc://name, and for a radio (connect), a dish or a
dgram (bind) udp://HOST:PORT or udp://[IFACE;]GROUP:PORT (multicast).

Socket types: the classic pair, pub, sub, xpub, xsub, push, pull, req, rep, dealer,
router, and the draft client, server, radio, dish, scatter, gather, peer, channel (libzmq's
draft API), whose messages are single frames, dgram (udp:// only; a message is the
address a.b.c.d:port, then the body), and stream (raw TCP, no ZMTP: a message is the
connection's routing id, then the bytes).

Exit status: 0 done, 1 bad usage or configuration, 2 runtime failure (bind failed,
authentication refused, every connection to an endpoint refused by TLS, I/O error), 3
--timeout expired, 4 messages not delivered (send: dropped for want of a subscriber, a dish
or a peer with that routing id, or still queued when --linger ran out).";

/// The text after the options list of `zmtp send --help`.
const SEND_AFTER: &str = "\
The FRAME arguments are the frames of one message; without any, each line of standard
input is one message, its frames separated by a TAB. With -t req or -t client, each
request waits for its reply, printed as recv prints it (except the empty frame a proxy's
--control answers PAUSE, RESUME and TERMINATE with). A ROUTER's first frame is the routing
id of the peer to send to.

A PUB sends only to subscribers that have joined: start them first, or use
--wait-subscribers N (or --delay MS) so that early messages are not dropped.

Draft types send single-frame messages only: each FRAME argument, and each TAB-separated
frame of an input line, is a message of its own. A RADIO sends every message to --group
GROUP, and only dishes that have joined GROUP get it; --wait-subscribers N waits for N
dishes to connect, then 200 ms for their joins. A PEER (-c EP, once) sends to the peer it
connects to. A CLIENT, SCATTER or CHANNEL sends as a DEALER, PUSH or PAIR does. A SERVER
only replies to what it receives (see 'zmtp recv --help').

A STREAM (raw TCP) writes the bytes of every frame, as they are, to the first connection
it makes (-c EP) or accepts (-b EP), then closes that connection.

Exit status: 0 every message sent and written (or filtered out by the subscribers' topics
or the dishes' groups, as they asked), 1 bad usage, 2 runtime failure (every connection to
an endpoint refused the same way by TLS: the reason is given), 3 --timeout expired, 4
messages not delivered: dropped by a PUB with no subscriber connected, an XPUB with none
subscribed to anything, a RADIO with no dish that joined any group, or by a ROUTER without
a peer of that routing id, or still queued when --linger ran out (no peer to take them).
Standard error counts them.";

/// The text after the options list of `zmtp recv --help`.
const RECV_AFTER: &str = "\
Prints one line per message, its frames separated by a TAB. Frames are escaped so that
every message stays on one line: a backslash is written \\\\, TAB \\t, newline \\n, carriage
return \\r, and any other control character or byte that is not UTF-8 \\xHH. Text without
these prints as it is. --hex prints every frame in hex instead, --raw the bytes as they came.
send --unescape (or --hex-frames for --hex output) reads the lines back.

A DISH (--join GROUP, repeatable) prints each message's group as a first column, before
its frame. A SERVER or PEER prints the message alone: the routing id it came with is a
number local to this socket, which --echo answers to.

A STREAM (raw TCP) prints each chunk it reads as the connection's routing id in hex, a
TAB and the bytes (escaped as frames are); a connection coming up or going away prints its
routing id alone. --echo writes every chunk back to its connection.

Exit status: 0 done, 1 bad usage, 2 runtime failure, 3 --timeout expired.";

/// `zmtp`: ZeroMQ from the command line.
#[derive(Debug, Parser)]
#[command(
    name = "zmtp",
    version,
    about = "ZeroMQ from the command line (ZMTP 3.x, interoperable with libzmq)",
    after_help = MAIN_AFTER,
    subcommand_required = true,
    max_term_width = 100
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: CliCommand,
}

/// The subcommands, as parsed.
#[derive(Debug, Subcommand)]
pub enum CliCommand {
    /// Send messages: the FRAME arguments as one message, or each line of standard input
    #[command(after_help = SEND_AFTER)]
    Send(SendCli),
    /// Receive messages and print one line per message
    #[command(after_help = RECV_AFTER)]
    Recv(RecvCli),
    /// Print a new CURVE key pair in Z85 ("public: ..." and "secret: ...")
    Keygen,
    /// Benchmark a driver in one process: PUSH to PULL throughput and REQ/REP latency
    Bench(BenchCli),
    /// Move messages between a frontend and a backend socket (zmq_proxy)
    #[command(after_help = PROXY_AFTER)]
    Proxy(ProxyCli),
    /// Send a file to a recv-file receiver (DEALER), in chunks it asks for
    #[command(name = "send-file", after_help = SEND_FILE_AFTER)]
    SendFile(SendFileCli),
    /// Receive files from send-file senders (ROUTER) into a directory
    #[command(name = "recv-file", after_help = RECV_FILE_AFTER)]
    RecvFile(RecvFileCli),
    /// Print a shell completion script (e.g. zmtp completions bash > /etc/bash_completion.d/zmtp)
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// `zmtp proxy`'s arguments.
#[derive(Debug, Args)]
pub struct ProxyCli {
    /// The frontend's socket type (as for send and recv)
    #[arg(
        short = 't',
        long = "type",
        value_name = "TYPE",
        value_enum,
        ignore_case = true,
        hide_possible_values = true
    )]
    pub ty: TypeArg,
    /// The frontend listens on EP (repeatable)
    #[arg(short = 'b', long = "bind", value_name = "EP")]
    pub bind: Vec<String>,
    /// The frontend connects to EP (repeatable)
    #[arg(short = 'c', long = "connect", value_name = "EP")]
    pub connect: Vec<String>,
    /// The backend's socket type
    #[arg(
        short = 'T',
        long = "back-type",
        value_name = "TYPE",
        value_enum,
        ignore_case = true,
        hide_possible_values = true
    )]
    pub back_ty: TypeArg,
    /// The backend listens on EP (repeatable)
    #[arg(short = 'B', long = "back-bind", value_name = "EP")]
    pub back_bind: Vec<String>,
    /// The backend connects to EP (repeatable)
    #[arg(short = 'C', long = "back-connect", value_name = "EP")]
    pub back_connect: Vec<String>,
    /// Publish a copy of every message on a PUB socket bound at EP
    #[arg(long, value_name = "EP")]
    pub capture: Option<String>,
    /// Take PAUSE, RESUME, STATISTICS and TERMINATE on a REP socket bound at EP
    #[arg(long, value_name = "EP")]
    pub control: Option<String>,
    /// Print bound endpoints on standard error
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    #[command(flatten)]
    pub tls: TlsCli,
}

/// The text after the options list of `zmtp send-file --help`.
const SEND_FILE_AFTER: &str = "\
The file is hashed (BLAKE3), offered by name, size and digest, and sent in the ranges the
receiver asks for; a receiver that kept part of it from an earlier attempt asks only for
the rest. A progress bar shows on standard error when it is a terminal.

A directory is sent whole: every regular file under it, one after the other on the same
connection, under its path below the directory's name (or --name): DIR/a/b.txt.
Directories holding no file are created; symbolic links and special files are skipped
(named with -v), never followed. One progress bar covers the tree (bytes and files); -v
prints a line per file. Sending the same tree again after an interruption sends only what
is missing: files complete on the receiver with the same size and digest are answered at
once (files of at most 64 KiB, which travel whole with their offer, are sent again but not
written), and a part left by the interruption is resumed.

The digest of each file of 64 KiB or more is kept in $XDG_CACHE_HOME/zmtp/digests
(default ~/.cache/zmtp/digests), keyed on the file's canonical path, device, inode, size
and modification and change times: sending the same unchanged file again (a retry, a
resume, another receiver) skips the hashing. Any change to the file hashes it again; the receiver checks the digest of what it
wrote either way. --no-digest-cache neither reads nor writes that file.

Exit status: 0 the receiver has the file (its digest matched; for a directory, every
file of the tree), 1 bad usage, 2 runtime failure (the receiver refused or aborted a
transfer, a file cannot be read, authentication refused), 3 --timeout expired.";

/// The text after the options list of `zmtp recv-file --help`.
const RECV_FILE_AFTER: &str = "\
Prints the path of each file saved. Files are written to NAME.zmtp-part (with
NAME.zmtp-part.offer, the offer it is for; no offered name may end in either) and
renamed to NAME once complete and their BLAKE3 digest matches; an identical offer later
resumes a part. Names are relative paths (a/b/c.txt, at most 4096
bytes): their directories are created under --dir. Refused, with a message here and to the
sender, and counted by -n: offers that do not decode (a name that is not UTF-8, a digest
algorithm other than blake3); absolute paths, components with '\\', NUL or control
characters, '.', '..', empty components or components over 255 bytes; a path through a
symbolic link here (or ending at one), never followed; a path offered twice in one tree;
files over --max-size; an existing file of other content unless --overwrite (one with the
offered size and digest is answered as saved at once). A chunk that was not
asked for, a longer one or a digest mismatch aborts the transfer and removes the part; a
sender silent for --idle-timeout stops it and keeps the part. A symbolic link in the place
of a part is never followed. Several senders may send at once. A progress bar per transfer shows on standard error when
it is a terminal.

Exit status: 0 every transfer (-n FILES of them) saved its file, 1 bad usage, 2 runtime
failure (some transfer was refused or aborted, I/O error, authentication refused), 3
--timeout expired.";

/// The endpoints, deadline and verbosity of `send-file` and `recv-file`.
#[derive(Debug, Args)]
pub struct FileCommonCli {
    /// Listen on EP (repeatable)
    #[arg(short = 'b', long = "bind", value_name = "EP")]
    pub bind: Vec<String>,
    /// Connect to EP (repeatable)
    #[arg(short = 'c', long = "connect", value_name = "EP")]
    pub connect: Vec<String>,
    /// Give up after MS milliseconds (exit 3)
    #[arg(long, value_name = "MS", value_parser = timeout_ms)]
    pub timeout: Option<Duration>,
    /// Print bound endpoints, connection events and each transfer's byte counts on
    /// standard error
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
}

/// `zmtp send-file`'s arguments.
#[derive(Debug, Args)]
pub struct SendFileCli {
    #[command(flatten)]
    pub common: FileCommonCli,
    /// The name to offer the file under, or the directory's name on the receiver's side
    /// (default: its own name)
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Hash the file even if its digest is cached, and do not record it
    #[arg(long)]
    pub no_digest_cache: bool,
    /// The file, or directory (sent whole), to send
    #[arg(value_name = "FILE|DIR")]
    pub file: PathBuf,
    #[command(flatten)]
    pub security: SecurityCli,
}

/// `zmtp recv-file`'s arguments.
#[derive(Debug, Args)]
pub struct RecvFileCli {
    #[command(flatten)]
    pub common: FileCommonCli,
    /// The directory to save files in
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// Create --dir (and its parents) if it does not exist
    #[arg(long)]
    pub mkdir: bool,
    /// Exit after FILES transfers (saved, refused or aborted)
    #[arg(short = 'n', long = "count", value_name = "FILES", value_parser = positive)]
    pub count: Option<u64>,
    /// Replace existing files of the same name
    #[arg(long)]
    pub overwrite: bool,
    /// Refuse files larger than BYTES
    #[arg(long, value_name = "BYTES")]
    pub max_size: Option<u64>,
    /// Ranges kept outstanding per transfer (credit)
    #[arg(long, value_name = "N", default_value = "8", value_parser = window)]
    pub window: u32,
    /// Bytes per range asked for
    #[arg(long, value_name = "BYTES", default_value = "262144", value_parser = chunk)]
    pub chunk: u32,
    /// Stop a transfer whose sender sends nothing for MS milliseconds, keeping its part
    /// to be resumed (0: wait for ever)
    #[arg(long, value_name = "MS", default_value = "60000")]
    pub idle_timeout: u64,
    #[command(flatten)]
    pub security: SecurityCli,
}

/// `zmtp send-file`, checked.
#[derive(Debug)]
pub struct SendFileArgs {
    /// The DEALER's endpoints, security, timeout and verbosity.
    pub socket: SocketArgs,
    /// FILE.
    pub file: PathBuf,
    /// `--name`.
    pub name: Option<String>,
    /// Take the digest from, and record it in, the digest cache file (not
    /// `--no-digest-cache`).
    pub digest_cache: bool,
}

/// `zmtp recv-file`, checked.
#[derive(Debug)]
pub struct RecvFileArgs {
    /// The ROUTER's endpoints, security, timeout and verbosity.
    pub socket: SocketArgs,
    /// `--dir`, `--overwrite`, `--max-size`, `--window`, `--chunk`, `--idle-timeout`.
    pub options: zmtp_file::RecvOptions,
    /// `-n`.
    pub count: Option<u64>,
    /// `--mkdir`: create `--dir` if it does not exist.
    pub mkdir: bool,
}

/// The text after the options list of `zmtp proxy --help`.
const PROXY_AFTER: &str = "\
Messages go both ways, whole, until TERMINATE arrives on --control (exit 0). A side that has
no room for a message (its HWM) holds the proxy's reading of the other side, so nothing is
dropped that the socket types would not drop. STATISTICS answers eight frames of a u64 each
(host byte order): messages and bytes received from the frontend, sent to the frontend,
received from the backend, sent to the backend. Every command is answered (STATISTICS with
its counters, the others with an empty frame).

Example, a request broker: zmtp proxy -t router -b tcp://*:5559 -T dealer -B tcp://*:5560

Exit status: 0 TERMINATE, 1 bad usage, 2 runtime failure.";

/// `zmtp proxy`, checked.
#[derive(Debug)]
pub struct ProxyArgs {
    /// `-t`.
    pub front: SocketType,
    /// `-b` and `-c`, in the order given.
    pub front_endpoints: Vec<(Direction, String)>,
    /// `-T`.
    pub back: SocketType,
    /// `-B` and `-C`, in the order given.
    pub back_endpoints: Vec<(Direction, String)>,
    /// `--capture`.
    pub capture: Option<String>,
    /// `--control`.
    pub control: Option<String>,
    /// `-v`.
    pub verbose: bool,
    /// `--tls-cert`, `--tls-key`, `--tls-ca`: for `wss://` endpoints of every socket.
    pub tls: Tls,
}

/// Options of `send` and `recv`.
#[derive(Debug, Args)]
pub struct CommonCli {
    /// The socket type, in any case: pair, pub, sub, xpub, xsub, push, pull, req, rep,
    /// dealer, router; draft (single-frame messages): client, server, radio, dish, scatter,
    /// gather, peer, channel; dgram (udp://, [address, body] messages); and stream (raw
    /// TCP, [routing id, bytes] messages)
    #[arg(
        short = 't',
        long = "type",
        value_name = "TYPE",
        value_enum,
        ignore_case = true,
        hide_possible_values = true
    )]
    pub ty: TypeArg,
    /// Listen on EP (repeatable)
    #[arg(short = 'b', long = "bind", value_name = "EP")]
    pub bind: Vec<String>,
    /// Connect to EP (repeatable)
    #[arg(short = 'c', long = "connect", value_name = "EP")]
    pub connect: Vec<String>,
    /// Give up after MS milliseconds (exit 3)
    #[arg(long, value_name = "MS", value_parser = timeout_ms)]
    pub timeout: Option<Duration>,
    /// On exit, wait up to MS for queued messages to be written (-1: as long as it takes)
    #[arg(long, value_name = "MS", default_value = "1000", allow_hyphen_values = true,
          value_parser = linger_ms)]
    pub linger: Linger,
    /// The routing id (ZMQ_ROUTING_ID)
    #[arg(long, value_name = "ID", value_parser = clap::value_parser!(OsString))]
    pub identity: Option<OsString>,
    /// Send and receive high-water marks (0: no limit)
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = hwm)]
    pub hwm: Option<usize>,
    /// Send a heartbeat PING every MS milliseconds
    #[arg(long, value_name = "MS", value_parser = millis)]
    pub heartbeat: Option<Duration>,
    /// Print frames as lowercase hex (recv's messages, send -t req's replies)
    #[arg(long, conflicts_with = "raw")]
    pub hex: bool,
    /// Print frames as the bytes received, unescaped (one message may then span lines)
    #[arg(long)]
    pub raw: bool,
    /// Print bound endpoints and connection events on standard error
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
}

/// The security options of `send` and `recv`.
#[derive(Debug, Args)]
#[command(next_help_heading = "Security")]
pub struct SecurityCli {
    /// Be a PLAIN client with user name U
    #[arg(long, value_name = "U", value_parser = clap::value_parser!(OsString))]
    pub plain_user: Option<OsString>,
    /// The PLAIN client's password
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(OsString))]
    pub plain_password: Option<OsString>,
    /// Be a PLAIN server (with --allow-user)
    #[arg(long)]
    pub plain_server: bool,
    /// Accept the PLAIN user U with password P (repeatable)
    #[arg(long, value_name = "U:P", value_parser = clap::value_parser!(OsString))]
    pub allow_user: Vec<OsString>,
    /// Be a CURVE server with this secret key
    #[arg(long, value_name = "Z85")]
    pub curve_server_secret: Option<String>,
    /// Accept this CURVE client public key (repeatable; default: any client)
    #[arg(long, value_name = "Z85")]
    pub allow_client: Vec<String>,
    /// Be a CURVE client of the server with this public key
    #[arg(long, value_name = "Z85")]
    pub curve_server_key: Option<String>,
    /// Our CURVE secret key (default: an ephemeral key pair)
    #[arg(long, value_name = "Z85")]
    pub curve_secret: Option<String>,
    #[command(flatten)]
    pub tls: TlsCli,
}

/// The TLS options of `wss://` endpoints (`send`, `recv`, `proxy`).
#[derive(Debug, Args)]
pub struct TlsCli {
    /// wss://: the certificate chain (PEM, leaf first) to present when binding
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// wss://: the private key (PEM) of --tls-cert
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// wss://: trust these CA certificates (PEM) when connecting (default: the system's)
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
}

/// `zmtp send`'s arguments.
#[derive(Debug, Args)]
pub struct SendCli {
    #[command(flatten)]
    pub common: CommonCli,
    #[command(flatten)]
    pub options: SendOptions,
    #[command(flatten)]
    pub security: SecurityCli,
    /// The frames of one message (draft types: one message each); none: read messages from
    /// standard input
    // No heading of its own: listed under "Arguments", not under the heading the security
    // options set before it.
    #[arg(value_name = "FRAME", value_parser = clap::value_parser!(OsString), help_heading = None)]
    pub frames: Vec<OsString>,
}

/// `zmtp send`'s own options.
#[derive(Debug, Args)]
pub struct SendOptions {
    /// Send the message N times (each line of input N times)
    #[arg(short = 'n', long = "count", value_name = "N", allow_hyphen_values = true,
          value_parser = positive)]
    pub count: Option<u64>,
    /// Wait MS milliseconds after binding and connecting before the first send
    #[arg(long, value_name = "MS", value_parser = millis)]
    pub delay: Option<Duration>,
    /// pub, xpub: before the first send, wait until N subscriptions have arrived (a SUB
    /// without --subscribe makes one); radio: until N dishes have connected, then 200 ms
    /// for their joins
    #[arg(long, value_name = "N", value_parser = positive)]
    pub wait_subscribers: Option<u64>,
    /// radio: the group every message goes to (at most 255 bytes; '' is the empty group)
    #[arg(long, value_name = "GROUP", value_parser = clap::value_parser!(OsString))]
    pub group: Option<OsString>,
    /// FRAME arguments and input lines are hex
    #[arg(long, conflicts_with = "unescape")]
    pub hex_frames: bool,
    /// FRAME arguments and input lines use recv's escapes (\t \n \r \\ \xHH)
    #[arg(long)]
    pub unescape: bool,
}

/// `zmtp recv`'s own options.
#[derive(Debug, Args)]
pub struct RecvCli {
    #[command(flatten)]
    pub common: CommonCli,
    /// Exit after N messages
    #[arg(short = 'n', long = "count", value_name = "N", allow_hyphen_values = true,
          value_parser = positive)]
    pub count: Option<u64>,
    /// Send every message back as received (pair, dealer, router, rep; client, channel,
    /// and server and peer to the sender's routing id; dgram to the sender's address;
    /// stream every chunk to its connection)
    #[arg(long)]
    pub echo: bool,
    /// Subscribe to PREFIX (repeatable; a SUB without any gets everything)
    #[arg(long, value_name = "PREFIX", value_parser = clap::value_parser!(OsString))]
    pub subscribe: Vec<OsString>,
    /// dish: join GROUP (repeatable, at least one; matched whole, not as a prefix)
    #[arg(long, value_name = "GROUP", value_parser = clap::value_parser!(OsString))]
    pub join: Vec<OsString>,
    #[command(flatten)]
    pub security: SecurityCli,
}

/// `zmtp bench`'s options.
#[derive(Debug, Args)]
pub struct BenchCli {
    /// The driver to measure
    #[arg(long, value_enum, default_value = "tokio")]
    pub driver: Driver,
    /// The transport
    #[arg(long, value_enum, default_value = "tcp")]
    pub transport: Transport,
    /// Bytes per message
    #[arg(long, value_name = "BYTES", default_value = "64", allow_hyphen_values = true,
          value_parser = bench_size)]
    pub size: usize,
    /// Messages in the throughput run (the latency run makes 10000 round trips, or N if fewer)
    #[arg(short = 'n', long = "count", value_name = "N", default_value = "1000000",
          allow_hyphen_values = true, value_parser = positive)]
    pub count: u64,
}

/// The socket types `-t` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TypeArg {
    /// PAIR
    Pair,
    /// PUB
    Pub,
    /// SUB
    Sub,
    /// XPUB
    Xpub,
    /// XSUB
    Xsub,
    /// PUSH
    Push,
    /// PULL
    Pull,
    /// REQ
    Req,
    /// REP
    Rep,
    /// DEALER
    Dealer,
    /// ROUTER
    Router,
    /// CLIENT (draft)
    Client,
    /// SERVER (draft)
    Server,
    /// RADIO (draft)
    Radio,
    /// DISH (draft)
    Dish,
    /// SCATTER (draft)
    Scatter,
    /// GATHER (draft)
    Gather,
    /// PEER (draft)
    Peer,
    /// CHANNEL (draft)
    Channel,
    /// DGRAM (draft; udp:// only)
    Dgram,
    /// STREAM (raw TCP)
    Stream,
}

impl From<TypeArg> for SocketType {
    fn from(t: TypeArg) -> SocketType {
        match t {
            TypeArg::Pair => SocketType::Pair,
            TypeArg::Pub => SocketType::Pub,
            TypeArg::Sub => SocketType::Sub,
            TypeArg::Xpub => SocketType::XPub,
            TypeArg::Xsub => SocketType::XSub,
            TypeArg::Push => SocketType::Push,
            TypeArg::Pull => SocketType::Pull,
            TypeArg::Req => SocketType::Req,
            TypeArg::Rep => SocketType::Rep,
            TypeArg::Dealer => SocketType::Dealer,
            TypeArg::Router => SocketType::Router,
            TypeArg::Client => SocketType::Client,
            TypeArg::Server => SocketType::Server,
            TypeArg::Radio => SocketType::Radio,
            TypeArg::Dish => SocketType::Dish,
            TypeArg::Scatter => SocketType::Scatter,
            TypeArg::Gather => SocketType::Gather,
            TypeArg::Peer => SocketType::Peer,
            TypeArg::Channel => SocketType::Channel,
            TypeArg::Dgram => SocketType::Dgram,
            TypeArg::Stream => SocketType::Stream,
        }
    }
}

/// Whether `ty` is one of the draft types, whose messages are single frames: `send` makes
/// each frame a message of its own.
pub fn single_frame(ty: SocketType) -> bool {
    matches!(
        ty,
        SocketType::Client
            | SocketType::Server
            | SocketType::Radio
            | SocketType::Dish
            | SocketType::Scatter
            | SocketType::Gather
            | SocketType::Peer
            | SocketType::Channel
    )
}

/// `--linger`: how long close waits for queued messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Linger(pub Option<Duration>);

/// What to do.
#[derive(Debug)]
pub enum Command {
    /// Print this text to standard output (help, version, completions; exit 0).
    Print(String),
    /// Print a new CURVE key pair.
    Keygen,
    /// `zmtp send`.
    Send(SocketArgs),
    /// `zmtp recv`.
    Recv(SocketArgs),
    /// `zmtp bench`.
    Bench(BenchArgs),
    /// `zmtp proxy`.
    Proxy(ProxyArgs),
    /// `zmtp send-file`.
    SendFile(SendFileArgs),
    /// `zmtp recv-file`.
    RecvFile(RecvFileArgs),
}

/// `-b` or `-c`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Listen on the endpoint.
    Bind,
    /// Connect to the endpoint.
    Connect,
}

/// The security mechanism and our role in it.
#[derive(Debug)]
pub enum Role {
    /// NULL: no security.
    Null,
    /// A PLAIN client.
    PlainClient { user: Vec<u8>, password: Vec<u8> },
    /// A PLAIN server with its table of users and passwords.
    PlainServer { users: Vec<(Vec<u8>, Vec<u8>)> },
    /// A CURVE server; `clients` empty means any client key.
    CurveServer {
        secret: [u8; 32],
        clients: Vec<[u8; 32]>,
    },
    /// A CURVE client; without `secret`, an ephemeral key pair.
    CurveClient {
        server_key: [u8; 32],
        secret: Option<[u8; 32]>,
    },
}

impl Role {
    /// Whether we authenticate ourselves to a server (PLAIN or CURVE client).
    pub fn is_client(&self) -> bool {
        matches!(self, Role::PlainClient { .. } | Role::CurveClient { .. })
    }

    /// Whether we authenticate peers (PLAIN or CURVE server).
    pub fn is_server(&self) -> bool {
        matches!(self, Role::PlainServer { .. } | Role::CurveServer { .. })
    }
}

/// How frames are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Escaped text (the default): one line per message whatever the frames hold.
    Escaped,
    /// Lowercase hex.
    Hex,
    /// The bytes as received.
    Raw,
}

/// How frames given to `send` (arguments or input lines) are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// As they are.
    Plain,
    /// Hex.
    Hex,
    /// recv's escapes.
    Escaped,
}

/// Everything `send` and `recv` take.
#[derive(Debug)]
pub struct SocketArgs {
    /// `-t`.
    pub ty: SocketType,
    /// `-b` and `-c`, in the order given.
    pub endpoints: Vec<(Direction, String)>,
    /// `-n`: messages to send (each) or to receive before exiting.
    pub count: Option<u64>,
    /// `--linger`: `None` waits as long as it takes.
    pub linger: Option<Duration>,
    /// `--hex`, `--raw` or neither.
    pub output: Output,
    /// `--echo`: send every received message back.
    pub echo: bool,
    /// `--subscribe` prefixes.
    pub subscribe: Vec<Vec<u8>>,
    /// `--join`: the groups a DISH joins (each once).
    pub join: Vec<Vec<u8>>,
    /// `--group`: the group a RADIO sends to.
    pub group: Option<Vec<u8>>,
    /// `--timeout`.
    pub timeout: Option<Duration>,
    /// `--identity`.
    pub identity: Option<Vec<u8>>,
    /// `--hwm`.
    pub hwm: Option<usize>,
    /// `--heartbeat`.
    pub heartbeat: Option<Duration>,
    /// `--hex-frames`, `--unescape` or neither.
    pub input: Input,
    /// `--delay`: wait this long before the first send.
    pub delay: Option<Duration>,
    /// `--wait-subscribers`: subscriptions (PUB, XPUB) or dishes (RADIO) to wait for before
    /// the first send.
    pub wait_subscribers: Option<u64>,
    /// Security options.
    pub role: Role,
    /// `--tls-cert`, `--tls-key`, `--tls-ca`: for `wss://` endpoints.
    pub tls: Tls,
    /// `-v`: report endpoints and events on stderr.
    pub verbose: bool,
    /// The message given as FRAME arguments (decoded); `None`: read standard input.
    pub frames: Option<Vec<Vec<u8>>>,
}

/// The transport `bench` runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Transport {
    /// tcp://127.0.0.1
    Tcp,
    /// ipc:// (an abstract name on Linux)
    Ipc,
    /// inproc://
    Inproc,
}

impl Transport {
    /// The transport's name, as written in endpoints.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Ipc => "ipc",
            Transport::Inproc => "inproc",
        }
    }
}

/// The drivers `bench --driver` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Driver {
    /// zmtp-tokio on a current-thread runtime
    Tokio,
    /// zmtp-smol on smol's block_on
    Smol,
    /// zmtp-mio: blocking sockets on a mio reactor thread
    Mio,
}

/// Everything `bench` takes.
#[derive(Debug)]
pub struct BenchArgs {
    /// `--driver`.
    pub driver: Driver,
    /// `--transport`.
    pub transport: Transport,
    /// `--size`: bytes per message.
    pub size: usize,
    /// `--count`: messages in the throughput run.
    pub count: u64,
}

/// The largest millisecond value accepted (libzmq's options are C `int`s).
const MAX_MS: u64 = i32::MAX as u64;

/// The largest `bench --size` (256 MiB).
const MAX_BENCH_SIZE: usize = 1 << 28;

fn usage(message: impl Into<String>) -> Failure {
    Failure::Usage(message.into())
}

/// The bytes of an argument (as given, on Unix; lossily converted elsewhere).
fn os_bytes(s: &OsStr) -> Vec<u8> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        s.as_bytes().to_vec()
    }
    #[cfg(not(unix))]
    {
        s.to_string_lossy().into_owned().into_bytes()
    }
}

/// A count of at least 1.
fn positive(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("expected a positive number".into()),
    }
}

/// Milliseconds, 0 to `MAX_MS`.
fn millis(text: &str) -> Result<Duration, String> {
    let ms: u64 = text
        .parse()
        .map_err(|_| "expected milliseconds".to_string())?;
    if ms > MAX_MS {
        return Err(format!("at most {MAX_MS} milliseconds"));
    }
    Ok(Duration::from_millis(ms))
}

/// `--timeout`: milliseconds, at least 1.
fn timeout_ms(text: &str) -> Result<Duration, String> {
    let t = millis(text)?;
    if t.is_zero() {
        return Err("expected at least 1 ms".into());
    }
    Ok(t)
}

/// `--linger`: milliseconds or -1.
fn linger_ms(text: &str) -> Result<Linger, String> {
    if text == "-1" {
        return Ok(Linger(None));
    }
    millis(text).map(|d| Linger(Some(d)))
}

/// `--hwm`: a number of messages.
fn hwm(text: &str) -> Result<usize, String> {
    let h: usize = text
        .parse()
        .map_err(|_| "expected a number of messages".to_string())?;
    if h as u64 > MAX_MS {
        return Err("too large".into());
    }
    Ok(h)
}

/// `recv-file --window`: 1 to 1024 ranges.
fn window(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n @ 1..=1024) => Ok(n),
        _ => Err("expected 1 to 1024".into()),
    }
}

/// `recv-file --chunk`: 1 byte to the protocol's largest range.
fn chunk(text: &str) -> Result<u32, String> {
    let max = zmtp_file::wire::FETCH_MAX;
    match text.parse::<u32>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("expected 1 to {max} bytes")),
    }
}

/// `bench --size`.
fn bench_size(text: &str) -> Result<usize, String> {
    let size: usize = text
        .parse()
        .map_err(|_| "expected a number of bytes".to_string())?;
    if size > MAX_BENCH_SIZE {
        return Err(format!("at most {MAX_BENCH_SIZE} bytes"));
    }
    Ok(size)
}

fn z85_key(name: &str, text: &str) -> Result<[u8; 32], Failure> {
    z85::decode_key(text.as_bytes()).map_err(|e| {
        usage(format!(
            "bad Z85 key for {name}: {e} (a key is 40 Z85 characters)"
        ))
    })
}

/// The help of `zmtp` itself, as text.
pub fn help_text() -> String {
    Cli::command().render_help().to_string()
}

/// A clap error as one line: the message and its details, without the usage lines.
fn one_line(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let mut parts = Vec::new();
    for line in rendered.lines() {
        let line = line.trim();
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        if !line.is_empty() {
            parts.push(line.strip_prefix("error: ").unwrap_or(line));
        }
    }
    let mut line = String::new();
    for part in parts {
        if !line.is_empty() {
            line.push_str(if line.ends_with(':') { " " } else { "; " });
        }
        line.push_str(part);
    }
    line
}

/// Parse the arguments after the program name.
pub fn parse(args: Vec<OsString>) -> Result<Command, Failure> {
    if args.is_empty() {
        return Err(Failure::NoArguments);
    }
    // Usage errors point at the help of the subcommand they concern.
    let see = match args.first().and_then(|a| a.to_str()) {
        Some(
            c @ ("send" | "recv" | "keygen" | "bench" | "proxy" | "completions" | "send-file"
            | "recv-file"),
        ) => {
            format!(" (see 'zmtp {c} --help')")
        }
        _ => " (see 'zmtp --help')".to_string(),
    };
    let usage = |message: String| usage(message + &see);
    let argv = std::iter::once(OsString::from("zmtp")).chain(args);
    let matches = match Cli::command().try_get_matches_from(argv) {
        Ok(m) => m,
        Err(e) => {
            use clap::error::ErrorKind;
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    Ok(Command::Print(e.render().to_string()))
                }
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => Err(Failure::NoArguments),
                _ => Err(usage(one_line(&e))),
            };
        }
    };
    let cli = Cli::from_arg_matches(&matches).map_err(|e| usage(one_line(&e)))?;
    match cli.command {
        CliCommand::Keygen => Ok(Command::Keygen),
        CliCommand::Completions { shell } => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "zmtp", &mut out);
            Ok(Command::Print(String::from_utf8_lossy(&out).into_owned()))
        }
        CliCommand::Bench(b) => Ok(Command::Bench(BenchArgs {
            driver: b.driver,
            transport: b.transport,
            size: b.size,
            count: b.count,
        })),
        CliCommand::Proxy(p) => {
            let sub = sub_matches(&matches, "proxy");
            let front = SocketType::from(p.ty);
            let back = SocketType::from(p.back_ty);
            let front_endpoints = endpoints_in_order(sub, p.bind, p.connect);
            let back_endpoints = endpoints_named(
                sub,
                ("back_bind", "back_connect"),
                p.back_bind,
                p.back_connect,
            );
            if front_endpoints.is_empty() || back_endpoints.is_empty() {
                return Err(usage(
                    "the frontend needs -b EP or -c EP, the backend -B EP or -C EP".into(),
                ));
            }
            let tls = tls_settings(&p.tls).map_err(|e| see_also(e, &see))?;
            Ok(Command::Proxy(ProxyArgs {
                front,
                front_endpoints,
                back,
                back_endpoints,
                capture: p.capture,
                control: p.control,
                verbose: p.verbose,
                tls,
            }))
        }
        CliCommand::SendFile(f) => {
            let sub = sub_matches(&matches, "send-file");
            let socket = file_socket_args(sub, SocketType::Dealer, f.common, f.security)
                .map_err(|e| see_also(e, &see))?;
            Ok(Command::SendFile(SendFileArgs {
                socket,
                file: f.file,
                name: f.name,
                digest_cache: !f.no_digest_cache,
            }))
        }
        CliCommand::RecvFile(r) => {
            let sub = sub_matches(&matches, "recv-file");
            let socket = file_socket_args(sub, SocketType::Router, r.common, r.security)
                .map_err(|e| see_also(e, &see))?;
            let mut options = zmtp_file::RecvOptions::new(r.dir);
            options.overwrite = r.overwrite;
            options.max_size = r.max_size.unwrap_or(u64::MAX);
            options.window = r.window;
            options.chunk = r.chunk;
            options.idle_timeout =
                (r.idle_timeout > 0).then(|| Duration::from_millis(r.idle_timeout));
            Ok(Command::RecvFile(RecvFileArgs {
                socket,
                options,
                count: r.count,
                mkdir: r.mkdir,
            }))
        }
        CliCommand::Send(s) => {
            let sub = sub_matches(&matches, "send");
            let send = SendOrRecv::Send {
                options: s.options,
                frames: s.frames,
            };
            socket_args(sub, s.common, s.security, send)
                .map(Command::Send)
                .map_err(|e| see_also(e, &see))
        }
        CliCommand::Recv(r) => {
            let sub = sub_matches(&matches, "recv");
            socket_args(
                sub,
                r.common,
                r.security,
                SendOrRecv::Recv {
                    count: r.count,
                    echo: r.echo,
                    subscribe: r.subscribe,
                    join: r.join,
                },
            )
            .map(Command::Recv)
            .map_err(|e| see_also(e, &see))
        }
    }
}

/// A usage error with where to read more.
fn see_also(e: Failure, see: &str) -> Failure {
    match e {
        Failure::Usage(m) => Failure::Usage(m + see),
        e => e,
    }
}

fn sub_matches<'m>(matches: &'m ArgMatches, name: &str) -> Option<&'m ArgMatches> {
    matches
        .subcommand()
        .and_then(|(n, m)| (n == name).then_some(m))
}

/// The options only one of `send` and `recv` has.
enum SendOrRecv {
    Send {
        options: SendOptions,
        frames: Vec<OsString>,
    },
    Recv {
        count: Option<u64>,
        echo: bool,
        subscribe: Vec<OsString>,
        join: Vec<OsString>,
    },
}

/// `-b` and `-c` in the order given on the command line.
fn endpoints_in_order(
    matches: Option<&ArgMatches>,
    bind: Vec<String>,
    connect: Vec<String>,
) -> Vec<(Direction, String)> {
    endpoints_named(matches, ("bind", "connect"), bind, connect)
}

/// The bind and connect endpoints of the options `ids` in the order given.
fn endpoints_named(
    matches: Option<&ArgMatches>,
    ids: (&str, &str),
    bind: Vec<String>,
    connect: Vec<String>,
) -> Vec<(Direction, String)> {
    let indices = |id: &str| -> Vec<usize> {
        matches
            .and_then(|m| m.indices_of(id))
            .map(|i| i.collect())
            .unwrap_or_default()
    };
    let (bi, ci) = (indices(ids.0), indices(ids.1));
    let mut all: Vec<(usize, Direction, String)> = Vec::new();
    for (n, ep) in bind.into_iter().enumerate() {
        all.push((bi.get(n).copied().unwrap_or(0), Direction::Bind, ep));
    }
    for (n, ep) in connect.into_iter().enumerate() {
        all.push((ci.get(n).copied().unwrap_or(0), Direction::Connect, ep));
    }
    all.sort_by_key(|(i, _, _)| *i);
    all.into_iter().map(|(_, d, ep)| (d, ep)).collect()
}

/// The socket of `send-file` (a DEALER) or `recv-file` (a ROUTER): `send`'s and `recv`'s
/// defaults but for the endpoints, the deadline, `-v` and the security options.
fn file_socket_args(
    matches: Option<&ArgMatches>,
    ty: SocketType,
    common: FileCommonCli,
    security: SecurityCli,
) -> Result<SocketArgs, Failure> {
    let endpoints = endpoints_in_order(matches, common.bind, common.connect);
    if endpoints.is_empty() {
        return Err(usage(
            "missing an endpoint: -b EP (bind) or -c EP (connect)",
        ));
    }
    let tls = tls_settings(&security.tls)?;
    let role = security_role(security)?;
    Ok(SocketArgs {
        ty,
        endpoints,
        count: None,
        linger: Some(Duration::from_millis(1000)),
        output: Output::Escaped,
        echo: false,
        subscribe: Vec::new(),
        join: Vec::new(),
        group: None,
        timeout: common.timeout,
        identity: None,
        hwm: None,
        heartbeat: None,
        input: Input::Plain,
        delay: None,
        wait_subscribers: None,
        role,
        tls,
        verbose: common.verbose,
        frames: None,
    })
}

/// The options of `send` or `recv`, checked for consistency.
fn socket_args(
    matches: Option<&ArgMatches>,
    common: CommonCli,
    security: SecurityCli,
    specific: SendOrRecv,
) -> Result<SocketArgs, Failure> {
    let ty = SocketType::from(common.ty);
    let endpoints = endpoints_in_order(matches, common.bind, common.connect);
    if endpoints.is_empty() {
        return Err(usage(
            "missing an endpoint: -b EP (bind) or -c EP (connect)",
        ));
    }
    let name = ty.name();
    let output = match (common.hex, common.raw) {
        (true, _) => Output::Hex,
        (false, true) => Output::Raw,
        (false, false) => Output::Escaped,
    };
    let tls = tls_settings(&security.tls)?;
    let role = security_role(security)?;
    let mut args = SocketArgs {
        ty,
        endpoints,
        count: None,
        linger: common.linger.0,
        output,
        echo: false,
        subscribe: Vec::new(),
        join: Vec::new(),
        group: None,
        timeout: common.timeout,
        identity: common.identity.as_deref().map(os_bytes),
        hwm: common.hwm,
        heartbeat: common.heartbeat,
        input: Input::Plain,
        delay: None,
        wait_subscribers: None,
        role,
        tls,
        verbose: common.verbose,
        frames: None,
    };
    match specific {
        SendOrRecv::Send { options: s, frames } => {
            if !ty.sends() {
                return Err(usage(format!("a {name} socket cannot send")));
            }
            if ty == SocketType::Rep {
                return Err(usage(
                    "a REP socket cannot send first (use 'recv -t rep --echo', or 'send -t req')",
                ));
            }
            if ty == SocketType::Server {
                return Err(usage(
                    "a SERVER socket cannot send first: it replies to its clients' routing ids \
                     (use 'recv -t server --echo', or 'send -t client')",
                ));
            }
            only_for(
                "--wait-subscribers",
                s.wait_subscribers.is_some(),
                ty,
                &[SocketType::Pub, SocketType::XPub, SocketType::Radio],
            )?;
            only_for("--group", s.group.is_some(), ty, &[SocketType::Radio])?;
            if ty == SocketType::Radio && s.group.is_none() {
                return Err(usage(
                    "a RADIO sends to a group: give --group GROUP ('' for the empty group)",
                ));
            }
            if ty == SocketType::Peer && !matches!(args.endpoints[..], [(Direction::Connect, _)]) {
                return Err(usage(
                    "send -t peer sends to the one peer it connects to: give one -c EP and no -b",
                ));
            }
            args.group = s
                .group
                .as_deref()
                .map(|g| group_arg("--group", g))
                .transpose()?;
            args.input = match (s.hex_frames, s.unescape) {
                (true, _) => Input::Hex,
                (false, true) => Input::Escaped,
                (false, false) => Input::Plain,
            };
            args.count = s.count;
            args.delay = s.delay;
            args.wait_subscribers = s.wait_subscribers;
            if !frames.is_empty() {
                let mut decoded = Vec::with_capacity(frames.len());
                for p in &frames {
                    let raw = os_bytes(p);
                    decoded.push(decode_frame(&raw, args.input).ok_or_else(|| {
                        usage(format!(
                            "{}: frame '{}' is not {}",
                            input_flag(args.input),
                            String::from_utf8_lossy(&raw),
                            input_what(args.input)
                        ))
                    })?);
                }
                args.frames = Some(decoded);
            }
        }
        SendOrRecv::Recv {
            count,
            echo,
            subscribe,
            join,
        } => {
            if echo && !ECHOES.contains(&ty) {
                return Err(usage(format!(
                    "--echo needs a socket that can answer ({}), not {name}",
                    lower_names(ECHOES, ", ")
                )));
            }
            if !ty.receives() {
                return Err(usage(format!("a {name} socket cannot receive")));
            }
            if ty == SocketType::Req {
                return Err(usage(
                    "a REQ socket must send first (use 'send -t req', which prints the replies)",
                ));
            }
            only_for(
                "--subscribe",
                !subscribe.is_empty(),
                ty,
                &[SocketType::Sub, SocketType::XSub],
            )?;
            only_for("--join", !join.is_empty(), ty, &[SocketType::Dish])?;
            if ty == SocketType::Dish && join.is_empty() {
                return Err(usage(
                    "a DISH receives only the groups it joins: give --join GROUP (repeatable)",
                ));
            }
            for g in &join {
                let g = group_arg("--join", g)?;
                if !args.join.contains(&g) {
                    args.join.push(g);
                }
            }
            args.count = count;
            args.echo = echo;
            args.subscribe = subscribe.iter().map(|s| os_bytes(s)).collect();
        }
    }
    Ok(args)
}

/// The types `recv --echo` takes: those that can answer what they receive.
const ECHOES: &[SocketType] = &[
    SocketType::Rep,
    SocketType::Router,
    SocketType::Dealer,
    SocketType::Pair,
    SocketType::Client,
    SocketType::Server,
    SocketType::Peer,
    SocketType::Channel,
    SocketType::Dgram,
    SocketType::Stream,
];

/// The names of `types` in lower case (as `-t` takes them), separated by `sep`.
fn lower_names(types: &[SocketType], sep: &str) -> String {
    let names: Vec<String> = types.iter().map(|t| t.name().to_lowercase()).collect();
    names.join(sep)
}

/// A usage error when an option `flag` that only `types` take was `given` with `ty`.
fn only_for(flag: &str, given: bool, ty: SocketType, types: &[SocketType]) -> Result<(), Failure> {
    if !given || types.contains(&ty) {
        return Ok(());
    }
    let list = match types {
        [one] => one.name().to_lowercase(),
        [rest @ .., last] => format!(
            "{} or {}",
            lower_names(rest, ", "),
            last.name().to_lowercase()
        ),
        [] => String::new(),
    };
    Err(usage(format!(
        "{flag} needs a {list} socket, not {}",
        ty.name()
    )))
}

/// A group given to `flag` (`--group`, `--join`): at most [`GROUP_MAX_LEN`] bytes.
fn group_arg(flag: &str, group: &OsStr) -> Result<Vec<u8>, Failure> {
    let group = os_bytes(group);
    if group.len() > GROUP_MAX_LEN {
        return Err(usage(format!(
            "{flag}: a group is at most {GROUP_MAX_LEN} bytes, not {}",
            group.len()
        )));
    }
    Ok(group)
}

/// One frame as given, read the way `input` says; `None` if it is malformed.
pub fn decode_frame(raw: &[u8], input: Input) -> Option<Vec<u8>> {
    match input {
        Input::Plain => Some(raw.to_vec()),
        Input::Hex => hex::decode(raw),
        Input::Escaped => crate::escape::unescape(raw),
    }
}

/// The option that chose `input`, for messages.
pub fn input_flag(input: Input) -> &'static str {
    match input {
        Input::Hex => "--hex-frames",
        Input::Escaped => "--unescape",
        Input::Plain => "FRAME",
    }
}

/// What a frame must be under `input`, for messages.
pub fn input_what(input: Input) -> &'static str {
    match input {
        Input::Hex => "hex",
        Input::Escaped => "validly escaped",
        Input::Plain => "valid",
    }
}

/// The security role from the security options, checked for consistency.
/// The TLS settings of `wss://` endpoints from `--tls-cert`, `--tls-key` and `--tls-ca`:
/// the files are read and checked here.
fn tls_settings(s: &TlsCli) -> Result<Tls, Failure> {
    let mut tls = Tls::new();
    if let (Some(cert), Some(key)) = (&s.tls_cert, &s.tls_key) {
        tls = tls
            .with_identity_files(cert, key)
            .map_err(|e| usage(format!("bad --tls-cert/--tls-key: {e}")))?;
    }
    if let Some(ca) = &s.tls_ca {
        tls = tls
            .with_roots_file(ca)
            .map_err(|e| usage(format!("bad --tls-ca: {e}")))?;
    }
    Ok(tls)
}

fn security_role(s: SecurityCli) -> Result<Role, Failure> {
    let chosen: Vec<&str> = [
        (
            s.plain_user.is_some() || s.plain_password.is_some(),
            "--plain-user",
        ),
        (s.plain_server, "--plain-server"),
        (s.curve_server_secret.is_some(), "--curve-server-secret"),
        (s.curve_server_key.is_some(), "--curve-server-key"),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, name)| *name)
    .collect();
    if let [first, second, ..] = chosen[..] {
        return Err(usage(format!(
            "incompatible options {first} and {second}: choose one security mechanism and role"
        )));
    }
    let curve_server_secret = s
        .curve_server_secret
        .map(|k| z85_key("--curve-server-secret", &k))
        .transpose()?;
    let curve_server_key = s
        .curve_server_key
        .map(|k| z85_key("--curve-server-key", &k))
        .transpose()?;
    let curve_secret = s
        .curve_secret
        .map(|k| z85_key("--curve-secret", &k))
        .transpose()?;
    let allow_clients = s
        .allow_client
        .iter()
        .map(|k| z85_key("--allow-client", k))
        .collect::<Result<Vec<_>, _>>()?;
    let mut allow_users = Vec::new();
    for v in &s.allow_user {
        let v = os_bytes(v);
        let Some(colon) = v.iter().position(|&c| c == b':') else {
            return Err(usage(format!(
                "invalid value '{}' for --allow-user: expected USER:PASSWORD",
                String::from_utf8_lossy(&v)
            )));
        };
        let (user, password) = v.split_at(colon);
        allow_users.push((user.to_vec(), password.get(1..).unwrap_or(&[]).to_vec()));
    }
    if !allow_users.is_empty() && !s.plain_server {
        return Err(usage("--allow-user needs --plain-server"));
    }
    if !allow_clients.is_empty() && curve_server_secret.is_none() {
        return Err(usage("--allow-client needs --curve-server-secret"));
    }
    if curve_secret.is_some() && curve_server_key.is_none() {
        return Err(usage("--curve-secret needs --curve-server-key"));
    }
    let plain_user = s.plain_user.as_deref().map(os_bytes);
    let plain_password = s.plain_password.as_deref().map(os_bytes);
    Ok(match (plain_user, plain_password) {
        (Some(user), Some(password)) => {
            if user.len() > 255 || password.len() > 255 {
                return Err(usage(
                    "--plain-user and --plain-password are at most 255 bytes each",
                ));
            }
            Role::PlainClient { user, password }
        }
        (Some(_), None) => return Err(usage("--plain-user needs --plain-password")),
        (None, Some(_)) => return Err(usage("--plain-password needs --plain-user")),
        (None, None) if s.plain_server => {
            if allow_users.is_empty() {
                return Err(usage(
                    "--plain-server needs at least one --allow-user USER:PASSWORD",
                ));
            }
            Role::PlainServer { users: allow_users }
        }
        (None, None) => match (curve_server_secret, curve_server_key) {
            (Some(secret), _) => Role::CurveServer {
                secret,
                clients: allow_clients,
            },
            (None, Some(server_key)) => Role::CurveClient {
                server_key,
                secret: curve_secret,
            },
            (None, None) => Role::Null,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn send_help_lists_the_frames_under_arguments_not_security() {
        let mut cli = Cli::command();
        let send = cli.find_subcommand_mut("send").expect("send");
        let help = send.render_help().to_string();
        let arguments = help.find("\nArguments:\n  [FRAME]...  The frames of one message");
        let security = help.find("\nSecurity:\n").expect("a Security heading");
        assert!(arguments.is_some_and(|a| a < security), "{help}");
        assert_eq!(help.matches("[FRAME]...  ").count(), 1, "{help}");
    }

    fn usage_error(list: &[&str]) -> String {
        match parse(args(list)) {
            Err(Failure::Usage(m)) => m,
            other => panic!("{list:?}: expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn the_command_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn send_with_frames_and_options() {
        let Ok(Command::Send(s)) = parse(args(&[
            "send",
            "-t",
            "PUSH",
            "-c",
            "tcp://127.0.0.1:5555",
            "--bind=ipc://@x",
            "-c",
            "inproc://y",
            "-n",
            "3",
            "--hex-frames",
            "--delay",
            "20",
            "--",
            "00ff",
            "1A",
        ])) else {
            panic!("not a send");
        };
        assert_eq!(s.ty, SocketType::Push);
        assert_eq!(
            s.endpoints,
            [
                (Direction::Connect, "tcp://127.0.0.1:5555".to_string()),
                (Direction::Bind, "ipc://@x".to_string()),
                (Direction::Connect, "inproc://y".to_string()),
            ]
        );
        assert_eq!(s.count, Some(3));
        assert_eq!(s.frames, Some(vec![vec![0, 0xff], vec![0x1a]]));
        assert_eq!(s.linger, Some(Duration::from_millis(1000)));
        assert_eq!(s.delay, Some(Duration::from_millis(20)));
        assert_eq!(s.output, Output::Escaped);
    }

    #[test]
    fn linger_minus_one_and_output_modes() {
        let Ok(Command::Recv(r)) = parse(args(&[
            "recv", "-t", "sub", "-c", "x", "--linger", "-1", "--raw",
        ])) else {
            panic!("not a recv");
        };
        assert_eq!(r.linger, None);
        assert_eq!(r.output, Output::Raw);
        let Ok(Command::Send(s)) = parse(args(&[
            "send",
            "-t",
            "pub",
            "-b",
            "x",
            "--wait-subscribers",
            "2",
            "--unescape",
            "a\\tb",
        ])) else {
            panic!("not a send");
        };
        assert_eq!(s.wait_subscribers, Some(2));
        assert_eq!(s.frames, Some(vec![b"a\tb".to_vec()]));
    }

    #[test]
    fn usage_errors_name_the_problem() {
        assert!(usage_error(&["send", "-t", "nope", "-c", "tcp://a:1"]).contains("nope"));
        assert!(usage_error(&["recv", "-t", "pull"]).contains("endpoint"));
        assert!(usage_error(&["recv", "-c", "tcp://a:1"]).contains("--type"));
        assert!(usage_error(&["recv", "-t", "push", "-c", "tcp://a:1"]).contains("receive"));
        assert!(usage_error(&["recv", "-t", "pull", "-c", "x", "--echo"]).contains("--echo"));
        assert!(
            usage_error(&["send", "-t", "push", "-c", "x", "--plain-user", "u"])
                .contains("--plain-password")
        );
        assert!(usage_error(&[
            "send",
            "-t",
            "push",
            "-c",
            "x",
            "--curve-server-key",
            "short"
        ])
        .contains("Z85"));
        let typo = usage_error(&["send", "-t", "push", "-c", "x", "--linge", "5"]);
        assert!(
            typo.contains("--linge") && typo.contains("--linger"),
            "{typo}"
        );
        assert!(usage_error(&["bench", "--driver", "nope"]).contains("tokio, smol, mio"));
        assert!(
            usage_error(&["send", "-t", "push", "-c", "x", "--hex-frames", "zz"]).contains("hex")
        );
        assert!(
            usage_error(&["send", "-t", "push", "-c", "x", "--unescape", "a\\q"])
                .contains("escaped")
        );
        assert!(
            usage_error(&["send", "-t", "push", "-c", "x", "--wait-subscribers", "1"])
                .contains("pub")
        );
        assert!(usage_error(&["send", "-t", "push", "-c"]).contains("value is required"));
        assert!(usage_error(&["frob"]).contains("frob"));
        assert!(matches!(parse(vec![]), Err(Failure::NoArguments)));
        for message in [
            usage_error(&["send", "-t", "push", "-c", "x", "--frobnicate"]),
            usage_error(&["bench", "--transport", "udp"]),
            usage_error(&["recv", "-c", "x"]),
        ] {
            assert!(!message.contains('\n'), "{message}");
        }
    }

    #[test]
    fn draft_types_take_their_groups() {
        let Ok(Command::Recv(r)) = parse(args(&[
            "recv", "-t", "DISH", "-c", "x", "--join", "a", "--join", "", "--join", "a",
        ])) else {
            panic!("not a recv");
        };
        assert_eq!(r.ty, SocketType::Dish);
        // Each group once, in the order given; the empty group is a group.
        assert_eq!(r.join, [b"a".to_vec(), Vec::new()]);
        let Ok(Command::Send(s)) = parse(args(&[
            "send",
            "-t",
            "radio",
            "-b",
            "x",
            "--group",
            "news",
            "--wait-subscribers",
            "2",
            "a",
            "b",
        ])) else {
            panic!("not a send");
        };
        assert_eq!(s.group.as_deref(), Some(&b"news"[..]));
        assert_eq!(s.wait_subscribers, Some(2));
        assert_eq!(s.frames, Some(vec![b"a".to_vec(), b"b".to_vec()]));
        for (ty, expected) in [
            ("client", SocketType::Client),
            ("scatter", SocketType::Scatter),
            ("channel", SocketType::Channel),
            ("peer", SocketType::Peer),
        ] {
            let Ok(Command::Send(s)) = parse(args(&["send", "-t", ty, "-c", "x", "m"])) else {
                panic!("{ty}: not a send");
            };
            assert_eq!(s.ty, expected);
            assert!(single_frame(s.ty));
        }
        assert!(!single_frame(SocketType::Dealer));
        for ty in ["server", "peer", "client", "channel"] {
            assert!(parse(args(&["recv", "-t", ty, "-b", "x", "--echo"])).is_ok());
        }
        assert!(
            usage_error(&["recv", "-t", "gather", "-c", "x", "--join", "g"])
                .contains("--join needs a dish socket, not GATHER")
        );
        assert!(
            usage_error(&["send", "-t", "dealer", "-c", "x", "--group", "g", "m"])
                .contains("--group needs a radio socket, not DEALER")
        );
        assert!(
            usage_error(&["send", "-t", "push", "-c", "x", "--wait-subscribers", "1"])
                .contains("a pub, xpub or radio socket")
        );
    }

    #[test]
    fn each_subcommand_has_its_own_help() {
        let Ok(Command::Print(send)) = parse(args(&["send", "--help"])) else {
            panic!("no help");
        };
        assert!(send.contains("--wait-subscribers") && send.contains("--delay"));
        assert!(!send.contains("--echo") && !send.contains("--transport"));
        let Ok(Command::Print(recv)) = parse(args(&["help", "recv"])) else {
            panic!("no help");
        };
        assert!(recv.contains("--echo") && !recv.contains("--wait-subscribers"));
        assert!(recv.contains("--join") && !recv.contains("--group"));
        assert!(send.contains("--group") && !send.contains("--join"));
        assert!(help_text().contains("completions"));
    }
}
