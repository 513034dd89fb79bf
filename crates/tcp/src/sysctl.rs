//! Reading (and, where asked, writing) the kernel's TCP sysctls.
//!
//! Values come from files under `/proc/sys` (`net.ipv4.tcp_ecn` is
//! `/proc/sys/net/ipv4/tcp_ecn`). The root is a parameter so tests and the
//! doctor can read a fixture tree. Networking sysctls are per network
//! namespace: a process sees those of the namespace it runs in.

use std::io;
use std::path::{Path, PathBuf};

/// Why a sysctl could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SysctlError {
    #[error("sysctl {key} does not exist here ({path} is missing): {why}")]
    /// The key's file is missing (an old kernel, a module not loaded, or
    /// another network namespace).
    NotFound {
        /// The dotted sysctl name, such as `net.ipv4.tcp_ecn`.
        key: String,
        /// The file that was looked for.
        path: PathBuf,
        /// What the missing key usually means.
        why: &'static str,
    },
    #[error("sysctl {key} = {value:?} is not what was expected ({expected})")]
    /// The value could not be read as the expected type.
    Parse {
        /// The dotted sysctl name.
        key: String,
        /// The value as read, whitespace trimmed.
        value: String,
        /// What was expected, such as `an integer`.
        expected: &'static str,
    },
    #[error(
        "cannot write sysctl {key}: {source}; run as root (or with CAP_NET_ADMIN in this \
         network namespace), or set it yourself: sysctl -w {key}={value}"
    )]
    /// Writing failed (usually not root).
    Write {
        /// The dotted sysctl name.
        key: String,
        /// The value that was to be written.
        value: String,
        #[source]
        /// The OS error.
        source: io::Error,
    },
    #[error("cannot read sysctl {key}: {source}")]
    /// Reading failed for a reason other than a missing file.
    Read {
        /// The dotted sysctl name.
        key: String,
        #[source]
        /// The OS error.
        source: io::Error,
    },
}

/// A sysctl tree: `/proc/sys` on Linux, or a copy of one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sysctls {
    root: PathBuf,
}

impl Sysctls {
    /// The running kernel's sysctls.
    pub fn system() -> Self {
        Sysctls {
            root: PathBuf::from("/proc/sys"),
        }
    }

    /// Sysctls laid out as files under `root` (tests, saved snapshots).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Sysctls { root: root.into() }
    }

    /// The directory the dotted names map under (`/proc/sys` by default).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file holding `key` (dots become path separators).
    pub fn path_of(&self, key: &str) -> PathBuf {
        key.split('.')
            .fold(self.root.clone(), |p, part| p.join(part))
    }

    /// The value of `key` with surrounding whitespace removed.
    pub fn read(&self, key: &str) -> Result<String, SysctlError> {
        let path = self.path_of(key);
        match std::fs::read_to_string(&path) {
            Ok(s) => Ok(s.trim().to_string()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(SysctlError::NotFound {
                key: key.to_string(),
                path,
                why: if cfg!(target_os = "linux") {
                    "this kernel lacks the setting or /proc is not mounted"
                } else {
                    "TCP sysctls are read from Linux's /proc/sys"
                },
            }),
            Err(source) => Err(SysctlError::Read {
                key: key.to_string(),
                source,
            }),
        }
    }

    /// An integer sysctl. Values above `i64::MAX` do not occur in the keys
    /// this crate reads; `tcp_notsent_lowat`'s "unlimited" is 4294967295.
    pub fn read_int(&self, key: &str) -> Result<i64, SysctlError> {
        let raw = self.read(key)?;
        raw.parse().map_err(|_| SysctlError::Parse {
            key: key.to_string(),
            value: raw,
            expected: "an integer",
        })
    }

    /// A `min default max` triple such as `net.ipv4.tcp_wmem`.
    pub fn read_triple(&self, key: &str) -> Result<[u64; 3], SysctlError> {
        let raw = self.read(key)?;
        let parsed: Vec<u64> = raw
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|_| SysctlError::Parse {
                key: key.to_string(),
                value: raw.clone(),
                expected: "three integers",
            })?;
        <[u64; 3]>::try_from(parsed).map_err(|_| SysctlError::Parse {
            key: key.to_string(),
            value: raw,
            expected: "three integers",
        })
    }

    /// A space-separated list such as `tcp_available_congestion_control`.
    pub fn read_list(&self, key: &str) -> Result<Vec<String>, SysctlError> {
        Ok(self
            .read(key)?
            .split_whitespace()
            .map(str::to_string)
            .collect())
    }

    /// Writes `key`. Needs privilege in the current network namespace; the
    /// error says how to do it by hand.
    pub fn write(&self, key: &str, value: &str) -> Result<(), SysctlError> {
        std::fs::write(self.path_of(key), value).map_err(|source| SysctlError::Write {
            key: key.to_string(),
            value: value.to_string(),
            source,
        })
    }
}

#[cfg(test)]
pub(crate) mod fixture {
    use std::path::PathBuf;

    /// A throw-away sysctl tree under the target directory's temp space.
    pub(crate) fn tree(name: &str, entries: &[(&str, &str)]) -> PathBuf {
        let root =
            std::env::temp_dir().join(format!("brisk-tcp-sysctl-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (key, value) in entries {
            let path = key.split('.').fold(root.clone(), |p, part| p.join(part));
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("fixture dir");
            }
            std::fs::write(&path, format!("{value}\n")).expect("fixture file");
        }
        std::fs::create_dir_all(&root).expect("fixture root");
        root
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ints_triples_and_lists() {
        let root = fixture::tree(
            "reads",
            &[
                ("net.ipv4.tcp_ecn", "2"),
                ("net.ipv4.tcp_wmem", "4096\t16384\t4194304"),
                (
                    "net.ipv4.tcp_available_congestion_control",
                    "reno cubic bbr",
                ),
                ("net.ipv4.tcp_notsent_lowat", "4294967295"),
            ],
        );
        let s = Sysctls::at(&root);
        assert_eq!(s.read_int("net.ipv4.tcp_ecn").unwrap(), 2);
        assert_eq!(
            s.read_triple("net.ipv4.tcp_wmem").unwrap(),
            [4096, 16384, 4_194_304]
        );
        assert_eq!(
            s.read_list("net.ipv4.tcp_available_congestion_control")
                .unwrap(),
            ["reno", "cubic", "bbr"]
        );
        assert_eq!(
            s.read_int("net.ipv4.tcp_notsent_lowat").unwrap(),
            4_294_967_295
        );
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn missing_and_malformed_values_are_errors() {
        let root = fixture::tree(
            "bad",
            &[
                ("net.ipv4.tcp_ecn", "yes"),
                ("net.ipv4.tcp_wmem", "4096 16384"),
            ],
        );
        let s = Sysctls::at(&root);
        assert!(matches!(
            s.read_int("net.ipv4.tcp_ecn"),
            Err(SysctlError::Parse { .. })
        ));
        assert!(matches!(
            s.read_triple("net.ipv4.tcp_wmem"),
            Err(SysctlError::Parse { .. })
        ));
        let missing = s.read_int("net.ipv4.tcp_fastopen").unwrap_err();
        assert!(matches!(missing, SysctlError::NotFound { .. }));
        assert!(missing.to_string().contains("net.ipv4.tcp_fastopen"));
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn write_then_read_back() {
        let root = fixture::tree("write", &[("net.ipv4.tcp_ecn", "2")]);
        let s = Sysctls::at(&root);
        s.write("net.ipv4.tcp_ecn", "1").unwrap();
        assert_eq!(s.read_int("net.ipv4.tcp_ecn").unwrap(), 1);
        let _ = std::fs::remove_dir_all(root);
    }
}
