//! `-u redis://[[user]:password@]host[:port][/db]`: the URI form of the
//! connection options, read the way redis-cli reads it.
//!
//! Every part is optional; what is missing keeps the value given by other
//! options or the default. The user and the password may be
//! percent-encoded (`%40` for `@`), since both can hold any byte.

/// What a URI sets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Uri {
    /// Host name or address (IPv6 without its brackets).
    pub host: Option<String>,
    /// TCP port.
    pub port: Option<u16>,
    /// ACL user.
    pub user: Option<Vec<u8>>,
    /// Password.
    pub password: Option<Vec<u8>>,
    /// Database number.
    pub db: Option<u32>,
    /// `rediss://`: connect over TLS.
    pub tls: bool,
}

/// Why a URI was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UriError {
    /// Not `redis://`.
    Scheme,
    /// The port is not a number from 1 to 65535.
    Port(String),
    /// The database is not a number.
    Db(String),
}

impl std::fmt::Display for UriError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UriError::Scheme => f.write_str("Invalid URI scheme"),
            UriError::Port(p) => write!(f, "Invalid port in URI: '{p}'"),
            UriError::Db(d) => write!(f, "Invalid database number in URI: '{d}'"),
        }
    }
}

/// Parse a `redis://` URI.
pub fn parse(uri: &str) -> Result<Uri, UriError> {
    let mut out = Uri::default();
    let rest = if let Some(r) = strip_prefix_ci(uri, "redis://") {
        r
    } else if let Some(r) = strip_prefix_ci(uri, "rediss://") {
        out.tls = true;
        r
    } else {
        return Err(UriError::Scheme);
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let hostport = match authority.rfind('@') {
        Some(at) => {
            let userinfo = &authority[..at];
            match userinfo.find(':') {
                Some(colon) => {
                    let user = percent_decode(&userinfo[..colon]);
                    out.user = (!user.is_empty()).then_some(user);
                    out.password = Some(percent_decode(&userinfo[colon + 1..]));
                }
                None => out.password = Some(percent_decode(userinfo)),
            }
            &authority[at + 1..]
        }
        None => authority,
    };
    let (host, port) = split_host_port(hostport);
    if !host.is_empty() {
        out.host = Some(host.to_string());
    }
    if let Some(p) = port {
        match p.parse::<u16>() {
            Ok(n) if n > 0 => out.port = Some(n),
            _ => return Err(UriError::Port(p.to_string())),
        }
    }
    if let Some(db) = path.filter(|d| !d.is_empty()) {
        out.db = Some(db.parse().map_err(|_| UriError::Db(db.to_string()))?);
    }
    Ok(out)
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &s[prefix.len()..])
}

/// `host:port`, `[v6]:port`, `host` or `[v6]`.
fn split_host_port(s: &str) -> (&str, Option<&str>) {
    if let Some(inner) = s.strip_prefix('[') {
        if let Some(close) = inner.find(']') {
            let port = inner[close + 1..].strip_prefix(':');
            return (&inner[..close], port);
        }
    }
    match s.rfind(':') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    }
}

/// `%XX` to the byte it names; anything else (a lone `%` included) as it is.
fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_uri() {
        let u = parse("redis://alice:s%40cret@example.com:7000/3").unwrap();
        assert_eq!(u.host.as_deref(), Some("example.com"));
        assert_eq!(u.port, Some(7000));
        assert_eq!(u.user.as_deref(), Some(&b"alice"[..]));
        assert_eq!(u.password.as_deref(), Some(&b"s@cret"[..]));
        assert_eq!(u.db, Some(3));
    }

    #[test]
    fn partial_uris_leave_the_rest_unset() {
        assert_eq!(parse("redis://").unwrap(), Uri::default());
        let u = parse("redis://h").unwrap();
        assert_eq!((u.host.as_deref(), u.port, u.db), (Some("h"), None, None));
        let u = parse("redis://:pw@h:1/").unwrap();
        assert_eq!((u.user, u.password.as_deref()), (None, Some(&b"pw"[..])));
        let u = parse("redis://onlypass@h").unwrap();
        assert_eq!((u.user, u.password.as_deref()), (None, Some(&b"onlypass"[..])));
        let u = parse("REDIS://[::1]:6380/15").unwrap();
        assert_eq!((u.host.as_deref(), u.port, u.db), (Some("::1"), Some(6380), Some(15)));
        let u = parse("redis://a:b:c@h").unwrap();
        assert_eq!((u.user.as_deref(), u.password.as_deref()), (Some(&b"a"[..]), Some(&b"b:c"[..])));
    }

    #[test]
    fn bad_uris_are_refused() {
        assert_eq!(parse("http://h"), Err(UriError::Scheme));
        assert_eq!(parse("h:6379"), Err(UriError::Scheme));
        assert_eq!(parse("rediss://h"), Ok(Uri { host: Some("h".into()), tls: true, ..Uri::default() }));
        assert_eq!(parse("redis://h:0"), Err(UriError::Port("0".into())));
        assert_eq!(parse("redis://h:99999"), Err(UriError::Port("99999".into())));
        assert_eq!(parse("redis://h:6379/x"), Err(UriError::Db("x".into())));
        assert_eq!(parse("http://h").unwrap_err().to_string(), "Invalid URI scheme");
    }

    #[test]
    fn percent_decoding_keeps_what_is_not_an_escape() {
        assert_eq!(percent_decode("a%2Fb%zz%4"), b"a/b%zz%4");
        assert_eq!(percent_decode("%"), b"%");
        assert_eq!(percent_decode("%41%42"), b"AB");
    }
}
