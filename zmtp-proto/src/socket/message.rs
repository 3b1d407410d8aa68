//! Multipart messages.

use alloc::vec::Vec;

use bytes::Bytes;

/// A multipart message: one or more frames, delivered all together or not at all.
///
/// Frames are [`Bytes`]: received frames are slices of the connection's read buffer, and
/// cloning a message (as PUB does for each subscriber) copies no frame body.
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash)]
pub struct Message {
    frames: Vec<Bytes>,
}

impl Message {
    /// An empty message (no frames yet).
    pub fn new() -> Message {
        Message::default()
    }

    /// The frames.
    pub fn frames(&self) -> &[Bytes] {
        &self.frames
    }

    /// The frames, by value.
    pub fn into_frames(self) -> Vec<Bytes> {
        self.frames
    }

    /// The first frame, if any.
    pub fn first(&self) -> Option<&Bytes> {
        self.frames.first()
    }

    /// Number of frames.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether the message has no frames.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Total body bytes over all frames.
    pub fn byte_len(&self) -> usize {
        self.frames.iter().map(Bytes::len).sum()
    }

    /// Append a frame.
    pub fn push_back(&mut self, frame: impl Into<Bytes>) {
        self.frames.push(frame.into());
    }

    /// Prepend a frame (an envelope or routing id).
    pub fn push_front(&mut self, frame: impl Into<Bytes>) {
        self.frames.insert(0, frame.into());
    }

    /// Remove and return the first frame.
    pub fn pop_front(&mut self) -> Option<Bytes> {
        if self.frames.is_empty() {
            None
        } else {
            Some(self.frames.remove(0))
        }
    }

    /// Split off the frames from `at` on, leaving the first `at` here.
    pub(crate) fn split_off(&mut self, at: usize) -> Message {
        Message {
            frames: self.frames.split_off(at.min(self.frames.len())),
        }
    }

    /// Put `envelope`'s frames in front of this message's.
    pub(crate) fn prepend(&mut self, envelope: Message) {
        let mut frames = envelope.frames;
        frames.append(&mut self.frames);
        self.frames = frames;
    }
}

impl From<Vec<Bytes>> for Message {
    fn from(frames: Vec<Bytes>) -> Message {
        Message { frames }
    }
}

impl From<Bytes> for Message {
    fn from(frame: Bytes) -> Message {
        Message {
            frames: alloc::vec![frame],
        }
    }
}

impl From<Vec<u8>> for Message {
    fn from(frame: Vec<u8>) -> Message {
        Message::from(Bytes::from(frame))
    }
}

impl From<alloc::string::String> for Message {
    fn from(frame: alloc::string::String) -> Message {
        Message::from(Bytes::from(frame))
    }
}

impl From<&'static [u8]> for Message {
    fn from(frame: &'static [u8]) -> Message {
        Message::from(Bytes::from_static(frame))
    }
}

impl From<&'static str> for Message {
    fn from(frame: &'static str) -> Message {
        Message::from(Bytes::from_static(frame.as_bytes()))
    }
}

impl<const N: usize> From<[&[u8]; N]> for Message {
    fn from(frames: [&[u8]; N]) -> Message {
        frames.iter().map(|f| Bytes::copy_from_slice(f)).collect()
    }
}

impl From<&[&[u8]]> for Message {
    fn from(frames: &[&[u8]]) -> Message {
        frames.iter().map(|f| Bytes::copy_from_slice(f)).collect()
    }
}

impl FromIterator<Bytes> for Message {
    fn from_iter<I: IntoIterator<Item = Bytes>>(iter: I) -> Message {
        Message {
            frames: iter.into_iter().collect(),
        }
    }
}

impl IntoIterator for Message {
    type Item = Bytes;
    type IntoIter = alloc::vec::IntoIter<Bytes>;
    fn into_iter(self) -> Self::IntoIter {
        self.frames.into_iter()
    }
}
