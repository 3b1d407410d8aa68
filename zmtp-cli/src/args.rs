//! Command-line parsing, by hand: every mistake becomes a one-line [`Failure::Usage`].

use std::ffi::{OsStr, OsString};
use std::time::Duration;

use zmtp_tokio::{z85, SocketType};

use crate::hex;
use crate::Failure;

/// What to do.
#[derive(Debug)]
pub enum Command {
    /// Print the usage (exit 0).
    Help,
    /// Print the version (exit 0).
    Version,
    /// Print a new CURVE key pair.
    Keygen,
    /// `zmtp send`.
    Send(SocketArgs),
    /// `zmtp recv`.
    Recv(SocketArgs),
    /// `zmtp bench`.
    Bench(BenchArgs),
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
    /// `--hex`: print frames as hex.
    pub hex: bool,
    /// `--echo`: send every received message back.
    pub echo: bool,
    /// `--subscribe` prefixes.
    pub subscribe: Vec<Vec<u8>>,
    /// `--timeout`.
    pub timeout: Option<Duration>,
    /// `--identity`.
    pub identity: Option<Vec<u8>>,
    /// `--hwm`.
    pub hwm: Option<usize>,
    /// `--heartbeat`.
    pub heartbeat: Option<Duration>,
    /// `--hex-frames`: frames given (as arguments or lines) are hex.
    pub hex_frames: bool,
    /// Security options.
    pub role: Role,
    /// `-v`: report endpoints and events on stderr.
    pub verbose: bool,
    /// The message given as FRAME arguments (decoded); `None`: read standard input.
    pub frames: Option<Vec<Vec<u8>>>,
}

/// The transport `bench` runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// `tcp://127.0.0.1`.
    Tcp,
    /// `ipc://`.
    Ipc,
    /// `inproc://`.
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

/// Everything `bench` takes.
#[derive(Debug)]
pub struct BenchArgs {
    /// `--transport`.
    pub transport: Transport,
    /// `--size`: bytes per message.
    pub size: usize,
    /// `--count`: messages in the throughput run.
    pub count: u64,
}

/// The drivers `bench --driver` knows.
const DRIVERS: &[&str] = &["tokio"];

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

/// Parse the arguments after the program name.
pub fn parse(args: Vec<OsString>) -> Result<Command, Failure> {
    let mut args = args.into_iter();
    let Some(first) = args.next() else {
        return Err(Failure::NoArguments);
    };
    let Some(command) = first.to_str() else {
        return Err(usage(format!(
            "unknown command '{}'",
            first.to_string_lossy()
        )));
    };
    let rest: Vec<OsString> = args.collect();
    let wants_help = rest.iter().any(|a| a == "--help" || a == "-h");
    match command {
        "help" | "--help" | "-h" => Ok(Command::Help),
        "--version" | "-V" => Ok(Command::Version),
        _ if wants_help => Ok(Command::Help),
        "keygen" => match rest.first() {
            None => Ok(Command::Keygen),
            Some(a) => Err(usage(format!(
                "keygen takes no arguments, got '{}'",
                a.to_string_lossy()
            ))),
        },
        "send" => parse_socket(true, rest).map(Command::Send),
        "recv" => parse_socket(false, rest).map(Command::Recv),
        "bench" => parse_bench(rest).map(Command::Bench),
        _ => Err(usage(format!("unknown command '{command}'"))),
    }
}

/// One argument, split into an option with its inline `=value` or a positional argument.
enum Arg {
    Option {
        name: String,
        inline: Option<String>,
    },
    Positional(OsString),
}

/// Walks the arguments: options (`-x`, `--long`, `--long=value`), positional arguments,
/// and everything after `--` as positional.
struct Args {
    args: std::vec::IntoIter<OsString>,
    positional_only: bool,
}

impl Args {
    fn new(args: Vec<OsString>) -> Args {
        Args {
            args: args.into_iter(),
            positional_only: false,
        }
    }

    fn next(&mut self) -> Result<Option<Arg>, Failure> {
        loop {
            let Some(arg) = self.args.next() else {
                return Ok(None);
            };
            if self.positional_only {
                return Ok(Some(Arg::Positional(arg)));
            }
            let Some(text) = arg.to_str() else {
                if os_bytes(&arg).starts_with(b"-") {
                    return Err(usage(format!("unknown option '{}'", arg.to_string_lossy())));
                }
                return Ok(Some(Arg::Positional(arg)));
            };
            if text == "--" {
                self.positional_only = true;
                continue;
            }
            if text == "-" || !text.starts_with('-') {
                return Ok(Some(Arg::Positional(arg)));
            }
            let arg = match text.split_once('=') {
                Some((name, value)) if text.starts_with("--") => Arg::Option {
                    name: name.to_string(),
                    inline: Some(value.to_string()),
                },
                _ => Arg::Option {
                    name: text.to_string(),
                    inline: None,
                },
            };
            return Ok(Some(arg));
        }
    }

    /// The value of option `name`: its inline `=value` or the next argument.
    fn value(&mut self, name: &str, inline: Option<String>) -> Result<OsString, Failure> {
        match inline {
            Some(v) => Ok(v.into()),
            None => self
                .args
                .next()
                .ok_or_else(|| usage(format!("option {name} needs a value"))),
        }
    }

    /// The value of option `name` as text.
    fn text(&mut self, name: &str, inline: Option<String>) -> Result<String, Failure> {
        let v = self.value(name, inline)?;
        v.into_string().map_err(|v| {
            usage(format!(
                "bad value '{}' for {name}: not UTF-8",
                v.to_string_lossy()
            ))
        })
    }
}

/// A flag takes no value.
fn flag(name: &str, inline: &Option<String>) -> Result<bool, Failure> {
    match inline {
        None => Ok(true),
        Some(_) => Err(usage(format!("option {name} takes no value"))),
    }
}

fn number<T: std::str::FromStr>(name: &str, text: &str, what: &str) -> Result<T, Failure> {
    text.parse()
        .map_err(|_| usage(format!("bad value '{text}' for {name}: expected {what}")))
}

/// A count of at least 1.
fn count(name: &str, text: &str) -> Result<u64, Failure> {
    match number::<u64>(name, text, "a positive number")? {
        0 => Err(usage(format!(
            "bad value '{text}' for {name}: expected a positive number"
        ))),
        n => Ok(n),
    }
}

/// Milliseconds, 0 to `MAX_MS`.
fn millis(name: &str, text: &str) -> Result<Duration, Failure> {
    let ms: u64 = number(name, text, "milliseconds")?;
    if ms > MAX_MS {
        return Err(usage(format!(
            "bad value '{text}' for {name}: at most {MAX_MS} milliseconds"
        )));
    }
    Ok(Duration::from_millis(ms))
}

/// A socket type by name, in any case.
pub fn socket_type(name: &str) -> Option<SocketType> {
    Some(match name.to_ascii_lowercase().as_str() {
        "pair" => SocketType::Pair,
        "pub" => SocketType::Pub,
        "sub" => SocketType::Sub,
        "xpub" => SocketType::XPub,
        "xsub" => SocketType::XSub,
        "push" => SocketType::Push,
        "pull" => SocketType::Pull,
        "req" => SocketType::Req,
        "rep" => SocketType::Rep,
        "dealer" => SocketType::Dealer,
        "router" => SocketType::Router,
        _ => return None,
    })
}

fn z85_key(name: &str, text: &str) -> Result<[u8; 32], Failure> {
    z85::decode_key(text.as_bytes()).map_err(|e| {
        usage(format!(
            "bad Z85 key for {name}: {e} (a key is 40 Z85 characters)"
        ))
    })
}

/// The options of `send` (`sending`) or `recv`, checked for consistency.
fn parse_socket(sending: bool, args: Vec<OsString>) -> Result<SocketArgs, Failure> {
    let command = if sending { "send" } else { "recv" };
    let mut a = Args::new(args);
    let mut ty = None;
    let mut endpoints = Vec::new();
    let mut count_opt = None;
    let mut linger = Some(Duration::from_millis(1000));
    let (mut hex_out, mut echo, mut hex_frames, mut verbose) = (false, false, false, false);
    let mut subscribe = Vec::new();
    let (mut timeout, mut identity, mut hwm, mut heartbeat) = (None, None, None, None);
    let (mut plain_user, mut plain_password) = (None, None);
    let mut plain_server = false;
    let mut allow_users = Vec::new();
    let (mut curve_server_secret, mut curve_server_key, mut curve_secret) = (None, None, None);
    let mut allow_clients = Vec::new();
    let mut positional = Vec::new();

    while let Some(arg) = a.next()? {
        let (name, inline) = match arg {
            Arg::Positional(p) => {
                positional.push(p);
                continue;
            }
            Arg::Option { name, inline } => (name, inline),
        };
        let n = name.as_str();
        match n {
            "-t" | "--type" => {
                let v = a.text(n, inline)?;
                ty = Some(socket_type(&v).ok_or_else(|| {
                    usage(format!(
                        "unknown socket type '{v}' (pair, pub, sub, xpub, xsub, push, pull, \
                         req, rep, dealer, router)"
                    ))
                })?);
            }
            "-b" | "--bind" => endpoints.push((Direction::Bind, a.text(n, inline)?)),
            "-c" | "--connect" => endpoints.push((Direction::Connect, a.text(n, inline)?)),
            "-n" | "--count" => count_opt = Some(count(n, &a.text(n, inline)?)?),
            "--linger" => {
                let v = a.text(n, inline)?;
                linger = if v == "-1" {
                    None
                } else {
                    Some(millis(n, &v)?)
                };
            }
            "--hex" => hex_out = flag(n, &inline)?,
            "--echo" if sending => {
                return Err(usage("--echo is an option of recv, not send"));
            }
            "--echo" => echo = flag(n, &inline)?,
            "--subscribe" if sending => {
                return Err(usage("--subscribe is an option of recv, not send"));
            }
            "--subscribe" => subscribe.push(os_bytes(&a.value(n, inline)?)),
            "--timeout" => {
                let t = millis(n, &a.text(n, inline)?)?;
                if t.is_zero() {
                    return Err(usage("bad value '0' for --timeout: expected at least 1 ms"));
                }
                timeout = Some(t);
            }
            "--identity" => identity = Some(os_bytes(&a.value(n, inline)?)),
            "--hwm" => {
                let v = a.text(n, inline)?;
                let h: usize = number(n, &v, "a number of messages")?;
                if h as u64 > MAX_MS {
                    return Err(usage(format!("bad value '{v}' for --hwm: too large")));
                }
                hwm = Some(h);
            }
            "--heartbeat" => heartbeat = Some(millis(n, &a.text(n, inline)?)?),
            "--hex-frames" => hex_frames = flag(n, &inline)?,
            "-v" | "--verbose" => verbose = flag(n, &inline)?,
            "--plain-user" => plain_user = Some(os_bytes(&a.value(n, inline)?)),
            "--plain-password" => plain_password = Some(os_bytes(&a.value(n, inline)?)),
            "--plain-server" => plain_server = flag(n, &inline)?,
            "--allow-user" => {
                let v = os_bytes(&a.value(n, inline)?);
                let Some(colon) = v.iter().position(|&c| c == b':') else {
                    return Err(usage(format!(
                        "bad value '{}' for --allow-user: expected USER:PASSWORD",
                        String::from_utf8_lossy(&v)
                    )));
                };
                let (user, password) = v.split_at(colon);
                allow_users.push((user.to_vec(), password.get(1..).unwrap_or(&[]).to_vec()));
            }
            "--curve-server-secret" => curve_server_secret = Some(z85_key(n, &a.text(n, inline)?)?),
            "--allow-client" => allow_clients.push(z85_key(n, &a.text(n, inline)?)?),
            "--curve-server-key" => curve_server_key = Some(z85_key(n, &a.text(n, inline)?)?),
            "--curve-secret" => curve_secret = Some(z85_key(n, &a.text(n, inline)?)?),
            _ => return Err(usage(format!("unknown option '{n}' for {command}"))),
        }
    }

    let Some(ty) = ty else {
        return Err(usage("missing the socket type: -t TYPE"));
    };
    if endpoints.is_empty() {
        return Err(usage(
            "missing an endpoint: -b EP (bind) or -c EP (connect)",
        ));
    }
    let name = ty.name();
    if echo
        && !matches!(
            ty,
            SocketType::Rep | SocketType::Router | SocketType::Dealer | SocketType::Pair
        )
    {
        return Err(usage(format!(
            "--echo needs a socket that can answer (rep, router, dealer, pair), not {name}"
        )));
    }
    if sending {
        if matches!(ty, SocketType::Pull | SocketType::Sub) {
            return Err(usage(format!("a {name} socket cannot send")));
        }
        if ty == SocketType::Rep {
            return Err(usage(
                "a REP socket cannot send first (use 'recv -t rep --echo', or 'send -t req')",
            ));
        }
    } else {
        if matches!(ty, SocketType::Push | SocketType::Pub) {
            return Err(usage(format!("a {name} socket cannot receive")));
        }
        if ty == SocketType::Req {
            return Err(usage(
                "a REQ socket must send first (use 'send -t req', which prints the replies)",
            ));
        }
    }
    if !subscribe.is_empty() && !matches!(ty, SocketType::Sub | SocketType::XSub) {
        return Err(usage(format!(
            "--subscribe needs a sub or xsub socket, not {name}"
        )));
    }

    let role = security_role(
        plain_user,
        plain_password,
        plain_server,
        allow_users,
        curve_server_secret,
        allow_clients,
        curve_server_key,
        curve_secret,
    )?;

    let frames = if sending {
        if positional.is_empty() {
            None
        } else {
            let mut frames = Vec::with_capacity(positional.len());
            for p in &positional {
                let raw = os_bytes(p);
                frames.push(if hex_frames {
                    hex::decode(&raw).ok_or_else(|| {
                        usage(format!(
                            "--hex-frames: frame '{}' is not hex",
                            String::from_utf8_lossy(&raw)
                        ))
                    })?
                } else {
                    raw
                });
            }
            Some(frames)
        }
    } else {
        if let Some(p) = positional.first() {
            return Err(usage(format!(
                "unexpected argument '{}' (recv takes no FRAME arguments)",
                p.to_string_lossy()
            )));
        }
        None
    };

    Ok(SocketArgs {
        ty,
        endpoints,
        count: count_opt,
        linger,
        hex: hex_out,
        echo,
        subscribe,
        timeout,
        identity,
        hwm,
        heartbeat,
        hex_frames,
        role,
        verbose,
        frames,
    })
}

/// The security role from the security options, checked for consistency.
#[allow(clippy::too_many_arguments)]
fn security_role(
    plain_user: Option<Vec<u8>>,
    plain_password: Option<Vec<u8>>,
    plain_server: bool,
    allow_users: Vec<(Vec<u8>, Vec<u8>)>,
    curve_server_secret: Option<[u8; 32]>,
    allow_clients: Vec<[u8; 32]>,
    curve_server_key: Option<[u8; 32]>,
    curve_secret: Option<[u8; 32]>,
) -> Result<Role, Failure> {
    let chosen: Vec<&str> = [
        (
            plain_user.is_some() || plain_password.is_some(),
            "--plain-user",
        ),
        (plain_server, "--plain-server"),
        (curve_server_secret.is_some(), "--curve-server-secret"),
        (curve_server_key.is_some(), "--curve-server-key"),
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
    if !allow_users.is_empty() && !plain_server {
        return Err(usage("--allow-user needs --plain-server"));
    }
    if !allow_clients.is_empty() && curve_server_secret.is_none() {
        return Err(usage("--allow-client needs --curve-server-secret"));
    }
    if curve_secret.is_some() && curve_server_key.is_none() {
        return Err(usage("--curve-secret needs --curve-server-key"));
    }
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
        (None, None) if plain_server => {
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

fn parse_bench(args: Vec<OsString>) -> Result<BenchArgs, Failure> {
    let mut a = Args::new(args);
    let mut bench = BenchArgs {
        transport: Transport::Tcp,
        size: 64,
        count: 1_000_000,
    };
    while let Some(arg) = a.next()? {
        let (name, inline) = match arg {
            Arg::Positional(p) => {
                return Err(usage(format!(
                    "unexpected argument '{}' for bench",
                    p.to_string_lossy()
                )))
            }
            Arg::Option { name, inline } => (name, inline),
        };
        let n = name.as_str();
        match n {
            "--driver" => {
                let v = a.text(n, inline)?;
                if !DRIVERS.contains(&v.as_str()) {
                    return Err(usage(format!(
                        "unknown driver '{v}' (known drivers: {})",
                        DRIVERS.join(", ")
                    )));
                }
            }
            "--transport" => {
                let v = a.text(n, inline)?;
                bench.transport = match v.as_str() {
                    "tcp" => Transport::Tcp,
                    "ipc" => Transport::Ipc,
                    "inproc" => Transport::Inproc,
                    _ => return Err(usage(format!("unknown transport '{v}' (tcp, ipc, inproc)"))),
                };
            }
            "--size" => {
                let v = a.text(n, inline)?;
                let size: usize = number(n, &v, "a number of bytes")?;
                if size > MAX_BENCH_SIZE {
                    return Err(usage(format!(
                        "bad value '{v}' for --size: at most {MAX_BENCH_SIZE} bytes"
                    )));
                }
                bench.size = size;
            }
            "-n" | "--count" => bench.count = count(n, &a.text(n, inline)?)?,
            _ => return Err(usage(format!("unknown option '{n}' for bench"))),
        }
    }
    Ok(bench)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    fn usage_error(list: &[&str]) -> String {
        match parse(args(list)) {
            Err(Failure::Usage(m)) => m,
            other => panic!("{list:?}: expected a usage error, got {other:?}"),
        }
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
            "-n",
            "3",
            "--hex-frames",
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
                (Direction::Bind, "ipc://@x".to_string())
            ]
        );
        assert_eq!(s.count, Some(3));
        assert_eq!(s.frames, Some(vec![vec![0, 0xff], vec![0x1a]]));
        assert_eq!(s.linger, Some(Duration::from_millis(1000)));
    }

    #[test]
    fn usage_errors_name_the_problem() {
        assert!(usage_error(&["send", "-t", "nope", "-c", "tcp://a:1"]).contains("nope"));
        assert!(usage_error(&["recv", "-t", "pull"]).contains("endpoint"));
        assert!(usage_error(&["recv", "-c", "tcp://a:1"]).contains("type"));
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
        assert!(
            usage_error(&["send", "-t", "push", "-c", "x", "--frobnicate"])
                .contains("--frobnicate")
        );
        assert!(usage_error(&["bench", "--driver", "smol"]).contains("tokio"));
        assert!(
            usage_error(&["send", "-t", "push", "-c", "x", "--hex-frames", "zz"]).contains("hex")
        );
        assert!(usage_error(&["send", "-t", "push", "-c"]).contains("needs a value"));
        assert!(usage_error(&["frob"]).contains("frob"));
        assert!(matches!(parse(vec![]), Err(Failure::NoArguments)));
    }
}
