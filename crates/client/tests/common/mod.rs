//! Servers for the client's integration tests, from the workspace's shared
//! test kit, and the client options that reach them.

#![allow(dead_code)]

use std::time::Duration;

use kvik_client::{Options, Protocol};
#[allow(unused_imports)]
pub use kvik_testkit::{socket_path, start_kvik, start_redis, Server};

/// Connection options for a test server.
pub trait ServerOptions {
    /// Options for this server speaking `protocol`, with a request timeout
    /// so a broken test fails instead of hanging.
    fn opts(&self, protocol: Protocol) -> Options;
}

impl ServerOptions for Server {
    fn opts(&self, protocol: Protocol) -> Options {
        Options::tcp(self.addr()).with_protocol(protocol).with_request_timeout(Duration::from_secs(10))
    }
}
