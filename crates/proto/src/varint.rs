//! QUIC variable-length integers (RFC 9000 §16) and a bounds-checked reader.
//!
//! The two high bits of the first byte give the length (1, 2, 4 or 8 bytes);
//! the remaining bits hold the value in network byte order, so the largest
//! value is 2^62 - 1. Every read goes through [`Reader`], which returns
//! [`DecodeError`] instead of panicking on short input.

/// The largest value a varint can carry.
pub(crate) const MAX: u64 = (1 << 62) - 1;

/// Why bytes could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("truncated: need {need} more bytes, have {have}")]
    Truncated { need: usize, have: usize },
    #[error("malformed: {0}")]
    Malformed(&'static str),
}

/// How many bytes `value` takes on the wire, or `None` above [`MAX`].
#[inline]
pub(crate) const fn size(value: u64) -> Option<usize> {
    if value < 1 << 6 {
        Some(1)
    } else if value < 1 << 14 {
        Some(2)
    } else if value < 1 << 30 {
        Some(4)
    } else if value <= MAX {
        Some(8)
    } else {
        None
    }
}

/// Appends `value` in the shortest encoding. Values above [`MAX`] are a
/// programming error on the sending side and saturate to [`MAX`].
#[inline]
pub(crate) fn write(out: &mut Vec<u8>, value: u64) {
    let v = value.min(MAX);
    match size(v) {
        Some(1) => out.push(v as u8),
        Some(2) => out.extend_from_slice(&((v as u16) | 0x4000).to_be_bytes()),
        Some(4) => out.extend_from_slice(&((v as u32) | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

/// Writes `value` in the shortest encoding at the start of `out` and
/// returns how many bytes that took (0, writing nothing, if `out` is too
/// short): headers are put together on the stack and appended to a packet
/// at once, with one capacity check instead of one per field. Values above
/// [`MAX`] saturate, as in [`write`].
#[inline]
pub(crate) fn put(out: &mut [u8], value: u64) -> usize {
    let v = value.min(MAX);
    match size(v) {
        Some(1) => out.first_chunk_mut().map_or(0, |b: &mut [u8; 1]| {
            *b = [v as u8];
            1
        }),
        Some(2) => out.first_chunk_mut().map_or(0, |b: &mut [u8; 2]| {
            *b = ((v as u16) | 0x4000).to_be_bytes();
            2
        }),
        Some(4) => out.first_chunk_mut().map_or(0, |b: &mut [u8; 4]| {
            *b = ((v as u32) | 0x8000_0000).to_be_bytes();
            4
        }),
        _ => out.first_chunk_mut().map_or(0, |b: &mut [u8; 8]| {
            *b = (v | 0xc000_0000_0000_0000).to_be_bytes();
            8
        }),
    }
}

/// A cursor over untrusted bytes; every getter checks the length first.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The unread bytes, without consuming them.
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    #[inline]
    pub fn bytes(&mut self, len: usize) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < len {
            return Err(DecodeError::Truncated {
                need: len,
                have: self.remaining(),
            });
        }
        let out = &self.buf[self.pos..self.pos + len];
        self.pos += len;
        Ok(out)
    }

    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.bytes(1)?[0])
    }

    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Reads a big-endian unsigned integer of `len` (1..=8) bytes.
    pub fn uint(&mut self, len: usize) -> Result<u64, DecodeError> {
        if !(1..=8).contains(&len) {
            return Err(DecodeError::Malformed("integer width"));
        }
        Ok(self
            .bytes(len)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    /// Inlined into the frame parser, which reads three or four per
    /// STREAM frame: as a call each cost more than the decoding.
    #[inline(always)]
    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let rest = self.rest();
        let first = *rest
            .first()
            .ok_or(DecodeError::Truncated { need: 1, have: 0 })?;
        let len = 1usize << (first >> 6);
        let b = rest.get(..len).ok_or(DecodeError::Truncated {
            need: len,
            have: rest.len(),
        })?;
        // Fixed-width loads instead of a byte loop; the mask drops the two
        // length bits.
        let v = if let Ok(a) = <[u8; 8]>::try_from(b) {
            u64::from_be_bytes(a) & MAX
        } else if let Ok(a) = <[u8; 4]>::try_from(b) {
            u64::from(u32::from_be_bytes(a) & 0x3fff_ffff)
        } else if let Ok(a) = <[u8; 2]>::try_from(b) {
            u64::from(u16::from_be_bytes(a) & 0x3fff)
        } else {
            u64::from(first & 0x3f)
        };
        self.pos += len;
        Ok(v)
    }

    /// A varint that must fit a `usize` length (and the remaining input).
    #[inline(always)]
    pub fn varint_len(&mut self) -> Result<usize, DecodeError> {
        let v = self.varint()?;
        usize::try_from(v)
            .ok()
            .filter(|&n| n <= self.remaining())
            .ok_or(DecodeError::Truncated {
                need: usize::try_from(v).unwrap_or(usize::MAX),
                have: self.remaining(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The four examples of RFC 9000 §A.1.
    const RFC_EXAMPLES: [(&[u8], u64); 4] = [
        (
            &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
            151_288_809_941_952_652,
        ),
        (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
        (&[0x7b, 0xbd], 15_293),
        (&[0x25], 37),
    ];

    #[test]
    fn decodes_rfc_examples() {
        for (bytes, value) in RFC_EXAMPLES {
            let mut r = Reader::new(bytes);
            assert_eq!(r.varint(), Ok(value));
            assert!(r.is_empty());
        }
        // A non-minimal encoding of 37 is still 37.
        assert_eq!(Reader::new(&[0x40, 0x25]).varint(), Ok(37));
    }

    #[test]
    fn encodes_rfc_examples() {
        for (bytes, value) in RFC_EXAMPLES {
            let mut out = Vec::new();
            write(&mut out, value);
            assert_eq!(out, bytes);
            assert_eq!(size(value), Some(bytes.len()));
        }
        assert_eq!(size(MAX + 1), None);
    }

    #[test]
    fn truncated_input_is_an_error() {
        assert_eq!(
            Reader::new(&[0x9d, 0x7f]).varint(),
            Err(DecodeError::Truncated { need: 4, have: 2 })
        );
        assert!(Reader::new(&[]).varint().is_err());
        let mut r = Reader::new(&[0x05, 1, 2]);
        assert!(r.varint_len().is_err(), "length 5 with 2 bytes left");
    }

    proptest! {
        #[test]
        fn round_trips(v in 0..=MAX) {
            let mut out = Vec::new();
            write(&mut out, v);
            prop_assert_eq!(out.len(), size(v).unwrap());
            let mut r = Reader::new(&out);
            prop_assert_eq!(r.varint(), Ok(v));
            prop_assert!(r.is_empty());
        }

        #[test]
        fn put_writes_what_write_appends(v in any::<u64>(), room in 0usize..10) {
            let mut want = Vec::new();
            write(&mut want, v);
            let mut buf = [0xa5u8; 9];
            let n = put(&mut buf[..room], v);
            if room >= want.len() {
                prop_assert_eq!(&buf[..n], &want[..]);
            } else {
                prop_assert_eq!(n, 0);
                prop_assert_eq!(buf, [0xa5u8; 9]);
            }
        }

        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..12)) {
            let mut r = Reader::new(&bytes);
            while r.varint().is_ok() {}
        }
    }
}
