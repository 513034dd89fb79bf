//! Transport parameters: what each side declares in its handshake message
//! (docs/PROTOCOL.md §3.3).
//!
//! A sequence of `(id varint, length varint, value)` entries. Unknown ids are
//! skipped, which is how extensions are negotiated: a side advertises an
//! extension by sending its parameter, and may use the extension's frames
//! only once the peer advertised it too. Integer values are varints.

use crate::crypto::PacketCipher;
use crate::packet::ConnectionId;
use crate::stateless_reset::RESET_TOKEN_LEN;
use crate::varint::{self, DecodeError, Reader};
use std::time::Duration;

mod id {
    pub(super) const MAX_IDLE_TIMEOUT_MS: u64 = 0x01;
    pub(super) const MAX_ACK_DELAY_MS: u64 = 0x02;
    pub(super) const INITIAL_MAX_DATA: u64 = 0x03;
    pub(super) const INITIAL_MAX_STREAM_DATA: u64 = 0x04;
    pub(super) const INITIAL_MAX_STREAMS_BIDI: u64 = 0x05;
    pub(super) const INITIAL_MAX_STREAMS_UNI: u64 = 0x06;
    pub(super) const SOURCE_CID: u64 = 0x07;
    pub(super) const ORIGINAL_DCID: u64 = 0x08;
    pub(super) const MAX_UDP_PAYLOAD: u64 = 0x09;
    pub(super) const EARLY_DATA_ACCEPTED: u64 = 0x0a;
    pub(super) const PACKET_CIPHERS: u64 = 0x0b;
    pub(super) const STATELESS_RESET_TOKEN: u64 = 0x0c;
    /// Extensions take ids from 0x10: 0x14 stream priorities on the wire
    /// and 0x15 PMTU probing are set aside, and 0x11, FEC with repair
    /// symbols over GF(2^16), is retired (skipped like any unknown id), so
    /// a peer that still codes that way never gets symbols it would
    /// misread.
    pub(super) const MIN_ACK_DELAY_US: u64 = 0x12;
    /// Empty: this side takes REPAIR and REPAIRED frames, with repair
    /// symbols over GF(2^8) (PROTOCOL.md §6.6).
    pub(super) const FEC: u64 = 0x1a;
    /// The largest DATAGRAM frame this side takes, in bytes (RFC 9221
    /// uses 0x20 on QUIC's registry; Brisk numbers its own).
    pub(super) const MAX_DATAGRAM_FRAME_SIZE: u64 = 0x10;
    /// Migration (§7.4): how many of the peer's connection IDs this side
    /// keeps at once.
    pub(super) const ACTIVE_CID_LIMIT: u64 = 0x13;
    /// Client, with early data: its wall-clock time in ms since the Unix
    /// epoch, for the server's replay window.
    pub(super) const FIRST_FLIGHT_TIME_MS: u64 = 0x16;
    /// Client, with early data, empty: the early data ends its stream.
    pub(super) const EARLY_DATA_FIN: u64 = 0x17;
}

/// RFC 9000's bound on ack delays: `max_ack_delay` stays below it, and a
/// peer's ACK_FREQUENCY request may not exceed it.
pub(crate) const MAX_ACK_DELAY_LIMIT: Duration = Duration::from_millis(1 << 14);

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TransportParams {
    /// Zero disables the idle timeout.
    pub max_idle_timeout: Duration,
    /// The longest this side delays an acknowledgement.
    pub max_ack_delay: Duration,
    pub initial_max_data: u64,
    pub initial_max_stream_data: u64,
    pub initial_max_streams_bidi: u64,
    pub initial_max_streams_uni: u64,
    /// The connection ID in the sender's long header, repeated here so the
    /// handshake authenticates it.
    pub source_cid: ConnectionId,
    /// Server only: the destination ID of the client's first Initial.
    pub original_dcid: Option<ConnectionId>,
    pub max_udp_payload: u64,
    /// Server only: the early data in the client's first message was used.
    pub early_data_accepted: bool,
    /// Client: the 1-RTT ciphers it accepts, most preferred first. Server:
    /// the one it chose. A peer that sends no list speaks only
    /// ChaCha20-Poly1305; ids this side does not know are dropped.
    pub packet_ciphers: Vec<PacketCipher>,
    /// The shortest ack delay this side can keep to; announcing it means
    /// the peer may send ACK_FREQUENCY frames, asking for no less.
    pub min_ack_delay: Option<Duration>,
    /// Server only: the token that ends a stateless reset for its
    /// connection ID (`stateless_reset`), so a client learns at once that
    /// a restarted server no longer knows the connection.
    pub stateless_reset_token: Option<[u8; RESET_TOKEN_LEN]>,
    /// This side takes forward error correction frames (REPAIR, REPAIRED);
    /// either side sends them only when both announced it.
    pub fec: bool,
    /// The largest DATAGRAM frame (type, length and data) this side takes;
    /// `None` (or zero on the wire) means it takes none, and the peer must
    /// not send any.
    pub max_datagram_frame_size: Option<u64>,
    /// Migration (§7.4): how many of the peer's connection IDs this side
    /// keeps at once, at least 2; `None` means it takes no migration
    /// frames (NEW/RETIRE_CONNECTION_ID, PATH_CHALLENGE/RESPONSE).
    pub active_connection_id_limit: Option<u64>,
    /// Client, only in a first flight with early data: when it was sent,
    /// in ms since the Unix epoch by the client's clock, so the server can
    /// refuse a replay outside its window (`anti_replay`).
    pub first_flight_time_ms: Option<u64>,
    /// Client, only with early data: the early data is the whole stream
    /// (its FIN rides in the first flight).
    pub early_data_fin: bool,
}

impl Default for TransportParams {
    fn default() -> Self {
        TransportParams {
            max_idle_timeout: Duration::from_secs(30),
            max_ack_delay: Duration::from_millis(25),
            initial_max_data: 0,
            initial_max_stream_data: 0,
            initial_max_streams_bidi: 0,
            initial_max_streams_uni: 0,
            source_cid: ConnectionId::default(),
            original_dcid: None,
            max_udp_payload: 1200,
            early_data_accepted: false,
            packet_ciphers: vec![PacketCipher::ChaCha20Poly1305],
            min_ack_delay: None,
            stateless_reset_token: None,
            fec: false,
            max_datagram_frame_size: None,
            active_connection_id_limit: None,
            first_flight_time_ms: None,
            early_data_fin: false,
        }
    }
}

fn put_int(out: &mut Vec<u8>, id: u64, v: u64) {
    varint::write(out, id);
    varint::write(out, varint::size(v).unwrap_or(8) as u64);
    varint::write(out, v);
}

fn put_bytes(out: &mut Vec<u8>, id: u64, b: &[u8]) {
    varint::write(out, id);
    varint::write(out, b.len() as u64);
    out.extend_from_slice(b);
}

impl TransportParams {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        put_int(
            out,
            id::MAX_IDLE_TIMEOUT_MS,
            self.max_idle_timeout.as_millis() as u64,
        );
        put_int(
            out,
            id::MAX_ACK_DELAY_MS,
            self.max_ack_delay.as_millis() as u64,
        );
        put_int(out, id::INITIAL_MAX_DATA, self.initial_max_data);
        put_int(
            out,
            id::INITIAL_MAX_STREAM_DATA,
            self.initial_max_stream_data,
        );
        put_int(
            out,
            id::INITIAL_MAX_STREAMS_BIDI,
            self.initial_max_streams_bidi,
        );
        put_int(
            out,
            id::INITIAL_MAX_STREAMS_UNI,
            self.initial_max_streams_uni,
        );
        put_bytes(out, id::SOURCE_CID, self.source_cid.as_bytes());
        if let Some(c) = &self.original_dcid {
            put_bytes(out, id::ORIGINAL_DCID, c.as_bytes());
        }
        put_int(out, id::MAX_UDP_PAYLOAD, self.max_udp_payload);
        if self.early_data_accepted {
            put_bytes(out, id::EARLY_DATA_ACCEPTED, &[]);
        }
        let ciphers: Vec<u8> = self.packet_ciphers.iter().map(|c| c.id()).collect();
        put_bytes(out, id::PACKET_CIPHERS, &ciphers);
        if let Some(d) = self.min_ack_delay {
            put_int(out, id::MIN_ACK_DELAY_US, d.as_micros() as u64);
        }
        if let Some(t) = &self.stateless_reset_token {
            put_bytes(out, id::STATELESS_RESET_TOKEN, t);
        }
        if self.fec {
            put_bytes(out, id::FEC, &[]);
        }
        if let Some(m) = self.max_datagram_frame_size.filter(|&m| m > 0) {
            put_int(out, id::MAX_DATAGRAM_FRAME_SIZE, m);
        }
        if let Some(n) = self.active_connection_id_limit {
            put_int(out, id::ACTIVE_CID_LIMIT, n);
        }
        if let Some(t) = self.first_flight_time_ms {
            put_int(out, id::FIRST_FLIGHT_TIME_MS, t);
        }
        if self.early_data_fin {
            put_bytes(out, id::EARLY_DATA_FIN, &[]);
        }
    }

    /// Parses a whole parameter block; a parameter given twice, a value
    /// that does not fill its length, or a missing source CID is an error.
    pub(crate) fn parse(b: &[u8]) -> Result<Self, DecodeError> {
        let mut p = TransportParams::default();
        let mut seen = 0u64;
        let mut source_seen = false;
        let mut r = Reader::new(b);
        while !r.is_empty() {
            let pid = r.varint()?;
            let len = r.varint_len()?;
            let mut v = Reader::new(r.bytes(len)?);
            if pid < 64 {
                if seen & (1 << pid) != 0 {
                    return Err(DecodeError::Malformed("duplicate transport parameter"));
                }
                seen |= 1 << pid;
            }
            let int = |v: &mut Reader<'_>| -> Result<u64, DecodeError> {
                let x = v.varint()?;
                if v.is_empty() {
                    Ok(x)
                } else {
                    Err(DecodeError::Malformed("parameter length"))
                }
            };
            let cid = |v: &Reader<'_>| {
                ConnectionId::new(v.rest()).ok_or(DecodeError::Malformed("connection id length"))
            };
            match pid {
                id::MAX_IDLE_TIMEOUT_MS => p.max_idle_timeout = Duration::from_millis(int(&mut v)?),
                id::MAX_ACK_DELAY_MS => {
                    let d = Duration::from_millis(int(&mut v)?);
                    if d >= MAX_ACK_DELAY_LIMIT {
                        return Err(DecodeError::Malformed("max_ack_delay over 2^14 ms"));
                    }
                    p.max_ack_delay = d;
                }
                id::INITIAL_MAX_DATA => p.initial_max_data = int(&mut v)?,
                id::INITIAL_MAX_STREAM_DATA => p.initial_max_stream_data = int(&mut v)?,
                id::INITIAL_MAX_STREAMS_BIDI => p.initial_max_streams_bidi = int(&mut v)?,
                id::INITIAL_MAX_STREAMS_UNI => p.initial_max_streams_uni = int(&mut v)?,
                id::SOURCE_CID => {
                    p.source_cid = cid(&v)?;
                    source_seen = true;
                }
                id::ORIGINAL_DCID => p.original_dcid = Some(cid(&v)?),
                id::MAX_UDP_PAYLOAD => {
                    p.max_udp_payload = int(&mut v)?;
                    if p.max_udp_payload < 1200 {
                        return Err(DecodeError::Malformed("max_udp_payload under 1200"));
                    }
                }
                id::EARLY_DATA_ACCEPTED => p.early_data_accepted = true,
                id::FEC => {
                    if !v.is_empty() {
                        return Err(DecodeError::Malformed("fec parameter with a value"));
                    }
                    p.fec = true;
                }
                id::MAX_DATAGRAM_FRAME_SIZE => {
                    p.max_datagram_frame_size = Some(int(&mut v)?).filter(|&m| m > 0);
                }
                id::ACTIVE_CID_LIMIT => {
                    let n = int(&mut v)?;
                    if n < 2 {
                        return Err(DecodeError::Malformed("active_connection_id_limit under 2"));
                    }
                    p.active_connection_id_limit = Some(n);
                }
                id::PACKET_CIPHERS => {
                    if v.is_empty() {
                        return Err(DecodeError::Malformed("empty packet cipher list"));
                    }
                    p.packet_ciphers = v
                        .rest()
                        .iter()
                        .filter_map(|&b| PacketCipher::from_id(b))
                        .collect();
                }
                id::FIRST_FLIGHT_TIME_MS => p.first_flight_time_ms = Some(int(&mut v)?),
                id::EARLY_DATA_FIN => {
                    if !v.is_empty() {
                        return Err(DecodeError::Malformed("early_data_fin with a value"));
                    }
                    p.early_data_fin = true;
                }
                id::MIN_ACK_DELAY_US => {
                    p.min_ack_delay = Some(Duration::from_micros(int(&mut v)?));
                }
                id::STATELESS_RESET_TOKEN => {
                    let t = v
                        .rest()
                        .try_into()
                        .map_err(|_| DecodeError::Malformed("stateless reset token length"))?;
                    p.stateless_reset_token = Some(t);
                }
                _ => {}
            }
        }
        if !source_seen {
            return Err(DecodeError::Malformed("missing source connection id"));
        }
        if p.min_ack_delay.is_some_and(|min| min > p.max_ack_delay) {
            return Err(DecodeError::Malformed("min_ack_delay above max_ack_delay"));
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TransportParams {
        TransportParams {
            max_idle_timeout: Duration::from_secs(10),
            initial_max_data: 1 << 20,
            initial_max_stream_data: 1 << 16,
            initial_max_streams_bidi: 100,
            initial_max_streams_uni: 3,
            source_cid: ConnectionId::new(&[1, 2, 3]).unwrap(),
            original_dcid: Some(ConnectionId::new(&[9; 8]).unwrap()),
            early_data_accepted: true,
            packet_ciphers: vec![PacketCipher::Aes256Gcm, PacketCipher::ChaCha20Poly1305],
            min_ack_delay: Some(Duration::from_micros(1_000)),
            stateless_reset_token: Some([0x5a; RESET_TOKEN_LEN]),
            active_connection_id_limit: Some(4),
            ..TransportParams::default()
        }
    }

    #[test]
    fn packet_ciphers_default_to_chacha_and_skip_unknown_ids() {
        let p = TransportParams::parse(&[0x07, 0x01, 0xaa]).unwrap();
        assert_eq!(p.packet_ciphers, vec![PacketCipher::ChaCha20Poly1305]);
        // AES-256-GCM (2), an unknown id (9), ChaCha20-Poly1305 (1).
        let p = TransportParams::parse(&[0x07, 0x01, 0xaa, 0x0b, 0x03, 0x02, 0x09, 0x01]).unwrap();
        assert_eq!(
            p.packet_ciphers,
            vec![PacketCipher::Aes256Gcm, PacketCipher::ChaCha20Poly1305]
        );
        let p = TransportParams::parse(&[0x07, 0x01, 0xaa, 0x0b, 0x01, 0x09]).unwrap();
        assert!(
            p.packet_ciphers.is_empty(),
            "nothing in common is for the handshake to refuse"
        );
        assert!(TransportParams::parse(&[0x07, 0x01, 0xaa, 0x0b, 0x00]).is_err());
    }

    #[test]
    fn round_trips_and_skips_unknown_ids() {
        let mut b = Vec::new();
        sample().emit(&mut b);
        // A parameter of a set-aside extension (id 0x14, 2 bytes) is ignored.
        b.extend_from_slice(&[0x14, 0x02, 0xab, 0xcd]);
        assert_eq!(TransportParams::parse(&b).unwrap(), sample());
    }

    fn encoded(p: &TransportParams) -> Vec<u8> {
        let mut b = Vec::new();
        p.emit(&mut b);
        b
    }

    #[test]
    fn fec_is_an_empty_parameter() {
        let on = TransportParams {
            fec: true,
            ..sample()
        };
        let mut b = Vec::new();
        on.emit(&mut b);
        assert_eq!(TransportParams::parse(&b).unwrap(), on);
        // The parameter adds exactly its two bytes: id 0x1a, length 0.
        assert_eq!(b.len(), encoded(&sample()).len() + 2);
        assert!(b.windows(2).any(|w| w == [0x1a, 0x00]));
        assert!(TransportParams::parse(&[0x07, 0x00, 0x1a, 0x01, 0x01]).is_err());
        // The retired id of FEC over GF(2^16) no longer turns it on.
        assert!(
            !TransportParams::parse(&[0x07, 0x00, 0x11, 0x00])
                .unwrap()
                .fec
        );
    }

    #[test]
    fn max_datagram_frame_size_is_an_integer_and_zero_means_none() {
        let on = TransportParams {
            max_datagram_frame_size: Some(1200),
            ..sample()
        };
        let mut b = Vec::new();
        on.emit(&mut b);
        assert_eq!(TransportParams::parse(&b).unwrap(), on);
        // id 0x10, length 2, 1200 as a 2-byte varint.
        assert_eq!(b.len(), encoded(&sample()).len() + 4);
        assert!(b.windows(4).any(|w| w == [0x10, 0x02, 0x44, 0xb0]));
        let zero = TransportParams::parse(&[0x07, 0x00, 0x10, 0x01, 0x00]).unwrap();
        assert_eq!(zero.max_datagram_frame_size, None);
        assert!(TransportParams::parse(&[0x07, 0x00, 0x10, 0x00]).is_err());
    }

    #[test]
    fn first_flight_time_is_an_integer_in_ms() {
        let on = TransportParams {
            first_flight_time_ms: Some(1_795_000_000_000),
            ..sample()
        };
        let mut b = Vec::new();
        on.emit(&mut b);
        assert_eq!(TransportParams::parse(&b).unwrap(), on);
        // id 0x16, length 8, the time as an 8-byte varint.
        assert!(b.ends_with(&[0x16, 0x08, 0xc0, 0x00, 0x01, 0xa1, 0xee, 0x56, 0x5e, 0x00]));
        assert_eq!(
            TransportParams::parse(&[0x07, 0x00, 0x16, 0x01, 0x05])
                .unwrap()
                .first_flight_time_ms,
            Some(5)
        );
        assert!(TransportParams::parse(&[0x07, 0x00, 0x16, 0x00]).is_err());
    }

    #[test]
    fn early_data_fin_is_an_empty_parameter() {
        let on = TransportParams {
            early_data_fin: true,
            ..sample()
        };
        let mut b = Vec::new();
        on.emit(&mut b);
        assert_eq!(TransportParams::parse(&b).unwrap(), on);
        assert!(b.ends_with(&[0x17, 0x00]));
        assert!(TransportParams::parse(&[0x07, 0x00, 0x17, 0x01, 0x01]).is_err());
    }

    #[test]
    fn fixed_bytes() {
        let p = TransportParams::parse(&[0x01, 0x02, 0x40, 0x64, 0x07, 0x01, 0xaa]).unwrap();
        assert_eq!(p.max_idle_timeout, Duration::from_millis(100));
        assert_eq!(p.source_cid.as_bytes(), &[0xaa]);
        assert_eq!(
            p.max_ack_delay,
            Duration::from_millis(25),
            "default when absent"
        );
    }

    #[test]
    fn rejects_bad_blocks() {
        // Missing source CID.
        assert!(TransportParams::parse(&[0x01, 0x01, 0x05]).is_err());
        // Duplicate parameter.
        assert!(TransportParams::parse(&[0x07, 0x00, 0x07, 0x00]).is_err());
        // Value shorter than its length / trailing bytes in an integer.
        assert!(TransportParams::parse(&[0x07, 0x00, 0x01, 0x02, 0x05]).is_err());
        assert!(TransportParams::parse(&[0x07, 0x00, 0x01, 0x02, 0x05, 0x05]).is_err());
        // A stateless reset token of 15 bytes.
        let mut short_token = vec![0x07, 0x00, 0x0c, 15];
        short_token.extend_from_slice(&[1; 15]);
        assert!(TransportParams::parse(&short_token).is_err());
        // max_udp_payload under 1200.
        assert!(TransportParams::parse(&[0x07, 0x00, 0x09, 0x01, 0x05]).is_err());
        // min_ack_delay of 30 ms above the default 25 ms max_ack_delay, and
        // the same with a max_ack_delay of 40 ms.
        let min_30ms = [0x07, 0x00, 0x12, 0x04, 0x80, 0x00, 0x75, 0x30];
        assert!(TransportParams::parse(&min_30ms).is_err());
        let with_max = [&min_30ms[..], &[0x02, 0x01, 40]].concat();
        assert_eq!(
            TransportParams::parse(&with_max).unwrap().min_ack_delay,
            Some(Duration::from_millis(30))
        );
        for n in 0..20 {
            let mut b = Vec::new();
            sample().emit(&mut b);
            b.truncate(n);
            let _ = TransportParams::parse(&b);
        }
    }
}
