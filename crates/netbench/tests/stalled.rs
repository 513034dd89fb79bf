//! A transport that stalls must fail its test with a timeout, not hang the
//! whole run; the run goes on to the next test.

use std::future::pending;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use brisk_netbench::rpc::RpcPlan;
use brisk_netbench::{BenchError, Contender, Plan, Test, run_contender};
use tokio::io::DuplexStream;

/// Streams whose far end is kept but never read: the client's writes stall
/// once the 1-byte pipe is full, and the server never sees a stream.
struct Stalled;

impl Contender for Stalled {
    type Server = ();
    type Client = Vec<DuplexStream>;
    type Ticket = ();
    type Stream = DuplexStream;

    fn name(&self) -> &'static str {
        "stalled"
    }

    fn stream_per_request(&self) -> bool {
        false
    }

    async fn listen(&self, _ip: IpAddr, _test: Test) -> Result<((), ()), BenchError> {
        Ok(((), ()))
    }

    async fn accept_stream(&self, _server: &mut ()) -> Result<Option<DuplexStream>, BenchError> {
        pending().await
    }

    async fn connect(&self, _ticket: (), _test: Test) -> Result<Vec<DuplexStream>, BenchError> {
        Ok(Vec::new())
    }

    async fn open_stream(
        &self,
        client: &mut Vec<DuplexStream>,
    ) -> Result<DuplexStream, BenchError> {
        let (near, far) = tokio::io::duplex(1);
        client.push(far);
        Ok(near)
    }

    async fn close(&self, _client: Vec<DuplexStream>) {}
}

#[test]
fn a_stalled_transport_times_out_in_both_tests() {
    let limit = Duration::from_millis(100);
    let plan = Plan {
        ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
        bulk_bytes: Some(1 << 20),
        rpc: Some(RpcPlan {
            warmup: Duration::ZERO,
            measure: Duration::from_millis(10),
        }),
        limit,
    };
    let outcome = run_contender(Stalled, &plan);
    assert!(outcome.bulk.is_none() && outcome.rpc.is_none());
    let tests: Vec<_> = outcome.failures.iter().map(|f| f.test).collect();
    assert_eq!(tests, ["bulk", "rpc"]);
    for failure in &outcome.failures {
        assert_eq!(failure.contender, "stalled");
        assert_eq!(failure.error, BenchError::TimedOut { limit }.to_string());
    }
}
