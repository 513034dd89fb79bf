//! What `brisk optimize` is told: the two interfaces, which subscribers
//! are optimized, the optimizer's limits and how often to report, from
//! command-line flags or a small TOML file (flags win).
//!
//! ```toml
//! radio = "eth1"            # toward the mobile clients
//! internet = "eth0"         # toward the servers
//! report_every = "10s"      # counters on stderr; "0s" for none
//!
//! [subscribers]
//! optimize = ["10.64.0.0/10", "2001:db8:40::/42"]   # default: every client
//!
//! [optimizer]               # the live lab's table (docs/OPTIMIZER.md)
//! connection_buffer = "4MiB"
//! budget_gain = 1.5         # each subscriber's in-flight budget
//! max_pacing_rate = "160Mbit"   # each subscriber's fastest pace
//! ```
//!
//! A mistake is reported with its field and line, never a panic.

use crate::optimizer_table;
use brisk_netmodel::network::line_of;
use brisk_netmodel::units::parse_duration;
use serde::Deserialize;
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;
use std::time::Duration;
use toml::Spanned;

/// An address prefix such as `10.64.0.0/10` or `2001:db8::/32`: the
/// subscribers (client addresses) it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    addr: IpAddr,
    len: u8,
}

impl Prefix {
    /// Whether `ip` lies inside (an address of the other family never does).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(p), IpAddr::V4(a)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.len)).unwrap_or(0);
                u32::from(p) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(p), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.len))
                    .unwrap_or(0);
                u128::from(p) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for Prefix {
    type Err = String;

    fn from_str(s: &str) -> Result<Prefix, String> {
        let (addr, len) = s.trim().split_once('/').unwrap_or((s.trim(), ""));
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("{s:?} is not an address prefix like 10.64.0.0/10"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = if len.is_empty() {
            max
        } else {
            len.parse::<u8>()
                .ok()
                .filter(|l| *l <= max)
                .ok_or_else(|| format!("{s:?}: the length after / must be 0 to {max}"))?
        };
        Ok(Prefix { addr, len })
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// Everything one bridge runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct BridgeSettings {
    /// The interface toward the mobile clients.
    pub radio: String,
    /// The interface toward the servers.
    pub internet: String,
    /// The optimizer's limits; `None` bridges without optimizing (every
    /// frame passed as it came), the baseline to compare against.
    pub optimizer: Option<brisk_optimizer::Config>,
    /// Clients whose connections are optimized; empty means all. Other
    /// clients' frames pass untouched and are never tracked.
    pub subscribers: Vec<Prefix>,
    /// How often the counters are reported; `None` for never.
    pub report_every: Option<Duration>,
    /// After a stop signal, how long to go on delivering what the
    /// optimizer holds (it has acknowledged it to servers already).
    pub drain_limit: Duration,
}

impl BridgeSettings {
    /// A bridge between `radio` and `internet` with the optimizer's
    /// defaults for every subscriber, reporting every 10 s.
    pub fn new(radio: &str, internet: &str) -> BridgeSettings {
        BridgeSettings {
            radio: radio.to_string(),
            internet: internet.to_string(),
            optimizer: Some(brisk_optimizer::Config::default()),
            subscribers: Vec::new(),
            report_every: Some(Duration::from_secs(10)),
            drain_limit: Duration::from_secs(2),
        }
    }

    /// Whether connections of client `ip` are optimized.
    pub fn optimizes(&self, ip: IpAddr) -> bool {
        self.optimizer.is_some()
            && (self.subscribers.is_empty() || self.subscribers.iter().any(|p| p.contains(ip)))
    }

    /// Reads a settings file's text over these settings (what the file
    /// leaves out stays). The error names the field and its line.
    pub fn apply_file(&mut self, text: &str) -> Result<(), String> {
        let file: File = toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())?;
        let wrong = |at: usize, field: &str, why: String| {
            format!("line {}: {field}: {why}", line_of(text, at))
        };
        if let Some(r) = file.radio {
            self.radio = r;
        }
        if let Some(i) = file.internet {
            self.internet = i;
        }
        if let Some(every) = &file.report_every {
            let d = parse_duration(every.get_ref())
                .map_err(|e| wrong(every.span().start, "report_every", e))?;
            self.report_every = (!d.is_zero()).then_some(d);
        }
        if let Some(subs) = file.subscribers {
            self.subscribers = subs
                .optimize
                .iter()
                .map(|p| {
                    p.get_ref()
                        .parse()
                        .map_err(|e| wrong(p.span().start, "[subscribers] optimize", e))
                })
                .collect::<Result<_, _>>()?;
        }
        if file.optimizer.is_some() {
            self.optimizer = optimizer_table::parse(text)?;
        }
        Ok(())
    }

    /// The interfaces are named, and named differently.
    pub fn check(&self) -> Result<(), String> {
        if self.radio.is_empty() || self.internet.is_empty() {
            return Err(
                "name both interfaces: --radio (toward the clients) and --internet (toward the servers)"
                    .into(),
            );
        }
        if self.radio == self.internet {
            return Err(format!(
                "--radio and --internet are both {}: a bridge joins two interfaces",
                self.radio
            ));
        }
        Ok(())
    }
}

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    radio: Option<String>,
    internet: Option<String>,
    report_every: Option<Spanned<String>>,
    subscribers: Option<Subscribers>,
    /// Read by `optimizer_table`, which knows its fields.
    optimizer: Option<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Subscribers {
    optimize: Vec<Spanned<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_cover_their_own_family_only() {
        let p: Prefix = "10.64.0.0/10".parse().unwrap();
        assert!(p.contains("10.127.255.1".parse().unwrap()));
        assert!(!p.contains("10.128.0.1".parse().unwrap()));
        assert!(!p.contains("::ffff:10.64.0.1".parse().unwrap()));
        let q: Prefix = "2001:db8:40::/42".parse().unwrap();
        assert!(q.contains("2001:db8:7f::1".parse().unwrap()));
        assert!(!q.contains("2001:db8:80::1".parse().unwrap()));
        let all: Prefix = "::/0".parse().unwrap();
        assert!(all.contains("fd00::1".parse().unwrap()));
        let host: Prefix = "192.0.2.7".parse().unwrap();
        assert_eq!(host.to_string(), "192.0.2.7/32");
        assert!(!host.contains("192.0.2.8".parse().unwrap()));
        for bad in ["10.0.0.0/33", "fd00::/129", "ten/8", "10.0.0.0/x", ""] {
            assert!(bad.parse::<Prefix>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_file_sets_interfaces_subscribers_and_the_optimizer() {
        let mut s = BridgeSettings::new("", "");
        s.apply_file(
            "radio = \"eth1\"\ninternet = \"eth0\"\nreport_every = \"0s\"\n\
             [subscribers]\noptimize = [\"10.64.0.0/10\", \"2001:db8::/32\"]\n\
             [optimizer]\nbudget_gain = 1.25\n",
        )
        .unwrap();
        assert_eq!((s.radio.as_str(), s.internet.as_str()), ("eth1", "eth0"));
        assert_eq!(s.report_every, None);
        assert_eq!(s.optimizer.as_ref().map(|c| c.budget_gain), Some(1.25));
        assert!(s.optimizes("10.64.0.9".parse().unwrap()));
        assert!(s.optimizes("2001:db8::9".parse().unwrap()));
        assert!(!s.optimizes("192.0.2.1".parse().unwrap()));
        s.check().unwrap();
        s.apply_file("[optimizer]\nenabled = false\n").unwrap();
        assert!(!s.optimizes("10.64.0.9".parse().unwrap()));
    }

    #[test]
    fn mistakes_name_the_field_and_the_line() {
        let cases = [
            ("radios = \"eth1\"\n", "unknown field `radios`"),
            ("\nreport_every = \"soon\"\n", "line 2: report_every"),
            (
                "[subscribers]\noptimize = [\n\"10.0.0.0/40\"]\n",
                "line 3: [subscribers] optimize",
            ),
            (
                "[optimizer]\nbudget_gain = 0.5\n",
                "line 2: [optimizer] budget_gain",
            ),
        ];
        for (text, want) in cases {
            let e = BridgeSettings::new("a", "b").apply_file(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        assert!(
            BridgeSettings::new("eth0", "eth0")
                .check()
                .unwrap_err()
                .contains("both eth0")
        );
        assert!(BridgeSettings::new("", "eth0").check().is_err());
    }
}
