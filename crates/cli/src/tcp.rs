//! `brisk tcp ...`: kernel TCP tools from the seeds' recipes.
//!
//! - `doctor`: sysctls that cost latency, and the fixes.
//! - `serve`: the experiment server with each responsive option on or off.
//! - `get`: fetch a large response and a small urgent one behind it.
//! - `connect`: Happy Eyeballs to any host, showing each attempt.
//! - `nat64`: discover the NAT64 prefix; synthesize addresses for literals.
//!
//! Every command takes `--json` and prints one JSON object on stdout.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use brisk_tcp::client::{self, GetConfig, GetReport};
use brisk_tcp::connect::{self, ConnectOptions, Nat64Policy};
use brisk_tcp::doctor::{self, Snapshot, Status, Target};
use brisk_tcp::happy_eyeballs::{Config as HeConfig, Source};
use brisk_tcp::lowat::{self, WriterConfig};
use brisk_tcp::resolve::Resolver;
use brisk_tcp::server::{ServeConfig, Server};
use brisk_tcp::tuning::{self, EcnMode};
use brisk_tcp::{Sysctls, WriteSizingConfig, nat64};
use brisk_wire::Nat64Prefix;
use serde_json::json;

#[derive(clap::Args)]
pub struct TcpArgs {
    #[command(subcommand)]
    command: TcpCommand,
}

#[derive(clap::Subcommand)]
enum TcpCommand {
    /// Report sysctls that hurt latency, with what to change and why.
    Doctor(DoctorArgs),
    /// Serve `GET /size?bytes=N&prio=P` requests with chosen options.
    Serve(ServeArgs),
    /// Fetch a large response, then a small urgent one behind it.
    Get(GetArgs),
    /// Connect with Happy Eyeballs and show every attempt.
    Connect(ConnectArgs),
    /// Discover the NAT64 prefix (RFC 7050) and synthesize addresses.
    Nat64(Nat64Args),
}

#[derive(clap::Args)]
struct DoctorArgs {
    /// Path rate the buffer checks size for, in Mbit/s.
    #[arg(long, default_value_t = 100.0)]
    rate_mbps: f64,
    /// Path RTT the buffer checks size for, in ms.
    #[arg(long, default_value_t = 250)]
    rtt_ms: u64,
    /// Exit with status 1 when any setting is a warning.
    #[arg(long)]
    strict: bool,
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Address to listen on, e.g. 0.0.0.0:8080 or [::]:8080.
    #[arg(long)]
    listen: SocketAddr,
    /// Set TCP_NOTSENT_LOWAT to this many bytes and write one frame per
    /// writable event.
    #[arg(long)]
    lowat: Option<u32>,
    /// Size writes from TCP_INFO (H2O's latency optimisation).
    #[arg(long)]
    write_sizing: bool,
    /// Write sizing: minimum RTT to optimise, ms (H2O default 50).
    #[arg(long, default_value_t = 50)]
    min_rtt_ms: u64,
    /// Write sizing: largest cwnd to optimise, bytes (H2O default 65535).
    #[arg(long, default_value_t = 65_535)]
    max_cwnd_bytes: u64,
    /// Write sizing: largest loop delay as a fraction of RTT (default 0.1).
    #[arg(long, default_value_t = 0.1)]
    max_additional_delay: f64,
    /// Accept data in SYNs (TCP Fast Open) with this queue length.
    #[arg(long, num_args = 0..=1, default_missing_value = "256")]
    tfo: Option<u32>,
    /// Congestion control for accepted connections (see `doctor`).
    #[arg(long)]
    cc: Option<String>,
    /// Require that this host accepts ECN (net.ipv4.tcp_ecn 1 or 2).
    #[arg(long)]
    ecn: bool,
    /// Largest frame payload, bytes.
    #[arg(long, default_value_t = 16_384)]
    frame_bytes: usize,
    /// Print the start-up line as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct PathArgs {
    /// Connection Attempt Delay in ms (RFC 8305: 100 to 2000).
    #[arg(long, default_value_t = 250)]
    attempt_delay_ms: u64,
    /// Local address to connect from; repeat for fallback order.
    #[arg(long = "source")]
    sources: Vec<IpAddr>,
    /// Interface to connect from (SO_BINDTODEVICE), e.g. wlan0 then
    /// rmnet0; repeat for fallback order. Tried after --source ones.
    #[arg(long = "device")]
    devices: Vec<String>,
    /// NAT64: auto (discover when there is no IPv4 route), off, a prefix
    /// used when there is no IPv4 route, or always:PREFIX.
    #[arg(long, default_value = "auto")]
    nat64: String,
    /// DNS server to ask instead of the system resolver.
    #[arg(long)]
    dns: Option<SocketAddr>,
}

impl PathArgs {
    fn options(&self) -> Result<ConnectOptions> {
        let config = HeConfig::with_attempt_delay(Duration::from_millis(self.attempt_delay_ms))?;
        let mut sources: Vec<Source> = self.sources.iter().map(|ip| Source::Ip(*ip)).collect();
        sources.extend(self.devices.iter().cloned().map(Source::Device));
        Ok(ConnectOptions {
            config,
            sources,
            resolver: self.resolver(),
            nat64: parse_nat64(&self.nat64)?,
            ..ConnectOptions::default()
        })
    }

    fn resolver(&self) -> Resolver {
        self.dns.map_or(Resolver::System, Resolver::Server)
    }
}

fn parse_nat64(s: &str) -> Result<Nat64Policy> {
    let prefix = |p: &str| -> Result<Nat64Prefix> {
        p.parse().map_err(|e| anyhow::anyhow!("--nat64 {p:?}: {e}"))
    };
    Ok(match s {
        "auto" => Nat64Policy::Auto,
        "off" => Nat64Policy::Off,
        s => match s.strip_prefix("always:") {
            Some(p) => Nat64Policy::Always(prefix(p)?),
            None => Nat64Policy::Prefix(prefix(s)?),
        },
    })
}

#[derive(clap::Args)]
struct GetArgs {
    /// Server as HOST:PORT, e.g. 192.0.2.1:8080, [2001:db8::1]:8080 or
    /// lab-server:8080.
    addr: String,
    /// Size of the large response, bytes.
    #[arg(long, default_value_t = 4 << 20)]
    large: u64,
    /// Size of the small urgent response, bytes (0 for none).
    #[arg(long, default_value_t = 2048)]
    small: u64,
    /// Ask for the small response this long after the large one's first
    /// byte, ms.
    #[arg(long, default_value_t = 0)]
    delay_ms: u64,
    /// Send the first request in the SYN (TCP Fast Open; the first
    /// connection to a server only fetches the cookie: use --repeat 2).
    #[arg(long)]
    tfo: bool,
    /// Require that connections request ECN (net.ipv4.tcp_ecn = 1).
    #[arg(long)]
    ecn: bool,
    /// Run this many times in a row on fresh connections.
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Give up on one run after this many seconds.
    #[arg(long, default_value_t = 60)]
    timeout_s: u64,
    #[command(flatten)]
    path: PathArgs,
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct ConnectArgs {
    /// HOST:PORT to connect to.
    addr: String,
    #[command(flatten)]
    path: PathArgs,
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct Nat64Args {
    /// IPv4 addresses to synthesize IPv6 addresses for.
    #[arg(long = "synthesize")]
    synthesize: Vec<std::net::Ipv4Addr>,
    /// Use this prefix instead of discovering one.
    #[arg(long)]
    prefix: Option<Nat64Prefix>,
    /// DNS server to ask instead of the system resolver.
    #[arg(long)]
    dns: Option<SocketAddr>,
    #[arg(long)]
    json: bool,
}

pub fn run(args: TcpArgs) -> Result<()> {
    match args.command {
        TcpCommand::Doctor(a) => doctor(a),
        TcpCommand::Serve(a) => runtime()?.block_on(serve(a)),
        TcpCommand::Get(a) => runtime()?.block_on(get(a)),
        TcpCommand::Connect(a) => runtime()?.block_on(connect(a)),
        TcpCommand::Nat64(a) => runtime()?.block_on(nat64_cmd(a)),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Splits `HOST:PORT` (IPv6 literals in brackets).
fn host_port(addr: &str) -> Result<(String, u16)> {
    let (host, port) = addr
        .rsplit_once(':')
        .with_context(|| format!("{addr:?} is not HOST:PORT"))?;
    let port = port
        .parse()
        .with_context(|| format!("{port:?} is not a port number"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        bail!("{addr:?} has no host");
    }
    Ok((host.to_string(), port))
}

/// Prints one JSON document; a reader that went away (`| head`) is not an
/// error.
fn print_json(value: &serde_json::Value) -> Result<()> {
    use std::io::Write;
    let text = serde_json::to_string_pretty(value)?;
    match writeln!(std::io::stdout().lock(), "{text}") {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

fn doctor(a: DoctorArgs) -> Result<()> {
    if !(a.rate_mbps > 0.0 && a.rate_mbps.is_finite()) {
        bail!("--rate-mbps must be a positive number");
    }
    let sysctls = Sysctls::system();
    let target = Target {
        rate_bps: (a.rate_mbps * 1e6) as u64,
        rtt: Duration::from_millis(a.rtt_ms),
    };
    let report = doctor::examine(&Snapshot::read(&sysctls), target);
    let lowat_default = lowat::system_default_notsent_lowat(&sysctls).ok();
    if a.json {
        let mut v = serde_json::to_value(&report)?;
        v["notsent_lowat_default_bytes"] = json!(lowat_default.flatten());
        v["worst"] = serde_json::to_value(report.worst())?;
        print_json(&v)?;
    } else {
        println!(
            "kernel {}; buffers checked for {} Mbit/s at {} ms RTT",
            report.kernel.as_deref().unwrap_or("unknown"),
            a.rate_mbps,
            a.rtt_ms
        );
        for f in &report.findings {
            let mark = match f.status {
                Status::Good => "ok  ",
                Status::Advice => "tip ",
                Status::Warn => "WARN",
                Status::Unknown => "??  ",
            };
            println!(
                "\n[{mark}] {} = {}",
                f.key,
                f.value.as_deref().unwrap_or("(missing)")
            );
            println!("       {}", f.why);
            if let Some(fix) = &f.fix {
                println!("       fix: {fix}");
            }
        }
        for plan in &report.buffers {
            println!(
                "\n[buf ] {:?}: BDP {} bytes -> {}",
                plan.direction, plan.bdp_bytes, plan.advice
            );
        }
    }
    if a.strict && report.worst() == Status::Warn {
        bail!("some settings cost latency (see WARN lines)");
    }
    Ok(())
}

async fn serve(a: ServeArgs) -> Result<()> {
    let sysctls = Sysctls::system();
    if a.ecn {
        let mode = EcnMode::read(&sysctls)?;
        if !mode.is_some_and(EcnMode::accepts) {
            bail!(
                "ECN is off on this host (net.ipv4.tcp_ecn = 0); enable it: sysctl -w net.ipv4.tcp_ecn=1"
            );
        }
    }
    let mut config = ServeConfig::new(a.listen);
    config.writer = WriterConfig {
        lowat_bytes: a.lowat,
        sizing: a.write_sizing.then_some(WriteSizingConfig {
            min_rtt: Duration::from_millis(a.min_rtt_ms),
            max_cwnd_bytes: a.max_cwnd_bytes,
            max_additional_delay: a.max_additional_delay,
            record_overhead_bytes: 0,
        }),
    };
    config.fastopen_queue = a.tfo;
    config.congestion = a.cc.clone();
    config.frame_payload_bytes = a.frame_bytes.max(1);
    let server = Server::bind(config.clone()).await?;
    let local = server.local_addr()?;
    let startup = json!({
        "listening": local,
        "config": config,
        "notsent_lowat_default_bytes": lowat::system_default_notsent_lowat(&sysctls).ok().flatten(),
        "ecn": EcnMode::read(&sysctls).ok().flatten(),
    });
    if a.json {
        println!("{startup}");
    } else {
        println!(
            "listening on {local} (lowat {:?}, write sizing {}, tfo {:?}, cc {:?})",
            a.lowat, a.write_sizing, a.tfo, a.cc
        );
    }
    server
        .run(|peer, e| eprintln!("brisk tcp serve: {peer}: {e}"))
        .await;
    Ok(())
}

fn run_json(report: &GetReport) -> Result<serde_json::Value> {
    let mut v = serde_json::to_value(report)?;
    v["ecn_negotiated"] = json!(report.tcp_info.map(|i| i.ecn_negotiated()));
    Ok(v)
}

async fn get(a: GetArgs) -> Result<()> {
    let (host, port) = host_port(&a.addr)?;
    if a.ecn {
        let sysctls = Sysctls::system();
        if !EcnMode::read(&sysctls)?.is_some_and(EcnMode::requests) {
            bail!(
                "this host does not request ECN (net.ipv4.tcp_ecn = {}); enable it with \
                 `sysctl -w net.ipv4.tcp_ecn=1` or per route: {}",
                sysctls.read("net.ipv4.tcp_ecn")?,
                tuning::route_ecn_hint("default")
            );
        }
    }
    let config = GetConfig {
        large_bytes: a.large,
        small_bytes: (a.small > 0).then_some(a.small),
        small_delay: Duration::from_millis(a.delay_ms),
        fastopen: a.tfo,
        connect: a.path.options()?,
        timeout: Duration::from_secs(a.timeout_s),
    };
    let mut runs = Vec::new();
    for i in 0..a.repeat.max(1) {
        let report = client::get(&host, port, &config)
            .await
            .with_context(|| format!("run {} of {}", i + 1, a.repeat.max(1)))?;
        if !a.json {
            let small = report
                .small
                .map(|s| {
                    format!(
                        "small {} B done {:.1} ms after asking",
                        s.bytes, s.complete_ms
                    )
                })
                .unwrap_or_default();
            let tfo = report
                .fastopen
                .map(|f| {
                    format!(
                        ", SYN carried {} B (acked {})",
                        f.syn_bytes, f.syn_data_acked
                    )
                })
                .unwrap_or_default();
            println!(
                "run {}: {} connect {:.1} ms, first byte {:.1} ms, large {} B done {:.1} ms; {small} \
                 behind {} B{tfo}",
                i + 1,
                report.peer,
                report.connect_ms,
                report.first_byte_ms,
                report.large.bytes,
                report.total_ms,
                report.small_waited_behind_bytes,
            );
        }
        runs.push(report);
    }
    if a.json {
        let runs: Vec<serde_json::Value> = runs.iter().map(run_json).collect::<Result<_>>()?;
        print_json(&json!({
            "host": host,
            "port": port,
            "large_bytes": a.large,
            "small_bytes": a.small,
            "tfo": a.tfo,
            "runs": runs,
        }))?;
    }
    Ok(())
}

async fn connect(a: ConnectArgs) -> Result<()> {
    let (host, port) = host_port(&a.addr)?;
    let options = a.path.options()?;
    let c = connect::connect(&host, port, &options).await?;
    let elapsed_ms = c.elapsed.as_secs_f64() * 1e3;
    if a.json {
        print_json(&json!({
            "host": host,
            "port": port,
            "connected": c.candidate,
            "local": c.stream.local_addr()?,
            "elapsed_ms": elapsed_ms,
            "attempts": c.attempts,
        }))?;
    } else {
        for at in &c.attempts {
            println!(
                "{:>8.1} ms  {} via {:?}{}: {:?}",
                at.started_ms,
                at.candidate.addr,
                at.candidate.source,
                if at.candidate.synthesized {
                    " (NAT64)"
                } else {
                    ""
                },
                at.outcome
            );
        }
        println!("connected to {} in {elapsed_ms:.1} ms", c.candidate.addr);
    }
    Ok(())
}

async fn nat64_cmd(a: Nat64Args) -> Result<()> {
    let ipv4_route = nat64::has_ipv4_route();
    let resolver = a.dns.map_or(Resolver::System, Resolver::Server);
    let (prefixes, discovery_error) = match a.prefix {
        Some(p) => (vec![p], None),
        None => match nat64::discover(resolver).await {
            Ok(p) => (p, None),
            Err(e) => (Vec::new(), Some(e.to_string())),
        },
    };
    let synthesized: Vec<serde_json::Value> = match prefixes.first() {
        Some(prefix) => a
            .synthesize
            .iter()
            .map(|v4| json!({"ipv4": v4, "ipv6": prefix.embed(*v4)}))
            .collect(),
        None => Vec::new(),
    };
    if a.json {
        print_json(&json!({
            "ipv4_route": ipv4_route,
            "prefixes": prefixes.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "discovery_error": discovery_error,
            "synthesized": synthesized,
        }))?;
        return Ok(());
    }
    println!(
        "IPv4 route: {}",
        if ipv4_route { "yes" } else { "no (IPv6-only)" }
    );
    match &discovery_error {
        Some(e) => println!("{e}"),
        None => {
            for p in &prefixes {
                println!("NAT64 prefix: {p}");
            }
        }
    }
    for s in &synthesized {
        println!("{} -> {}", s["ipv4"], s["ipv6"]);
    }
    if !a.synthesize.is_empty() && prefixes.is_empty() {
        bail!("no prefix to synthesize with; pass --prefix 64:ff9b::/96");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_forms() {
        assert_eq!(host_port("192.0.2.1:80").unwrap(), ("192.0.2.1".into(), 80));
        assert_eq!(host_port("[::1]:8080").unwrap(), ("::1".into(), 8080));
        assert_eq!(host_port("lab-server:1").unwrap(), ("lab-server".into(), 1));
        assert!(host_port("nohost").is_err());
        assert!(host_port(":80").is_err());
        assert!(host_port("h:99999").is_err());
    }

    #[test]
    fn nat64_policies() {
        assert_eq!(parse_nat64("auto").unwrap(), Nat64Policy::Auto);
        assert_eq!(parse_nat64("off").unwrap(), Nat64Policy::Off);
        assert_eq!(
            parse_nat64("64:ff9b::/96").unwrap(),
            Nat64Policy::Prefix(Nat64Prefix::WELL_KNOWN)
        );
        assert_eq!(
            parse_nat64("always:64:ff9b::/96").unwrap(),
            Nat64Policy::Always(Nat64Prefix::WELL_KNOWN)
        );
        assert!(parse_nat64("64:ff9b::/95").is_err());
    }
}
