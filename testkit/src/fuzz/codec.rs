//! The stateless codec bodies: greeting, command, metadata and Z85.

use zmtp_proto::codec::{
    emit_property, property_len, Command, FrameHeader, Greeting, Mechanism, Metadata, Status,
    GREETING_LEN, MAX_PING_CONTEXT, SIGNATURE_LEN,
};

// ----- greeting ------------------------------------------------------------------------

/// Greeting and signature parsing on arbitrary bytes.
///
/// The signature parse and the whole-greeting parse must agree (same major version, an
/// error for one is an error for the other, `Partial` only for short input), bytes past
/// 64 are ignored, and a parsed greeting emits 64 bytes that parse back to it.
pub fn greeting(data: &[u8]) {
    let signature = Greeting::parse_signature(data);
    let whole = Greeting::parse(data);
    match (&signature, &whole) {
        (Err(e), w) => assert!(w == &Err(*e), "signature error {e:?} but greeting {w:?}"),
        (Ok(Status::Partial), w) => {
            assert!(
                data.len() < SIGNATURE_LEN,
                "partial signature of {} bytes",
                data.len()
            );
            assert!(
                w == &Ok(Status::Partial),
                "partial signature, greeting {w:?}"
            );
        }
        (Ok(Status::Complete(major)), Ok(Status::Complete(g))) => {
            assert!(
                data.len() >= GREETING_LEN,
                "complete greeting from short input"
            );
            assert!(g.version.major == *major, "major versions disagree");
        }
        (Ok(Status::Complete(_)), Ok(Status::Partial)) => {
            assert!(
                data.len() < GREETING_LEN,
                "partial greeting of {} bytes",
                data.len()
            );
        }
        (Ok(Status::Complete(_)), Err(e)) => {
            panic!("signature parses but the greeting fails with {e:?}")
        }
    }
    if let Some(head) = data.get(..GREETING_LEN) {
        assert!(
            Greeting::parse(head) == whole,
            "bytes past 64 changed the greeting"
        );
    }
    let Ok(Status::Complete(g)) = whole else {
        return;
    };
    let mut out = [0u8; GREETING_LEN];
    assert!(g.emit(&mut out) == Ok(GREETING_LEN), "greeting emit failed");
    assert!(
        Greeting::parse(&out) == Ok(Status::Complete(g)),
        "greeting emit/parse round trip"
    );
    assert!(
        Greeting::parse_signature(&out) == Ok(Status::Complete(g.version.major)),
        "emitted signature"
    );
    let mut short = [0u8; GREETING_LEN - 1];
    assert!(
        g.emit(&mut short).is_err(),
        "greeting emitted into 63 bytes"
    );
    // The mechanism name is what precedes the NUL padding.
    assert!(
        Mechanism::from_name(g.mechanism.name()).name() == g.mechanism.name(),
        "mechanism name round trip"
    );
}

// ----- command -------------------------------------------------------------------------

/// The value a command has after an emit: ERROR reasons cut to 255 bytes, PING and PONG
/// contexts to 16 (as documented on [`Command::body_len`]).
fn after_emit(cmd: Command<'_>) -> Command<'_> {
    let ctx = |c: &'_ [u8]| -> usize { c.len().min(MAX_PING_CONTEXT) };
    match cmd {
        Command::Ping { ttl, context } => Command::Ping {
            ttl,
            context: context.get(..ctx(context)).unwrap_or(context),
        },
        Command::Pong { context } => Command::Pong {
            context: context.get(..ctx(context)).unwrap_or(context),
        },
        Command::Error(r) => Command::Error(r.get(..255).unwrap_or(r)),
        other => other,
    }
}

/// [`Command::parse`] on an arbitrary command body; a parsed command emits (body and
/// frame) and parses back to the same value, and its lengths are exact.
pub fn command(data: &[u8]) {
    let Ok(cmd) = Command::parse(data) else {
        return;
    };
    if let Command::Unknown { name, .. } = cmd {
        for known in crate::wire::KNOWN_COMMANDS {
            assert!(name != known, "a known command parsed as unknown");
        }
    }
    let len = cmd.body_len();
    let mut body = vec![0u8; len];
    assert!(
        cmd.emit_body(&mut body) == Ok(len),
        "body_len is not what emit_body writes"
    );
    if len > 0 {
        let mut short = vec![0u8; len - 1];
        assert!(
            cmd.emit_body(&mut short).is_err(),
            "emitted into a short buffer"
        );
    }
    let reparsed = Command::parse(&body);
    assert!(
        reparsed == Ok(after_emit(cmd)),
        "command round trip: {cmd:?} became {reparsed:?}"
    );
    assert!(reparsed.map(|c| c.name()) == Ok(cmd.name()), "name changed");
    let frame_len = cmd.frame_len();
    let mut frame = vec![0u8; frame_len];
    assert!(
        cmd.emit_frame(&mut frame) == Ok(frame_len),
        "frame_len is not what emit_frame writes"
    );
    let parsed = FrameHeader::parse(&frame, u64::MAX);
    let Ok(Status::Complete((header, header_len))) = parsed else {
        panic!("an emitted command frame header does not parse: {parsed:?}");
    };
    assert!(header == FrameHeader::command(len), "command frame header");
    assert!(
        frame.get(header_len..) == Some(&body[..]),
        "frame body differs from emit_body"
    );
}

// ----- metadata ------------------------------------------------------------------------

/// [`Metadata::parse`] on an arbitrary block; a parsed block re-emits property by property
/// to the same bytes, and READY carrying it parses to the same metadata.
pub fn metadata(data: &[u8]) {
    let parsed = Metadata::parse(data);
    // READY is the command that carries metadata: it accepts exactly the valid blocks.
    let mut ready = b"\x05READY".to_vec();
    ready.extend_from_slice(data);
    let as_ready = Command::parse(&ready);
    match parsed {
        Ok(m) => assert!(
            as_ready == Ok(Command::Ready(m)),
            "READY disagrees with Metadata::parse"
        ),
        Err(_) => assert!(as_ready.is_err(), "READY accepts invalid metadata"),
    }
    let Ok(meta) = parsed else {
        return;
    };
    assert!(meta.as_bytes() == data, "metadata bytes");
    let mut out = Vec::new();
    for p in meta.iter() {
        assert!(
            !p.name.is_empty() && p.name.len() <= 255,
            "property name length"
        );
        let len = property_len(p.name, p.value);
        let mut buf = vec![0u8; len];
        assert!(
            emit_property(p.name, p.value, &mut buf) == Ok(len),
            "property_len"
        );
        out.extend_from_slice(&buf);
        // `get` finds the first property of a name.
        let first = meta.iter().find(|q| q.name == p.name).map(|q| q.value);
        assert!(meta.get(p.name) == first, "get is not the first match");
    }
    assert!(out == data, "metadata re-emitted differently");
    let again = Metadata::parse(&out);
    assert!(
        again.map(|m| m.iter().count()) == Ok(meta.iter().count()),
        "property count"
    );
}

// ----- z85 -----------------------------------------------------------------------------

/// Z85 both ways: `data` as text to decode (a decoded text encodes back to itself; a
/// refused one is refused for the right reason at the right offset) and as bytes to
/// encode (the longest multiple-of-4 prefix, which decodes back).
pub fn z85(data: &[u8]) {
    use zmtp_proto::z85::{self, decode, decode_key, encode, encode_key, Z85Error, ALPHABET};

    let mut binary = vec![0u8; data.len() / 5 * 4];
    match decode(data, &mut binary) {
        Ok(n) => {
            assert!(n == binary.len(), "decoded length");
            let mut text = vec![0u8; data.len()];
            assert!(
                encode(&binary, &mut text) == Ok(data.len()),
                "re-encode length"
            );
            assert!(text == data, "decode/encode round trip");
        }
        Err(Z85Error::BadLength) => assert!(
            !data.len().is_multiple_of(5),
            "BadLength for a multiple of 5"
        ),
        Err(Z85Error::BadCharacter { at }) => {
            let c = data.get(at).copied();
            assert!(
                c.is_some_and(|c| !ALPHABET.contains(&c)),
                "BadCharacter at {at} names a valid character"
            );
            // Nothing bad before it in its group, and the earlier groups decoded.
            let group = at / 5 * 5;
            let before = data.get(group..at).unwrap_or_default();
            assert!(
                before.iter().all(|c| ALPHABET.contains(c)),
                "an earlier bad character"
            );
        }
        Err(Z85Error::Overflow { at }) => {
            assert!(at % 5 == 0, "overflow offset not at a group");
            let group = data.get(at..at + 5).unwrap_or_default();
            assert!(
                group.len() == 5 && group.iter().all(|c| ALPHABET.contains(c)),
                "overflow group"
            );
        }
        Err(e) => panic!("unexpected Z85 error {e:?}"),
    }
    if data.len().is_multiple_of(5) && data.len() >= 5 {
        let mut short = vec![0u8; data.len() / 5 * 4 - 1];
        assert!(
            decode(data, &mut short) == Err(Z85Error::BufferTooSmall),
            "decode into a short buffer"
        );
    }

    let bytes = data.get(..data.len() / 4 * 4).unwrap_or_default();
    let mut text = vec![0u8; bytes.len() / 4 * 5];
    assert!(encode(bytes, &mut text) == Ok(text.len()), "encode length");
    assert!(
        text.iter().all(|c| ALPHABET.contains(c)),
        "encoded outside the alphabet"
    );
    let mut back = vec![0u8; bytes.len()];
    assert!(
        decode(&text, &mut back) == Ok(bytes.len()),
        "decode of encoded text"
    );
    assert!(back == bytes, "encode/decode round trip");
    if !data.len().is_multiple_of(4) {
        let mut out = vec![0u8; data.len() * 2];
        assert!(
            encode(data, &mut out) == Err(Z85Error::BadLength),
            "encode of a ragged length"
        );
    }
    if let Some(key) = data.get(..32).and_then(|k| <[u8; 32]>::try_from(k).ok()) {
        let text = encode_key(&key);
        assert!(decode_key(&text) == Ok(key), "key round trip");
        assert!(
            text.as_str().as_bytes() == text.as_bytes(),
            "key text is its bytes"
        );
    }
    // As a key's Z85 text: accepted exactly when it decodes, and printed back the same.
    match zmtp_proto::PublicKey::from_z85(data) {
        Ok(key) => assert!(key.to_z85().as_bytes() == data, "key text round trip"),
        Err(_) => assert!(
            data.len() != z85::KEY_TEXT_LEN || decode(data, &mut [0u8; 32]).is_err(),
            "key text refused only when it is not Z85"
        ),
    }
}
