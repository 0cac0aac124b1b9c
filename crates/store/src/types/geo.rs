//! Geo positions as sorted set scores, with Redis's geohash arithmetic.
//!
//! A position is a 52-bit geohash (26 bits of longitude interleaved with 26
//! of latitude, latitude in the even bits) over the Web Mercator latitude
//! range ±85.05112878°, stored as the member's score. A search covers the
//! shape with the geohash cell holding its centre and the eight cells
//! around it, at a precision picked from the radius, reads each cell's score
//! range from the sorted set and keeps the members truly inside. Doing every
//! step as Redis does — the same precision estimate, the same neighbour
//! arithmetic and pruning, the same libm trigonometry — gives the same
//! members, the same distances and, where no sorting is asked for, the same
//! order.

/// Precision of stored positions, in bits per coordinate.
pub const STEP_MAX: u32 = 26;
/// Latitude limits (Web Mercator).
pub const LAT_MIN: f64 = -85.051_128_78;
/// See [`LAT_MIN`].
pub const LAT_MAX: f64 = 85.051_128_78;
/// Longitude limits.
pub const LON_MIN: f64 = -180.0;
/// See [`LON_MIN`].
pub const LON_MAX: f64 = 180.0;
/// Earth's radius as Redis's distance formula uses it, in metres.
const EARTH_RADIUS_M: f64 = 6_372_797.560_856;
/// Half the circumference in Web Mercator metres (for the precision estimate).
const MERCATOR_MAX: f64 = 20_037_726.37;
/// Alphabet of textual geohashes.
const BASE32: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";

/// A cell: `bits` at `step` bits per coordinate; step 0 marks "no cell".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cell {
    bits: u64,
    step: u32,
}

/// A coordinate range.
#[derive(Debug, Clone, Copy)]
struct Range {
    min: f64,
    max: f64,
}

const LON_RANGE: Range = Range { min: LON_MIN, max: LON_MAX };
const LAT_RANGE: Range = Range { min: LAT_MIN, max: LAT_MAX };

/// Spread the 32 bits of `v` to the even bits of a u64.
fn spread(v: u32) -> u64 {
    let mut x = u64::from(v);
    x = (x | x << 16) & 0x0000_FFFF_0000_FFFF;
    x = (x | x << 8) & 0x00FF_00FF_00FF_00FF;
    x = (x | x << 4) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | x << 2) & 0x3333_3333_3333_3333;
    (x | x << 1) & 0x5555_5555_5555_5555
}

/// Gather the even bits of `x` into a u32.
fn squash(x: u64) -> u32 {
    let mut x = x & 0x5555_5555_5555_5555;
    x = (x | x >> 1) & 0x3333_3333_3333_3333;
    x = (x | x >> 2) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | x >> 4) & 0x00FF_00FF_00FF_00FF;
    x = (x | x >> 8) & 0x0000_FFFF_0000_FFFF;
    (x | x >> 16) as u32
}

fn encode_in(lon_range: Range, lat_range: Range, lon: f64, lat: f64, step: u32) -> Option<Cell> {
    if !(LON_MIN..=LON_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    if lat < lat_range.min || lat > lat_range.max || lon < lon_range.min || lon > lon_range.max {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (lat - lat_range.min) / (lat_range.max - lat_range.min) * scale;
    let lon_offset = (lon - lon_range.min) / (lon_range.max - lon_range.min) * scale;
    // C converts with truncation; both offsets are within 0..=2^step.
    let bits = spread(lat_offset as u32) | spread(lon_offset as u32) << 1;
    Some(Cell { bits, step })
}

/// The corners of `cell`: (lon min, lon max, lat min, lat max).
fn decode_area(cell: Cell) -> (f64, f64, f64, f64) {
    let lat_cells = f64::from(squash(cell.bits));
    let lon_cells = f64::from(squash(cell.bits >> 1));
    let scale = (1u64 << cell.step) as f64;
    let lat_span = LAT_MAX - LAT_MIN;
    let lon_span = LON_MAX - LON_MIN;
    (
        LON_MIN + (lon_cells / scale) * lon_span,
        LON_MIN + ((lon_cells + 1.0) / scale) * lon_span,
        LAT_MIN + (lat_cells / scale) * lat_span,
        LAT_MIN + ((lat_cells + 1.0) / scale) * lat_span,
    )
}

/// The score for a position, or `None` outside the valid ranges.
pub fn encode(lon: f64, lat: f64) -> Option<f64> {
    encode_in(LON_RANGE, LAT_RANGE, lon, lat, STEP_MAX).map(|c| c.bits as f64)
}

/// The position (centre of the cell) a score stands for: (longitude, latitude).
pub fn decode(score: f64) -> (f64, f64) {
    let (lon_min, lon_max, lat_min, lat_max) = decode_area(Cell { bits: score as u64, step: STEP_MAX });
    let lon = ((lon_min + lon_max) / 2.0).clamp(LON_MIN, LON_MAX);
    let lat = ((lat_min + lat_max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// The 11-character geohash `GEOHASH` shows: the position re-encoded over
/// the standard ±90° latitude range; the 11th character stands for bits
/// the score does not have and is always `0`.
pub fn geohash_text(score: f64) -> [u8; 11] {
    let (lon, lat) = decode(score);
    let bits = encode_in(LON_RANGE, Range { min: -90.0, max: 90.0 }, lon, lat, STEP_MAX).map_or(0, |c| c.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        *c = BASE32[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    out
}

fn deg_rad(deg: f64) -> f64 {
    deg * (std::f64::consts::PI / 180.0)
}

fn rad_deg(rad: f64) -> f64 {
    rad / (std::f64::consts::PI / 180.0)
}

fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_M * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// Great-circle distance in metres (haversine, Redis's formula and constants).
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let v = ((deg_rad(lon2) - deg_rad(lon1)) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (deg_rad(lat1), deg_rad(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

/// Metres per unit for the unit names geo commands accept.
pub fn unit_to_meters(unit: &[u8]) -> Option<f64> {
    const UNITS: [(&[u8], f64); 4] = [(b"m", 1.0), (b"km", 1000.0), (b"ft", 0.3048), (b"mi", 1609.34)];
    UNITS.iter().find(|(name, _)| unit.eq_ignore_ascii_case(name)).map(|&(_, meters)| meters)
}

/// What a search looks for, around a centre (longitude, latitude).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// Within `radius_m` metres.
    Radius {
        /// Radius in metres.
        radius_m: f64,
    },
    /// Within a box `width_m` × `height_m` metres centred on the centre.
    Box {
        /// Width in metres.
        width_m: f64,
        /// Height in metres.
        height_m: f64,
    },
}

/// A search: the centre and the shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Search {
    /// Longitude of the centre.
    pub lon: f64,
    /// Latitude of the centre.
    pub lat: f64,
    /// The shape around it.
    pub shape: Shape,
}

impl Search {
    /// The distance of (`lon`, `lat`) from the centre if it is inside the shape.
    pub fn distance_if_inside(&self, lon: f64, lat: f64) -> Option<f64> {
        match self.shape {
            Shape::Radius { radius_m } => {
                let d = distance(self.lon, self.lat, lon, lat);
                (d <= radius_m).then_some(d)
            }
            Shape::Box { width_m, height_m } => {
                if lat_distance(lat, self.lat) > height_m / 2.0 {
                    return None;
                }
                if distance(lon, lat, self.lon, lat) > width_m / 2.0 {
                    return None;
                }
                Some(distance(self.lon, self.lat, lon, lat))
            }
        }
    }

    /// Half extents in metres: (half height, half width).
    fn half_extents(&self) -> (f64, f64) {
        match self.shape {
            Shape::Radius { radius_m } => (radius_m, radius_m),
            Shape::Box { width_m, height_m } => (height_m / 2.0, width_m / 2.0),
        }
    }

    /// The bounding box: (lon min, lat min, lon max, lat max).
    fn bounds(&self) -> (f64, f64, f64, f64) {
        let (height, width) = self.half_extents();
        let lat_delta = rad_deg(height / EARTH_RADIUS_M);
        let lon_delta_top = rad_deg(width / EARTH_RADIUS_M / deg_rad(self.lat + lat_delta).cos());
        let lon_delta_bottom = rad_deg(width / EARTH_RADIUS_M / deg_rad(self.lat - lat_delta).cos());
        let lon_delta = if self.lat < 0.0 { lon_delta_bottom } else { lon_delta_top };
        (self.lon - lon_delta, self.lat - lat_delta, self.lon + lon_delta, self.lat + lat_delta)
    }

    /// The score ranges `[min, max)` to read, in Redis's order (the centre
    /// cell, then north, south, east, west, north-east, north-west,
    /// south-east, south-west), without the cells that cannot hold a match
    /// and without a cell equal to the one read just before it.
    pub fn score_ranges(&self) -> Vec<(f64, f64)> {
        let (min_lon, min_lat, max_lon, max_lat) = self.bounds();
        let radius_m = match self.shape {
            Shape::Radius { radius_m } => radius_m,
            Shape::Box { width_m, height_m } => ((width_m / 2.0).powi(2) + (height_m / 2.0).powi(2)).sqrt(),
        };
        let mut step = estimate_step(radius_m, self.lat);
        let Some(mut centre) = encode_in(LON_RANGE, LAT_RANGE, self.lon, self.lat, step) else { return Vec::new() };
        let mut n = neighbours(centre);
        let too_coarse = {
            let (north, south, east, west) =
                (decode_area(n[0]), decode_area(n[1]), decode_area(n[2]), decode_area(n[3]));
            north.3 < max_lat || south.2 > min_lat || east.1 < max_lon || west.0 > min_lon
        };
        if step > 1 && too_coarse {
            step -= 1;
            centre = encode_in(LON_RANGE, LAT_RANGE, self.lon, self.lat, step).unwrap_or(centre);
            n = neighbours(centre);
        }
        let (area_lon_min, area_lon_max, area_lat_min, area_lat_max) = decode_area(centre);
        let none = Cell { bits: 0, step: 0 };
        // n = [north, south, east, west, north-east, north-west, south-east, south-west]
        if step >= 2 {
            if area_lat_min < min_lat {
                (n[1], n[7], n[6]) = (none, none, none);
            }
            if area_lat_max > max_lat {
                (n[0], n[4], n[5]) = (none, none, none);
            }
            if area_lon_min < min_lon {
                (n[3], n[7], n[5]) = (none, none, none);
            }
            if area_lon_max > max_lon {
                (n[2], n[6], n[4]) = (none, none, none);
            }
        }
        let cells = std::iter::once(centre).chain(n);
        let mut out = Vec::with_capacity(9);
        let mut last: Option<Cell> = None;
        for cell in cells {
            if cell == none || last == Some(cell) {
                continue;
            }
            let shift = 52 - cell.step * 2;
            out.push(((cell.bits << shift) as f64, ((cell.bits + 1) << shift) as f64));
            last = Some(cell);
        }
        out
    }
}

/// Bits per coordinate for cells about as large as the search radius.
fn estimate_step(mut range_m: f64, lat: f64) -> u32 {
    if range_m == 0.0 {
        return STEP_MAX;
    }
    let mut step: i32 = 1;
    while range_m < MERCATOR_MAX {
        range_m *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, STEP_MAX as i32) as u32
}

/// Move `cell` by `dx` cells east (+) or west (-) and `dy` north or south.
fn moved(cell: Cell, dx: i8, dy: i8) -> Cell {
    let width = 64 - cell.step * 2;
    let odd = 0xAAAA_AAAA_AAAA_AAAA_u64;
    let even = 0x5555_5555_5555_5555_u64;
    let mut x = cell.bits & odd;
    let mut y = cell.bits & even;
    if dx != 0 {
        let zz = even >> width;
        x = if dx > 0 { x.wrapping_add(zz + 1) } else { (x | zz).wrapping_sub(zz + 1) };
        x &= odd >> width;
    }
    if dy != 0 {
        let zz = odd >> width;
        y = if dy > 0 { y.wrapping_add(zz + 1) } else { (y | zz).wrapping_sub(zz + 1) };
        y &= even >> width;
    }
    Cell { bits: x | y, step: cell.step }
}

/// The eight neighbours: north, south, east, west, north-east, north-west,
/// south-east, south-west.
fn neighbours(c: Cell) -> [Cell; 8] {
    [
        moved(c, 0, 1),
        moved(c, 0, -1),
        moved(c, 1, 0),
        moved(c, -1, 0),
        moved(c, 1, 1),
        moved(c, -1, 1),
        moved(c, 1, -1),
        moved(c, -1, -1),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Figures from Redis's documentation examples (Palermo and Catania).
    #[test]
    fn scores_positions_and_distances_match_redis() {
        let palermo = encode(13.361389, 38.115556).unwrap();
        let catania = encode(15.087269, 37.502669).unwrap();
        assert_eq!(palermo, 3479099956230698.0);
        assert_eq!(catania, 3479447370796909.0);
        let (lon, lat) = decode(palermo);
        assert!((lon - 13.361389338970184).abs() < 1e-12 && (lat - 38.1155563954963).abs() < 1e-12);
        let (c_lon, c_lat) = decode(catania);
        let d = distance(lon, lat, c_lon, c_lat);
        assert_eq!(format!("{:.4}", d), "166274.1516");
        assert_eq!(&geohash_text(palermo), b"sqc8b49rny0");
        assert_eq!(&geohash_text(catania), b"sqdtr74hyu0");
    }

    #[test]
    fn out_of_range_positions_have_no_score() {
        assert!(encode(180.1, 0.0).is_none());
        assert!(encode(0.0, 85.06).is_none());
        assert!(encode(-180.0, -85.05112878).is_some());
    }

    #[test]
    fn neighbours_wrap_within_the_step() {
        let c = Cell { bits: 0, step: 2 };
        let west = moved(c, -1, 0);
        assert_eq!(squash(west.bits >> 1), 3);
        assert_eq!(squash(west.bits), 0);
        let north = moved(c, 0, 1);
        assert_eq!((squash(north.bits >> 1), squash(north.bits)), (0, 1));
    }

    #[test]
    fn a_search_covers_every_point_inside_it() {
        let search = Search { lon: 15.0, lat: 37.0, shape: Shape::Radius { radius_m: 200_000.0 } };
        let ranges = search.score_ranges();
        assert!(!ranges.is_empty() && ranges.len() <= 9);
        for i in 0..2000 {
            let lon = 12.0 + f64::from(i % 50) * 0.12;
            let lat = 35.0 + f64::from(i / 50) * 0.1;
            let score = encode(lon, lat).unwrap();
            let (dlon, dlat) = decode(score);
            if search.distance_if_inside(dlon, dlat).is_some() {
                assert!(ranges.iter().any(|&(lo, hi)| score >= lo && score < hi), "{lon},{lat} not covered");
            }
        }
        let boxed = Search { lon: 15.0, lat: 37.0, shape: Shape::Box { width_m: 400_000.0, height_m: 100_000.0 } };
        assert!(boxed.distance_if_inside(15.0, 37.3).is_some());
        assert!(boxed.distance_if_inside(15.0, 37.6).is_none());
        assert!(boxed.distance_if_inside(17.0, 37.0).is_some());
    }

    #[test]
    fn units() {
        assert_eq!(unit_to_meters(b"KM"), Some(1000.0));
        assert_eq!(unit_to_meters(b"mi"), Some(1609.34));
        assert_eq!(unit_to_meters(b"yd"), None);
    }
}
