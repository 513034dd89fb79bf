//! Tests for [`super`]. The query fixtures are real: sent by
//! `dig 9.18.49` (Debian 12) to a UDP socket that recorded them.

use super::*;

/// `dig AAAA ipv4only.arpa`: id 0x2ebb, RD and AD set, EDNS (1232-byte
/// buffer) with a client cookie.
pub(crate) const DIG_AAAA_IPV4ONLY: &[u8] = &[
    0x2e, 0xbb, 0x01, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, // header
    0x08, b'i', b'p', b'v', b'4', b'o', b'n', b'l', b'y', 0x04, b'a', b'r', b'p', b'a',
    0x00, // name
    0x00, 0x1c, 0x00, 0x01, // AAAA IN
    0x00, 0x00, 0x29, 0x04, 0xd0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, // OPT, 1232, rdlen 12
    0x00, 0x0a, 0x00, 0x08, 0xc2, 0x15, 0xab, 0xde, 0x17, 0x76, 0xbd, 0x07, // COOKIE
];

/// `dig +noedns +nocookie A Example.COM`: id 0x410b, mixed case kept.
pub(crate) const DIG_A_EXAMPLE_NOEDNS: &[u8] = &[
    0x41, 0x0b, 0x01, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // header
    0x07, b'E', b'x', b'a', b'm', b'p', b'l', b'e', 0x03, b'C', b'O', b'M', 0x00, // name
    0x00, 0x01, 0x00, 0x01, // A IN
];

/// `dig AAAA server.brisk.test`: id 0x990c, EDNS and cookie.
pub(crate) const DIG_AAAA_SERVER: &[u8] = &[
    0x99, 0x0c, 0x01, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, // header
    0x06, b's', b'e', b'r', b'v', b'e', b'r', 0x05, b'b', b'r', b'i', b's', b'k', 0x04, b't', b'e',
    b's', b't', 0x00, // name
    0x00, 0x1c, 0x00, 0x01, // AAAA IN
    0x00, 0x00, 0x29, 0x04, 0xd0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, // OPT
    0x00, 0x0a, 0x00, 0x08, 0x10, 0xca, 0x61, 0xc7, 0x6a, 0xbe, 0xca, 0x4c, // COOKIE
];

fn name(s: &str) -> Name {
    Name::from_dotted(s).unwrap()
}

#[test]
fn parses_dig_queries() {
    let m = Message::parse(DIG_AAAA_IPV4ONLY).unwrap();
    let h = m.header;
    assert_eq!(
        (h.id, h.qr, h.opcode, h.rd, h.ad, h.rcode),
        (0x2ebb, false, 0, true, true, 0)
    );
    assert_eq!(
        m.questions,
        vec![Question {
            name: name("ipv4only.arpa"),
            qtype: TYPE_AAAA,
            qclass: CLASS_IN
        }]
    );
    assert!(m.answers.is_empty() && m.authorities.is_empty());
    let opt = &m.additionals[0];
    assert_eq!(
        (opt.name.clone(), opt.class, opt.ttl),
        (Name::root(), 1232, 0)
    );
    assert_eq!(opt.data.rtype(), TYPE_OPT);

    let m = Message::parse(DIG_A_EXAMPLE_NOEDNS).unwrap();
    assert_eq!(m.questions[0].name.to_string(), "Example.COM.");
    assert!(m.questions[0].name.eq_ignore_case(&name("example.com")));
    assert_eq!(m.questions[0].qtype, TYPE_A);
    assert!(m.additionals.is_empty());
}

#[test]
fn queries_round_trip_byte_for_byte() {
    for q in [DIG_AAAA_IPV4ONLY, DIG_A_EXAMPLE_NOEDNS, DIG_AAAA_SERVER] {
        assert_eq!(Message::parse(q).unwrap().to_bytes().unwrap(), q);
    }
}

/// A response in the style of RFC 1035 §4.1.4: the answer names point back
/// to the question name, and the CNAME target shares its suffix.
fn compressed_response() -> Vec<u8> {
    let mut m = vec![
        0x12, 0x34, 0x81, 0x80, 0, 1, 0, 3, 0, 0, 0, 0, // response, RD RA
        3, b'w', b'w', b'w', 5, b'b', b'r', b'i', b's', b'k', 4, b't', b'e', b's', b't',
        0, // @12
        0, 28, 0, 1, // AAAA IN
    ];
    // www.brisk.test CNAME edge.<brisk.test @16>
    m.extend_from_slice(&[0xc0, 12, 0, 5, 0, 1, 0, 0, 0x0e, 0x10, 0, 7]);
    m.extend_from_slice(&[4, b'e', b'd', b'g', b'e', 0xc0, 16]);
    // edge.brisk.test (pointer to the CNAME target at 44) AAAA 2001:db8::1
    m.extend_from_slice(&[0xc0, 44, 0, 28, 0, 1, 0, 0, 0, 60, 0, 16]);
    m.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
    // edge.brisk.test A 192.0.2.1
    m.extend_from_slice(&[0xc0, 44, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1]);
    m
}

#[test]
fn parses_compressed_names_and_record_data() {
    let m = Message::parse(&compressed_response()).unwrap();
    let h = m.header;
    assert_eq!(
        (h.id, h.qr, h.rd, h.ra, h.aa),
        (0x1234, true, true, true, false)
    );
    assert_eq!(m.answers.len(), 3);
    assert_eq!(m.answers[0].name, name("www.brisk.test"));
    assert_eq!(m.answers[0].data, RData::Cname(name("edge.brisk.test")));
    assert_eq!(m.answers[0].ttl, 3600);
    assert_eq!(m.answers[1].name, name("edge.brisk.test"));
    assert_eq!(
        m.answers[1].data,
        RData::Aaaa("2001:db8::1".parse().unwrap())
    );
    assert_eq!(m.answers[2].data, RData::A(Ipv4Addr::new(192, 0, 2, 1)));
}

#[test]
fn builder_compresses_like_the_hand_made_response() {
    let m = Message::parse(&compressed_response()).unwrap();
    let bytes = m.to_bytes().unwrap();
    assert_eq!(bytes, compressed_response());
}

#[test]
fn pointer_loops_and_forward_pointers_are_refused() {
    let header = [0u8, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    // A name that points at itself.
    let mut m = header.to_vec();
    m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1]);
    assert_eq!(Message::parse(&m), Err(DnsError::BadPointer));
    // Two labels pointing at each other: a -> b -> a.
    let mut m = header.to_vec();
    m.extend_from_slice(&[1, b'a', 0xc0, 16, 1, b'b', 0xc0, 12]);
    assert_eq!(Message::parse(&m), Err(DnsError::BadPointer));
    // A pointer past the end.
    let mut m = header.to_vec();
    m.extend_from_slice(&[0xc0, 200, 0, 1, 0, 1]);
    assert_eq!(Message::parse(&m), Err(DnsError::BadPointer));
    // Reserved label types 0b01 and 0b10.
    let mut m = header.to_vec();
    m.extend_from_slice(&[0x41, 0, 0, 1, 0, 1]);
    assert_eq!(Message::parse(&m), Err(DnsError::BadLabelType));
}

#[test]
fn a_chain_of_backward_pointers_is_capped() {
    // 70 names, each "x" + pointer to the previous one: every pointer is
    // legal, but the last name would follow 69 of them, over the cap.
    let mut m = vec![0u8, 1, 0, 0, 0, 70, 0, 0, 0, 0, 0, 0];
    let mut prev: Option<u16> = None;
    for _ in 0..70 {
        let at = m.len() as u16;
        m.extend_from_slice(&[1, b'x']);
        match prev {
            Some(p) => m.extend_from_slice(&(0xc000u16 | p).to_be_bytes()),
            None => m.push(0),
        }
        m.extend_from_slice(&[0, 1, 0, 1]);
        prev = Some(at);
    }
    let err = Message::parse(&m).unwrap_err();
    assert!(
        matches!(err, DnsError::NameTooLong | DnsError::TooManyPointers),
        "{err:?}"
    );
}

#[test]
fn bounds_are_enforced() {
    assert_eq!(Message::parse(&[0u8; 11]), Err(DnsError::Truncated));
    // A count promising more than exists.
    let mut m = DIG_A_EXAMPLE_NOEDNS.to_vec();
    m[5] = 2;
    assert_eq!(Message::parse(&m), Err(DnsError::Truncated));
    // Counts over the record cap fail before any allocation.
    let mut m = DIG_A_EXAMPLE_NOEDNS.to_vec();
    m[6..8].copy_from_slice(&[0xff, 0xff]);
    assert_eq!(Message::parse(&m), Err(DnsError::TooManyRecords));
    // Trailing garbage.
    let mut m = DIG_A_EXAMPLE_NOEDNS.to_vec();
    m.push(0);
    assert_eq!(Message::parse(&m), Err(DnsError::TrailingBytes));
    // An A record with 5 bytes of data.
    let mut m = compressed_response();
    let rdlength_low = m.len() - 5;
    m[rdlength_low] = 5;
    m.push(0);
    assert_eq!(Message::parse(&m), Err(DnsError::BadRdata));
    // Labels and names over their limits.
    assert_eq!(
        Name::from_dotted(&"a".repeat(64)),
        Err(DnsError::LabelTooLong)
    );
    let long = vec!["abcdefghi"; 26].join(".");
    assert_eq!(Name::from_dotted(&long), Err(DnsError::NameTooLong));
    assert_eq!(Name::from_dotted("a..b"), Err(DnsError::EmptyLabel));
    assert_eq!(Name::from_dotted("."), Ok(Name::root()));
}

#[test]
fn names_print_with_escapes() {
    let n = Name::from_labels(vec![b"a.b".to_vec(), vec![0x07], b"c".to_vec()]).unwrap();
    assert_eq!(n.to_string(), "a\\.b.\\007.c.");
    assert_eq!(Name::root().to_string(), ".");
}
