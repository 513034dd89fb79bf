//! DNS64 (RFC 6147) for the names of a test scenario.
//!
//! The IPv6-only host asks for AAAA records. A name with native IPv6
//! addresses gets them; a name with only IPv4 addresses gets AAAA records
//! synthesized by embedding each IPv4 address in the NAT64 prefix, so the
//! host connects over IPv6 and the NAT64 carries the traffic. A queries are
//! answered too (a dual-stack-aware app may ask), and `ipv4only.arpa`
//! always resolves to 192.0.0.170 and 192.0.0.171, synthesized for AAAA,
//! so hosts can discover the prefix (RFC 7050, RFC 8880).
//!
//! The responder is authoritative for its zone and answers alone: unknown
//! names are NXDOMAIN, known names without records of the asked type are
//! NOERROR with no answers. Broken queries get FORMERR when their header
//! can be read and nothing otherwise; responses are never answered (no
//! loops). EDNS(0) is honoured for the response size (up to 1232 bytes,
//! 512 without EDNS; larger answers are truncated with TC set).
//!
//! Not done: reverse (PTR) mapping of synthesized addresses (RFC 6147
//! §5.3.1), DNSSEC, and RFC 6147's optional exclusion of special IPv4
//! ranges (only addresses the NAT64 would refuse anyway are skipped:
//! unspecified, loopback, multicast, broadcast).

use crate::dns::{
    CLASS_IN, DnsError, Header, Message, Name, Question, RCODE_FORMERR, RCODE_NOERROR,
    RCODE_NOTIMP, RCODE_NXDOMAIN, RCODE_REFUSED, RData, Record, TYPE_A, TYPE_AAAA, TYPE_ANY,
    TYPE_OPT,
};
use brisk_wire::Nat64Prefix;
use brisk_wire::nat64_prefix::{IPV4ONLY_ADDRS, IPV4ONLY_NAME};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// TTL of zone records unless [`Dns64::with_ttl_s`] says otherwise: short,
/// so a scenario that changes addresses is seen quickly.
pub const DEFAULT_TTL_S: u32 = 60;
/// RFC 6147 §5.1.7: with no SOA to bound it, a synthesized AAAA record
/// lives at most 600 seconds.
pub const MAX_SYNTHESIZED_TTL_S: u32 = 600;
/// RFC 1035 §4.2.1: the UDP response limit without EDNS.
const PLAIN_UDP_LIMIT: usize = 512;
/// The largest EDNS buffer honoured (the 2020 DNS flag day value, safe
/// from fragmentation).
const EDNS_UDP_LIMIT: u16 = 1232;
/// RFC 6891: BADVERS is extended rcode 16, whose upper 8 bits are 1.
const BADVERS_HIGH_BITS: u32 = 1;

/// What a query's EDNS OPT record asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Edns {
    udp_size: u16,
    version: u8,
}

/// The answer to one question, before it becomes a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The response code (`RCODE_NOERROR` with no records: the name exists but
    /// has no record of that type).
    pub rcode: u8,
    /// Record data with its TTL in seconds, all for the question's name.
    pub records: Vec<(RData, u32)>,
}

/// A DNS64 responder for a fixed set of names.
#[derive(Debug, Clone)]
pub struct Dns64 {
    prefix: Nat64Prefix,
    zone: BTreeMap<Name, Vec<IpAddr>>,
    ttl_s: u32,
}

impl Dns64 {
    /// A responder for `zone` (names like `server.brisk.test`, case and
    /// trailing dot ignored). An entry for `ipv4only.arpa` is ignored: that
    /// name always has its RFC 8880 addresses.
    pub fn new(prefix: Nat64Prefix, zone: BTreeMap<String, Vec<IpAddr>>) -> Result<Self, DnsError> {
        let zone = zone
            .into_iter()
            .map(|(name, addrs)| Ok((Name::from_dotted(&name)?.to_lowercase(), addrs)))
            .collect::<Result<_, DnsError>>()?;
        Ok(Dns64 {
            prefix,
            zone,
            ttl_s: DEFAULT_TTL_S,
        })
    }

    /// Sets the TTL of zone records.
    pub fn with_ttl_s(mut self, ttl_s: u32) -> Self {
        self.ttl_s = ttl_s;
        self
    }

    /// The prefix AAAA records are synthesized under.
    pub fn prefix(&self) -> Nat64Prefix {
        self.prefix
    }

    /// The records for `name` and `qtype`, synthesizing AAAA from A where
    /// the name has no native IPv6 address.
    pub fn lookup(&self, name: &Name, qtype: u16) -> Answer {
        let key = name.to_lowercase();
        let ipv4only = IPV4ONLY_ADDRS.map(IpAddr::V4);
        let addrs: &[IpAddr] = if key == ipv4only_name() {
            &ipv4only
        } else {
            match self.zone.get(&key) {
                Some(addrs) => addrs,
                None => {
                    return Answer {
                        rcode: RCODE_NXDOMAIN,
                        records: Vec::new(),
                    };
                }
            }
        };
        let v4: Vec<Ipv4Addr> = addrs
            .iter()
            .filter_map(|a| match a {
                IpAddr::V4(a) => Some(*a),
                IpAddr::V6(_) => None,
            })
            .collect();
        // RFC 6147 §5.1.4: IPv4-mapped AAAA records (::ffff:0:0/96) are
        // useless to an IPv6-only host; treat them as absent.
        let v6: Vec<Ipv6Addr> = addrs
            .iter()
            .filter_map(|a| match a {
                IpAddr::V6(a) if a.to_ipv4_mapped().is_none() => Some(*a),
                _ => None,
            })
            .collect();
        let a_records = || v4.iter().map(|a| (RData::A(*a), self.ttl_s));
        let aaaa_records = || -> Vec<(RData, u32)> {
            if !v6.is_empty() {
                return v6.iter().map(|a| (RData::Aaaa(*a), self.ttl_s)).collect();
            }
            let ttl = self.ttl_s.min(MAX_SYNTHESIZED_TTL_S);
            v4.iter()
                .filter(|a| synthesizable(**a))
                .map(|a| (RData::Aaaa(self.prefix.embed(*a)), ttl))
                .collect()
        };
        let records = match qtype {
            TYPE_A => a_records().collect(),
            TYPE_AAAA => aaaa_records(),
            TYPE_ANY => a_records().chain(aaaa_records()).collect(),
            _ => Vec::new(),
        };
        Answer {
            rcode: RCODE_NOERROR,
            records,
        }
    }

    /// The response datagram for a query datagram, or `None` when there is
    /// nothing to answer (too short for a header, or not a query).
    pub fn handle_query(&self, query: &[u8]) -> Option<Vec<u8>> {
        let header = Header::parse(query).ok()?;
        if header.qr {
            return None;
        }
        let Ok(msg) = Message::parse(query) else {
            return respond(&header, None, RCODE_FORMERR, Vec::new(), None);
        };
        let Ok(edns) = edns_of(&msg) else {
            return respond(&header, None, RCODE_FORMERR, Vec::new(), None);
        };
        let question = match msg.questions.as_slice() {
            [q] => q,
            _ => return respond(&header, None, RCODE_FORMERR, Vec::new(), edns),
        };
        if header.opcode != 0 {
            return respond(&header, Some(question), RCODE_NOTIMP, Vec::new(), edns);
        }
        if edns.is_some_and(|e| e.version != 0) {
            // BADVERS: the extended rcode lives in the OPT record.
            return respond(&header, Some(question), RCODE_NOERROR, Vec::new(), edns);
        }
        if question.qclass != CLASS_IN && question.qclass != TYPE_ANY {
            return respond(&header, Some(question), RCODE_REFUSED, Vec::new(), edns);
        }
        let answer = self.lookup(&question.name, question.qtype);
        respond(&header, Some(question), answer.rcode, answer.records, edns)
    }
}

fn ipv4only_name() -> Name {
    Name::from_dotted(IPV4ONLY_NAME).unwrap_or_default()
}

/// Whether an IPv4 address is worth a synthesized AAAA: the NAT64 drops
/// traffic to these.
fn synthesizable(a: Ipv4Addr) -> bool {
    !(a.is_unspecified() || a.is_loopback() || a.is_multicast() || a.is_broadcast())
}

/// The query's EDNS OPT record; more than one, or one not at the root, is
/// a format error (RFC 6891 §6.1.1).
fn edns_of(msg: &Message) -> Result<Option<Edns>, ()> {
    let mut opts = msg
        .additionals
        .iter()
        .filter(|r| r.data.rtype() == TYPE_OPT);
    let Some(opt) = opts.next() else {
        return Ok(None);
    };
    if opts.next().is_some() || opt.name != Name::root() {
        return Err(());
    }
    Ok(Some(Edns {
        udp_size: opt.class,
        version: ((opt.ttl >> 16) & 0xff) as u8,
    }))
}

/// Builds the response; if it does not fit the client's UDP buffer, sends
/// it without answers and with TC set so the client retries over TCP.
fn respond(
    query: &Header,
    question: Option<&Question>,
    rcode: u8,
    records: Vec<(RData, u32)>,
    edns: Option<Edns>,
) -> Option<Vec<u8>> {
    let name = question.map(|q| q.name.clone()).unwrap_or_default();
    let mut msg = Message {
        header: Header {
            id: query.id,
            qr: true,
            opcode: query.opcode,
            aa: true,
            tc: false,
            rd: query.rd,
            ra: true,
            ad: false,
            cd: query.cd,
            rcode,
        },
        questions: question.cloned().into_iter().collect(),
        answers: records
            .into_iter()
            .map(|(data, ttl)| Record {
                name: name.clone(),
                class: CLASS_IN,
                ttl,
                data,
            })
            .collect(),
        authorities: Vec::new(),
        additionals: Vec::new(),
    };
    if let Some(e) = edns {
        let ext_rcode = if e.version != 0 { BADVERS_HIGH_BITS } else { 0 };
        msg.additionals.push(Record {
            name: Name::root(),
            class: EDNS_UDP_LIMIT,
            ttl: ext_rcode << 24,
            data: RData::Other {
                rtype: TYPE_OPT,
                data: Vec::new(),
            },
        });
    }
    let limit = edns.map_or(PLAIN_UDP_LIMIT, |e| {
        usize::from(e.udp_size.clamp(PLAIN_UDP_LIMIT as u16, EDNS_UDP_LIMIT))
    });
    let bytes = msg.to_bytes().ok()?;
    if bytes.len() <= limit {
        return Some(bytes);
    }
    msg.answers.clear();
    msg.header.tc = true;
    msg.to_bytes().ok()
}

#[cfg(test)]
#[path = "dns64_tests.rs"]
mod tests;
