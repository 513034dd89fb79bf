//! The TCP session state machine of a stateful NAT64 (RFC 6146 §3.5.2.2).
//!
//! The NAT does not track sequence numbers; it watches SYN, FIN and RST
//! from each side to pick a lifetime: short (transitory, 4 min by default)
//! while a connection opens or closes, long (established, 2 h 4 min) while
//! it is up. The state changes follow the RFC's description, with the
//! same reading of its corner cases as Jool: in V4 INIT only an IPv6 SYN
//! matters, a FIN moves ESTABLISHED on without touching the lifetime, and
//! after both FINs nothing but the timer ends the session.

use crate::translate::TcpControl;

/// Which side of the NAT a packet came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    /// The IPv4 (outside) side.
    V4,
    /// The IPv6 (inside) side.
    V6,
}

/// RFC 6146's TCP session states (CLOSED is the absence of a session).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpState {
    /// An IPv4 SYN opened the session; waiting for the IPv6 SYN.
    V4Init,
    /// An IPv6 SYN opened the session; waiting for the IPv4 SYN.
    V6Init,
    /// Both SYNs seen: the long lifetime applies.
    Established,
    /// The IPv4 side sent FIN.
    V4FinRcv,
    /// The IPv6 side sent FIN.
    V6FinRcv,
    /// Both sides sent FIN; the session lives out its transitory lifetime.
    V4FinV6FinRcv,
    /// A RST was seen, or the established lifetime ran out: any non-RST
    /// packet revives the session, otherwise it ends.
    Trans,
}

/// What a packet does to a session's lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// Leave the expiry time alone.
    Keep,
    /// Expire after the established timeout from now.
    Established,
    /// Expire after the transitory timeout from now.
    Transitory,
}

impl TcpState {
    /// The state of a session a SYN from `side` creates (with a transitory
    /// lifetime).
    pub fn opened_by(side: Side) -> TcpState {
        match side {
            Side::V4 => TcpState::V4Init,
            Side::V6 => TcpState::V6Init,
        }
    }

    /// The next state and lifetime after a packet from `side`.
    pub fn on_packet(self, side: Side, tcp: TcpControl) -> (TcpState, Lifetime) {
        use TcpState::*;
        match (self, side) {
            (V4Init, Side::V6) if tcp.syn => (Established, Lifetime::Established),
            (V6Init, Side::V4) if tcp.syn => (Established, Lifetime::Established),
            (V6Init, Side::V6) if tcp.syn => (V6Init, Lifetime::Transitory),
            (V4Init | V6Init, _) => (self, Lifetime::Keep),
            (Established, _) if tcp.rst => (Trans, Lifetime::Transitory),
            (Established, Side::V4) if tcp.fin => (V4FinRcv, Lifetime::Keep),
            (Established, Side::V6) if tcp.fin => (V6FinRcv, Lifetime::Keep),
            (Established, _) => (Established, Lifetime::Established),
            (V4FinRcv, Side::V6) if tcp.fin => (V4FinV6FinRcv, Lifetime::Transitory),
            (V6FinRcv, Side::V4) if tcp.fin => (V4FinV6FinRcv, Lifetime::Transitory),
            (V4FinRcv | V6FinRcv, _) => (self, Lifetime::Established),
            (V4FinV6FinRcv, _) => (self, Lifetime::Keep),
            (Trans, _) if tcp.rst => (Trans, Lifetime::Keep),
            (Trans, _) => (Established, Lifetime::Established),
        }
    }

    /// What happens when the lifetime runs out: a connection that was up
    /// gets a transitory grace period (RFC 6146 would probe it first; this
    /// NAT sends no probes), anything else ends (`None`).
    pub fn on_expiry(self) -> Option<TcpState> {
        match self {
            TcpState::Established | TcpState::V4FinRcv | TcpState::V6FinRcv => {
                Some(TcpState::Trans)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYN: TcpControl = TcpControl {
        syn: true,
        fin: false,
        rst: false,
    };
    const FIN: TcpControl = TcpControl {
        syn: false,
        fin: true,
        rst: false,
    };
    const RST: TcpControl = TcpControl {
        syn: false,
        fin: false,
        rst: true,
    };
    const ACK: TcpControl = TcpControl {
        syn: false,
        fin: false,
        rst: false,
    };

    #[test]
    fn outbound_connection_opens_and_closes() {
        let s = TcpState::opened_by(Side::V6);
        assert_eq!(s, TcpState::V6Init);
        assert_eq!(
            s.on_packet(Side::V6, SYN),
            (TcpState::V6Init, Lifetime::Transitory)
        );
        assert_eq!(
            s.on_packet(Side::V4, ACK),
            (TcpState::V6Init, Lifetime::Keep)
        );
        let (s, l) = s.on_packet(Side::V4, SYN);
        assert_eq!((s, l), (TcpState::Established, Lifetime::Established));
        assert_eq!(
            s.on_packet(Side::V6, ACK),
            (TcpState::Established, Lifetime::Established)
        );
        let (s, l) = s.on_packet(Side::V6, FIN);
        assert_eq!((s, l), (TcpState::V6FinRcv, Lifetime::Keep));
        assert_eq!(
            s.on_packet(Side::V6, FIN),
            (TcpState::V6FinRcv, Lifetime::Established)
        );
        let (s, l) = s.on_packet(Side::V4, FIN);
        assert_eq!((s, l), (TcpState::V4FinV6FinRcv, Lifetime::Transitory));
        assert_eq!(s.on_packet(Side::V6, ACK), (s, Lifetime::Keep));
        assert_eq!(s.on_expiry(), None);
    }

    #[test]
    fn inbound_open_needs_the_ipv6_syn() {
        let s = TcpState::opened_by(Side::V4);
        assert_eq!(
            s.on_packet(Side::V4, SYN),
            (TcpState::V4Init, Lifetime::Keep)
        );
        assert_eq!(
            s.on_packet(Side::V6, ACK),
            (TcpState::V4Init, Lifetime::Keep)
        );
        assert_eq!(
            s.on_packet(Side::V6, SYN),
            (TcpState::Established, Lifetime::Established)
        );
        assert_eq!(s.on_expiry(), None);
    }

    #[test]
    fn reset_and_revival() {
        let (s, l) = TcpState::Established.on_packet(Side::V4, RST);
        assert_eq!((s, l), (TcpState::Trans, Lifetime::Transitory));
        assert_eq!(
            s.on_packet(Side::V6, RST),
            (TcpState::Trans, Lifetime::Keep)
        );
        assert_eq!(
            s.on_packet(Side::V6, ACK),
            (TcpState::Established, Lifetime::Established)
        );
        assert_eq!(TcpState::Established.on_expiry(), Some(TcpState::Trans));
        assert_eq!(TcpState::Trans.on_expiry(), None);
    }
}
