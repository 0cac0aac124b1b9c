//! Differential tests of Lua scripting: each case goes to kvik-server and
//! to a real redis-server 7.0, and the replies must be identical, byte for
//! byte — the conversions between Lua and replies, the error texts with
//! the script's name and line, `redis.call` against `redis.pcall`, global
//! protection, the `redis` table, EVALSHA and SCRIPT. Each case starts with
//! `FLUSHALL` (and `SCRIPT FLUSH`).

mod common;

use common::diff::*;

/// `EVAL body 0` for each body, after the keyspace and the script cache
/// are emptied.
fn evals(name: &'static str, bodies: &[&str]) -> Case {
    let mut bytes = b"FLUSHALL\r\nSCRIPT FLUSH\r\n".to_vec();
    for body in bodies {
        bytes.extend_from_slice(&multibulk(&[b"EVAL", body.as_bytes(), b"0"]));
    }
    open(name, bytes)
}

/// Requests, each a list of arguments, after the keyspace and the script
/// cache are emptied.
fn calls(name: &'static str, commands: &[&[&str]]) -> Case {
    let mut bytes = b"FLUSHALL\r\nSCRIPT FLUSH\r\n".to_vec();
    for c in commands {
        let args: Vec<&[u8]> = c.iter().map(|a| a.as_bytes()).collect();
        bytes.extend_from_slice(&multibulk(&args));
    }
    open(name, bytes)
}

fn conversion_cases() -> Vec<Case> {
    vec![
        evals(
            "lua values into replies",
            &[
                "return 1",
                "return -7",
                "return 3.99",
                "return -3.99",
                "return 1e20",
                "return 'text'",
                "return ''",
                "return true",
                "return false",
                "return nil",
                "return {}",
                "return {1, 'two', {3, 'four'}, true, false}",
                "return {1, 2, nil, 4}",
                "return {ok = 'fine'}",
                "return {ok = 'two\\r\\nlines'}",
                "return {err = 'boom'}",
                "return {err = 'CODE with words'}",
                "return {err = 'line\\nbreak'}",
                "return {ok = 5}",
                "return {err = 5, 1, 2}",
                "return {1, {ok = 'in'}, {err = 'ERR inner'}}",
                "return function() end",
                "return 0/0 == 0/0",
                "local t = {} t[1] = 'a' t[3] = 'c' return t",
                "return {foo = 'bar'}",
                "return 'a', 'b'",
            ],
        ),
        calls(
            "replies into lua values",
            &[
                &["SET", "s", "v"],
                &["RPUSH", "l", "a", "b"],
                &["EVAL", "return type(redis.call('get', KEYS[1]))", "1", "s"],
                &["EVAL", "return type(redis.call('get', 'missing'))", "0"],
                &["EVAL", "return tostring(redis.call('get', 'missing'))", "0"],
                &["EVAL", "return type(redis.call('incr', 'n'))", "0"],
                &["EVAL", "return redis.call('incr', 'n') + 0.5", "0"],
                &["EVAL", "return redis.call('lrange', 'l', 0, -1)", "0"],
                &["EVAL", "return #redis.call('lrange', 'l', 0, -1)", "0"],
                &["EVAL", "return redis.call('set', 'x', 'y')", "0"],
                &["EVAL", "return redis.call('set', 'x', 'y')['ok']", "0"],
                &["EVAL", "return redis.call('ping')", "0"],
                &["EVAL", "return redis.pcall('incr', 's')", "0"],
                &["EVAL", "return redis.pcall('incr', 's')['err']", "0"],
                &["EVAL", "return redis.call('hgetall', 'nohash')", "0"],
                &["EVAL", "return {redis.call('exists', 's'), redis.call('exists', 'none')}", "0"],
                &["EVAL", "return redis.call('set', KEYS[1], ARGV[1], 'GET')", "1", "s", "new"],
                &["EVAL", "return redis.call('get', 's')", "0"],
                &["EVAL", "return redis.call('incrbyfloat', 'f', 1.5)", "0"],
                &["EVAL", "return redis.call('set', 'num', 10.5)", "0"],
                &["EVAL", "return redis.call('get', 'num')", "0"],
                &["EVAL", "return redis.call('set', 'big', 12345678901234567)", "0"],
                &["EVAL", "return redis.call('get', 'big')", "0"],
            ],
        ),
    ]
}

fn error_cases() -> Vec<Case> {
    vec![evals(
        "errors and where they happened",
        &[
            "return redis.call('nope')",
            "local x = redis.call('nope') return x",
            "return redis.call()",
            "return redis.call({})",
            "return redis.call('get')",
            "return redis.call('eval', 'return 1', '0')",
            "return redis.call('get', 'a', 'b')",
            "redis.call('set', 'k', 'v') return redis.call('lpush', 'k', 'x')",
            "return redis.pcall('nope')",
            "return redis.pcall('get')",
            "local ok, e = pcall(redis.call, 'nope') return {tostring(ok), e['err']}",
            "local ok, e = pcall(function() redis.call('nope') end) return e['err']",
            "return error('raw')",
            "error('raw at two')",
            "error({err = 'tbl'})",
            "error({err = 'CODE tbl'})",
            "\n\nreturn error('third line')",
            "local function inner() error('deep') end\nlocal function outer() inner() end\nouter()",
            "return undefined_thing",
            "x = 1",
            "local t = nil return t.field",
            "return 1 + {}",
            "return 'unclosed",
            "return +",
            "return redis.error_reply('My Error')",
            "return redis.error_reply('x')",
            "return redis.error_reply('-WITH dash')",
            "return redis.error_reply()",
            "return redis.error_reply(1)",
            "return redis.status_reply('fine')",
            "return redis.status_reply()",
            "return redis.call('incr', 'k2', 'x')",
        ],
    )]
}

fn environment_cases() -> Vec<Case> {
    vec![
        evals(
            "the environment",
            &[
                "return _VERSION",
                "return redis.REDIS_VERSION",
                "return redis.REDIS_VERSION_NUM",
                "return redis.sha1hex('')",
                "return redis.sha1hex('abc')",
                "return redis.sha1hex(12)",
                "return type(redis.log)",
                "redis.log(redis.LOG_WARNING, 'from a script', 1)",
                "return redis.LOG_DEBUG + redis.LOG_VERBOSE + redis.LOG_NOTICE + redis.LOG_WARNING",
                "return redis.REPL_ALL + redis.REPL_AOF + redis.REPL_REPLICA + redis.REPL_NONE + redis.REPL_SLAVE",
                "return redis.replicate_commands()",
                "return redis.breakpoint()",
                "return redis.debug('x')",
                "return redis.setresp(2)",
                "return debug",
                "return print",
                "return type(loadstring)",
                "return type(loadfile)",
                "return type(dofile)",
                "return type(os)",
                "return type(io)",
                "return type(require)",
                "return type(table.concat)",
                "return string.format('%d-%s', 5, 'x')",
                "return string.rep('ab', 3)",
                "return math.floor(7.9)",
                "return table.concat({1, 2, 3}, ',')",
                "return tonumber('0x10')",
                "return tostring(1/3)",
                "return {KEYS[1], ARGV[1]}",
                "return #KEYS + #ARGV",
                "local n = 0 for k, v in pairs({a = 1, b = 2}) do n = n + v end return n",
                "return select('#', 1, 2, 3)",
                "return type(pcall)",
                "return {pcall(function() return 1 end)}",
                "return {pcall(function() error('e') end)}",
                "return unpack({1, 2})",
                "return {xpcall(function() error('x') end, function(e) return 'handled ' .. e end)}",
                "return {xpcall(function() return redis.call('nope') end, function(e) return type(e) end)}",
            ],
        ),
        evals(
            "math.random, one generator for the server, drand48's",
            &[
                "return math.random(1000000)",
                "return {math.random(1000000), math.random(3, 9), tostring(math.random())}",
                "math.randomseed(7) return {math.random(100), math.random(100), math.random(-5, 5)}",
                "return math.random(1000)",
                "math.randomseed(-5) return math.random(100)",
                "math.randomseed(3.7) return math.random(100)",
                "math.randomseed(2^40) return math.random(100)",
                "math.randomseed('12') return math.random(100)",
                "return math.random('5')",
                "return math.random(2.9)",
                "return math.random(-2.9, -1)",
                "return math.random(0)",
                "return math.random(3, 1)",
                "return math.random('x')",
                "return math.random(nil)",
                "return math.random(1, 2, 3)",
                "return math.random(2^31)",
                "return {pcall(math.random, 0)}",
                "math.randomseed('x')",
                "math.randomseed()",
                "local r = math.random return r(0)",
            ],
        ),
    ]
}

fn bit_cases() -> Vec<Case> {
    vec![evals(
        "the bit library",
        &[
            "return bit.tobit(0xffffffff)",
            "return bit.tobit(2^32 + 5)",
            "return {bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-1.5), bit.tobit(-2.5)}",
            "return bit.tobit(2^52)",
            "return bit.tobit(-2^31)",
            "return bit.tobit('12')",
            "return bit.tohex(255)",
            "return bit.tohex(-1)",
            "return bit.tohex(255, 2)",
            "return bit.tohex(255, -4)",
            "return bit.tohex(255, 12)",
            "return bit.tohex(0, 0)",
            "return bit.tohex(0x1234abcd, -8)",
            "return bit.bnot(0)",
            "return bit.band(0xff, 0x0f, 0x3)",
            "return bit.band(1)",
            "return bit.bor(1, 2, 4)",
            "return bit.bxor(5, 3)",
            "return {bit.lshift(1, 31), bit.lshift(1, 33), bit.lshift(-1, 0)}",
            "return {bit.rshift(-1, 28), bit.rshift(-1, 32)}",
            "return {bit.arshift(-256, 4), bit.arshift(256, 36)}",
            "return {bit.rol(0x12345678, 8), bit.ror(0x12345678, 8), bit.rol(1, 32)}",
            "return bit.bswap(0x12345678)",
            "return bit.band()",
            "return bit.tobit('x')",
            "return bit.bor(1, {})",
            "\nlocal x = bit.lshift(1)",
            "local ok, e = pcall(bit.band) return e",
            "return type(bit)",
            "bit.band = nil",
        ],
    )]
}

fn cjson_cases() -> Vec<Case> {
    vec![
        evals(
            "cjson.encode",
            &[
                "return cjson.encode({1,2,3})",
                "return cjson.encode({a=1})",
                "return cjson.encode({})",
                r#"return cjson.encode('a/b"c\\d\n\t\r\b\f')"#,
                "return cjson.encode(1.5)",
                "return cjson.encode(0.1)",
                "return cjson.encode(1e20)",
                "return cjson.encode(1/3)",
                "return cjson.encode(true)",
                "return cjson.encode(nil)",
                "return cjson.encode(cjson.null)",
                "return cjson.encode({1,nil,3})",
                "return cjson.encode({[1]=1,[3]=3})",
                "return cjson.encode({[1]=1,[20]=3})",
                "return cjson.encode({[0]=1})",
                "return cjson.encode({1,2,a=3})",
                "return cjson.encode(function() end)",
                "return cjson.encode(0/0)",
                "return cjson.encode(1/0)",
                r"return cjson.encode('\1\127\200')",
                "return cjson.encode({['1']=1})",
                "return cjson.encode({{}})",
                "local t = {} for i=1,40 do t[i]=i end return cjson.encode(t)",
                "return cjson.encode()",
                "return cjson.encode({[true]=1})",
                "return cjson.encode({[1.5]=1})",
                "return cjson.encode(123456789012345678)",
                "return cjson.encode(-0.0)",
                "return cjson.encode(1e-5)",
                "return cjson.encode(100000000000000)",
                "return cjson.encode(10000000000000)",
                "local t = {} local c = t for i=1,1100 do c[1] = {} c = c[1] end return cjson.encode(t)",
                "return cjson.encode({1,2,3,nil,nil,nil,nil,nil,nil,nil,nil,12})",
                "return cjson.encode({[11]=1})",
                "return cjson.encode({[10]=1})",
                r"return cjson.encode('\0')",
                "return cjson.encode({x={y={1,{z='w'}}}})",
                "local ok, e = pcall(cjson.encode, function() end) return e",
                "cjson.encode = nil",
            ],
        ),
        evals(
            "cjson.decode",
            &[
                "return cjson.decode('[1,2,3]')[2]",
                r#"return cjson.decode('{"a":[1,{"b":null}]}').a[1]"#,
                "return type(cjson.decode('null'))",
                "return cjson.decode('null') == cjson.null",
                r#"return cjson.decode('"x\\u00e9"')"#,
                "return cjson.decode('1e2')",
                "return cjson.decode('[1,2')",
                "return cjson.decode('')",
                r#"return cjson.decode('{"a":1}x')"#,
                r#"return cjson.encode(cjson.decode('{"k":[1,2.5,"s",true,false,null]}'))"#,
                "return cjson.decode('-0')",
                "return cjson.decode('0x10')",
                "return cjson.decode('[1,]')",
                r#"return cjson.decode('"\\ud83d\\ude00"')"#,
                "return cjson.decode('+1')",
                "return cjson.decode('01')",
                "return cjson.decode('inf')",
                "return cjson.decode('nan') ~= cjson.decode('nan')",
                r#"return cjson.decode('"a\\qb"')"#,
                r#"return cjson.decode('"\\u12"')"#,
                r#"return cjson.decode('"abc')"#,
                "return cjson.decode('{1:2}')",
                r#"return cjson.decode('{"a" 2}')"#,
                r#"return cjson.decode('{"a":2 "b"}')"#,
                "return cjson.decode('tru')",
                "return cjson.decode(' [ ] ')[1]",
                "return cjson.decode('1.5e')",
                "return cjson.decode('-')",
                "return cjson.decode('0x1p4')",
                "return cjson.decode()",
                "return cjson.decode(5)",
                "return cjson.decode({})",
                "return cjson.decode(string.rep('[', 1001) .. string.rep(']', 1001))",
                r#"return cjson.decode('"\\u0000"') == '\0'"#,
                r#"return cjson.decode('{"a":{"b":[true,false]}}').a.b"#,
                r#"return cjson.decode('  {"a" : 1 , "b" : [ 1 , 2 ] }  ').b"#,
                r#"return cjson.decode('"\\/\\b\\f\\n\\r\\t"')"#,
                "return cjson.decode('[1e400, -1e400]')",
            ],
        ),
    ]
}

fn command_cases() -> Vec<Case> {
    vec![
        calls(
            "eval arguments",
            &[
                &["EVAL", "return {KEYS[1], KEYS[2], ARGV[1], ARGV[2]}", "2", "k1", "k2", "a1", "a2"],
                &["EVAL", "return #KEYS", "0", "a"],
                &["EVAL", "return 1", "-1"],
                &["EVAL", "return 1", "x"],
                &["EVAL", "return 1", "3", "a"],
                &["EVAL", "return 1", "1"],
                &["EVAL", "return 1"],
                &["EVAL"],
            ],
        ),
        calls(
            "evalsha and the cache",
            &[
                &["SCRIPT", "LOAD", "return 'loaded'"],
                &["EVALSHA", "4a3b4f06bdc4d1e4bf3e0ba0ea84f1ed4cf1ac2f", "0"],
                &["SCRIPT", "LOAD", "return 'x'"],
                &["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"],
                &["EVALSHA", "short", "0"],
                &["EVAL", "return 'by eval'", "0"],
                &[
                    "SCRIPT",
                    "EXISTS",
                    "e2c1bfb1d0bc9e7a56d1da4fa9a07d06bc80aa02",
                    "ffffffffffffffffffffffffffffffffffffffff",
                ],
                &["SCRIPT", "LOAD", "return 'unclosed"],
                &["SCRIPT", "FLUSH"],
                &["SCRIPT", "EXISTS", "e2c1bfb1d0bc9e7a56d1da4fa9a07d06bc80aa02"],
                &["SCRIPT", "FLUSH", "ASYNC"],
                &["SCRIPT", "FLUSH", "SYNC"],
                &["SCRIPT", "FLUSH", "NOW"],
                &["SCRIPT", "LOAD"],
                &["SCRIPT", "EXISTS"],
                &["SCRIPT", "NOSUCH"],
                &["SCRIPT", "HELP"],
                // The debugger itself is not run; these answer as Redis does.
                &["SCRIPT", "DEBUG", "NO"],
                &["SCRIPT", "DEBUG", "maybe"],
                &["SCRIPT", "DEBUG"],
                &["SCRIPT", "DEBUG", "no", "extra"],
                &["MULTI"],
                &["SCRIPT", "DEBUG", "NO"],
                &["EXEC"],
            ],
        ),
        calls(
            "read-only scripts",
            &[
                &["SET", "k", "v"],
                &["EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k"],
                &["EVAL_RO", "return redis.call('set', KEYS[1], 'w')", "1", "k"],
                &["EVAL_RO", "return redis.pcall('del', KEYS[1])", "1", "k"],
                &["EVAL_RO", "return redis.call('set')", "0"],
                &["EVAL_RO", "return redis.pcall('nosuch')", "0"],
                &["GET", "k"],
            ],
        ),
        calls(
            "scripts write and select",
            &[
                &["EVAL", "redis.call('select', 1) redis.call('set', 'in1', 'x') return redis.call('dbsize')", "0"],
                &["DBSIZE"],
                &["SELECT", "1"],
                &["GET", "in1"],
                &["SELECT", "0"],
                &["EVAL", "for i = 1, 10 do redis.call('rpush', 'list', i) end return redis.call('llen', 'list')", "0"],
                &["LRANGE", "list", "0", "-1"],
                &["EVAL", "return redis.call('incrby', KEYS[1], ARGV[1])", "1", "counter", "5"],
                &["EVAL", "return redis.call('incrby', KEYS[1], ARGV[1])", "1", "counter", "x"],
                &["GET", "counter"],
            ],
        ),
    ]
}

fn shebang_cases() -> Vec<Case> {
    vec![
        calls(
            "the #!lua line and its flags",
            &[
                &["EVAL", "#!lua\nreturn 1", "0"],
                &["EVAL", "#!lua\nerror('boom')", "0"],
                &["EVAL", "#!lua flags=no-writes\nreturn redis.call('set', 'x', '1')", "0"],
                &["EVAL", "#!lua flags=no-writes\nreturn redis.call('get', 'x')", "0"],
                &["EVAL", "#!lua flags=no-writes,allow-oom\nreturn 2", "0"],
                &["EVAL", "#!lua flags=allow-stale,no-cluster,allow-cross-slot-keys\nreturn 3", "0"],
                &["EVAL", "#!lua  flags=no-writes  \nreturn 4", "0"],
                &["EVAL", "#!lua flags=\nreturn 5", "0"],
                &["EVAL", "#!lua flags=no-writes,no-writes\nreturn 6", "0"],
                &["EVAL", "#!lua flags=bogus\nreturn 2", "0"],
                &["EVAL", "#!python\nreturn 2", "0"],
                &["EVAL", "#!luax\nreturn 2", "0"],
                &["EVAL", "#!lua name=x\nreturn 2", "0"],
                &["EVAL", "#!lua", "0"],
                &["EVAL", "#!lua\nreturn redis.call('set', 'undeclared', 1)", "0"],
                &["EVAL_RO", "#!lua\nreturn 1", "0"],
                &["EVAL_RO", "#!lua flags=no-writes\nreturn 1", "0"],
                &["EVAL_RO", "#!lua flags=bogus\nreturn 1", "0"],
                &["SCRIPT", "LOAD", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])"],
                &["EVALSHA", "8822dee64c14b51d475f4b45eb44843318ccc8e1", "1", "undeclared"],
                &["EVALSHA_RO", "8822dee64c14b51d475f4b45eb44843318ccc8e1", "1", "undeclared"],
                &["SCRIPT", "LOAD", "#!lua flags=nope\nreturn 1"],
                &["SCRIPT", "LOAD", "#!lua\nreturn 'unclosed"],
            ],
        ),
        calls(
            "scripts over maxmemory",
            &[
                &["SET", "filler", "some bytes to be over a one-byte limit"],
                &["CONFIG", "SET", "maxmemory", "1"],
                &["EVAL", "#!lua\nreturn 1", "0"],
                &["EVAL", "#!lua flags=no-writes\nreturn redis.call('get', 'filler')", "0"],
                &["EVAL", "#!lua flags=allow-oom\nreturn redis.call('set', 'o', '1')", "0"],
                &["EVAL", "return redis.call('set', 'o2', '1')", "0"],
                &["EVAL", "return redis.pcall('set', 'o2', '1')", "0"],
                &["EVAL", "return redis.call('get', 'o2')", "0"],
                &["EVAL", "redis.call('del', 'zz') return redis.call('set', 'o3', '1')", "0"],
                &["EVAL", "return redis.call('incr', 'o3')", "0"],
                &["CONFIG", "SET", "maxmemory", "0"],
                &["MGET", "o", "o2", "o3"],
            ],
        ),
    ]
}

fn resp3_cases() -> Vec<Case> {
    let mut cases = vec![evals(
        "redis.set_repl and redis.setresp, called as Redis's C functions",
        &[
            "return redis.set_repl(redis.REPL_NONE)",
            "return redis.set_repl('1')",
            "return redis.set_repl(2.5)",
            "return redis.set_repl(9)",
            "return redis.set_repl(-1)",
            "return redis.set_repl('x')",
            "return redis.set_repl()",
            "return redis.set_repl(1, 2)",
            "redis.set_repl(9)",
            "return {pcall(redis.set_repl, 9)}",
            "return {pcall(redis.setresp, 4)}",
            "redis.set_repl(redis.REPL_AOF) return redis.call('set', 'k', 'v')",
        ],
    )];
    for (name, hello) in [("RESP3 in scripts, a RESP2 caller", "2"), ("RESP3 in scripts, a RESP3 caller", "3")] {
        cases.push(calls(
            name,
            &[
                &["HELLO", hello],
                &["EVAL", "return true", "0"],
                &["EVAL", "return false", "0"],
                &["EVAL", "return nil", "0"],
                &["EVAL", "return {1, true, false}", "0"],
                &["EVAL", "return {double = 1.5}", "0"],
                &["EVAL", "return {double = 3}", "0"],
                &["EVAL", "return {double = 0/0}", "0"],
                &["EVAL", "return {double = 1/0}", "0"],
                &["EVAL", "return {map = {a = 1}}", "0"],
                &["EVAL", "return {map = {}}", "0"],
                &["EVAL", "return {set = {a = 1}}", "0"],
                &["EVAL", "return {big_number = '123'}", "0"],
                &["EVAL", "return {big_number = '1\r\n2'}", "0"],
                &["EVAL", "return {verbatim_string = {format = 'txt', string = 'hello'}}", "0"],
                &["EVAL", "return {verbatim_string = {format = 'txt'}}", "0"],
                &["EVAL", "return {ok = 'x', double = 2}", "0"],
                &["EVAL", "return {double = 'x'}", "0"],
                &["EVAL", "return {map = 5}", "0"],
                &["EVAL", "redis.setresp(3) return true", "0"],
                &["EVAL", "redis.setresp(3) return false", "0"],
                &["EVAL", "redis.setresp(3) return {true, false, 1}", "0"],
                &["EVAL", "redis.setresp(3) return redis.call('hgetall', 'nohash')", "0"],
                &["EVAL", "redis.call('hset', 'h', 'f', 'v') redis.setresp(3) local r = redis.call('hgetall', 'h') return r.map.f", "0"],
                &["EVAL", "redis.setresp(3) return redis.call('hgetall', 'h')", "0"],
                &["EVAL", "redis.setresp(3) return type(redis.call('get', 'missing'))", "0"],
                &["EVAL", "return type(redis.call('get', 'missing'))", "0"],
                &["EVAL", "redis.call('zadd', 'z', 1.5, 'm') redis.setresp(3) return redis.call('zscore', 'z', 'm')", "0"],
                &["EVAL", "redis.setresp(3) return redis.call('zscore', 'z', 'm').double", "0"],
                &["EVAL", "redis.setresp(3) return redis.call('zscore', 'z', 'nope')", "0"],
                &["EVAL", "redis.call('sadd', 's', 'a') redis.setresp(3) return redis.call('smembers', 's')", "0"],
                &["EVAL", "redis.setresp(3) return redis.call('smembers', 's').set.a", "0"],
                &["EVAL", "redis.setresp(3) return redis.call('exists', 's')", "0"],
                &["EVAL", "redis.setresp(3) redis.setresp(2) return redis.call('hgetall', 'h')", "0"],
                &["EVAL", "return redis.setresp('3')", "0"],
                &["EVAL", "return redis.setresp(2.5)", "0"],
                &["EVAL", "return redis.setresp(4)", "0"],
                &["EVAL", "return redis.setresp()", "0"],
                &["EVAL", "return redis.setresp(2, 3)", "0"],
                &["EVAL", "return redis.setresp('x')", "0"],
                &["EVAL", "redis.setresp(3) return redis.call('lpos', 'nolist', 'x')", "0"],
                &["EVAL", "redis.setresp(3) return redis.call('zrange', 'z', 0, -1, 'withscores')", "0"],
                &["EVAL", "redis.setresp(3) return redis.call('hrandfield', 'h', 1, 'withvalues')", "0"],
                &["HELLO", "2"],
            ],
        ));
    }
    cases
}

fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(conversion_cases());
    all.extend(error_cases());
    all.extend(environment_cases());
    all.extend(bit_cases());
    all.extend(cjson_cases());
    all.extend(command_cases());
    all.extend(shebang_cases());
    all.extend(resp3_cases());
    all
}

#[test]
fn script_replies_match_redis() {
    compare_each("script_replies_match_redis", cases());
}

#[test]
fn script_replies_pipelined_match_redis() {
    compare_pipelined("script_replies_pipelined_match_redis", cases());
}
