//! TLS certificates made when a test runs, so that no private key is ever
//! committed: a CA, a server certificate (for `localhost` and 127.0.0.1)
//! and a client certificate it signs, and a second, unrelated CA with a
//! server certificate of its own, for the "wrong CA" cases. Keys are
//! ECDSA P-256 (rcgen's default), certificates X.509 v3.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};

/// PEM files of a test PKI, in a directory the caller owns.
#[derive(Debug, Clone)]
pub struct Pki {
    /// The CA certificate that signed `server_cert` and `client_cert`.
    pub ca: PathBuf,
    /// The server's certificate and key.
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    /// A client certificate and key (for `tls-auth-clients yes`).
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    /// Another CA, and a server and a client certificate it signed.
    pub other_ca: PathBuf,
    pub other_server_cert: PathBuf,
    pub other_server_key: PathBuf,
    pub other_client_cert: PathBuf,
    pub other_client_key: PathBuf,
}

fn ca(name: &str) -> (CertificateParams, KeyPair) {
    let key = KeyPair::generate().expect("CA key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    (params, key)
}

fn leaf(issuer: &Issuer<'_, KeyPair>, name: &str, client: bool) -> (String, String) {
    let key = KeyPair::generate().expect("key");
    let mut params =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).expect("leaf params");
    params.distinguished_name.push(DnType::CommonName, name);
    params.extended_key_usages =
        vec![if client { ExtendedKeyUsagePurpose::ClientAuth } else { ExtendedKeyUsagePurpose::ServerAuth }];
    let cert = params.signed_by(&key, issuer).expect("sign");
    (cert.pem(), key.serialize_pem())
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write PEM file");
    path
}

impl Pki {
    /// Make the certificates and write them into `dir`.
    pub fn generate(dir: &Path) -> Pki {
        let (ca_params, ca_key) = ca("kvik test CA");
        let ca_pem = ca_params.self_signed(&ca_key).expect("CA cert").pem();
        let issuer = Issuer::new(ca_params, ca_key);
        let (server_cert, server_key) = leaf(&issuer, "kvik test server", false);
        let (client_cert, client_key) = leaf(&issuer, "kvik test client", true);
        let (other_params, other_key) = ca("another CA");
        let other_pem = other_params.self_signed(&other_key).expect("other CA cert").pem();
        let other = Issuer::new(other_params, other_key);
        let (other_server_cert, other_server_key) = leaf(&other, "another server", false);
        let (other_client_cert, other_client_key) = leaf(&other, "another client", true);
        Pki {
            ca: write(dir, "ca.crt", &ca_pem),
            server_cert: write(dir, "server.crt", &server_cert),
            server_key: write(dir, "server.key", &server_key),
            client_cert: write(dir, "client.crt", &client_cert),
            client_key: write(dir, "client.key", &client_key),
            other_ca: write(dir, "other-ca.crt", &other_pem),
            other_server_cert: write(dir, "other-server.crt", &other_server_cert),
            other_server_key: write(dir, "other-server.key", &other_server_key),
            other_client_cert: write(dir, "other-client.crt", &other_client_cert),
            other_client_key: write(dir, "other-client.key", &other_client_key),
        }
    }

    /// kvik-server / redis-server options serving TLS on `tls_port` with
    /// this PKI's server certificate, clients verified against its CA.
    pub fn server_args(&self, tls_port: u16) -> Vec<String> {
        let show = |p: &Path| p.display().to_string();
        vec![
            "--tls-port".into(),
            tls_port.to_string(),
            "--tls-cert-file".into(),
            show(&self.server_cert),
            "--tls-key-file".into(),
            show(&self.server_key),
            "--tls-ca-cert-file".into(),
            show(&self.ca),
        ]
    }

    /// redis-cli / redis-benchmark / kvik-cli options for a client that
    /// trusts this PKI's CA and presents its client certificate.
    pub fn client_args(&self) -> Vec<String> {
        let show = |p: &Path| p.display().to_string();
        vec![
            "--tls".into(),
            "--cacert".into(),
            show(&self.ca),
            "--cert".into(),
            show(&self.client_cert),
            "--key".into(),
            show(&self.client_key),
        ]
    }
}
