//! TCP options (RFC 9293 §3.1): parsed one at a time from the bytes between
//! the fixed header and the data offset, and written back in the same order.

use crate::{Result, WireError};

/// Option kinds this module understands; any other kind is kept raw.
pub mod kind {
    /// End of option list; the rest of the options area is padding (RFC 9293).
    pub const END_OF_LIST: u8 = 0;
    /// No-operation: one byte of padding between options (RFC 9293).
    pub const NOP: u8 = 1;
    /// Maximum segment size, SYN only (RFC 9293).
    pub const MSS: u8 = 2;
    /// Window scale shift count, SYN only (RFC 7323 §2).
    pub const WINDOW_SCALE: u8 = 3;
    /// SACK permitted, SYN only (RFC 2018).
    pub const SACK_PERMITTED: u8 = 4;
    /// Selective acknowledgment blocks (RFC 2018).
    pub const SACK: u8 = 5;
    /// Timestamps: TSval and TSecr (RFC 7323 §3).
    pub const TIMESTAMPS: u8 = 8;
    /// TCP Fast Open cookie or cookie request (RFC 7413).
    pub const FAST_OPEN: u8 = 34;
}

/// Most option bytes a header can carry (data offset 15 words minus 5).
pub const MAX_OPTIONS_LEN: usize = 40;
/// Most SACK blocks that fit: 2 + 4 * 8 = 34 bytes (RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 4;

/// One SACK block: sequence numbers `left..right` were received (RFC 2018).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SackBlock {
    /// First sequence number of the block.
    pub left: u32,
    /// Sequence number just after the block's last byte.
    pub right: u32,
}

/// A single TCP option.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TcpOption {
    /// Kind 0: the list ends here; the rest of the header is padding. Only
    /// [`TcpOptionIter`] yields it; [`super::TcpRepr`] never holds it.
    EndOfList,
    /// Kind 1: one byte of padding between options.
    Nop,
    /// Kind 2 (RFC 9293): the largest segment the sender will accept.
    Mss(u16),
    /// Kind 3 (RFC 7323 §2): the shift count, kept as sent (receivers clamp
    /// values over 14 to 14).
    WindowScale(u8),
    /// Kind 4 (RFC 2018): SACK may be used on this connection (SYN only).
    SackPermitted,
    /// Kind 5 (RFC 2018): one to four received blocks.
    Sack(Vec<SackBlock>),
    /// Kind 8 (RFC 7323 §3): sender's clock and the echoed peer value.
    Timestamps {
        /// The sender's timestamp clock, in its own units (often ms).
        tsval: u32,
        /// The latest TSval heard from the peer; 0 on a SYN.
        tsecr: u32,
    },
    /// Kind 34 (RFC 7413 §4.1.1): a Fast Open cookie of 4 to 16 bytes (even),
    /// or an empty cookie request.
    FastOpen(Vec<u8>),
    /// Any other kind, its data bytes kept as they were.
    Unknown {
        /// The option kind byte.
        kind: u8,
        /// The bytes after kind and length.
        data: Vec<u8>,
    },
}

impl TcpOption {
    /// Bytes this option takes on the wire.
    pub fn len_bytes(&self) -> usize {
        match self {
            TcpOption::EndOfList | TcpOption::Nop => 1,
            TcpOption::Mss(_) => 4,
            TcpOption::WindowScale(_) => 3,
            TcpOption::SackPermitted => 2,
            TcpOption::Sack(blocks) => 2 + 8 * blocks.len(),
            TcpOption::Timestamps { .. } => 10,
            TcpOption::FastOpen(cookie) => 2 + cookie.len(),
            TcpOption::Unknown { data, .. } => 2 + data.len(),
        }
    }

    /// Writes the option at the start of `buf` and returns its length.
    /// Refuses what parsing would read back differently: an empty or
    /// oversized SACK, a cookie of the wrong length, a raw option that uses a
    /// known kind or has over 38 data bytes.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        self.check()?;
        let len = self.len_bytes();
        let have = buf.len();
        let out = buf
            .get_mut(..len)
            .ok_or(WireError::Truncated { need: len, have })?;
        // `check` bounds every length, so the cast below cannot truncate.
        let len_byte = len as u8;
        match self {
            TcpOption::EndOfList => out[0] = kind::END_OF_LIST,
            TcpOption::Nop => out[0] = kind::NOP,
            TcpOption::Mss(mss) => {
                out[..2].copy_from_slice(&[kind::MSS, len_byte]);
                out[2..].copy_from_slice(&mss.to_be_bytes());
            }
            TcpOption::WindowScale(shift) => {
                out.copy_from_slice(&[kind::WINDOW_SCALE, len_byte, *shift]);
            }
            TcpOption::SackPermitted => out.copy_from_slice(&[kind::SACK_PERMITTED, len_byte]),
            TcpOption::Sack(blocks) => {
                out[..2].copy_from_slice(&[kind::SACK, len_byte]);
                for (chunk, b) in out[2..].chunks_exact_mut(8).zip(blocks) {
                    chunk[..4].copy_from_slice(&b.left.to_be_bytes());
                    chunk[4..].copy_from_slice(&b.right.to_be_bytes());
                }
            }
            TcpOption::Timestamps { tsval, tsecr } => {
                out[..2].copy_from_slice(&[kind::TIMESTAMPS, len_byte]);
                out[2..6].copy_from_slice(&tsval.to_be_bytes());
                out[6..].copy_from_slice(&tsecr.to_be_bytes());
            }
            TcpOption::FastOpen(cookie) => {
                out[..2].copy_from_slice(&[kind::FAST_OPEN, len_byte]);
                out[2..].copy_from_slice(cookie);
            }
            TcpOption::Unknown { kind, data } => {
                out[..2].copy_from_slice(&[*kind, len_byte]);
                out[2..].copy_from_slice(data);
            }
        }
        Ok(len)
    }

    fn check(&self) -> Result<()> {
        match self {
            TcpOption::Sack(b) if b.is_empty() || b.len() > MAX_SACK_BLOCKS => {
                Err(WireError::Malformed("tcp sack needs 1 to 4 blocks"))
            }
            TcpOption::FastOpen(c) if !fast_open_len_ok(c.len()) => Err(WireError::Malformed(
                "tcp fast open cookie not 0 or 4..=16 even bytes",
            )),
            TcpOption::Unknown { kind, .. } if is_known(*kind) => {
                Err(WireError::Malformed("raw tcp option uses a known kind"))
            }
            TcpOption::Unknown { data, .. } if data.len() > MAX_OPTIONS_LEN - 2 => {
                Err(WireError::Malformed("raw tcp option over 40 bytes"))
            }
            _ => Ok(()),
        }
    }
}

fn is_known(k: u8) -> bool {
    matches!(
        k,
        kind::END_OF_LIST
            | kind::NOP
            | kind::MSS
            | kind::WINDOW_SCALE
            | kind::SACK_PERMITTED
            | kind::SACK
            | kind::TIMESTAMPS
            | kind::FAST_OPEN
    )
}

/// RFC 7413 §4.1.1 (with erratum 4238): an empty cookie request, or a cookie
/// of 4 to 16 bytes whose length is even.
fn fast_open_len_ok(cookie_len: usize) -> bool {
    cookie_len == 0 || ((4..=16).contains(&cookie_len) && cookie_len.is_multiple_of(2))
}

/// Reads options one at a time. A length that runs past the options area,
/// is under 2, or does not fit its kind yields one `Err` and ends the walk;
/// `EndOfList` also ends it.
#[derive(Debug, Clone)]
pub struct TcpOptionIter<'a> {
    rest: &'a [u8],
}

impl<'a> TcpOptionIter<'a> {
    /// Iterates over a raw options area (the header bytes after the first 20).
    pub fn new(options: &'a [u8]) -> Self {
        TcpOptionIter { rest: options }
    }

    fn next_option(&mut self) -> Result<TcpOption> {
        let (&k, after_kind) = self
            .rest
            .split_first()
            .ok_or(WireError::Truncated { need: 1, have: 0 })?;
        match k {
            kind::END_OF_LIST => {
                self.rest = &[];
                return Ok(TcpOption::EndOfList);
            }
            kind::NOP => {
                self.rest = after_kind;
                return Ok(TcpOption::Nop);
            }
            _ => {}
        }
        let len = usize::from(
            *after_kind
                .first()
                .ok_or(WireError::Malformed("tcp option without length"))?,
        );
        if len < 2 {
            return Err(WireError::Malformed("tcp option length under 2"));
        }
        if len > MAX_OPTIONS_LEN {
            return Err(WireError::Malformed("tcp option over 40 bytes"));
        }
        let (option, rest) = self
            .rest
            .split_at_checked(len)
            .ok_or(WireError::Malformed("tcp option runs past header"))?;
        let data = &option[2..];
        self.rest = rest;
        let wrong_len = WireError::Malformed("tcp option length wrong for its kind");
        let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        Ok(match k {
            kind::MSS => match data {
                [a, b] => TcpOption::Mss(u16::from_be_bytes([*a, *b])),
                _ => return Err(wrong_len),
            },
            kind::WINDOW_SCALE => match data {
                [shift] => TcpOption::WindowScale(*shift),
                _ => return Err(wrong_len),
            },
            kind::SACK_PERMITTED if data.is_empty() => TcpOption::SackPermitted,
            kind::SACK if !data.is_empty() && data.len().is_multiple_of(8) => TcpOption::Sack(
                data.chunks_exact(8)
                    .map(|c| SackBlock {
                        left: be32(&c[..4]),
                        right: be32(&c[4..]),
                    })
                    .collect(),
            ),
            kind::TIMESTAMPS if data.len() == 8 => TcpOption::Timestamps {
                tsval: be32(&data[..4]),
                tsecr: be32(&data[4..]),
            },
            kind::FAST_OPEN if fast_open_len_ok(data.len()) => TcpOption::FastOpen(data.to_vec()),
            kind::SACK_PERMITTED | kind::SACK | kind::TIMESTAMPS | kind::FAST_OPEN => {
                return Err(wrong_len);
            }
            _ => TcpOption::Unknown {
                kind: k,
                data: data.to_vec(),
            },
        })
    }
}

impl Iterator for TcpOptionIter<'_> {
    type Item = Result<TcpOption>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let item = self.next_option();
        if item.is_err() {
            self.rest = &[];
        }
        Some(item)
    }
}

/// Writes `options` in order, then zero (end-of-list) padding up to a 4-byte
/// boundary. Returns the padded length. `EndOfList` may appear only last.
pub fn emit_options(options: &[TcpOption], buf: &mut [u8]) -> Result<usize> {
    let len = padded_len(options);
    if len > MAX_OPTIONS_LEN {
        return Err(WireError::Malformed("tcp options over 40 bytes"));
    }
    if options
        .iter()
        .rev()
        .skip(1)
        .any(|o| *o == TcpOption::EndOfList)
    {
        return Err(WireError::Malformed("tcp end-of-list before other options"));
    }
    let have = buf.len();
    let area = buf
        .get_mut(..len)
        .ok_or(WireError::Truncated { need: len, have })?;
    let mut off = 0;
    for o in options {
        off += o.emit(&mut area[off..])?;
    }
    area[off..].fill(0);
    Ok(len)
}

/// Wire length of `options` rounded up to a multiple of 4.
pub fn padded_len(options: &[TcpOption]) -> usize {
    options
        .iter()
        .map(TcpOption::len_bytes)
        .sum::<usize>()
        .next_multiple_of(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8]) -> Vec<Result<TcpOption>> {
        TcpOptionIter::new(bytes).collect()
    }

    #[test]
    fn linux_syn_options() {
        // The options of a Linux SYN (see crate::fixtures::TCP4_SYN).
        let bytes = [
            0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0x80, 0xec, 0x47, 0x59, 0, 0, 0, 0,
            0x01, 0x03, 0x03, 0x0a,
        ];
        let want = vec![
            TcpOption::Mss(1460),
            TcpOption::SackPermitted,
            TcpOption::Timestamps {
                tsval: 0x80ec_4759,
                tsecr: 0,
            },
            TcpOption::Nop,
            TcpOption::WindowScale(10),
        ];
        let got: Vec<TcpOption> = parse(&bytes).into_iter().map(|o| o.unwrap()).collect();
        assert_eq!(got, want);
        let mut out = [0xffu8; 20];
        assert_eq!(emit_options(&want, &mut out), Ok(20));
        assert_eq!(out, bytes);
    }

    #[test]
    fn sack_fast_open_and_unknown_round_trip() {
        let opts = vec![
            TcpOption::Nop,
            TcpOption::Nop,
            TcpOption::Sack(vec![
                SackBlock { left: 1, right: 2 },
                SackBlock {
                    left: 10,
                    right: 20,
                },
            ]),
            TcpOption::FastOpen(vec![0xaa; 8]),
            TcpOption::Unknown {
                kind: 30,
                data: vec![1, 2],
            },
        ];
        let mut out = [0u8; 40];
        let n = emit_options(&opts, &mut out).unwrap();
        assert_eq!(n, 36); // 2 + 18 + 10 + 4 = 34, padded to 36
        let mut got: Vec<TcpOption> = parse(&out[..n]).into_iter().map(|o| o.unwrap()).collect();
        assert_eq!(got.pop(), Some(TcpOption::EndOfList));
        assert_eq!(got, opts);
    }

    #[test]
    fn end_of_list_stops_and_ignores_padding() {
        let got = parse(&[0x01, 0x00, 0xde, 0xad]);
        assert_eq!(got, vec![Ok(TcpOption::Nop), Ok(TcpOption::EndOfList)]);
    }

    #[test]
    fn malformed_lengths_are_errors() {
        let bad: [&[u8]; 9] = [
            &[0x02],                         // no length byte
            &[0x02, 0x00],                   // length 0 would loop forever
            &[0x08, 0x01],                   // length under 2
            &[0x02, 0x05, 0, 0],             // runs past the area
            &[0x02, 0x03, 0x05],             // MSS must be 4
            &[0x03, 0x04, 0x07, 0x00],       // window scale must be 3
            &[0x05, 0x06, 0, 0, 0, 0],       // SACK not 2 + 8n
            &[0x22, 0x04, 0xaa, 0xbb],       // cookie under 4 bytes
            &[0x22, 0x07, 1, 2, 3, 4, 5, 0], // odd cookie length
        ];
        for b in bad {
            let got = parse(b);
            assert!(matches!(got.last(), Some(Err(_))), "{b:02x?} gave {got:?}");
        }
    }

    #[test]
    fn emit_refuses_what_parse_would_read_differently() {
        let mut buf = [0u8; 40];
        for o in [
            TcpOption::Sack(vec![]),
            TcpOption::Sack(vec![SackBlock { left: 0, right: 0 }; 5]),
            TcpOption::FastOpen(vec![0; 3]),
            TcpOption::Unknown {
                kind: 2,
                data: vec![0, 1],
            },
            TcpOption::Unknown {
                kind: 99,
                data: vec![0; 39],
            },
        ] {
            assert!(o.emit(&mut buf).is_err(), "{o:?}");
        }
        assert!(emit_options(&[TcpOption::EndOfList, TcpOption::Nop], &mut buf).is_err());
        assert!(emit_options(&vec![TcpOption::Mss(1); 11], &mut buf).is_err());
        assert!(TcpOption::Mss(1).emit(&mut buf[..3]).is_err());
    }
}
