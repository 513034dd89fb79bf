//! A replayed first flight must not make `brisk perf server` act: a
//! client's IK first flight carrying a download request as early data is
//! captured, the connection runs and closes, and the same datagram is sent
//! again from another port of the client's address, as an attacker
//! spoofing it would. The server may answer it only with its handshake
//! (at most three times the forged bytes, the amplification limit), never
//! with the download. The genuine client, whose request also travels on
//! its stream once the handshake is done, still gets its bytes. Over IPv4
//! and IPv6 loopback.

use brisk_proto::streams::StreamEvent;
use brisk_proto::{ClientConfig, Endpoint, Event, Idempotent};
use brisk_time::Instant;
use brisk_wire::Ecn;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The perf server's amplification limit.
const AMPLIFICATION_FACTOR: usize = 3;
/// Bytes the genuine client reads before it closes.
const GENUINE_BYTES: u64 = 200_000;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a perf server on `listen`; its address and public key.
fn perf_server(dir: &Path, listen: &str) -> (Server, SocketAddr, [u8; 32]) {
    let brisk = env!("CARGO_BIN_EXE_brisk");
    let prefix = dir.join("server");
    let keygen = Command::new(brisk)
        .args(["keygen", "--force", "-o"])
        .arg(&prefix)
        .output()
        .expect("keygen runs");
    assert!(keygen.status.success(), "{keygen:?}");
    let mut child = Command::new(brisk)
        .args(["perf", "server", "--listen", listen, "--key"])
        .arg(prefix.with_extension("key"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("perf server starts");
    let mut lines = BufReader::new(child.stderr.take().expect("piped")).lines();
    let line = lines.next().expect("a startup line").expect("text");
    std::thread::spawn(move || for _ in lines {});
    // "brisk perf: listening on ADDR (public key HEX)"
    let addr = line
        .split(" on ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next());
    let key = line
        .split("public key ")
        .nth(1)
        .map(|k| k.trim_end_matches(')'));
    let (Some(addr), Some(key)) = (addr, key) else {
        panic!("startup line: {line}");
    };
    let key = brisk_io::keys::load_public(key).expect("a public key");
    (Server(child), addr.parse().expect("an address"), key)
}

/// The download request of the perf protocol: `D` and a byte count.
fn download_request(bytes: u64) -> [u8; 9] {
    let mut h = [0u8; 9];
    h[0] = b'D';
    h[1..].copy_from_slice(&bytes.to_be_bytes());
    h
}

/// Runs a genuine client that asks for its download in its first flight;
/// returns that first datagram once it has read `GENUINE_BYTES` and closed.
fn genuine_client(server: SocketAddr, key: [u8; 32], local: &str) -> Vec<u8> {
    let sock = UdpSocket::bind(local).expect("bind");
    sock.set_read_timeout(Some(Duration::from_millis(2)))
        .expect("timeout");
    let clock = std::time::Instant::now();
    let now = || Instant::from_nanos(clock.elapsed().as_nanos() as u64);
    let mut ep = Endpoint::new(7, None);
    let h = ep
        .connect(now(), server, ClientConfig::new(Some(key)))
        .expect("connect");
    let stream = ep
        .connection_mut(h)
        .expect("the connection")
        .send_early(Idempotent::declare(&download_request(1 << 30)))
        .expect("early data");
    let mut first = Vec::new();
    ep.poll_transmit(now(), 1, &mut first)
        .expect("a first flight");
    sock.send_to(&first, server).expect("send");
    let (mut read, mut closed_at) = (0u64, None);
    let mut buf = vec![0u8; 65_536];
    while clock.elapsed() < Duration::from_secs(10) {
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            ep.handle_datagram(now(), from, Ecn::NotEct, &buf[..n]);
        }
        if ep.poll_timeout().is_some_and(|t| t <= now()) {
            ep.handle_timeout(now());
        }
        while let Some((_, e)) = ep.poll_event() {
            if e == Event::Stream(StreamEvent::Readable(stream))
                && let Some(c) = ep.connection_mut(h)
            {
                while let Ok(r) = c.read(stream, &mut buf) {
                    read += r.bytes as u64;
                    if r.bytes == 0 {
                        break;
                    }
                }
            }
        }
        if read >= GENUINE_BYTES && closed_at.is_none() {
            if let Some(c) = ep.connection_mut(h) {
                c.close(now(), 0, b"done");
            }
            closed_at = Some(clock.elapsed());
        }
        let mut d = Vec::new();
        while let Some(t) = ep.poll_transmit(now(), 1, &mut d) {
            sock.send_to(&d, t.destination).expect("send");
            d.clear();
        }
        if closed_at.is_some_and(|at| clock.elapsed() > at + Duration::from_millis(300)) {
            return first;
        }
    }
    panic!("the genuine client read {read} of {GENUINE_BYTES} bytes in 10 s");
}

/// Sends `flight` from a fresh port and counts the bytes that come back
/// within `listen_for`.
fn replay(server: SocketAddr, local: &str, flight: &[u8], listen_for: Duration) -> usize {
    let sock = UdpSocket::bind(local).expect("bind");
    sock.set_read_timeout(Some(Duration::from_millis(20)))
        .expect("timeout");
    sock.send_to(flight, server).expect("send");
    let clock = std::time::Instant::now();
    let (mut got, mut buf) = (0, vec![0u8; 65_536]);
    while clock.elapsed() < listen_for {
        if let Ok((n, _)) = sock.recv_from(&mut buf) {
            got += n;
        }
    }
    got
}

#[test]
fn a_replayed_first_flight_with_early_data_draws_no_more_than_the_handshake() {
    for (listen, local) in [("127.0.0.1:0", "127.0.0.1:0"), ("[::1]:0", "[::1]:0")] {
        if UdpSocket::bind(local).is_err() {
            assert_ne!(
                std::env::var("CI").as_deref(),
                Ok("true"),
                "no {local} on this host"
            );
            eprintln!("skipped {local}: this host has no such loopback address");
            continue;
        }
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (_server, addr, key) = perf_server(dir.path(), listen);
        let flight = genuine_client(addr, key, local);
        assert!(flight.len() >= 1200, "{} bytes", flight.len());
        // Long enough for the server's handshake retransmissions and for
        // a download to show.
        let got = replay(addr, local, &flight, Duration::from_millis(1500));
        eprintln!(
            "{listen}: a replayed {}-byte first flight drew {got} bytes",
            flight.len()
        );
        assert!(
            got <= AMPLIFICATION_FACTOR * flight.len(),
            "a replayed {}-byte first flight drew {got} bytes",
            flight.len()
        );
    }
}
