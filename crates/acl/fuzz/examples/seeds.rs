//! Write the seeds of every target into `<dir>/<target>/seed-<n>` (the
//! corpus folders `run.sh` hands to cargo-fuzz), with the saved inputs of
//! `regressions/` next to them.

use std::path::Path;

use kvik_acl_fuzz::{seeds, TARGETS};

fn main() -> std::io::Result<()> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "corpus".into());
    let regressions = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    for target in TARGETS {
        let out = Path::new(&dir).join(target);
        std::fs::create_dir_all(&out)?;
        for (n, seed) in seeds::for_target(target).iter().enumerate() {
            std::fs::write(out.join(format!("seed-{n}")), seed)?;
        }
        if let Ok(entries) = std::fs::read_dir(regressions.join(target)) {
            for entry in entries {
                let path = entry?.path();
                if let Some(name) = path.file_name() {
                    std::fs::copy(&path, out.join(name))?;
                }
            }
        }
    }
    Ok(())
}
