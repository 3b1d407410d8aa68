//! Randomness from the operating system: the seed of a socket's starting values and the
//! CURVE entropy, drawn the same way by every driver.

use std::io;

#[cfg(feature = "curve")]
use zmtp_proto::curve_crypto::KeyPair;
use zmtp_proto::socket::{Options, Socket};
use zmtp_proto::SocketType;

use crate::Error;

/// What a new socket draws from the operating system's generator.
#[derive(Clone)]
pub struct Entropy {
    /// Stands in for libzmq's random starting values (generated routing ids, REQ
    /// correlation ids): [`Socket::new`]'s `seed`.
    pub seed: u64,
    /// Seeds CURVE's short-term keys, cookies and nonces (`Socket::set_entropy`, with the
    /// `curve` feature).
    pub curve: [u8; 32],
}

impl std::fmt::Debug for Entropy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The CURVE seed is secret.
        f.debug_struct("Entropy").finish_non_exhaustive()
    }
}

impl Entropy {
    /// Fresh values from the operating system (`getrandom`).
    pub fn from_os() -> io::Result<Entropy> {
        let mut seed = [0u8; 8];
        let mut curve = [0u8; 32];
        os_fill(&mut seed)?;
        os_fill(&mut curve)?;
        Ok(Entropy {
            seed: u64::from_le_bytes(seed),
            curve,
        })
    }
}

fn os_fill(buf: &mut [u8]) -> io::Result<()> {
    getrandom::fill(buf).map_err(io::Error::other)
}

/// A socket core of type `ty` with `options`, seeded from the operating system
/// ([`Entropy::from_os`]): its starting values and its CURVE randomness.
pub fn new_socket(ty: SocketType, options: Options) -> Result<Socket, Error> {
    let entropy = Entropy::from_os()?;
    #[cfg_attr(not(feature = "curve"), allow(unused_mut))]
    let mut socket = Socket::new(ty, options, entropy.seed)?;
    #[cfg(feature = "curve")]
    socket.set_entropy(entropy.curve);
    Ok(socket)
}

/// A new CURVE key pair from the operating system's generator (`zmq_curve_keypair`).
///
/// Each key prints as its 40 characters of Z85, the form libzmq and pyzmq give:
///
/// ```
/// let keys = zmtp_driver::curve_keypair()?;
/// let public = keys.public.to_string();
/// let secret = keys.secret.to_z85();
/// assert_eq!((public.len(), secret.len()), (40, 40));
/// println!("public {public}, secret {secret}");
/// // And back.
/// assert_eq!(public.parse::<zmtp_proto::PublicKey>()?, keys.public);
/// # Ok::<(), zmtp_driver::Error>(())
/// ```
#[cfg(feature = "curve")]
pub fn curve_keypair() -> Result<KeyPair, Error> {
    let mut secret = [0u8; 32];
    os_fill(&mut secret)?;
    Ok(KeyPair::from_secret(secret))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_differ() {
        let a = Entropy::from_os().unwrap();
        let b = Entropy::from_os().unwrap();
        assert!(a.seed != b.seed || a.curve != b.curve);
        assert_ne!(a.curve, [0; 32]);
        assert_eq!(format!("{a:?}"), "Entropy { .. }");
    }

    #[test]
    fn sockets_from_the_os() {
        let s = new_socket(SocketType::Dealer, Options::default()).unwrap();
        assert_eq!(s.socket_type(), SocketType::Dealer);
        let mut bad = Options::default();
        bad.routing_id = vec![0; 256].into();
        assert!(matches!(
            new_socket(SocketType::Dealer, bad),
            Err(Error::Options(_))
        ));
    }

    #[cfg(feature = "curve")]
    #[test]
    fn key_pairs_differ() {
        let a = curve_keypair().unwrap();
        let b = curve_keypair().unwrap();
        assert_ne!(a.public, b.public);
    }
}
