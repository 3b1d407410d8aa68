use super::{ensure, CodecError, InsufficientSize, Writer};

/// Largest value length the wire format allows (2^31 - 1).
const MAX_VALUE_LEN: u32 = 0x7FFF_FFFF;

/// One metadata property: `u8 name-len, name, u32 value-len, value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Property<'a> {
    /// Property name, compared case-sensitively (as libzmq does).
    pub name: &'a [u8],
    /// Property value.
    pub value: &'a [u8],
}

/// A validated, borrowed metadata block (the body of READY or INITIATE after the name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metadata<'a> {
    bytes: &'a [u8],
}

impl Metadata<'static> {
    /// A block with no properties.
    pub const EMPTY: Metadata<'static> = Metadata { bytes: &[] };
}

impl<'a> Metadata<'a> {
    /// Validate a whole metadata block. Truncated properties, empty names, value lengths
    /// over 2^31 - 1 and leftover bytes are [`CodecError::InvalidMetadata`].
    pub fn parse(bytes: &'a [u8]) -> Result<Metadata<'a>, CodecError> {
        let mut rest = bytes;
        while !rest.is_empty() {
            let (_, tail) = split_property(rest)?;
            rest = tail;
        }
        Ok(Metadata { bytes })
    }

    /// The raw encoded bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Iterate over the properties in wire order.
    pub fn iter(&self) -> MetadataIter<'a> {
        MetadataIter { rest: self.bytes }
    }

    /// The value of the first property named exactly `name`.
    pub fn get(&self, name: &[u8]) -> Option<&'a [u8]> {
        self.iter().find(|p| p.name == name).map(|p| p.value)
    }
}

impl<'a> IntoIterator for Metadata<'a> {
    type Item = Property<'a>;
    type IntoIter = MetadataIter<'a>;
    fn into_iter(self) -> MetadataIter<'a> {
        self.iter()
    }
}

/// Iterator over the properties of a [`Metadata`] block.
#[derive(Debug, Clone)]
pub struct MetadataIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for MetadataIter<'a> {
    type Item = Property<'a>;
    fn next(&mut self) -> Option<Property<'a>> {
        // The block was validated by `Metadata::parse`; a failure here only ends iteration.
        let (prop, tail) = split_property(self.rest).ok()?;
        self.rest = tail;
        Some(prop)
    }
}

fn split_property(input: &[u8]) -> Result<(Property<'_>, &[u8]), CodecError> {
    let (&name_len, rest) = input.split_first().ok_or(CodecError::InvalidMetadata)?;
    let name_len = usize::from(name_len);
    if name_len == 0 || rest.len() < name_len + 4 {
        return Err(CodecError::InvalidMetadata);
    }
    let (name, rest) = rest.split_at(name_len);
    let (len_bytes, rest) = rest.split_at(4);
    let mut be = [0u8; 4];
    be.copy_from_slice(len_bytes);
    let value_len = u32::from_be_bytes(be);
    if value_len > MAX_VALUE_LEN || rest.len() < value_len as usize {
        return Err(CodecError::InvalidMetadata);
    }
    let (value, rest) = rest.split_at(value_len as usize);
    Ok((Property { name, value }, rest))
}

/// Encoded length of a property. Names are limited to 255 bytes (longer names are cut on emit).
pub fn property_len(name: &[u8], value: &[u8]) -> usize {
    1 + name.len().min(255) + 4 + value.len()
}

/// Emit one property into `out`; returns the bytes written.
///
/// Names longer than 255 bytes are cut to 255. Values must not exceed 2^31 - 1 bytes.
pub fn emit_property(name: &[u8], value: &[u8], out: &mut [u8]) -> Result<usize, InsufficientSize> {
    let name = name.get(..255).unwrap_or(name);
    ensure(out, property_len(name, value))?;
    let mut w = Writer::new(out);
    w.put(&[name.len() as u8])?;
    w.put(name)?;
    w.put(&(value.len() as u32).to_be_bytes())?;
    w.put(value)?;
    Ok(w.len())
}
