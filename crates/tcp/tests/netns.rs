//! Tests that need sysctls or routes the host should not be changed for:
//! each runs on a thread inside its own network namespace (lo only), and
//! skips with the reason where namespaces are unavailable.

mod common;

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use brisk_tcp::connect::{self, ConnectError, ConnectOptions, Nat64Policy};
use brisk_tcp::fastopen::{self, Idempotent, Role, TfoError};
use brisk_tcp::resolve::Resolver;
use brisk_tcp::{Sysctls, TcpInfo, nat64, tuning};
use brisk_wire::Nat64Prefix;
use common::{in_private_netns, ip, loopbacks, runtime, skip};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};

const REQUEST: &[u8] = b"GET /size?bytes=2&prio=0\n";

/// Serves one Fast Open connection: reads the request, answers "ok",
/// returns whether the SYN carried accepted data (server's view).
async fn serve_once(listener: &TcpListener) -> bool {
    let (mut s, _) = listener.accept().await.unwrap();
    let mut buf = vec![0u8; REQUEST.len()];
    s.read_exact(&mut buf).await.unwrap();
    assert_eq!(buf, REQUEST);
    s.write_all(b"ok").await.unwrap();
    TcpInfo::read(&s).unwrap().syn_data_acked()
}

/// Three connections per loopback address: the first fetches a cookie
/// (checked only when `fresh`: a host may cache one from earlier runs), the
/// next ones carry the request in the SYN.
fn fastopen_round_trips(sysctls: &Sysctls, fresh: bool) {
    runtime().block_on(async {
        for lo in loopbacks() {
            let listener = fastopen::listen(sysctls, SocketAddr::new(lo, 0), 16).unwrap();
            let addr = listener.local_addr().unwrap();
            for round in 0..3 {
                let early = Idempotent::assume_replay_safe(REQUEST);
                let (client, server_saw_syn_data) =
                    tokio::join!(fastopen::connect(addr, early), serve_once(&listener));
                let mut c = client.unwrap();
                let mut ok = [0u8; 2];
                c.stream.read_exact(&mut ok).await.unwrap();
                assert_eq!(&ok, b"ok");
                if round == 0 && fresh {
                    // No cookie yet: a plain SYN asks for one.
                    assert_eq!(c.syn_bytes, 0, "{lo}");
                    assert!(!c.syn_data_acked && !server_saw_syn_data, "{lo}");
                } else if round > 0 {
                    assert_eq!(c.syn_bytes, REQUEST.len(), "{lo} round {round}");
                    assert!(c.syn_data_acked, "{lo} round {round}");
                    assert!(server_saw_syn_data, "{lo} round {round}");
                }
            }
        }
    });
}

#[test]
fn fastopen_repeat_connection_carries_data_in_the_syn() {
    let in_netns = in_private_netns(|| {
        let sysctls = Sysctls::system();
        sysctls.write("net.ipv4.tcp_fastopen", "3").unwrap();
        fastopen_round_trips(&sysctls, true);
    });
    let Err(why) = in_netns else {
        return;
    };
    // No private namespace: run on the host if its sysctl allows both
    // sides, else say what is missing.
    let host = Sysctls::system();
    match fastopen::check(&host, Role::Client).and(fastopen::check(&host, Role::Server)) {
        Ok(_) => fastopen_round_trips(&host, false),
        Err(e) => skip("fastopen", &format!("{why}; on the host: {e}")),
    }
}

#[test]
fn fastopen_sysctl_gates_give_clear_errors() {
    let outcome = in_private_netns(|| {
        let sysctls = Sysctls::system();
        // Client-only (the Linux default): listeners would silently not
        // accept SYN data, so listen() refuses and says what to set.
        sysctls.write("net.ipv4.tcp_fastopen", "1").unwrap();
        let err = fastopen::listen(&sysctls, "127.0.0.1:0".parse().unwrap(), 16).unwrap_err();
        assert!(
            matches!(
                err,
                TfoError::Disabled {
                    role: Role::Server,
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("sysctl -w net.ipv4.tcp_fastopen=3")
        );
        // Fast Open off entirely: the kernel refuses MSG_FASTOPEN.
        sysctls.write("net.ipv4.tcp_fastopen", "0").unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let err = runtime()
            .block_on(fastopen::connect(
                addr,
                Idempotent::assume_replay_safe(REQUEST),
            ))
            .unwrap_err();
        assert!(
            matches!(
                err,
                TfoError::Disabled {
                    role: Role::Client,
                    ..
                }
            ),
            "{err}"
        );
    });
    if let Err(why) = outcome {
        skip("fastopen_gates", &why);
    }
}

#[test]
fn ecn_is_negotiated_once_the_host_requests_it() {
    let outcome = in_private_netns(|| {
        let sysctls = Sysctls::system();
        let negotiated = || {
            runtime().block_on(async {
                let mut seen = Vec::new();
                for lo in loopbacks() {
                    let listener = TcpListener::bind(SocketAddr::new(lo, 0)).await.unwrap();
                    let (c, s) = tokio::join!(
                        TcpStream::connect(listener.local_addr().unwrap()),
                        listener.accept()
                    );
                    let (c, s) = (c.unwrap(), s.unwrap().0);
                    seen.push(TcpInfo::read(&c).unwrap().ecn_negotiated());
                    seen.push(TcpInfo::read(&s).unwrap().ecn_negotiated());
                }
                seen
            })
        };
        // Linux's default 2 accepts ECN but never asks for it.
        sysctls.write("net.ipv4.tcp_ecn", "2").unwrap();
        assert_eq!(negotiated(), [false; 4]);
        tuning::enable_ecn(&sysctls).unwrap();
        assert_eq!(negotiated(), [true; 4]);
    });
    if let Err(why) = outcome {
        skip("ecn", &why);
    }
}

/// Answers every AAAA query with 64:ff9b::192.0.0.170 and .171 (a DNS64
/// view of ipv4only.arpa) and every other query with no records.
async fn fake_dns64(socket: UdpSocket) {
    let mut buf = [0u8; 512];
    loop {
        let Ok((n, peer)) = socket.recv_from(&mut buf).await else {
            return;
        };
        let query = &buf[..n];
        // The question name ends at the first zero byte after the header.
        let Some(end) = query[12..].iter().position(|&b| b == 0).map(|p| 12 + p + 1) else {
            continue;
        };
        let question_end = end + 4;
        let is_aaaa = query.get(end..end + 2) == Some(&[0, 28]);
        let mut reply = query[..question_end].to_vec();
        reply[2] = 0x81;
        reply[3] = 0x80;
        if is_aaaa {
            reply[7] = 2;
            for last in [0xaa, 0xab] {
                reply.extend_from_slice(&[0xc0, 0x0c, 0, 28, 0, 1, 0, 0, 0, 60, 0, 16]);
                reply.extend_from_slice(&[0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0]);
                reply.extend_from_slice(&[192, 0, 0, last]);
            }
        }
        let _ = socket.send_to(&reply, peer).await;
    }
}

#[test]
fn ipv6_only_host_reaches_an_ipv4_literal_through_nat64() {
    let outcome = in_private_netns(|| -> Result<(), String> {
        // Only loopback: no IPv4 route beyond 127/8.
        assert!(!nat64::has_ipv4_route());
        // Make the whole well-known prefix local, standing in for a NAT64
        // gateway, and listen on the wildcard address.
        ip(&["-6", "route", "add", "local", "64:ff9b::/96", "dev", "lo"])?;
        runtime().block_on(async {
            let listener = TcpListener::bind("[::]:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let dns = UdpSocket::bind("[::1]:0").await.unwrap();
            let dns_addr = dns.local_addr().unwrap();
            tokio::spawn(fake_dns64(dns));

            // RFC 7050 discovery through the DNS64 server.
            let prefixes = nat64::discover(Resolver::Server(dns_addr)).await.unwrap();
            assert_eq!(prefixes, [Nat64Prefix::WELL_KNOWN]);

            // The app is handed an IPv4 literal; with automatic NAT64 the
            // host synthesizes 64:ff9b::c000:221 and connects over IPv6.
            let options = ConnectOptions {
                resolver: Resolver::Server(dns_addr),
                nat64: Nat64Policy::Auto,
                ..ConnectOptions::default()
            };
            let (c, accepted) = tokio::join!(
                connect::connect("192.0.2.33", port, &options),
                listener.accept()
            );
            let c = c.unwrap();
            assert!(c.candidate.synthesized);
            let want: Ipv6Addr = "64:ff9b::c000:221".parse().unwrap();
            assert_eq!(c.stream.peer_addr().unwrap().ip(), IpAddr::V6(want));
            assert_eq!(
                accepted.unwrap().0.local_addr().unwrap().ip(),
                IpAddr::V6(want)
            );

            // Without synthesis the literal is unreachable here.
            let off = ConnectOptions {
                nat64: Nat64Policy::Off,
                attempt_timeout: Duration::from_secs(2),
                ..ConnectOptions::default()
            };
            let err = connect::connect("192.0.2.33", port, &off)
                .await
                .unwrap_err();
            assert!(matches!(err, ConnectError::AllFailed { .. }), "{err}");
        });
        Ok(())
    });
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(why)) | Err(why) => skip("nat64", &why),
    }
}
