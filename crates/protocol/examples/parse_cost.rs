//! Instructions per command for each request parser, counted rather than
//! timed, so the comparison holds on a busy or shared machine.
//!
//! Run under callgrind and read the instructions spent in `run`:
//!
//! ```sh
//! cargo build --release -p kvik-protocol --example parse_cost
//! valgrind --tool=callgrind --toggle-collect='parse_cost::run' \
//!     target/release/examples/parse_cost set50 respb 100
//! ```
//!
//! `bench/parse_cost.sh` does this for every workload and parser and writes the table.

use std::hint::black_box;

use kvik_protocol::resp::request::RequestParser;
use kvik_protocol::respb::RespbDecoder;
use kvik_protocol::CommandArgs;

#[path = "../benches/workloads.rs"]
mod workloads;
use workloads::{decode_respb, parse_peer, parse_resp, resp_buffer, respb_buffer, workloads};

/// Parse `buf` `reps` times; the only function callgrind counts.
#[inline(never)]
fn run(parser: &str, buf: &[u8], reps: usize) -> usize {
    let mut args = CommandArgs::new();
    let mut n = 0;
    match parser {
        "resp" => {
            let mut p = RequestParser::default();
            for _ in 0..reps {
                n += parse_resp(&mut p, &mut args, black_box(buf));
            }
        }
        "peer" => {
            for _ in 0..reps {
                n += parse_peer(black_box(buf));
            }
        }
        _ => {
            let mut d = RespbDecoder::default();
            for _ in 0..reps {
                n += decode_respb(&mut d, &mut args, black_box(buf));
            }
        }
    }
    n
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let (Some(workload), Some(parser)) = (argv.get(1), argv.get(2)) else {
        eprintln!("usage: parse_cost <get|set50|set1k|mixed> <resp|respb|peer> [reps]");
        std::process::exit(2);
    };
    let reps: usize = argv.get(3).and_then(|r| r.parse().ok()).unwrap_or(100);
    let Some((_, commands)) = workloads().into_iter().find(|(name, _)| name == workload) else {
        eprintln!("unknown workload {workload}");
        std::process::exit(2);
    };
    let buf = if parser == "respb" { respb_buffer(&commands) } else { resp_buffer(&commands) };
    let n = run(parser, &buf, reps);
    println!("{workload} {parser}: {n} commands, {} bytes per pass", buf.len());
}
