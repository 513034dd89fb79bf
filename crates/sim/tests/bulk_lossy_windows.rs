//! Bulk over the lossy mobile path (10 Mbit/s, 220 ms RTT, 5%
//! random loss toward the receiver, a 200-packet FIFO), Brisk BBR, IPv4 and
//! IPv6: flow control no longer holds the sender. With fixed 1 MiB stream
//! windows and send buffers, each counted from the first byte not yet
//! delivered in order, a hole that takes one or two retransmissions to
//! fill stalled the sender: 7.39 / 6.74 Mbit/s without FEC and 7.46 /
//! 7.47 with FEC `adaptive` (IPv4 / IPv6). The receive window now grows
//! while the sender uses all of it and the reader keeps up, and the send
//! buffer follows the window granted (7.88 / 7.83 and 7.70 / 7.62), and
//! adaptive repair no longer covers bulk blocks in mid-flight (7.85 /
//! 7.76 with FEC).

mod common;

use brisk_sim::scenario::Scenario;
use common::{FAMILIES, flow, run_on};

/// The lab's bulk scenario with FEC `fec`, for 30 s.
fn bulk(fec: &str) -> Scenario {
    let text = format!(
        "duration = \"30s\"\n\
         [link.down]\nrate = \"10Mbit\"\ndelay = \"110ms\"\nloss = \"5%\"\n\
         [link.up]\nrate = \"10Mbit\"\ndelay = \"110ms\"\n\
         [queue.fifo]\nlimit_packets = 200\n\
         [[flows]]\nname = \"bulk\"\nkind = \"brisk\"\ncc = \"bbr\"\nfec = \"{fec}\"\n"
    );
    Scenario::parse(&text, "bulk_lossy_windows test").unwrap()
}

#[test]
fn bulk_at_5_percent_loss_is_not_held_by_flow_control() {
    // Above what fixed windows gave on either family, in Mbit/s. The
    // issue's 0.9 x rate x (1 - loss) (8.55 Mbit/s) is not met: see
    // docs/PROTOCOL.md, section 6.6.
    for ip in FAMILIES {
        for (fec, floor_mbps) in [("off", 7.7), ("adaptive", 7.7)] {
            let r = run_on(&bulk(fec), ip);
            let f = flow(&r, "bulk");
            let t = &f.brisk.as_ref().unwrap().transport;
            println!(
                "{ip:?} FEC {fec}: goodput {:.2} Mbit/s, {} packets sent, {} lost, {} retransmitted ({} bytes), {} repair, {} rebuilt",
                f.goodput_mbps,
                t.packets_sent,
                t.packets_lost,
                t.packets_retransmitted,
                t.bytes_retransmitted,
                t.repair_packets_sent,
                t.packets_rebuilt
            );
            assert!(t.data_intact, "{ip:?} FEC {fec}");
            // Adaptive repair leaves bulk blocks in mid-flight alone and
            // repairs only the flight's tails: under 1% of the packets
            // (2,481 of 23,799 when every full block got repair).
            assert!(
                t.repair_packets_sent * 100 < t.packets_sent,
                "{ip:?} FEC {fec}: {} repair packets of {}",
                t.repair_packets_sent,
                t.packets_sent
            );
            assert!(
                f.goodput_mbps >= floor_mbps,
                "{ip:?} FEC {fec}: {:.2} Mbit/s against at least {floor_mbps:.2}",
                f.goodput_mbps
            );
        }
    }
}
