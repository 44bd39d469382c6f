//! Curator's InterProcessMutex as a bench contender: `bench/drivers/CuratorBench.java`, run
//! against Debian's Curator jars and compiled on first use as Curator's driver is
//! ([`curator_program`]), one JVM hosting every client of a cell (each its own
//! CuratorFramework session), warmed up before its window.

use super::{BenchError, CellConfig, CellResult, Contender, process};
use std::process::Command;
use zklock_real::driver::locate::curator_program;

/// The Curator contender's source, compiled on first use.
pub const CURATOR_SOURCE: &str = include_str!("../../drivers/CuratorBench.java");
const CURATOR_CLASS: &str = "CuratorBench";
/// How long each client of a Curator cell warms the JVM up before its window, in ms.
const WARMUP_MS: u64 = 2000;

/// The classpath that runs the Curator contender (compiling it on first use) and the
/// version of `curator-recipes`, or why not, naming what to install.
pub fn curator_classpath() -> Result<(String, String), String> {
    let classpath = curator_program(CURATOR_CLASS, CURATOR_SOURCE)?;
    let version = curator_version(&classpath).unwrap_or_else(|| "?".into());
    Ok((classpath, version))
}

/// Curator's version, from the recipes jar on `classpath`: its own name
/// (`curator-recipes-5.4.0.jar`) or, for Debian's unversioned jar, the versioned name
/// beside it that links to it.
fn curator_version(classpath: &str) -> Option<String> {
    let version_of = |name: &str| {
        let v = name
            .strip_prefix("curator-recipes-")?
            .strip_suffix(".jar")?;
        v.starts_with(|c: char| c.is_ascii_digit())
            .then(|| v.to_owned())
    };
    let jar = classpath.split(':').map(std::path::Path::new).find(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("curator-recipes"))
    })?;
    if let Some(v) = version_of(&jar.file_name()?.to_string_lossy()) {
        return Some(v);
    }
    let target = std::fs::canonicalize(jar).ok()?;
    let mut versions: Vec<String> = std::fs::read_dir(jar.parent()?)
        .ok()?
        .flatten()
        .filter(|e| std::fs::canonicalize(e.path()).ok().as_ref() == Some(&target))
        .filter_map(|e| version_of(&e.file_name().to_string_lossy()))
        .collect();
    versions.sort();
    versions.pop()
}

/// Curator's InterProcessMutex: `cfg.clients` sessions in one JVM, run with `classpath`
/// from [`curator_classpath`]. Blocks the calling thread.
pub fn curator_cell(
    classpath: &str,
    addr: &str,
    cfg: &CellConfig,
) -> Result<CellResult, BenchError> {
    cfg.check()?;
    let mut c = Command::new("java");
    c.arg("-cp").arg(classpath).arg(CURATOR_CLASS).args([
        addr,
        &cfg.lock_path,
        &cfg.clients.to_string(),
        &cfg.max_acquisitions_per_client.to_string(),
        &cfg.session_timeout_ms.to_string(),
        &WARMUP_MS.to_string(),
    ]);
    process::run_cell(Contender::Curator, vec![c], true, cfg)
}

#[cfg(test)]
mod tests {
    use super::curator_version;

    #[test]
    fn curators_version_is_read_from_the_jar_or_the_versioned_link_beside_it() {
        let dir = std::env::temp_dir().join(format!("zklock-curver-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("curator-recipes.jar"), b"jar").unwrap();
        std::os::unix::fs::symlink("curator-recipes.jar", dir.join("curator-recipes-5.4.0.jar"))
            .unwrap();
        let plain = dir.join("curator-recipes.jar");
        let cp = format!("/x/cache:{}:/y/zookeeper.jar", plain.display());
        assert_eq!(curator_version(&cp).as_deref(), Some("5.4.0"));
        assert_eq!(
            curator_version("/a/curator-recipes-5.7.1.jar").as_deref(),
            Some("5.7.1")
        );
        assert_eq!(curator_version("/a/zookeeper.jar"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
