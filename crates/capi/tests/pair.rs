//! A client and a server endpoint driven only through the C functions,
//! joined by a 10 ms in-memory path on a virtual clock: seeded, so each run
//! is the same. A 1 MiB download arrives whole on IPv4 and IPv6, a small
//! buffer keeps its datagram for the next call, and every function reports
//! NULL pointers instead of crashing.

use std::collections::VecDeque;
use std::ffi::CStr;
use std::ptr::{null, null_mut};

use brisk_capi::*;

const ONE_WAY_NS: u64 = 5_000_000;
const FILE_BYTES: usize = 1 << 20;

fn addr(text: &str) -> BriskAddr {
    let c = std::ffi::CString::new(text).expect("no NUL in a test address");
    let mut out = BriskAddr {
        family: 0,
        port: 0,
        ip: [0; 16],
    };
    // SAFETY: valid string and output.
    assert_eq!(
        unsafe { brisk_addr_parse(c.as_ptr(), &mut out) },
        BriskStatus::Ok
    );
    out
}

fn last_error() -> String {
    // SAFETY: the library returns a live NUL-ended string.
    unsafe { CStr::from_ptr(brisk_last_error()) }
        .to_string_lossy()
        .into_owned()
}

struct Side {
    ep: *mut BriskEndpoint,
    addr: BriskAddr,
}

/// Moves every datagram `from` has ready onto the path towards `to`.
fn drain(from: &Side, now: u64, path: &mut VecDeque<(u64, BriskAddr, Vec<u8>, u8)>, to: BriskAddr) {
    let mut buf = [0u8; 2048];
    loop {
        let mut t = BriskTransmit {
            destination: to,
            ecn: 0,
            len: 0,
        };
        // SAFETY: live endpoint, buffer and output.
        let s = unsafe { brisk_poll_transmit(from.ep, now, buf.as_mut_ptr(), buf.len(), &mut t) };
        if s == BriskStatus::Done {
            return;
        }
        assert_eq!(s, BriskStatus::Ok, "{}", last_error());
        assert_eq!(t.destination, to, "the datagram goes to the peer");
        path.push_back((now + ONE_WAY_NS, from.addr, buf[..t.len].to_vec(), t.ecn));
    }
}

fn deliver(to: &Side, now: u64, path: &mut VecDeque<(u64, BriskAddr, Vec<u8>, u8)>) {
    while path.front().is_some_and(|d| d.0 <= now) {
        let (_, from, bytes, ecn) = path.pop_front().expect("checked non-empty");
        // SAFETY: live endpoint and buffers.
        let s =
            unsafe { brisk_handle_datagram(to.ep, now, &from, ecn, bytes.as_ptr(), bytes.len()) };
        assert_eq!(s, BriskStatus::Ok, "{}", last_error());
    }
}

fn timeout(side: &Side) -> Option<u64> {
    let mut t = 0;
    // SAFETY: live endpoint and output.
    (unsafe { brisk_poll_timeout(side.ep, &mut t) } == BriskStatus::Ok).then_some(t)
}

fn events(side: &Side) -> Vec<BriskEvent> {
    let mut out = Vec::new();
    loop {
        let mut e = BriskEvent {
            kind: BriskEventKind::Closed,
            connection: 0,
            stream: 0,
            value: 0,
        };
        // SAFETY: live endpoint and output.
        match unsafe { brisk_poll_event(side.ep, &mut e) } {
            BriskStatus::Ok => out.push(e),
            BriskStatus::Done => return out,
            other => panic!("brisk_poll_event: {other:?}: {}", last_error()),
        }
    }
}

/// Runs the download; returns what the client read and the virtual time
/// it took in nanoseconds.
fn download(client_addr: &str, server_addr: &str) -> (Vec<u8>, u64) {
    let file: Vec<u8> = (0..FILE_BYTES).map(|i| (i * 7 % 251) as u8).collect();
    let private = [7u8; 32];
    let mut public = [0u8; 32];
    // SAFETY: 32-byte buffers.
    assert_eq!(
        unsafe { brisk_public_key(private.as_ptr(), public.as_mut_ptr()) },
        BriskStatus::Ok
    );
    let server = Side {
        // SAFETY: 32-byte key.
        ep: unsafe { brisk_endpoint_new(1, private.as_ptr()) },
        addr: addr(server_addr),
    };
    let client = Side {
        // SAFETY: a client needs no key.
        ep: unsafe { brisk_endpoint_new(2, null()) },
        addr: addr(client_addr),
    };
    assert!(!server.ep.is_null() && !client.ep.is_null());
    let mut conn = 0;
    // SAFETY: live endpoint, address, key and output.
    let s = unsafe { brisk_connect(client.ep, 0, &server.addr, public.as_ptr(), &mut conn) };
    assert_eq!(s, BriskStatus::Ok, "{}", last_error());

    let (mut up, mut down) = (VecDeque::new(), VecDeque::new());
    let (mut got, mut sent) = (Vec::new(), 0usize);
    let (mut server_conn, mut server_stream) = (None, None);
    let mut now = 0u64;
    let mut done_at = None;
    for _ in 0..2_000_000 {
        deliver(&server, now, &mut up);
        deliver(&client, now, &mut down);
        let mut accepted = 0;
        // SAFETY: live endpoint and output.
        while unsafe { brisk_accept(server.ep, &mut accepted) } == BriskStatus::Ok {
            server_conn = Some(accepted);
        }
        for e in events(&client) {
            match e.kind {
                BriskEventKind::Connected => {
                    let (mut stream, mut n) = (0, 0);
                    // SAFETY: live endpoint and outputs; the request is 4 bytes.
                    unsafe {
                        assert_eq!(
                            brisk_stream_open(client.ep, conn, true, &mut stream),
                            BriskStatus::Ok
                        );
                        assert_eq!(
                            brisk_stream_write(
                                client.ep,
                                conn,
                                stream,
                                b"GET\n".as_ptr(),
                                4,
                                &mut n
                            ),
                            BriskStatus::Ok
                        );
                        assert_eq!(
                            brisk_stream_finish(client.ep, conn, stream),
                            BriskStatus::Ok
                        );
                    }
                }
                BriskEventKind::StreamReadable => loop {
                    let mut buf = [0u8; 16 * 1024];
                    let (mut n, mut fin) = (0, false);
                    // SAFETY: live endpoint, buffer and outputs.
                    let s = unsafe {
                        brisk_stream_read(
                            client.ep,
                            conn,
                            e.stream,
                            buf.as_mut_ptr(),
                            buf.len(),
                            &mut n,
                            &mut fin,
                        )
                    };
                    if s == BriskStatus::Done {
                        break;
                    }
                    assert_eq!(s, BriskStatus::Ok, "{}", last_error());
                    got.extend_from_slice(&buf[..n]);
                    if fin {
                        done_at = Some(now);
                        break;
                    }
                },
                _ => {}
            }
        }
        let mut writable = false;
        for e in events(&server) {
            match e.kind {
                BriskEventKind::StreamOpened => {
                    let mut id = 0;
                    // SAFETY: live endpoint and output.
                    let s = unsafe { brisk_stream_accept(server.ep, e.connection, &mut id) };
                    assert_eq!(s, BriskStatus::Ok);
                    server_stream = Some(id);
                    writable = true;
                }
                BriskEventKind::StreamWritable => writable = true,
                _ => {}
            }
        }
        if let (true, Some(c), Some(s)) = (writable, server_conn, server_stream) {
            while sent < file.len() {
                let mut n = 0;
                let rest = &file[sent..];
                // SAFETY: live endpoint, data and output.
                let st = unsafe {
                    brisk_stream_write(server.ep, c, s, rest.as_ptr(), rest.len(), &mut n)
                };
                sent += n;
                if st == BriskStatus::Done {
                    break;
                }
                assert_eq!(st, BriskStatus::Ok, "{}", last_error());
                if sent == file.len() {
                    // SAFETY: live endpoint.
                    assert_eq!(
                        unsafe { brisk_stream_finish(server.ep, c, s) },
                        BriskStatus::Ok
                    );
                }
            }
        }
        drain(&client, now, &mut up, server.addr);
        drain(&server, now, &mut down, client.addr);
        if done_at.is_some() {
            break;
        }
        // Jump to the next arrival or timer.
        let next = [
            up.front().map(|d| d.0),
            down.front().map(|d| d.0),
            timeout(&client),
            timeout(&server),
        ]
        .into_iter()
        .flatten()
        .min()
        .expect("a transfer in progress always has a next event");
        now = now.max(next);
        for side in [&client, &server] {
            if timeout(side).is_some_and(|t| t <= now) {
                // SAFETY: live endpoint.
                assert_eq!(
                    unsafe { brisk_handle_timeout(side.ep, now) },
                    BriskStatus::Ok
                );
            }
        }
    }
    // SAFETY: each endpoint is freed once.
    unsafe {
        brisk_endpoint_free(client.ep);
        brisk_endpoint_free(server.ep);
    }
    assert_eq!(got.len(), file.len(), "bytes downloaded");
    assert!(got == file, "the download differs from the file");
    (got, done_at.expect("the download finished"))
}

#[test]
fn a_download_through_the_c_functions_arrives_whole_ipv4() {
    let (_, ns) = download("192.0.2.1:50000", "198.51.100.1:4433");
    println!(
        "IPv4: 1 MiB over a 10 ms path in {:.1} ms of virtual time",
        ns as f64 / 1e6
    );
    // A 1 MiB download needs several round trips; far under a second.
    assert!(ns > 2 * 2 * ONE_WAY_NS && ns < 1_000_000_000, "{ns} ns");
}

#[test]
fn a_download_through_the_c_functions_arrives_whole_ipv6() {
    let (_, ns) = download("[2001:db8::1]:50000", "[2001:db8::2]:4433");
    println!(
        "IPv6: 1 MiB over a 10 ms path in {:.1} ms of virtual time",
        ns as f64 / 1e6
    );
    assert!(ns > 2 * 2 * ONE_WAY_NS && ns < 1_000_000_000, "{ns} ns");
}

#[test]
fn the_same_seeds_give_the_same_run() {
    let a = download("192.0.2.1:50000", "198.51.100.1:4433").1;
    let b = download("192.0.2.1:50000", "198.51.100.1:4433").1;
    assert_eq!(a, b, "virtual completion time");
}

#[test]
fn a_small_buffer_keeps_the_datagram_for_the_next_call() {
    // SAFETY: a client needs no key.
    let ep = unsafe { brisk_endpoint_new(3, null()) };
    let server = addr("[2001:db8::2]:4433");
    let mut conn = 0;
    // SAFETY: live endpoint and outputs; XX needs no key.
    assert_eq!(
        unsafe { brisk_connect(ep, 0, &server, null(), &mut conn) },
        BriskStatus::Ok
    );
    let mut small = [0u8; 16];
    let mut t = BriskTransmit {
        destination: server,
        ecn: 0,
        len: 0,
    };
    // SAFETY: live endpoint; the buffer holds 16 bytes.
    let s = unsafe { brisk_poll_transmit(ep, 0, small.as_mut_ptr(), small.len(), &mut t) };
    assert_eq!(s, BriskStatus::BufferTooSmall);
    let needed = t.len;
    assert!(needed > 16, "{needed}");
    assert!(
        last_error().contains(&format!("needs {needed} bytes")),
        "{}",
        last_error()
    );
    let mut deadline = u64::MAX;
    // SAFETY: live endpoint and output.
    assert_eq!(
        unsafe { brisk_poll_timeout(ep, &mut deadline) },
        BriskStatus::Ok
    );
    assert_eq!(deadline, 0, "a held datagram is due at once");
    let mut big = vec![0u8; needed];
    // SAFETY: live endpoint; the buffer holds `needed` bytes.
    let s = unsafe { brisk_poll_transmit(ep, 0, big.as_mut_ptr(), big.len(), &mut t) };
    assert_eq!((s, t.len), (BriskStatus::Ok, needed));
    // SAFETY: freed once.
    unsafe { brisk_endpoint_free(ep) };
}

#[test]
fn null_pointers_and_bad_arguments_are_reported_not_crashes() {
    let mut u = 0u64;
    let mut n = 0usize;
    let mut fin = false;
    let mut buf = [0u8; 8];
    let a = addr("127.0.0.1:1");
    // SAFETY: every call is given NULL where the test says, valid pointers
    // elsewhere; the library must check before it reads.
    unsafe {
        let ep = brisk_endpoint_new(4, null());
        let null_ep: *mut BriskEndpoint = null_mut();
        let null_arg = BriskStatus::NullArgument;
        assert_eq!(brisk_connect(null_ep, 0, &a, null(), &mut u), null_arg);
        assert_eq!(brisk_connect(ep, 0, null(), null(), &mut u), null_arg);
        assert_eq!(brisk_connect(ep, 0, &a, null(), null_mut()), null_arg);
        assert_eq!(brisk_accept(ep, null_mut()), null_arg);
        assert_eq!(
            brisk_handle_datagram(ep, 0, null(), 0, buf.as_ptr(), 1),
            null_arg
        );
        assert_eq!(brisk_handle_datagram(ep, 0, &a, 0, null(), 1), null_arg);
        assert_eq!(
            brisk_poll_transmit(ep, 0, null_mut(), 8, null_mut()),
            null_arg
        );
        assert_eq!(brisk_poll_timeout(ep, null_mut()), null_arg);
        assert_eq!(brisk_handle_timeout(null_ep, 0), null_arg);
        assert_eq!(brisk_poll_event(ep, null_mut()), null_arg);
        assert_eq!(brisk_stream_open(ep, 0, true, null_mut()), null_arg);
        assert_eq!(brisk_stream_accept(ep, 0, null_mut()), null_arg);
        assert_eq!(brisk_stream_write(ep, 0, 0, null(), 3, &mut n), null_arg);
        assert_eq!(brisk_stream_finish(null_ep, 0, 0), null_arg);
        assert_eq!(
            brisk_stream_read(ep, 0, 0, null_mut(), 8, &mut n, &mut fin),
            null_arg
        );
        assert_eq!(brisk_connection_close(null_ep, 0, 0, 0), null_arg);
        assert_eq!(brisk_public_key(null(), buf.as_mut_ptr()), null_arg);
        assert!(
            last_error().contains("private_key must not be NULL"),
            "{}",
            last_error()
        );

        // Bad values: a connection that does not exist, a family, an ECN
        // codepoint, a port of 0, garbage bytes from the network.
        assert_eq!(
            brisk_stream_finish(ep, 99, 0),
            BriskStatus::UnknownConnection
        );
        assert!(
            last_error().contains("no connection 99"),
            "{}",
            last_error()
        );
        let bad_family = BriskAddr { family: 5, ..a };
        assert_eq!(
            brisk_connect(ep, 0, &bad_family, null(), &mut u),
            BriskStatus::InvalidArgument
        );
        assert_eq!(
            brisk_handle_datagram(ep, 0, &a, 4, buf.as_ptr(), 1),
            BriskStatus::InvalidArgument
        );
        let port_zero = addr("127.0.0.1:0");
        assert_eq!(
            brisk_connect(ep, 0, &port_zero, null(), &mut u),
            BriskStatus::ConnectError
        );
        let garbage = [0xffu8; 1200];
        assert_eq!(
            brisk_handle_datagram(ep, 0, &a, 0, garbage.as_ptr(), garbage.len()),
            BriskStatus::Ok
        );
        assert_eq!(
            brisk_handle_datagram(ep, 0, &a, 0, null(), 0),
            BriskStatus::Ok
        );
        brisk_endpoint_free(ep);
        brisk_endpoint_free(null_mut());
        assert!(!CStr::from_ptr(brisk_version()).to_bytes().is_empty());
    }
}
