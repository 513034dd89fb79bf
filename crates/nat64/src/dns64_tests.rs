//! Tests for [`super::Dns64`], fed with real `dig` queries where one
//! exists (see `dns_tests.rs`) and hand-built ones for the odd cases.

use super::*;
use crate::dns::tests::{DIG_A_EXAMPLE_NOEDNS, DIG_AAAA_IPV4ONLY, DIG_AAAA_SERVER};
use crate::dns::{RCODE_NXDOMAIN, TYPE_CNAME};
use brisk_wire::nat64_prefix::discover_prefixes;

fn a4(s: &str) -> IpAddr {
    IpAddr::V4(s.parse().unwrap())
}
fn a6(s: &str) -> IpAddr {
    IpAddr::V6(s.parse().unwrap())
}

/// The scenario's names: an IPv4-only server, a dual-stack one, one with
/// only an IPv4-mapped AAAA, and an IPv6-only one.
fn zone() -> BTreeMap<String, Vec<IpAddr>> {
    BTreeMap::from([
        (
            "server.brisk.test".to_string(),
            vec![a4("192.0.2.33"), a4("192.0.2.34")],
        ),
        (
            "dual.brisk.test.".to_string(),
            vec![a4("192.0.2.40"), a6("2001:db8:1::40")],
        ),
        (
            "mapped.brisk.test".to_string(),
            vec![a6("::ffff:192.0.2.50"), a4("192.0.2.50")],
        ),
        ("Example.com".to_string(), vec![a6("2001:db8:2::1")]),
    ])
}

fn dns64() -> Dns64 {
    Dns64::new(Nat64Prefix::WELL_KNOWN, zone()).unwrap()
}

fn query(name: &str, qtype: u16) -> Vec<u8> {
    Message {
        header: Header {
            id: 0x5151,
            rd: true,
            ..Header::default()
        },
        questions: vec![Question {
            name: Name::from_dotted(name).unwrap(),
            qtype,
            qclass: CLASS_IN,
        }],
        ..Message::default()
    }
    .to_bytes()
    .unwrap()
}

fn ask(d: &Dns64, q: &[u8]) -> Message {
    Message::parse(&d.handle_query(q).expect("an answer")).expect("a valid response")
}

fn aaaa(m: &Message) -> Vec<Ipv6Addr> {
    m.answers
        .iter()
        .filter_map(|r| match r.data {
            RData::Aaaa(a) => Some(a),
            _ => None,
        })
        .collect()
}

#[test]
fn synthesizes_aaaa_for_an_ipv4_only_name() {
    let r = ask(&dns64(), DIG_AAAA_SERVER);
    let h = r.header;
    assert_eq!(
        (h.id, h.qr, h.rcode, h.rd, h.ra, h.ad),
        (0x990c, true, RCODE_NOERROR, true, true, false)
    );
    assert_eq!(r.questions[0].name.to_string(), "server.brisk.test.");
    assert_eq!(
        aaaa(&r),
        vec![
            "64:ff9b::c000:221".parse::<Ipv6Addr>().unwrap(),
            "64:ff9b::c000:222".parse().unwrap()
        ]
    );
    assert!(
        r.answers
            .iter()
            .all(|rec| rec.name == r.questions[0].name && rec.ttl == DEFAULT_TTL_S)
    );
    // dig sent EDNS, so the response carries an OPT record.
    assert_eq!(r.additionals.len(), 1);
    assert_eq!(
        (r.additionals[0].data.rtype(), r.additionals[0].class),
        (TYPE_OPT, 1232)
    );
}

#[test]
fn synthesized_ttl_is_capped_at_600_s() {
    let d = dns64().with_ttl_s(3600);
    let r = ask(&d, &query("server.brisk.test", TYPE_AAAA));
    assert!(r.answers.iter().all(|rec| rec.ttl == MAX_SYNTHESIZED_TTL_S));
    // Native records keep the zone TTL.
    let r = ask(&d, &query("server.brisk.test", TYPE_A));
    assert!(r.answers.iter().all(|rec| rec.ttl == 3600));
}

#[test]
fn synthesis_follows_the_configured_prefix() {
    let prefix: Nat64Prefix = "2001:db8:64::/96".parse().unwrap();
    let d = Dns64::new(prefix, zone()).unwrap();
    let r = ask(&d, &query("server.brisk.test", TYPE_AAAA));
    assert_eq!(
        aaaa(&r)[0],
        "2001:db8:64::c000:221".parse::<Ipv6Addr>().unwrap()
    );
}

#[test]
fn native_aaaa_wins_and_mapped_aaaa_is_ignored() {
    let d = dns64();
    let r = ask(&d, &query("dual.brisk.test", TYPE_AAAA));
    assert_eq!(
        aaaa(&r),
        vec!["2001:db8:1::40".parse::<Ipv6Addr>().unwrap()]
    );
    let r = ask(&d, &query("mapped.brisk.test", TYPE_AAAA));
    assert_eq!(
        aaaa(&r),
        vec![Nat64Prefix::WELL_KNOWN.embed("192.0.2.50".parse().unwrap())]
    );
}

#[test]
fn ipv4only_arpa_reveals_the_prefix() {
    for prefix in ["64:ff9b::/96", "2001:db8:122:344::/64", "2001:db8::/32"] {
        let prefix: Nat64Prefix = prefix.parse().unwrap();
        let d = Dns64::new(prefix, zone()).unwrap();
        let r = ask(&d, DIG_AAAA_IPV4ONLY);
        let answers = aaaa(&r);
        assert_eq!(answers.len(), 2);
        assert_eq!(discover_prefixes(&answers), vec![prefix]);
    }
    let r = ask(&dns64(), &query("IPv4Only.Arpa", TYPE_A));
    let v4: Vec<&RData> = r.answers.iter().map(|rec| &rec.data).collect();
    assert_eq!(
        v4,
        [&RData::A(IPV4ONLY_ADDRS[0]), &RData::A(IPV4ONLY_ADDRS[1])]
    );
}

#[test]
fn a_queries_case_and_nodata() {
    let d = dns64();
    // Zone names are case-insensitive; the answer keeps the query's case.
    let r = ask(&d, DIG_A_EXAMPLE_NOEDNS);
    assert_eq!(
        (r.header.rcode, r.answers.len()),
        (RCODE_NOERROR, 0),
        "IPv6-only name: no A records"
    );
    assert_eq!(r.questions[0].name.to_string(), "Example.COM.");
    assert!(r.additionals.is_empty(), "no EDNS in, none out");
    let r = ask(&d, &query("EXAMPLE.com", TYPE_AAAA));
    assert_eq!(r.answers[0].name.to_string(), "EXAMPLE.com.");
    assert_eq!(aaaa(&r), vec!["2001:db8:2::1".parse::<Ipv6Addr>().unwrap()]);
    // A type the zone has no data for.
    let r = ask(&d, &query("server.brisk.test", TYPE_CNAME));
    assert_eq!((r.header.rcode, r.answers.len()), (RCODE_NOERROR, 0));
}

#[test]
fn unknown_names_are_nxdomain() {
    let r = ask(&dns64(), &query("nowhere.brisk.test", TYPE_AAAA));
    assert_eq!(
        (r.header.rcode, r.header.aa, r.answers.len()),
        (RCODE_NXDOMAIN, true, 0)
    );
}

#[test]
fn malformed_queries_get_formerr_or_nothing() {
    let d = dns64();
    // Header readable, body broken: FORMERR with the same id.
    let mut broken = DIG_AAAA_SERVER.to_vec();
    broken.truncate(20);
    let r = ask(&d, &broken);
    assert_eq!(
        (r.header.id, r.header.rcode, r.questions.len()),
        (0x990c, RCODE_FORMERR, 0)
    );
    // Two questions.
    let mut two = query("a.test", TYPE_A);
    two[5] = 2;
    two.extend_from_slice(&query("b.test", TYPE_A)[12..]);
    assert_eq!(ask(&d, &two).header.rcode, RCODE_FORMERR);
    // No question at all.
    let mut none = query("a.test", TYPE_A);
    none[5] = 0;
    none.truncate(12);
    assert_eq!(ask(&d, &none).header.rcode, RCODE_FORMERR);
    // Too short for a header, or a response: silence.
    assert_eq!(d.handle_query(&[0x12, 0x34, 0x01]), None);
    let response = d.handle_query(DIG_AAAA_SERVER).unwrap();
    assert_eq!(d.handle_query(&response), None);
}

#[test]
fn opcodes_classes_and_edns_versions() {
    let d = dns64();
    let mut notify = query("server.brisk.test", TYPE_A);
    notify[2] |= 4 << 3; // opcode 4
    assert_eq!(ask(&d, &notify).header.rcode, RCODE_NOTIMP);

    let mut chaos = query("server.brisk.test", TYPE_A);
    let n = chaos.len();
    chaos[n - 2..].copy_from_slice(&3u16.to_be_bytes());
    assert_eq!(ask(&d, &chaos).header.rcode, RCODE_REFUSED);

    // EDNS version 1: BADVERS (extended rcode 16) in the OPT record.
    let mut v1 = DIG_AAAA_SERVER.to_vec();
    let opt_ttl = DIG_AAAA_SERVER.len() - 12 - 2 - 4; // before rdata and rdlength
    v1[opt_ttl + 1] = 1;
    let r = ask(&d, &v1);
    assert_eq!((r.header.rcode, r.answers.len()), (RCODE_NOERROR, 0));
    assert_eq!(r.additionals[0].ttl >> 24, 1);

    // Two OPT records: FORMERR.
    let mut two_opts = DIG_AAAA_SERVER.to_vec();
    two_opts[11] = 2;
    two_opts.extend_from_slice(&DIG_AAAA_SERVER[DIG_AAAA_SERVER.len() - 23..]);
    assert_eq!(ask(&d, &two_opts).header.rcode, RCODE_FORMERR);
}

#[test]
fn large_answers_truncate_without_edns_and_fit_with_it() {
    let many: Vec<IpAddr> = (1..=40u16)
        .map(|i| IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i)))
        .collect();
    let d = Dns64::new(
        Nat64Prefix::WELL_KNOWN,
        BTreeMap::from([("big.test".to_string(), many)]),
    )
    .unwrap();
    let plain = d.handle_query(&query("big.test", TYPE_AAAA)).unwrap();
    assert!(plain.len() <= 512);
    let r = Message::parse(&plain).unwrap();
    assert!(r.header.tc && r.answers.is_empty());

    let mut edns = Message::parse(&query("big.test", TYPE_AAAA)).unwrap();
    edns.additionals.push(Record {
        name: Name::root(),
        class: 4096,
        ttl: 0,
        data: RData::Other {
            rtype: TYPE_OPT,
            data: Vec::new(),
        },
    });
    let big = d.handle_query(&edns.to_bytes().unwrap()).unwrap();
    assert!(big.len() <= 1232, "the 4096 offered is capped at 1232");
    let r = Message::parse(&big).unwrap();
    assert_eq!((r.header.tc, r.answers.len()), (false, 40));
}

#[test]
fn responses_compress_answer_names() {
    let bytes = dns64()
        .handle_query(&query("server.brisk.test", TYPE_AAAA))
        .unwrap();
    // The first answer's name is a pointer to the question name at 12.
    let first_answer = 12 + 19 + 4;
    assert_eq!(&bytes[first_answer..first_answer + 2], &[0xc0, 12]);
}

#[test]
fn bad_zone_names_are_refused() {
    let zone = BTreeMap::from([("a..b".to_string(), vec![a4("192.0.2.1")])]);
    assert_eq!(
        Dns64::new(Nat64Prefix::WELL_KNOWN, zone).err(),
        Some(DnsError::EmptyLabel)
    );
}
