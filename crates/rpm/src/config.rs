//! The draft's configuration document: where the small, large and upload
//! endpoints live, and optionally which host to connect to for them.

use serde::{Deserialize, Serialize};

/// The JSON a client fetches from the config URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// The document's format version; 1 is the only one defined.
    pub version: u32,
    /// Where the test's three endpoints live.
    pub urls: Urls,
    /// Host (name or address, no port) to connect to instead of the URLs'
    /// host; absent or empty means the URLs' own host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_endpoint: Option<String>,
}

/// The three endpoints of the draft's configuration document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Urls {
    /// A tiny object: each probe fetches it to time one HTTP round trip.
    pub small_https_download_url: String,
    /// A large object (endless on Brisk's server) the download load streams.
    pub large_https_download_url: String,
    /// Where the upload load sends an endless body.
    pub https_upload_url: String,
}

/// Paths Brisk's server answers on.
pub const CONFIG_PATH: &str = "/config";
/// Path of the small object.
pub const SMALL_PATH: &str = "/small";
/// Path of the large object.
pub const LARGE_PATH: &str = "/large";
/// Path the upload is sent to.
pub const UPLOAD_PATH: &str = "/slurp";

impl Config {
    /// The document a server at `authority` (host:port as the client wrote
    /// it) hands out.
    pub fn for_authority(authority: &str) -> Self {
        let host = match authority.rsplit_once(':') {
            Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h,
            _ => authority,
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        Self {
            version: 1,
            urls: Urls {
                small_https_download_url: format!("https://{authority}{SMALL_PATH}"),
                large_https_download_url: format!("https://{authority}{LARGE_PATH}"),
                https_upload_url: format!("https://{authority}{UPLOAD_PATH}"),
            },
            test_endpoint: Some(host.to_string()),
        }
    }

    /// Parses and checks the document: every URL must be https with a host.
    pub fn parse(json: &[u8]) -> Result<Self, String> {
        let config: Config =
            serde_json::from_slice(json).map_err(|e| format!("configuration is not valid: {e}"))?;
        for (field, url) in [
            (
                "small_https_download_url",
                &config.urls.small_https_download_url,
            ),
            (
                "large_https_download_url",
                &config.urls.large_https_download_url,
            ),
            ("https_upload_url", &config.urls.https_upload_url),
        ] {
            let uri: http::Uri = url
                .parse()
                .map_err(|e| format!("configuration field {field}: {url:?} is not a URL: {e}"))?;
            if uri.scheme_str() != Some("https") || uri.host().is_none() {
                return Err(format!(
                    "configuration field {field}: {url:?} must be an https URL with a host"
                ));
            }
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_document_round_trips_through_the_parser() {
        for authority in ["127.0.0.1:4043", "[::1]:4043", "example.net"] {
            let c = Config::for_authority(authority);
            let json = serde_json::to_vec(&c).expect("serializes");
            assert_eq!(Config::parse(&json), Ok(c));
        }
    }

    #[test]
    fn test_endpoint_is_the_bare_host() {
        assert_eq!(
            Config::for_authority("[::1]:4043").test_endpoint.as_deref(),
            Some("::1")
        );
        assert_eq!(
            Config::for_authority("10.0.0.1:443")
                .test_endpoint
                .as_deref(),
            Some("10.0.0.1")
        );
    }

    #[test]
    fn plain_http_url_is_refused_by_field_name() {
        let json = br#"{"version":1,"urls":{"small_https_download_url":"http://a/small",
            "large_https_download_url":"https://a/large","https_upload_url":"https://a/slurp"}}"#;
        let err = Config::parse(json).unwrap_err();
        assert!(err.contains("small_https_download_url"), "{err}");
    }

    #[test]
    fn missing_field_is_named() {
        let json = br#"{"version":1,"urls":{"small_https_download_url":"https://a/small"}}"#;
        let err = Config::parse(json).unwrap_err();
        assert!(err.contains("large_https_download_url"), "{err}");
    }
}
