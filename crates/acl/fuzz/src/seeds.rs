//! Valid inputs for each target: ACL files and rule lists as people write
//! them (the rules of kvik-acl's unit tests and of the differential tests
//! against redis-server), so a fuzzer starts from inputs that reach every
//! kind of rule instead of searching for the word `user`.

/// Rule lists, one per user: flags, passwords, commands, categories,
/// subcommands, first arguments, key and channel patterns, selectors.
const RULES: &[&[&str]] = &[
    &["on", ">pw", "+get", "~a*", "&ch*"],
    &["reset"],
    &["+@ALL", "-GET", "+select|0", "+select|1"],
    &["%R~", "~", "&"],
    &["%RW~x", "%R~y", "%W~y", "~z", "%W~z"],
    &["(~x +get)", "(%R~y +@read)"],
    &["on", "+@all", "-@all", "+get", "-@read"],
    &["+client|list", "+client|kill", "+acl"],
    &["-@all", "+select|0"],
    &["+@read", "+@write", "-@dangerous"],
    &["on", ">a", ">b", ">a", "<b", "nopass", ">c"],
    &["on", "+get", "+set", "+publish", "+subscribe", "+psubscribe", "~a*", "&ch*", "+select|0"],
    &["on", "+@all", "%R~r*", "%W~w*"],
    &["on", "+get", "~a", "(+set ~b)"],
    &["on", ">pw", "+get", "+set", "~a*", "&ch*"],
    &["+@all", "-get", "+select|0", "-@admin", "+config|get", "+client|list"],
    &["-@all", "+select|0", "+select|1", "+select|0", "+debug|object"],
    &["%R~y", "%W~y", "~z", "%W~z", "%RW~x", "%R~x", "%R~r:*", "%W~w:*", "&a", "&b", "&a"],
    &["resetkeys", "allkeys", "resetchannels"],
    &["%R~", "~", "&", "allchannels"],
    &["#2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6"],
    &["resetpass", "nopass"],
    &["on", "(~x +get)", "(%R~y +@read)", "(+set ~s &c)"],
    &["on", "clearselectors"],
    &["on", "nopass", "+@hash", "~h:*", "(+get ~g)"],
    &["on", "nopass", "allkeys", "+get", "+config|get", "+select|0", "+acl|whoami", "+client"],
    &["on", "nopass", "+@all", "%R~r*", "%W~w*", "~rw*"],
    &["on", "nopass", "+@all", "allkeys", "&news.*", "&exact"],
    &["on", "nopass", "+multi", "+exec", "+get", "+discard", "~a*"],
    &["on", "+get", "+publish", "~a*", "&c*", "+select|0"],
    &["on", ">pw", "+@all", "~*", "&*", "-set", "skip-sanitize-payload", "sanitize-payload"],
    &["on", "+@all", "-@all", "+@string", "-@dangerous", "+eval", "+evalsha", "%R~cache:*", "resetchannels"],
];

/// Seeds of target `name` (empty for an unknown one).
pub fn for_target(name: &str) -> Vec<Vec<u8>> {
    match name {
        "acl_file" => {
            let mut files = vec![
                b"user alice on >pw ~a* +get\n\nuser default on nopass ~* &* +@all\n".to_vec(),
                b"user default on nopass sanitize-payload ~* &* +@all\r\n".to_vec(),
                b"user bob off resetchannels -@all (~x +get) (%R~y resetchannels &c -@all +@read)\n".to_vec(),
            ];
            // Every rule list as one user's line, all of them in one file.
            let mut all = Vec::new();
            for (i, rules) in RULES.iter().enumerate() {
                let line = format!("user u{i} {}\n", rules.join(" "));
                files.push(line.clone().into_bytes());
                all.extend_from_slice(line.as_bytes());
            }
            files.push(all);
            files
        }
        "rules" => RULES.iter().map(|rules| rules.join("\0").into_bytes()).collect(),
        _ => Vec::new(),
    }
}
