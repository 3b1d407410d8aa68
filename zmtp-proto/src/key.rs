//! The CURVE public key: the one type in which a public key is taken or given, whether the
//! `curve` feature is on (a client's server key, a key pair) or not (an authenticator's
//! allowed keys, what a CURVE client presented).

use core::fmt;
use core::str::FromStr;

use crate::z85::{self, KeyText, Z85Error};

/// An X25519 public key: 32 raw bytes, as on the wire.
///
/// It reads and prints as 40 characters of Z85 ([RFC 32](crate::z85)), the form libzmq,
/// pyzmq and key files use: [`from_z85`](Self::from_z85) or [`str::parse`] in,
/// [`to_z85`](Self::to_z85) or [`Display`](fmt::Display) out. Its `Debug` shows the Z85
/// text too.
///
/// ```
/// use zmtp_proto::PublicKey;
///
/// let key = PublicKey::from_z85("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7")?;
/// assert_eq!(key.to_z85(), "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7");
/// assert_eq!(key.to_string(), "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7");
/// assert_eq!(key.as_bytes()[..2], [0x54, 0xfc]);
///
/// let same: PublicKey = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7".parse()?;
/// assert_eq!(same, key);
/// # Ok::<(), zmtp_proto::z85::Z85Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PublicKey(pub [u8; 32]);

impl PublicKey {
    /// Wraps raw public key bytes.
    pub const fn from_bytes(bytes: [u8; 32]) -> PublicKey {
        PublicKey(bytes)
    }

    /// The raw key bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The key from its 40 characters of Z85 text (`&str`, `String` or bytes).
    ///
    /// ```
    /// use zmtp_proto::{z85::Z85Error, PublicKey};
    ///
    /// assert!(PublicKey::from_z85("Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID").is_ok());
    /// assert_eq!(PublicKey::from_z85("Yne@$w"), Err(Z85Error::BadLength));
    /// ```
    ///
    /// # Errors
    /// As [`z85::decode_key`]: [`Z85Error::BadLength`] unless the text is exactly 40
    /// characters, [`Z85Error::BadCharacter`] or [`Z85Error::Overflow`] for text that is
    /// not Z85.
    pub fn from_z85(text: impl AsRef<[u8]>) -> Result<PublicKey, Z85Error> {
        z85::decode_key(text).map(PublicKey)
    }

    /// The key as 40 characters of Z85 text (no allocation; `.to_string()` for a `String`).
    pub fn to_z85(&self) -> KeyText {
        z85::encode_key(&self.0)
    }
}

impl fmt::Display for PublicKey {
    /// The Z85 text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_z85())
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PublicKey").field(&self.to_z85()).finish()
    }
}

impl FromStr for PublicKey {
    type Err = Z85Error;

    /// As [`PublicKey::from_z85`].
    fn from_str(text: &str) -> Result<PublicKey, Z85Error> {
        PublicKey::from_z85(text)
    }
}

impl From<[u8; 32]> for PublicKey {
    fn from(bytes: [u8; 32]) -> PublicKey {
        PublicKey(bytes)
    }
}

impl From<PublicKey> for [u8; 32] {
    fn from(key: PublicKey) -> [u8; 32] {
        key.0
    }
}

impl AsRef<[u8]> for PublicKey {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::PublicKey;
    use crate::z85::Z85Error;
    use std::string::ToString;
    use std::{format, vec::Vec};

    const TEXT: &str = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";

    #[test]
    fn z85_in_and_out() {
        let key = PublicKey::from_z85(TEXT).unwrap();
        assert_eq!(key.to_z85().as_str(), TEXT);
        assert_eq!(PublicKey::from_z85(TEXT.as_bytes()), Ok(key));
        assert_eq!(TEXT.parse::<PublicKey>(), Ok(key));
        assert_eq!(PublicKey::from(<[u8; 32]>::from(key)), key);
    }

    #[test]
    fn bad_text_is_an_error() {
        assert_eq!(PublicKey::from_z85(""), Err(Z85Error::BadLength));
        assert_eq!(PublicKey::from_z85(&TEXT[..35]), Err(Z85Error::BadLength));
        let long = [TEXT, "00000"].concat();
        assert_eq!(long.parse::<PublicKey>(), Err(Z85Error::BadLength));
        let mut bad: Vec<u8> = TEXT.as_bytes().into();
        bad[3] = b'"';
        assert_eq!(
            PublicKey::from_z85(&bad),
            Err(Z85Error::BadCharacter { at: 3 })
        );
        assert_eq!(
            PublicKey::from_z85(
                "%%%%%rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
                    .get(..40)
                    .unwrap()
            ),
            Err(Z85Error::Overflow { at: 0 })
        );
    }

    #[test]
    fn debug_and_display_show_z85() {
        let key = PublicKey::from_z85(TEXT).unwrap();
        assert_eq!(format!("{key}"), TEXT);
        assert_eq!(key.to_string(), TEXT);
        assert_eq!(format!("{key:?}"), format!("PublicKey({TEXT:?})"));
    }
}
