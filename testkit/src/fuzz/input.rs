//! Reading fuzz input: a cursor that never fails, and table picks.

/// Reads fuzz input front to back; past the end every read gives zeros (or nothing).
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Cursor<'a> {
        Cursor { data }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub(crate) fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    pub(crate) fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.byte(), self.byte()])
    }

    /// The next `n` bytes, or what is left.
    pub(crate) fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self
            .data
            .split_at_checked(n)
            .unwrap_or((self.data, &[][..]));
        self.data = rest;
        head
    }

    pub(crate) fn rest(&mut self) -> &'a [u8] {
        core::mem::take(&mut self.data)
    }
}

/// `table[sel % len]`, or `default` for an empty table.
pub(crate) fn pick<T: Copy>(table: &[T], sel: usize, default: T) -> T {
    match table.len() {
        0 => default,
        n => table.get(sel % n).copied().unwrap_or(default),
    }
}

/// Whether `hay` contains `needle` anywhere.
pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}
