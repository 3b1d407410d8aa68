//! recv's escaped output, and send's `--unescape` input: every frame fits on one line
//! without a TAB, whatever bytes it holds, and reads back to the same bytes.
//!
//! A backslash is written `\\`, TAB `\t`, newline `\n`, carriage return `\r`, any other
//! control character (C0, DEL) and any byte that is not part of valid UTF-8 `\xHH`.
//! Everything else (printable UTF-8 text) is written as it is.

use crate::hex;

/// Append `frame` to `out`, escaped.
pub fn escape_into(frame: &[u8], out: &mut Vec<u8>) {
    let mut rest = frame;
    while !rest.is_empty() {
        let (valid, invalid) = match std::str::from_utf8(rest) {
            Ok(text) => (text, &[][..]),
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                // Valid UTF-8 by the error's own account.
                let good = std::str::from_utf8(good).unwrap_or_default();
                // An incomplete sequence at the end has no length: take what is left.
                let len = e.error_len().unwrap_or(bad.len());
                (good, &bad[..len])
            }
        };
        for c in valid.chars() {
            match c {
                '\\' => out.extend_from_slice(b"\\\\"),
                '\t' => out.extend_from_slice(b"\\t"),
                '\n' => out.extend_from_slice(b"\\n"),
                '\r' => out.extend_from_slice(b"\\r"),
                c if c.is_ascii_control() => byte_escape(c as u8, out),
                c => {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        for &b in invalid {
            byte_escape(b, out);
        }
        rest = &rest[valid.len() + invalid.len()..];
    }
}

fn byte_escape(b: u8, out: &mut Vec<u8>) {
    out.extend_from_slice(b"\\x");
    hex::encode_into(&[b], out);
}

/// The bytes `text` stands for; `None` if an escape is unknown or incomplete.
pub fn unescape(text: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while let Some(&b) = text.get(i) {
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        match *text.get(i + 1)? {
            b'\\' => out.push(b'\\'),
            b't' => out.push(b'\t'),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b'x' => {
                let digits = text.get(i + 2..i + 4)?;
                out.extend(hex::decode(digits)?);
                i += 2;
            }
            _ => return None,
        }
        i += 2;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(frame: &[u8]) -> String {
        let mut out = Vec::new();
        escape_into(frame, &mut out);
        String::from_utf8(out).expect("escaped output is UTF-8")
    }

    #[test]
    fn text_stays_and_separators_are_escaped() {
        assert_eq!(escaped(b"hello world"), "hello world");
        assert_eq!(escaped("grüße 東京".as_bytes()), "grüße 東京");
        assert_eq!(escaped(b"a\tb\nc\rd\\e"), "a\\tb\\nc\\rd\\\\e");
        assert_eq!(escaped(b"\x00\x1b\x7f"), "\\x00\\x1b\\x7f");
        assert_eq!(escaped(b"\xff\xfeok\xc3"), "\\xff\\xfeok\\xc3");
        assert_eq!(escaped(b""), "");
    }

    #[test]
    fn every_byte_string_round_trips_and_stays_on_one_line() {
        let mut samples: Vec<Vec<u8>> = vec![(0..=255).collect(), b"\\x41".to_vec()];
        samples.push("é\t\u{2028}\\".as_bytes().to_vec());
        for s in &samples {
            let e = escaped(s);
            assert!(
                !e.contains('\t') && !e.contains('\n') && !e.contains('\r'),
                "{e}"
            );
            assert_eq!(unescape(e.as_bytes()).as_deref(), Some(&s[..]), "{e}");
        }
    }

    #[test]
    fn malformed_escapes_are_refused() {
        for bad in [&b"\\"[..], b"a\\q", b"\\x4", b"\\xzz"] {
            assert_eq!(unescape(bad), None, "{bad:?}");
        }
        assert_eq!(unescape(b"\\x41\\\\"), Some(b"A\\".to_vec()));
    }
}
