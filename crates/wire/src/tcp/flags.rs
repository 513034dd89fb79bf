//! The nine TCP header flags, including the AccECN `AE` bit.

use core::fmt;
use core::ops::{BitOr, BitOrAssign};

/// A set of TCP flags, laid out as the low 9 bits of header bytes 12..14.
///
/// `AE` is the bit RFC 3540 once gave to the ECN nonce (NS); RFC 9768
/// (AccECN) reuses it as the most significant bit of the 3-bit ACE counter
/// `AE|CWR|ECE`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TcpFlags(u16);

impl TcpFlags {
    /// No more data from the sender; takes one sequence number.
    pub const FIN: TcpFlags = TcpFlags(0x001);
    /// Synchronize sequence numbers: opens a connection; takes one sequence number.
    pub const SYN: TcpFlags = TcpFlags(0x002);
    /// Reset: aborts the connection.
    pub const RST: TcpFlags = TcpFlags(0x004);
    /// Push: deliver the data to the application without waiting.
    pub const PSH: TcpFlags = TcpFlags(0x008);
    /// The acknowledgment number is valid (every segment but the first SYN).
    pub const ACK: TcpFlags = TcpFlags(0x010);
    /// The urgent pointer is valid.
    pub const URG: TcpFlags = TcpFlags(0x020);
    /// ECN-Echo (RFC 3168); the low bit of ACE under AccECN.
    pub const ECE: TcpFlags = TcpFlags(0x040);
    /// Congestion Window Reduced (RFC 3168); the middle bit of ACE under AccECN.
    pub const CWR: TcpFlags = TcpFlags(0x080);
    /// Accurate ECN (RFC 9768), formerly NS; the high bit of ACE.
    pub const AE: TcpFlags = TcpFlags(0x100);

    const ALL: u16 = 0x1ff;
    const NAMES: [(TcpFlags, &'static str); 9] = [
        (TcpFlags::FIN, "FIN"),
        (TcpFlags::SYN, "SYN"),
        (TcpFlags::RST, "RST"),
        (TcpFlags::PSH, "PSH"),
        (TcpFlags::ACK, "ACK"),
        (TcpFlags::URG, "URG"),
        (TcpFlags::ECE, "ECE"),
        (TcpFlags::CWR, "CWR"),
        (TcpFlags::AE, "AE"),
    ];

    /// No flag set.
    pub const fn empty() -> TcpFlags {
        TcpFlags(0)
    }

    /// Keeps the nine flag bits; reserved bits and the data offset are dropped.
    pub const fn from_bits_truncate(bits: u16) -> TcpFlags {
        TcpFlags(bits & Self::ALL)
    }

    /// The flags as the low 9 bits of header bytes 12..14.
    pub const fn bits(self) -> u16 {
        self.0
    }

    /// True when no flag is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// True when every flag of `other` is set in `self`.
    pub const fn contains(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Sets every flag of `other`.
    pub fn insert(&mut self, other: TcpFlags) {
        self.0 |= other.0;
    }

    /// Clears every flag of `other`.
    pub fn remove(&mut self, other: TcpFlags) {
        self.0 &= !other.0;
    }

    /// The AccECN ACE counter (RFC 9768): `AE|CWR|ECE` read as 0..=7.
    pub const fn ace(self) -> u8 {
        ((self.0 >> 6) & 0b111) as u8
    }

    /// These flags with AE, CWR and ECE replaced by the low 3 bits of `ace`.
    pub const fn with_ace(self, ace: u8) -> TcpFlags {
        TcpFlags((self.0 & !0x1c0) | ((ace as u16 & 0b111) << 6))
    }
}

impl BitOr for TcpFlags {
    type Output = TcpFlags;
    fn bitor(self, rhs: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | rhs.0)
    }
}

impl BitOrAssign for TcpFlags {
    fn bitor_assign(&mut self, rhs: TcpFlags) {
        self.0 |= rhs.0;
    }
}

/// Prints the set flags joined by `|` (as tcpdump lists them), or `-`.
impl fmt::Debug for TcpFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("-");
        }
        let mut first = true;
        for (flag, name) in Self::NAMES {
            if self.contains(flag) {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ace_is_ae_cwr_ece_with_ae_most_significant() {
        assert_eq!(TcpFlags::ECE.ace(), 1);
        assert_eq!(TcpFlags::CWR.ace(), 2);
        assert_eq!(TcpFlags::AE.ace(), 4);
        // RFC 9768: a SYN asking for AccECN sets all three (ACE = 7).
        assert_eq!(
            (TcpFlags::SYN | TcpFlags::AE | TcpFlags::CWR | TcpFlags::ECE).ace(),
            7
        );
        for n in 0..8 {
            let f = (TcpFlags::ACK | TcpFlags::PSH).with_ace(n);
            assert_eq!(f.ace(), n);
            assert!(f.contains(TcpFlags::ACK | TcpFlags::PSH));
        }
    }

    #[test]
    fn truncate_insert_remove_and_debug() {
        assert_eq!(TcpFlags::from_bits_truncate(0xffff).bits(), 0x1ff);
        let mut f = TcpFlags::SYN;
        f.insert(TcpFlags::ACK);
        f |= TcpFlags::ECE;
        assert_eq!(format!("{f:?}"), "SYN|ACK|ECE");
        f.remove(TcpFlags::SYN | TcpFlags::ECE);
        assert_eq!(f, TcpFlags::ACK);
        assert_eq!(format!("{:?}", TcpFlags::empty()), "-");
    }
}
