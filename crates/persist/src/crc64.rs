//! CRC-64/Jones, the checksum Redis puts after an RDB file and a DUMP
//! payload: the Jones polynomial, reflected, initial value 0, no final xor.

/// Reflected form of the Jones polynomial 0xad93d23594c935a9.
const POLY: u64 = 0x95ac_9329_ac4b_c9b5;

/// The checksum of every byte value, for one table lookup per byte.
const TABLE: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ POLY } else { crc >> 1 };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// CRC-64/Jones of `data`, continuing from `crc` (0 to start).
pub fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    for &b in data {
        crc = TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_value_is_redis_s() {
        // Redis's crc64 test: "123456789" gives 0xe9c6d914c4b8d9ca.
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        let (a, b) = b"123456789".split_at(4);
        assert_eq!(crc64(crc64(0, a), b), 0xe9c6_d914_c4b8_d9ca, "continues across calls");
    }
}
