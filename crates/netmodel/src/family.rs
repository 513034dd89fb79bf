//! The address family every host of a run uses. Every scenario runs on
//! either; the header size it implies is what a datagram costs on the link
//! beyond its payload.

use serde::Deserialize;

/// IPv4 or IPv6, as a scenario's `ip` key and `--ip` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IpFamily {
    /// IPv4 (`"v4"`, the default): 20-byte header, 28 bytes with UDP.
    #[default]
    V4,
    /// IPv6 (`"v6"`): 40-byte header, 48 bytes with UDP.
    V6,
}

impl IpFamily {
    /// "v4" or "v6", as results write it.
    pub fn name(self) -> &'static str {
        match self {
            IpFamily::V4 => "v4",
            IpFamily::V6 => "v6",
        }
    }

    /// Bytes of IP + UDP header on this family.
    pub fn udp_header_bytes(self) -> u64 {
        match self {
            IpFamily::V4 => 28,
            IpFamily::V6 => 48,
        }
    }
}
