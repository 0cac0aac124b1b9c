//! The tests redis-benchmark 7.0 runs by default, with the same commands,
//! keys and payload, and its `-t` selection rules.

use crate::args::Config;

/// One benchmark: a title (as printed) and the command every request sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Test {
    /// The title in every output format, e.g. `SET` or `LRANGE_100 (first 100 elements)`.
    pub title: String,
    /// The command, name first; `__rand_int__` is substituted with `-r`.
    pub args: Vec<Vec<u8>>,
}

/// The placeholder replaced by a random number with `-r`.
pub const PLACEHOLDER: &[u8] = b"__rand_int__";

/// The payload redis-benchmark sends: `size` bytes from its fixed
/// pseudo-random sequence (an LCG seeded with 1234, 64 printable characters
/// starting at `'0'`), so values are byte-identical across the two tools.
pub fn payload(size: usize) -> Vec<u8> {
    let mut state: u32 = 1234;
    (0..size)
        .map(|_| {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            b'0' + ((state >> 16) & 63) as u8
        })
        .collect()
}

/// True when `-t` selects `name` (everything is selected without `-t`).
fn selected(cfg: &Config, names: &[&str]) -> bool {
    match &cfg.tests {
        None => true,
        Some(list) => list.iter().any(|t| names.contains(&t.as_str())),
    }
}

fn test(title: &str, args: &[&[u8]]) -> Test {
    Test { title: title.to_string(), args: args.iter().map(|a| a.to_vec()).collect() }
}

/// The tests to run, in redis-benchmark's order: the command given on the
/// command line if any, else the (selected) default suite.
pub fn tests(cfg: &Config) -> Vec<Test> {
    if !cfg.command.is_empty() {
        return vec![Test {
            title: cfg.command.join(" "),
            args: cfg.command.iter().map(|a| a.as_bytes().to_vec()).collect(),
        }];
    }
    let data = payload(cfg.data_size);
    let d = data.as_slice();
    let key: &[u8] = b"key:__rand_int__";
    let element: &[u8] = b"element:__rand_int__";
    let score: &[u8] = if cfg.keyspace.is_some() { PLACEHOLDER } else { b"0" };
    let mut out = Vec::new();
    let mut add = |names: &[&str], t: Test| {
        if selected(cfg, names) {
            out.push(t);
        }
    };
    add(&["ping_inline", "ping"], test("PING_INLINE", &[b"PING"]));
    add(&["ping_mbulk", "ping"], test("PING_MBULK", &[b"PING"]));
    add(&["set"], test("SET", &[b"SET", key, d]));
    add(&["get"], test("GET", &[b"GET", key]));
    add(&["incr"], test("INCR", &[b"INCR", b"counter:__rand_int__"]));
    add(&["lpush"], test("LPUSH", &[b"LPUSH", b"mylist", d]));
    add(&["rpush"], test("RPUSH", &[b"RPUSH", b"mylist", d]));
    add(&["lpop"], test("LPOP", &[b"LPOP", b"mylist"]));
    add(&["rpop"], test("RPOP", &[b"RPOP", b"mylist"]));
    add(&["sadd"], test("SADD", &[b"SADD", b"myset", element]));
    add(&["hset"], test("HSET", &[b"HSET", b"myhash", element, d]));
    add(&["spop"], test("SPOP", &[b"SPOP", b"myset"]));
    add(&["zadd"], test("ZADD", &[b"ZADD", b"myzset", score, element]));
    add(&["zpopmin"], test("ZPOPMIN", &[b"ZPOPMIN", b"myzset"]));
    add(
        &["lrange", "lrange_100", "lrange_300", "lrange_500", "lrange_600"],
        test("LPUSH (needed to benchmark LRANGE)", &[b"LPUSH", b"mylist", d]),
    );
    add(&["lrange", "lrange_100"], test("LRANGE_100 (first 100 elements)", &[b"LRANGE", b"mylist", b"0", b"99"]));
    add(&["lrange", "lrange_300"], test("LRANGE_300 (first 300 elements)", &[b"LRANGE", b"mylist", b"0", b"299"]));
    add(&["lrange", "lrange_500"], test("LRANGE_500 (first 500 elements)", &[b"LRANGE", b"mylist", b"0", b"499"]));
    add(&["lrange", "lrange_600"], test("LRANGE_600 (first 600 elements)", &[b"LRANGE", b"mylist", b"0", b"599"]));
    let mut mset: Vec<&[u8]> = vec![b"MSET"];
    for _ in 0..10 {
        mset.extend([key, d]);
    }
    add(&["mset"], test("MSET (10 keys)", &mset));
    out
}

/// True for the test whose requests go out as inline commands (`PING\r\n`).
pub fn is_inline(t: &Test) -> bool {
    t.title == "PING_INLINE"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn titles(cfg: &Config) -> Vec<String> {
        tests(cfg).into_iter().map(|t| t.title).collect()
    }

    #[test]
    fn payload_matches_redis_benchmark() {
        assert_eq!(payload(3), b"VXK");
        assert_eq!(payload(10), b"VXKeHogKgJ");
        assert!(payload(1000).iter().all(|&b| (b'0'..b'0' + 64).contains(&b)));
    }

    #[test]
    fn the_default_suite_in_order() {
        let t = titles(&Config::default());
        assert_eq!(t.len(), 20);
        assert_eq!(t[0], "PING_INLINE");
        assert_eq!(t[14], "LPUSH (needed to benchmark LRANGE)");
        assert_eq!(t[19], "MSET (10 keys)");
    }

    #[test]
    fn selection_follows_redis_benchmark_aliases() {
        let cfg =
            |list: &[&str]| Config { tests: Some(list.iter().map(|s| s.to_string()).collect()), ..Config::default() };
        assert_eq!(titles(&cfg(&["ping"])), ["PING_INLINE", "PING_MBULK"]);
        assert_eq!(
            titles(&cfg(&["lrange_300"])),
            ["LPUSH (needed to benchmark LRANGE)", "LRANGE_300 (first 300 elements)"]
        );
        assert_eq!(titles(&cfg(&["lrange"])).len(), 5);
        assert_eq!(titles(&cfg(&["get", "set"])), ["SET", "GET"]);
        assert!(titles(&cfg(&["nosuch"])).is_empty());
    }

    #[test]
    fn commands_and_keys() {
        let all = tests(&Config { data_size: 4, ..Config::default() });
        let find = |title: &str| all.iter().find(|t| t.title == title).unwrap().args.clone();
        assert_eq!(find("SET"), [b"SET".to_vec(), b"key:__rand_int__".to_vec(), b"VXKe".to_vec()]);
        assert_eq!(find("INCR")[1], b"counter:__rand_int__");
        assert_eq!(find("ZADD")[2], b"0");
        assert_eq!(find("MSET (10 keys)").len(), 21);
        assert_eq!(find("LRANGE_500 (first 500 elements)")[3], b"499");
        let with_r = tests(&Config { keyspace: Some(10), ..Config::default() });
        assert_eq!(with_r.iter().find(|t| t.title == "ZADD").unwrap().args[2], PLACEHOLDER);
    }

    #[test]
    fn a_command_line_command_is_the_only_test() {
        let cfg = Config { command: vec!["lpush".into(), "l".into(), "__rand_int__".into()], ..Config::default() };
        let t = tests(&cfg);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].title, "lpush l __rand_int__");
    }
}
