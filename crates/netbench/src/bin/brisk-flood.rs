//! `brisk-flood`: the attacking process of the handshake flood benchmark.
//! Sends forged Initials to a Brisk server on loopback as fast as it can
//! for a bounded time, then prints what it sent as JSON on stdout.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use brisk_netbench::flood::{Forged, attack};
use clap::Parser;

/// Floods a Brisk server on loopback with forged handshake Initials.
#[derive(Debug, Parser)]
#[command(name = "brisk-flood")]
struct Args {
    /// The server's address (loopback only).
    #[arg(long)]
    target: SocketAddr,
    /// Which first message to forge.
    #[arg(long, value_enum)]
    pattern: Forged,
    /// The server's static public key, hex (the IK forgery needs it).
    #[arg(long)]
    key: String,
    /// Seconds to flood for.
    #[arg(long)]
    secs: f64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if !args.target.ip().is_loopback() {
        eprintln!("brisk-flood: {} is not a loopback address", args.target);
        return ExitCode::FAILURE;
    }
    let Some(key) = brisk_io::keys::key_from_hex(&args.key) else {
        eprintln!("brisk-flood: --key is not a 32-byte hex key");
        return ExitCode::FAILURE;
    };
    let secs = if args.secs.is_finite() {
        args.secs.clamp(0.0, 600.0)
    } else {
        0.0
    };
    match attack(
        args.target,
        args.pattern,
        key,
        Duration::from_secs_f64(secs),
    ) {
        Ok(report) => match serde_json::to_string(&report) {
            Ok(json) => {
                println!("{json}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("brisk-flood: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("brisk-flood: {e}");
            ExitCode::FAILURE
        }
    }
}
