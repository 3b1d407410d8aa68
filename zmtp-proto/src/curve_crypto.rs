//! The cryptographic primitives of the CURVE mechanism (ZeroMQ RFC 25/26), byte-compatible
//! with libsodium as used by libzmq. Needs neither `std` nor an allocator.
//!
//! - [`KeyPair`], [`PublicKey`], [`SecretKey`]: X25519 keys. Secrets are wiped on drop.
//! - [`CryptoBox`]: NaCl `crypto_box` (X25519, HSalsa20, XSalsa20-Poly1305) between our
//!   secret key and the peer's public key, built once per key pair like libsodium's
//!   `crypto_box_beforenm`.
//! - [`SecretBox`]: NaCl `crypto_secretbox` (XSalsa20-Poly1305) under a 32-byte key, for the
//!   server's cookie.
//! - [`Drbg`]: the deterministic byte generator every random value comes from. The core
//!   never draws randomness itself: the driver seeds it from the operating system, tests
//!   and fuzzers seed it with constants.
//! - [`nonce`]: joins a nonce prefix and its tail into the 24-byte nonce.
//!
//! Boxes use the wire layout of libsodium's `*_easy` functions, which is what libzmq sends:
//! the 16-byte Poly1305 tag, then the ciphertext, which is as long as the plaintext. Both
//! [`CryptoBox`] and [`SecretBox`] work in place on such a buffer.
//!
//! ```
//! use zmtp_proto::curve_crypto::{nonce, CryptoBox, Drbg, KeyPair, TAG_LEN};
//!
//! let mut rng = Drbg::new([7; 32]);
//! let (client, server) = (KeyPair::generate(&mut rng), KeyPair::generate(&mut rng));
//! let n = nonce(b"CurveZMQMESSAGEC", &1u64.to_be_bytes())?;
//!
//! let mut buf = [0u8; TAG_LEN + 5];
//! buf[TAG_LEN..].copy_from_slice(b"hello");
//! CryptoBox::new(&server.public, &client.secret).seal_in_place(&n, &mut buf)?;
//! // On the wire: tag ‖ ciphertext.
//! CryptoBox::new(&client.public, &server.secret).open_in_place(&n, &mut buf)?;
//! assert_eq!(&buf[TAG_LEN..], b"hello");
//! # Ok::<(), zmtp_proto::curve_crypto::CryptoError>(())
//! ```

use crypto_secretbox::aead::AeadInPlace;
use crypto_secretbox::cipher::{KeyIvInit, StreamCipher};
use crypto_secretbox::consts::{U16, U24};
use crypto_secretbox::KeyInit;
use zeroize::{Zeroize, ZeroizeOnDrop};

/// Length of a key (public, secret or symmetric) in bytes.
pub const KEY_LEN: usize = 32;
/// Length of a nonce in bytes.
pub const NONCE_LEN: usize = 24;
/// Length of the Poly1305 tag in front of every box, in bytes.
pub const TAG_LEN: usize = 16;

/// Why a cryptographic operation failed.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CryptoError {
    /// The box did not open: wrong key, wrong nonce or altered bytes. The buffer is left as
    /// it was.
    Decrypt,
    /// The buffer is shorter than the 16-byte tag.
    BufferTooSmall,
    /// The nonce prefix and tail do not add up to 24 bytes.
    BadNonceLength,
    /// The cipher refused to encrypt. The ciphers used here never do; the variant exists so
    /// that such a failure could not pass silently. The buffer is wiped.
    Encrypt,
}

impl core::fmt::Display for CryptoError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            CryptoError::Decrypt => "box did not open (bad key, nonce or authentication tag)",
            CryptoError::BufferTooSmall => "buffer shorter than the 16-byte authentication tag",
            CryptoError::BadNonceLength => "nonce prefix and tail are not 24 bytes together",
            CryptoError::Encrypt => "encryption failed",
        })
    }
}

#[cfg(feature = "std")]
impl std::error::Error for CryptoError {}

pub use crate::key::PublicKey;
use crate::z85::{self, KeyText, Z85Error};

/// An X25519 secret key: 32 raw bytes (unclamped, as libsodium and libzmq store them).
///
/// Wiped on drop, also in clones; its [`Debug`] output does not show the key. It reads and
/// writes Z85 text as [`PublicKey`] does ([`from_z85`](Self::from_z85), [`str::parse`],
/// [`to_z85`](Self::to_z85)) but has no `Display`, so that it is never printed by
/// accident.
///
/// ```
/// use zmtp_proto::curve_crypto::{KeyPair, SecretKey};
///
/// let secret: SecretKey = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6".parse()?;
/// assert_eq!(secret.to_z85(), "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6");
/// let keys = KeyPair::from_secret(secret);
/// assert_eq!(keys.public.to_string(), "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7");
/// # Ok::<(), zmtp_proto::z85::Z85Error>(())
/// ```
#[derive(Clone)]
pub struct SecretKey([u8; KEY_LEN]);

impl SecretKey {
    /// Wraps raw secret key bytes.
    pub const fn from_bytes(bytes: [u8; KEY_LEN]) -> SecretKey {
        SecretKey(bytes)
    }

    /// The key from its 40 characters of Z85 text (`&str`, `String` or bytes).
    ///
    /// # Errors
    /// As [`PublicKey::from_z85`].
    pub fn from_z85(text: impl AsRef<[u8]>) -> Result<SecretKey, Z85Error> {
        z85::decode_key(text).map(SecretKey)
    }

    /// The key as 40 characters of Z85 text, as `zmq_curve_keypair` gives it. The text is
    /// as secret as the key.
    pub fn to_z85(&self) -> KeyText {
        z85::encode_key(&self.0)
    }

    /// The raw secret key bytes (the server puts its short-term secret in the cookie).
    pub const fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }

    /// The matching public key: X25519 of the clamped secret and the base point.
    pub fn public_key(&self) -> PublicKey {
        PublicKey(
            crypto_box::SecretKey::from_bytes(self.0)
                .public_key()
                .to_bytes(),
        )
    }
}

impl From<[u8; KEY_LEN]> for SecretKey {
    fn from(bytes: [u8; KEY_LEN]) -> SecretKey {
        SecretKey(bytes)
    }
}

impl core::str::FromStr for SecretKey {
    type Err = Z85Error;

    /// As [`SecretKey::from_z85`].
    fn from_str(text: &str) -> Result<SecretKey, Z85Error> {
        SecretKey::from_z85(text)
    }
}

impl core::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

impl Zeroize for SecretKey {
    fn zeroize(&mut self) {
        self.0.zeroize();
    }
}

impl Drop for SecretKey {
    fn drop(&mut self) {
        self.zeroize();
    }
}

impl ZeroizeOnDrop for SecretKey {}

/// A public key and its secret key.
///
/// Each half converts to and from Z85 text on its own: `keys.public.to_z85()` (or
/// `keys.public` in a format string) and `keys.secret.to_z85()`.
///
/// ```
/// use zmtp_proto::curve_crypto::{KeyPair, SecretKey};
///
/// let keys = KeyPair::from_secret(SecretKey::from_z85("D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs")?);
/// assert_eq!(keys.public.to_z85(), "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID");
/// assert_eq!(format!("{}", keys.public), "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID");
/// assert_eq!(keys.secret.to_z85(), "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs");
/// # Ok::<(), zmtp_proto::z85::Z85Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct KeyPair {
    /// The public half, given to peers.
    pub public: PublicKey,
    /// The secret half.
    pub secret: SecretKey,
}

impl KeyPair {
    /// The key pair of `secret` (a [`SecretKey`] or its raw bytes); the public key is
    /// derived with X25519 from the base point.
    pub fn from_secret(secret: impl Into<SecretKey>) -> KeyPair {
        let secret = secret.into();
        KeyPair {
            public: secret.public_key(),
            secret,
        }
    }

    /// A fresh key pair whose secret is the next 32 bytes of `rng`.
    pub fn generate(rng: &mut Drbg) -> KeyPair {
        let mut secret = SecretKey([0; KEY_LEN]);
        rng.fill(&mut secret.0);
        KeyPair {
            public: secret.public_key(),
            secret,
        }
    }
}

/// A deterministic random byte generator: the XSalsa20 keystream under the caller's
/// 32-byte seed, with a zero nonce.
///
/// [`fill`](Drbg::fill) hands out successive keystream bytes, so two calls give the same
/// bytes as one call for the sum of their lengths, and the same seed always gives the same
/// bytes. The seed must be secret and unpredictable (drawn from the operating system) for
/// the output to be usable as keys and nonces; never reuse a seed across processes.
///
/// The seed and the cipher state are wiped on drop. One stream is 2<sup>70</sup> bytes
/// long; should it ever run out, the generator goes on with the next nonce (the nonce's
/// first 8 bytes counting up, big-endian).
pub struct Drbg {
    seed: [u8; KEY_LEN],
    stream: u64,
    cipher: salsa20::XSalsa20,
}

impl Drbg {
    /// A generator seeded with `seed`.
    pub fn new(seed: [u8; KEY_LEN]) -> Drbg {
        let cipher = Self::keystream(&seed, 0);
        Drbg {
            seed,
            stream: 0,
            cipher,
        }
    }

    /// Fills `out` with the next `out.len()` bytes of the keystream.
    pub fn fill(&mut self, out: &mut [u8]) {
        out.fill(0);
        // Block-sized steps: when a stream runs out, the step that did not fit is taken
        // from the start of the next stream, which has room for far more than one step.
        for step in out.chunks_mut(64) {
            if self.cipher.try_apply_keystream(step).is_err() {
                self.stream = self.stream.wrapping_add(1);
                self.cipher = Self::keystream(&self.seed, self.stream);
                if self.cipher.try_apply_keystream(step).is_err() {
                    // Unreachable: a fresh stream has room for 2^70 bytes. Should it
                    // happen anyway, hand out no stale keystream.
                    step.fill(0);
                }
            }
        }
    }

    fn keystream(seed: &[u8; KEY_LEN], stream: u64) -> salsa20::XSalsa20 {
        let mut nonce = [0u8; NONCE_LEN];
        if let Some(head) = nonce.first_chunk_mut::<8>() {
            *head = stream.to_be_bytes();
        }
        salsa20::XSalsa20::new(seed.into(), (&nonce).into())
    }

    /// Moves the keystream position of the current stream to byte `pos`, so tests can
    /// reach the end of a stream.
    #[cfg(test)]
    fn seek(&mut self, pos: u128) {
        use crypto_secretbox::cipher::StreamCipherSeek;
        assert!(self.cipher.try_seek(pos).is_ok());
    }
}

impl core::fmt::Debug for Drbg {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Drbg(..)")
    }
}

impl Drop for Drbg {
    fn drop(&mut self) {
        // The cipher wipes its own state (salsa20's `zeroize` feature).
        self.seed.zeroize();
        self.stream.zeroize();
    }
}

impl ZeroizeOnDrop for Drbg {}

/// The NaCl `crypto_box` between our secret key and a peer's public key: the X25519 shared
/// secret hashed with HSalsa20 once, then XSalsa20-Poly1305 per message. Both sides of a
/// pair compute the same box, so either can seal and open. The derived key is wiped on
/// drop.
pub struct CryptoBox(crypto_box::SalsaBox);

impl CryptoBox {
    /// The box between `their_public` and `our_secret` (libsodium's `crypto_box_beforenm`).
    pub fn new(their_public: &PublicKey, our_secret: &SecretKey) -> CryptoBox {
        let public = crypto_box::PublicKey::from_bytes(*their_public.as_bytes());
        let secret = crypto_box::SecretKey::from_bytes(our_secret.0);
        CryptoBox(crypto_box::SalsaBox::new(&public, &secret))
    }

    /// Seals in place. `buf` holds 16 bytes reserved for the tag, then the plaintext;
    /// afterwards it holds the tag, then the ciphertext (libsodium's `crypto_box_easy`
    /// layout, as sent on the wire).
    ///
    /// # Errors
    /// [`CryptoError::BufferTooSmall`] if `buf` is shorter than 16 bytes (left untouched).
    pub fn seal_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        buf: &mut [u8],
    ) -> Result<(), CryptoError> {
        seal(&self.0, nonce, buf)
    }

    /// Opens in place. `buf` holds the tag, then the ciphertext; the tag is checked first
    /// and only then is `buf[16..]` decrypted to the plaintext. The first 16 bytes keep the
    /// tag.
    ///
    /// # Errors
    /// [`CryptoError::BufferTooSmall`] if `buf` is shorter than 16 bytes and
    /// [`CryptoError::Decrypt`] if the tag does not match; `buf` is untouched in both cases.
    pub fn open_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        buf: &mut [u8],
    ) -> Result<(), CryptoError> {
        open(&self.0, nonce, buf)
    }
}

impl core::fmt::Debug for CryptoBox {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("CryptoBox(..)")
    }
}

/// The NaCl `crypto_secretbox` (XSalsa20-Poly1305) under a 32-byte key: the server's
/// cookie. The key is wiped on drop.
pub struct SecretBox(crypto_secretbox::XSalsa20Poly1305);

impl SecretBox {
    /// The secret box under `key`.
    pub fn new(key: &[u8; KEY_LEN]) -> SecretBox {
        SecretBox(crypto_secretbox::XSalsa20Poly1305::new(key.into()))
    }

    /// Seals in place; the buffer layout is that of [`CryptoBox::seal_in_place`]
    /// (libsodium's `crypto_secretbox_easy`).
    ///
    /// # Errors
    /// [`CryptoError::BufferTooSmall`] if `buf` is shorter than 16 bytes (left untouched).
    pub fn seal_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        buf: &mut [u8],
    ) -> Result<(), CryptoError> {
        seal(&self.0, nonce, buf)
    }

    /// Opens in place; as [`CryptoBox::open_in_place`].
    ///
    /// # Errors
    /// [`CryptoError::BufferTooSmall`] if `buf` is shorter than 16 bytes and
    /// [`CryptoError::Decrypt`] if the tag does not match; `buf` is untouched in both cases.
    pub fn open_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        buf: &mut [u8],
    ) -> Result<(), CryptoError> {
        open(&self.0, nonce, buf)
    }
}

impl core::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SecretBox(..)")
    }
}

/// Joins a nonce prefix and its tail: a 16-byte prefix and an 8-byte short nonce, or an
/// 8-byte prefix and 16 random bytes.
///
/// # Errors
/// [`CryptoError::BadNonceLength`] unless `prefix.len() + tail.len()` is 24.
pub fn nonce(prefix: &[u8], tail: &[u8]) -> Result<[u8; NONCE_LEN], CryptoError> {
    if prefix.len().checked_add(tail.len()) != Some(NONCE_LEN) {
        return Err(CryptoError::BadNonceLength);
    }
    let mut out = [0u8; NONCE_LEN];
    for (slot, &b) in out.iter_mut().zip(prefix.iter().chain(tail)) {
        *slot = b;
    }
    Ok(out)
}

fn seal<A>(aead: &A, nonce: &[u8; NONCE_LEN], buf: &mut [u8]) -> Result<(), CryptoError>
where
    A: AeadInPlace<NonceSize = U24, TagSize = U16>,
{
    let (tag_slot, body) = buf
        .split_first_chunk_mut::<TAG_LEN>()
        .ok_or(CryptoError::BufferTooSmall)?;
    match aead.encrypt_in_place_detached(nonce.into(), &[], body) {
        Ok(tag) => {
            *tag_slot = tag.into();
            Ok(())
        }
        Err(_) => {
            tag_slot.zeroize();
            body.zeroize();
            Err(CryptoError::Encrypt)
        }
    }
}

fn open<A>(aead: &A, nonce: &[u8; NONCE_LEN], buf: &mut [u8]) -> Result<(), CryptoError>
where
    A: AeadInPlace<NonceSize = U24, TagSize = U16>,
{
    let (tag, body) = buf
        .split_first_chunk_mut::<TAG_LEN>()
        .ok_or(CryptoError::BufferTooSmall)?;
    let tag = crypto_secretbox::Tag::from(*tag);
    aead.decrypt_in_place_detached(nonce.into(), &[], body, &tag)
        .map_err(|_| CryptoError::Decrypt)
}

#[cfg(test)]
mod tests {
    use super::Drbg;

    /// The first 100 bytes of stream 1 under `seed`.
    fn stream_one(seed: [u8; 32]) -> [u8; 100] {
        let mut next = Drbg::new(seed);
        next.stream = 1;
        next.cipher = Drbg::keystream(&seed, 1);
        let mut bytes = [0u8; 100];
        next.fill(&mut bytes);
        bytes
    }

    #[test]
    fn drbg_moves_to_the_next_stream_when_one_runs_out() {
        // The last usable block of a stream is block 2^64 - 2.
        let last_block = u128::from(u64::MAX - 1) * 64;
        let expected = stream_one([3; 32]);

        // A step that starts 10 bytes into the last block does not fit: everything comes
        // from the start of stream 1.
        let mut rng = Drbg::new([3; 32]);
        rng.seek(last_block + 10);
        let mut tail = [0u8; 100];
        rng.fill(&mut tail);
        assert_eq!(tail, expected);

        // Starting at the last block: its 64 bytes, then stream 1.
        let mut rng = Drbg::new([3; 32]);
        rng.seek(last_block);
        rng.fill(&mut tail);
        assert_eq!(tail[64..], expected[..36]);
        assert_ne!(tail[..64], expected[..64]);
        assert_ne!(tail[..64], [0u8; 64]);
    }
}
