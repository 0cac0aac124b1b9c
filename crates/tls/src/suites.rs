//! Protocol versions and cipher suites by the names Redis's settings use.
//!
//! `tls-protocols` takes OpenSSL's version words; `tls-ciphersuites`
//! takes TLS 1.3 suite names, colon-separated; `tls-ciphers` takes an
//! OpenSSL cipher list for TLS 1.2. rustls offers TLS 1.2 and 1.3 only,
//! and only AEAD suites with ECDHE key exchange, so a list is read as
//! follows, and anything else is refused by name:
//!
//! - an OpenSSL name (`ECDHE-RSA-AES128-GCM-SHA256`) or IANA name
//!   (`TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`) of a suite rustls has adds it;
//! - `DEFAULT`, `ALL` and `HIGH` add every suite rustls has, which are
//!   all "high" in OpenSSL's sense;
//! - `!X` / `-X` removes suite `X`, or is satisfied already when `X` is a
//!   class rustls never offers (`aNULL`, `MD5`, `RC4`, `3DES`, `CBC`, …);
//! - `@STRENGTH`, `+X` and the other OpenSSL operators are refused, as
//!   kvik cannot apply them.
//!
//! The order of the list is kept: it is the server's order of preference
//! when `tls-prefer-server-ciphers` is on.

use std::sync::Arc;

use rustls::crypto::ring::cipher_suite as cs;
use rustls::crypto::CryptoProvider;
use rustls::{SupportedCipherSuite, SupportedProtocolVersion};

/// rustls's TLS 1.2 suites: OpenSSL's name, the IANA name, the suite.
fn tls12() -> [(&'static str, &'static str, SupportedCipherSuite); 6] {
    [
        (
            "ECDHE-ECDSA-AES256-GCM-SHA384",
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
            cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        ),
        (
            "ECDHE-ECDSA-AES128-GCM-SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        ),
        (
            "ECDHE-ECDSA-CHACHA20-POLY1305",
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
            cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        ),
        (
            "ECDHE-RSA-AES256-GCM-SHA384",
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
            cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        ),
        (
            "ECDHE-RSA-AES128-GCM-SHA256",
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
            cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        ),
        (
            "ECDHE-RSA-CHACHA20-POLY1305",
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
            cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        ),
    ]
}

/// rustls's TLS 1.3 suites, in OpenSSL's default order.
fn tls13() -> [(&'static str, SupportedCipherSuite); 3] {
    [
        ("TLS_AES_256_GCM_SHA384", cs::TLS13_AES_256_GCM_SHA384),
        ("TLS_CHACHA20_POLY1305_SHA256", cs::TLS13_CHACHA20_POLY1305_SHA256),
        ("TLS_AES_128_GCM_SHA256", cs::TLS13_AES_128_GCM_SHA256),
    ]
}

/// OpenSSL cipher classes rustls never offers: excluding one changes nothing.
const NEVER_OFFERED: &[&str] = &[
    "aNULL", "eNULL", "NULL", "MD5", "RC4", "DES", "3DES", "EXP", "EXPORT", "LOW", "MEDIUM", "PSK", "aPSK", "SRP",
    "DSS", "aDSS", "CAMELLIA", "SEED", "IDEA", "ARIA", "kRSA", "DH", "DHE", "EDH", "kDHE", "ADH", "AECDH", "SHA1",
    "CBC", "CCM", "CCM8", "SSLv3",
];

/// The versions a `tls-protocols` value names; empty means TLS 1.2 and 1.3.
pub fn protocol_versions(text: &str) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    let mut versions = Vec::new();
    for word in text.split_ascii_whitespace() {
        let version = match word.to_ascii_lowercase().as_str() {
            "tlsv1.2" => &rustls::version::TLS12,
            "tlsv1.3" => &rustls::version::TLS13,
            "tlsv1" | "tlsv1.1" => {
                return Err(format!(
                    "{word} is specified in tls-protocols but not offered by rustls (kvik's TLS library). \
                     Use 'TLSv1.2' and/or 'TLSv1.3'."
                ))
            }
            _ => return Err("Invalid tls-protocols specified. Use a combination of 'TLSv1.2' and 'TLSv1.3'.".into()),
        };
        if !versions.contains(&version) {
            versions.push(version);
        }
    }
    if versions.is_empty() {
        versions = vec![&rustls::version::TLS12, &rustls::version::TLS13];
    }
    Ok(versions)
}

/// The TLS 1.3 suites a `tls-ciphersuites` value names; empty means all.
pub fn tls13_suites(text: &str) -> Result<Vec<SupportedCipherSuite>, String> {
    if text.trim().is_empty() {
        return Ok(tls13().iter().map(|(_, s)| *s).collect());
    }
    let mut suites = Vec::new();
    let mut unknown = Vec::new();
    for name in text.split(':').map(str::trim).filter(|n| !n.is_empty()) {
        match tls13().iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            Some((_, suite)) if !suites.contains(suite) => suites.push(*suite),
            Some(_) => {}
            None => unknown.push(name),
        }
    }
    if !unknown.is_empty() {
        return Err(format!(
            "rustls (kvik's TLS library) has no TLS 1.3 cipher suite {}; it has {}",
            unknown.join(", "),
            tls13().iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(suites)
}

/// The TLS 1.2 suites a `tls-ciphers` value names; empty means all.
pub fn tls12_suites(text: &str) -> Result<Vec<SupportedCipherSuite>, String> {
    let all = || tls12().into_iter().map(|(_, _, s)| s);
    if text.trim().is_empty() {
        return Ok(all().collect());
    }
    let find = |name: &str| {
        tls12()
            .into_iter()
            .find(|(o, i, _)| o.eq_ignore_ascii_case(name) || i.eq_ignore_ascii_case(name))
            .map(|(_, _, s)| s)
    };
    let mut suites: Vec<SupportedCipherSuite> = Vec::new();
    let mut refused = Vec::new();
    for item in text.split([':', ',', ' ']).filter(|i| !i.is_empty()) {
        if let Some(rest) = item.strip_prefix('!').or_else(|| item.strip_prefix('-')) {
            if let Some(suite) = find(rest) {
                suites.retain(|s| *s != suite);
            } else if !NEVER_OFFERED.iter().any(|c| c.eq_ignore_ascii_case(rest)) {
                refused.push(item);
            }
            continue;
        }
        if ["DEFAULT", "ALL", "HIGH"].iter().any(|k| k.eq_ignore_ascii_case(item)) {
            for suite in all() {
                if !suites.contains(&suite) {
                    suites.push(suite);
                }
            }
            continue;
        }
        match find(item) {
            Some(suite) if !suites.contains(&suite) => suites.push(suite),
            Some(_) => {}
            None => refused.push(item),
        }
    }
    if !refused.is_empty() {
        return Err(format!(
            "rustls (kvik's TLS library) cannot apply {} (its TLS 1.2 cipher suites are {}; DEFAULT, ALL and HIGH \
             name them all, and !NAME removes one)",
            refused.join(", "),
            tls12().into_iter().map(|(o, _, _)| o).collect::<Vec<_>>().join(", ")
        ));
    }
    if suites.is_empty() {
        return Err(format!("'{text}' leaves no TLS 1.2 cipher suite"));
    }
    Ok(suites)
}

/// The *ring* provider limited to `tls13` then `tls12`, in that order.
pub fn provider(tls13: Vec<SupportedCipherSuite>, tls12: Vec<SupportedCipherSuite>) -> Arc<CryptoProvider> {
    let mut cipher_suites = tls13;
    cipher_suites.extend(tls12);
    Arc::new(CryptoProvider { cipher_suites, ..rustls::crypto::ring::default_provider() })
}

/// The provider for a `tls-ciphersuites` and a `tls-ciphers` value.
pub fn provider_for(ciphersuites: &str, ciphers: &str) -> Result<Arc<CryptoProvider>, String> {
    let tls13 = tls13_suites(ciphersuites)?;
    let tls12 = tls12_suites(ciphers)?;
    Ok(provider(tls13, tls12))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_are_read_as_redis_words_and_old_ones_refused() {
        assert_eq!(protocol_versions("").expect("default").len(), 2);
        assert_eq!(protocol_versions("tlsv1.3").expect("1.3"), vec![&rustls::version::TLS13]);
        assert_eq!(protocol_versions("TLSv1.2 TLSv1.3 TLSv1.2").expect("both").len(), 2);
        assert!(protocol_versions("TLSv1.1 TLSv1.2").unwrap_err().contains("not offered by rustls"));
        assert!(protocol_versions("SSLv3").unwrap_err().starts_with("Invalid tls-protocols specified"));
    }

    #[test]
    fn cipher_lists_map_what_rustls_has_and_name_what_it_lacks() {
        assert_eq!(tls12_suites("").expect("default").len(), 6);
        assert_eq!(tls12_suites("HIGH:!aNULL:!MD5").expect("high").len(), 6);
        assert_eq!(
            tls12_suites("ECDHE-RSA-AES128-GCM-SHA256:TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384").expect("two"),
            vec![cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]
        );
        assert_eq!(tls12_suites("DEFAULT:!ECDHE-RSA-AES128-GCM-SHA256").expect("minus one").len(), 5);
        let err = tls12_suites("AES128-SHA:ECDHE-RSA-AES128-GCM-SHA256:@STRENGTH").unwrap_err();
        assert!(err.contains("AES128-SHA, @STRENGTH"), "{err}");
        assert!(tls12_suites("!ALL").is_err());
        assert_eq!(tls13_suites("TLS_AES_128_GCM_SHA256").expect("one"), vec![cs::TLS13_AES_128_GCM_SHA256]);
        assert!(tls13_suites("TLS_AES_128_CCM_SHA256").unwrap_err().contains("TLS_AES_128_CCM_SHA256"));
    }
}
