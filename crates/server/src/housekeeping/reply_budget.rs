//! The largest reply a command may set out to build.
//!
//! A few commands let the client choose how long their reply is, with no
//! bound from the data: `SRANDMEMBER`, `HRANDFIELD` and `ZRANDMEMBER` with
//! a negative count return that many picks, repeats allowed, so
//! `SRANDMEMBER k -9223372036854775807` asks for more elements than any
//! machine holds. Redis starts building such a reply and runs until the
//! process is killed for memory. kvik refuses it up front when even at the
//! smallest size an element can take the reply could not be sent:
//!
//! - when `client-output-buffer-limit` has a hard limit for normal clients,
//!   a reply beyond it would close the client anyway;
//! - otherwise (and in any case) a reply beyond the memory the process can
//!   still get would end with the process killed: the memory the system
//!   reports available (`MemAvailable`), or less when the control group's
//!   memory limit is nearer.
//!
//! Every other reply is bounded by data the server already holds (a range
//! of a list, the members of a set, the keys of a database, a string's
//! bytes) or by the request's own arguments (`BITFIELD`'s subcommands,
//! `SORT`'s `GET` patterns per element), so it is at most a small multiple
//! of memory already in use, as in Redis.
//!
//! The memory available is read once a second (by [`sample`], from the
//! task that samples the rates), not per command: a command pays one
//! atomic load.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::state::ServerState;

/// Bytes the process could still allocate, as last sampled; `u64::MAX`
/// until the first sample or where the system does not say.
static AVAILABLE_BYTES: AtomicU64 = AtomicU64::new(u64::MAX);

/// The fewest bytes one element of an array reply takes in any protocol
/// (an empty bulk string's RESPB length field).
pub const MIN_ELEMENT_BYTES: u64 = 4;

/// Read the memory available now and keep it for [`check`].
pub fn sample() {
    AVAILABLE_BYTES.store(available_now().unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// The memory available to the process: the system's `MemAvailable`,
/// lowered to what its control group (v2 or v1) still allows.
fn available_now() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let system = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib.saturating_mul(1024))?;
    let group = cgroup_headroom("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current").or_else(|| {
        cgroup_headroom("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes")
    });
    Some(group.map_or(system, |g| g.min(system)))
}

/// Limit minus usage of a control group, when it has a limit.
fn cgroup_headroom(limit_path: &str, usage_path: &str) -> Option<u64> {
    let limit: u64 = std::fs::read_to_string(limit_path).ok()?.trim().parse().ok()?;
    let usage: u64 = std::fs::read_to_string(usage_path).ok()?.trim().parse().ok()?;
    Some(limit.saturating_sub(usage))
}

/// `Err` with the error to send when a reply of `elements` elements, each
/// of at least `min_bytes`, could not be sent to a client.
pub fn check(state: &ServerState, elements: u64, min_bytes: u64) -> Result<(), String> {
    let need = u128::from(elements) * u128::from(min_bytes);
    let hard = state.limits.output_limit().hard;
    let available = AVAILABLE_BYTES.load(Ordering::Relaxed);
    let (budget, why) = if hard > 0 && hard <= available {
        (hard, "client-output-buffer-limit allows")
    } else {
        (available, "of memory are available")
    };
    if need <= u128::from(budget) {
        return Ok(());
    }
    Err(format!(
        "ERR reply too large: {elements} elements need at least {need} bytes, more than the {budget} bytes that {why}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_available_is_read_where_the_system_says() {
        let now = available_now();
        if std::path::Path::new("/proc/meminfo").exists() {
            let bytes = now.expect("MemAvailable is read");
            assert!(bytes > 0 && bytes < u64::MAX);
        }
    }

    #[test]
    fn a_reply_beyond_the_hard_limit_or_the_memory_is_refused() {
        let state = ServerState::default();
        sample();
        assert!(check(&state, 1_000_000, MIN_ELEMENT_BYTES).is_ok());
        let err = check(&state, i64::MAX as u64, MIN_ELEMENT_BYTES).expect_err("more than any memory");
        assert!(err
            .starts_with("ERR reply too large: 9223372036854775807 elements need at least 36893488147419103228 bytes"));
        state.limits.output_hard.store(1024, Ordering::Relaxed);
        assert!(check(&state, 256, MIN_ELEMENT_BYTES).is_ok());
        assert_eq!(
            check(&state, 257, MIN_ELEMENT_BYTES).expect_err("over the hard limit"),
            "ERR reply too large: 257 elements need at least 1028 bytes, more than the 1024 bytes that \
             client-output-buffer-limit allows"
        );
    }
}
