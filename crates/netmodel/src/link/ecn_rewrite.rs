//! ECN rewriting by a middlebox on the path, the failure modes an L4S
//! sender must detect (WWDC 2023 seed: "ECN validation", bleaching).

use crate::packet::Packet;
use brisk_wire::Ecn;
use serde::Deserialize;

/// What the hop does to the ECN field: `ecn = "pass"` (default),
/// `"bleach"`, `"ce_only"` or `"ect1_to_ect0"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnRewrite {
    /// Leaves the field alone.
    #[default]
    Pass,
    /// Clears the whole field to Not-ECT, CE included, as a router that
    /// zeroes the old ToS byte does.
    Bleach,
    /// Turns every ECN-capable packet (ECT(0), ECT(1)) into CE, as a broken
    /// AQM that marks everything would.
    CeOnly,
    /// Rewrites ECT(1) to ECT(0), hiding that a sender is L4S; CE and
    /// ECT(0) pass.
    Ect1ToEct0,
}

impl EcnRewrite {
    /// The codepoint that leaves the hop for `ecn`.
    pub fn rewrite(self, ecn: Ecn) -> Ecn {
        match (self, ecn) {
            (EcnRewrite::Pass, e) => e,
            (EcnRewrite::Bleach, _) => Ecn::NotEct,
            (EcnRewrite::CeOnly, e) if e.is_ecn_capable() => Ecn::Ce,
            (EcnRewrite::Ect1ToEct0, Ecn::Ect1) => Ecn::Ect0,
            (_, e) => e,
        }
    }

    /// Rewrites the packet's real header (the IPv4 checksum stays valid);
    /// returns `(from, to)` if the codepoint changed.
    pub(crate) fn apply(self, packet: &mut Packet) -> Option<(Ecn, Ecn)> {
        if self == EcnRewrite::Pass {
            // Most links: no need to read the header at all.
            return None;
        }
        let from = packet.ecn();
        let to = self.rewrite(from);
        (to != from).then(|| {
            packet.set_ecn(to);
            (from, to)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ecn::*;

    #[test]
    fn rewrite_table() {
        let all = [NotEct, Ect1, Ect0, Ce];
        let table = |r: EcnRewrite| all.map(|e| r.rewrite(e));
        assert_eq!(table(EcnRewrite::Pass), [NotEct, Ect1, Ect0, Ce]);
        assert_eq!(table(EcnRewrite::Bleach), [NotEct; 4]);
        assert_eq!(table(EcnRewrite::CeOnly), [NotEct, Ce, Ce, Ce]);
        assert_eq!(table(EcnRewrite::Ect1ToEct0), [NotEct, Ect0, Ect0, Ce]);
    }
}
