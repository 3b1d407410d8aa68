use super::{CodecError, InsufficientSize, Status, Writer};

/// Length of a ZMTP 3.x greeting.
pub const GREETING_LEN: usize = 64;
/// Length of the first stage of a greeting: signature (10 bytes) plus the major version.
pub const SIGNATURE_LEN: usize = 11;

/// ZMTP protocol version as announced in a greeting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Major version (byte 10).
    pub major: u8,
    /// Minor version (byte 11).
    pub minor: u8,
}

impl Version {
    /// ZMTP 3.0 (RFC 23).
    pub const V3_0: Version = Version { major: 3, minor: 0 };
    /// ZMTP 3.1 (RFC 37).
    pub const V3_1: Version = Version { major: 3, minor: 1 };

    /// Whether this version speaks ZMTP 3.1 semantics (commands for subscriptions, PING/PONG):
    /// 3.1 or later.
    ///
    /// A peer's greeting is read by libzmq's more generous rule: every major version from 2
    /// up except 3.0 counts as 3.1 (see [`Connection`](crate::Connection)).
    pub fn is_v31(self) -> bool {
        self >= Version::V3_1
    }
}

/// Security mechanism name, NUL-padded to 20 bytes and compared on all 20 bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mechanism(pub [u8; 20]);

impl Mechanism {
    /// The NULL mechanism (no security).
    pub const NULL: Mechanism = Mechanism::from_name(b"NULL");
    /// The PLAIN mechanism (RFC 24).
    pub const PLAIN: Mechanism = Mechanism::from_name(b"PLAIN");
    /// The CURVE mechanism (RFC 26).
    pub const CURVE: Mechanism = Mechanism::from_name(b"CURVE");

    /// Build a mechanism from an ASCII name of at most 20 bytes (longer names are cut).
    pub const fn from_name(name: &[u8]) -> Mechanism {
        let mut out = [0u8; 20];
        let mut i = 0;
        while i < name.len() && i < 20 {
            out[i] = name[i];
            i += 1;
        }
        Mechanism(out)
    }

    /// The name without its NUL padding.
    pub fn name(&self) -> &[u8] {
        self.0.split(|&b| b == 0).next().unwrap_or(&[])
    }
}

impl core::fmt::Debug for Mechanism {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match core::str::from_utf8(self.name()) {
            Ok(s) => write!(f, "Mechanism({s:?})"),
            Err(_) => write!(f, "Mechanism({:?})", self.0),
        }
    }
}

/// A ZMTP 3.x greeting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Greeting {
    /// Announced protocol version.
    pub version: Version,
    /// Security mechanism.
    pub mechanism: Mechanism,
    /// The as-server flag (byte 32). libzmq always sends 0 and ignores it; roles come from local config.
    pub as_server: bool,
}

impl Greeting {
    /// Parse the first stage of a greeting: the 10-byte signature and the major version.
    ///
    /// Returns the peer's major version once 11 bytes are available. Bytes 1..=8 (padding)
    /// are never validated: libzmq writes its routing-id length there.
    pub fn parse_signature(input: &[u8]) -> Result<Status<u8>, CodecError> {
        if let Some(&b0) = input.first() {
            if b0 != 0xFF {
                return Err(CodecError::BadSignature);
            }
        }
        if let Some(&b9) = input.get(9) {
            if b9 & 1 == 0 {
                return Err(CodecError::BadSignature);
            }
        }
        match input.get(10) {
            Some(&major) => Ok(Status::Complete(major)),
            None => Ok(Status::Partial),
        }
    }

    /// Parse a whole 64-byte greeting. Bytes past 64 are ignored.
    pub fn parse(input: &[u8]) -> Result<Status<Greeting>, CodecError> {
        let major = match Self::parse_signature(input)? {
            Status::Complete(m) => m,
            Status::Partial => return Ok(Status::Partial),
        };
        let Some(rest) = input.get(11..GREETING_LEN) else {
            return Ok(Status::Partial);
        };
        let minor = rest[0];
        let mut mech = [0u8; 20];
        mech.copy_from_slice(&rest[1..21]);
        Ok(Status::Complete(Greeting {
            version: Version { major, minor },
            mechanism: Mechanism(mech),
            as_server: rest[21] != 0,
        }))
    }

    /// Emit the whole 64-byte greeting into `out`; returns the bytes written (64).
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, InsufficientSize> {
        let mut g = [0u8; GREETING_LEN];
        g[0] = 0xFF;
        g[9] = 0x7F;
        g[10] = self.version.major;
        g[11] = self.version.minor;
        g[12..32].copy_from_slice(&self.mechanism.0);
        g[32] = u8::from(self.as_server);
        let mut w = Writer::new(out);
        w.put(&g)?;
        Ok(w.len())
    }
}
