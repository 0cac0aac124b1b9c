//! Pub/sub commands: SUBSCRIBE and friends, PUBLISH, SPUBLISH, PUBSUB.
//!
//! Subscriptions belong to the session ([`crate::registries::pubsub::Subscriptions`]);
//! the messages themselves reach the client through its connection, which
//! drains the session's inbox (see `connection.rs`). Every (un)subscription
//! is confirmed with its own reply, a push in RESP3, as Redis confirms it.

use kvik_protocol::ReplySink;

use super::{help, Ctx, ReplyTarget};
use crate::registries::pubsub::{write_message, Kind};

handlers! {
    SUBSCRIBE(c) => subscribe(c, Kind::Channel),
    SSUBSCRIBE(c) => subscribe(c, Kind::Shard),
    UNSUBSCRIBE(c) => unsubscribe(c, Kind::Channel),
    SUNSUBSCRIBE(c) => unsubscribe(c, Kind::Shard),
    PSUBSCRIBE(c) => psubscribe(c),
    PUNSUBSCRIBE(c) => punsubscribe(c),
    PUBLISH(c) => publish(c, Kind::Channel),
    SPUBLISH(c) => publish(c, Kind::Shard),
    PUBSUB_CHANNELS(c) => channels(c, Kind::Channel),
    PUBSUB_SHARDCHANNELS(c) => channels(c, Kind::Shard),
    PUBSUB_NUMSUB(c) => numsub(c, Kind::Channel),
    PUBSUB_SHARDNUMSUB(c) => numsub(c, Kind::Shard),
    PUBSUB_NUMPAT(c) => {
        let n = c.state.pubsub.numpat();
        c.reply(|s| s.integer(i64::try_from(n).unwrap_or(i64::MAX)));
    },
    PUBSUB_HELP(c) => pubsub_help(c),
}

/// One confirmation: `[kind, channel or nil, count]`, a push in RESP3.
fn confirm(s: &mut dyn ReplySink, kind: &[u8], channel: Option<&[u8]>, count: usize) {
    s.push(3);
    s.bulk(kind);
    match channel {
        Some(ch) => s.bulk(ch),
        None => s.null(),
    }
    s.integer(i64::try_from(count).unwrap_or(i64::MAX));
}

fn subscribe_word(kind: Kind, sub: bool) -> &'static [u8] {
    match (kind, sub) {
        (Kind::Channel, true) => b"subscribe",
        (Kind::Channel, false) => b"unsubscribe",
        (Kind::Shard, true) => b"ssubscribe",
        (Kind::Shard, false) => b"sunsubscribe",
    }
}

/// `SUBSCRIBE channel ...` / `SSUBSCRIBE shardchannel ...`
fn subscribe<T: ReplyTarget>(c: &mut Ctx<'_, T>, kind: Kind) {
    for i in 1..c.argc() {
        let channel = c.arg(i);
        let count = c.session.subscriptions.subscribe(&c.state.pubsub, kind, channel);
        c.push(|s| confirm(s, subscribe_word(kind, true), Some(channel), count));
    }
}

/// `UNSUBSCRIBE [channel ...]` / `SUNSUBSCRIBE [shardchannel ...]`: the
/// named channels, or every one; with none to leave, one confirmation
/// without a channel.
fn unsubscribe<T: ReplyTarget>(c: &mut Ctx<'_, T>, kind: Kind) {
    let named: Vec<Vec<u8>> = (1..c.argc()).map(|i| c.arg(i).to_vec()).collect();
    let targets: Vec<Vec<u8>> = if named.is_empty() {
        c.session.subscriptions.channels(kind).iter().map(|ch| ch.to_vec()).collect()
    } else {
        named
    };
    let word = subscribe_word(kind, false);
    if targets.is_empty() {
        let count = match kind {
            Kind::Channel => c.session.subscriptions.count(),
            Kind::Shard => c.session.subscriptions.shard_count(),
        };
        return c.push(|s| confirm(s, word, None, count));
    }
    for channel in &targets {
        let count = c.session.subscriptions.unsubscribe(&c.state.pubsub, kind, channel);
        c.push(|s| confirm(s, word, Some(channel), count));
    }
}

/// `PSUBSCRIBE pattern ...`
fn psubscribe<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    for i in 1..c.argc() {
        let pattern = c.arg(i);
        let count = c.session.subscriptions.psubscribe(&c.state.pubsub, pattern);
        c.push(|s| confirm(s, b"psubscribe", Some(pattern), count));
    }
}

/// `PUNSUBSCRIBE [pattern ...]`
fn punsubscribe<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let named: Vec<Vec<u8>> = (1..c.argc()).map(|i| c.arg(i).to_vec()).collect();
    let targets: Vec<Vec<u8>> =
        if named.is_empty() { c.session.subscriptions.patterns().iter().map(|p| p.to_vec()).collect() } else { named };
    if targets.is_empty() {
        let count = c.session.subscriptions.count();
        return c.push(|s| confirm(s, b"punsubscribe", None, count));
    }
    for pattern in &targets {
        let count = c.session.subscriptions.punsubscribe(&c.state.pubsub, pattern);
        c.push(|s| confirm(s, b"punsubscribe", Some(pattern), count));
    }
}

/// `PUBLISH channel message` / `SPUBLISH shardchannel message`: how many
/// subscriptions received it.
///
/// A client subscribed to the channel itself gets its copy before the
/// reply, as Redis writes the message into every subscriber's output while
/// publishing, and only then the count.
fn publish<T: ReplyTarget>(c: &mut Ctx<'_, T>, kind: Kind) {
    let n = c.state.pubsub.publish(kind, c.arg(1), c.arg(2));
    let (protocol, listening) = (c.session.protocol, c.session.subscriptions.active());
    while let Some(msg) = c.session.subscriptions.inbox().and_then(|inbox| inbox.try_recv()) {
        c.push(|s| write_message(s, protocol, listening, &msg));
    }
    c.reply(|s| s.integer(i64::try_from(n).unwrap_or(i64::MAX)));
}

/// `PUBSUB CHANNELS [pattern]` / `PUBSUB SHARDCHANNELS [pattern]`
fn channels<T: ReplyTarget>(c: &mut Ctx<'_, T>, kind: Kind) {
    let pattern = (c.argc() > 2).then(|| c.arg(2));
    let list = c.state.pubsub.channels(kind, pattern);
    c.reply(|s| {
        s.array(list.len());
        for ch in &list {
            s.bulk(ch);
        }
    });
}

/// `PUBSUB NUMSUB [channel ...]` / `PUBSUB SHARDNUMSUB [shardchannel ...]`:
/// a flat list of channel and count.
fn numsub<T: ReplyTarget>(c: &mut Ctx<'_, T>, kind: Kind) {
    let counts: Vec<(&[u8], usize)> =
        (2..c.argc()).map(|i| (c.arg(i), c.state.pubsub.numsub(kind, c.arg(i)))).collect();
    c.reply(|s| {
        s.array(counts.len() * 2);
        for (ch, n) in &counts {
            s.bulk(ch);
            s.integer(i64::try_from(*n).unwrap_or(i64::MAX));
        }
    });
}

fn pubsub_help<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    help(
        c,
        &[
            "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
        ],
    );
}
