//! The network half of a scenario file: the profile or the two `[link.*]`
//! tables, and the `[queue.*]` / `[queue_up.*]` tables. It is read here,
//! beside the models it configures, so the simulator (which adds the
//! traffic half) and the live lab (which runs real programs instead) read
//! a network the same way and report a bad one with the same field and
//! line.

use crate::link::profiles;
use crate::{LinkConfig, queue::QueueConfig};
use serde::Deserialize;
use std::path::Path;

/// Why the network tables of a scenario cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkError {
    /// The TOML or a field's value did not parse; the message names the
    /// field and its line.
    #[error("{0}")]
    Parse(String),
    /// The tables parsed but say something impossible.
    #[error("line {line}: {message}")]
    Invalid {
        /// Line in the scenario text, from 1.
        line: usize,
        /// What is wrong, for the user.
        message: String,
    },
}

/// Both directions of the bottleneck link.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Links {
    /// Sender to receiver: where data queues.
    #[serde(default)]
    pub down: LinkConfig,
    /// Receiver to sender: where ACKs and echoes travel.
    #[serde(default)]
    pub up: LinkConfig,
}

/// The queue tables a scenario file names: `[queue.KIND]` shapes the down
/// direction, `[queue_up.KIND]` the up direction. Either may be absent,
/// and then that direction gets the default FIFO.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueTables {
    /// The kind named by `[queue.KIND]` (e.g. "codel"), for the down direction; `None` when absent.
    pub down: Option<String>,
    /// The kind named by `[queue_up.KIND]`, for the up direction; `None` when absent.
    pub up: Option<String>,
}

/// What a [`crate::Bottleneck`] is built from. Other keys of the file are
/// left to whoever reads the rest of it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Network {
    /// A named network (`link::profiles`, e.g. "lte"): sets both link
    /// directions. Exclusive with `[link.*]` tables.
    #[serde(default)]
    pub profile: Option<String>,
    /// The bottleneck, one config per direction.
    #[serde(default)]
    pub link: Links,
    /// The bottleneck queue of the down (sender to receiver) direction.
    #[serde(default)]
    pub queue: QueueConfig,
    /// The queue of the up (receiver to sender) direction.
    #[serde(default)]
    pub queue_up: QueueConfig,
    /// The queue kinds the file names per direction; a direction it leaves
    /// out runs the default FIFO.
    #[serde(skip)]
    pub queue_tables: QueueTables,
}

impl Network {
    /// Reads the network tables of scenario `text`, reading trace files
    /// it names through `read_trace`, and checks them.
    pub fn parse_with_traces(
        text: &str,
        mut read_trace: impl FnMut(&Path) -> std::io::Result<String>,
    ) -> Result<Network, NetworkError> {
        let invalid = |line: usize, message: String| NetworkError::Invalid { line, message };
        let queue_tables =
            one_queue_per_direction(text).map_err(|(line, message)| invalid(line, message))?;
        let mut network: Network = toml::from_str(text)
            .map_err(|e| NetworkError::Parse(e.to_string().trim_end().to_string()))?;
        network.queue_tables = queue_tables;
        let at = |needle: &str| line_of(text, text.find(needle).unwrap_or(0));
        if let Some(name) = &network.profile {
            let Some(p) = profiles::by_name(name) else {
                let known: Vec<&str> = profiles::all().iter().map(|p| p.name).collect();
                let message = format!("unknown profile {name:?}; known: {}", known.join(", "));
                return Err(invalid(at("profile"), message));
            };
            if text.contains("[link") {
                let message = "`profile` sets the links: remove it or the [link.*] tables";
                return Err(invalid(at("[link"), message.into()));
            }
            network.link = Links {
                down: p.down(),
                up: p.up(),
            };
        }
        for (dir, link) in [
            ("down", &mut network.link.down),
            ("up", &mut network.link.up),
        ] {
            let line = at(&format!("[link.{dir}]"));
            if let Some(path) = link.trace_path().map(Path::to_path_buf) {
                let shown = path.display();
                let trace = read_trace(&path).map_err(|e| {
                    invalid(
                        line,
                        format!("[link.{dir}]: cannot read trace {shown}: {e}"),
                    )
                })?;
                link.load_trace(&trace)
                    .map_err(|e| invalid(line, format!("[link.{dir}]: trace {shown}: {e}")))?;
            }
            link.validate()
                .map_err(|e| invalid(line, format!("[link.{dir}]: {e}")))?;
        }
        for (table, q) in [("queue", &network.queue), ("queue_up", &network.queue_up)] {
            if let QueueConfig::DualPi2(c) = q {
                let line = at(&format!("[{table}."));
                c.validate()
                    .map_err(|e| invalid(line, format!("[{table}.dualpi2]: {e}")))?;
            }
        }
        Ok(network)
    }

    /// Reads network tables that name no trace file (tests, inline text).
    pub fn parse(text: &str) -> Result<Network, NetworkError> {
        Network::parse_with_traces(text, |trace| {
            Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "{} (trace files need a scenario file to be relative to)",
                    trace.display()
                ),
            ))
        })
    }
}

/// The queue kind each direction names. Refuses two queue tables for one
/// direction with a message saying so (serde would say "wanted exactly 1
/// element"), naming the second one's line. Text that is not TOML is left
/// to serde, whose message is better.
fn one_queue_per_direction(text: &str) -> Result<QueueTables, (usize, String)> {
    let mut named = QueueTables::default();
    let Ok(table) = text.parse::<toml::Table>() else {
        return Ok(named);
    };
    for key in ["queue", "queue_up"] {
        let Some(toml::Value::Table(queues)) = table.get(key) else {
            continue;
        };
        let kind = queues.keys().next().cloned();
        if key == "queue" {
            named.down = kind;
        } else {
            named.up = kind;
        }
        if queues.len() > 1 {
            let names: Vec<&str> = queues.keys().map(String::as_str).collect();
            let prefix = format!("{key}.");
            let line = table_headers(text)
                .iter()
                .filter(|(name, _)| name.starts_with(&prefix))
                .nth(1)
                .map_or(1, |(_, line)| *line);
            let direction = if key == "queue" { "down" } else { "up" };
            return Err((
                line,
                format!(
                    "only one queue may be configured per direction; [{key}.*] ({direction}) has {}",
                    names.join(" and ")
                ),
            ));
        }
    }
    Ok(named)
}

/// The `[table]` headers of a TOML text, each with its line.
fn table_headers(text: &str) -> Vec<(&str, usize)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let line = line.trim();
            let name = line.strip_prefix('[')?.split(']').next()?.trim();
            (!line.starts_with("[[")).then_some((name, i + 1))
        })
        .collect()
}

/// 1-based line of a byte offset in a scenario text, for messages that
/// name the line of what they refuse.
pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|b| *b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        Network::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn bad_network_tables_name_field_and_line() {
        // An unknown field inside a link table: serde names it and its line.
        let e = err("name = \"x\"\n[link.down]\nrate = \"1Mbit\"\nrat = \"2Mbit\"\n");
        assert!(e.contains("rat") && e.contains("line 4"), "{e}");
        // A second queue for one direction: the line of the second table.
        let e = err("[queue.fifo]\n[queue.codel]\n");
        assert!(
            e.starts_with("line 2:") && e.contains("codel and fifo"),
            "{e}"
        );
        let e = err("\nprofile = \"6g\"\n");
        assert!(
            e.starts_with("line 2:") && e.contains("unknown profile"),
            "{e}"
        );
        let e = err("profile = \"lte\"\n[link.down]\nrate = \"1Mbit\"\n");
        assert!(e.starts_with("line 2:") && e.contains("profile"), "{e}");
    }

    #[test]
    fn other_keys_are_left_to_the_rest_of_the_file() {
        let n = Network::parse(
            "name = \"x\"\n[link.down]\nrate = \"1Mbit\"\n[queue_up.codel]\n[[flows]]\nkind = \"ping\"\n",
        )
        .unwrap();
        assert_eq!(
            n.link.down.rate,
            crate::RateModel::Constant { bps: 1_000_000 }
        );
        assert_eq!(n.queue_tables.up.as_deref(), Some("codel"));
        assert_eq!(n.queue_tables.down, None);
    }
}
