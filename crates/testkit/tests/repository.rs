//! Checks of the repository as a whole rather than of one crate: the
//! license the manifests name has its text at the root, and `make run`
//! serves the build the README says it does.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `license = "…"` values of the manifests under `dir` (skipping build output).
fn licenses(dir: &Path, found: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "target" && !name.to_string_lossy().starts_with('.') {
                licenses(&path, found);
            }
        } else if name == "Cargo.toml" {
            for line in read(&path).lines() {
                if let Some(value) = line.strip_prefix("license = ") {
                    found.push((path.clone(), value.trim_matches('"').to_string()));
                }
            }
        }
    }
}

#[test]
fn the_license_the_manifests_name_is_at_the_root() {
    let root = repo_root();
    let mut found = Vec::new();
    licenses(&root, &mut found);
    assert!(found.iter().any(|(p, _)| p == &root.join("Cargo.toml")), "{found:?}");
    for (path, license) in &found {
        assert_eq!(license, "BSD-3-Clause", "{}", path.display());
    }
    let text = read(&root.join("LICENSE"));
    assert!(text.starts_with("BSD 3-Clause License\n\nCopyright (c) "), "{text}");
    assert!(text.contains(", The kvik authors\n"));
    for clause in [
        "1. Redistributions of source code must retain the above copyright notice",
        "2. Redistributions in binary form must reproduce the above copyright notice",
        "3. Neither the name of the copyright holder nor the names of its",
        "THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS \"AS IS\"",
    ] {
        assert!(text.contains(clause), "LICENSE lacks {clause:?}");
    }
}

/// What `make -n <args>` would run, with `PGO` in the environment only when `pgo_env` says.
fn make_dry_run(args: &[&str], pgo_env: Option<&str>) -> String {
    let mut cmd = Command::new("make");
    cmd.current_dir(repo_root()).arg("-n").arg("--no-print-directory").args(args);
    for inherited in ["PGO", "MAKEFLAGS", "MAKELEVEL", "MFLAGS"] {
        cmd.env_remove(inherited);
    }
    if let Some(v) = pgo_env {
        cmd.env("PGO", v);
    }
    let out = cmd.output().expect("run make");
    assert!(out.status.success(), "make -n {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn make_run_serves_the_plain_release_build_and_pgo_1_the_profile_guided_one() {
    if Command::new("make").arg("--version").output().is_err() {
        eprintln!("make not installed: skipping");
        return;
    }
    let plain = "cargo build --release -p kvik-server\nexec \"${CARGO_TARGET_DIR:-target}/release/kvik-server\"\n";
    for (args, env) in [(&["run"][..], None), (&["run", "PGO=0"], None), (&["run"], Some("0"))] {
        let steps = make_dry_run(args, env);
        assert!(steps.ends_with(plain), "make {args:?} (PGO={env:?}):\n{steps}");
        assert!(!steps.contains("pgo.sh"), "make {args:?} (PGO={env:?}):\n{steps}");
    }
    for (args, env) in [(&["run", "PGO=1"][..], None), (&["run"], Some("1"))] {
        let steps = make_dry_run(args, env);
        assert!(steps.ends_with("bin=$(build/pgo.sh) && exec \"$bin\"\n"), "make {args:?} (PGO={env:?}):\n{steps}");
    }
    assert!(make_dry_run(&["release"], None).ends_with("build/pgo.sh\n"));
    // The benchmark scripts build the server with build/pgo.sh, profile-guided by default.
    let common = read(&repo_root().join("bench/common.sh"));
    assert!(common.contains("KVIK_BIN=$(build/pgo.sh)"), "bench/common.sh no longer builds with build/pgo.sh");
}
