//! Write the seed inputs of every target into `corpus/<target>/` (or into the
//! folder given as the first argument), one file per seed.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let root = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus"));
    for target in kvik_protocol_fuzz::TARGETS {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir)?;
        let seeds = kvik_protocol_fuzz::seeds::for_target(target);
        for (i, seed) in seeds.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i:03}")), seed)?;
        }
        println!("{target}: {} seeds in {}", seeds.len(), dir.display());
    }
    Ok(())
}
