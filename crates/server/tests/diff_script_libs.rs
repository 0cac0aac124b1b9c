//! Differential tests of the `cmsgpack` and `struct` libraries and of
//! cjson's settings functions that scripts
//! get: each case goes to kvik-server and to a real redis-server 7.0, and
//! the replies must be identical, byte for byte. Packed bytes come back as
//! hex (the `hex` prefix below), so a mismatch shows where; numbers that
//! are not whole come back through `tostring`, since a reply would
//! truncate them. Each case starts with `FLUSHALL` and `SCRIPT FLUSH`.

mod common;

use common::diff::*;

/// Defines `hex(s)` for the body after it.
const HEX: &str =
    "local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end ";

/// `EVAL body 0` for each body (with `hex` defined), after the keyspace
/// and the script cache are emptied.
fn evals(name: &'static str, bodies: &[&str]) -> Case {
    let mut bytes = b"FLUSHALL\r\nSCRIPT FLUSH\r\n".to_vec();
    for body in bodies {
        let body = format!("{HEX}{body}");
        bytes.extend_from_slice(&multibulk(&[b"EVAL", body.as_bytes(), b"0"]));
    }
    open(name, bytes)
}

fn cmsgpack_pack_cases() -> Vec<Case> {
    vec![
        evals(
            "cmsgpack packs numbers",
            &[
                "return hex(cmsgpack.pack(0, 1, 127, 128, 255, 256, 65535, 65536))",
                "return hex(cmsgpack.pack(4294967295, 4294967296, 2^53, 2^62))",
                "return hex(cmsgpack.pack(-1, -32, -33, -128, -129, -32768, -32769))",
                "return hex(cmsgpack.pack(-2147483648, -2147483649, -2^62, -2^63))",
                "return hex(cmsgpack.pack(2^63, 2^64, -2^64, 1e300, -1e300))",
                "return hex(cmsgpack.pack(1.5, -0.25, 0.1, 1/3, 3.4028234663852886e38))",
                "return hex(cmsgpack.pack(1/0, -1/0, 0/0, -0.0, 2^-149, 2^-150))",
                "return hex(cmsgpack.pack('12', 12))",
            ],
        ),
        evals(
            "cmsgpack packs strings, booleans and nil",
            &[
                "return hex(cmsgpack.pack('', 'a', string.rep('b', 31)))",
                "return hex(cmsgpack.pack(string.rep('c', 32)))",
                "return hex(cmsgpack.pack(string.rep('d', 255)):sub(1, 10))",
                "return hex(cmsgpack.pack(string.rep('e', 256)):sub(1, 10))",
                "return hex(cmsgpack.pack(string.rep('f', 65535)):sub(1, 10))",
                "local p = cmsgpack.pack(string.rep('g', 65536)) return {hex(p:sub(1, 8)), #p}",
                "return hex(cmsgpack.pack('a\\0b\\255'))",
                "return hex(cmsgpack.pack(true, false, nil))",
                "return hex(cmsgpack.pack(function() end, cjson.null))",
                "return cmsgpack.pack('raw', 1)",
            ],
        ),
        evals(
            "cmsgpack packs tables as arrays or maps",
            &[
                "return hex(cmsgpack.pack({}))",
                "return hex(cmsgpack.pack({1, 2, 3}, {'a', {true}}))",
                "return hex(cmsgpack.pack({1, 2, nil, 4}))",
                "return hex(cmsgpack.pack({[2] = 'x'}))",
                "return hex(cmsgpack.pack({[0] = 'x'}))",
                "return hex(cmsgpack.pack({[1] = 'a', [1.5] = 'b'}))",
                "return hex(cmsgpack.pack({['1'] = 'a'}))",
                "return hex(cmsgpack.pack({[2^31] = 1}))",
                "return hex(cmsgpack.pack({a = 1, b = {c = 'd'}}))",
                "return hex(cmsgpack.pack({x = 1, y = 2, z = 3, [1] = 4, [true] = 5, [-1] = 6}))",
                "local t = {} for i = 1, 15 do t[i] = i end return hex(cmsgpack.pack(t))",
                "local t = {} for i = 1, 16 do t[i] = i end return hex(cmsgpack.pack(t))",
                "local t = {} for i = 1, 16 do t['k' .. i] = i end return hex(cmsgpack.pack(t))",
                "local t = {} for i = 1, 40 do t['key' .. i] = i end return hex(cmsgpack.pack(t))",
                "local t = {} for i = 1, 70000 do t[i] = i % 3 end local p = cmsgpack.pack(t) return {hex(p:sub(1, 8)), #p}",
                "local t = {} for i = 1, 70000 do t['k' .. i] = 1 end local p = cmsgpack.pack(t) return {hex(p:sub(1, 5)), #p}",
                "local t = {} for i = 1, 20 do t[i] = i end t[5] = nil return hex(cmsgpack.pack(t))",
                "return hex(cmsgpack.pack({[{}] = {}}))",
            ],
        ),
        evals(
            "cmsgpack packs sixteen levels of tables and no more",
            &[
                "local t = 'leaf' for i = 1, 15 do t = {t} end return hex(cmsgpack.pack(t))",
                "local t = 'leaf' for i = 1, 16 do t = {t} end return hex(cmsgpack.pack(t))",
                "local t = 'leaf' for i = 1, 17 do t = {t} end return hex(cmsgpack.pack(t))",
                "local t = {} for i = 1, 30 do t = {k = t} end return hex(cmsgpack.pack(t))",
                "local t = {} t[1] = t return hex(cmsgpack.pack(t))",
                "local t = {} t.self = t return hex(cmsgpack.pack(t))",
                "local t = {} t[t] = 1 return hex(cmsgpack.pack(t))",
            ],
        ),
        evals(
            "cmsgpack pack errors",
            &[
                "return cmsgpack.pack()",
                "return cmsgpack.pack(unpack({}, 1, 4000)):len()",
                "return cmsgpack.pack(unpack({}, 1, 4001))",
                "return pcall(cmsgpack.pack)",
                "local p = cmsgpack.pack return p()",
            ],
        ),
    ]
}

fn cmsgpack_unpack_cases() -> Vec<Case> {
    vec![
        evals(
            "cmsgpack round trips",
            &[
                "return {cmsgpack.unpack(cmsgpack.pack(1, -1, 300, -300, 70000, -70000, 2^40, -2^40))}",
                "return tostring(cmsgpack.unpack(cmsgpack.pack(0.1)))",
                "return tostring(cmsgpack.unpack(cmsgpack.pack(1.5)))",
                "return tostring(cmsgpack.unpack(cmsgpack.pack(1/0)))",
                "local v = cmsgpack.unpack(cmsgpack.pack(0/0)) return tostring(v ~= v)",
                "return {cmsgpack.unpack(cmsgpack.pack('a', string.rep('b', 40), ''))}",
                "return {cmsgpack.unpack(cmsgpack.pack(true, false))}",
                "return cmsgpack.unpack(cmsgpack.pack({1, {2, {3, 'four'}}}))",
                "local t = cmsgpack.unpack(cmsgpack.pack({a = 1, b = {c = 'd'}})) return {t.a, t.b.c}",
                "local t = cmsgpack.unpack(cmsgpack.pack({1, 2, nil, 4})) return {t[1], t[2], tostring(t[3]), t[4]}",
                "local t = cmsgpack.unpack(cmsgpack.pack({[2] = 'x'})) return {#t, t[2]}",
                "local s = cmsgpack.pack({x = {1, 2, {y = 'z'}}}) return hex(cmsgpack.pack(cmsgpack.unpack(s))) == hex(s)",
            ],
        ),
        evals(
            "cmsgpack unpacks every type",
            &[
                "return {cmsgpack.unpack('\\0\\127\\224\\255')}",
                "return {cmsgpack.unpack('\\204\\255\\208\\128\\205\\1\\0\\209\\128\\0')}",
                "return {cmsgpack.unpack('\\206\\255\\255\\255\\255\\210\\128\\0\\0\\0')}",
                "return tostring(cmsgpack.unpack('\\207\\0\\0\\0\\1\\0\\0\\0\\0'))",
                "return tostring(cmsgpack.unpack('\\207\\255\\255\\255\\255\\255\\255\\255\\255'))",
                "return tostring(cmsgpack.unpack('\\207\\128\\0\\0\\0\\0\\0\\0\\0'))",
                "return tostring(cmsgpack.unpack('\\211\\255\\255\\255\\255\\255\\255\\255\\254'))",
                "return tostring(cmsgpack.unpack('\\202\\63\\192\\0\\0'))",
                "return tostring(cmsgpack.unpack('\\203\\63\\185\\153\\153\\153\\153\\153\\154'))",
                "return {cmsgpack.unpack('\\192\\194\\195')}",
                "return {tostring(cmsgpack.unpack('\\192')), type(cmsgpack.unpack('\\194'))}",
                "return {cmsgpack.unpack('\\160\\161a\\217\\3abc\\218\\0\\2de\\219\\0\\0\\0\\1f')}",
                "return cmsgpack.unpack('\\220\\0\\2\\1\\2')",
                "return cmsgpack.unpack('\\221\\0\\0\\0\\2\\1\\2')",
                "return cmsgpack.unpack('\\222\\0\\1\\1\\2')[1]",
                "return cmsgpack.unpack('\\223\\0\\0\\0\\1\\161a\\2').a",
                "return #cmsgpack.unpack('\\147\\1\\192\\3')",
                "return cmsgpack.unpack('\\131\\161a\\1\\161a\\2\\161b\\192').a",
                "return {cmsgpack.unpack('\\144\\128')}",
                "return {cmsgpack.unpack('')}",
                "return {cmsgpack.unpack(12)}",
            ],
        ),
        evals(
            "cmsgpack unpack_one and unpack_limit offsets",
            &[
                "return {cmsgpack.unpack_one('\\1\\2\\3')}",
                "return {cmsgpack.unpack_one('\\1\\2\\3', 1)}",
                "return {cmsgpack.unpack_one('\\1\\2\\3', 2)}",
                "return {cmsgpack.unpack_one('\\1\\2\\3', 3)}",
                "return {cmsgpack.unpack_one('')}",
                "return {cmsgpack.unpack_one('\\146\\1\\2\\3', 0)}",
                "return {cmsgpack.unpack_one('\\1\\2\\3', '1')}",
                "return {cmsgpack.unpack_one('\\1\\2\\3', 1.9)}",
                "return {cmsgpack.unpack_limit('\\1\\2\\3\\4', 2)}",
                "return {cmsgpack.unpack_limit('\\1\\2\\3\\4', 2, 1)}",
                "return {cmsgpack.unpack_limit('\\1\\2\\3\\4', 9)}",
                "return {cmsgpack.unpack_limit('\\1\\2\\3\\4', 0)}",
                "return {cmsgpack.unpack_limit('\\1\\2\\3\\4', 0, 1)}",
                "local s = cmsgpack.pack({1}, 'two', 3) local out, at, v = {}, 0 \
                 repeat at, v = cmsgpack.unpack_one(s, at) out[#out + 1] = type(v) .. ':' .. at until at == -1 \
                 return out",
            ],
        ),
        evals(
            "cmsgpack unpack errors",
            &[
                "return cmsgpack.unpack('\\146\\1')",
                "return cmsgpack.unpack('\\1\\204')",
                "return cmsgpack.unpack('\\205\\1')",
                "return cmsgpack.unpack('\\207\\1\\2')",
                "return cmsgpack.unpack('\\202\\0\\0')",
                "return cmsgpack.unpack('\\217\\5ab')",
                "return cmsgpack.unpack('\\219\\0\\0\\0\\9a')",
                "return cmsgpack.unpack('\\165abc')",
                "return cmsgpack.unpack('\\221\\255\\255\\255\\255')",
                "return cmsgpack.unpack('\\130\\1\\2\\3')",
                "return cmsgpack.unpack('\\193')",
                "return cmsgpack.unpack('\\196\\1a')",
                "return cmsgpack.unpack('\\199\\1\\1a')",
                "return cmsgpack.unpack('\\212\\1a')",
                "return cmsgpack.unpack('\\146\\193\\1')",
                "return cmsgpack.unpack('\\129\\192\\1')",
                "return cmsgpack.unpack('\\129\\202\\127\\192\\0\\0\\1')",
                "return cmsgpack.unpack('\\129\\192\\193')",
                "return pcall(cmsgpack.unpack, '\\129\\192\\1')",
                "return pcall(cmsgpack.unpack, '\\146')",
                "return cmsgpack.unpack()",
                "return cmsgpack.unpack({})",
                "return cmsgpack.unpack_one()",
                "return cmsgpack.unpack_one(nil, 1)",
                "return cmsgpack.unpack_one('abc', 'x')",
                "return cmsgpack.unpack_one('\\1\\2', 3)",
                "return cmsgpack.unpack_one('\\1\\2', -1)",
                "return cmsgpack.unpack_limit('\\1\\2')",
                "return cmsgpack.unpack_limit('\\1\\2', -1)",
                "return cmsgpack.unpack_limit('\\1\\2', 1, 2^40)",
            ],
        ),
        evals(
            "cmsgpack unpack within the C stack",
            &[
                "return #{cmsgpack.unpack(string.rep('\\1', 7000))}",
                "return #{cmsgpack.unpack(string.rep('\\161a', 7000))}",
                "return #{cmsgpack.unpack(string.rep('\\1', 8000))}",
                "return #{cmsgpack.unpack_limit(string.rep('\\1', 9000), 8500)}",
                "return #{cmsgpack.unpack_limit(string.rep('\\1', 9000), 7000)}",
                "local t = cmsgpack.unpack(string.rep('\\145', 3990) .. '\\1') for i = 1, 3990 do t = t[1] end return t",
                "return type(cmsgpack.unpack(string.rep('\\145', 4000) .. '\\1'))",
                "return type(cmsgpack.unpack(string.rep('\\129\\1', 3990) .. '\\1'))",
                "return type(cmsgpack.unpack(string.rep('\\129\\1', 4000) .. '\\1'))",
                "return type(cmsgpack.unpack(string.rep('\\129', 7998) .. '\\1'))",
                "return type(cmsgpack.unpack(string.rep('\\129', 7999) .. '\\1'))",
                "return type(cmsgpack.unpack(string.rep('\\129\\161a', 4000) .. '\\1'))",
            ],
        ),
        evals(
            "the cmsgpack table",
            &[
                "return {cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION}",
                "cmsgpack.pack = nil",
                "cmsgpack.extra = 1",
                "return type(cmsgpack.unpack_limit)",
                "return cmsgpack_safe",
            ],
        ),
    ]
}

fn struct_pack_cases() -> Vec<Case> {
    vec![
        evals(
            "struct packs integers",
            &[
                "return hex(struct.pack('>bBhHlLTiI', -1, 255, -2, 65534, -3, 2^40, 7, -4, 4294967295))",
                "return hex(struct.pack('<bBhHlLTiI', -1, 255, -2, 65534, -3, 2^40, 7, -4, 4294967295))",
                "return hex(struct.pack('bhi', 1, 2, 3))",
                "return hex(struct.pack('bBhH', 300, -300, 70000, -70000))",
                "return hex(struct.pack('>i1i2i3i5i7I9', 1, 2, 3, 5, 7, 9))",
                "return hex(struct.pack('<i16>i16', -1, -2))",
                "return hex(struct.pack('i32', 1))",
                "return hex(struct.pack('i0b', 5, 6))",
                "return hex(struct.pack('<i8<i8<i8<i8', 0/0, 1/0, -1/0, 2^63))",
                "return hex(struct.pack('<L<L<l', 2^64, -2^70, 2.9))",
                "return hex(struct.pack('<i', -2.9))",
                "return hex(struct.pack('i', '12'))",
            ],
        ),
        evals(
            "struct packs floats, strings and padding",
            &[
                "return hex(struct.pack('>f<f>d<d', 1.5, -0.1, 1/3, -2^-1074))",
                "return hex(struct.pack('>f>f>d', 1/0, 1e39, 0/0))",
                "return hex(struct.pack('<d', -0.0))",
                "return hex(struct.pack('c0 s c2', 'hello', 'w', 'xyz'))",
                "return hex(struct.pack('c', 'abc'))",
                "return hex(struct.pack('c3', 'abc'))",
                "return hex(struct.pack('s', 'a\\0b'))",
                "return hex(struct.pack('c2', 12))",
                "return hex(struct.pack('xxbx', 1))",
                "return hex(struct.pack(' < > b ', 1))",
                "return hex(struct.pack('b\\0b', 1, 2))",
                "return hex(struct.pack(''))",
            ],
        ),
        evals(
            "struct aligns with !",
            &[
                "return hex(struct.pack('!8 b d b i b h', 1, 2.5, 3, 4, 5, 6))",
                "return hex(struct.pack('! b d', 1, 2))",
                "return hex(struct.pack('!2 b l', 1, 2))",
                "return hex(struct.pack('!16 b l', 1, 2))",
                "return hex(struct.pack('!1 b l', 1, 2))",
                "return hex(struct.pack('!4 b i3 b', 1, 2, 3))",
                "return hex(struct.pack('! b c3 i', 1, 'abc', 2))",
                "return hex(struct.pack('! b s i', 1, 'ab', 2))",
                "return hex(struct.pack('!4 b f b d', 1, 2, 3, 4))",
                "return hex(struct.pack('b !4 i !2 i', 1, 2, 3))",
            ],
        ),
        evals(
            "struct pack errors",
            &[
                "return struct.pack()",
                "return struct.pack({})",
                "return struct.pack('b')",
                "return struct.pack('b', 'x')",
                "return struct.pack('b', {})",
                "return struct.pack('b', cjson.null)",
                "return struct.pack('c', nil)",
                "return struct.pack('s', {})",
                "return struct.pack('c5', 'ab')",
                "return struct.pack('b c5', 1, 'ab')",
                "return struct.pack('q')",
                "return struct.pack('z')",
                "return struct.pack('1')",
                "return struct.pack('i33', 1)",
                "return struct.pack('i99999999999', 1)",
                "return struct.pack('c2147483648', 'x')",
                "return struct.pack('!3')",
                "return struct.pack('!0')",
                "return struct.pack('!99999999999')",
                "return pcall(struct.pack, 'q')",
            ],
        ),
    ]
}

fn struct_unpack_cases() -> Vec<Case> {
    vec![
        evals(
            "struct unpacks",
            &[
                "return {struct.unpack('>bBhHlLTiI', struct.pack('>bBhHlLTiI', -1, 255, -2, 65534, -3, 2^40, 7, -4, 4294967295))}",
                "return {struct.unpack('<bBhH', '\\255\\255\\255\\255\\255\\255')}",
                "return {struct.unpack('>l', '\\255\\255\\255\\255\\255\\255\\255\\254')}",
                "return tostring(struct.unpack('>L', '\\255\\255\\255\\255\\255\\255\\255\\254'))",
                "return tostring(struct.unpack('>T', '\\128\\0\\0\\0\\0\\0\\0\\1'))",
                "return {struct.unpack('>I3 <I3 >i3 <i3', '\\255\\0\\1\\255\\0\\1\\255\\0\\1\\255\\0\\1')}",
                "return {struct.unpack('>i16 <i16', string.rep('\\128', 32))}",
                "return tostring(struct.unpack('>i16', string.rep('\\1', 16)))",
                "return tostring(struct.unpack('<i9', '\\128' .. string.rep('\\0', 8)))",
                "return {struct.unpack('I0 i0', '')}",
                "return tostring(struct.unpack('>f', struct.pack('>f', 0.1)))",
                "return tostring(struct.unpack('<d', struct.pack('<d', 1/3)))",
                "return tostring(struct.unpack('f', '\\0\\0\\192\\127'))",
                "return tostring(struct.unpack('>d', '\\127\\240\\0\\0\\0\\0\\0\\0'))",
                "return {struct.unpack('x x b', 'abc')}",
                "return {struct.unpack('c3 c1', 'abcd')}",
                "return {struct.unpack('s s', 'ab\\0\\0c\\0')}",
                "return {struct.unpack('b c0', '\\3abcd')}",
                "return {struct.unpack('c1 c0', '3abcd')}",
                "return {struct.unpack('c2 c0', ' 2abcd')}",
                "return {struct.unpack('d c0', struct.pack('d', 1.7) .. 'ab')}",
                "return {struct.unpack('!4 b i3', 'abcdefgh')}",
                "return {struct.unpack('!4 b i', 'a\\0\\0\\0\\1\\0\\0\\0')}",
                "return {struct.unpack('!4 i', 'xa\\0\\0\\0\\1\\0\\0\\0', 2)}",
                "return {struct.unpack('b', 'abc', 2)}",
                "return {struct.unpack('b', 'abc', 3)}",
                "return {struct.unpack('', 'abc', 4)}",
                "return {struct.unpack('b', 'abc', '2')}",
                "return {struct.unpack('b', 'abc', 1.9)}",
                "return {struct.unpack('b', 'abc', nil)}",
                "return {struct.unpack('i', 12345678)}",
                "return {struct.unpack(123, '\\1\\2\\3')}",
                "return #{struct.unpack(string.rep('b', 7000), string.rep('a', 7000))}",
            ],
        ),
        evals(
            "struct unpack errors",
            &[
                "return struct.unpack('i', 'ab')",
                "return struct.unpack('b', 'abc', 4)",
                "return struct.unpack('', 'abc', 5)",
                "return struct.unpack('b', 'abc', 0)",
                "return struct.unpack('b', 'abc', -1)",
                "return struct.unpack('b', 'abc', 'x')",
                "return struct.unpack('c3', 'ab')",
                "return struct.unpack('c0', 'x')",
                "return struct.unpack('c1 c0', 'xabc')",
                "return struct.unpack('b c0', '\\9abcd')",
                "return struct.unpack('d c0', struct.pack('d', -1) .. 'ab')",
                "return struct.unpack('s', 'ab')",
                "return struct.unpack('s', '')",
                "return struct.unpack('z', 'abc')",
                "return struct.unpack('i40', 'abc')",
                "return struct.unpack('!5', 'abc')",
                "return struct.unpack('b')",
                "return struct.unpack()",
                "return struct.unpack('b', {})",
                "return #{struct.unpack(string.rep('b', 8000), string.rep('a', 8000))}",
            ],
        ),
        evals(
            "struct.size",
            &[
                "return struct.size('')",
                "return struct.size('bBhHlLTfdx')",
                "return struct.size('c5 i7 i')",
                "return struct.size('!4 b i3 b h')",
                "return struct.size('! b d')",
                "return struct.size('<>!2 h')",
                "return struct.size('z y 9')",
                "return struct.size('!')",
                "return struct.size('c2147483647c2147483647')",
                "return struct.size(12)",
                "return struct.size('s')",
                "return struct.size('c0')",
                "return struct.size('b c0')",
                "return struct.size('?')",
                "return struct.size('!3')",
                "return struct.size('i33')",
                "return struct.size('c99999999999')",
                "return struct.size()",
                "return struct.size({})",
            ],
        ),
        evals(
            "the struct table",
            &[
                "struct.pack = nil",
                "struct.extra = 1",
                "return {type(struct.pack), type(struct.unpack), type(struct.size)}",
            ],
        ),
    ]
}

fn cjson_settings_cases() -> Vec<Case> {
    vec![
        evals(
            "cjson settings and what they return",
            &[
                "return {cjson._NAME, cjson._VERSION}",
                "return {cjson.encode_sparse_array()}",
                "return {cjson.encode_max_depth(), cjson.decode_max_depth(), cjson.encode_number_precision()}",
                "return {cjson.encode_keep_buffer(), cjson.encode_invalid_numbers(), cjson.decode_invalid_numbers()}",
                "return {cjson.encode_sparse_array(true, 3, 4)}",
                "return {cjson.encode_sparse_array(nil, nil, 20)}",
                "return {cjson.encode_sparse_array('off')}",
                "return cjson.encode_sparse_array(1)",
                "return cjson.encode_sparse_array('maybe')",
                "return cjson.encode_sparse_array(true, -1)",
                "return cjson.encode_sparse_array(true, 2, -1)",
                "return cjson.encode_sparse_array(true, 'x')",
                "return cjson.encode_sparse_array(true, 2, 10, 1)",
                "return cjson.encode_max_depth(0)",
                "return cjson.encode_max_depth('7')",
                "return cjson.encode_max_depth(2.9)",
                "return cjson.encode_max_depth({})",
                "return cjson.encode_max_depth(1, 2)",
                "return cjson.encode_number_precision(15)",
                "return cjson.encode_number_precision(0)",
                "return cjson.encode_keep_buffer('on')",
                "return cjson.encode_keep_buffer(false)",
                "return cjson.encode_keep_buffer(3)",
                "return cjson.encode_invalid_numbers('null')",
                "return cjson.encode_invalid_numbers(true)",
                "return cjson.encode_invalid_numbers('sometimes')",
                "return cjson.decode_invalid_numbers('off')",
                "local ok, e = pcall(cjson.encode_max_depth, -5) return e",
            ],
        ),
        evals(
            "cjson settings change encoding and decoding",
            &[
                "cjson.encode_number_precision(3) return cjson.encode({3.14159, 1234567, 0.5})",
                "return cjson.encode(1/3)",
                "cjson.encode_number_precision(14) return cjson.encode(1/3)",
                "return cjson.encode(1/0)",
                "cjson.encode_invalid_numbers(true) return cjson.encode({1/0, -1/0, 0/0})",
                "cjson.encode_invalid_numbers('null') return cjson.encode({1/0, 0/0, 2})",
                "cjson.encode_invalid_numbers(false) return cjson.encode(0/0)",
                "cjson.encode_max_depth(2) return cjson.encode({{1}})",
                "return cjson.encode({{{1}}})",
                "cjson.encode_max_depth(1000) cjson.decode_max_depth(2) return cjson.encode(cjson.decode('[[1]]'))",
                "return cjson.decode('[[[1]]]')",
                "return cjson.decode('{\"a\":{\"b\":[1]}}')",
                "cjson.decode_max_depth(1000) local t = {} t[1] = 1 t[20] = 2 return cjson.encode(t)",
                "cjson.encode_sparse_array(true) local t = {} t[1] = 1 t[20] = 2 return cjson.encode(t)",
                "cjson.encode_sparse_array(false, 0) local t = {} t[1] = 1 t[5] = 2 return cjson.encode(t)",
                "cjson.encode_sparse_array(false, 2, 3) local t = {} t[1] = 1 t[5] = 2 return cjson.encode(t)",
                "return tostring(cjson.decode('0x10'))",
                "return tostring(cjson.decode('-inf'))",
                "cjson.decode_invalid_numbers(false) return cjson.decode('0x10')",
                "return cjson.decode('+1')",
                "return cjson.decode('inf')",
                "return cjson.decode('-nan')",
                "return cjson.decode('01')",
                "return cjson.decode('[1, 2.5, -3]')",
                "return cjson.decode('0')",
                "local c = cjson.new() return {c.encode_max_depth(), c.decode_invalid_numbers(), cjson.decode_invalid_numbers()}",
            ],
        ),
        open("cjson settings last until SCRIPT FLUSH", {
            let mut bytes = b"SCRIPT FLUSH\r\n".to_vec();
            for body in [
                "return cjson.encode_number_precision(4)",
                "return cjson.encode(1/3)",
                "return cjson.encode_number_precision()",
            ] {
                bytes.extend_from_slice(&multibulk(&[b"EVAL", body.as_bytes(), b"0"]));
            }
            bytes.extend_from_slice(b"SCRIPT FLUSH\r\n");
            bytes.extend_from_slice(&multibulk(&[b"EVAL", b"return cjson.encode(1/3)", b"0"]));
            bytes
        }),
    ]
}

fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(cjson_settings_cases());
    all.extend(cmsgpack_pack_cases());
    all.extend(cmsgpack_unpack_cases());
    all.extend(struct_pack_cases());
    all.extend(struct_unpack_cases());
    all
}

#[test]
fn script_library_replies_match_redis() {
    compare_each("script_library_replies_match_redis", cases());
}

#[test]
fn script_library_replies_pipelined_match_redis() {
    compare_pipelined("script_library_replies_pipelined_match_redis", cases());
}
