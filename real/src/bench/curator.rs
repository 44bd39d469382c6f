//! Curator's InterProcessMutex as a bench contender: `real/bench/CuratorBench.java`,
//! compiled with `javac` against Debian's Curator jars on first use, one JVM hosting every
//! client of a cell (each its own CuratorFramework session), warmed up before its window.

use super::{BenchError, CellConfig, CellResult, Contender, process};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The Curator contender's source, compiled on first use.
pub const CURATOR_SOURCE: &str = include_str!("../../bench/CuratorBench.java");
/// Where the jars are looked for: Debian's `libcurator-recipes-java` and `libzookeeper-java`.
const JAR_DIR: &str = "/usr/share/java";
const JARS: [&str; 7] = [
    "curator-recipes.jar",
    "curator-framework.jar",
    "curator-client.jar",
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "guava.jar",
    "slf4j-api.jar",
];
/// How long each client of a Curator cell warms the JVM up before its window, in ms.
const WARMUP_MS: u64 = 2000;

/// The classpath of Curator's jars and the version of `curator-recipes`, or why not,
/// naming what to install.
pub fn curator_classpath() -> Result<(String, String), String> {
    let missing: Vec<&str> = JARS
        .iter()
        .copied()
        .filter(|j| !Path::new(JAR_DIR).join(j).is_file())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{JAR_DIR} lacks {}; install them with `apt-get install -y \
             libcurator-recipes-java openjdk-17-jdk-headless`",
            missing.join(", ")
        ));
    }
    let version = std::fs::read_link(Path::new(JAR_DIR).join("curator-recipes.jar"))
        .ok()
        .and_then(|p| {
            let name = p.file_name()?.to_string_lossy().into_owned();
            Some(
                name.strip_prefix("curator-recipes-")?
                    .strip_suffix(".jar")?
                    .to_owned(),
            )
        })
        .unwrap_or_else(|| "?".into());
    let cp: Vec<String> = JARS.iter().map(|j| format!("{JAR_DIR}/{j}")).collect();
    Ok((cp.join(":"), version))
}

/// Compiles the contender into `dir` unless a class compiled from the same source is
/// there; returns the directory of the class.
fn compiled(classpath: &str, dir: &Path) -> Result<PathBuf, BenchError> {
    // The source's hash names the directory, so an edited source compiles afresh.
    let hash = CURATOR_SOURCE
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
    let out = dir.join(format!("curator-bench-{hash:016x}"));
    if out.join("CuratorBench.class").is_file() {
        return Ok(out);
    }
    std::fs::create_dir_all(&out)
        .map_err(|e| BenchError::new(format!("creating {}: {e}", out.display())))?;
    let src = out.join("CuratorBench.java");
    std::fs::write(&src, CURATOR_SOURCE)
        .map_err(|e| BenchError::new(format!("writing {}: {e}", src.display())))?;
    let status = Command::new("javac")
        .args(["-nowarn", "-d"])
        .arg(&out)
        .args(["-cp", classpath])
        .arg(&src)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            BenchError::new(format!(
                "running javac ({e}); install it with `apt-get install -y openjdk-17-jdk-headless`"
            ))
        })?;
    if !status.status.success() {
        return Err(BenchError::new(format!(
            "javac failed on {}:\n{}",
            src.display(),
            String::from_utf8_lossy(&status.stderr)
        )));
    }
    Ok(out)
}

/// Curator's InterProcessMutex: `cfg.clients` sessions in one JVM, compiled into
/// `build_dir` on first use. Blocks the calling thread.
pub fn curator_cell(
    classpath: &str,
    build_dir: &Path,
    addr: &str,
    cfg: &CellConfig,
) -> Result<CellResult, BenchError> {
    cfg.check()?;
    let classes = compiled(classpath, build_dir)?;
    let mut c = Command::new("java");
    c.arg("-cp")
        .arg(format!("{classpath}:{}", classes.display()))
        .arg("CuratorBench")
        .args([
            addr,
            &cfg.lock_path,
            &cfg.clients.to_string(),
            &cfg.max_acquisitions_per_client.to_string(),
            &cfg.session_timeout_ms.to_string(),
            &WARMUP_MS.to_string(),
        ]);
    process::run_cell(Contender::Curator, vec![c], true, cfg)
}
