//! Stamps the source commit into the crate (`ZKLOCK_COMMIT`), so that each trace names the
//! commit that wrote it: a seed and its commit reproduce a run. Empty outside a git checkout.
//! Also the crate's optimisation level (`ZKLOCK_OPT_LEVEL`), for the sweep's notice.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?;
    Some(s.trim().to_owned())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_default();
    println!("cargo:rustc-env=ZKLOCK_COMMIT={commit}");
    // The sweep tells a user whose build leaves the simulation unoptimised how to fix it.
    let opt_level = std::env::var("OPT_LEVEL").unwrap_or_default();
    println!("cargo:rustc-env=ZKLOCK_OPT_LEVEL={opt_level}");
    // Run again when HEAD moves: HEAD itself, the branch it names, and packed refs. Only
    // files that exist, since a missing one would rerun this (and rebuild) every time.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let dir = Path::new(&dir);
        // In a linked worktree, HEAD is the worktree's own but branches and packed refs
        // live in the common directory.
        let common =
            git(&["rev-parse", "--git-common-dir"]).unwrap_or_else(|| dir.display().to_string());
        let common = Path::new(&common);
        let mut watched = vec![dir.join("HEAD"), common.join("packed-refs")];
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.push(common.join(branch));
        }
        for path in watched.iter().filter(|p| p.exists()) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    } else {
        println!("cargo:rerun-if-changed=build.rs");
    }
}
