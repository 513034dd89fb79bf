//! TLS set-up: a self-signed certificate made at start for the server, and
//! the client's choice between the system's roots and `--insecure`.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, ServerConfig, SignatureScheme};
use std::sync::Arc;

/// Encrypted bytes TLS may hold before the socket takes them. rustls keeps
/// 64 KB by default; on a connection that gets 2.5 Mbit/s (a fair share of
/// 20 Mbit/s among eight) that is 200 ms a request waits behind, so one
/// record's worth is kept instead.
pub const SEND_BUFFER_LIMIT: usize = 16 * 1024;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// A server configuration speaking HTTP/2 only, with a fresh self-signed
/// certificate for `names` (host names or addresses).
pub fn server_config(names: Vec<String>) -> Result<ServerConfig, String> {
    let cert = rcgen::generate_simple_self_signed(names)
        .map_err(|e| format!("cannot make a self-signed certificate: {e}"))?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der()));
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up: {e}"))?
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .map_err(|e| format!("TLS set-up: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(config)
}

/// A client configuration offering HTTP/2. `insecure` accepts any
/// certificate (for self-signed test servers); otherwise the system's
/// trusted roots decide.
pub fn client_config(insecure: bool) -> Result<ClientConfig, String> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up: {e}"))?;
    let mut config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider())))
            .with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        let found = rustls_native_certs::load_native_certs();
        for cert in found.certs {
            // A malformed system certificate is skipped, as browsers do.
            let _ = roots.add(cert);
        }
        if roots.is_empty() {
            return Err(
                "no trusted root certificates found on this system; use --insecure for a self-signed server"
                    .into(),
            );
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(config)
}

/// Accepts every certificate but still checks the handshake signatures.
#[derive(Debug)]
struct AcceptAny(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
