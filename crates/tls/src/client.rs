//! The client side: a rustls client configuration from redis-cli's TLS
//! options (`--sni`, `--cacert`, `--cacertdir`, `--insecure`, `--cert`,
//! `--key`, `--tls-ciphers`, `--tls-ciphersuites`), built once and shared
//! by every connection a tool opens.
//!
//! The server's certificate chain is verified against the CA certificates
//! given (the system's when none are), with its validity dates, as
//! redis-cli does through hiredis. Like hiredis, the host name is not
//! matched against the certificate (Redis's own test certificates carry
//! no host names), so pointing at 127.0.0.1 with a certificate made for
//! `redis.example` works as it does with redis-cli; the chain is what is
//! trusted. `--insecure` skips the chain too.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::files;
use crate::write_through::WriteThrough;

/// redis-cli's TLS options, as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientTlsOptions {
    /// `--sni`: the server name to send (the host given otherwise, unless it is an address).
    pub sni: Option<String>,
    /// `--cacert`: a PEM bundle of CA certificates to verify the server with.
    pub cacert: Option<PathBuf>,
    /// `--cacertdir`: a directory of PEM CA certificates.
    pub cacertdir: Option<PathBuf>,
    /// `--insecure`: accept any server certificate.
    pub insecure: bool,
    /// `--cert`: the client certificate chain (for `tls-auth-clients yes`).
    pub cert: Option<PathBuf>,
    /// `--key`: the client certificate's private key.
    pub key: Option<PathBuf>,
    /// `--tls-ciphers`: TLS 1.2 cipher suites, OpenSSL names.
    pub ciphers: Option<String>,
    /// `--tls-ciphersuites`: TLS 1.3 cipher suites.
    pub ciphersuites: Option<String>,
}

/// A built client configuration; cheap to clone.
#[derive(Clone)]
pub struct ClientTls {
    connector: TlsConnector,
    sni: Option<String>,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls").field("sni", &self.sni).finish_non_exhaustive()
    }
}

/// A TLS connection to a server, as the client tools use it.
pub type ClientStream = WriteThrough<TlsStream<TcpStream>>;

impl ClientTls {
    /// Read the files `opts` names and build the configuration; the error
    /// says which file or option is wrong.
    pub fn new(opts: &ClientTlsOptions) -> Result<ClientTls, String> {
        let provider = crate::suites::provider_for(
            opts.ciphersuites.as_deref().unwrap_or(""),
            opts.ciphers.as_deref().unwrap_or(""),
        )?;
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&[&rustls::version::TLS12, &rustls::version::TLS13])
            .map_err(|e| format!("TLS: {e}"))?;
        let builder = if opts.insecure {
            builder.dangerous().with_custom_certificate_verifier(Arc::new(AnyCertificate(Arc::clone(&provider))))
        } else {
            let roots = if opts.cacert.is_some() || opts.cacertdir.is_some() {
                files::load_roots(opts.cacert.as_deref(), opts.cacertdir.as_deref())?
            } else {
                files::system_roots()?
            };
            if roots.is_empty() {
                return Err("no CA certificate to verify the server with (--cacert, --cacertdir)".into());
            }
            let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
                .build()
                .map_err(|e| format!("TLS: {e}"))?;
            builder.dangerous().with_custom_certificate_verifier(Arc::new(ChainOnly(verifier)))
        };
        let config = match (&opts.cert, &opts.key) {
            (Some(cert), Some(key)) => {
                let chain = files::load_certs(cert).map_err(|e| format!("{}: {e}", cert.display()))?;
                let key = files::load_key(key, None).map_err(|e| format!("{}: {e}", key.display()))?;
                builder.with_client_auth_cert(chain, key).map_err(|e| format!("client certificate: {e}"))?
            }
            (None, None) => builder.with_no_client_auth(),
            _ => return Err("--cert and --key must be given together".into()),
        };
        Ok(ClientTls { connector: TlsConnector::from(Arc::new(config)), sni: opts.sni.clone() })
    }

    /// Run the handshake over `tcp`, connected to `host` (a name or an address).
    pub async fn connect(&self, host: &str, tcp: TcpStream) -> io::Result<ClientStream> {
        let name = self.sni.as_deref().unwrap_or(host);
        let name = name.trim_start_matches('[').trim_end_matches(']');
        let server_name = ServerName::try_from(name.to_string())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("server name '{name}': {e}")))?;
        let stream = self.connector.connect(server_name, tcp).await?;
        Ok(WriteThrough::new(stream))
    }
}

/// Verifies the chain and dates, not the host name (see the module documentation).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `--insecure`: any certificate is accepted; the handshake's signatures
/// are still checked, so the session is with whoever holds that key.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
