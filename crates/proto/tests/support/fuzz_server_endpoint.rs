//! Arbitrary datagrams to a server endpoint: garbage, Initials, short
//! headers for unknown connections. Input: datagrams separated by their
//! 2-byte length prefixes. Nothing may panic, and the endpoint must keep
//! no state for datagrams that do not complete a handshake message.

use brisk_time::Instant;
use brisk_wire::Ecn;
use std::time::Duration;

/// One input: datagrams, each a 2-byte length, an ECN byte and the bytes.
pub fn run(data: &[u8]) {
    let mut server = crate::common::server_endpoint();
    let mut now = Instant::ZERO;
    let mut rest = data;
    while rest.len() >= 3 {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]])) % 1500;
        let ecn = Ecn::from_bits(rest[2]);
        rest = &rest[3..];
        let (d, tail) = rest.split_at(len.min(rest.len()));
        rest = tail;
        server.handle_datagram(now, crate::common::CLIENT, ecn, d);
        let mut d = Vec::new();
        while server.poll_transmit(now, 1, &mut d).is_some() {
            d.clear();
        }
        while server.poll_event().is_some() {}
        now += Duration::from_millis(3);
        server.handle_timeout(now);
    }
    assert!(server.handles().count() as u64 <= server.stats().connections_accepted);
}
