//! Lowercase hex for `--hex` output and `--hex-frames` input.

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Append `bytes` to `out` as lowercase hex.
pub fn encode_into(bytes: &[u8], out: &mut Vec<u8>) {
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 0x0f)]);
    }
}

/// Decode hex text (either case); `None` if it has an odd length or a non-hex character.
pub fn decode(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.chunks_exact(2)
        .map(|pair| Some((nibble(pair[0])? << 4) | nibble(pair[1])?))
        .collect()
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let bytes: Vec<u8> = (0..=255).collect();
        let mut text = Vec::new();
        encode_into(&bytes, &mut text);
        assert_eq!(&text[..6], b"000102");
        assert_eq!(decode(&text), Some(bytes));
        assert_eq!(decode(b"AbCd"), Some(vec![0xab, 0xcd]));
        assert_eq!(decode(b""), Some(vec![]));
        assert_eq!(decode(b"abc"), None);
        assert_eq!(decode(b"zz"), None);
    }
}
