//! The smallest DNS client that NAT64 discovery and Happy Eyeballs need:
//! one A or AAAA question over UDP (RFC 1035), answers parsed sans-IO.
//!
//! Used only when a specific DNS server is named (an IPv6-only lab network's
//! DNS64, say); otherwise the system resolver answers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// Record types asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QType {
    /// IPv4 address record (RFC 1035).
    A = 1,
    /// IPv6 address record (RFC 3596).
    Aaaa = 28,
}

const CLASS_IN: u16 = 1;
const HEADER_LEN: usize = 12;
/// RFC 1035 §4.2.1: UDP answers fit in 512 bytes without EDNS.
const MAX_UDP_LEN: usize = 512;

/// Why a query or answer was refused.
#[derive(Debug, thiserror::Error)]
pub enum DnsError {
    #[error("name {0:?} is not a valid DNS name (labels of 1 to 63 bytes, 255 in all)")]
    /// The name cannot be encoded as DNS labels; carries the name.
    BadName(String),
    #[error("answer truncated or malformed at byte {0}")]
    /// The answer ends early or is malformed; carries the byte offset
    /// where parsing stopped.
    Malformed(usize),
    #[error("answer id {got:#06x} does not match query id {want:#06x}")]
    /// The answer's ID is not the query's (a stray or spoofed answer).
    IdMismatch {
        /// The query's ID.
        want: u16,
        /// The answer's ID.
        got: u16,
    },
    #[error("answer was truncated (TC bit); retry over TCP is not implemented")]
    /// The server set the TC bit: the answer did not fit 512 bytes.
    Truncated,
    #[error("server answered rcode {0} ({name})", name = rcode_name(*.0))]
    /// The server answered with a non-zero RCODE (3 is NXDOMAIN).
    Rcode(u8),
    #[error("no answer from {server} within {timeout:?} ({tries} tries)")]
    /// No answer after every retry.
    Timeout {
        /// The server asked.
        server: SocketAddr,
        /// How long each try waited.
        timeout: Duration,
        /// How many queries were sent.
        tries: u32,
    },
    #[error("DNS over UDP to {server}: {source}")]
    /// Sending or receiving failed.
    Io {
        /// The server asked.
        server: SocketAddr,
        #[source]
        /// The socket error.
        source: std::io::Error,
    },
}

fn rcode_name(code: u8) -> &'static str {
    match code {
        1 => "FORMERR",
        2 => "SERVFAIL",
        3 => "NXDOMAIN",
        4 => "NOTIMP",
        5 => "REFUSED",
        _ => "other",
    }
}

/// A recursive query for `name`'s records of `qtype`.
pub fn encode_query(id: u16, name: &str, qtype: QType) -> Result<Vec<u8>, DnsError> {
    let mut out = Vec::with_capacity(HEADER_LEN + name.len() + 6);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&0x0100u16.to_be_bytes()); // RD
    out.extend_from_slice(&1u16.to_be_bytes()); // QDCOUNT
    out.extend_from_slice(&[0; 6]); // AN, NS, AR counts
    let trimmed = name.strip_suffix('.').unwrap_or(name);
    if trimmed.is_empty() || trimmed.len() > 253 {
        return Err(DnsError::BadName(name.to_string()));
    }
    for label in trimmed.split('.') {
        let len = u8::try_from(label.len())
            .ok()
            .filter(|l| (1..=63).contains(l))
            .ok_or_else(|| DnsError::BadName(name.to_string()))?;
        out.push(len);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    out.extend_from_slice(&(qtype as u16).to_be_bytes());
    out.extend_from_slice(&CLASS_IN.to_be_bytes());
    Ok(out)
}

fn be16(b: &[u8], at: usize) -> Result<u16, DnsError> {
    b.get(at..at + 2)
        .map(|s| u16::from_be_bytes([s[0], s[1]]))
        .ok_or(DnsError::Malformed(at))
}

/// Skips a possibly compressed name; returns the offset after it.
fn skip_name(b: &[u8], mut at: usize) -> Result<usize, DnsError> {
    loop {
        let len = *b.get(at).ok_or(DnsError::Malformed(at))?;
        match len {
            0 => return Ok(at + 1),
            l if l & 0xc0 == 0xc0 => {
                // A pointer ends the name in this position.
                b.get(at + 1).ok_or(DnsError::Malformed(at))?;
                return Ok(at + 2);
            }
            l if l & 0xc0 != 0 => return Err(DnsError::Malformed(at)),
            l => at += 1 + usize::from(l),
        }
    }
}

/// The A and AAAA addresses in the answer section of a response to query
/// `id`. Other record types (CNAMEs on the way) are skipped.
pub fn parse_answer(id: u16, b: &[u8]) -> Result<Vec<IpAddr>, DnsError> {
    let got = be16(b, 0)?;
    if got != id {
        return Err(DnsError::IdMismatch { want: id, got });
    }
    let flags = be16(b, 2)?;
    if flags & 0x8000 == 0 {
        return Err(DnsError::Malformed(2));
    }
    if flags & 0x0200 != 0 {
        return Err(DnsError::Truncated);
    }
    let rcode = (flags & 0x000f) as u8;
    if rcode != 0 {
        return Err(DnsError::Rcode(rcode));
    }
    let qdcount = be16(b, 4)?;
    let ancount = be16(b, 6)?;
    let mut at = HEADER_LEN;
    for _ in 0..qdcount {
        at = skip_name(b, at)? + 4;
    }
    let mut addrs = Vec::new();
    for _ in 0..ancount {
        at = skip_name(b, at)?;
        let rtype = be16(b, at)?;
        let class = be16(b, at + 2)?;
        let rdlen = usize::from(be16(b, at + 8)?);
        let rdata = b
            .get(at + 10..at + 10 + rdlen)
            .ok_or(DnsError::Malformed(at + 10))?;
        match (rtype, class, rdlen) {
            (1, CLASS_IN, 4) => {
                let o: [u8; 4] = rdata.try_into().map_err(|_| DnsError::Malformed(at))?;
                addrs.push(IpAddr::V4(Ipv4Addr::from(o)));
            }
            (28, CLASS_IN, 16) => {
                let o: [u8; 16] = rdata.try_into().map_err(|_| DnsError::Malformed(at))?;
                addrs.push(IpAddr::V6(Ipv6Addr::from(o)));
            }
            _ => {}
        }
        at += 10 + rdlen;
    }
    Ok(addrs)
}

/// Asks `server` for `name`'s `qtype` records: up to 3 tries of `timeout`.
pub async fn query(
    server: SocketAddr,
    name: &str,
    qtype: QType,
    timeout: Duration,
) -> Result<Vec<IpAddr>, DnsError> {
    const TRIES: u32 = 3;
    let io = |source| DnsError::Io { server, source };
    let bind: SocketAddr = if server.is_ipv6() {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    };
    let socket = tokio::net::UdpSocket::bind(bind).await.map_err(io)?;
    socket.connect(server).await.map_err(io)?;
    // The id only has to tell our answer from strays; the low bits of the
    // clock and the port are enough for that.
    let id = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
        ^ u32::from(socket.local_addr().map_err(io)?.port())) as u16;
    let message = encode_query(id, name, qtype)?;
    let mut buf = [0u8; MAX_UDP_LEN];
    for _ in 0..TRIES {
        socket.send(&message).await.map_err(io)?;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match tokio::time::timeout_at(deadline, socket.recv(&mut buf)).await {
                Err(_) => break,
                Ok(Err(e)) => return Err(io(e)),
                Ok(Ok(n)) => match parse_answer(id, &buf[..n]) {
                    Err(DnsError::IdMismatch { .. }) => continue,
                    other => return other,
                },
            }
        }
    }
    Err(DnsError::Timeout {
        server,
        timeout,
        tries: TRIES,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The query for ipv4only.arpa AAAA with id 0x1234, byte for byte.
    const QUERY: [u8; 31] = [
        0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // header
        8, b'i', b'p', b'v', b'4', b'o', b'n', b'l', b'y', 4, b'a', b'r', b'p', b'a', 0, //
        0x00, 0x1c, 0x00, 0x01, // AAAA IN
    ];

    /// A DNS64 answer: the query echoed, then two AAAA records whose names
    /// point back at the question (0xc00c), 64:ff9b::c000:aa and ::c000:ab.
    fn answer() -> Vec<u8> {
        let mut b = QUERY.to_vec();
        b[2] = 0x81; // QR, RD
        b[3] = 0x80; // RA
        b[7] = 2; // ANCOUNT
        for last in [0xaa, 0xab] {
            b.extend_from_slice(&[0xc0, 0x0c, 0x00, 0x1c, 0x00, 0x01]);
            b.extend_from_slice(&[0, 0, 0x0e, 0x10, 0, 16]); // TTL 3600, 16 bytes
            b.extend_from_slice(&[0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0]);
            b.extend_from_slice(&[0xc0, 0x00, 0x00, last]);
        }
        b
    }

    #[test]
    fn encodes_the_query_bytes() {
        assert_eq!(
            encode_query(0x1234, "ipv4only.arpa", QType::Aaaa).unwrap(),
            QUERY
        );
        assert_eq!(
            encode_query(0x1234, "ipv4only.arpa.", QType::Aaaa).unwrap(),
            QUERY
        );
        let a = encode_query(1, "example.com", QType::A).unwrap();
        assert_eq!(&a[a.len() - 4..], &[0, 1, 0, 1]);
    }

    #[test]
    fn refuses_bad_names() {
        for name in ["", ".", "a..b", &"x".repeat(64), &"a.".repeat(130)] {
            assert!(
                matches!(encode_query(1, name, QType::A), Err(DnsError::BadName(_))),
                "{name:?}"
            );
        }
    }

    proptest::proptest! {
        /// Whatever a resolver (or anyone spoofing one) sends gets
        /// addresses or an error: any bytes, and a real answer with bytes
        /// changed, cut or added.
        #[test]
        fn no_answer_panics(
            noise in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
            edits in proptest::collection::vec(
                (proptest::prelude::any::<usize>(), proptest::prelude::any::<u8>()),
                0..8,
            ),
            cut in proptest::prelude::any::<usize>(),
        ) {
            let _ = parse_answer(0x1234, &noise);
            let mut b = answer();
            for (at, x) in edits {
                let i = at % b.len();
                b[i] = x;
            }
            let _ = parse_answer(0x1234, &b);
            b.truncate(cut % (b.len() + 1));
            let _ = parse_answer(0x1234, &b);
            b.extend_from_slice(&noise);
            let _ = parse_answer(0x1234, &b);
        }
    }

    #[test]
    fn parses_compressed_aaaa_answers() {
        let addrs = parse_answer(0x1234, &answer()).unwrap();
        assert_eq!(
            addrs,
            [
                "64:ff9b::c000:aa".parse::<IpAddr>().unwrap(),
                "64:ff9b::c000:ab".parse().unwrap()
            ]
        );
    }

    #[test]
    fn parses_a_records_after_a_cname() {
        let mut b = encode_query(7, "www.example", QType::A).unwrap();
        b[2] = 0x81;
        b[3] = 0x80;
        b[7] = 2;
        // CNAME www.example -> "web" + pointer to "example" (offset 16).
        b.extend_from_slice(&[0xc0, 0x0c, 0, 5, 0, 1, 0, 0, 0, 60, 0, 6]);
        b.extend_from_slice(&[3, b'w', b'e', b'b', 0xc0, 16]);
        b.extend_from_slice(&[0xc0, 0x29, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 7]);
        assert_eq!(
            parse_answer(7, &b).unwrap(),
            ["192.0.2.7".parse::<IpAddr>().unwrap()]
        );
    }

    #[test]
    fn errors_for_wrong_id_rcode_truncation_and_short_input() {
        let good = answer();
        assert!(matches!(
            parse_answer(0x9999, &good),
            Err(DnsError::IdMismatch { .. })
        ));
        let mut nx = good.clone();
        nx[3] = 0x83;
        assert!(matches!(parse_answer(0x1234, &nx), Err(DnsError::Rcode(3))));
        let mut tc = good.clone();
        tc[2] |= 0x02;
        assert!(matches!(
            parse_answer(0x1234, &tc),
            Err(DnsError::Truncated)
        ));
        for len in 0..good.len() {
            assert!(parse_answer(0x1234, &good[..len]).is_err(), "len {len}");
        }
        // A query (QR clear) is not an answer.
        assert!(parse_answer(0x1234, &QUERY).is_err());
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // Every prefix and every single-byte corruption of a valid answer.
        let good = answer();
        for i in 0..good.len() {
            for v in [0x00, 0x3f, 0x40, 0xc0, 0xff] {
                let mut b = good.clone();
                b[i] = v;
                let _ = parse_answer(0x1234, &b);
            }
        }
    }
}
