//! kvik's TLS, in one place for the server and the clients.
//!
//! kvik speaks TLS through rustls with the *ring* crypto provider, not
//! OpenSSL: nothing to link against on the machine, one memory-safe stack,
//! and the same behaviour wherever kvik is built. The settings keep
//! Redis's names and syntax (`tls-protocols "TLSv1.2 TLSv1.3"`, OpenSSL
//! cipher names in `tls-ciphers`, `--cacert` and `--insecure` on the
//! clients), so this crate translates them into rustls terms and says
//! clearly when rustls cannot do what was asked (TLS 1.0 and 1.1, CBC or
//! CCM cipher suites, finite-field Diffie-Hellman), rather than quietly
//! doing something else:
//!
//! - [`files`]: certificates, private keys (PKCS#1, PKCS#8, SEC1, and
//!   password-encrypted PKCS#8) and CA bundles or directories from PEM files;
//! - [`suites`]: protocol versions and cipher-suite names, and the crypto
//!   provider limited to them;
//! - [`write_through`]: the stream adapter that makes a TLS stream behave
//!   like a socket for code that never flushes;
//! - [`client`]: a client configuration from redis-cli's options.

#![forbid(unsafe_code)]

pub mod client;
pub mod files;
pub mod suites;
pub mod write_through;

pub use rustls;
pub use tokio_rustls;
pub use write_through::WriteThrough;
