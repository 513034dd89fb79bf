//! Real sockets on 127.0.0.1 and ::1: socket options read back, TCP_INFO
//! on live connections, bounded staleness with a low-water mark, Happy
//! Eyeballs against a silently dropping listener, and the experiment
//! server and client end to end.

mod common;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use brisk_tcp::connect::{self, AttemptOutcome, ConnectOptions, Nat64Policy};
use brisk_tcp::happy_eyeballs::Source;
use brisk_tcp::lowat::{LowatWriter, WriterConfig};
use brisk_tcp::server::{ServeConfig, Server};
use brisk_tcp::{SockoptError, Sysctls, TcpInfo, WriteSizingConfig, client, sockopt, tuning};
use common::{can_bind, loopbacks, skip};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// A connected pair over `ip`: (client side, server side).
async fn pair(ip: IpAddr) -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind(SocketAddr::new(ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (client, server) = tokio::join!(TcpStream::connect(addr), listener.accept());
    (client.unwrap(), server.unwrap().0)
}

#[tokio::test]
async fn notsent_lowat_is_set_and_read_back() {
    if !cfg!(target_os = "linux") {
        return skip("notsent_lowat", "TCP_NOTSENT_LOWAT is driven on Linux only");
    }
    for ip in loopbacks().into_iter().filter(|ip| can_bind(*ip)) {
        let (client, _server) = pair(ip).await;
        for mark in [16_384, 1, 131_072] {
            sockopt::set_notsent_lowat(&client, mark).unwrap();
            assert_eq!(sockopt::notsent_lowat(&client).unwrap(), mark, "{ip}");
        }
        // 0 hands the socket back to the sysctl default.
        sockopt::set_notsent_lowat(&client, 0).unwrap();
        assert_eq!(sockopt::notsent_lowat(&client).unwrap(), 0);
    }
}

#[tokio::test]
async fn tcp_info_is_readable_on_a_live_connection() {
    if !cfg!(target_os = "linux") {
        return skip("tcp_info", "TCP_INFO is parsed for Linux only");
    }
    for ip in loopbacks().into_iter().filter(|ip| can_bind(*ip)) {
        let (mut client, mut server) = pair(ip).await;
        let sent = vec![7u8; 200_000];
        let (w, r) = tokio::join!(client.write_all(&sent), async {
            let mut got = vec![0u8; sent.len()];
            server.read_exact(&mut got).await.map(|_| got)
        });
        w.unwrap();
        assert_eq!(r.unwrap(), sent);
        // The last ACK may still be on its way; loopback delivers it fast.
        let mut info = TcpInfo::read(&client).unwrap();
        for _ in 0..100 {
            if info.bytes_acked >= Some(sent.len() as u64) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
            info = TcpInfo::read(&client).unwrap();
        }
        assert_eq!(info.state, 1, "ESTABLISHED");
        // Loopback's 65536-byte MTU: IPv4 caps the MSS at 65535 - 40
        // (IPV4_MAX_PMTU), IPv6 takes 65536 - 60; both lose 12 bytes to the
        // timestamp option. Both ends are this host, so they agree.
        let expected = if ip.is_ipv6() {
            65_476 - 12
        } else {
            65_495 - 12
        };
        assert_eq!(info.snd_mss_bytes, expected, "{ip}");
        assert_eq!(info.advmss_bytes, expected, "{ip}");
        assert!(info.snd_cwnd_pkts >= 10, "initial window is 10: {info:?}");
        assert!(info.rtt_us > 0 && info.rtt_us < 1_000_000, "{info:?}");
        let min_rtt = info.min_rtt_us.expect("Linux 4.6+ reports min_rtt");
        assert!(
            min_rtt > 0 && min_rtt <= info.rtt_us + info.rttvar_us,
            "{info:?}"
        );
        assert!(info.bytes_acked >= Some(sent.len() as u64), "{info:?}");
        assert_eq!(info.unacked_pkts, 0);
        assert_eq!(info.notsent_bytes, Some(0));
        let server_info = TcpInfo::read(&server).unwrap();
        assert_eq!(server_info.bytes_received, Some(sent.len() as u64));
    }
}

#[tokio::test]
async fn congestion_control_set_and_read_back_for_each_algorithm() {
    let available = match tuning::available_congestion_controls(&Sysctls::system()) {
        Ok(list) => list,
        Err(e) => return skip("congestion", &e.to_string()),
    };
    assert!(!available.is_empty());
    for ip in loopbacks().into_iter().filter(|ip| can_bind(*ip)) {
        let (client, _server) = pair(ip).await;
        for name in &available {
            tuning::set_congestion(&client, name).unwrap();
            assert_eq!(&tuning::congestion(&client).unwrap(), name, "{ip}");
        }
        let err = tuning::set_congestion(&client, "no_such_cc").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        let text = err.to_string();
        assert!(
            text.contains("ENOENT") && text.contains("modprobe tcp_no_such_cc"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn explicit_buffers_are_doubled_and_capped() {
    let limits = match tuning::BufferLimits::read(&Sysctls::system(), tuning::Direction::Send) {
        Ok(l) => l,
        Err(e) => return skip("buffers", &e.to_string()),
    };
    let socket = TcpSocket::new_v4().unwrap();
    let plan = tuning::plan_buffer(65_536, &limits);
    let stored = tuning::apply_buffer(&socket, &plan).unwrap();
    assert_eq!(stored as u64, plan.effective_bytes);
    assert_eq!(stored, 131_072);
    // A request above net.core.wmem_max is cut to it, then doubled.
    let huge = tuning::plan_buffer(limits.core_max_bytes * 4, &limits);
    let stored = tuning::apply_buffer(&socket, &huge).unwrap();
    assert_eq!(stored as u64, 2 * limits.core_max_bytes);
    assert!(huge.capped);
}

const UNIT: usize = 1024;

/// A sender writing timestamped units behind a reader that drains 2 KB per
/// millisecond; returns the worst age (ms) of the last 100 units read.
async fn staleness(lowat: Option<u32>) -> f64 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let socket = TcpSocket::new_v4().unwrap();
    // A small receive buffer so the sender, not the receiver, holds the
    // backlog.
    socket.set_recv_buffer_size(4096).unwrap();
    let (client, accepted) = tokio::join!(socket.connect(addr), listener.accept());
    let mut client = client.unwrap();
    let server = accepted.unwrap().0;
    // Same send buffer in both runs: 64 KB requested, 128 KB stored.
    sockopt::set_send_buffer(&server, 65_536).unwrap();
    let epoch = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let stop_sender = Arc::clone(&stop);
    let sender = tokio::spawn(async move {
        let config = WriterConfig {
            lowat_bytes: lowat,
            sizing: None,
        };
        let mut writer = LowatWriter::new(server, config).unwrap();
        // Each unit carries the time it was produced.
        let mut source = |_: Option<usize>| {
            if stop_sender.load(Ordering::Relaxed) {
                return None;
            }
            let mut unit = vec![0u8; UNIT];
            let stamp = epoch.elapsed().as_nanos() as u64;
            unit[..8].copy_from_slice(&stamp.to_be_bytes());
            Some(unit)
        };
        let _ = writer.pump(&mut source).await;
    });
    let mut ages = Vec::new();
    let mut unit = [0u8; UNIT];
    for i in 0..300 {
        client.read_exact(&mut unit).await.unwrap();
        let stamp = u64::from_be_bytes(unit[..8].try_into().unwrap());
        let age = epoch.elapsed().as_nanos() as f64 - stamp as f64;
        ages.push(age / 1e6);
        if i % 2 == 1 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    stop.store(true, Ordering::Relaxed);
    drop(client);
    let _ = sender.await;
    ages[200..].iter().copied().fold(0.0, f64::max)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lowat_bounds_staleness_behind_a_slow_reader() {
    if !cfg!(target_os = "linux") {
        return skip("staleness", "TCP_NOTSENT_LOWAT is driven on Linux only");
    }
    let default_age = staleness(None).await;
    let lowat_age = staleness(Some(4096)).await;
    eprintln!("worst unit age: kernel default {default_age:.1} ms, lowat 4 KB {lowat_age:.1} ms");
    // Without a mark the whole send buffer (128 KB at about 2 KB/ms) sits
    // ahead of every new unit; with one, only the mark plus the receiver's
    // few KB do.
    assert!(default_age > 30.0, "default {default_age} ms");
    assert!(
        lowat_age * 3.0 < default_age,
        "lowat {lowat_age} ms vs default {default_age} ms"
    );
}

#[tokio::test]
async fn write_sizing_budget_and_mark_follow_tcp_info() {
    if !cfg!(target_os = "linux") {
        return skip("write_sizing", "TCP_INFO sizing is driven on Linux only");
    }
    for ip in loopbacks().into_iter().filter(|ip| can_bind(*ip)) {
        let (client, _server) = pair(ip).await;
        // Loopback RTT is far below 50 ms: H2O's defaults leave it alone.
        let config = WriterConfig {
            lowat_bytes: Some(16_384),
            sizing: Some(WriteSizingConfig::default()),
        };
        let mut writer = LowatWriter::new(&client, config).unwrap();
        assert_eq!(writer.ready().await.unwrap(), None);
        assert_eq!(sockopt::notsent_lowat(&client).unwrap(), 16_384);
        // With min_rtt at zero the optimisation applies: on an idle
        // connection nothing is unacked, so the budget is (cwnd + 2) * mss.
        let config = WriterConfig {
            lowat_bytes: Some(16_384),
            sizing: Some(WriteSizingConfig {
                min_rtt: Duration::ZERO,
                max_cwnd_bytes: u64::MAX,
                ..WriteSizingConfig::default()
            }),
        };
        let mut writer = LowatWriter::new(&client, config).unwrap();
        let budget = writer.ready().await.unwrap().expect("sized");
        let info = TcpInfo::read(&client).unwrap();
        assert_eq!(
            budget as u64,
            u64::from(info.snd_cwnd_pkts - info.unacked_pkts + 2) * u64::from(info.snd_mss_bytes)
        );
        assert_eq!(sockopt::notsent_lowat(&client).unwrap(), 1);
    }
}

#[tokio::test]
async fn happy_eyeballs_wins_over_ipv4_when_ipv6_drops_syns() {
    if !can_bind("::1".parse().unwrap()) {
        return skip("happy_eyeballs", "no ::1 on this host");
    }
    // The good listener on 127.0.0.1:P.
    let good = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = good.local_addr().unwrap().port();
    // [::1]:P drops SYNs silently: a backlog of 0 filled by one connection
    // that is never accepted. Linux drops SYNs to a full accept queue
    // without a RST, like a blackholed route.
    let hole = socket2::Socket::new(socket2::Domain::IPV6, socket2::Type::STREAM, None).unwrap();
    hole.bind(&SocketAddr::from(("::1".parse::<IpAddr>().unwrap(), port)).into())
        .unwrap();
    hole.listen(0).unwrap();
    let _filler = std::net::TcpStream::connect(("::1", port)).unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;

    let accept = tokio::spawn(async move { good.accept().await.map(|(s, _)| s) });
    let options = ConnectOptions {
        nat64: Nat64Policy::Off,
        ..ConnectOptions::default()
    };
    let addrs: [IpAddr; 2] = ["::1".parse().unwrap(), "127.0.0.1".parse().unwrap()];
    let c = connect::connect_addrs(&addrs, port, &options)
        .await
        .unwrap();
    assert_eq!(c.candidate.addr, SocketAddr::from(([127, 0, 0, 1], port)));
    assert_eq!(c.candidate.source, Source::Any);
    // IPv4 starts one attempt delay (250 ms) after IPv6 and wins well
    // before IPv6's first SYN retransmission (1 s).
    assert!(c.elapsed >= Duration::from_millis(250), "{:?}", c.elapsed);
    assert!(c.elapsed < Duration::from_millis(900), "{:?}", c.elapsed);
    assert_eq!(c.attempts.len(), 2);
    assert!(c.attempts[0].candidate.addr.is_ipv6());
    assert_eq!(c.attempts[0].outcome, AttemptOutcome::Cancelled);
    assert!(
        (240.0..300.0).contains(&c.attempts[1].started_ms),
        "{:?}",
        c.attempts
    );
    assert_eq!(c.attempts[1].outcome, AttemptOutcome::Connected);
    accept.await.unwrap().unwrap();
}

#[tokio::test]
async fn happy_eyeballs_binds_the_given_source_address() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let options = ConnectOptions {
        sources: vec![Source::Ip("127.0.0.2".parse().unwrap())],
        nat64: Nat64Policy::Off,
        ..ConnectOptions::default()
    };
    let (c, accepted) = tokio::join!(
        connect::connect("127.0.0.1", port, &options),
        listener.accept()
    );
    let c = c.unwrap();
    assert_eq!(c.stream.local_addr().unwrap().ip().to_string(), "127.0.0.2");
    assert_eq!(accepted.unwrap().1.ip().to_string(), "127.0.0.2");
}

#[tokio::test]
async fn refused_everywhere_reports_each_attempt() {
    // Bind then drop to find ports nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let options = ConnectOptions {
        nat64: Nat64Policy::Off,
        ..ConnectOptions::default()
    };
    let err = connect::connect("127.0.0.1", port, &options)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("every attempt") && text.contains("refused"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn experiment_server_and_client_end_to_end() {
    for ip in loopbacks().into_iter().filter(|ip| can_bind(*ip)) {
        for (lowat, sizing) in [(None, false), (Some(16_384), false), (Some(16_384), true)] {
            let mut config = ServeConfig::new(SocketAddr::new(ip, 0));
            config.writer = WriterConfig {
                lowat_bytes: lowat,
                sizing: sizing.then(WriteSizingConfig::default),
            };
            let server = match Server::bind(config).await {
                Ok(s) => s,
                Err(e) => return skip("end_to_end", &e.to_string()),
            };
            let addr = server.local_addr().unwrap();
            let task = tokio::spawn(server.run(|peer, e| panic!("{peer}: {e}")));
            let get = client::GetConfig {
                large_bytes: 1 << 20,
                small_bytes: Some(3000),
                connect: ConnectOptions {
                    nat64: Nat64Policy::Off,
                    ..ConnectOptions::default()
                },
                ..client::GetConfig::default()
            };
            let report = client::get(&ip.to_string(), addr.port(), &get)
                .await
                .unwrap();
            task.abort();
            assert_eq!(report.large.bytes, 1 << 20);
            let small = report.small.expect("small response");
            assert_eq!(small.bytes, 3000);
            assert!(small.complete_ms >= small.first_byte_ms);
            assert!(report.large.complete_ms >= report.large.first_byte_ms);
            assert!(report.total_ms >= report.connect_ms);
            assert_eq!(report.peer, addr);
            let json = serde_json::to_value(&report).unwrap();
            assert!(json["small"]["complete_ms"].is_number());
            assert!(json["tcp_info"]["rtt_us"].is_number());
        }
    }
}

#[tokio::test]
async fn sockopt_errors_name_the_option_and_errno() {
    if !cfg!(target_os = "linux") {
        return skip("sockopt_errors", "Linux errno mapping");
    }
    // TCP_INFO on a UDP socket: the kernel answers EOPNOTSUPP.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let err = TcpInfo::read(&udp).unwrap_err();
    assert!(
        matches!(
            err,
            SockoptError::Refused {
                option: "TCP_INFO",
                ..
            }
        ),
        "{err}"
    );
    // No such interface.
    let socket = TcpSocket::new_v4().unwrap();
    let err = sockopt::bind_device(&socket, "nosuchif0").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENODEV));
    assert!(err.to_string().contains("no interface named"), "{err}");
}
