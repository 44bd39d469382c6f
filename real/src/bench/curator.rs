//! Curator's InterProcessMutex as a bench contender: `real/bench/CuratorBench.java`, run
//! against Debian's Curator jars and compiled on first use as Curator's driver is
//! ([`curator_program`]), one JVM hosting every client of a cell (each its own
//! CuratorFramework session), warmed up before its window.

use super::{BenchError, CellConfig, CellResult, Contender, process};
use crate::driver::locate::curator_program;
use std::process::Command;

/// The Curator contender's source, compiled on first use.
pub const CURATOR_SOURCE: &str = include_str!("../../bench/CuratorBench.java");
const CURATOR_CLASS: &str = "CuratorBench";
/// How long each client of a Curator cell warms the JVM up before its window, in ms.
const WARMUP_MS: u64 = 2000;

/// The classpath that runs the Curator contender (compiling it on first use) and the
/// version of `curator-recipes`, or why not, naming what to install.
pub fn curator_classpath() -> Result<(String, String), String> {
    let classpath = curator_program(CURATOR_CLASS, CURATOR_SOURCE)?;
    let version = classpath
        .split(':')
        .find(|p| p.ends_with("curator-recipes.jar"))
        .and_then(|jar| std::fs::read_link(jar).ok())
        .and_then(|p| {
            let name = p.file_name()?.to_string_lossy().into_owned();
            Some(
                name.strip_prefix("curator-recipes-")?
                    .strip_suffix(".jar")?
                    .to_owned(),
            )
        })
        .unwrap_or_else(|| "?".into());
    Ok((classpath, version))
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
