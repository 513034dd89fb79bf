//! Connecting over two local addresses at once (`Endpoint::connect_racing`)
//! on loopback, IPv4 and IPv6: a "Wi-Fi" endpoint, preferred, and a
//! "cellular" one (on IPv4 another loopback address, 127.0.0.2; IPv6
//! loopback has one address, so there the two paths differ by port). A
//! test hook black-holes the Wi-Fi endpoint (everything it sends or
//! receives is dropped, as a stalled access point would): the race must
//! start the cellular attempt after the attempt delay, win there long
//! before a handshake timeout, and the server must see only the cellular
//! connection. With both paths healthy, the Wi-Fi attempt connects alone.

mod common;

use brisk_io::{ConnectError, Endpoint, RacePolicy, ServerConfig};
use common::{config, keypair, loopback, pattern, server};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The response each connection's first stream gets, in bytes.
const RESPONSE: usize = 100_000;

/// Accepts connections, records where each came from, and answers each
/// stream with `RESPONSE` bytes of `pattern(RESPONSE, 7)` once its
/// request is read.
fn spawn_server(server: Endpoint) -> Arc<Mutex<Vec<Option<SocketAddr>>>> {
    let peers = Arc::new(Mutex::new(Vec::new()));
    let seen = peers.clone();
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            seen.lock().unwrap().push(conn.remote_address());
            tokio::spawn(async move {
                while let Ok(mut s) = conn.accept_stream().await {
                    tokio::spawn(async move {
                        let mut request = Vec::new();
                        if s.read_to_end(&mut request).await.is_ok()
                            && s.write_all(&pattern(RESPONSE, 7)).await.is_ok()
                        {
                            let _ = s.shutdown().await;
                        }
                    });
                }
            });
        }
    });
    peers
}

/// The second path's local address.
fn cellular(v6: bool) -> SocketAddr {
    if v6 {
        loopback(true)
    } else {
        "127.0.0.2:0".parse().unwrap()
    }
}

async fn fetch(conn: &brisk_io::Connection) -> Vec<u8> {
    let mut s = conn.open_stream().await.unwrap();
    s.write_all(b"GET").await.unwrap();
    s.shutdown().await.unwrap();
    let mut got = Vec::with_capacity(RESPONSE);
    s.read_to_end(&mut got).await.unwrap();
    got
}

async fn stalled_wifi_loses_the_race(v6: bool) {
    let server = server(v6);
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    let peers = spawn_server(server);
    let wifi = Endpoint::client_with(loopback(v6), config()).unwrap();
    wifi.set_black_hole(true);
    let cell = Endpoint::client_with(cellular(v6), config()).unwrap();
    let cell_addr = cell.local_addr();
    let policy = RacePolicy::default();
    let raced = Endpoint::connect_racing(vec![wifi, cell], addr, key, policy)
        .await
        .unwrap();
    eprintln!(
        "{}: stalled Wi-Fi: path {} connected after {:.1} ms ({} attempts, attempt delay {} ms)",
        if v6 { "IPv6" } else { "IPv4" },
        raced.path,
        raced.elapsed.as_secs_f64() * 1e3,
        raced.attempts,
        policy.attempt_delay.as_millis(),
    );
    assert_eq!((raced.path, raced.attempts), (1, 2));
    // The cellular attempt cannot start before the delay, and the race
    // must not wait for the Wi-Fi handshake's timeout.
    assert!(raced.elapsed >= policy.attempt_delay);
    assert!(raced.elapsed < config().handshake_timeout);
    assert_eq!(fetch(&raced.connection).await, pattern(RESPONSE, 7));
    // The server met only the cellular attempt.
    assert_eq!(*peers.lock().unwrap(), vec![Some(cell_addr)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_wifi_loses_the_race_v4() {
    stalled_wifi_loses_the_race(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_wifi_loses_the_race_v6() {
    stalled_wifi_loses_the_race(true).await;
}

async fn healthy_wifi_connects_alone(v6: bool) {
    let server = server(v6);
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    let peers = spawn_server(server);
    let wifi = Endpoint::client_with(loopback(v6), config()).unwrap();
    let wifi_addr = wifi.local_addr();
    let cell = Endpoint::client_with(cellular(v6), config()).unwrap();
    // The longest delay RFC 8305 allows: a loaded machine's loopback
    // handshake still fits in it.
    let policy = RacePolicy {
        attempt_delay: RacePolicy::MAX_ATTEMPT_DELAY,
        ..RacePolicy::default()
    };
    let raced = Endpoint::connect_racing(vec![wifi, cell], addr, key, policy)
        .await
        .unwrap();
    assert_eq!((raced.path, raced.attempts), (0, 1));
    assert_eq!(fetch(&raced.connection).await, pattern(RESPONSE, 7));
    assert_eq!(*peers.lock().unwrap(), vec![Some(wifi_addr)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthy_wifi_connects_alone_v4() {
    healthy_wifi_connects_alone(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthy_wifi_connects_alone_v6() {
    healthy_wifi_connects_alone(true).await;
}

/// A connection the server accepted: where from, and whether it closed.
type Accepted = (Option<SocketAddr>, Arc<AtomicBool>);

/// The server's idle timeout in the test below (30 s by default).
const IDLE_TIMEOUT: Duration = Duration::from_secs(1);

/// Both paths healthy and no attempt delay: both attempts start at once
/// and both may connect. The loser must be gone from the server by the
/// end of the server's idle timeout: closed by the client at once when
/// its handshake had finished at the client (most runs), else (the
/// server's answer was still on its way when the client gave up, and a
/// client closes a handshake it has no answer to without a word) aged
/// out by that timeout.
async fn a_losing_attempt_is_closed_at_the_server(v6: bool) {
    let mut c = ServerConfig::new(loopback(v6), keypair(1));
    c.endpoint = config();
    c.endpoint.transport.max_idle_timeout = IDLE_TIMEOUT;
    let server = Endpoint::server(c).unwrap();
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    let accepted: Arc<Mutex<Vec<Accepted>>> = Arc::default();
    let seen = accepted.clone();
    let watched = server.clone();
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            let closed = Arc::new(AtomicBool::new(false));
            seen.lock()
                .unwrap()
                .push((conn.remote_address(), closed.clone()));
            tokio::spawn(async move {
                let watch = conn.clone();
                tokio::spawn(async move {
                    watch.closed().await;
                    closed.store(true, Ordering::SeqCst);
                });
                while let Ok(mut s) = conn.accept_stream().await {
                    tokio::spawn(async move {
                        let mut request = Vec::new();
                        if s.read_to_end(&mut request).await.is_ok()
                            && s.write_all(&pattern(RESPONSE, 7)).await.is_ok()
                        {
                            let _ = s.shutdown().await;
                        }
                    });
                }
            });
        }
    });
    let paths = vec![
        Endpoint::client_with(loopback(v6), config()).unwrap(),
        Endpoint::client_with(cellular(v6), config()).unwrap(),
    ];
    let policy = RacePolicy {
        attempt_delay: Duration::ZERO,
        ..RacePolicy::default()
    };
    let raced = Endpoint::connect_racing(paths, addr, key, policy)
        .await
        .unwrap();
    assert_eq!(raced.attempts, 2);
    let winner = raced.endpoint.local_addr();
    // The winner works; by the end of its request the server has seen
    // whatever the loser sent.
    assert_eq!(fetch(&raced.connection).await, pattern(RESPONSE, 7));
    // Every connection the server accepted from the loser is closed, and
    // no handshake of it is left half open, within the idle timeout (and
    // a second for a loaded host).
    let settled = tokio::time::timeout(IDLE_TIMEOUT + Duration::from_secs(1), async {
        loop {
            let open_losers = accepted
                .lock()
                .unwrap()
                .iter()
                .filter(|(from, closed)| *from != Some(winner) && !closed.load(Ordering::SeqCst))
                .count();
            if open_losers == 0 && watched.half_open() == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let n = accepted.lock().unwrap().len();
    eprintln!(
        "{}: both attempts at once: path {} won; the server accepted {n} connection(s)",
        if v6 { "IPv6" } else { "IPv4" },
        raced.path
    );
    let open: Vec<_> = accepted
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, closed)| !closed.load(Ordering::SeqCst))
        .map(|(from, _)| *from)
        .collect();
    assert!(
        settled.is_ok(),
        "a losing attempt stayed at the server: {} half open; open: {open:?}, winner {winner}",
        watched.half_open()
    );
    assert!(
        accepted
            .lock()
            .unwrap()
            .iter()
            .any(|(from, _)| *from == Some(winner))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_losing_attempt_is_closed_at_the_server_v4() {
    a_losing_attempt_is_closed_at_the_server(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_losing_attempt_is_closed_at_the_server_v6() {
    a_losing_attempt_is_closed_at_the_server(true).await;
}

#[tokio::test]
async fn a_race_without_paths_says_so() {
    let addr: SocketAddr = "127.0.0.1:4433".parse().unwrap();
    let key = keypair(1).public();
    let err = Endpoint::connect_racing(Vec::new(), addr, key, RacePolicy::default())
        .await
        .unwrap_err();
    assert_eq!(err, ConnectError::NoPaths { addr });
}

#[test]
fn the_attempt_delay_follows_a_known_round_trip_within_rfc_8305_bounds() {
    let ms = std::time::Duration::from_millis;
    assert_eq!(RacePolicy::for_round_trip(ms(20)).attempt_delay, ms(250));
    assert_eq!(RacePolicy::for_round_trip(ms(300)).attempt_delay, ms(600));
    assert_eq!(RacePolicy::for_round_trip(ms(5000)).attempt_delay, ms(2000));
}
