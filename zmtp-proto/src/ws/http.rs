//! An HTTP/1.1 message head (start line and header fields, up to the empty line), scanned
//! from a borrowed prefix of the stream.
//!
//! The scan is positional: whether a prefix is refused, and why, depends only on the
//! bytes up to the first one that makes the head impossible. So feeding the head in
//! pieces gives `Partial` until that byte arrives and then the same error as the whole
//! head would, and a head that completes never follows an error.

use super::HandshakeError;
use crate::codec::Status;

/// Longest head accepted, start line and final empty line included.
pub const MAX_HEAD_LEN: usize = 8 * 1024;
/// Longest header name accepted (libzmq's limit).
pub const MAX_NAME_LEN: usize = 1024;
/// Longest header value accepted, after its leading whitespace (libzmq's limit).
pub const MAX_VALUE_LEN: usize = 2048;

/// What one kind of head (a request, a response) makes of its lines.
pub(crate) trait Visitor<'a> {
    /// The value of a complete head.
    type Output;
    /// Check the start line, without its CRLF. When `complete` is false, `line` is what has
    /// arrived of it: refuse it only when no continuation can make it valid.
    fn start_line(&mut self, line: &'a [u8], complete: bool) -> Result<(), HandshakeError>;
    /// A complete header field; `value` has no leading or trailing whitespace.
    fn field(&mut self, name: &'a [u8], value: &'a [u8]) -> Result<(), HandshakeError>;
    /// The empty line has arrived.
    fn finish(self) -> Result<Self::Output, HandshakeError>;
}

/// Scan the head at the front of `input`. On success returns the visitor's output and the
/// head's length in bytes (what follows belongs to the WebSocket stream).
pub(crate) fn parse_head<'a, V: Visitor<'a>>(
    input: &'a [u8],
    mut visitor: V,
) -> Result<Status<(V::Output, usize)>, HandshakeError> {
    let avail = input.get(..MAX_HEAD_LEN).unwrap_or(input);
    let mut at = 0;
    let mut first = true;
    loop {
        let rest = avail.get(at..).unwrap_or_default();
        let newline = rest.iter().position(|&b| b == b'\n');
        let raw = match newline {
            Some(n) => rest.get(..n).unwrap_or_default(),
            None => rest,
        };
        let complete = newline.is_some();
        // The CR of the line's CRLF; when incomplete, a last CR may be the start of one.
        let (content, has_cr) = match raw.split_last() {
            Some((b'\r', content)) => (content, true),
            _ => (raw, false),
        };
        if first {
            visitor.start_line(content, complete)?;
        } else if content.is_empty() {
            if complete {
                if !has_cr {
                    return Err(HandshakeError::Malformed);
                }
                let len = at + raw.len() + 1;
                return visitor.finish().map(|out| Status::Complete((out, len)));
            }
        } else {
            let field = check_field(content)?;
            if let (Some((name, value)), true) = (field, complete) {
                if !has_cr {
                    return Err(HandshakeError::Malformed);
                }
                visitor.field(name, value)?;
            } else if complete {
                // A line without a colon.
                return Err(HandshakeError::Malformed);
            }
        }
        if complete && !has_cr {
            return Err(HandshakeError::Malformed);
        }
        let Some(n) = newline else {
            return if input.len() >= MAX_HEAD_LEN {
                Err(HandshakeError::HeadTooLarge)
            } else {
                Ok(Status::Partial)
            };
        };
        at += n + 1;
        first = false;
    }
}

/// A header field: name and trimmed value.
type Field<'a> = (&'a [u8], &'a [u8]);

/// Check a header line (or what has arrived of it) byte by byte; `Some((name, value))` once
/// the colon was seen, with the value trimmed.
fn check_field(line: &[u8]) -> Result<Option<Field<'_>>, HandshakeError> {
    let mut colon = None;
    for (i, &b) in line.iter().enumerate() {
        if b == b':' {
            colon = Some(i);
            break;
        }
        if i >= MAX_NAME_LEN {
            return Err(HandshakeError::NameTooLong);
        }
        if !is_tchar(b) {
            return Err(HandshakeError::Malformed);
        }
    }
    let Some(colon) = colon else {
        return Ok(None);
    };
    if colon == 0 {
        return Err(HandshakeError::Malformed);
    }
    let (name, rest) = line.split_at(colon);
    let value = trim_start(rest.get(1..).unwrap_or_default());
    for (i, &b) in value.iter().enumerate() {
        if i >= MAX_VALUE_LEN {
            return Err(HandshakeError::ValueTooLong);
        }
        if !is_field_char(b) {
            return Err(HandshakeError::Malformed);
        }
    }
    Ok(Some((name, trim_end(value))))
}

/// `token` characters (RFC 9110, section 5.6.2).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Characters of a field value: visible ASCII, obs-text, space and tab.
pub(crate) fn is_field_char(b: u8) -> bool {
    matches!(b, b'\t' | b' '..=b'~' | 0x80..=0xFF)
}

fn is_ows(b: &u8) -> bool {
    matches!(b, b' ' | b'\t')
}

fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| is_ows(b)).count();
    s.get(n..).unwrap_or_default()
}

fn trim_end(s: &[u8]) -> &[u8] {
    let n = s.iter().rev().take_while(|b| is_ows(b)).count();
    s.get(..s.len() - n).unwrap_or_default()
}

/// The elements of a comma-separated list, trimmed, empty ones skipped.
pub(crate) fn list(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(|e| trim_end(trim_start(e)))
        .filter(|e| !e.is_empty())
}

/// Whether a comma-separated list holds `token`, compared case-insensitively.
pub(crate) fn list_has(value: &[u8], token: &[u8]) -> bool {
    list(value).any(|e| e.eq_ignore_ascii_case(token))
}

/// Check that `line` (complete or not) starts as `expected` does, byte by byte.
/// `Ok(true)`: all of `expected` is there; `Ok(false)`: a prefix of it (incomplete).
pub(crate) fn expect_prefix(
    line: &[u8],
    expected: &[u8],
    error: HandshakeError,
) -> Result<bool, HandshakeError> {
    for (i, &e) in expected.iter().enumerate() {
        match line.get(i) {
            Some(&b) if b == e => {}
            Some(_) => return Err(error),
            None => return Ok(false),
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    type List = heapless::Vec<Field<'static>, 8>;

    /// Records fields; the start line must be `S`.
    struct Fields(List);

    impl Visitor<'static> for Fields {
        type Output = List;
        fn start_line(&mut self, line: &[u8], complete: bool) -> Result<(), HandshakeError> {
            if expect_prefix(line, b"S", HandshakeError::Malformed)? && line.len() > 1 {
                return Err(HandshakeError::Malformed);
            }
            if complete && line.is_empty() {
                return Err(HandshakeError::Malformed);
            }
            Ok(())
        }
        fn field(
            &mut self,
            name: &'static [u8],
            value: &'static [u8],
        ) -> Result<(), HandshakeError> {
            self.0
                .push((name, value))
                .map_err(|_| HandshakeError::Malformed)
        }
        fn finish(self) -> Result<Self::Output, HandshakeError> {
            Ok(self.0)
        }
    }

    fn parse(input: &'static [u8]) -> Result<Status<(List, usize)>, HandshakeError> {
        parse_head(input, Fields(heapless::Vec::new()))
    }

    #[test]
    fn fields_are_trimmed_and_the_length_is_the_head() {
        let Ok(Status::Complete((fields, len))) =
            parse(b"S\r\nA: 1\r\nB:\t x y \t\r\nC:\r\n\r\nrest")
        else {
            panic!("no head");
        };
        assert_eq!(len, 26);
        assert_eq!(
            &fields[..],
            &[(&b"A"[..], &b"1"[..]), (b"B", b"x y"), (b"C", b"")]
        );
    }

    #[test]
    fn partial_until_the_empty_line() {
        let head: &[u8] = b"S\r\nA: 1\r\n\r\n";
        for n in 0..head.len() {
            assert_eq!(
                parse_head(&head[..n], Fields(heapless::Vec::new())),
                Ok(Status::Partial),
                "{n}"
            );
        }
    }

    #[test]
    fn bad_lines() {
        for bad in [
            &b"S\nA: 1\r\n\r\n"[..],
            b"S\r\nA: 1\n\r\n",
            b"S\r\nA: 1\r\n\n",
            b"S\r\nA 1\r\n\r\n",
            b"S\r\n: 1\r\n\r\n",
            b"S\r\nA : 1\r\n\r\n",
            b"S\r\n A: 1\r\n\r\n",
            b"S\r\nA: 1\r2\r\n\r\n",
            b"S\r\nA: \x001\r\n\r\n",
            b"S\r\nA: 1\x7f\r\n\r\n",
            b"S\r\nA\r: 1\r\n\r\n",
            b"X\r\n\r\n",
        ] {
            assert_eq!(parse(bad), Err(HandshakeError::Malformed), "{bad:?}");
        }
    }
}
