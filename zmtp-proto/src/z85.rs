//! Z85 (ZeroMQ RFC 32): the printable encoding of binary data used for CURVE keys.
//!
//! Every 4 bytes of binary data, read as a big-endian `u32`, become 5 characters of the
//! 85-character [`ALPHABET`], most significant digit first. There is no padding: binary
//! input must be a multiple of 4 bytes long and text a multiple of 5 characters. A
//! 32-byte CURVE key is 40 characters of text ([`encode_key`], [`decode_key`]); the text
//! of a key is a [`KeyText`], which reads as a `&str` without a copy or a UTF-8 check.
//! Keys themselves convert with [`PublicKey::from_z85`](crate::PublicKey::from_z85) and
//! [`PublicKey::to_z85`](crate::PublicKey::to_z85) (and the same on the secret key).
//!
//! Everything works on caller buffers or inline arrays; nothing allocates.
//!
//! ```
//! use zmtp_proto::z85;
//!
//! let mut text = [0u8; 10];
//! let n = z85::encode(&[0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B], &mut text)?;
//! assert_eq!(&text[..n], b"HelloWorld");
//!
//! let mut binary = [0u8; 8];
//! let n = z85::decode(b"HelloWorld", &mut binary)?;
//! assert_eq!(&binary[..n], &[0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B]);
//! # Ok::<(), z85::Z85Error>(())
//! ```

/// The Z85 alphabet: the character at index `i` stands for the digit value `i`.
pub const ALPHABET: &[u8; 85] =
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

/// Length of a 32-byte key in Z85 text.
pub const KEY_TEXT_LEN: usize = 40;

/// Why Z85 input could not be encoded or decoded.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Z85Error {
    /// Binary input is not a multiple of 4 bytes, text is not a multiple of 5 characters,
    /// or key text is not exactly 40 characters.
    BadLength,
    /// The text byte at offset `at` is not in the Z85 [`ALPHABET`].
    BadCharacter {
        /// Offset of the offending byte in the text.
        at: usize,
    },
    /// The 5-character group starting at offset `at` encodes a value above `u32::MAX`
    /// (for example `%%%%%`), so it stands for no 4 bytes.
    Overflow {
        /// Offset of the first character of the offending group in the text.
        at: usize,
    },
    /// The output buffer is shorter than the result.
    BufferTooSmall,
}

impl core::fmt::Display for Z85Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Z85Error::BadLength => f.write_str(
                "Z85 length error: binary must be a multiple of 4 bytes, text a multiple of 5",
            ),
            Z85Error::BadCharacter { at } => {
                write!(
                    f,
                    "Z85 text has a character outside the alphabet at offset {at}"
                )
            }
            Z85Error::Overflow { at } => {
                write!(f, "Z85 group at offset {at} encodes a value above 2^32 - 1")
            }
            Z85Error::BufferTooSmall => f.write_str("Z85 output buffer too small"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Z85Error {}

/// Encodes `input` (a multiple of 4 bytes) as Z85 text into the front of `out`, which must
/// hold at least `input.len() / 4 * 5` bytes. Returns the number of bytes written.
///
/// # Errors
/// [`Z85Error::BadLength`] if `input.len()` is not a multiple of 4 and
/// [`Z85Error::BufferTooSmall`] if `out` is too short; `out` is untouched in both cases.
pub fn encode(input: &[u8], out: &mut [u8]) -> Result<usize, Z85Error> {
    let (groups, rest) = input.as_chunks::<4>();
    if !rest.is_empty() {
        return Err(Z85Error::BadLength);
    }
    let needed = groups.len() * 5;
    let out = out.get_mut(..needed).ok_or(Z85Error::BufferTooSmall)?;
    encode_groups(groups, out.as_chunks_mut::<5>().0);
    Ok(needed)
}

/// Decodes Z85 `input` (a multiple of 5 characters) into the front of `out`, which must
/// hold at least `input.len() / 5 * 4` bytes. Returns the number of bytes written.
///
/// # Errors
/// - [`Z85Error::BadLength`] if `input.len()` is not a multiple of 5;
/// - [`Z85Error::BufferTooSmall`] if `out` is too short;
/// - [`Z85Error::BadCharacter`] for a byte outside the [`ALPHABET`];
/// - [`Z85Error::Overflow`] for a group whose value does not fit in a `u32`.
///
/// The length checks come first and leave `out` untouched. On a character or overflow
/// error the groups before the offending one have already been written to `out`.
pub fn decode(input: &[u8], out: &mut [u8]) -> Result<usize, Z85Error> {
    let (groups, rest) = input.as_chunks::<5>();
    if !rest.is_empty() {
        return Err(Z85Error::BadLength);
    }
    let needed = groups.len() * 4;
    let out = out.get_mut(..needed).ok_or(Z85Error::BufferTooSmall)?;
    for ((index, group), bytes) in groups.iter().enumerate().zip(out.as_chunks_mut::<4>().0) {
        let start = index * 5;
        let mut value: u32 = 0;
        for (offset, &c) in group.iter().enumerate() {
            let digit = digit_value(c).ok_or(Z85Error::BadCharacter { at: start + offset })?;
            value = value
                .checked_mul(85)
                .and_then(|v| v.checked_add(u32::from(digit)))
                .ok_or(Z85Error::Overflow { at: start })?;
        }
        *bytes = value.to_be_bytes();
    }
    Ok(needed)
}

/// Encodes a 32-byte key as its 40 characters of Z85 text.
///
/// ```
/// use zmtp_proto::z85;
///
/// let text = z85::encode_key(&[0; 32]);
/// assert_eq!(text.as_str(), "0000000000000000000000000000000000000000");
/// assert_eq!(text.len(), z85::KEY_TEXT_LEN); // a `&str` through `Deref`
/// println!("{text}");
/// ```
pub fn encode_key(key: &[u8; 32]) -> KeyText {
    let mut text = [0u8; KEY_TEXT_LEN];
    encode_groups(key.as_chunks::<4>().0, text.as_chunks_mut::<5>().0);
    KeyText(text)
}

/// Decodes a 32-byte key from exactly 40 characters of Z85 text, given as `&str`, `String`,
/// `&[u8]` or a [`KeyText`].
///
/// ```
/// use zmtp_proto::z85::{self, Z85Error};
///
/// let key = z85::decode_key("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7")?;
/// assert_eq!(z85::encode_key(&key), "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7");
/// assert_eq!(z85::decode_key("too short"), Err(Z85Error::BadLength));
/// # Ok::<(), Z85Error>(())
/// ```
///
/// # Errors
/// [`Z85Error::BadLength`] unless `text` is exactly 40 bytes long; otherwise as
/// [`decode`].
pub fn decode_key(text: impl AsRef<[u8]>) -> Result<[u8; 32], Z85Error> {
    let text = text.as_ref();
    if text.len() != KEY_TEXT_LEN {
        return Err(Z85Error::BadLength);
    }
    let mut key = [0u8; 32];
    decode(text, &mut key)?;
    Ok(key)
}

/// The Z85 text of a 32-byte key: 40 characters held inline, so it needs no allocator.
///
/// It dereferences to `&str` (and prints as the text), so it goes wherever text does:
/// `key.to_z85().as_str()`, `format!("{}", key.to_z85())`, `String::from(text)`. Built only
/// by [`encode_key`] (and the keys' `to_z85`), so it always holds 40 Z85 characters.
///
/// The text of a secret key is as secret as the key, and this type is not wiped on drop:
/// keep it no longer than needed.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyText([u8; KEY_TEXT_LEN]);

impl KeyText {
    /// The text.
    pub fn as_str(&self) -> &str {
        // Z85 characters are ASCII, so this never falls back.
        core::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// The text as bytes.
    pub const fn as_bytes(&self) -> &[u8; KEY_TEXT_LEN] {
        &self.0
    }
}

impl core::ops::Deref for KeyText {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for KeyText {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<[u8]> for KeyText {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl core::borrow::Borrow<str> for KeyText {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl core::fmt::Display for KeyText {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl core::fmt::Debug for KeyText {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq<str> for KeyText {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for KeyText {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<KeyText> for str {
    fn eq(&self, other: &KeyText) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<KeyText> for &str {
    fn eq(&self, other: &KeyText) -> bool {
        *self == other.as_str()
    }
}

#[cfg(feature = "alloc")]
impl From<KeyText> for alloc::string::String {
    fn from(text: KeyText) -> alloc::string::String {
        text.as_str().into()
    }
}

/// Encodes whole groups; `groups` and `out` are zipped, so equal counts are the caller's
/// business.
fn encode_groups(groups: &[[u8; 4]], out: &mut [[u8; 5]]) {
    for (group, text) in groups.iter().zip(out) {
        let mut value = u32::from_be_bytes(*group);
        for slot in text.iter_mut().rev() {
            *slot = digit_char(value % 85);
            value /= 85;
        }
    }
}

/// The character for digit `digit` (< 85).
fn digit_char(digit: u32) -> u8 {
    usize::try_from(digit)
        .ok()
        .and_then(|i| ALPHABET.get(i))
        .copied()
        .unwrap_or(b'#')
}

/// The digit value of the Z85 character `c`, if it is one.
fn digit_value(c: u8) -> Option<u8> {
    Some(match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'z' => c - b'a' + 10,
        b'A'..=b'Z' => c - b'A' + 36,
        b'.' => 62,
        b'-' => 63,
        b':' => 64,
        b'+' => 65,
        b'=' => 66,
        b'^' => 67,
        b'!' => 68,
        b'/' => 69,
        b'*' => 70,
        b'?' => 71,
        b'&' => 72,
        b'<' => 73,
        b'>' => 74,
        b'(' => 75,
        b')' => 76,
        b'[' => 77,
        b']' => 78,
        b'{' => 79,
        b'}' => 80,
        b'@' => 81,
        b'%' => 82,
        b'$' => 83,
        b'#' => 84,
        _ => return None,
    })
}
