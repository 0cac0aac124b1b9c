//! The slow log's settings, the latency monitor, latency percentiles and
//! histograms, compared with a real redis-server where the replies are
//! deterministic (ids, lengths, arguments, reply shapes and texts with
//! their times and durations masked), and checked against kvik alone for
//! the measured values.

mod common;

use common::diff::mask_digits;
use common::{call_text, clear_of_second_boundary, connect, elements_of, info_value, start_kvik_with};

const DEBUG: [&str; 2] = ["--enable-debug-command", "yes"];

/// A SLOWLOG GET reply with each entry's time, duration and client address
/// masked; ids, arguments and names kept.
fn mask_slowlog(reply: &[u8]) -> Vec<u8> {
    let Some((head, entries)) = elements_of(reply, false) else {
        return reply.to_vec();
    };
    let mut out = head;
    for entry in entries {
        let Some((entry_head, fields)) = elements_of(&entry, false) else {
            out.extend_from_slice(&entry);
            continue;
        };
        out.extend_from_slice(&entry_head);
        for (i, field) in fields.iter().enumerate() {
            match i {
                1 => out.extend_from_slice(b":<time>\r\n"),
                2 => out.extend_from_slice(b":<usec>\r\n"),
                4 => out.extend_from_slice(b"$<addr>\r\n"),
                _ => out.extend_from_slice(field),
            }
        }
    }
    out
}

/// How a step's reply is compared with Redis's.
#[derive(Clone, Copy)]
enum Mask {
    /// Byte for byte.
    Exact,
    /// Times, durations and addresses of slow log entries hidden.
    Slowlog,
    /// Every number hidden.
    Digits,
    /// Every number hidden, and the transparent-huge-pages advice (which
    /// depends on each process's memory, and which Redis never gives for
    /// itself since it turns THP off for its own process) dropped.
    Doctor,
    /// Lines sorted (Redis lists commands in hash order), numbers hidden.
    SortedLines,
    /// Not compared (kvik's reply is checked on its own).
    Skip,
}

/// The transparent-huge-pages advice of LATENCY DOCTOR.
const THP_ADVICE: &str = "- I detected a non zero amount of anonymous huge pages";

fn masked(mask: Mask, reply: &[u8]) -> Vec<u8> {
    match mask {
        Mask::Exact => reply.to_vec(),
        Mask::Slowlog => mask_slowlog(reply),
        Mask::Digits => mask_digits(reply),
        Mask::Doctor => {
            let text = String::from_utf8_lossy(reply);
            // The reply's length changes with the advice: compare the text.
            let body: Vec<&str> = text.split('\n').skip(1).filter(|l| !l.starts_with(THP_ADVICE)).collect();
            mask_digits(body.join("\n").as_bytes())
        }
        Mask::SortedLines => {
            let text = String::from_utf8_lossy(reply);
            let mut lines: Vec<&str> = text.split("\r\n").skip(1).collect();
            lines.sort_unstable();
            mask_digits(lines.join("\n").as_bytes())
        }
        Mask::Skip => Vec::new(),
    }
}

/// One command, words split on spaces (`_` stands for an empty word, `~`
/// for a space inside a word).
struct Step {
    command: &'static str,
    mask: Mask,
}

fn step(command: &'static str, mask: Mask) -> Step {
    Step { command, mask }
}

fn words(command: &str) -> Vec<String> {
    command.split(' ').map(|w| if w == "_" { String::new() } else { w.replace('~', " ") }).collect()
}

/// Run `steps` on one connection to a fresh redis-server and a fresh kvik
/// (both started with `options`), comparing each reply as its step says
/// (`<second>` waits to be well inside a wall-clock second); returns
/// kvik's replies, for checks of their values. Without redis-server (see
/// [`common::start_redis_with_or_skip`]) only kvik runs the steps.
fn compare_steps(test: &str, options: &[&str], steps: &[Step]) -> Vec<Vec<u8>> {
    let kvik = start_kvik_with(options);
    let mut k = connect(kvik.port);
    let redis = common::start_redis_with_or_skip(test, options);
    let mut r = redis.as_ref().map(|s| connect(s.port));
    let mut replies = Vec::new();
    let mut mismatches = Vec::new();
    for s in steps {
        if s.command == "<second>" {
            clear_of_second_boundary();
            replies.push(Vec::new());
            continue;
        }
        let words = words(s.command);
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let got = call_text(&mut k, &words);
        if let Some(r) = r.as_mut() {
            let expected = call_text(r, &words);
            let (want, have) = (masked(s.mask, &expected), masked(s.mask, &got));
            if want != have {
                mismatches.push(format!(
                    "{}:\n  redis {}\n  kvik  {}",
                    s.command,
                    want.escape_ascii(),
                    have.escape_ascii()
                ));
            }
        }
        replies.push(got);
    }
    assert!(
        mismatches.is_empty(),
        "{} reply(s) differ from redis-server:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    replies
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The ids of a SLOWLOG GET reply, newest first.
fn slowlog_ids(reply: &[u8]) -> Vec<i64> {
    let (_, entries) = elements_of(reply, false).expect("an array");
    entries
        .iter()
        .map(|e| {
            let (_, fields) = elements_of(e, false).expect("an entry");
            text(&fields[0]).trim().trim_start_matches(':').parse().expect("an id")
        })
        .collect()
}

#[test]
fn slowlog_follows_its_threshold_and_length_as_redis() {
    use Mask::{Exact, Slowlog};
    let steps = [
        // 0 logs every command, this CONFIG SET included (it ends with the new threshold).
        step("CONFIG SET slowlog-log-slower-than 0", Exact),
        step("PING", Exact),
        step("SLOWLOG LEN", Exact),
        step("SLOWLOG GET", Slowlog),
        // A lower length trims at once; the entries trimmed keep their ids spent.
        step("CONFIG SET slowlog-max-len 2", Exact),
        step("SLOWLOG LEN", Exact),
        step("SLOWLOG GET", Slowlog),
        step("SLOWLOG RESET", Exact),
        step("SLOWLOG GET", Slowlog),
        // Length 0 keeps nothing, and the ids go on counting.
        step("CONFIG SET slowlog-max-len 0", Exact),
        step("PING", Exact),
        step("SLOWLOG LEN", Exact),
        step("CONFIG SET slowlog-max-len 128", Exact),
        step("SLOWLOG GET", Slowlog),
        // A queued command is logged when EXEC runs it; EXEC itself never is.
        step("MULTI", Exact),
        step("ECHO queued", Exact),
        step("EXEC", Exact),
        step("SLOWLOG GET 3", Slowlog),
        // Negative: off. Lowering the length while off trims nothing until it is on again.
        step("CONFIG SET slowlog-log-slower-than -1", Exact),
        step("PING", Exact),
        step("SLOWLOG LEN", Exact),
        step("CONFIG SET slowlog-max-len 1", Exact),
        step("SLOWLOG LEN", Exact),
        step("CONFIG SET slowlog-log-slower-than 10000000", Exact),
        step("SLOWLOG LEN", Exact),
        step("SLOWLOG GET", Slowlog),
        // A threshold in microseconds: a 20 ms command is logged, a PING is not.
        step("CONFIG SET slowlog-max-len 128", Exact),
        step("CONFIG SET slowlog-log-slower-than 5000", Exact),
        step("SLOWLOG RESET", Exact),
        step("PING", Exact),
        step("DEBUG SLEEP 0.02", Exact),
        step("SLOWLOG GET", Slowlog),
        step("CONFIG SET slowlog-log-slower-than -5", Exact),
    ];
    let replies = compare_steps("slowlog_follows_its_threshold_and_length_as_redis", &DEBUG, &steps);
    // What the comparison cannot show without Redis: the values themselves.
    assert_eq!(replies[2], b":2\r\n");
    assert_eq!(slowlog_ids(&replies[3]), [2, 1, 0]);
    assert_eq!(replies[5], b":2\r\n");
    assert_eq!(slowlog_ids(&replies[6]), [5, 4]);
    assert_eq!(slowlog_ids(&replies[8]), [7]);
    assert_eq!(replies[11], b":0\r\n");
    assert_eq!(slowlog_ids(&replies[13]), [12]);
    let queued = text(&replies[17]);
    assert!(queued.contains("$4\r\nECHO\r\n$6\r\nqueued\r\n") && !queued.contains("EXEC"), "{queued}");
    assert_eq!(slowlog_ids(&replies[17]), [15, 14, 13]);
    assert_eq!((&replies[20][..], &replies[22][..]), (&b":5\r\n"[..], &b":5\r\n"[..]));
    assert_eq!(replies[24], b":1\r\n");
    assert_eq!(slowlog_ids(&replies[25]), [16]);
    assert_eq!(slowlog_ids(&replies[31]), [17]);
    let slow = text(&replies[31]);
    assert!(
        slow.starts_with("*1\r\n*6\r\n") && slow.contains("$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$4\r\n0.02\r\n"),
        "{slow}"
    );
    let (_, fields) = elements_of(&elements_of(&replies[31], false).expect("entries").1[0], false).expect("entry");
    let usec: u64 = text(&fields[2]).trim().trim_start_matches(':').parse().expect("a duration");
    assert!(usec >= 20_000, "DEBUG SLEEP 0.02 logged as {usec} µs");
    assert!(text(&replies[32]).starts_with("-ERR CONFIG SET failed"), "{}", text(&replies[32]));
}

#[test]
fn slowlog_hides_secrets_as_redis() {
    use Mask::{Exact, Skip, Slowlog};
    let steps = [
        step("CONFIG SET slowlog-log-slower-than 0", Exact),
        step("AUTH secret", Skip),
        step("AUTH someone secret", Skip),
        step("HELLO 2 SETNAME n AUTH default secret", Skip),
        step("HELLO 2 AUTH", Skip),
        step("CONFIG SET maxmemory 0 requirepass _", Exact),
        step("CONFIG SET nosuch 1 masterauth secret", Skip),
        step("CONFIG SET MasterUser secret maxmemory x", Skip),
        step("SLOWLOG GET", Slowlog),
    ];
    let replies = compare_steps("slowlog_hides_secrets_as_redis", &[], &steps);
    let log = text(&replies[8]);
    assert!(!log.contains("secret"), "{log}");
    assert_eq!(log.matches("(redacted)").count(), 8, "{log}");
}

#[test]
fn latency_monitor_matches_redis() {
    use Mask::{Digits, Doctor, Exact, Skip};
    let steps = [
        step("LATENCY DOCTOR", Exact),
        step("CONFIG SET latency-monitor-threshold 5", Exact),
        step("LATENCY LATEST", Exact),
        step("LATENCY DOCTOR", Skip),
        // Two spikes in one second: one sample, the worse of the two.
        step("<second>", Exact),
        step("DEBUG SLEEP 0.01", Exact),
        step("DEBUG SLEEP 0.02", Exact),
        step("PING", Exact),
        step("LATENCY LATEST", Digits),
        step("LATENCY HISTORY command", Digits),
        step("LATENCY HISTORY COMMAND", Exact),
        step("LATENCY HISTORY fast-command", Exact),
        step("LATENCY GRAPH command", Digits),
        step("LATENCY GRAPH nosuch", Exact),
        step("LATENCY DOCTOR", Doctor),
        // Off again: nothing new is recorded, what was recorded stays.
        step("CONFIG SET latency-monitor-threshold 0", Exact),
        step("DEBUG SLEEP 0.01", Exact),
        step("LATENCY HISTORY command", Digits),
        step("LATENCY DOCTOR", Doctor),
        step("LATENCY RESET COMMAND nosuch", Exact),
        step("LATENCY RESET", Exact),
        step("LATENCY LATEST", Exact),
        step("LATENCY DOCTOR", Exact),
        step("LATENCY RESET x y", Exact),
    ];
    let replies = compare_steps("latency_monitor_matches_redis", &DEBUG, &steps);
    let doctor = text(&replies[3]);
    assert!(
        doctor.contains("Dave, no latency spike was observed") || doctor.contains(THP_ADVICE),
        "nothing recorded yet: {doctor}"
    );
    let latest = text(&replies[8]);
    let numbers: Vec<i64> = latest.split("\r\n").filter_map(|l| l.strip_prefix(':')?.parse().ok()).collect();
    assert!(latest.starts_with("*1\r\n*4\r\n$7\r\ncommand\r\n"), "{latest}");
    let (time, last, max) = (numbers[0], numbers[1], numbers[2]);
    assert!((20..40).contains(&last) && last == max, "{latest}");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    assert!((now - 5..=now).contains(&time), "sample at {time}, now {now}");
    assert_eq!(text(&replies[9]), format!("*1\r\n*2\r\n:{time}\r\n:{last}\r\n"));
    assert_eq!(text(&replies[17]), text(&replies[9]), "nothing recorded while off");
    let graph = text(&replies[12]);
    assert!(graph.contains(&format!("command - high {last} ms, low {last} ms (all time high {max} ms)\n")), "{graph}");
    let report = text(&replies[14]);
    assert!(report.contains("1. command: 1 latency spikes (average "), "{report}");
    assert!(report.contains("'CONFIG SET slowlog-log-slower-than 5000'"), "{report}");
    assert_eq!(replies[19], b":1\r\n");
}

/// The `latency_percentiles_usec_<command>` line of an INFO reply, as
/// `(percentile name, microseconds)` pairs.
fn percentiles(info: &str, command: &str) -> Vec<(String, f64)> {
    let line = info_value(info, &format!("latency_percentiles_usec_{command}"));
    line.split(',')
        .filter_map(|p| {
            let (name, value) = p.split_once('=')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect()
}

#[test]
fn latency_percentiles_and_histograms_are_measured() {
    use Mask::{Digits, Exact, SortedLines};
    let steps = [
        step("CONFIG RESETSTAT", Exact),
        step("DEBUG SLEEP 0.01", Exact),
        step("DEBUG SLEEP 0.01", Exact),
        step("DEBUG SLEEP 0.01", Exact),
        step("DEBUG SLEEP 0.01", Exact),
        step("DEBUG SLEEP 0.01", Exact),
        step("DEBUG SLEEP 0.05", Exact),
        step("INFO latencystats", SortedLines),
        step("LATENCY HISTOGRAM debug", Digits),
        step("LATENCY HISTOGRAM debug nosuch config", Digits),
        step("CONFIG RESETSTAT", Exact),
        step("INFO latencystats", SortedLines),
        step("LATENCY HISTOGRAM debug", Exact),
    ];
    let replies = compare_steps("latency_percentiles_and_histograms_are_measured", &DEBUG, &steps);
    let info = text(&replies[7]);
    let debug = percentiles(&info, "debug");
    let names: Vec<&str> = debug.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["p50", "p99", "p99.9"], "{info}");
    let (p50, p999) = (debug[0].1, debug[2].1);
    // A 10 ms sleep, reported by the upper bound of its slot (at most 1/16 above).
    assert!((10_000.0..=12_500.0).contains(&p50), "p50 of five 10 ms sleeps and one 50 ms: {p50}\n{info}");
    assert!((50_000.0..=60_000.0).contains(&p999), "p99.9: {p999}\n{info}");
    assert!(info.contains("latency_percentiles_usec_config|resetstat:p50="), "{info}");
    let histogram = text(&replies[8]);
    assert_eq!(
        histogram,
        "*2\r\n$5\r\ndebug\r\n*4\r\n$5\r\ncalls\r\n:6\r\n$14\r\nhistogram_usec\r\n*4\r\n:16384\r\n:5\r\n:65536\r\n:6\r\n"
    );
    assert!(!text(&replies[11]).contains("_debug:"), "RESETSTAT forgets the durations: {}", text(&replies[11]));
    assert_eq!(replies[12], b"*0\r\n");
}

#[test]
fn info_leaves_out_fields_kvik_cannot_measure() {
    const LEFT_OUT: [&str; 19] = [
        "gcc_version",
        "used_memory_peak",
        "used_memory_peak_human",
        "used_memory_peak_perc",
        "used_memory_overhead",
        "allocator_allocated",
        "allocator_active",
        "allocator_resident",
        "allocator_frag_ratio",
        "allocator_rss_ratio",
        "rss_overhead_ratio",
        "mem_fragmentation_ratio",
        "mem_fragmentation_bytes",
        "used_memory_lua",
        "used_memory_lua_human",
        "used_memory_vm_eval",
        "used_memory_vm_functions",
        "used_memory_vm_total",
        "used_memory_vm_total_human",
    ];
    let kvik = start_kvik_with(&[]);
    let info = text(&call_text(&mut connect(kvik.port), &["INFO", "everything"]));
    for field in LEFT_OUT {
        assert!(!info.contains(&format!("\r\n{field}:")), "INFO shows {field}:\n{info}");
    }
    // The fields around them stay.
    for field in ["os", "arch_bits", "total_system_memory", "maxmemory"] {
        info_value(&info, field);
    }
    // The script cache's are measured: empty here.
    assert_eq!(info_value(&info, "number_of_cached_scripts"), "0");
    assert_eq!(info_value(&info, "used_memory_scripts_eval"), "0");
    // So are the libraries'.
    for field in ["number_of_functions", "number_of_libraries", "used_memory_functions", "used_memory_scripts"] {
        assert_eq!(info_value(&info, field), "0", "{field}");
    }
    // used_memory, which eviction compares with maxmemory, is the data
    // estimate and the client buffers, both measured.
    let number = |name: &str| info_value(&info, name).parse::<u64>().unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(number("used_memory"), number("used_memory_dataset") + number("mem_clients_normal"));
    assert!(number("mem_clients_normal") > 0, "the caller's buffers are counted:\n{info}");
    // They are Redis's fields: the test names what Redis prints.
    let Some(redis) = common::start_redis_or_skip("info_leaves_out_fields_kvik_cannot_measure") else {
        return;
    };
    let theirs = text(&call_text(&mut connect(redis.port), &["INFO", "everything"]));
    for field in LEFT_OUT {
        info_value(&theirs, field);
    }
}

/// `latency-tracking` and `latency-tracking-info-percentiles` as Redis: off,
/// durations are not counted and `INFO latencystats` has only its header,
/// while `LATENCY HISTOGRAM` keeps what was counted; the percentiles listed
/// are the ones configured, named as Redis names them.
#[test]
fn latency_tracking_options_match_redis() {
    use Mask::{Digits, Exact, SortedLines};
    let steps = [
        step("CONFIG GET latency-tracking", Exact),
        step("CONFIG GET latency-tracking-info-percentiles", Exact),
        step("CONFIG SET latency-tracking-info-percentiles 0.0001~99.990~100~0~1e1", Exact),
        step("CONFIG GET latency-tracking-info-percentiles", Exact),
        step("CONFIG RESETSTAT", Exact),
        step("DEBUG SLEEP 0.01", Exact),
        step("INFO latencystats", SortedLines),
        step("CONFIG SET latency-tracking-info-percentiles _", Exact),
        step("INFO latencystats", SortedLines),
        step("CONFIG SET latency-tracking no", Exact),
        step("DEBUG SLEEP 0.01", Exact),
        step("INFO latencystats", Exact),
        step("LATENCY HISTOGRAM debug", Digits),
        step("CONFIG SET latency-tracking maybe", Exact),
        step("CONFIG SET latency-tracking yes", Exact),
        step("CONFIG SET latency-tracking-info-percentiles 50~99~99.9", Exact),
    ];
    let replies = compare_steps("latency_tracking_options_match_redis", &DEBUG, &steps);
    let info = text(&replies[6]);
    let names: Vec<String> = percentiles(&info, "debug").into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["p0.0001", "p99.99", "p100", "p0", "p10"], "{info}");
    assert!(text(&replies[8]).contains("latency_percentiles_usec_debug:\r\n"), "{}", text(&replies[8]));
    assert_eq!(text(&replies[11]), "$16\r\n# Latencystats\r\n\r\n");
    assert!(text(&replies[12]).contains("calls\r\n:1\r\n"), "the call made while off is not counted");
}

/// Redis's refusals of a bad `latency-tracking-info-percentiles`.
#[test]
fn bad_percentiles_are_refused_as_redis() {
    use Mask::Exact;
    let steps = [
        step("CONFIG SET latency-tracking-info-percentiles 50~abc", Exact),
        step("CONFIG SET latency-tracking-info-percentiles 101", Exact),
        step("CONFIG SET latency-tracking-info-percentiles -1", Exact),
        step("CONFIG SET latency-tracking-info-percentiles ~~50~~99~", Exact),
        step("CONFIG SET latency-tracking-info-percentiles nan", Exact),
        step("CONFIG GET latency-tracking-info-percentiles", Exact),
    ];
    compare_steps("bad_percentiles_are_refused_as_redis", &[], &steps);
}
