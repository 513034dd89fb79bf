//! Packets and a scripted session for the optimizer's tests, written once
//! and run for IPv4 and IPv6.

#![allow(dead_code)]

pub mod download;

use brisk_optimizer::{Config, ConnectionKey, Optimizer, Side, Transmit};
use brisk_time::Instant;
use brisk_wire::Ecn;
use brisk_wire::ip::{TcpSegment, parse_tcp, tcp_datagram};
use brisk_wire::tcp::{SackBlock, TcpFlags, TcpOption, TcpRepr};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// The address family a case runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

pub const FAMILIES: [Family; 2] = [Family::V4, Family::V6];

impl Family {
    /// Client `n` of the family's mobile network and its server.
    pub fn client(self, n: u16) -> SocketAddr {
        let ip: IpAddr = match self {
            Family::V4 => format!("10.64.0.{}", 1 + n / 100).parse().unwrap(),
            Family::V6 => format!("2001:db8:64::{}", 1 + n / 100).parse().unwrap(),
        };
        SocketAddr::new(ip, 40000 + n)
    }
    pub fn server(self) -> SocketAddr {
        match self {
            Family::V4 => "192.0.2.80:443".parse().unwrap(),
            Family::V6 => "[2001:db8:80::1]:443".parse().unwrap(),
        }
    }
}

/// Builds one TCP datagram; one argument per header field a case sets.
#[allow(clippy::too_many_arguments)]
pub fn tcp(
    from: SocketAddr,
    to: SocketAddr,
    seq: u32,
    ack: u32,
    flags: TcpFlags,
    window: u16,
    options: Vec<TcpOption>,
    payload: &[u8],
) -> Vec<u8> {
    let repr = TcpRepr {
        src_port: from.port(),
        dst_port: to.port(),
        seq_number: seq,
        ack_number: ack,
        flags,
        window,
        urgent_pointer: 0,
        options,
    };
    tcp_datagram(from.ip(), to.ip(), Ecn::NotEct, &repr, payload).unwrap()
}

/// The byte at stream offset `i` of the server's download.
pub fn stream_byte(i: u64) -> u8 {
    (i.wrapping_mul(2_654_435_761) >> 13) as u8
}

pub fn stream(off: u64, len: usize) -> Vec<u8> {
    (off..off + len as u64).map(stream_byte).collect()
}

/// Options of a typical mobile client's SYN.
pub fn syn_options(ts: bool, wscale: Option<u8>) -> Vec<TcpOption> {
    let mut o = vec![TcpOption::Mss(1400), TcpOption::SackPermitted];
    if ts {
        o.push(TcpOption::Timestamps {
            tsval: 1000,
            tsecr: 0,
        });
    }
    if let Some(s) = wscale {
        o.push(TcpOption::Nop);
        o.push(TcpOption::WindowScale(s));
    }
    o
}

pub fn parse(t: &Transmit) -> TcpSegment<'_> {
    parse_tcp(&t.datagram).expect("the optimizer only sends valid TCP")
}

/// One client connection through an optimizer, driven packet by packet.
pub struct Session {
    pub opt: Optimizer,
    pub now: Instant,
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub cisn: u32,
    pub sisn: u32,
    pub ts: bool,
    pub wscale: u8,
    /// Everything the optimizer sent, with the time.
    pub log: Vec<(Instant, Transmit)>,
    /// The window the client's handshake ACK advertises, bytes.
    pub handshake_window: u64,
    /// The right edge (stream offset) the handshake ACK that reached the
    /// server offered it.
    pub server_edge: u64,
}

pub const MSS: usize = 1400;

impl Session {
    pub fn new(family: Family, config: Config) -> Session {
        Session {
            opt: Optimizer::new(config),
            now: Instant::from_millis(1),
            client: family.client(1),
            server: family.server(),
            cisn: 0xfff0_0000,
            sisn: 0xffff_ff00,
            ts: true,
            wscale: 7,
            log: Vec::new(),
            handshake_window: 1 << 20,
            server_edge: 0,
        }
    }

    pub fn key(&self) -> ConnectionKey {
        ConnectionKey::new(self.client, self.server)
    }

    /// Hands a datagram in and returns what came out at once.
    pub fn feed(&mut self, from: Side, d: Vec<u8>) -> Vec<Transmit> {
        self.opt.handle_packet(self.now, from, d);
        self.drain()
    }

    pub fn drain(&mut self) -> Vec<Transmit> {
        let mut v = Vec::new();
        while let Some(t) = self.opt.poll_transmit() {
            self.log.push((self.now, t.clone()));
            v.push(t);
        }
        v
    }

    /// Moves time forward to `until`, running every timer due on the way.
    pub fn run_until(&mut self, until: Instant) -> Vec<Transmit> {
        let mut v = Vec::new();
        while let Some(t) = self.opt.poll_timeout() {
            if t > until {
                break;
            }
            self.now = self.now.max(t);
            self.opt.handle_timeout(self.now);
            v.extend(self.drain());
        }
        self.now = until;
        v
    }

    pub fn advance(&mut self, d: Duration) -> Vec<Transmit> {
        let until = self.now + d;
        self.run_until(until)
    }

    pub fn ts_opt(&self, tsval: u32, tsecr: u32) -> Vec<TcpOption> {
        if self.ts {
            vec![
                TcpOption::Nop,
                TcpOption::Nop,
                TcpOption::Timestamps { tsval, tsecr },
            ]
        } else {
            Vec::new()
        }
    }

    /// The client's SYN with sequence number `isn` and this session's
    /// options (timestamps, window scale).
    pub fn client_syn(&self, isn: u32) -> Vec<u8> {
        let options = syn_options(self.ts, Some(self.wscale));
        tcp(
            self.client,
            self.server,
            isn,
            0,
            TcpFlags::SYN,
            65535,
            options,
            &[],
        )
    }

    /// SYN, SYN-ACK, ACK; asserts each passed byte for byte.
    pub fn handshake(&mut self) {
        let syn = self.client_syn(self.cisn);
        assert_eq!(
            self.feed(Side::Client, syn.clone()),
            vec![Transmit {
                toward: Side::Server,
                datagram: syn
            }]
        );
        let mut sa_opts = vec![
            TcpOption::Mss(1460),
            TcpOption::SackPermitted,
            TcpOption::Nop,
            TcpOption::WindowScale(9),
        ];
        if self.ts {
            sa_opts.push(TcpOption::Timestamps {
                tsval: 5000,
                tsecr: 1000,
            });
        }
        let synack = tcp(
            self.server,
            self.client,
            self.sisn,
            self.cisn.wrapping_add(1),
            TcpFlags::SYN | TcpFlags::ACK,
            65535,
            sa_opts,
            &[],
        );
        assert_eq!(
            self.feed(Side::Server, synack.clone()),
            vec![Transmit {
                toward: Side::Client,
                datagram: synack
            }]
        );
        let ack = self.client_ack_datagram(0, self.handshake_window, &[]);
        let lowered_before = self.opt.stats().handshake_windows_lowered;
        let out = self.feed(Side::Client, ack.clone());
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].toward, Side::Server);
        if self.opt.stats().handshake_windows_lowered == lowered_before {
            assert_eq!(out[0].datagram, ack, "passed byte for byte");
        } else {
            // Only the window (and so the checksum) may differ.
            let original = Transmit {
                toward: Side::Server,
                datagram: ack,
            };
            let (sent, got) = (parse(&out[0]), parse(&original));
            assert!(sent.tcp.window < got.tcp.window);
            assert_eq!(
                (sent.tcp.seq_number, sent.tcp.ack_number, sent.tcp.flags),
                (got.tcp.seq_number, got.tcp.ack_number, got.tcp.flags)
            );
            assert_eq!(sent.tcp.options, got.tcp.options);
            assert_eq!(sent.payload, got.payload);
        }
        let p = parse(&out[0]);
        self.server_edge = u64::from(p.tcp.window) << self.wscale;
    }

    /// The server's sequence number of stream offset `off`.
    pub fn sseq(&self, off: u64) -> u32 {
        self.sisn.wrapping_add(1).wrapping_add(off as u32)
    }

    pub fn server_data_datagram(&self, off: u64, len: usize, fin: bool) -> Vec<u8> {
        let mut flags = TcpFlags::ACK | TcpFlags::PSH;
        if fin {
            flags |= TcpFlags::FIN;
        }
        let opts = self.ts_opt(5000 + (off / 1000) as u32, 1000);
        tcp(
            self.server,
            self.client,
            self.sseq(off),
            self.cisn.wrapping_add(1),
            flags,
            1000,
            opts,
            &stream(off, len),
        )
    }

    pub fn server_data(&mut self, off: u64, len: usize) -> Vec<Transmit> {
        let d = self.server_data_datagram(off, len, false);
        self.feed(Side::Server, d)
    }

    /// Sends `n` full segments from `off`; returns what came out.
    pub fn server_burst(&mut self, off: u64, n: usize) -> Vec<Transmit> {
        let mut v = Vec::new();
        for i in 0..n {
            v.extend(self.server_data(off + (i * MSS) as u64, MSS));
        }
        v
    }

    /// A client ACK of stream offset `ack` with a window of `window` bytes
    /// and SACK blocks given as stream offsets.
    pub fn client_ack_datagram(&self, ack: u64, window: u64, sacks: &[(u64, u64)]) -> Vec<u8> {
        let mut opts = self.ts_opt(2000, 5000);
        if !sacks.is_empty() {
            opts.push(TcpOption::Nop);
            opts.push(TcpOption::Nop);
            opts.push(TcpOption::Sack(
                sacks
                    .iter()
                    .take(3)
                    .map(|&(l, r)| SackBlock {
                        left: self.sseq(l),
                        right: self.sseq(r),
                    })
                    .collect(),
            ));
        }
        let w = (window >> self.wscale).min(65535) as u16;
        tcp(
            self.client,
            self.server,
            self.cisn.wrapping_add(1),
            self.sseq(ack),
            TcpFlags::ACK,
            w,
            opts,
            &[],
        )
    }

    pub fn client_ack(&mut self, ack: u64, sacks: &[(u64, u64)]) -> Vec<Transmit> {
        let d = self.client_ack_datagram(ack, 1 << 20, sacks);
        self.feed(Side::Client, d)
    }
}

/// Data segments (stream offset, length) in a batch of outputs toward the client.
pub fn data_to_client(s: &Session, out: &[Transmit]) -> Vec<(u64, usize)> {
    out.iter()
        .filter(|t| t.toward == Side::Client)
        .map(parse)
        .filter(|p| !p.payload.is_empty())
        .map(|p| {
            (
                u64::from(p.tcp.seq_number.wrapping_sub(s.sseq(0))),
                p.payload.len(),
            )
        })
        .collect()
}

/// ACK numbers (as stream offsets) of packets toward the server.
pub fn acks_to_server(s: &Session, out: &[Transmit]) -> Vec<u64> {
    out.iter()
        .filter(|t| t.toward == Side::Server)
        .map(parse)
        .map(|p| u64::from(p.tcp.ack_number.wrapping_sub(s.sseq(0))))
        .collect()
}
