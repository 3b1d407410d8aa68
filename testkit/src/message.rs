//! Short ways to build and compare socket messages and options in tests.

use zmtp_proto::socket::{Message, Options};
use zmtp_proto::Bytes;

/// A message from binary frames.
pub fn msg(frames: &[&[u8]]) -> Message {
    Message::from(frames)
}

/// A message from text frames.
pub fn m(frames: &[&str]) -> Message {
    frames
        .iter()
        .map(|f| Bytes::copy_from_slice(f.as_bytes()))
        .collect()
}

/// A message's frames as byte vectors, for comparisons.
pub fn frames(m: &Message) -> Vec<Vec<u8>> {
    m.frames().iter().map(|f| f.to_vec()).collect()
}

/// The frames as text joined with `|` (lossy), for compact assertions.
pub fn text(m: &Message) -> String {
    m.frames()
        .iter()
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect::<Vec<_>>()
        .join("|")
}

/// Options with some fields changed.
pub fn opts(f: impl FnOnce(&mut Options)) -> Options {
    let mut o = Options::default();
    f(&mut o);
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_agree() {
        let a = m(&["ab", "", "c"]);
        let b = msg(&[b"ab", b"", b"c"]);
        assert_eq!(frames(&a), frames(&b));
        assert_eq!(frames(&a), vec![b"ab".to_vec(), Vec::new(), b"c".to_vec()]);
        assert_eq!(text(&a), "ab||c");
        assert_eq!(opts(|o| o.sndhwm = 3).sndhwm, 3);
    }
}
