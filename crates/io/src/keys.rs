//! Server keys on disk: generation, saving and loading.
//!
//! Both files are two lines of text: a header naming the content, then the
//! 32-byte X25519 key as 64 lowercase hex digits (docs/IO.md):
//!
//! ```text
//! brisk-secret-key-v1
//! 3f9c...e1
//! ```
//!
//! The public file has the header `brisk-public-key-v1`. A public key is
//! also accepted as its bare 64 hex digits (handy on a command line).

use brisk_proto::crypto::{KEY_LEN, Keypair};
use std::io::Read;
use std::path::Path;

pub const SECRET_HEADER: &str = "brisk-secret-key-v1";
pub const PUBLIC_HEADER: &str = "brisk-public-key-v1";

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The OS error is the source, so a report that prints the chain
    /// shows it once.
    #[error("cannot read {path}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{what}: expected the header line `{expected}`")]
    Header {
        what: String,
        expected: &'static str,
    },
    #[error("{what}: expected a key of 64 hex digits")]
    Hex { what: String },
    #[error("reading the system's random source: {0}")]
    Random(std::io::Error),
}

/// `N` bytes from the kernel's random source.
pub fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut b = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b)
}

pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// 64 hex digits to a key; `None` for anything else.
pub fn key_from_hex(s: &str) -> Option<[u8; KEY_LEN]> {
    let s = s.trim();
    if s.len() != 2 * KEY_LEN || !s.is_ascii() {
        return None;
    }
    let mut key = [0u8; KEY_LEN];
    for (i, k) in key.iter_mut().enumerate() {
        *k = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(key)
}

/// A fresh secret key from the system's random source, and its keypair.
pub fn generate() -> Result<([u8; KEY_LEN], Keypair), KeyError> {
    let secret = random_bytes::<KEY_LEN>().map_err(KeyError::Random)?;
    Ok((secret, Keypair::from_private(secret)))
}

pub fn secret_file_text(secret: &[u8; KEY_LEN]) -> String {
    format!("{SECRET_HEADER}\n{}\n", to_hex(secret))
}

pub fn public_file_text(public: &[u8; KEY_LEN]) -> String {
    format!("{PUBLIC_HEADER}\n{}\n", to_hex(public))
}

/// Reads `text` as a key file with `header`, or (if `bare_ok`) as bare hex.
fn parse(
    text: &str,
    header: &'static str,
    bare_ok: bool,
    what: &str,
) -> Result<[u8; KEY_LEN], KeyError> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("");
    if first == header {
        return lines
            .next()
            .and_then(key_from_hex)
            .ok_or_else(|| KeyError::Hex { what: what.into() });
    }
    if bare_ok && let Some(k) = key_from_hex(first) {
        return Ok(k);
    }
    if key_from_hex(first).is_some() || first.starts_with("brisk-") {
        return Err(KeyError::Header {
            what: what.into(),
            expected: header,
        });
    }
    Err(KeyError::Hex { what: what.into() })
}

pub fn parse_secret(text: &str, what: &str) -> Result<Keypair, KeyError> {
    parse(text, SECRET_HEADER, false, what).map(Keypair::from_private)
}

pub fn parse_public(text: &str, what: &str) -> Result<[u8; KEY_LEN], KeyError> {
    parse(text, PUBLIC_HEADER, true, what)
}

fn read(path: &Path) -> Result<String, KeyError> {
    std::fs::read_to_string(path).map_err(|source| KeyError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Loads a server's secret key file.
pub fn load_secret(path: &Path) -> Result<Keypair, KeyError> {
    parse_secret(&read(path)?, &path.display().to_string())
}

/// A public key from a file, or from `arg` itself when it is 64 hex
/// digits.
pub fn load_public(arg: &str) -> Result<[u8; KEY_LEN], KeyError> {
    if let Some(k) = key_from_hex(arg) {
        return Ok(k);
    }
    let path = Path::new(arg);
    parse_public(&read(path)?, arg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_round_trip_and_bad_files_are_errors() {
        let secret = [7u8; KEY_LEN];
        let kp = parse_secret(&secret_file_text(&secret), "s").unwrap();
        assert_eq!(kp, Keypair::from_private(secret));
        let public = kp.public();
        assert_eq!(
            parse_public(&public_file_text(&public), "p").unwrap(),
            public
        );
        assert_eq!(parse_public(&to_hex(&public), "p").unwrap(), public);
        // A public file is not a secret key, nor the other way round.
        assert!(matches!(
            parse_secret(&public_file_text(&public), "p"),
            Err(KeyError::Header { .. })
        ));
        assert!(matches!(
            parse_public(&secret_file_text(&secret), "s"),
            Err(KeyError::Header { .. })
        ));
        for bad in [
            "",
            "brisk-secret-key-v1\nzz",
            "brisk-secret-key-v1\n0102",
            "é",
        ] {
            assert!(parse_secret(bad, "x").is_err(), "{bad:?}");
        }
    }

    /// The message and its chain of causes, joined as the CLI prints them.
    fn chain(e: &dyn std::error::Error) -> String {
        let mut text = e.to_string();
        let mut cause = e.source();
        while let Some(c) = cause {
            text += &format!(": {c}");
            cause = c.source();
        }
        text
    }

    #[test]
    fn a_missing_key_file_is_named_once_with_its_os_error() {
        let dir = std::env::temp_dir().join(format!("brisk-keys-{}", std::process::id()));
        let missing = dir.join("nothere.pub");
        let e = load_public(&missing.display().to_string()).unwrap_err();
        let text = chain(&e);
        assert!(text.contains(&missing.display().to_string()), "{text}");
        assert_eq!(text.matches("os error").count(), 1, "{text}");
        let e = load_secret(&missing).unwrap_err();
        assert_eq!(chain(&e).matches("os error").count(), 1, "{}", chain(&e));
    }

    #[test]
    fn hex_is_64_digits_either_case() {
        let k = key_from_hex(&"Ab".repeat(32)).unwrap();
        assert_eq!(k, [0xab; KEY_LEN]);
        assert_eq!(to_hex(&k), "ab".repeat(32));
        assert!(key_from_hex(&"ab".repeat(31)).is_none());
        assert!(key_from_hex(&"g0".repeat(32)).is_none());
        // Multi-byte characters never reach the slicing.
        assert!(key_from_hex(&"é".repeat(32)).is_none());
    }
}
