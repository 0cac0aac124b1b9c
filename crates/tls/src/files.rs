//! Certificates, private keys and CA certificates from PEM files.
//!
//! Every file is untrusted input: a missing, unreadable or malformed file
//! is an error naming the file and what is wrong with it, never a panic.
//! Keys may be PKCS#1 (`RSA PRIVATE KEY`), PKCS#8 (`PRIVATE KEY`), SEC1
//! (`EC PRIVATE KEY`) or password-encrypted PKCS#8 (`ENCRYPTED PRIVATE
//! KEY`, what `openssl genpkey -aes256` and `openssl pkcs8 -topk8` write,
//! decrypted with PBES2: PBKDF2 or scrypt with AES-CBC). The older
//! OpenSSL-only encryption inside an `RSA PRIVATE KEY` block (`Proc-Type:
//! 4,ENCRYPTED`) is refused with the command that converts it.

use std::path::Path;

use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Where Debian (and most Linux distributions) keep the system's trusted
/// CA certificates, for clients given neither `--cacert` nor `--cacertdir`.
pub const SYSTEM_CA_FILE: &str = "/etc/ssl/certs/ca-certificates.crt";

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| e.to_string())
}

/// The certificate chain in `path`, leaf first.
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = read(path)?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("not a PEM certificate file ({e})"))?;
    if certs.is_empty() {
        return Err("no certificate found in the file".into());
    }
    Ok(certs)
}

const ENCRYPTED_BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
const ENCRYPTED_END: &str = "-----END ENCRYPTED PRIVATE KEY-----";

/// The private key in `path`; `password` decrypts an encrypted PKCS#8 key
/// (and is not needed by a plain one, as with OpenSSL).
pub fn load_key(path: &Path, password: Option<&str>) -> Result<PrivateKeyDer<'static>, String> {
    let bytes = read(path)?;
    let text = String::from_utf8_lossy(&bytes);
    if let Some(start) = text.find(ENCRYPTED_BEGIN) {
        let end = text[start..]
            .find(ENCRYPTED_END)
            .map(|e| start + e + ENCRYPTED_END.len())
            .ok_or("the ENCRYPTED PRIVATE KEY block has no end line")?;
        let Some(password) = password.filter(|p| !p.is_empty()) else {
            return Err("the key is encrypted and no password is set (tls-key-file-pass)".into());
        };
        return decrypt_pkcs8(&text[start..end], password);
    }
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err("the key uses OpenSSL's legacy PEM encryption (Proc-Type: 4,ENCRYPTED), which kvik cannot \
                    decrypt; convert it to encrypted PKCS#8 with `openssl pkcs8 -topk8 -v2 aes-256-cbc -in OLD \
                    -out NEW`"
            .into());
    }
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| match e {
        rustls_pki_types::pem::Error::NoItemsFound => "no private key found in the file".to_string(),
        e => format!("not a PEM private key ({e})"),
    })
}

fn decrypt_pkcs8(pem: &str, password: &str) -> Result<PrivateKeyDer<'static>, String> {
    let (_, document) =
        pkcs8::der::Document::from_pem(pem).map_err(|e| format!("malformed ENCRYPTED PRIVATE KEY block ({e})"))?;
    let info = pkcs8::EncryptedPrivateKeyInfoOwned::try_from(document.as_bytes())
        .map_err(|e| format!("malformed encrypted PKCS#8 key ({e})"))?;
    let plain = info
        .decrypt(password)
        .map_err(|e| format!("cannot decrypt the key: bad password or unsupported encryption ({e})"))?;
    Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(plain.as_bytes().to_vec())))
}

/// Trust anchors from a PEM bundle `file` and/or every PEM file in `dir`
/// (OpenSSL's hashed directories included: each file is read, not just
/// the hash-named ones). Files in `dir` that hold no certificate are
/// passed over; `file` must hold at least one.
pub fn load_roots(file: Option<&Path>, dir: Option<&Path>) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    if let Some(file) = file {
        let certs = load_certs(file).map_err(|e| format!("{}: {e}", file.display()))?;
        for cert in certs {
            roots.add(cert).map_err(|e| format!("{}: {}", file.display(), describe(&e)))?;
        }
    }
    if let Some(dir) = dir {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut paths: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_file()).collect();
        paths.sort();
        for path in paths {
            let Ok(bytes) = std::fs::read(&path) else { continue };
            // A directory may hold other files (CRLs, READMEs); only certificates count.
            let certs: Vec<CertificateDer<'static>> =
                CertificateDer::pem_slice_iter(&bytes).filter_map(Result::ok).collect();
            roots.add_parsable_certificates(certs);
        }
    }
    Ok(roots)
}

/// The system's trusted CA certificates: `SSL_CERT_FILE` / `SSL_CERT_DIR`
/// when set (OpenSSL's variables), else [`SYSTEM_CA_FILE`].
pub fn system_roots() -> Result<RootCertStore, String> {
    let file = std::env::var_os("SSL_CERT_FILE").map(std::path::PathBuf::from);
    let dir = std::env::var_os("SSL_CERT_DIR").map(std::path::PathBuf::from);
    if file.is_none() && dir.is_none() {
        return load_roots(Some(Path::new(SYSTEM_CA_FILE)), None);
    }
    load_roots(file.as_deref(), dir.as_deref())
}

/// rustls's error about a certificate or key, said so that the fix is
/// plain: rustls reports an X.509 version 1 certificate (what `openssl
/// x509 -req` writes without extensions) only as an "unsupported version".
pub fn describe(e: &rustls::Error) -> String {
    if format!("{e:?}").contains("UnsupportedCertVersion") {
        return "the certificate is X.509 version 1, and rustls accepts version 3 only (openssl x509 -req writes \
                version 3 when given extensions, e.g. -extfile with a subjectAltName line)"
            .into();
    }
    match e {
        rustls::Error::InvalidCertificate(c) => format!("unusable certificate: {c:?}"),
        e => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, contents: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("kvik-tls-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join(name);
        std::fs::write(&path, contents).expect("write");
        path
    }

    #[test]
    fn certificates_and_keys_load_and_bad_files_say_why() {
        let key = rcgen::KeyPair::generate().expect("key");
        let cert =
            rcgen::CertificateParams::new(vec!["localhost".into()]).expect("params").self_signed(&key).expect("cert");
        let cert_path = temp("cert.pem", cert.pem().as_bytes());
        let key_path = temp("key.pem", key.serialize_pem().as_bytes());
        assert_eq!(load_certs(&cert_path).expect("certs").len(), 1);
        assert!(load_key(&key_path, None).is_ok());
        assert!(load_key(&key_path, Some("ignored for a plain key")).is_ok());
        let empty = temp("empty.pem", b"nothing here\n");
        assert!(load_certs(&empty).unwrap_err().contains("no certificate"));
        assert!(load_key(&empty, None).unwrap_err().contains("no private key"));
        assert!(load_certs(Path::new("/nonexistent/kvik.pem")).is_err());
        let legacy = temp(
            "legacy.pem",
            b"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n",
        );
        assert!(load_key(&legacy, Some("x")).unwrap_err().contains("legacy PEM encryption"));
        let roots = load_roots(Some(&cert_path), None).expect("roots");
        assert_eq!(roots.len(), 1);
        let dir = cert_path.parent().expect("dir");
        assert!(!load_roots(None, Some(dir)).expect("dir roots").is_empty());
    }
}
