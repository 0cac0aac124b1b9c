//! Differential tests of the geo commands against redis-server: scores,
//! positions, distances, hashes and every search form must be identical,
//! byte for byte. Each case starts with `FLUSHALL`.

mod common;

use common::diff::*;

const SICILY: &str = "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania 12.758489 38.788135 edge1 17.241510 38.788135 edge2 14.2 37.1 p3";

fn cases() -> Vec<Case> {
    vec![
        lines(
            "geoadd",
            &[
                SICILY,
                "ZRANGE Sicily 0 -1 WITHSCORES",
                "GEOADD Sicily NX 13.361389 38.115556 Palermo 1 1 new",
                "GEOADD Sicily XX CH 13.4 38.1 Palermo 2 2 other",
                "GEOADD Sicily CH 13.4 38.1 Palermo",
                "GEOADD Sicily NX XX 1 1 a",
                "GEOADD Sicily 1 1",
                "GEOADD Sicily CH CH CH",
                "GEOADD Sicily 181 1 a",
                "GEOADD Sicily 1 86 a",
                "GEOADD Sicily -180 -85.05112878 corner",
                "GEOADD Sicily x 1 a",
                "GEOADD Sicily 1 nan a",
                "GEOADD Sicily GT 1 1 a",
                "ZSCORE Sicily corner",
                "OBJECT ENCODING Sicily",
                "SET str v",
                "GEOADD str 1 1 a",
                "GEOADD newkey XX 1 1 a",
                "EXISTS newkey",
            ],
        ),
        lines(
            "geodist geohash geopos",
            &[
                SICILY,
                "GEODIST Sicily Palermo Catania",
                "GEODIST Sicily Palermo Catania km",
                "GEODIST Sicily Palermo Catania MI",
                "GEODIST Sicily Palermo Catania ft",
                "GEODIST Sicily Palermo Catania yd",
                "GEODIST Sicily Palermo Catania km extra",
                "GEODIST Sicily Palermo missing",
                "GEODIST missing a b",
                "GEODIST Sicily Palermo Palermo",
                "GEOHASH Sicily Palermo Catania missing edge1",
                "GEOHASH missing a b",
                "GEOHASH Sicily",
                "GEOPOS Sicily Palermo missing Catania",
                "GEOPOS missing a",
                "GEOPOS Sicily",
                "SET str v",
                "GEOPOS str a",
                "GEOHASH str a",
                "GEODIST str a b",
                "HELLO 3",
                "GEOPOS Sicily Palermo",
                "GEODIST Sicily Palermo Catania",
            ],
        ),
        lines(
            "geosearch",
            &[
                SICILY,
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km DESC WITHDIST WITHCOORD WITHHASH",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC WITHDIST",
                "GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 100 km WITHDIST",
                "GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 500 50 km ASC",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1000 km COUNT 2",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1000 km COUNT 2 ANY",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1000 km COUNT 2 DESC",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1000 km ANY",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1000 km COUNT 0",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1000 km COUNT x",
                "GEOSEARCH Sicily FROMLONLAT 15 37",
                "GEOSEARCH Sicily BYRADIUS 10 km",
                "geosearch Sicily BYRADIUS 10 km",
                "GEOSEARCH Sicily FROMLONLAT 15 37 FROMMEMBER Palermo BYRADIUS 10 km",
                "GEOSEARCH Sicily FROMMEMBER Palermo FROMLONLAT 15 37 BYRADIUS 10 km",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 10 km BYBOX 1 1 km",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS -1 km",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS x km",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 yd",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX -1 1 km",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX x 1 km",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 x km",
                "GEOSEARCH Sicily FROMMEMBER nobody BYRADIUS 10 km",
                "GEOSEARCH Sicily FROMLONLAT 200 37 BYRADIUS 10 km",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 10 km STORE x",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 0 km",
                "GEOSEARCH missing FROMLONLAT 15 37 BYRADIUS 10 km",
                "GEOSEARCH missing FROMMEMBER x BYRADIUS 10 km",
                "SET str v",
                "GEOSEARCH str FROMLONLAT 15 37 BYRADIUS 10 km",
                "HELLO 3",
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC WITHCOORD WITHDIST",
            ],
        ),
        lines(
            "geosearchstore",
            &[
                SICILY,
                "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC",
                "ZRANGE dst 0 -1 WITHSCORES",
                "OBJECT ENCODING dst",
                "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC STOREDIST",
                "ZRANGE dst 0 -1 WITHSCORES",
                "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km WITHDIST",
                "GEOSEARCHSTORE dst Sicily FROMLONLAT 0 0 BYRADIUS 1 km",
                "EXISTS dst",
                "SET dst x",
                "GEOSEARCHSTORE dst missing FROMLONLAT 0 0 BYRADIUS 1 km",
                "EXISTS dst",
                "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 1",
                "ZRANGE dst 0 -1",
            ],
        ),
        lines(
            "georadius family",
            &[
                SICILY,
                "GEORADIUS Sicily 15 37 200 km",
                "GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD ASC",
                "GEORADIUS Sicily 15 37 200 km COUNT 1 DESC WITHHASH",
                "GEORADIUS Sicily 15 37 200 km STORE dst",
                "ZRANGE dst 0 -1 WITHSCORES",
                "GEORADIUS Sicily 15 37 200 km STOREDIST dst",
                "ZRANGE dst 0 -1 WITHSCORES",
                "GEORADIUS Sicily 15 37 200 km STORE dst WITHDIST",
                "GEORADIUS_RO Sicily 15 37 200 km STORE dst",
                "GEORADIUS_RO Sicily 15 37 200 km ASC",
                "GEORADIUS Sicily 15 37 -1 km",
                "GEORADIUS Sicily 15 37 x km",
                "GEORADIUS Sicily 15 37 1 yd",
                "GEORADIUS Sicily 15 100 1 km",
                "GEORADIUS Sicily 15 37 200 km FROMLONLAT 1 1",
                "GEORADIUSBYMEMBER Sicily Palermo 200 km ASC WITHDIST",
                "GEORADIUSBYMEMBER Sicily nobody 200 km",
                "GEORADIUSBYMEMBER missing nobody -5 km",
                "GEORADIUSBYMEMBER_RO Sicily Palermo 200 km DESC",
                "GEORADIUSBYMEMBER Sicily Palermo 200 km STORE dst2",
                "ZRANGE dst2 0 -1",
                "GEORADIUS missing 15 37 200 km STORE dst2",
                "EXISTS dst2",
                "GEORADIUS Sicily 15 37 200 km ANY",
            ],
        ),
    ]
}

/// Many random points: searches of every shape must find the same members
/// in the same order as Redis, which exercises the cell arithmetic.
fn generated_cases() -> Vec<Case> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let mut out = Vec::new();
    for round in 0..6 {
        let mut cmds = Vec::new();
        let (clon, clat) = (next(340) as f64 - 170.0, next(160) as f64 - 80.0);
        for i in 0..300 {
            let lon = (clon + (next(20000) as f64 - 10000.0) / 1000.0).clamp(-180.0, 180.0);
            let lat = (clat + (next(20000) as f64 - 10000.0) / 1000.0).clamp(-85.0, 85.0);
            cmds.push(format!("GEOADD pts {lon:.6} {lat:.6} m{i}"));
        }
        for radius in [1, 50, 300, 1500] {
            cmds.push(format!("GEOSEARCH pts FROMLONLAT {clon} {clat} BYRADIUS {radius} km"));
            cmds.push(format!("GEOSEARCH pts FROMLONLAT {clon} {clat} BYRADIUS {radius} km ASC WITHDIST COUNT 7"));
            cmds.push(format!("GEOSEARCH pts FROMLONLAT {clon} {clat} BYBOX {radius} {} km DESC", radius * 2));
            cmds.push(format!("GEOSEARCH pts FROMMEMBER m{} BYRADIUS {radius} mi COUNT 5 ANY", next(300)));
        }
        let refs: Vec<&str> = cmds.iter().map(String::as_str).collect();
        let name: &'static str = Box::leak(format!("random points round {round}").into_boxed_str());
        out.push(lines(name, &refs));
    }
    out
}

#[test]
fn geo_replies_match_redis() {
    let mut all = cases();
    all.extend(generated_cases());
    compare_each("geo_replies_match_redis", all);
}
