//! Geo commands: positions kept as sorted set scores (see [`crate::types::geo`]).
//!
//! GEOADD is ZADD with scores computed from coordinates; the searches
//! (GEOSEARCH, GEOSEARCHSTORE and the older GEORADIUS family) share one
//! engine: parse the shape and options as Redis does, read the cells around
//! the centre, keep the members inside the shape, sort if asked, then reply
//! or store.

use kvik_protocol::number::parse_i64;
use kvik_protocol::ReplySink;

use super::access::{self, count_reply, WrongType};
use super::keyword::Keyword;
use super::zset::{build, limits, store_zset, zadd_at, zset_at, ZaddOptions};
use super::{Ctx, ReplyTarget, SYNTAX_ERROR, WRONGTYPE};
use crate::effects::changes::EventClass;
use crate::inline_list::InlineList;
use crate::keyspace::now_ms;
use crate::types::double::parse_score;
use crate::types::float80::F80;
use crate::types::geo::{self, Search, Shape};
use crate::types::zset::{ScoreBound, ZSetValue};

handlers! {
    GEOADD(c) => geoadd(c),
    GEODIST(c) => geodist(c),
    GEOHASH(c) => geohash(c),
    GEOPOS(c) => geopos(c),
    GEOSEARCH(c) => search(c, Kind::Search),
    GEOSEARCHSTORE(c) => search(c, Kind::SearchStore),
    GEORADIUS(c) => search(c, Kind::Radius { store: true }),
    GEORADIUS_RO(c) => search(c, Kind::Radius { store: false }),
    GEORADIUSBYMEMBER(c) => search(c, Kind::ByMember { store: true }),
    GEORADIUSBYMEMBER_RO(c) => search(c, Kind::ByMember { store: false }),
}

const NOT_A_FLOAT: &[u8] = b"ERR value is not a valid float";
const BAD_UNIT: &[u8] = b"ERR unsupported unit provided. please use M, KM, FT, MI";
const BAD_MEMBER: &[u8] = b"ERR could not decode requested zset member";

/// A longitude, latitude pair from two arguments, checked against the
/// ranges a geohash can encode.
fn lon_lat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), Vec<u8>> {
    let lon = parse_score(lon).ok_or(NOT_A_FLOAT.to_vec())?;
    let lat = parse_score(lat).ok_or(NOT_A_FLOAT.to_vec())?;
    if !(geo::LON_MIN..=geo::LON_MAX).contains(&lon) || !(geo::LAT_MIN..=geo::LAT_MAX).contains(&lat) {
        return Err(format!("ERR invalid longitude,latitude pair {lon:.6},{lat:.6}").into_bytes());
    }
    Ok((lon, lat))
}

/// A distance and its unit: (distance in the unit, metres per unit).
fn distance_arg(value: &[u8], unit: &[u8], what: &str) -> Result<(f64, f64), Vec<u8>> {
    let d = parse_score(value).ok_or_else(|| format!("ERR need numeric {what}").into_bytes())?;
    if d < 0.0 {
        return Err(b"ERR radius cannot be negative".to_vec());
    }
    let per_unit = geo::unit_to_meters(unit).ok_or(BAD_UNIT.to_vec())?;
    Ok((d, per_unit))
}

/// `GEOADD key [NX|XX] [CH] longitude latitude member [...]`
fn geoadd<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let mut o = ZaddOptions { first: 2, ..ZaddOptions::default() };
    while o.first < c.argc() {
        match Keyword::of(c.arg(o.first)).as_bytes() {
            b"nx" => o.nx = true,
            b"xx" => o.xx = true,
            b"ch" => o.ch = true,
            _ => break,
        }
        o.first += 1;
    }
    let rest = c.argc() - o.first;
    if !rest.is_multiple_of(3) || rest == 0 || (o.xx && o.nx) {
        return c.error(SYNTAX_ERROR);
    }
    let mut pairs = InlineList::<(f64, &[u8]), 4>::new();
    for i in (o.first..c.argc()).step_by(3) {
        let (lon, lat) = match lon_lat(c.arg(i), c.arg(i + 1)) {
            Ok(p) => p,
            Err(msg) => return c.error(&msg),
        };
        let Some(score) = geo::encode(lon, lat) else { return c.error(NOT_A_FLOAT) };
        pairs.push((score, c.arg(i + 2)));
    }
    match zadd_at(c, &o, &pairs) {
        Err(msg) => c.error(msg),
        Ok(out) => {
            let n = if o.ch { out.added + out.updated } else { out.added };
            c.reply(|s| s.integer(count_reply(n)));
        }
    }
}

/// Scores of `members` in the sorted set at `key` (`None` for missing
/// members, all `None` for a missing key).
fn scores_of<T: ReplyTarget>(c: &Ctx<'_, T>, key: &[u8], members: &[&[u8]]) -> Result<Vec<Option<f64>>, WrongType> {
    let mut shard = c.state.keyspace.lock_key(key);
    let z = zset_at(shard.db(c.session.db), key, now_ms())?;
    Ok(members.iter().map(|m| z.and_then(|z| z.score(m))).collect())
}

/// `GEODIST key member1 member2 [unit]`
fn geodist<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let per_unit = match c.argc() {
        5 => match geo::unit_to_meters(c.arg(4)) {
            Some(u) => u,
            None => return c.error(BAD_UNIT),
        },
        4 => 1.0,
        _ => return c.error(SYNTAX_ERROR),
    };
    let (a, b) = (c.arg(2), c.arg(3));
    match scores_of(c, c.arg(1), &[a, b]) {
        Err(WrongType) => c.error(WRONGTYPE),
        Ok(s) => match (s[0], s[1]) {
            (Some(x), Some(y)) => {
                let ((lon1, lat1), (lon2, lat2)) = (geo::decode(x), geo::decode(y));
                let text = format!("{:.4}", geo::distance(lon1, lat1, lon2, lat2) / per_unit);
                c.reply(|s| s.bulk(text.as_bytes()));
            }
            _ => c.reply(|s| s.null()),
        },
    }
}

/// `GEOHASH key [member ...]`
fn geohash<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let members: Vec<&[u8]> = (2..c.argc()).map(|i| c.arg(i)).collect();
    match scores_of(c, c.arg(1), &members) {
        Err(WrongType) => c.error(WRONGTYPE),
        Ok(scores) => c.reply(|s| {
            s.array(scores.len());
            for score in &scores {
                match score {
                    Some(x) => s.bulk(&geo::geohash_text(*x)),
                    None => s.null(),
                }
            }
        }),
    }
}

/// A coordinate as Redis prints it (a long double with 17 decimals, trailing zeros removed).
fn write_coordinate(s: &mut dyn ReplySink, d: f64) {
    s.double_text(d, &F80::from_f64(d).to_human());
}

/// `GEOPOS key [member ...]`
fn geopos<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let members: Vec<&[u8]> = (2..c.argc()).map(|i| c.arg(i)).collect();
    match scores_of(c, c.arg(1), &members) {
        Err(WrongType) => c.error(WRONGTYPE),
        Ok(scores) => c.reply(|s| {
            s.array(scores.len());
            for score in &scores {
                match score {
                    Some(x) => {
                        let (lon, lat) = geo::decode(*x);
                        s.array(2);
                        write_coordinate(s, lon);
                        write_coordinate(s, lat);
                    }
                    None => s.null_array(),
                }
            }
        }),
    }
}

/// Which search command runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// GEOSEARCH.
    Search,
    /// GEOSEARCHSTORE.
    SearchStore,
    /// GEORADIUS(_RO); `store` allows STORE/STOREDIST.
    Radius { store: bool },
    /// GEORADIUSBYMEMBER(_RO).
    ByMember { store: bool },
}

impl Kind {
    fn is_search(self) -> bool {
        matches!(self, Kind::Search | Kind::SearchStore)
    }

    fn may_store(self) -> bool {
        matches!(self, Kind::Radius { store: true } | Kind::ByMember { store: true })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    None,
    Asc,
    Desc,
}

/// Everything a search was asked for.
struct Query<'a> {
    centre: Option<(f64, f64)>,
    shape: Option<Shape>,
    /// Metres per unit of the radius or box, for distances in replies.
    per_unit: f64,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    any: bool,
    count: usize,
    order: Order,
    store: Option<&'a [u8]>,
    storedist: bool,
    from_member: bool,
}

/// One member found by a search.
struct Found {
    member: Vec<u8>,
    score: f64,
    dist_m: f64,
    lon: f64,
    lat: f64,
}

/// Parse a search's centre, shape and options, in Redis's order; `z` is
/// the source set (missing members of a missing key are not looked up).
fn parse_query<'a, T: ReplyTarget>(c: &Ctx<'a, T>, kind: Kind, z: Option<&ZSetValue>) -> Result<Query<'a>, Vec<u8>> {
    let mut q = Query {
        centre: None,
        shape: None,
        per_unit: 1.0,
        withdist: false,
        withhash: false,
        withcoord: false,
        any: false,
        count: 0,
        order: Order::None,
        store: None,
        storedist: false,
        from_member: false,
    };
    let member_centre = |member: &[u8]| -> Result<(f64, f64), Vec<u8>> {
        z.and_then(|z| z.score(member)).map(geo::decode).ok_or(BAD_MEMBER.to_vec())
    };
    let base = match kind {
        Kind::Radius { .. } => {
            q.centre = Some(lon_lat(c.arg(2), c.arg(3))?);
            let (r, u) = distance_arg(c.arg(4), c.arg(5), "radius")?;
            q.shape = Some(Shape::Radius { radius_m: r * u });
            q.per_unit = u;
            6
        }
        Kind::ByMember { .. } => {
            if z.is_some() {
                q.centre = Some(member_centre(c.arg(2))?);
                let (r, u) = distance_arg(c.arg(3), c.arg(4), "radius")?;
                q.shape = Some(Shape::Radius { radius_m: r * u });
                q.per_unit = u;
            }
            5
        }
        Kind::Search => 2,
        Kind::SearchStore => {
            q.store = Some(c.arg(1));
            3
        }
    };
    let remaining = c.argc() - base;
    let mut i = 0;
    let (mut from_loc, mut by_radius, mut by_box) = (false, false, false);
    while i < remaining {
        let arg = Keyword::of(c.arg(base + i));
        let arg = arg.as_bytes();
        let at = |k: usize| c.arg(base + i + k);
        match arg {
            b"withdist" => q.withdist = true,
            b"withhash" => q.withhash = true,
            b"withcoord" => q.withcoord = true,
            b"any" => q.any = true,
            b"asc" => q.order = Order::Asc,
            b"desc" => q.order = Order::Desc,
            b"count" if i + 1 < remaining => {
                let n = parse_i64(at(1)).ok_or(super::NOT_AN_INTEGER.to_vec())?;
                if n <= 0 {
                    return Err(b"ERR COUNT must be > 0".to_vec());
                }
                q.count = usize::try_from(n).unwrap_or(usize::MAX);
                i += 1;
            }
            b"store" | b"storedist" if i + 1 < remaining && kind.may_store() => {
                q.store = Some(at(1));
                q.storedist = arg == b"storedist";
                i += 1;
            }
            b"storedist" if kind == Kind::SearchStore => q.storedist = true,
            b"frommember" if i + 1 < remaining && kind.is_search() && !from_loc => {
                if z.is_some() {
                    q.centre = Some(member_centre(at(1))?);
                }
                q.from_member = true;
                i += 1;
            }
            b"fromlonlat" if i + 2 < remaining && kind.is_search() && !q.from_member => {
                q.centre = Some(lon_lat(at(1), at(2))?);
                from_loc = true;
                i += 2;
            }
            b"byradius" if i + 2 < remaining && kind.is_search() && !by_box => {
                let (r, u) = distance_arg(at(1), at(2), "radius")?;
                q.shape = Some(Shape::Radius { radius_m: r * u });
                q.per_unit = u;
                by_radius = true;
                i += 2;
            }
            b"bybox" if i + 3 < remaining && kind.is_search() && !by_radius => {
                let w = parse_score(at(1)).ok_or(b"ERR need numeric width".to_vec())?;
                let h = parse_score(at(2)).ok_or(b"ERR need numeric height".to_vec())?;
                if h < 0.0 || w < 0.0 {
                    return Err(b"ERR height or width cannot be negative".to_vec());
                }
                let u = geo::unit_to_meters(at(3)).ok_or(BAD_UNIT.to_vec())?;
                q.shape = Some(Shape::Box { width_m: w * u, height_m: h * u });
                q.per_unit = u;
                by_box = true;
                i += 3;
            }
            _ => return Err(SYNTAX_ERROR.to_vec()),
        }
        i += 1;
    }
    if q.store.is_some() && (q.withdist || q.withhash || q.withcoord) {
        let what = if kind == Kind::SearchStore { "GEOSEARCHSTORE" } else { "STORE option in GEORADIUS" };
        return Err(format!("ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options").into_bytes());
    }
    let name = String::from_utf8_lossy(c.arg(0)).into_owned();
    if kind.is_search() && !(q.from_member || from_loc) {
        return Err(format!("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}").into_bytes());
    }
    if kind.is_search() && !(by_radius || by_box) {
        return Err(format!("ERR exactly one of BYRADIUS and BYBOX can be specified for {name}").into_bytes());
    }
    if q.any && q.count == 0 {
        return Err(b"ERR the ANY argument requires COUNT argument".to_vec());
    }
    Ok(q)
}

/// Members of `z` inside the search, in the order Redis visits them; at
/// most `limit` (0: all).
fn find(z: &ZSetValue, search: &Search, limit: usize) -> Vec<Found> {
    let mut found = Vec::new();
    for (min, max) in search.score_ranges() {
        if limit != 0 && found.len() >= limit {
            break;
        }
        let lo = z.rank_above_score(&ScoreBound { value: min, exclusive: false });
        let hi = z.rank_after_score(&ScoreBound { value: max, exclusive: true });
        for (member, score) in z.iter_from(lo).take(hi.saturating_sub(lo)) {
            let (lon, lat) = geo::decode(score);
            if let Some(dist_m) = search.distance_if_inside(lon, lat) {
                found.push(Found { member: member.to_vec(), score, dist_m, lon, lat });
            }
            if limit != 0 && found.len() >= limit {
                break;
            }
        }
    }
    found
}

/// The keys a search may write: GEOSEARCHSTORE's destination, or every
/// argument after a STORE/STOREDIST word (locking one too many is harmless;
/// the parse decides which one counts).
fn store_candidates<'a, T: ReplyTarget>(c: &Ctx<'a, T>, kind: Kind) -> Vec<&'a [u8]> {
    match kind {
        Kind::SearchStore => vec![c.arg(1)],
        k if k.may_store() => (1..c.argc().saturating_sub(1))
            .filter(|&i| c.arg(i).eq_ignore_ascii_case(b"store") || c.arg(i).eq_ignore_ascii_case(b"storedist"))
            .map(|i| c.arg(i + 1))
            .collect(),
        _ => Vec::new(),
    }
}

/// The search commands.
fn search<T: ReplyTarget>(c: &mut Ctx<'_, T>, kind: Kind) {
    let src = if kind == Kind::SearchStore { c.arg(2) } else { c.arg(1) };
    let (db, now, limits) = (c.session.db, now_ms(), limits(c));
    let state = c.state;
    let ks = &state.keyspace;
    let mut keys = store_candidates(c, kind);
    keys.push(src);
    let mut lock = ks.lock_keys(db, keys.iter().copied());
    let outcome = {
        let z = match zset_at(lock.shard_for(ks, src).db(db), src, now) {
            Err(WrongType) => return c.error(WRONGTYPE),
            Ok(z) => z,
        };
        let q = match parse_query(c, kind, z) {
            Ok(q) => q,
            Err(msg) => return c.error(&msg),
        };
        match z {
            Some(z) => Ok((run_query(z, &q), q)),
            None => Err(q),
        }
    };
    match outcome {
        Err(q) => {
            // No source: an empty result, and a STORE deletes its destination.
            if let Some(dest) = q.store {
                if lock.shard_for(ks, dest).db(db).remove(dest).is_some() {
                    c.notify(EventClass::Generic, "del", dest);
                }
                drop(lock);
                return c.reply(|s| s.integer(0));
            }
            drop(lock);
            c.reply(|s| s.array(0));
        }
        Ok((Err(msg), _)) => {
            drop(lock);
            c.error(msg);
        }
        Ok((Ok(found), q)) => match q.store {
            Some(dest) => {
                let items =
                    found.iter().map(|f| (f.member.clone(), if q.storedist { f.dist_m / q.per_unit } else { f.score }));
                let (n, stored) = store_zset(lock.shard_for(ks, dest).db(db), dest, build(items, limits));
                let event = if kind == Kind::SearchStore { "geosearchstore" } else { "georadiusstore" };
                access::notify_store_counted(c, stored, EventClass::ZSet, event, dest, n as u64);
                drop(lock);
                c.reply(|s| s.integer(count_reply(n)));
            }
            None => {
                drop(lock);
                reply_found(c, &q, &found);
            }
        },
    }
}

/// Run a parsed query over `z`: members inside the shape, sorted as asked,
/// cut to COUNT.
fn run_query(z: &ZSetValue, q: &Query<'_>) -> Result<Vec<Found>, &'static [u8]> {
    let (Some((lon, lat)), Some(shape)) = (q.centre, q.shape) else { return Err(SYNTAX_ERROR) };
    let order = if q.count != 0 && q.order == Order::None && !q.any { Order::Asc } else { q.order };
    let search = Search { lon, lat, shape };
    let mut found = find(z, &search, if q.any { q.count } else { 0 });
    match order {
        Order::Asc => found.sort_by(|a, b| a.dist_m.total_cmp(&b.dist_m)),
        Order::Desc => found.sort_by(|a, b| b.dist_m.total_cmp(&a.dist_m)),
        Order::None => {}
    }
    if q.count != 0 {
        found.truncate(q.count);
    }
    Ok(found)
}

fn reply_found<T: ReplyTarget>(c: &mut Ctx<'_, T>, q: &Query<'_>, found: &[Found]) {
    let extras = usize::from(q.withdist) + usize::from(q.withhash) + usize::from(q.withcoord);
    c.reply(|s| {
        s.array(found.len());
        for f in found {
            if extras > 0 {
                s.array(extras + 1);
            }
            s.bulk(&f.member);
            if q.withdist {
                s.bulk(format!("{:.4}", f.dist_m / q.per_unit).as_bytes());
            }
            if q.withhash {
                s.integer(f.score as i64);
            }
            if q.withcoord {
                s.array(2);
                write_coordinate(s, f.lon);
                write_coordinate(s, f.lat);
            }
        }
    });
}
