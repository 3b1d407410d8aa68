//! Z85 (RFC 32): the RFC's vector, libzmq's CURVE test keys, round trips and every error.

use proptest::prelude::*;
use zmtp_proto::z85::{self, Z85Error, ALPHABET};

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

/// libzmq's `doc/zmq_curve.txt` test keys: (name, hex, Z85).
const TEST_KEYS: [(&str, &str, &str); 4] = [
    (
        "client public",
        "BB88471D65E2659B30C55A5321CEBB5AAB2B70A398645C26DCA2B2FCB43FC518",
        "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID",
    ),
    (
        "client secret",
        "7BB864B489AFA3671FBE69101F94B38972F24816DFB01B51656B3FEC8DFD0888",
        "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs",
    ),
    (
        "server public",
        "54FCBA24E93249969316FB617C872BB0C1D1FF14800427C594CBFACF1BC2D652",
        "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7",
    ),
    (
        "server secret",
        "8E0BDD697628B91D8F245587EE95C5B04D48963F79259877B49CD9063AEAD3B7",
        "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6",
    ),
];

const HELLO_WORLD: [u8; 8] = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B];

#[test]
fn rfc32_hello_world() {
    let mut text = [0u8; 10];
    assert_eq!(z85::encode(&HELLO_WORLD, &mut text), Ok(10));
    assert_eq!(&text, b"HelloWorld");

    let mut binary = [0u8; 8];
    assert_eq!(z85::decode(b"HelloWorld", &mut binary), Ok(8));
    assert_eq!(binary, HELLO_WORLD);
}

#[test]
fn extremes() {
    let mut text = [0u8; 5];
    assert_eq!(z85::encode(&[0; 4], &mut text), Ok(5));
    assert_eq!(&text, b"00000");
    assert_eq!(z85::encode(&[0xFF; 4], &mut text), Ok(5));
    assert_eq!(&text, b"%nSc0");

    let mut binary = [0u8; 4];
    assert_eq!(z85::decode(b"%nSc0", &mut binary), Ok(4));
    assert_eq!(binary, [0xFF; 4]);
    // One above u32::MAX.
    assert_eq!(
        z85::decode(b"%nSc1", &mut binary),
        Err(Z85Error::Overflow { at: 0 })
    );
}

#[test]
fn libzmq_test_keys() {
    for (name, hex_key, text) in TEST_KEYS {
        let binary = key(hex_key);
        assert_eq!(z85::encode_key(&binary), *text, "{name}");
        assert_eq!(z85::decode_key(text.as_bytes()), Ok(binary), "{name}");

        let mut out = [0u8; 40];
        assert_eq!(z85::encode(&binary, &mut out), Ok(40), "{name}");
        assert_eq!(&out, text.as_bytes(), "{name}");
        let mut back = [0u8; 32];
        assert_eq!(z85::decode(text.as_bytes(), &mut back), Ok(32), "{name}");
        assert_eq!(back, binary, "{name}");
    }
}

#[test]
fn every_alphabet_character_has_its_index_as_value() {
    assert_eq!(ALPHABET.len(), 85);
    let mut binary = [0u8; 4];
    for (value, &c) in ALPHABET.iter().enumerate() {
        let text = [b'0', b'0', b'0', b'0', c];
        assert_eq!(z85::decode(&text, &mut binary), Ok(4));
        assert_eq!(u32::from_be_bytes(binary), value as u32);

        let mut round = [0u8; 5];
        assert_eq!(z85::encode(&binary, &mut round), Ok(5));
        assert_eq!(round, text);
    }
}

#[test]
fn every_other_byte_is_a_bad_character() {
    let mut binary = [0u8; 8];
    for c in 0..=255u8 {
        if ALPHABET.contains(&c) {
            continue;
        }
        let text = [b'0', b'0', b'0', b'0', b'0', b'0', b'0', c, b'0', b'0'];
        assert_eq!(
            z85::decode(&text, &mut binary),
            Err(Z85Error::BadCharacter { at: 7 }),
            "byte {c:#04x}"
        );
    }
}

#[test]
fn empty_input() {
    assert_eq!(z85::encode(&[], &mut []), Ok(0));
    assert_eq!(z85::decode(&[], &mut []), Ok(0));
}

#[test]
fn encode_errors() {
    let mut text = [0u8; 20];
    for len in [1, 2, 3, 5, 7] {
        assert_eq!(
            z85::encode(&[0; 7][..len], &mut text),
            Err(Z85Error::BadLength),
            "len {len}"
        );
    }
    // Output one byte short: nothing written.
    let mut short = [b'x'; 9];
    assert_eq!(
        z85::encode(&HELLO_WORLD, &mut short),
        Err(Z85Error::BufferTooSmall)
    );
    assert_eq!(short, [b'x'; 9]);
    // A longer buffer is fine; only the front is written.
    let mut long = [b'x'; 12];
    assert_eq!(z85::encode(&HELLO_WORLD, &mut long), Ok(10));
    assert_eq!(&long, b"HelloWorldxx");
}

#[test]
fn decode_errors() {
    let mut binary = [0u8; 8];
    for len in [1, 4, 6, 9] {
        assert_eq!(
            z85::decode(&b"HelloWorld"[..len], &mut binary),
            Err(Z85Error::BadLength),
            "len {len}"
        );
    }
    let mut short = [0xAA; 7];
    assert_eq!(
        z85::decode(b"HelloWorld", &mut short),
        Err(Z85Error::BufferTooSmall)
    );
    assert_eq!(short, [0xAA; 7]);

    assert_eq!(
        z85::decode(b"Hello Worl", &mut binary),
        Err(Z85Error::BadCharacter { at: 5 })
    );
    assert_eq!(
        z85::decode(b"\"elloWorld", &mut binary),
        Err(Z85Error::BadCharacter { at: 0 })
    );
    // "%%%%%" is 82 * (85^4 + 85^3 + 85^2 + 85 + 1) > 2^32 - 1. The offset is the group's.
    assert_eq!(
        z85::decode(b"%%%%%", &mut binary),
        Err(Z85Error::Overflow { at: 0 })
    );
    assert_eq!(
        z85::decode(b"Hello%%%%%", &mut binary),
        Err(Z85Error::Overflow { at: 5 })
    );
    assert_eq!(
        z85::decode(b"Hello#####", &mut binary),
        Err(Z85Error::Overflow { at: 5 })
    );
}

#[test]
fn decode_key_errors() {
    let text = TEST_KEYS[0].2.as_bytes();
    assert_eq!(z85::decode_key(&text[..35]), Err(Z85Error::BadLength));
    assert_eq!(z85::decode_key([0u8; 0]), Err(Z85Error::BadLength));
    assert_eq!(z85::decode_key(""), Err(Z85Error::BadLength));
    let mut longer = text.to_vec();
    longer.extend_from_slice(b"00000");
    assert_eq!(z85::decode_key(&longer), Err(Z85Error::BadLength));

    let mut bad = text.to_vec();
    bad[17] = b' ';
    assert_eq!(
        z85::decode_key(&bad),
        Err(Z85Error::BadCharacter { at: 17 })
    );
    let mut overflow = text.to_vec();
    overflow[20..25].copy_from_slice(b"%%%%%");
    assert_eq!(
        z85::decode_key(&overflow),
        Err(Z85Error::Overflow { at: 20 })
    );
}

#[test]
fn key_text_reads_as_str() {
    for (_, hex_key, text) in TEST_KEYS {
        let encoded = z85::encode_key(&key(hex_key));
        // Text without a UTF-8 check or a copy, printed as is, and owned on request.
        assert_eq!(encoded.as_str(), text);
        assert_eq!(&encoded.as_bytes()[..], text.as_bytes());
        assert_eq!(format!("{encoded}"), text);
        assert_eq!(format!("{encoded:?}"), format!("{text:?}"));
        assert_eq!(String::from(encoded.clone()), text);
        assert!(encoded.starts_with(&text[..5]), "Deref to str");
        // Decodes from itself, from &str and from String.
        assert_eq!(z85::decode_key(&encoded), Ok(key(hex_key)));
        let owned: String = text.into();
        assert_eq!(z85::decode_key(owned), Ok(key(hex_key)));
    }
}

#[test]
fn errors_display() {
    for (error, needle) in [
        (Z85Error::BadLength, "multiple of 4"),
        (Z85Error::BadCharacter { at: 3 }, "offset 3"),
        (Z85Error::Overflow { at: 10 }, "offset 10"),
        (Z85Error::BufferTooSmall, "too small"),
    ] {
        let shown = error.to_string();
        assert!(shown.contains(needle), "{shown}");
        // An error type for `?` in std programs (the impl needs the `std` feature).
        #[cfg(feature = "std")]
        let _: &dyn std::error::Error = &error;
    }
}

proptest! {
    #[test]
    fn round_trip(groups in proptest::collection::vec(any::<[u8; 4]>(), 0..64)) {
        let binary: Vec<u8> = groups.concat();
        let mut text = vec![0u8; binary.len() / 4 * 5];
        prop_assert_eq!(z85::encode(&binary, &mut text), Ok(text.len()));
        prop_assert!(text.iter().all(|c| ALPHABET.contains(c)));
        let mut back = vec![0u8; binary.len()];
        prop_assert_eq!(z85::decode(&text, &mut back), Ok(binary.len()));
        prop_assert_eq!(back, binary);
    }

    #[test]
    fn key_round_trip(key in any::<[u8; 32]>()) {
        let text = z85::encode_key(&key);
        prop_assert_eq!(z85::decode_key(&text), Ok(key));
    }

    #[test]
    fn decode_never_panics(text in proptest::collection::vec(any::<u8>(), 0..64), cap in 0usize..64) {
        let mut out = vec![0u8; cap];
        match z85::decode(&text, &mut out) {
            Ok(n) => {
                // Whatever decodes re-encodes to the same text.
                let mut again = vec![0u8; text.len()];
                prop_assert_eq!(z85::encode(&out[..n], &mut again), Ok(text.len()));
                prop_assert_eq!(again, text);
            }
            Err(Z85Error::BadLength) => prop_assert!(text.len() % 5 != 0),
            Err(Z85Error::BufferTooSmall) => prop_assert!(cap < text.len() / 5 * 4),
            Err(Z85Error::BadCharacter { at }) => prop_assert!(!ALPHABET.contains(&text[at])),
            Err(Z85Error::Overflow { at }) => prop_assert_eq!(at % 5, 0),
            Err(e) => prop_assert!(false, "unexpected {e:?}"),
        }
    }
}
