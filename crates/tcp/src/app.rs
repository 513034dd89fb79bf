//! A tiny multiplexed request/response protocol for the TCP experiments,
//! sans-IO: parse requests, schedule responses by priority, frame and
//! unframe them.
//!
//! Requests are text lines, one per response, pipelined on a connection:
//!
//! ```text
//! GET /size?bytes=1048576&prio=3\n
//! ```
//!
//! `prio` is an RFC 9218 urgency, 0 (most urgent) to 7, default 3. The
//! n-th request on a connection is stream n (from 0). Responses come back
//! as frames, like HTTP/2 DATA frames, so a small urgent response can
//! overtake a large one *in the application*:
//!
//! ```text
//! stream: u32 BE | length: u32 BE | flags: u8 (1 = last frame) | payload
//! ```
//!
//! Whether it also overtakes it *in the kernel* is what the writer options
//! decide: without a low-water mark the large response already fills the
//! send buffer when the urgent request arrives (the H2O experiment).

use std::collections::BTreeMap;

/// Most urgent and least urgent RFC 9218 urgency.
pub const MAX_URGENCY: u8 = 7;
/// Urgency of a request without `prio=`: RFC 9218's default.
pub const DEFAULT_URGENCY: u8 = 3;
/// Largest response a request may ask for (1 GiB).
pub const MAX_RESPONSE_BYTES: u64 = 1 << 30;
/// Longest request line accepted.
pub const MAX_LINE_BYTES: usize = 1024;
/// Frame header length.
pub const HEADER_LEN: usize = 9;
/// HTTP/2's default maximum frame payload.
pub const DEFAULT_FRAME_PAYLOAD: usize = 16_384;

const FLAG_FIN: u8 = 1;

/// Why a request line was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("request line is not `GET /size?bytes=N[&prio=P]`: {0:?}")]
    /// The line does not have the request's shape; carries the line.
    Syntax(String),
    #[error("bytes={0} is more than the 1 GiB limit")]
    /// `bytes=` asked for more than [`MAX_RESPONSE_BYTES`]; carries the value.
    TooLarge(u64),
    #[error("prio={0} is not an urgency from 0 to 7")]
    /// `prio=` was not a number from 0 to 7; carries what was given.
    Urgency(String),
    #[error("request line longer than {MAX_LINE_BYTES} bytes")]
    /// No newline within [`MAX_LINE_BYTES`] bytes.
    LineTooLong,
}

/// One request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Response payload size in bytes.
    pub bytes: u64,
    /// RFC 9218 urgency, 0 (most urgent) to 7.
    pub urgency: u8,
}

impl Request {
    /// A request for `bytes` of payload at `urgency` (0 to 7; not checked
    /// here, [`Request::parse`] checks what arrives).
    pub fn new(bytes: u64, urgency: u8) -> Self {
        Request { bytes, urgency }
    }

    /// The request line, newline included.
    pub fn to_line(&self) -> String {
        format!("GET /size?bytes={}&prio={}\n", self.bytes, self.urgency)
    }

    /// Parses one line (without its newline; a trailing `\r` and an
    /// ` HTTP/1.1` suffix are tolerated).
    pub fn parse(line: &str) -> Result<Self, RequestError> {
        let syntax = || RequestError::Syntax(line.chars().take(80).collect());
        let line = line.trim_end_matches('\r');
        let line = line.strip_suffix(" HTTP/1.1").unwrap_or(line);
        let query = line.strip_prefix("GET /size?").ok_or_else(syntax)?;
        let mut bytes = None;
        let mut urgency = DEFAULT_URGENCY;
        for pair in query.split('&') {
            match pair.split_once('=') {
                Some(("bytes", v)) => {
                    let n: u64 = v.parse().map_err(|_| syntax())?;
                    if n > MAX_RESPONSE_BYTES {
                        return Err(RequestError::TooLarge(n));
                    }
                    bytes = Some(n);
                }
                Some(("prio", v)) => {
                    urgency = v
                        .parse()
                        .ok()
                        .filter(|u| *u <= MAX_URGENCY)
                        .ok_or_else(|| RequestError::Urgency(v.chars().take(8).collect()))?;
                }
                _ => return Err(syntax()),
            }
        }
        Ok(Request {
            bytes: bytes.ok_or_else(syntax)?,
            urgency,
        })
    }
}

/// Splits a byte stream into request lines.
#[derive(Debug, Default)]
pub struct LineReader {
    buf: Vec<u8>,
}

impl LineReader {
    /// Appends received bytes; returns the complete requests in them.
    pub fn handle_bytes(&mut self, bytes: &[u8]) -> Result<Vec<Request>, RequestError> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line[..end]);
            if !text.trim().is_empty() {
                out.push(Request::parse(&text)?);
            }
        }
        if self.buf.len() > MAX_LINE_BYTES {
            return Err(RequestError::LineTooLong);
        }
        Ok(out)
    }
}

/// A frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Stream the frame belongs to (one per request, in request order).
    pub stream: u32,
    /// Payload bytes that follow the header.
    pub len: u32,
    /// Whether this is the stream's last frame.
    pub fin: bool,
}

impl FrameHeader {
    /// Appends the [`HEADER_LEN`] header bytes: stream and length big-endian,
    /// then the flags byte.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.stream.to_be_bytes());
        out.extend_from_slice(&self.len.to_be_bytes());
        out.push(if self.fin { FLAG_FIN } else { 0 });
    }

    /// Reads a header; flag bits other than FIN are ignored.
    pub fn parse(b: &[u8; HEADER_LEN]) -> Self {
        FrameHeader {
            stream: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            len: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
            fin: b[8] & FLAG_FIN != 0,
        }
    }
}

/// Responses waiting to be sent, most urgent first, then oldest first
/// (RFC 9218's non-incremental order).
#[derive(Debug)]
pub struct Scheduler {
    /// (urgency, stream) -> bytes still to send.
    pending: BTreeMap<(u8, u32), u64>,
    next_stream: u32,
    frame_payload: usize,
}

impl Scheduler {
    /// `frame_payload` is the largest payload per frame (at least 1).
    pub fn new(frame_payload: usize) -> Self {
        Scheduler {
            pending: BTreeMap::new(),
            next_stream: 0,
            frame_payload: frame_payload.max(1),
        }
    }

    /// Queues the response to `request`; returns its stream id.
    pub fn handle_request(&mut self, request: Request) -> u32 {
        let stream = self.next_stream;
        self.next_stream = self.next_stream.wrapping_add(1);
        self.pending
            .insert((request.urgency, stream), request.bytes);
        stream
    }

    /// Whether any response still has bytes to frame.
    pub fn has_data(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Frames to write now. With a budget, frames fill it (headers
    /// included, never below one byte of payload); without one, a single
    /// frame of the most urgent response: one sensible unit.
    pub fn poll_unit(&mut self, budget_bytes: Option<usize>) -> Vec<u8> {
        let mut out = Vec::new();
        match budget_bytes {
            None => self.push_frame(&mut out, self.frame_payload),
            Some(budget) => {
                let mut first = true;
                while self.has_data() {
                    let room = budget.saturating_sub(out.len() + HEADER_LEN);
                    if room == 0 && !first {
                        break;
                    }
                    self.push_frame(&mut out, room.clamp(1, self.frame_payload));
                    first = false;
                }
            }
        }
        out
    }

    fn push_frame(&mut self, out: &mut Vec<u8>, max_payload: usize) {
        let Some((&(urgency, stream), &remaining)) = self.pending.iter().next() else {
            return;
        };
        let len = remaining.min(max_payload as u64);
        let fin = len == remaining;
        FrameHeader {
            stream,
            len: len as u32,
            fin,
        }
        .emit(out);
        out.resize(out.len() + len as usize, stream as u8);
        if fin {
            self.pending.remove(&(urgency, stream));
        } else {
            self.pending.insert((urgency, stream), remaining - len);
        }
    }
}

/// What the client learns from received bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameEvent {
    /// `bytes` of payload for `stream`; `fin` when its last frame ended.
    Data {
        /// The stream the payload belongs to.
        stream: u32,
        /// Payload bytes in this run.
        bytes: u64,
        /// The stream's last frame ended here.
        fin: bool,
    },
}

/// Reassembles frames from a byte stream without copying payloads.
#[derive(Debug, Default)]
pub struct FrameReader {
    header: Vec<u8>,
    /// (stream, payload bytes left, fin) of the frame being read.
    current: Option<(u32, u64, bool)>,
}

impl FrameReader {
    /// Reads `bytes` (any split of the stream, even mid-header) and pushes one
    /// event per payload run; a partial header waits for the next call.
    pub fn handle_bytes(&mut self, mut bytes: &[u8], events: &mut Vec<FrameEvent>) {
        while !bytes.is_empty() {
            match self.current {
                None => {
                    let take = (HEADER_LEN - self.header.len()).min(bytes.len());
                    self.header.extend_from_slice(&bytes[..take]);
                    bytes = &bytes[take..];
                    if let Ok(h) = <&[u8; HEADER_LEN]>::try_from(self.header.as_slice()) {
                        let h = FrameHeader::parse(h);
                        self.header.clear();
                        if h.len == 0 {
                            events.push(FrameEvent::Data {
                                stream: h.stream,
                                bytes: 0,
                                fin: h.fin,
                            });
                        } else {
                            self.current = Some((h.stream, u64::from(h.len), h.fin));
                        }
                    }
                }
                Some((stream, left, fin)) => {
                    let take = left.min(bytes.len() as u64);
                    bytes = &bytes[take as usize..];
                    let left = left - take;
                    let done = left == 0;
                    events.push(FrameEvent::Data {
                        stream,
                        bytes: take,
                        fin: fin && done,
                    });
                    self.current = (!done).then_some((stream, left, fin));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    proptest::proptest! {
        /// A client's bytes, cut anywhere, give requests or an error and
        /// never more than a line's worth of buffer.
        #[test]
        fn no_request_stream_panics_or_grows(
            chunks in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
                    "(GET /size\\?(bytes|prio)=[0-9]{0,22}(&prio=[0-9]{0,4})?( HTTP/1.1)?\r?\n)"
                        .prop_map(String::into_bytes),
                ],
                0..10,
            ),
        ) {
            let mut reader = LineReader::default();
            for chunk in chunks {
                if reader.handle_bytes(&chunk).is_err() {
                    break;
                }
                proptest::prop_assert!(reader.buf.len() <= MAX_LINE_BYTES);
            }
        }
    }

    #[test]
    fn request_lines_round_trip_and_reject_garbage() {
        let r = Request::new(1_048_576, 0);
        assert_eq!(r.to_line(), "GET /size?bytes=1048576&prio=0\n");
        assert_eq!(Request::parse(r.to_line().trim_end()), Ok(r));
        assert_eq!(
            Request::parse("GET /size?bytes=10 HTTP/1.1\r"),
            Ok(Request::new(10, DEFAULT_URGENCY))
        );
        assert_eq!(
            Request::parse("GET /size?prio=1&bytes=5"),
            Ok(Request::new(5, 1))
        );
        for bad in [
            "",
            "POST /size?bytes=1",
            "GET /size?",
            "GET /size?bytes=x",
            "GET /size?bytes=1&color=red",
            "GET /size?bytes=-1",
        ] {
            assert!(
                matches!(Request::parse(bad), Err(RequestError::Syntax(_))),
                "{bad:?}"
            );
        }
        assert_eq!(
            Request::parse("GET /size?bytes=1&prio=8"),
            Err(RequestError::Urgency("8".into()))
        );
        assert_eq!(
            Request::parse("GET /size?bytes=2000000000"),
            Err(RequestError::TooLarge(2_000_000_000))
        );
    }

    #[test]
    fn line_reader_handles_split_and_pipelined_lines() {
        let mut r = LineReader::default();
        assert_eq!(r.handle_bytes(b"GET /size?by").unwrap(), []);
        let got = r
            .handle_bytes(b"tes=3\nGET /size?bytes=4&prio=0\n\nGET")
            .unwrap();
        assert_eq!(got, [Request::new(3, 3), Request::new(4, 0)]);
        assert!(matches!(
            r.handle_bytes(&[b'x'; MAX_LINE_BYTES + 1]),
            Err(RequestError::LineTooLong)
        ));
    }

    #[test]
    fn urgent_response_overtakes_a_large_one_between_frames() {
        let mut s = Scheduler::new(1000);
        s.handle_request(Request::new(3000, 3));
        let first = s.poll_unit(None);
        assert_eq!(first.len(), HEADER_LEN + 1000);
        let urgent = s.handle_request(Request::new(10, 0));
        let next = s.poll_unit(None);
        let h = FrameHeader::parse(next[..HEADER_LEN].try_into().unwrap());
        assert_eq!(
            h,
            FrameHeader {
                stream: urgent,
                len: 10,
                fin: true
            }
        );
        // Then the large one resumes and finishes.
        let mut total = 0;
        while s.has_data() {
            total += s.poll_unit(None).len() - HEADER_LEN;
        }
        assert_eq!(total, 2000);
    }

    #[test]
    fn budget_packs_frames_up_to_the_limit() {
        let mut s = Scheduler::new(16_384);
        s.handle_request(Request::new(100, 0));
        s.handle_request(Request::new(50_000, 3));
        // A write-sizing budget of 12 x 1448 bytes.
        let unit = s.poll_unit(Some(17_376));
        assert_eq!(unit.len(), 17_376);
        let mut events = Vec::new();
        FrameReader::default().handle_bytes(&unit, &mut events);
        assert_eq!(
            events,
            [
                FrameEvent::Data {
                    stream: 0,
                    bytes: 100,
                    fin: true
                },
                FrameEvent::Data {
                    stream: 1,
                    bytes: 16_384,
                    fin: false
                },
                FrameEvent::Data {
                    stream: 1,
                    bytes: (17_376 - 3 * HEADER_LEN - 100 - 16_384) as u64,
                    fin: false
                },
            ]
        );
        // A budget smaller than a header still makes progress.
        assert_eq!(s.poll_unit(Some(3)).len(), HEADER_LEN + 1);
    }

    #[test]
    fn frame_reader_survives_any_split() {
        let mut s = Scheduler::new(700);
        s.handle_request(Request::new(2000, 3));
        s.handle_request(Request::new(0, 0));
        let mut wire = Vec::new();
        while s.has_data() {
            wire.extend(s.poll_unit(None));
        }
        for chunk in [1, 2, 8, 9, 10, 701, 5000] {
            let mut reader = FrameReader::default();
            let mut events = Vec::new();
            for piece in wire.chunks(chunk) {
                reader.handle_bytes(piece, &mut events);
            }
            let mut per_stream = [0u64; 2];
            let mut fins = 0;
            for FrameEvent::Data { stream, bytes, fin } in events {
                per_stream[stream as usize] += bytes;
                fins += usize::from(fin);
            }
            assert_eq!(per_stream, [2000, 0], "chunk {chunk}");
            assert_eq!(fins, 2, "chunk {chunk}");
        }
    }
}
