//! Round-trip tests of the RESPB request codec against the layout table and
//! the command table.

use super::layout::Layout;
use super::layouts::LAYOUTS;
use super::sample::{random_frame, Rng, Style};
use super::*;
use crate::args::CommandArgs;
use crate::commands::{ArgFlags, ArgKind, ArgSpec, CommandSpec, RespbOpcode, COMMANDS};

fn decode_all(frame: &[u8]) -> Result<(Frame, Vec<Vec<u8>>, usize), DecodeError> {
    let mut dec = RespbDecoder::default();
    let mut args = CommandArgs::new();
    match dec.decode(frame, &mut args)? {
        Decoded::Frame { frame: f, consumed } => Ok((f, args.to_vec(frame), consumed)),
        Decoded::NeedMore { hint } => panic!("frame incomplete, needs {hint} more"),
    }
}

fn encode(args: &[Vec<u8>], mux: u16) -> (Encoding, Vec<u8>) {
    let mut out = Vec::new();
    let e = encode_request(args, mux, &mut out);
    (e, out)
}

fn show(args: &[Vec<u8>]) -> String {
    args.iter().map(|a| format!("{:?}", String::from_utf8_lossy(a))).collect::<Vec<_>>().join(" ")
}

#[test]
fn every_layout_round_trips_canonical_frames() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for layout in LAYOUTS {
        for round in 0..300 {
            let mux = rng.next_u64() as u16;
            let frame = random_frame(layout, mux, &mut rng, Style::Arbitrary);
            let (f, args, consumed) =
                decode_all(&frame).unwrap_or_else(|e| panic!("{} round {round}: {e}", layout.name));
            assert_eq!(consumed, frame.len(), "{}", layout.name);
            assert_eq!(f, Frame::Command { mux });
            let (enc, again) = encode(&args, mux);
            assert_eq!(enc, Encoding::Binary, "{} fell back to passthrough for {}", layout.name, show(&args));
            assert_eq!(again, frame, "{} re-encoded differently: {}", layout.name, show(&args));
            for cut in [0, 1, 3, frame.len() / 2, frame.len().saturating_sub(1)] {
                if cut < frame.len() {
                    let mut args2 = CommandArgs::new();
                    let r = RespbDecoder::default().decode(&frame[..cut], &mut args2).unwrap();
                    assert!(matches!(r, Decoded::NeedMore { .. }), "{} cut {cut}", layout.name);
                }
            }
        }
    }
}

#[test]
fn layouts_match_the_opcode_table_and_the_command_table() {
    let csv = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../spec/respb/opcodes.csv")).unwrap();
    let mut seen = 0;
    for line in csv.lines().skip(1) {
        // section (quoted, may hold commas), opcode, command, payload
        let rest = match line.strip_prefix('"') {
            Some(quoted) => quoted.split_once("\",").map_or("", |(_, r)| r),
            None => line.split_once(',').map_or("", |(_, r)| r),
        };
        let mut cols = rest.splitn(3, ',');
        let (Some(op), Some(name)) = (cols.next(), cols.next()) else {
            continue;
        };
        let op = u32::from_str_radix(op.trim_start_matches("0x"), 16).unwrap();
        if name.starts_with("REPLY_") || matches!(name, "MUX_CREATE" | "MUX_CLOSE" | "RESP_PASSTHROUGH") {
            continue;
        }
        let layout = LAYOUTS.iter().find(|l| l.name == name).unwrap_or_else(|| panic!("no layout for {name}"));
        assert_eq!(layout.opcode, op, "{name}");
        seen += 1;
        let spec = crate::commands::lookup(name.as_bytes()).unwrap_or_else(|| panic!("{name} not in command table"));
        let want = if layout.module { RespbOpcode::Module(op) } else { RespbOpcode::Core(op as u16) };
        assert_eq!(spec.respb_opcode, Some(want), "{name}");
    }
    assert_eq!(seen, LAYOUTS.len(), "layouts not in opcodes.csv");
    for w in LAYOUTS.windows(2) {
        assert!((w[0].module, w[0].opcode) < (w[1].module, w[1].opcode), "LAYOUTS not sorted at {}", w[1].name);
    }
    for l in LAYOUTS {
        assert!(l.fields.len() <= Layout::MAX_FIELDS, "{}", l.name);
    }
}

fn args_of(s: &str) -> Vec<Vec<u8>> {
    s.split(' ').map(|w| w.as_bytes().to_vec()).collect()
}

fn roundtrip_text(s: &str) -> (Encoding, String) {
    let args = args_of(s);
    let (e, frame) = encode(&args, 1);
    let (_, back, _) = decode_all(&frame).unwrap();
    let text = back.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>().join(" ");
    (e, text)
}

#[test]
fn options_in_any_order_and_case_come_back_canonical() {
    use Encoding::*;
    let cases = [
        ("SET k v", Binary, "SET k v"),
        ("set k v px 100 nx", Binary, "SET k v NX PX 100"),
        ("SET k v GET KEEPTTL XX", Binary, "SET k v XX GET KEEPTTL"),
        ("ZADD z ch nx 1 a 2.5 b -inf c", Binary, "ZADD z NX CH 1 a 2.5 b -inf c"),
        ("ZRANGEBYSCORE z (1 +inf LIMIT 0 10 WITHSCORES", Binary, "ZRANGEBYSCORE z (1 +inf WITHSCORES LIMIT 0 10"),
        ("ZRANGE z (1.5 5 BYSCORE REV", Binary, "ZRANGE z (1.5 5 BYSCORE REV"),
        ("ZRANGE z 0 -1 WITHSCORES", Binary, "ZRANGE z 0 -1 WITHSCORES"),
        ("XTRIM s MAXLEN ~ 1000 LIMIT 10", Binary, "XTRIM s MAXLEN ~ 1000 LIMIT 10"),
        ("XREAD COUNT 2 STREAMS a b 0 $", Binary, "XREAD COUNT 2 STREAMS a b 0 $"),
        ("XREADGROUP GROUP g c NOACK STREAMS s >", Binary, "XREADGROUP GROUP g c NOACK STREAMS s >"),
        ("ZUNIONSTORE d 2 a b WEIGHTS 1 2.5 AGGREGATE MAX", Binary, "ZUNIONSTORE d 2 a b WEIGHTS 1 2.5 AGGREGATE MAX"),
        ("SSCAN s 0 COUNT 10 MATCH a*", Binary, "SSCAN s 0 MATCH a* COUNT 10"),
        ("SCAN 18446744073709551615 TYPE string", Binary, "SCAN 18446744073709551615 TYPE string"),
        ("HELLO 3 SETNAME n AUTH u p", Binary, "HELLO 3 AUTH u p SETNAME n"),
        ("AUTH p", Binary, "AUTH p"),
        ("AUTH u p", Binary, "AUTH u p"),
        ("PING", Binary, "PING"),
        ("BLPOP a b 0.5", Binary, "BLPOP a b 0.5"),
        ("CLIENT setname x", Binary, "CLIENT SETNAME x"),
        ("GEORADIUS g 1.5 2 100 km COUNT 3 ANY WITHDIST", Binary, "GEORADIUS g 1.5 2 100 km WITHDIST COUNT 3 ANY"),
        ("BITFIELD k SET i8 #0 100 GET u4 0 OVERFLOW SAT", Binary, "BITFIELD k SET i8 #0 100 GET u4 0 OVERFLOW SAT"),
        ("MIGRATE h 6379 \"\" 0 5000 COPY KEYS a b", Binary, "MIGRATE h 6379 \"\" 0 5000 COPY KEYS a b"),
        ("XPENDING s g IDLE 10 - + 5 c", Binary, "XPENDING s g IDLE 10 - + 5 c"),
        // Forms the layouts cannot carry go as passthrough, unchanged.
        ("SET k v EX 1.5", Passthrough, "SET k v EX 1.5"),
        ("SET k v EX 010", Passthrough, "SET k v EX 010"),
        ("SET k v NX NX", Passthrough, "SET k v NX NX"),
        ("SET k v BOGUS", Passthrough, "SET k v BOGUS"),
        ("ZADD z 1.50 a", Passthrough, "ZADD z 1.50 a"),
        ("ZADD z inf a", Passthrough, "ZADD z inf a"),
        ("ZCOUNT z (1 5", Passthrough, "ZCOUNT z (1 5"),
        ("ZRANGE z [a [z BYLEX", Passthrough, "ZRANGE z [a [z BYLEX"),
        ("LPOP k -1", Passthrough, "LPOP k -1"),
        ("LPOP k 70000", Passthrough, "LPOP k 70000"),
        // Read as id "MAXLEN" and pairs (10, *), (f, v): the same text comes back, so the same meaning.
        ("XADD s MAXLEN 10 * f v", Binary, "XADD s MAXLEN 10 * f v"),
        ("XCLAIM s g c 10 1-1 2-2 idle 5 FORCE", Binary, "XCLAIM s g c 10 1-1 2-2 IDLE 5 FORCE"),
        ("GEODIST g a b KM", Passthrough, "GEODIST g a b KM"),
        ("COMMAND", Passthrough, "COMMAND"),
        ("NOSUCHCOMMAND a b", Passthrough, "NOSUCHCOMMAND a b"),
        ("GET", Passthrough, "GET"),
        ("GET a b", Passthrough, "GET a b"),
    ];
    for (input, enc, want) in cases {
        let input = input.replace("\"\"", "");
        let want = want.replace("\"\"", "");
        let (e, got) = roundtrip_text(&input);
        assert_eq!((e, got.as_str()), (enc, want.as_str()), "input {input:?}");
    }
}

#[test]
fn oversized_arguments_fall_back_to_passthrough() {
    let long = vec![b'x'; 70_000];
    let args = vec![b"GET".to_vec(), long.clone()];
    let (e, frame) = encode(&args, 9);
    assert_eq!(e, Encoding::Passthrough);
    assert_eq!(decode_all(&frame).unwrap().1, args);
    let set = vec![b"SET".to_vec(), b"k".to_vec(), long];
    assert_eq!(encode(&set, 9).0, Encoding::Binary, "a 4-byte length carries long values");
}

#[test]
fn malformed_frames_are_fatal_errors() {
    let kinds = |bytes: &[u8]| decode_all(bytes).map(|_| ()).unwrap_err();
    assert_eq!(kinds(&[0x7F, 0x00, 0, 1]).kind, DecodeErrorKind::UnknownOpcode(0x7F00));
    assert_eq!(kinds(&[0x7F, 0x00, 0, 1]).mux, Some(1));
    assert_eq!(kinds(&[0xF0, 0x00, 0, 1, 0, 9, 0, 0]).kind, DecodeErrorKind::UnknownModuleCommand(0x0009_0000));
    // SET with a 4 GiB value claim: rejected at once, nothing allocated.
    let set = vec![0x00, 0x01, 0, 0, 0, 1, b'k', 0xFF, 0xFF, 0xFF, 0xFF];
    assert!(matches!(kinds(&set).kind, DecodeErrorKind::LengthOverLimit(_)));
    // GETEX defines five flag bits; the sixth is undefined.
    let getex = [0x00, 0x06, 0, 0, 0, 1, b'k', 0b0010_0000];
    assert_eq!(kinds(&getex).kind, DecodeErrorKind::BadFlags(0b0010_0000));
    // LINSERT with a choice byte out of range.
    let linsert = [0x00, 0x4A, 0, 0, 0, 1, b'k', 7];
    assert_eq!(kinds(&linsert).kind, DecodeErrorKind::BadChoice(7));
    // ZRANGEBYLEX with LIMIT offset but no count.
    let zrbl = [0x00, 0xC7, 0, 0, 0, 1, b'z', 0, 1, b'a', 0, 1, b'b', 0b01];
    assert_eq!(kinds(&zrbl).kind, DecodeErrorKind::BadMask(1));
    // ZREVRANGE with a boolean byte of 2.
    let zr = [0x00, 0xC8, 0, 0, 0, 1, b'z', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    assert_eq!(kinds(&zr).kind, DecodeErrorKind::BadBool(2));
    // INCRBYFLOAT with NaN.
    let mut nan = vec![0x00, 0x0B, 0, 0, 0, 1, b'k'];
    nan.extend_from_slice(&f64::NAN.to_bits().to_be_bytes());
    assert_eq!(kinds(&nan).kind, DecodeErrorKind::NotANumber);
}

#[test]
fn passthrough_frames_carry_exactly_one_command() {
    let frame = |text: &[u8]| {
        let mut f = vec![0xFF, 0xFF, 0, 4];
        f.extend_from_slice(&(text.len() as u32).to_be_bytes());
        f.extend_from_slice(text);
        f
    };
    let (f, args, _) = decode_all(&frame(b"*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n")).unwrap();
    assert_eq!(f, Frame::Command { mux: 4 });
    assert_eq!(args, args_of("ECHO hi"));
    let (_, inline, _) = decode_all(&frame(b"PING hello\r\n")).unwrap();
    assert_eq!(inline, args_of("PING hello"));
    let err = |t: &[u8]| decode_all(&frame(t)).unwrap_err().kind;
    assert!(matches!(err(b"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n"), DecodeErrorKind::BadPassthrough(_)));
    assert!(matches!(err(b"*2\r\n$4\r\nECHO\r\n"), DecodeErrorKind::BadPassthrough(_)));
    assert!(matches!(err(b"\r\n"), DecodeErrorKind::BadPassthrough(_)));
    assert!(matches!(err(b"*x\r\n"), DecodeErrorKind::Resp(_)));
}

#[test]
fn mux_control_frames() {
    let mut out = Vec::new();
    control_frame(MUX_CREATE, 1, 42, &mut out);
    control_frame(MUX_CLOSE, 2, 42, &mut out);
    let mut dec = RespbDecoder::default();
    let mut args = CommandArgs::new();
    let r = dec.decode(&out, &mut args).unwrap();
    assert_eq!(r, Decoded::Frame { frame: Frame::MuxCreate { mux: 1, target: 42 }, consumed: 6 });
    let r = dec.decode(&out[6..], &mut args).unwrap();
    assert_eq!(r, Decoded::Frame { frame: Frame::MuxClose { mux: 2, target: 42 }, consumed: 6 });
    assert_eq!(dec.decode(&out[..5], &mut args).unwrap(), Decoded::NeedMore { hint: 1 });
}

// ---- Random commands drawn from the command table's argument trees ----

/// Append one random rendering of `arg` (and its children) to `out`.
fn render_arg(arg: &ArgSpec, rng: &mut Rng, out: &mut Vec<Vec<u8>>, tokens: &mut Vec<String>) {
    if arg.flags.contains(ArgFlags::OPTIONAL) && rng.chance(2) {
        return;
    }
    let reps = if arg.flags.contains(ArgFlags::MULTIPLE) { 1 + rng.below(3) } else { 1 };
    for rep in 0..reps {
        if let Some(t) = arg.token {
            if rep == 0 || arg.flags.contains(ArgFlags::MULTIPLE_TOKEN) {
                tokens.push(t.to_ascii_uppercase());
                out.push(random_case(t, rng));
            }
        }
        match arg.kind {
            ArgKind::PureToken => {}
            ArgKind::Oneof => {
                let c = &arg.children[rng.below(arg.children.len() as u64) as usize];
                render_arg(&ArgSpec { flags: ArgFlags::NONE, ..*c }, rng, out, tokens);
            }
            ArgKind::Block => arg.children.iter().for_each(|c| render_arg(c, rng, out, tokens)),
            ArgKind::Integer | ArgKind::UnixTime => out.push(random_integer_text(rng)),
            ArgKind::Double => out.push(random_double_text(rng)),
            ArgKind::String | ArgKind::Key | ArgKind::Pattern => out.push(random_string(rng)),
        }
    }
}

fn random_case(t: &str, rng: &mut Rng) -> Vec<u8> {
    if t.bytes().any(|b| b.is_ascii_lowercase()) && !t.bytes().any(|b| b.is_ascii_uppercase()) {
        return t.as_bytes().to_vec();
    }
    t.bytes().map(|b| if rng.chance(3) { b.to_ascii_lowercase() } else { b.to_ascii_uppercase() }).collect()
}

fn random_integer_text(rng: &mut Rng) -> Vec<u8> {
    match rng.below(8) {
        0 => b"+5".to_vec(),
        1 => b"007".to_vec(),
        2 => b"-0".to_vec(),
        3 => b"99999999999999999999".to_vec(),
        4 => b"1.5".to_vec(),
        _ => (rng.below(200) as i64 - 20).to_string().into_bytes(),
    }
}

fn random_double_text(rng: &mut Rng) -> Vec<u8> {
    let options: [&[u8]; 10] = [b"1.5", b"1.50", b"(2", b"+inf", b"-inf", b"inf", b"0.1", b"1e3", b"-7", b"3"];
    options[rng.below(options.len() as u64) as usize].to_vec()
}

fn random_string(rng: &mut Rng) -> Vec<u8> {
    match rng.below(12) {
        0 => vec![b'L'; 70_000],
        1 => Vec::new(),
        2 => b"*".to_vec(),
        3 => vec![0, 255, b'\r', b'\n'],
        _ => {
            let n = 1 + rng.below(6) as usize;
            (0..n).map(|_| b'a' + rng.below(26) as u8).collect()
        }
    }
}

fn random_command(spec: &CommandSpec, rng: &mut Rng) -> (Vec<Vec<u8>>, Vec<String>) {
    let mut out = Vec::new();
    let mut tokens = Vec::new();
    match spec.container {
        Some(c) => {
            out.push(random_case(c, rng));
            out.push(random_case(spec.short_name(), rng));
            tokens.push(spec.short_name().to_ascii_uppercase());
        }
        None => out.push(random_case(spec.name, rng)),
    }
    for a in spec.arguments {
        render_arg(a, rng, &mut out, &mut tokens);
    }
    (out, tokens)
}

/// Same meaning: same command, same multiset of arguments once tokens are
/// upper-cased, and the same leading positional arguments (options may move).
fn same_meaning(a: &[Vec<u8>], b: &[Vec<u8>], tokens: &[String]) -> bool {
    let norm = |v: &[Vec<u8>]| -> Vec<Vec<u8>> {
        v.iter()
            .map(|x| {
                let up = x.to_ascii_uppercase();
                if tokens.iter().any(|t| t.as_bytes() == up.as_slice()) {
                    up
                } else {
                    x.clone()
                }
            })
            .collect()
    };
    let (na, nb) = (norm(a), norm(b));
    let lead = na.iter().skip(1).take_while(|x| !tokens.iter().any(|t| t.as_bytes() == x.as_slice())).count();
    let mut sa = na.clone();
    let mut sb = nb.clone();
    sa[0] = sa[0].to_ascii_uppercase();
    sb[0] = sb[0].to_ascii_uppercase();
    sa.sort();
    sb.sort();
    sa == sb && na[1..=lead.min(na.len() - 1)] == nb[1..=lead.min(nb.len() - 1)]
}

#[test]
fn random_commands_from_the_command_table_keep_their_meaning() {
    let (binary, total) = check_random_commands(0x1234_5678_9ABC_DEF1, 60);
    // Most generated commands are well-formed; the layouts must carry a good share.
    assert!(binary * 3 > total, "only {binary} of {total} commands encoded in binary");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 8, ..Default::default() })]

    /// The same property from seeds proptest picks, a few commands per command spec.
    #[test]
    fn random_commands_keep_their_meaning_for_any_seed(seed in proptest::prelude::any::<u64>()) {
        check_random_commands(seed | 1, 4);
    }
}

/// Encode and decode `per_command` random invocations of every command in the
/// table; returns how many went binary out of how many.
fn check_random_commands(seed: u64, per_command: usize) -> (usize, usize) {
    let mut rng = Rng(seed);
    let mut binary = 0;
    let mut total = 0;
    let all = COMMANDS.iter().flat_map(|c| std::iter::once(c).chain(c.subcommands.iter()));
    let specs: Vec<&CommandSpec> = all.filter(|c| c.subcommands.is_empty()).collect();
    for spec in &specs {
        for _ in 0..per_command {
            let (args, tokens) = random_command(spec, &mut rng);
            let mux = rng.next_u64() as u16;
            let (enc, frame) = encode(&args, mux);
            let (f, back, consumed) = decode_all(&frame).unwrap_or_else(|e| panic!("{}: {e}", show(&args)));
            assert_eq!(consumed, frame.len());
            assert_eq!(f, Frame::Command { mux });
            total += 1;
            match enc {
                Encoding::Passthrough => assert_eq!(back, args),
                Encoding::Binary => {
                    binary += 1;
                    assert!(same_meaning(&args, &back, &tokens), "{} -> {}", show(&args), show(&back));
                    let (enc2, frame2) = encode(&back, mux);
                    assert_eq!((enc2, &frame2), (Encoding::Binary, &frame), "not idempotent: {}", show(&back));
                }
            }
        }
    }
    (binary, total)
}

#[test]
#[ignore]
fn report_binary_share_per_command() {
    let mut rng = Rng(7);
    let all = COMMANDS.iter().flat_map(|c| std::iter::once(c).chain(c.subcommands.iter()));
    for spec in all.filter(|c| c.subcommands.is_empty() && c.respb_opcode.is_some() || c.container.is_some()) {
        let mut bin = 0;
        let mut example = None;
        for _ in 0..200 {
            let (args, _) = random_command(spec, &mut rng);
            if encode(&args, 0).0 == Encoding::Binary {
                bin += 1;
            } else if (example.is_none() || args.len() < example.as_ref().map_or(0, |e: &Vec<Vec<u8>>| e.len()))
                && !args.iter().any(|a| a.len() > 1000)
            {
                example = Some(args);
            }
        }
        if bin < 20 {
            println!("{:24} {bin:3}/200  e.g. {}", spec.name, example.map(|e| show(&e)).unwrap_or_default());
        }
    }
}

/// What `frame` decodes to under the pre-authentication bounds: its
/// argument count, or the error's text.
fn unauthenticated(frame: &[u8]) -> Result<usize, String> {
    let mut dec = RespbDecoder::new(RespbLimits::default().unauthenticated(true));
    let mut args = CommandArgs::new();
    match dec.decode(frame, &mut args) {
        Ok(Decoded::Frame { consumed, .. }) => {
            assert_eq!(consumed, frame.len());
            Ok(args.len())
        }
        Ok(Decoded::NeedMore { hint }) => Err(format!("needs {hint} more")),
        Err(e) => Err(e.to_string()),
    }
}

#[test]
fn before_authentication_frames_are_held_to_the_bounds_resp_has() {
    let words = |s: &str| s.split(' ').map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>();
    assert_eq!(unauthenticated(&encode(&words("AUTH user secret"), 1).1), Ok(3));
    assert_eq!(unauthenticated(&encode(&words("HELLO 3 AUTH user secret SETNAME app"), 1).1), Ok(7));
    // A SET claiming a 512 MiB value fails at its length field.
    let mut set = encode(&words("SET k v"), 1).1;
    set.truncate(7);
    set.extend_from_slice(&(512u32 << 20).to_be_bytes());
    assert_eq!(unauthenticated(&set), Err("ERR Protocol error: unauthenticated bulk length".to_string()));
    let value = vec![b'v'; 16 * 1024];
    let fits = encode(&[b"SET".to_vec(), b"k".to_vec(), value.clone()], 1).1;
    assert_eq!(unauthenticated(&fits), Ok(3));
    let over = encode(&[b"SET".to_vec(), b"k".to_vec(), [&value[..], b"v"].concat()], 1).1;
    assert_eq!(unauthenticated(&over), Err("ERR Protocol error: unauthenticated bulk length".to_string()));
    // More arguments than RESP allows, each of them small.
    let mset = encode(&words("MSET a 1 b 2 c 3 d 4 e 5"), 1).1;
    assert_eq!(unauthenticated(&mset), Err("ERR Protocol error: unauthenticated multibulk length".to_string()));
    // Many arguments of the largest length: the frame fails once its
    // buffered bytes pass the bound, before the rest of it is sent.
    let mut many = vec![b"MSET".to_vec()];
    for i in 0..12 {
        many.push(format!("k{i}").into_bytes());
        many.push(value.clone());
    }
    let many = encode(&many, 1).1;
    assert_eq!(
        unauthenticated(&many[..UNAUTHENTICATED_MAX_FRAME + 1]),
        Err("ERR Protocol error: unauthenticated frame length".to_string())
    );
    // A passthrough frame is bounded by its length field, and the RESP
    // inside it by RESP's bounds.
    let mut pass = vec![0xFF, 0xFF, 0, 1];
    pass.extend_from_slice(&(1u32 << 20).to_be_bytes());
    assert_eq!(unauthenticated(&pass), Err("ERR Protocol error: unauthenticated frame length".to_string()));
    let text = b"*11\r\n$1\r\na\r\n";
    let mut pass = vec![0xFF, 0xFF, 0, 1];
    pass.extend_from_slice(&(text.len() as u32).to_be_bytes());
    pass.extend_from_slice(text);
    assert_eq!(unauthenticated(&pass), Err("ERR Protocol error: unauthenticated multibulk length".to_string()));
    // The same frames decode once the bounds are lifted.
    let mut dec = RespbDecoder::new(RespbLimits::default().unauthenticated(true));
    dec.set_limits(RespbLimits::default());
    let mut args = CommandArgs::new();
    assert!(matches!(dec.decode(&many, &mut args), Ok(Decoded::Frame { .. })));
    assert_eq!(args.len(), 25);
}
