//! Differential tests of the client-side caching commands on one
//! connection: option parsing and its errors, in Redis's order, mode
//! switches, `CLIENT CACHING`, `CLIENT TRACKINGINFO` and `CLIENT GETREDIR`.
//! What other connections receive is in `tracking.rs`.

mod common;

use common::diff::*;

fn cases() -> Vec<Case> {
    vec![
        lines(
            "option errors",
            &[
                "CLIENT TRACKING maybe",
                "CLIENT TRACKING on foo",
                "CLIENT TRACKING maybe foo",
                "CLIENT TRACKING on REDIRECT",
                "CLIENT TRACKING on REDIRECT abc",
                "CLIENT TRACKING on REDIRECT -1",
                "CLIENT TRACKING on REDIRECT 0",
                "CLIENT TRACKING on REDIRECT 999999",
                "CLIENT TRACKING off REDIRECT 999999",
                "CLIENT TRACKING on PREFIX",
                "CLIENT TRACKING on PREFIX a",
                "CLIENT TRACKING on OPTIN OPTOUT",
                "CLIENT TRACKING on BCAST OPTIN",
                "CLIENT TRACKING on OPTOUT BCAST",
                "CLIENT TRACKING off BCAST",
                "CLIENT TRACKING off PREFIX x",
                "CLIENT TRACKING",
                "CLIENT TRACKINGINFO",
                "CLIENT GETREDIR",
            ],
        ),
        lines(
            "client caching",
            &[
                "CLIENT CACHING yes",
                "CLIENT CACHING maybe",
                "CLIENT CACHING",
                "CLIENT TRACKING on",
                "CLIENT CACHING yes",
                "CLIENT CACHING no",
                "CLIENT CACHING maybe",
                "CLIENT TRACKING on OPTIN",
                "CLIENT CACHING no",
                "CLIENT CACHING YES",
                "CLIENT TRACKINGINFO",
                "CLIENT TRACKING on OPTOUT",
                "CLIENT TRACKING on",
                "CLIENT TRACKINGINFO",
                "CLIENT TRACKING off",
                "CLIENT TRACKING on OPTOUT noloop",
                "CLIENT CACHING yes",
                "CLIENT CACHING No",
                "CLIENT TRACKINGINFO",
                "CLIENT TRACKING on optin",
                "CLIENT GETREDIR",
                "CLIENT TRACKING OFF OPTIN",
                "CLIENT TRACKINGINFO",
                "CLIENT GETREDIR",
            ],
        ),
        lines(
            "broadcast prefixes",
            &[
                "CLIENT TRACKING on BCAST PREFIX a PREFIX ab",
                "CLIENT TRACKING on BCAST PREFIX x PREFIX x",
                "CLIENT TRACKING on BCAST PREFIX b PREFIX a",
                "CLIENT TRACKING on BCAST PREFIX ba",
                "CLIENT TRACKING on BCAST PREFIX c PREFIX bb",
                "CLIENT TRACKING on BCAST PREFIX d",
                "CLIENT TRACKINGINFO",
                "CLIENT TRACKING on",
                "CLIENT TRACKING on NOLOOP",
                "CLIENT TRACKING on BCAST NOLOOP",
                "CLIENT TRACKINGINFO",
                "CLIENT TRACKING off",
                "CLIENT TRACKINGINFO",
                "CLIENT TRACKING on BCAST PREFIX ''",
                "CLIENT TRACKING on BCAST PREFIX a",
                "CLIENT TRACKINGINFO",
            ],
        ),
        // Redis reports a clash between two given prefixes past the first
        // one, and still turns tracking on and replies OK.
        lines(
            "a late prefix clash still enables",
            &["CLIENT TRACKING on BCAST PREFIX a PREFIX b PREFIX bc", "CLIENT TRACKINGINFO"],
        ),
        requests(
            "prefix errors quote up to a NUL",
            &[
                &[b"CLIENT", b"TRACKING", b"on", b"BCAST", b"PREFIX", b"a\0b", b"PREFIX", b"a"],
                &[b"CLIENT", b"TRACKINGINFO"],
            ],
        ),
        lines(
            "redirect twice",
            &["HELLO 3", "CLIENT TRACKING on REDIRECT 999999 REDIRECT 999999", "CLIENT TRACKINGINFO"],
        ),
        lines(
            "reset turns tracking off",
            &["HELLO 3", "CLIENT TRACKING on BCAST PREFIX p", "RESET", "CLIENT TRACKINGINFO", "CLIENT GETREDIR"],
        ),
        // A client's own changes invalidate its keys (no NOLOOP). In Redis
        // 7.0 consumer group commands and XSETID are no change of the key,
        // and PFCOUNT storing a fresh cached count is one.
        lines(
            "which stream and hll commands invalidate",
            &[
                "HELLO 3",
                "XADD x 1-0 f v",
                "PFADD p a b",
                "CLIENT TRACKING on",
                "XLEN x",
                "XGROUP CREATE x g 0",
                "XGROUP CREATECONSUMER x g c",
                "XREADGROUP GROUP g c2 STREAMS x >",
                "XGROUP SETID x g 0",
                "XGROUP DELCONSUMER x g c",
                "XGROUP DESTROY x g",
                "XSETID x 5-0",
                "XADD x 6-0 f v",
                "GET p",
                "PFCOUNT p",
                "GET p",
                "PFCOUNT p",
                "PING",
            ],
        ),
        lines(
            "the option in CONFIG",
            &[
                "CONFIG GET tracking-table-max-keys",
                "CONFIG SET tracking-table-max-keys 10",
                "CONFIG GET tracking-table-max-keys",
                "CONFIG SET tracking-table-max-keys -1",
                "CONFIG SET tracking-table-max-keys abc",
                "CONFIG SET tracking-table-max-keys 0",
                "CONFIG GET tracking-table-max-keys",
            ],
        ),
    ]
}

#[test]
fn tracking_commands_match_redis() {
    compare_each("tracking_commands_match_redis", cases());
}
