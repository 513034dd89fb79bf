//! Arbitrary input to an established client connection, two ways: raw
//! datagrams (which must fail authentication) and payloads handed to the
//! frame handlers as if they had authenticated, which exercises ACK, STREAM,
//! flow-control and close processing with hostile values. Each record is
//! a mode byte, a 2-byte length and the bytes. Nothing may panic.

use brisk_wire::Ecn;
use std::time::Duration;

/// One input: records of a mode byte, a 2-byte length and the bytes.
pub fn run(data: &[u8]) {
    let (mut client, mut server, h, mut now) = crate::common::connected();
    let mut rest = data;
    while rest.len() >= 3 {
        let mode = rest[0];
        let len = usize::from(u16::from_be_bytes([rest[1], rest[2]])) % 1500;
        rest = &rest[3..];
        let (d, tail) = rest.split_at(len.min(rest.len()));
        rest = tail;
        match mode % 3 {
            0 => client.handle_datagram(now, crate::common::SERVER, Ecn::from_bits(mode >> 2), d),
            1 => {
                if let Some(c) = client.connection_mut(h) {
                    c.fuzz_authenticated_payload(now, d);
                }
            }
            _ => {
                now += Duration::from_millis(u64::from(mode));
                client.handle_timeout(now);
            }
        }
        crate::common::exchange(&mut client, &mut server, &mut now, 3);
        if let Some(c) = client.connection(h) {
            let _ = c.stats();
            let _ = c.poll_timeout();
        }
    }
}
