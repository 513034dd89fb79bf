//! `brisk rpm server` and `brisk rpm client URL`: responsiveness under
//! working conditions (round trips per minute) over HTTP/2, as the IETF
//! draft draft-ietf-ippm-responsiveness-09 measures it.

use anyhow::{Context, Result, anyhow};
use brisk_rpm::{ClientOptions, Direction, Report, Server, ServerOptions};
use std::net::SocketAddr;
use std::time::Duration;

#[derive(clap::Args)]
pub struct RpmArgs {
    #[command(subcommand)]
    command: RpmCommand,
}

#[derive(clap::Subcommand)]
enum RpmCommand {
    /// Serve the draft's config, small, large and upload endpoints over
    /// HTTP/2 with a self-signed certificate made at start.
    Server(ServerArgs),
    /// Measure responsiveness against a server's configuration URL.
    Client(ClientArgs),
}

#[derive(clap::Args)]
struct ServerArgs {
    /// Address to listen on, e.g. 0.0.0.0:4043 or [::]:4043.
    #[arg(long, default_value = "0.0.0.0:4043")]
    listen: SocketAddr,
    /// Set TCP_NOTSENT_LOWAT (bytes) on accepted sockets, as the draft
    /// recommends for servers; e.g. 16384.
    #[arg(long, value_name = "BYTES")]
    notsent_lowat: Option<u32>,
    /// A host name to put in the certificate besides the listening address.
    #[arg(long = "name")]
    names: Vec<String>,
}

#[derive(clap::Args)]
struct ClientArgs {
    /// The configuration URL, e.g. https://192.0.2.1:4043/config.
    url: String,
    /// Accept any certificate (a self-signed test server).
    #[arg(long, short = 'k')]
    insecure: bool,
    /// Longest the test runs before reporting what it has, in seconds.
    #[arg(long, default_value = "20", value_parser = crate::seconds::positive)]
    max_time: Duration,
    /// Which way to load the path: both (at once), download or upload.
    #[arg(long, default_value = "both", value_parser = parse_direction)]
    direction: Direction,
    /// Seconds between evaluations of goodput and responsiveness (the
    /// draft's interval duration).
    #[arg(long, default_value = "1", value_parser = crate::seconds::positive)]
    interval: Duration,
    /// Load-generating connections per direction, at most.
    #[arg(long, default_value = "16", value_parser = clap::value_parser!(u16).range(1..=256))]
    max_connections: u16,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

fn parse_direction(text: &str) -> Result<Direction, String> {
    match text {
        "both" => Ok(Direction::Both),
        "download" | "down" => Ok(Direction::Download),
        "upload" | "up" => Ok(Direction::Upload),
        _ => Err(format!("expected both, download or upload, got {text:?}")),
    }
}

pub fn run(args: RpmArgs) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    match args.command {
        RpmCommand::Server(a) => runtime.block_on(serve(a)),
        RpmCommand::Client(a) => runtime.block_on(measure(a)),
    }
}

async fn serve(args: ServerArgs) -> Result<()> {
    let options = ServerOptions {
        notsent_lowat: args.notsent_lowat,
        names: args.names,
    };
    let server = Server::bind(args.listen, options)
        .await
        .map_err(|e| anyhow!(e))?;
    let addr = server.local_addr().map_err(|e| anyhow!(e))?;
    let lowat = match args.notsent_lowat {
        Some(b) => format!("TCP_NOTSENT_LOWAT {b} bytes"),
        None => "TCP_NOTSENT_LOWAT not set".into(),
    };
    println!(
        "serving responsiveness tests on https://{addr}/config (HTTP/2, self-signed certificate: clients need --insecure; {lowat})"
    );
    server.run().await.map_err(|e| anyhow!(e))
}

async fn measure(args: ClientArgs) -> Result<()> {
    let options = ClientOptions {
        insecure: args.insecure,
        direction: args.direction,
        max_time: args.max_time,
        interval: args.interval,
        max_connections: usize::from(args.max_connections),
        ..ClientOptions::default()
    };
    let bar = crate::progress::visible().then(|| {
        let bar =
            crate::progress::spinner("{spinner} {elapsed} {wide_msg}", Duration::from_millis(120));
        bar.set_message("fetching the configuration");
        bar
    });
    let result = brisk_rpm::client::run(&args.url, &options, |p| {
        if let Some(bar) = &bar {
            let rpm = p
                .interval_rpm
                .map_or("no probe yet".to_string(), |r| format!("{r:.0} RPM"));
            bar.set_message(format!(
                "down {} ({} conn), up {} ({} conn), {rpm}",
                mbps(p.download_bps),
                p.download_connections,
                mbps(p.upload_bps),
                p.upload_connections
            ));
        }
    })
    .await;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let report = result.map_err(|e| anyhow!(e))?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&report).context("encoding the result")?
        );
    } else {
        print!("{}", human(&report));
    }
    Ok(())
}

fn mbps(bps: f64) -> String {
    format!("{:.1} Mbit/s", bps / 1e6)
}

/// The result as a network engineer reads it, on Apple's networkQuality scale.
fn human(r: &Report) -> String {
    let c = &r.components;
    let mut out = format!(
        "Responsiveness: {:.0} RPM ({}; under 300 is poor, 1,000 and above is good)\n",
        r.rpm, r.rating
    );
    out += &format!(
        "  new connections:    TCP handshake {:.2} ms, TLS handshake {:.2} ms, HTTP/2 request {:.2} ms ({} probes)\n",
        c.tcp_foreign_ms, c.tls_foreign_ms, c.http_foreign_ms, r.foreign_probes
    );
    out += &format!(
        "  loaded connections: HTTP/2 request {:.2} ms ({} probes)\n",
        c.http_self_ms, r.self_probes
    );
    if r.direction != Direction::Upload {
        out += &format!(
            "Download: {} over {} connections\n",
            mbps(r.download_bps),
            r.download_connections
        );
    }
    if r.direction != Direction::Download {
        out += &format!(
            "Upload:   {} over {} connections\n",
            mbps(r.upload_bps),
            r.upload_connections
        );
    }
    let yes = |b: bool| if b { "stable" } else { "not stable" };
    out += &format!(
        "Test: {:.1} s; goodput {}, responsiveness {}{}\n",
        r.duration_s,
        yes(r.goodput_stable),
        yes(r.responsiveness_stable),
        if r.failed_probes > 0 {
            format!("; {} probes failed", r.failed_probes)
        } else {
            String::new()
        }
    );
    out
}
