//! The optimizer is transparent to real kernel TCP, on IPv4 and IPv6,
//! through the live router (10 Mbit/s, 20 ms each way):
//! - a 3 MB download whose optimizer is switched off a third of the way
//!   through completes with the server's SHA-256;
//! - SYNs with an option the optimizer does not know (a TCP Fast Open
//!   cookie request, then a cookie with data) pass untouched: the
//!   optimizer leaves those connections alone, and the server's cookie
//!   reaches the client and comes back, so the repeat connections' SYN
//!   data is accepted.

mod common;

use brisk_live::recipes::fastopen::{self, TfoExperiment};
use brisk_live::{IpMode, Lab, LabConfig};
use brisk_optimizer::Reason;
use sha2::{Digest, Sha256};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

const PORT: u16 = 5311;
const BYTES: usize = 3_000_000;
/// The optimizer is switched off once the client has read this much.
const SWITCH_OFF_AT: usize = BYTES / 3;

/// The download's bytes: a seeded xorshift stream, so that a byte moved,
/// lost or doubled changes the hash.
fn content() -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    (0..BYTES.div_ceil(8))
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()
        })
        .take(BYTES)
        .collect()
}

/// Sends `data` to the first client, then waits for it to close.
fn serve(listener: TcpListener, data: Vec<u8>) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut stream = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(e),
        }
    };
    stream.set_nonblocking(false)?;
    stream.write_all(&data)?;
    stream.shutdown(std::net::Shutdown::Write)?;
    stream.set_read_timeout(Some(Duration::from_secs(20)))?;
    let mut sink = [0u8; 512];
    while stream.read(&mut sink)? > 0 {}
    Ok(())
}

/// Downloads through `lab`, switching the optimizer off part way; the
/// SHA-256 and length of what the client read.
fn download_switching_off(lab: &Lab) -> ([u8; 32], usize) {
    let bind = SocketAddr::new(lab.server_bind_addr(), PORT);
    let target = SocketAddr::new(lab.server_addr(), PORT);
    let listener = lab
        .server_ns()
        .run(|| TcpListener::bind(bind))
        .expect("enter the server namespace")
        .expect("listen");
    let server = lab
        .server_ns()
        .spawn("transparency-server", move || serve(listener, content()))
        .expect("start the server");
    // A socket belongs to the namespace it was made in: connect there,
    // read here.
    let mut stream = lab
        .client_ns()
        .run(|| TcpStream::connect_timeout(&target, Duration::from_secs(5)))
        .expect("enter the client namespace")
        .expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("configure the client socket");
    let mut hash = Sha256::new();
    let mut got = 0;
    let mut switched = false;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = stream.read(&mut buf).expect("read the download");
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
        got += n;
        if !switched && got >= SWITCH_OFF_AT {
            lab.stop_optimizing();
            switched = true;
        }
    }
    drop(stream);
    server
        .join()
        .expect("server thread")
        .expect("server namespace")
        .expect("server sends");
    (hash.finalize().into(), got)
}

#[test]
fn kernel_tcp_stays_whole_when_the_optimizer_stops_and_unknown_syn_options_pass() {
    let Some(_g) = common::lab_guard(
        "kernel_tcp_stays_whole_when_the_optimizer_stops_and_unknown_syn_options_pass",
    ) else {
        return;
    };
    let expected: [u8; 32] = Sha256::digest(content()).into();
    for ip in [IpMode::V4, IpMode::V6] {
        let toml = "[link.down]\nrate = \"10Mbit\"\ndelay = \"20ms\"\n\
                    [link.up]\nrate = \"10Mbit\"\ndelay = \"20ms\"\n\
                    [queue.fifo]\nlimit_packets = 1000\n";
        let mut config = LabConfig::new(common::scenario(toml));
        config.ip = ip;
        config.optimizer = Some(brisk_optimizer::Config::default());
        let lab = Lab::up(config).expect("lab comes up");
        let (digest, got) = download_switching_off(&lab);
        let tfo = fastopen::run(&lab, &TfoExperiment::new(true)).expect("Fast Open runs");
        let results = lab.finish(None, None).expect("lab finishes");
        let stats = results
            .driver
            .optimizer
            .expect("the router ran the optimizer");
        let refused = stats.refused.get(&Reason::UnknownSynOption).copied();
        eprintln!(
            "{ip:?}: read {got} of {BYTES} bytes, SHA-256 {}; optimized {} connection(s), \
             stopped on request {:?}; Fast Open SYNs left alone {refused:?}, repeat SYN data \
             accepted by the server {}",
            if digest == expected {
                "matches"
            } else {
                "DIFFERS"
            },
            stats.optimized_connections,
            stats.stopped.get(&Reason::Requested),
            tfo.repeat_syn_data_acked,
        );
        assert_eq!(got, BYTES, "{ip:?}");
        assert_eq!(digest, expected, "{ip:?}: the client's bytes differ");
        // The download was optimized until it was switched off mid-way.
        assert_eq!(stats.optimized_connections, 1, "{ip:?}: {stats:?}");
        assert_eq!(
            stats.stopped.get(&Reason::Requested),
            Some(&1),
            "{ip:?}: {stats:?}"
        );
        // Every Fast Open connection passed untouched, and the cookie
        // made it to the client and back.
        assert_eq!(
            refused,
            Some(u64::from(TfoExperiment::new(true).connections)),
            "{ip:?}: {stats:?}"
        );
        assert!(tfo.repeat_syn_data_acked, "{ip:?}: {tfo:?}");
    }
}
