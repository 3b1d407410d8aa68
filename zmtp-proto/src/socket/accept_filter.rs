//! `ZMQ_TCP_ACCEPT_FILTER`: the networks a listening socket accepts TCP peers from.

use core::fmt;
use core::net::IpAddr;

/// One network a listener accepts peers from: an address and how many of its leading bits
/// a peer's address must share (`192.168.1.0/24`, `::1/128`), as libzmq's
/// `ZMQ_TCP_ACCEPT_FILTER` takes it. With [`Options::tcp_accept_filters`] not empty, a
/// stream accepted on a TCP (or WebSocket) endpoint is closed at once, with an
/// `ACCEPT_FAILED` monitor event, unless its peer's address is in one of the networks.
///
/// An IPv4 peer reaching a dual-stack listener (`::ffff:10.0.0.1`) is matched as the IPv4
/// address it is; otherwise an IPv4 network never matches an IPv6 peer, nor the reverse.
///
/// ```
/// use zmtp_proto::socket::TcpAcceptFilter;
///
/// let lan: TcpAcceptFilter = "192.168.1.0/24".parse().unwrap();
/// assert!(lan.matches("192.168.1.77".parse().unwrap()));
/// assert!(!lan.matches("192.168.2.1".parse().unwrap()));
/// let host: TcpAcceptFilter = "127.0.0.1".parse().unwrap(); // a whole address: /32
/// assert_eq!(host.prefix(), 32);
/// assert!("0.0.0.0/33".parse::<TcpAcceptFilter>().is_err());
/// ```
///
/// [`Options::tcp_accept_filters`]: crate::socket::Options::tcp_accept_filters
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcpAcceptFilter {
    network: IpAddr,
    prefix: u8,
}

/// Why a `ZMQ_TCP_ACCEPT_FILTER` text was refused.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcceptFilterError {
    /// The address part is not a numeric IPv4 or IPv6 address (names are not resolved).
    Address,
    /// The prefix after `/` is empty, not a number, or longer than the address (32 bits
    /// for IPv4, 128 for IPv6).
    Prefix,
}

impl fmt::Display for AcceptFilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AcceptFilterError::Address => {
                "an accept filter's address must be a numeric IPv4 or IPv6 address"
            }
            AcceptFilterError::Prefix => {
                "an accept filter's prefix must be a number of bits from 0 to the address's size"
            }
        })
    }
}

#[cfg(feature = "std")]
impl std::error::Error for AcceptFilterError {}

impl TcpAcceptFilter {
    /// The network `network/prefix`; `None` if `prefix` is longer than the address.
    pub fn new(network: IpAddr, prefix: u8) -> Option<TcpAcceptFilter> {
        (prefix <= bits(network)).then_some(TcpAcceptFilter { network, prefix })
    }

    /// The network's address, as given.
    pub fn network(&self) -> IpAddr {
        self.network
    }

    /// How many leading bits a peer's address must share with [`network`](Self::network).
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Whether `peer` is in this network.
    pub fn matches(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        match (self.network, peer) {
            (IpAddr::V4(ours), IpAddr::V4(theirs)) => {
                same_prefix(&ours.octets(), &theirs.octets(), self.prefix)
            }
            (IpAddr::V6(ours), IpAddr::V6(theirs)) => {
                same_prefix(&ours.octets(), &theirs.octets(), self.prefix)
            }
            _ => false,
        }
    }

    /// Whether `filters` accept a peer at `address`, the text a driver gives for an
    /// accepted stream (`IP:port`, `[IPv6]:port` or a bare IP). Any peer passes an empty
    /// list; a non-empty one refuses an address that is not an IP.
    pub fn accepts(filters: &[TcpAcceptFilter], address: &str) -> bool {
        if filters.is_empty() {
            return true;
        }
        let ip = match address.parse::<core::net::SocketAddr>() {
            Ok(addr) => addr.ip(),
            Err(_) => match address.parse::<IpAddr>() {
                Ok(ip) => ip,
                Err(_) => return false,
            },
        };
        filters.iter().any(|f| f.matches(ip))
    }
}

/// The size of `ip` in bits.
fn bits(ip: IpAddr) -> u8 {
    match ip {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    }
}

/// Whether the first `prefix` bits of `a` and `b` are equal.
fn same_prefix(a: &[u8], b: &[u8], prefix: u8) -> bool {
    let whole = usize::from(prefix / 8);
    if a[..whole] != b[..whole] {
        return false;
    }
    let rest = prefix % 8;
    if rest == 0 {
        return true;
    }
    let mask = 0xffu8 << (8 - rest);
    a[whole] & mask == b[whole] & mask
}

impl core::str::FromStr for TcpAcceptFilter {
    type Err = AcceptFilterError;

    /// `ADDRESS` or `ADDRESS/PREFIX`, as libzmq reads them: a numeric address (an IPv6
    /// one with or without brackets) and a prefix of 0 up to the address's size in bits;
    /// without a prefix the whole address must match.
    fn from_str(text: &str) -> Result<TcpAcceptFilter, AcceptFilterError> {
        let (address, prefix) = match text.rsplit_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let address = address
            .strip_prefix('[')
            .and_then(|a| a.strip_suffix(']'))
            .unwrap_or(address);
        let network: IpAddr = address.parse().map_err(|_| AcceptFilterError::Address)?;
        let prefix = match prefix {
            None => bits(network),
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                p.parse::<u8>().map_err(|_| AcceptFilterError::Prefix)?
            }
            Some(_) => return Err(AcceptFilterError::Prefix),
        };
        TcpAcceptFilter::new(network, prefix).ok_or(AcceptFilterError::Prefix)
    }
}

impl fmt::Display for TcpAcceptFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}
