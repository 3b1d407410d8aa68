//! CURVE primitives: a known answer checked against libsodium, libzmq's test keys, box and
//! secretbox round trips and tampering, and the DRBG's determinism.
#![cfg(feature = "curve")]

use zmtp_proto::curve_crypto::{
    nonce, CryptoBox, CryptoError, Drbg, KeyPair, PublicKey, SecretBox, SecretKey, TAG_LEN,
};
use zmtp_proto::z85;

fn hex(s: &str) -> Vec<u8> {
    assert_eq!(s.len() % 2, 0);
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

fn key(s: &str) -> [u8; 32] {
    hex(s).try_into().expect("32 bytes")
}

// libzmq's `doc/zmq_curve.txt` test keys.
const CLIENT_PUBLIC: &str = "BB88471D65E2659B30C55A5321CEBB5AAB2B70A398645C26DCA2B2FCB43FC518";
const CLIENT_SECRET: &str = "7BB864B489AFA3671FBE69101F94B38972F24816DFB01B51656B3FEC8DFD0888";
const SERVER_PUBLIC: &str = "54FCBA24E93249969316FB617C872BB0C1D1FF14800427C594CBFACF1BC2D652";
const SERVER_SECRET: &str = "8E0BDD697628B91D8F245587EE95C5B04D48963F79259877B49CD9063AEAD3B7";

/// `crypto_box_easy(64 × 00, "CurveZMQHELLO---" ‖ 00..01, server public, client secret)`,
/// checked against libsodium.
const HELLO_BOX: &str = "3fc780d97ca169864dd85deee9599a695b6a48ab29f486181e07d0ce626ea1d2\
                         f7413adb9692fbe1327a7ea60c93d4d355ab4f765756b3787193af9155f64666\
                         68fa6cabb8f0123fb4a112499c31de7a";

fn client() -> KeyPair {
    KeyPair::from_secret(key(CLIENT_SECRET))
}

fn server() -> KeyPair {
    KeyPair::from_secret(key(SERVER_SECRET))
}

fn hello_nonce() -> [u8; 24] {
    nonce(b"CurveZMQHELLO---", &1u64.to_be_bytes()).expect("24 bytes")
}

#[test]
fn hello_box_known_answer() {
    let server_public = PublicKey(key(SERVER_PUBLIC));
    let client_secret = SecretKey::from_bytes(key(CLIENT_SECRET));
    let mut buf = [0u8; TAG_LEN + 64];
    CryptoBox::new(&server_public, &client_secret)
        .seal_in_place(&hello_nonce(), &mut buf)
        .expect("seal");
    assert_eq!(buf.to_vec(), hex(HELLO_BOX));

    // The server opens it with its secret and the client's public key.
    let server_box = CryptoBox::new(&PublicKey(key(CLIENT_PUBLIC)), &server().secret);
    server_box
        .open_in_place(&hello_nonce(), &mut buf)
        .expect("open");
    assert_eq!(buf[TAG_LEN..], [0u8; 64]);
    // The tag stays in front.
    assert_eq!(buf[..TAG_LEN], hex(HELLO_BOX)[..TAG_LEN]);
}

#[test]
fn test_keys_public_from_secret() {
    assert_eq!(client().public, PublicKey(key(CLIENT_PUBLIC)));
    assert_eq!(server().public, PublicKey(key(SERVER_PUBLIC)));
    assert_eq!(client().secret.as_bytes(), &key(CLIENT_SECRET));
    assert_eq!(
        SecretKey::from_bytes(key(SERVER_SECRET)).public_key(),
        PublicKey(key(SERVER_PUBLIC))
    );
    // Through Z85, as the keys are usually configured.
    let secret = z85::decode_key(b"JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6").expect("z85");
    assert_eq!(
        z85::encode_key(&KeyPair::from_secret(secret).public.0),
        "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
    );
    // The same with the keys' own conversions.
    let secret: SecretKey = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"
        .parse()
        .expect("z85");
    let pair = KeyPair::from_secret(secret);
    assert_eq!(
        pair.public.to_string(),
        "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
    );
    assert_eq!(
        pair.secret.to_z85(),
        "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"
    );
    assert_eq!(pair.public, PublicKey(key(SERVER_PUBLIC)));
}

#[test]
fn secret_key_z85_errors() {
    use zmtp_proto::z85::Z85Error;
    assert!(matches!(
        SecretKey::from_z85("JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh"),
        Err(Z85Error::BadLength)
    ));
    assert!(matches!(
        "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh ".parse::<SecretKey>(),
        Err(Z85Error::BadCharacter { at: 39 })
    ));
}

#[test]
fn secret_key_debug_hides_the_key() {
    let pair = client();
    let shown = format!("{:?} {:?}", pair.secret, pair);
    let secret = key(CLIENT_SECRET);
    assert!(!shown.contains(&format!("{secret:?}")[1..20]), "{shown}");
    assert!(
        !shown.contains(&format!("{:02x?}", &secret[..4])[1..10]),
        "{shown}"
    );
    assert!(shown.contains("SecretKey(..)"), "{shown}");
    assert!(!shown.contains(pair.secret.to_z85().as_str()), "{shown}");
    // The public half shows as Z85.
    assert!(shown.contains(pair.public.to_z85().as_str()), "{shown}");
    let rng = Drbg::new([1; 32]);
    assert_eq!(format!("{rng:?}"), "Drbg(..)");
}

#[test]
fn box_round_trip_both_directions() {
    let mut rng = Drbg::new([42; 32]);
    let (a, b) = (KeyPair::generate(&mut rng), KeyPair::generate(&mut rng));
    assert_ne!(a.public, b.public);
    let a_to_b = CryptoBox::new(&b.public, &a.secret);
    let b_from_a = CryptoBox::new(&a.public, &b.secret);

    for len in [0usize, 1, 15, 16, 17, 63, 64, 65, 1000] {
        let plain: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        let n = nonce(b"CurveZMQMESSAGEC", &(len as u64).to_be_bytes()).expect("nonce");
        let mut buf = vec![0u8; TAG_LEN];
        buf.extend_from_slice(&plain);
        a_to_b.seal_in_place(&n, &mut buf).expect("seal");
        assert_eq!(buf.len(), TAG_LEN + len);
        if len >= 16 {
            assert_ne!(buf[TAG_LEN..], plain[..]);
        }
        // Either side's box works both ways: it is one shared key.
        let mut copy = buf.clone();
        a_to_b.open_in_place(&n, &mut copy).expect("open own");
        assert_eq!(copy[TAG_LEN..], plain[..]);
        b_from_a.open_in_place(&n, &mut buf).expect("open");
        assert_eq!(buf[TAG_LEN..], plain[..]);
    }
}

#[test]
fn box_tamper_fails() {
    let a_to_b = CryptoBox::new(&server().public, &client().secret);
    let b_from_a = CryptoBox::new(&client().public, &server().secret);
    let n = nonce(b"CurveZMQMESSAGEC", &3u64.to_be_bytes()).expect("nonce");
    let mut sealed = [0u8; TAG_LEN + 40];
    sealed[TAG_LEN..].copy_from_slice(&[0x5A; 40]);
    a_to_b.seal_in_place(&n, &mut sealed).expect("seal");

    for byte in [0, 7, TAG_LEN - 1, TAG_LEN, TAG_LEN + 20, TAG_LEN + 39] {
        for bit in [0, 3, 7] {
            let mut buf = sealed;
            buf[byte] ^= 1 << bit;
            let altered = buf;
            assert_eq!(
                b_from_a.open_in_place(&n, &mut buf),
                Err(CryptoError::Decrypt),
                "byte {byte} bit {bit}"
            );
            // Nothing was decrypted.
            assert_eq!(buf, altered);
        }
    }
    // Wrong nonce, wrong key.
    let mut buf = sealed;
    let other = nonce(b"CurveZMQMESSAGEC", &4u64.to_be_bytes()).expect("nonce");
    assert_eq!(
        b_from_a.open_in_place(&other, &mut buf),
        Err(CryptoError::Decrypt)
    );
    let stranger = KeyPair::generate(&mut Drbg::new([9; 32]));
    let wrong = CryptoBox::new(&client().public, &stranger.secret);
    assert_eq!(wrong.open_in_place(&n, &mut buf), Err(CryptoError::Decrypt));
    assert_eq!(buf, sealed);
    b_from_a
        .open_in_place(&n, &mut buf)
        .expect("intact box opens");
}

#[test]
fn short_buffers_are_errors() {
    let cbox = CryptoBox::new(&server().public, &client().secret);
    let sbox = SecretBox::new(&[1; 32]);
    let n = hello_nonce();
    for len in 0..TAG_LEN {
        let mut buf = vec![0xEE; len];
        assert_eq!(
            cbox.seal_in_place(&n, &mut buf),
            Err(CryptoError::BufferTooSmall)
        );
        assert_eq!(
            cbox.open_in_place(&n, &mut buf),
            Err(CryptoError::BufferTooSmall)
        );
        assert_eq!(
            sbox.seal_in_place(&n, &mut buf),
            Err(CryptoError::BufferTooSmall)
        );
        assert_eq!(
            sbox.open_in_place(&n, &mut buf),
            Err(CryptoError::BufferTooSmall)
        );
        assert_eq!(buf, vec![0xEE; len]);
    }
    // Exactly a tag: an empty message.
    let mut buf = [0u8; TAG_LEN];
    cbox.seal_in_place(&n, &mut buf).expect("seal empty");
    cbox.open_in_place(&n, &mut buf).expect("open empty");
}

#[test]
fn secretbox_cookie_round_trip_and_tamper() {
    let mut rng = Drbg::new([5; 32]);
    let mut cookie_key = [0u8; 32];
    rng.fill(&mut cookie_key);
    let sbox = SecretBox::new(&cookie_key);
    let mut rc = [0u8; 16];
    rng.fill(&mut rc);
    let n = nonce(b"COOKIE--", &rc).expect("nonce");

    // The cookie: secretbox[C′ ‖ s′], 96 bytes with its 16-byte nonce tail in front.
    let c_prime = KeyPair::generate(&mut rng);
    let s_prime = KeyPair::generate(&mut rng);
    let mut boxed = [0u8; TAG_LEN + 64];
    boxed[TAG_LEN..TAG_LEN + 32].copy_from_slice(&c_prime.public.0);
    boxed[TAG_LEN + 32..].copy_from_slice(s_prime.secret.as_bytes());
    let plain = boxed;
    sbox.seal_in_place(&n, &mut boxed).expect("seal");
    assert_ne!(boxed[TAG_LEN..], plain[TAG_LEN..]);

    let mut opened = boxed;
    SecretBox::new(&cookie_key)
        .open_in_place(&n, &mut opened)
        .expect("open");
    assert_eq!(opened[TAG_LEN..], plain[TAG_LEN..]);

    for byte in [0, TAG_LEN - 1, TAG_LEN, TAG_LEN + 63] {
        let mut buf = boxed;
        buf[byte] ^= 0x80;
        assert_eq!(sbox.open_in_place(&n, &mut buf), Err(CryptoError::Decrypt));
    }
    let mut other_key = cookie_key;
    other_key[31] ^= 1;
    let mut buf = boxed;
    assert_eq!(
        SecretBox::new(&other_key).open_in_place(&n, &mut buf),
        Err(CryptoError::Decrypt)
    );
    assert_eq!(buf, boxed);
}

#[test]
fn secretbox_and_box_agree_on_layout() {
    // A crypto_box is a secretbox under the HSalsa20 of the shared secret: both put the
    // tag first, and sealing is deterministic for a key and nonce.
    let sbox = SecretBox::new(&[7; 32]);
    let n = nonce(b"12345678", &[0xAB; 16]).expect("nonce");
    let mut one = [0u8; TAG_LEN + 10];
    let mut two = one;
    sbox.seal_in_place(&n, &mut one).expect("seal");
    sbox.seal_in_place(&n, &mut two).expect("seal");
    assert_eq!(one, two);
}

#[test]
fn nonce_joins_prefix_and_tail() {
    let n = nonce(b"CurveZMQMESSAGES", &0x0102030405060708u64.to_be_bytes()).expect("16 + 8");
    assert_eq!(&n[..16], b"CurveZMQMESSAGES");
    assert_eq!(n[16..], [1, 2, 3, 4, 5, 6, 7, 8]);
    let n = nonce(b"WELCOME-", &[0x11; 16]).expect("8 + 16");
    assert_eq!(&n[..8], b"WELCOME-");
    assert_eq!(n[8..], [0x11; 16]);
    assert_eq!(nonce(&[3; 24], &[]), Ok([3; 24]));

    assert_eq!(
        nonce(b"WELCOME-", &[0; 15]),
        Err(CryptoError::BadNonceLength)
    );
    assert_eq!(
        nonce(b"CurveZMQMESSAGES", &[0; 9]),
        Err(CryptoError::BadNonceLength)
    );
    assert_eq!(nonce(&[], &[]), Err(CryptoError::BadNonceLength));
}

#[test]
fn drbg_is_deterministic() {
    let mut a = Drbg::new([0x33; 32]);
    let mut b = Drbg::new([0x33; 32]);
    let (mut x, mut y) = ([0u8; 200], [0u8; 200]);
    a.fill(&mut x);
    b.fill(&mut y);
    assert_eq!(x, y);
    assert_ne!(x, [0u8; 200]);

    // Successive calls continue the stream: the splits do not matter.
    for split in [0usize, 1, 31, 63, 64, 65, 128, 199, 200] {
        let mut c = Drbg::new([0x33; 32]);
        let mut z = [0u8; 200];
        let (head, tail) = z.split_at_mut(split);
        c.fill(head);
        c.fill(tail);
        assert_eq!(z, x, "split at {split}");
    }
    // Many small calls, too.
    let mut d = Drbg::new([0x33; 32]);
    let mut w = [0u8; 200];
    for chunk in w.chunks_mut(7) {
        d.fill(chunk);
    }
    assert_eq!(w, x);

    // A different seed, different bytes.
    let mut e = Drbg::new([0x34; 32]);
    let mut v = [0u8; 200];
    e.fill(&mut v);
    assert_ne!(v, x);

    // The buffer's old contents do not leak into the output.
    let mut f = Drbg::new([0x33; 32]);
    let mut u = [0xFF; 200];
    f.fill(&mut u);
    assert_eq!(u, x);
}

#[test]
fn drbg_is_the_xsalsa20_keystream() {
    // XSalsa20 with key = seed and a zero nonce, encrypting zeros, is a secretbox's body
    // shifted by the 32 bytes that become the Poly1305 key. A secretbox under the same
    // key and a zero nonce therefore seals 32 + n zero bytes to tag ‖ keystream[0..32+n].
    let seed = [0x61; 32];
    let mut rng = Drbg::new(seed);
    let mut stream = [0u8; 96];
    rng.fill(&mut stream);

    let mut sealed = [0u8; TAG_LEN + 64];
    SecretBox::new(&seed)
        .seal_in_place(&[0; 24], &mut sealed)
        .expect("seal");
    assert_eq!(sealed[TAG_LEN..], stream[32..]);
}

#[test]
fn key_generation_is_deterministic() {
    let a = KeyPair::generate(&mut Drbg::new([8; 32]));
    let b = KeyPair::generate(&mut Drbg::new([8; 32]));
    assert_eq!(a.public, b.public);
    assert_eq!(a.secret.as_bytes(), b.secret.as_bytes());
    let mut rng = Drbg::new([8; 32]);
    let mut secret = [0u8; 32];
    rng.fill(&mut secret);
    assert_eq!(a.secret.as_bytes(), &secret);
    assert_eq!(KeyPair::from_secret(secret).public, a.public);
}

#[test]
fn errors_display() {
    for error in [
        CryptoError::Decrypt,
        CryptoError::BufferTooSmall,
        CryptoError::BadNonceLength,
        CryptoError::Encrypt,
    ] {
        assert!(!error.to_string().is_empty());
        let _: &dyn std::error::Error = &error;
    }
}
