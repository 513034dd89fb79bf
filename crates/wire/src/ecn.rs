//! The ECN field: the low two bits of the IPv4 TOS / IPv6 traffic class
//! (RFC 3168, with ECT(1) as the L4S identifier per RFC 9331).

/// An ECN codepoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Ecn {
    /// 0b00: the sender does not support ECN; congestion means a drop.
    #[default]
    NotEct,
    /// 0b01: ECN-capable, L4S (scalable congestion control).
    Ect1,
    /// 0b10: ECN-capable, classic.
    Ect0,
    /// 0b11: congestion experienced, set by a queue instead of a drop.
    Ce,
}

impl Ecn {
    /// Reads the two low bits; higher bits are ignored.
    pub const fn from_bits(bits: u8) -> Ecn {
        match bits & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// The codepoint as the two low bits of the TOS / traffic class byte.
    pub const fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }

    /// True for ECT(0), ECT(1) and CE: a queue may mark instead of dropping.
    pub const fn is_ecn_capable(self) -> bool {
        !matches!(self, Ecn::NotEct)
    }

    /// RFC 9331 classifier: ECT(1) and CE go to the L4S queue.
    pub const fn is_l4s(self) -> bool {
        matches!(self, Ecn::Ect1 | Ecn::Ce)
    }

    /// The lower-case name reports and JSON use: `not-ect`, `ect1`, `ect0`, `ce`.
    pub const fn name(self) -> &'static str {
        match self {
            Ecn::NotEct => "not-ect",
            Ecn::Ect1 => "ect1",
            Ecn::Ect0 => "ect0",
            Ecn::Ce => "ce",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip_and_classify() {
        for b in 0..4u8 {
            assert_eq!(Ecn::from_bits(b).bits(), b);
        }
        assert_eq!(Ecn::from_bits(0xff), Ecn::Ce);
        assert!(Ecn::Ect1.is_l4s() && Ecn::Ce.is_l4s());
        assert!(!Ecn::Ect0.is_l4s() && !Ecn::NotEct.is_ecn_capable());
    }
}
