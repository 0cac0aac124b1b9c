//! Replays the seeds and every saved input under `regressions/<target>/`
//! through the fuzz checks, so a fixed crash stays fixed without a fuzzer.

use std::path::Path;

use kvik_protocol_fuzz::{check_target, seeds, TARGETS};

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
    for target in TARGETS {
        let Ok(entries) = std::fs::read_dir(root.join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("readable regressions folder").path();
            if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')) {
                continue;
            }
            let data = std::fs::read(&path).expect("readable regression input");
            // Named before the check so a failing input is identified in the output.
            eprintln!("checking {}", path.display());
            assert!(check_target(target, &data), "unknown target {target}");
        }
    }
}
