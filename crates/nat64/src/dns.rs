//! DNS messages (RFC 1035 §4): header, questions and resource records,
//! with A, AAAA and CNAME data decoded and everything else kept raw.
//!
//! Parsing never panics and is bounded: names follow compression pointers
//! only strictly backwards (so a loop is impossible, and hops are capped
//! anyway), a name is at most 255 bytes, a message at most 65,535 bytes
//! and 1,024 records. Building compresses repeated names (and suffixes)
//! with pointers, as servers do.

use core::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// An IPv4 address record (RFC 1035).
pub const TYPE_A: u16 = 1;
/// An alias: the canonical name to look up instead (RFC 1035).
pub const TYPE_CNAME: u16 = 5;
/// An IPv6 address record (RFC 3596); what DNS64 synthesizes.
pub const TYPE_AAAA: u16 = 28;
/// EDNS(0) pseudo-record (RFC 6891).
pub const TYPE_OPT: u16 = 41;
/// A query for every type (also the wildcard class `*`); the DNS64
/// answers it with the A and AAAA records.
pub const TYPE_ANY: u16 = 255;
/// The Internet class, the one the DNS64 answers (besides `*`).
pub const CLASS_IN: u16 = 1;

/// Success, possibly with no answers (the name exists, the type does not).
pub const RCODE_NOERROR: u8 = 0;
/// The query could not be parsed.
pub const RCODE_FORMERR: u8 = 1;
/// The server failed to answer.
pub const RCODE_SERVFAIL: u8 = 2;
/// The name does not exist.
pub const RCODE_NXDOMAIN: u8 = 3;
/// The opcode or query kind is not supported.
pub const RCODE_NOTIMP: u8 = 4;
/// The server will not answer this query (policy).
pub const RCODE_REFUSED: u8 = 5;

/// Bytes of the fixed header.
pub const HEADER_LEN: usize = 12;
/// RFC 1035 §2.3.4: a name's wire form, length bytes included.
pub const MAX_NAME_LEN: usize = 255;
/// RFC 1035 §2.3.4: the most bytes of one label.
pub const MAX_LABEL_LEN: usize = 63;
/// Records (all sections) a parse accepts before giving up.
pub const MAX_RECORDS: usize = 1024;
/// Compression pointers one name may follow.
const MAX_POINTER_HOPS: usize = 64;
/// Names remembered for compression while building.
const MAX_COMPRESSION_ENTRIES: usize = 256;

/// Why bytes are not a DNS message (or a message cannot be built).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DnsError {
    /// A section ends before the header's counts or a length says it should.
    #[error("message truncated")]
    Truncated,
    /// Over 65,535 bytes, the most a DNS message can be.
    #[error("message longer than 65535 bytes")]
    TooLong,
    /// A compression pointer that does not point strictly before the name
    /// it continues (the only way a name could loop).
    #[error("compression pointer does not point backwards")]
    BadPointer,
    /// A name follows more than 64 compression pointers.
    #[error("too many compression pointers in one name")]
    TooManyPointers,
    /// A label over 63 bytes (RFC 1035 §2.3.4).
    #[error("label longer than 63 bytes")]
    LabelTooLong,
    /// A name over 255 bytes in wire form (RFC 1035 §2.3.4).
    #[error("name longer than 255 bytes")]
    NameTooLong,
    /// Two dots in a row in a name's text form: only the root is empty.
    #[error("empty label inside a name")]
    EmptyLabel,
    /// A length byte whose top two bits are 01 or 10: extended and reserved
    /// label types, which no deployed server sends.
    #[error("reserved label type")]
    BadLabelType,
    /// More records than the parser accepts in all sections together.
    #[error("more than {MAX_RECORDS} records")]
    TooManyRecords,
    /// An A record not 4 bytes, an AAAA not 16, or a CNAME not a name.
    #[error("record data does not match its type")]
    BadRdata,
    /// Bytes follow the last record the header counts.
    #[error("bytes after the last record")]
    TrailingBytes,
}

/// A domain name as a list of labels (the root has none). Comparison is
/// byte-exact; use [`Name::to_lowercase`] for DNS's case-insensitive match.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Name {
    labels: Vec<Vec<u8>>,
}

impl Name {
    /// The root name `.`.
    pub fn root() -> Name {
        Name::default()
    }

    /// Parses `example.com` or `example.com.`; `.` and `` are the root.
    /// Labels are taken literally (no escapes).
    pub fn from_dotted(s: &str) -> Result<Name, DnsError> {
        let s = s.strip_suffix('.').unwrap_or(s);
        if s.is_empty() {
            return Ok(Name::root());
        }
        let labels: Vec<Vec<u8>> = s.split('.').map(|l| l.as_bytes().to_vec()).collect();
        Name::from_labels(labels)
    }

    /// A name from labels, checked against RFC 1035's limits.
    pub fn from_labels(labels: Vec<Vec<u8>>) -> Result<Name, DnsError> {
        let mut wire_len = 1;
        for l in &labels {
            if l.is_empty() {
                return Err(DnsError::EmptyLabel);
            }
            if l.len() > MAX_LABEL_LEN {
                return Err(DnsError::LabelTooLong);
            }
            wire_len += 1 + l.len();
        }
        if wire_len > MAX_NAME_LEN {
            return Err(DnsError::NameTooLong);
        }
        Ok(Name { labels })
    }

    /// The labels, root excluded, each without its length byte and as sent
    /// (case kept).
    pub fn labels(&self) -> &[Vec<u8>] {
        &self.labels
    }

    /// ASCII letters folded to lower case (RFC 4343).
    pub fn to_lowercase(&self) -> Name {
        Name {
            labels: self.labels.iter().map(|l| l.to_ascii_lowercase()).collect(),
        }
    }

    /// Case-insensitive equality (RFC 4343).
    pub fn eq_ignore_case(&self, other: &Name) -> bool {
        self.labels.len() == other.labels.len()
            && self
                .labels
                .iter()
                .zip(&other.labels)
                .all(|(a, b)| a.eq_ignore_ascii_case(b))
    }
}

impl fmt::Display for Name {
    /// Dotted form with a trailing dot; dots, backslashes and non-printable
    /// bytes inside labels are escaped as in zone files.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.labels.is_empty() {
            return f.write_str(".");
        }
        for l in &self.labels {
            for &b in l {
                match b {
                    b'.' | b'\\' => write!(f, "\\{}", b as char)?,
                    0x21..=0x7e => write!(f, "{}", b as char)?,
                    _ => write!(f, "\\{b:03}")?,
                }
            }
            f.write_str(".")?;
        }
        Ok(())
    }
}

/// Message header (RFC 1035 §4.1.1, plus RFC 4035's AD and CD bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    /// Query ID, copied into the response so the client can match it.
    pub id: u16,
    /// Response (true) or query.
    pub qr: bool,
    /// The kind of query, four bits: 0 is a standard query.
    pub opcode: u8,
    /// Authoritative answer.
    pub aa: bool,
    /// Truncated: retry over TCP or with a larger EDNS buffer.
    pub tc: bool,
    /// Recursion desired (copied from query to response).
    pub rd: bool,
    /// Recursion available.
    pub ra: bool,
    /// Authentic data (DNSSEC); a DNS64 never sets it on synthesized data.
    pub ad: bool,
    /// Checking disabled (DNSSEC).
    pub cd: bool,
    /// The low four bits of the response code.
    pub rcode: u8,
}

impl Header {
    fn flags(&self) -> u16 {
        (u16::from(self.qr) << 15)
            | (u16::from(self.opcode & 0x0f) << 11)
            | (u16::from(self.aa) << 10)
            | (u16::from(self.tc) << 9)
            | (u16::from(self.rd) << 8)
            | (u16::from(self.ra) << 7)
            | (u16::from(self.ad) << 5)
            | (u16::from(self.cd) << 4)
            | u16::from(self.rcode & 0x0f)
    }

    fn from_flags(id: u16, f: u16) -> Header {
        Header {
            id,
            qr: f & 0x8000 != 0,
            opcode: ((f >> 11) & 0x0f) as u8,
            aa: f & 0x0400 != 0,
            tc: f & 0x0200 != 0,
            rd: f & 0x0100 != 0,
            ra: f & 0x0080 != 0,
            ad: f & 0x0020 != 0,
            cd: f & 0x0010 != 0,
            rcode: (f & 0x000f) as u8,
        }
    }

    /// Reads just the header: enough to answer FORMERR to a query whose
    /// body is broken, or to ignore a response.
    pub fn parse(bytes: &[u8]) -> Result<Header, DnsError> {
        let h = bytes.get(..HEADER_LEN).ok_or(DnsError::Truncated)?;
        let id = u16::from_be_bytes([h[0], h[1]]);
        Ok(Header::from_flags(id, u16::from_be_bytes([h[2], h[3]])))
    }
}

/// One entry of the question section: what is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The name asked about.
    pub name: Name,
    /// The record type asked for (`TYPE_A`, `TYPE_AAAA`, ...).
    pub qtype: u16,
    /// The class, `CLASS_IN` in practice.
    pub qclass: u16,
}

/// Record data: decoded for A, AAAA and CNAME, raw bytes otherwise (raw data
/// of types with embedded names may hold compression pointers relative to
/// the message it came from).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RData {
    /// An IPv4 address (type A).
    A(Ipv4Addr),
    /// An IPv6 address (type AAAA).
    Aaaa(Ipv6Addr),
    /// The canonical name (type CNAME).
    Cname(Name),
    /// Any other type, its data bytes as received.
    Other {
        /// The record type number.
        rtype: u16,
        /// The data bytes as received.
        data: Vec<u8>,
    },
}

impl RData {
    /// The record type number the data belongs to.
    pub fn rtype(&self) -> u16 {
        match self {
            RData::A(_) => TYPE_A,
            RData::Aaaa(_) => TYPE_AAAA,
            RData::Cname(_) => TYPE_CNAME,
            RData::Other { rtype, .. } => *rtype,
        }
    }
}

/// A resource record of the answer, authority or additional section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The owner name.
    pub name: Name,
    /// The class; for OPT, the sender's UDP payload size.
    pub class: u16,
    /// Seconds; for OPT, extended rcode, version and flags.
    pub ttl: u32,
    /// The type and its data.
    pub data: RData,
}

/// A whole DNS message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Message {
    /// ID, flags and response code; the section counts come from the vectors.
    pub header: Header,
    /// What is asked (one question in practice).
    pub questions: Vec<Question>,
    /// Records that answer the question.
    pub answers: Vec<Record>,
    /// Records naming the authority (e.g. the SOA of a negative answer).
    pub authorities: Vec<Record>,
    /// Extra records, including the EDNS(0) OPT pseudo-record.
    pub additionals: Vec<Record>,
}

/// A cursor over message bytes.
struct Reader<'a> {
    msg: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DnsError> {
        let end = self.pos.checked_add(n).ok_or(DnsError::Truncated)?;
        let s = self.msg.get(self.pos..end).ok_or(DnsError::Truncated)?;
        self.pos = end;
        Ok(s)
    }
    fn u16(&mut self) -> Result<u16, DnsError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, DnsError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A possibly compressed name; the cursor ends after its first
    /// pointer or its terminating zero.
    fn name(&mut self) -> Result<Name, DnsError> {
        let mut labels = Vec::new();
        let mut wire_len = 1;
        let mut pos = self.pos;
        // Pointers must land before the start of the run of labels that
        // contains them, which strictly decreases: no loops.
        let mut run_start = pos;
        let mut hops = 0;
        let mut resume = None;
        loop {
            let len = *self.msg.get(pos).ok_or(DnsError::Truncated)?;
            match len >> 6 {
                0b00 if len == 0 => {
                    self.pos = resume.unwrap_or(pos + 1);
                    return Ok(Name { labels });
                }
                0b00 => {
                    let len = usize::from(len);
                    wire_len += 1 + len;
                    if wire_len > MAX_NAME_LEN {
                        return Err(DnsError::NameTooLong);
                    }
                    let label = self
                        .msg
                        .get(pos + 1..pos + 1 + len)
                        .ok_or(DnsError::Truncated)?;
                    labels.push(label.to_vec());
                    pos += 1 + len;
                }
                0b11 => {
                    let low = *self.msg.get(pos + 1).ok_or(DnsError::Truncated)?;
                    let target = usize::from(u16::from_be_bytes([len & 0x3f, low]));
                    if target >= run_start {
                        return Err(DnsError::BadPointer);
                    }
                    hops += 1;
                    if hops > MAX_POINTER_HOPS {
                        return Err(DnsError::TooManyPointers);
                    }
                    resume.get_or_insert(pos + 2);
                    run_start = target;
                    pos = target;
                }
                _ => return Err(DnsError::BadLabelType),
            }
        }
    }

    fn question(&mut self) -> Result<Question, DnsError> {
        Ok(Question {
            name: self.name()?,
            qtype: self.u16()?,
            qclass: self.u16()?,
        })
    }

    fn record(&mut self) -> Result<Record, DnsError> {
        let name = self.name()?;
        let rtype = self.u16()?;
        let class = self.u16()?;
        let ttl = self.u32()?;
        let rdlength = usize::from(self.u16()?);
        let start = self.pos;
        let raw = self.take(rdlength)?;
        let data = match rtype {
            TYPE_A => {
                let b: [u8; 4] = raw.try_into().map_err(|_| DnsError::BadRdata)?;
                RData::A(Ipv4Addr::from(b))
            }
            TYPE_AAAA => {
                let b: [u8; 16] = raw.try_into().map_err(|_| DnsError::BadRdata)?;
                RData::Aaaa(Ipv6Addr::from(b))
            }
            TYPE_CNAME => {
                // The target may point back into the message, so read it in
                // place and check it ends exactly at the data's end.
                let mut r = Reader {
                    msg: self.msg,
                    pos: start,
                };
                let target = r.name()?;
                if r.pos != start + rdlength {
                    return Err(DnsError::BadRdata);
                }
                RData::Cname(target)
            }
            rtype => RData::Other {
                rtype,
                data: raw.to_vec(),
            },
        };
        Ok(Record {
            name,
            class,
            ttl,
            data,
        })
    }
}

impl Message {
    /// Parses a whole message; bytes after the last record are an error.
    pub fn parse(bytes: &[u8]) -> Result<Message, DnsError> {
        if bytes.len() > usize::from(u16::MAX) {
            return Err(DnsError::TooLong);
        }
        let header = Header::parse(bytes)?;
        let mut r = Reader { msg: bytes, pos: 4 };
        let counts = [r.u16()?, r.u16()?, r.u16()?, r.u16()?].map(usize::from);
        if counts.iter().sum::<usize>() > MAX_RECORDS {
            return Err(DnsError::TooManyRecords);
        }
        // Each entry needs at least 5 (question) or 11 (record) bytes, so a
        // lying count fails on truncation before allocating much.
        let questions = (0..counts[0])
            .map(|_| r.question())
            .collect::<Result<_, _>>()?;
        let mut section = |n| (0..n).map(|_| r.record()).collect::<Result<Vec<_>, _>>();
        let answers = section(counts[1])?;
        let authorities = section(counts[2])?;
        let additionals = section(counts[3])?;
        if r.pos != bytes.len() {
            return Err(DnsError::TrailingBytes);
        }
        Ok(Message {
            header,
            questions,
            answers,
            authorities,
            additionals,
        })
    }

    /// The wire form, names compressed.
    pub fn to_bytes(&self) -> Result<Vec<u8>, DnsError> {
        let count = |n: usize| u16::try_from(n).map_err(|_| DnsError::TooManyRecords);
        let mut w = Writer::default();
        w.buf.extend_from_slice(&self.header.id.to_be_bytes());
        w.buf.extend_from_slice(&self.header.flags().to_be_bytes());
        for n in [
            self.questions.len(),
            self.answers.len(),
            self.authorities.len(),
            self.additionals.len(),
        ] {
            w.buf.extend_from_slice(&count(n)?.to_be_bytes());
        }
        for q in &self.questions {
            w.name(&q.name);
            w.buf.extend_from_slice(&q.qtype.to_be_bytes());
            w.buf.extend_from_slice(&q.qclass.to_be_bytes());
        }
        for rec in self
            .answers
            .iter()
            .chain(&self.authorities)
            .chain(&self.additionals)
        {
            w.record(rec)?;
        }
        if w.buf.len() > usize::from(u16::MAX) {
            return Err(DnsError::TooLong);
        }
        Ok(w.buf)
    }
}

/// Builds a message, remembering where names went for compression.
#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
    names: Vec<(Vec<Vec<u8>>, u16)>,
}

impl Writer {
    fn name(&mut self, name: &Name) {
        let labels = name.labels();
        for i in 0..labels.len() {
            let suffix = &labels[i..];
            if let Some(&(_, at)) = self.names.iter().find(|(s, _)| s.as_slice() == suffix) {
                self.buf.extend_from_slice(&(0xc000 | at).to_be_bytes());
                return;
            }
            // Pointers have 14 bits of offset.
            let at = u16::try_from(self.buf.len()).ok().filter(|&at| at < 0x4000);
            if let Some(at) = at.filter(|_| self.names.len() < MAX_COMPRESSION_ENTRIES) {
                self.names.push((suffix.to_vec(), at));
            }
            // Labels are at most 63 bytes (checked when the name was built).
            self.buf.push(labels[i].len() as u8);
            self.buf.extend_from_slice(&labels[i]);
        }
        self.buf.push(0);
    }

    fn record(&mut self, rec: &Record) -> Result<(), DnsError> {
        self.name(&rec.name);
        self.buf.extend_from_slice(&rec.data.rtype().to_be_bytes());
        self.buf.extend_from_slice(&rec.class.to_be_bytes());
        self.buf.extend_from_slice(&rec.ttl.to_be_bytes());
        let len_at = self.buf.len();
        self.buf.extend_from_slice(&[0, 0]);
        match &rec.data {
            RData::A(a) => self.buf.extend_from_slice(&a.octets()),
            RData::Aaaa(a) => self.buf.extend_from_slice(&a.octets()),
            RData::Cname(n) => self.name(n),
            RData::Other { data, .. } => self.buf.extend_from_slice(data),
        }
        let rdlength = u16::try_from(self.buf.len() - len_at - 2).map_err(|_| DnsError::TooLong)?;
        self.buf[len_at..len_at + 2].copy_from_slice(&rdlength.to_be_bytes());
        Ok(())
    }
}

#[cfg(test)]
#[path = "dns_tests.rs"]
pub(crate) mod tests;
