//! One run of a Pantheon-style comparison in the live lab: a scheme (kernel
//! TCP with one of the kernel's congestion controllers, or Brisk on real
//! UDP sockets with one of its own) downloads from the server for a set
//! time over a path (any network: a recorded trace, a fitted emulator), in
//! a lab of its own, and the run's results come back in `brisk live`'s
//! JSON shape, ready to become tidy rows.
//!
//! The delay is the link's own: each packet's one-way delay is timed by
//! the router's bottleneck from the moment the router took it from the
//! sender's TUN device to the moment the link model delivers it, the same
//! clock and the same link events for kernel TCP and Brisk (and the same
//! measure the simulator reports). The throughput is the receiving
//! application's goodput from its first byte to the end, for both.

use super::RecipeError;
use super::brisk_bulk::{self, BriskBulkConfig};
use super::loss::Transport;
use crate::bulk::{self, BULK_PORT, BulkConfig};
use crate::lab::{Lab, LabConfig};
use crate::results::LiveResults;
use serde_json::Value;
use std::net::SocketAddr;
use std::time::Duration;

/// A scheme as written in a grid: "tcp cubic" (kernel TCP with that
/// `TCP_CONGESTION`) or "brisk bbr" (Brisk with that controller).
pub fn parse_scheme(text: &str) -> Result<Transport, String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    match words.as_slice() {
        ["tcp", cc] => Ok(Transport::kernel(cc)),
        ["brisk", cc] => Ok(Transport::brisk(cc)),
        _ => Err(format!(
            "`{text}` is not a scheme: write \"tcp CC\" for kernel TCP (e.g. \"tcp cubic\") \
             or \"brisk CC\" for Brisk (e.g. \"brisk bbr\")"
        )),
    }
}

/// The kernel's congestion controllers, as the kernel lists them
/// (`tcp_available_congestion_control`), as schemes ("tcp cubic").
pub fn kernel_schemes() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().map(|cc| format!("tcp {cc}")).collect())
        .unwrap_or_default()
}

/// Brings up a lab on `config`, runs `scheme`'s download for `duration`,
/// tears the lab down and returns its results as JSON: `brisk live`'s
/// shape, the downloaded flow first (id 0) with the receiving
/// application's goodput as its `goodput_mbps` (the router's count of
/// delivered payload, retransmissions and headers of Brisk's packets
/// included, stays as `link_goodput_mbps`), plus `scheme` and what the
/// receiver and the sender reported (`receiver`).
pub fn run(
    config: LabConfig,
    scheme: &Transport,
    duration: Duration,
) -> Result<Value, RecipeError> {
    if !scheme.available() {
        return Err(RecipeError::Unsupported(format!(
            "{scheme} is not available on this machine or in this build"
        )));
    }
    let lab = Lab::up(config)?;
    let (results, app_goodput, receiver) = match scheme {
        Transport::Kernel(cc) => {
            lab.set_tcp_ecn(false)?;
            let r = bulk::run(
                lab.server_ns(),
                SocketAddr::new(lab.server_bind_addr(), BULK_PORT),
                lab.client_ns(),
                SocketAddr::new(lab.server_addr(), BULK_PORT),
                &BulkConfig {
                    cc: cc.clone(),
                    ecn: false,
                    duration,
                },
            )?;
            let goodput = r.goodput_mbps;
            let json = to_json(&r)?;
            (lab.finish(None, Some(r))?, goodput, json)
        }
        Transport::Brisk(cc) | Transport::BriskFec(cc) => {
            let config = BriskBulkConfig {
                fec: matches!(scheme, Transport::BriskFec(_)),
                ..BriskBulkConfig::new(cc, duration)
            };
            let r = brisk_bulk::run(&lab, &config)?;
            (lab.finish(None, None)?, r.goodput_mbps, to_json(&r)?)
        }
    };
    shape(results, scheme, app_goodput, receiver)
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, RecipeError> {
    serde_json::to_value(value).map_err(|e| RecipeError::failed("the results as JSON", e))
}

/// The results with the downloaded flow (the one that delivered the most
/// bytes) first, its goodput the application's, and the scheme and the
/// receiver's report added.
fn shape(
    mut results: LiveResults,
    scheme: &Transport,
    app_goodput_mbps: f64,
    receiver: Value,
) -> Result<Value, RecipeError> {
    let main = results
        .flows
        .iter()
        .enumerate()
        .max_by_key(|(_, f)| f.delivered_bytes)
        .map(|(i, _)| i)
        .ok_or_else(|| RecipeError::failed(scheme.to_string(), "the router saw no flow"))?;
    let flow = results.flows.remove(main);
    results.flows.insert(0, flow);
    let direction = results.driver.flow_directions.remove(main);
    results.driver.flow_directions.insert(0, direction);
    for (i, f) in results.flows.iter_mut().enumerate() {
        f.id = i;
    }
    let mut json = to_json(&results)?;
    if let Some(first) = json["flows"].get_mut(0).and_then(Value::as_object_mut) {
        let link = first.get("goodput_mbps").cloned().unwrap_or(Value::Null);
        first.insert("link_goodput_mbps".into(), link);
        first.insert("goodput_mbps".into(), Value::from(app_goodput_mbps));
    }
    if let Some(map) = json.as_object_mut() {
        map.insert("scheme".into(), Value::from(scheme.to_string()));
        map.insert("receiver".into(), receiver);
        // The kernel's report is `receiver` too; one copy is enough.
        map.remove("bulk");
    }
    Ok(json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_are_read_by_stack_and_controller() {
        assert_eq!(parse_scheme("tcp cubic"), Ok(Transport::kernel("cubic")));
        assert_eq!(parse_scheme(" brisk  bbr "), Ok(Transport::brisk("bbr")));
        for bad in ["cubic", "quic cubic", "tcp", "tcp cubic extra"] {
            let e = parse_scheme(bad).unwrap_err();
            assert!(e.contains("tcp CC"), "{e}");
        }
    }
}
