//! Round trips RESP → RESPB → RESP over large random corpora: commands drawn
//! from every layout (`respb::sample`) and from the command table's argument
//! trees, fed in chunks of random sizes.

use kvik_protocol::commands::{ArgFlags, ArgKind, ArgSpec, CommandSpec, COMMANDS};
use kvik_protocol::resp::request::{Progress, RequestLimits, RequestParser};
use kvik_protocol::respb::layouts::LAYOUTS;
use kvik_protocol::respb::sample::{random_frame, Rng, Style};
use kvik_protocol::respb::{encode_request, Decoded, Encoding, RespbDecoder};
use kvik_protocol::CommandArgs;

use super::*;

/// One corpus command and the option keywords it used (for comparing
/// meanings, where keywords may change case and order).
struct Case {
    args: Vec<Vec<u8>>,
    tokens: Vec<Vec<u8>>,
}

fn pick<'a, T>(rng: &mut Rng, items: &'a [T]) -> &'a T {
    &items[rng.below(items.len() as u64) as usize]
}

fn mixed_case(word: &str, rng: &mut Rng) -> Vec<u8> {
    word.bytes().map(|b| if rng.chance(2) { b.to_ascii_lowercase() } else { b.to_ascii_uppercase() }).collect()
}

fn value_for(kind: ArgKind, rng: &mut Rng) -> Vec<u8> {
    match kind {
        ArgKind::Integer | ArgKind::UnixTime => {
            pick(rng, &["0", "-3", "17", "+4", "0012", "9223372036854775807", "1e3", "x"]).as_bytes().to_vec()
        }
        ArgKind::Double => pick(rng, &["1.5", "-inf", "+inf", "(2.5", "0.1", "3", "1e-7", "2.50"]).as_bytes().to_vec(),
        _ => match rng.below(10) {
            0 => Vec::new(),
            1 => vec![0, b'\r', b'\n', 0xFF],
            2 if rng.chance(8) => vec![b'v'; 70_000],
            _ => format!("k{}", rng.below(1000)).into_bytes(),
        },
    }
}

fn render(arg: &ArgSpec, rng: &mut Rng, case: &mut Case) {
    if arg.flags.contains(ArgFlags::OPTIONAL) && rng.chance(2) {
        return;
    }
    let times = if arg.flags.contains(ArgFlags::MULTIPLE) { 1 + rng.below(3) } else { 1 };
    for i in 0..times {
        if let Some(token) = arg.token {
            if i == 0 || arg.flags.contains(ArgFlags::MULTIPLE_TOKEN) {
                case.tokens.push(token.to_ascii_uppercase().into_bytes());
                case.args.push(mixed_case(token, rng));
            }
        }
        match arg.kind {
            ArgKind::PureToken => {}
            ArgKind::Oneof => {
                let child = pick(rng, arg.children);
                render(&ArgSpec { flags: ArgFlags::NONE, ..*child }, rng, case);
            }
            ArgKind::Block => arg.children.iter().for_each(|c| render(c, rng, case)),
            kind => case.args.push(value_for(kind, rng)),
        }
    }
}

fn table_command(spec: &CommandSpec, rng: &mut Rng) -> Case {
    let mut case = Case { args: Vec::new(), tokens: Vec::new() };
    if let Some(container) = spec.container {
        case.args.push(mixed_case(container, rng));
        case.args.push(mixed_case(spec.short_name(), rng));
        case.tokens.push(spec.short_name().to_ascii_uppercase().into_bytes());
    } else {
        case.args.push(mixed_case(spec.name, rng));
    }
    spec.arguments.iter().for_each(|a| render(a, rng, &mut case));
    case
}

fn layout_command(rng: &mut Rng) -> Case {
    let layout = pick(rng, LAYOUTS);
    let frame = random_frame(layout, 0, rng, Style::Arbitrary);
    let mut args = CommandArgs::new();
    match RespbDecoder::default().decode(&frame, &mut args) {
        Ok(Decoded::Frame { .. }) => Case { args: args.to_vec(&frame), tokens: Vec::new() },
        other => panic!("sample frame of {} did not decode: {other:?}", layout.name),
    }
}

fn corpus(seed: u64, rounds: usize) -> Vec<Case> {
    let mut rng = Rng(seed);
    let specs: Vec<&CommandSpec> = COMMANDS
        .iter()
        .flat_map(|c| std::iter::once(c).chain(c.subcommands.iter()))
        .filter(|c| c.subcommands.is_empty())
        .collect();
    let mut cases = Vec::new();
    for _ in 0..rounds {
        for spec in &specs {
            cases.push(table_command(spec, &mut rng));
        }
        for _ in 0..LAYOUTS.len() {
            cases.push(layout_command(&mut rng));
        }
    }
    cases
}

/// Feed `input` to a converter in chunks of random sizes (1 byte to 100 KB).
fn convert_in_chunks(target: Target, input: &[u8], rng: &mut Rng) -> (Vec<u8>, Stats) {
    let mut conv = Converter::new(target);
    let mut out = Vec::new();
    let mut at = 0;
    while at < input.len() {
        let size = match rng.below(4) {
            0 => 1 + rng.below(16) as usize,
            _ => 1 + rng.below(100_000) as usize,
        };
        let end = (at + size).min(input.len());
        conv.feed(&input[at..end], &mut out).expect("converts");
        at = end;
    }
    let stats = conv.finish().expect("ends between commands");
    assert_eq!(stats.bytes_in, input.len() as u64);
    assert_eq!(stats.bytes_out, out.len() as u64);
    (out, stats)
}

fn parse_resp_stream(bytes: &[u8]) -> Vec<Vec<Vec<u8>>> {
    let mut parser = RequestParser::new(RequestLimits::default());
    let mut args = CommandArgs::new();
    let mut at = 0;
    let mut cmds = Vec::new();
    while at < bytes.len() {
        match parser.parse(&bytes[at..], &mut args).expect("valid RESP") {
            Progress::Done(n) => {
                cmds.push(args.to_vec(&bytes[at..at + n]));
                at += n;
            }
            Progress::NeedMore { .. } => panic!("RESP output ends inside a command"),
        }
    }
    cmds
}

fn show(args: &[Vec<u8>]) -> String {
    args.iter().map(|a| format!("{:?}", String::from_utf8_lossy(&a[..a.len().min(40)]))).collect::<Vec<_>>().join(" ")
}

/// Same command, same arguments once keywords are upper-cased (in any
/// order), and the same positional arguments before the first keyword.
fn same_meaning(a: &[Vec<u8>], b: &[Vec<u8>], tokens: &[Vec<u8>]) -> bool {
    let norm = |v: &[Vec<u8>]| -> Vec<Vec<u8>> {
        v.iter()
            .enumerate()
            .map(|(i, x)| {
                let up = x.to_ascii_uppercase();
                if i == 0 || tokens.contains(&up) {
                    up
                } else {
                    x.clone()
                }
            })
            .collect()
    };
    let (na, nb) = (norm(a), norm(b));
    let lead = na.iter().skip(1).take_while(|x| !tokens.contains(x)).count();
    if na.get(..=lead) != nb.get(..=lead) {
        return false;
    }
    let (mut sa, mut sb) = (na, nb);
    sa.sort();
    sb.sort();
    sa == sb
}

#[test]
fn resp_to_respb_to_resp_keeps_every_command() {
    let cases = corpus(0x5EED_0001, 12);
    assert!(cases.len() > 5_000, "corpus of {}", cases.len());
    let mut resp = Vec::new();
    for c in &cases {
        write_command(&c.args, &mut resp);
    }
    let mut rng = Rng(99);
    let (respb, there) = convert_in_chunks(Target::Respb, &resp, &mut rng);
    let (back, again) = convert_in_chunks(Target::Resp, &respb, &mut rng);
    assert_eq!(there.commands, cases.len() as u64);
    assert_eq!(again.commands, cases.len() as u64);
    assert_eq!(there.passthrough, again.passthrough);
    assert!(there.passthrough < there.commands, "everything went passthrough");
    let cmds = parse_resp_stream(&back);
    assert_eq!(cmds.len(), cases.len());
    for (case, cmd) in cases.iter().zip(&cmds) {
        let mut frame = Vec::new();
        match encode_request(&case.args, 0, &mut frame) {
            Encoding::Passthrough => assert_eq!(cmd, &case.args, "passthrough changed"),
            Encoding::Binary => {
                assert!(same_meaning(&case.args, cmd, &case.tokens), "{} came back as {}", show(&case.args), show(cmd))
            }
        }
    }
    // The commands that came back convert to the very same frames.
    let (respb2, _) = convert_in_chunks(Target::Respb, &back, &mut rng);
    assert!(respb2 == respb, "second conversion differs");
}

#[test]
fn typical_commands_shrink() {
    let mut resp = Vec::new();
    for i in 0..10_000 {
        let (k, v) = (format!("key:{i}"), format!("value-{i}"));
        write_command(&["SET", k.as_str(), v.as_str()], &mut resp);
        write_command(&["HSET", "h", k.as_str(), v.as_str()], &mut resp);
        write_command(&["INCRBY", "counter", "17"], &mut resp);
    }
    let (respb, stats) = convert_in_chunks(Target::Respb, &resp, &mut Rng(5));
    assert_eq!((stats.commands, stats.passthrough), (30_000, 0));
    assert!(stats.savings_percent() > 20.0, "{}", stats.report(Target::Respb));
    assert!(respb.len() < resp.len());
    let report = stats.report(Target::Respb);
    assert!(report.starts_with("converted 30000 commands (0 passthrough) from RESP to RESPB:"), "{report}");
}

#[test]
fn inline_commands_and_blank_lines() {
    let input = b"SET a \"x y\"\r\n\r\nPING\n*0\r\n*1\r\n$4\r\nPING\r\n";
    let (respb, stats) = convert_in_chunks(Target::Respb, input, &mut Rng(1));
    assert_eq!(stats.commands, 3);
    let (back, _) = convert_in_chunks(Target::Resp, &respb, &mut Rng(2));
    let cmds = parse_resp_stream(&back);
    assert_eq!(cmds[0], vec![b"SET".to_vec(), b"a".to_vec(), b"x y".to_vec()]);
    assert_eq!(cmds[1][0].to_ascii_uppercase(), b"PING");
    assert_eq!(cmds.len(), 3);
}

#[test]
fn broken_input_is_reported_with_its_offset() {
    let mut conv = Converter::new(Target::Respb);
    let mut out = Vec::new();
    conv.feed(b"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI", &mut out).unwrap();
    assert!(matches!(conv.finish(), Err(ConvertError::Truncated(10))));
    let mut conv = Converter::new(Target::Respb);
    let err = conv.feed(b"*1\r\n$4\r\nPING\r\n*x\r\n", &mut out).unwrap_err();
    assert!(matches!(err, ConvertError::Resp(14, _)), "{err}");
    let mut conv = Converter::new(Target::Resp);
    let err = conv.feed(&[0x7F, 0x00, 0, 0, 0, 0], &mut out).unwrap_err();
    assert!(err.to_string().starts_with("bad RESPB frame at byte 0: ERR RESPB unknown opcode"), "{err}");
}

#[test]
fn mux_control_frames_are_left_out() {
    let mut input = Vec::new();
    kvik_protocol::respb::control_frame(kvik_protocol::respb::MUX_CREATE, 0, 5, &mut input);
    encode_request(&["GET", "k"], 5, &mut input);
    let (back, stats) = convert_in_chunks(Target::Resp, &input, &mut Rng(3));
    assert_eq!((stats.commands, stats.control_frames), (1, 1));
    assert_eq!(back, b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
    assert!(stats.report(Target::Resp).ends_with("(1 mux control frames left out)"));
}

#[test]
fn convert_stream_reads_and_writes_everything() {
    let mut resp = Vec::new();
    for i in 0..50_000 {
        write_command(&["RPUSH", "list", &i.to_string()], &mut resp);
    }
    let mut respb = Vec::new();
    let stats = convert_stream(Target::Respb, &resp[..], &mut respb).unwrap();
    assert_eq!(stats.commands, 50_000);
    let mut back = Vec::new();
    convert_stream(Target::Resp, &respb[..], &mut back).unwrap();
    assert_eq!(parse_resp_stream(&back).len(), 50_000);
}
