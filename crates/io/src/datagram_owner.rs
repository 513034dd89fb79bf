//! Whose datagram an ICMP error is about.
//!
//! The kernel reports "port unreachable" against an address, and only on
//! the next receive or send, so by then it may concern a connection that
//! has ended while a new one to the same address is in its handshake (a
//! server that restarted on its port). The ICMP message quotes the start
//! of the offending datagram; a handshake packet's long header carries its
//! sender's connection ID in a version-independent place (docs/PROTOCOL.md
//! §2: flags, version, then each connection ID after its length), so the
//! error can be pinned on the handshake that sent it.

use brisk_proto::packet::MAX_CID_LEN;

/// The long-header form bit of a packet's first byte.
const FORM_LONG: u8 = 0x80;

/// The source connection ID of the long-header packet at the start of
/// `head`, or `None` when `head` is a short header or too short to say.
pub fn long_header_source_cid(head: &[u8]) -> Option<&[u8]> {
    let (&first, rest) = head.split_first()?;
    if first & FORM_LONG == 0 {
        return None;
    }
    let rest = rest.get(4..)?; // version
    let (&dcid_len, rest) = rest.split_first()?;
    let rest = rest.get(cid_len(dcid_len)?..)?;
    let (&scid_len, rest) = rest.split_first()?;
    rest.get(..cid_len(scid_len)?)
}

fn cid_len(len: u8) -> Option<usize> {
    let len = usize::from(len);
    (len <= MAX_CID_LEN).then_some(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long_header(dcid: &[u8], scid: &[u8]) -> Vec<u8> {
        let mut p = vec![0xC0, 0x42, 0x52, 0x00, 0x01, dcid.len() as u8];
        p.extend_from_slice(dcid);
        p.push(scid.len() as u8);
        p.extend_from_slice(scid);
        p.extend_from_slice(&[0x44, 0xD0, 0, 1, 2, 3]);
        p
    }

    #[test]
    fn a_long_header_names_its_sender() {
        let p = long_header(&[9; 8], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(
            long_header_source_cid(&p),
            Some(&[1, 2, 3, 4, 5, 6, 7, 8][..])
        );
        // Quoted up to just past the source ID is enough.
        assert_eq!(
            long_header_source_cid(&p[..23]),
            Some(&[1, 2, 3, 4, 5, 6, 7, 8][..])
        );
        let empty = long_header(&[9; 20], &[]);
        assert_eq!(long_header_source_cid(&empty), Some(&[][..]));
    }

    #[test]
    fn short_headers_and_cut_or_bad_quotes_name_nobody() {
        let p = long_header(&[9; 8], &[1; 8]);
        for cut in 0..22 {
            assert_eq!(long_header_source_cid(&p[..cut]), None, "cut at {cut}");
        }
        let mut short = p.clone();
        short[0] = 0x40;
        assert_eq!(long_header_source_cid(&short), None);
        let mut too_long = p.clone();
        too_long[5] = 21;
        assert_eq!(long_header_source_cid(&too_long), None);
        let mut scid_too_long = p;
        scid_too_long[14] = 200;
        assert_eq!(long_header_source_cid(&scid_too_long), None);
    }
}
