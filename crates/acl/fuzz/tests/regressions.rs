//! Replays the seeds, every saved input under `regressions/<target>/` and a
//! sweep of mutated seeds through the fuzz checks, so the properties hold
//! on a stable toolchain without a fuzzer.

use std::path::Path;

use kvik_acl_fuzz::{check_target, seeds, TARGETS};

#[test]
fn seeds_pass_every_check() {
    for target in TARGETS {
        let seeds = seeds::for_target(target);
        assert!(!seeds.is_empty(), "{target} has no seeds");
        for seed in seeds {
            assert!(check_target(target, &seed));
        }
    }
}

#[test]
fn saved_inputs_pass_every_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut checked = 0;
    for target in TARGETS {
        let Ok(entries) = std::fs::read_dir(root.join(target)) else { continue };
        for entry in entries {
            let path = entry.expect("readable regressions folder").path();
            let data = std::fs::read(&path).expect("readable regression input");
            eprintln!("checking {}", path.display());
            assert!(check_target(target, &data), "unknown target {target}");
            checked += 1;
        }
    }
    assert!(checked > 0, "no saved inputs");
}

/// Bit flips, byte changes, cuts and splices of every seed: a small,
/// deterministic fuzzer that runs in CI.
#[test]
fn mutated_seeds_pass_every_check() {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for target in TARGETS {
        let seeds = seeds::for_target(target);
        for _ in 0..3000 {
            let mut data = seeds[(next() as usize) % seeds.len()].clone();
            for _ in 0..1 + next() % 4 {
                if data.is_empty() {
                    break;
                }
                let at = (next() as usize) % data.len();
                match next() % 4 {
                    0 => data[at] ^= 1 << (next() % 8),
                    1 => data[at] = next() as u8,
                    2 => data.truncate(at),
                    _ => {
                        let from = (next() as usize) % data.len();
                        let piece: Vec<u8> = data[from..].iter().take(16).copied().collect();
                        data.splice(at..at, piece);
                    }
                }
            }
            check_target(target, &data);
        }
    }
}
