//! libFuzzer entry point; the properties checked live in the library so the
//! regression tests run exactly the same code on a stable toolchain.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kvik_acl_fuzz::acl_file::check(data));
