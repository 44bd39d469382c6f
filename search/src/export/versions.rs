//! An export run against other Kazoo releases: each from the Python package registry,
//! with pip, into a virtual environment of its own cached under the drivers' cache
//! directory, and which of them fail.

use super::kazoo::{RunResult, run_file};
use super::{ExportError, ExportOptions};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The oldest release tried by default: the one Debian ships.
pub const KAZOO_OLDEST: &str = "2.8.0";

/// One release's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionRun {
    pub version: String,
    pub failed: u32,
    pub runs: u32,
}

impl VersionRun {
    pub fn affected(&self) -> bool {
        self.failed > 0
    }
}

fn parts(v: &str) -> Vec<u64> {
    v.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

fn run_error(reason: String) -> ExportError {
    ExportError::Run { reason }
}

/// A virtual environment's Python with `kazoo==version`, made once under `cache`.
fn venv(base_python: &Path, cache: &Path, version: &str) -> Result<PathBuf, ExportError> {
    let dir = cache.join(format!("kazoo-{version}"));
    let python = dir.join("bin/python");
    // Written last: a half-made environment is made again.
    let done = dir.join(".zklock-installed");
    if done.is_file() {
        return Ok(python);
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(cache).map_err(|source| ExportError::Io {
        path: cache.to_owned(),
        source,
    })?;
    let out = Command::new(base_python)
        .args(["-m", "venv"])
        .arg(&dir)
        .output()
        .map_err(|e| run_error(format!("{} -m venv: {e}", base_python.display())))?;
    if !out.status.success() {
        return Err(run_error(format!(
            "{} -m venv {}: {}",
            base_python.display(),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let out = Command::new(dir.join("bin/pip"))
        .args(["install", "--quiet", "--disable-pip-version-check"])
        .arg(format!("kazoo=={version}"))
        .output()
        .map_err(|e| run_error(format!("pip install kazoo=={version}: {e}")))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&dir);
        let err = String::from_utf8_lossy(&out.stderr);
        let reason = match err.contains("No matching distribution") {
            true => format!("kazoo=={version}: no such release on the package registry"),
            false => format!(
                "pip install kazoo=={version} failed (is the package registry reachable?): {}",
                err.lines().last().unwrap_or("")
            ),
        };
        return Err(ExportError::Invalid { reason });
    }
    std::fs::write(&done, version).map_err(|source| ExportError::Io { path: done, source })?;
    Ok(python)
}

/// Kazoo's releases the registry serves, from [`KAZOO_OLDEST`] to the newest, oldest
/// first (asked of pip, in the oldest release's environment).
pub fn kazoo_releases(base_python: &Path, cache: &Path) -> Result<Vec<String>, ExportError> {
    let python = venv(base_python, cache, KAZOO_OLDEST)?;
    let out = Command::new(&python)
        .args([
            "-m",
            "pip",
            "index",
            "versions",
            "kazoo",
            "--disable-pip-version-check",
        ])
        .output()
        .map_err(|e| run_error(format!("pip index versions kazoo: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let listed = (text.lines())
        .find_map(|l| l.strip_prefix("Available versions: "))
        .ok_or_else(|| {
            run_error(format!(
                "pip index versions kazoo listed no release (is the package registry \
                 reachable?): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        })?;
    let mut versions: Vec<String> = (listed.split(", "))
        .map(|v| v.trim().to_owned())
        .filter(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .filter(|v| parts(v) >= parts(KAZOO_OLDEST))
        .collect();
    versions.sort_by_key(|v| parts(v));
    Ok(versions)
}

/// Runs the export in `dir` (its `repro.py`) `options.runs` times on each of `versions`.
pub fn run_versions(
    dir: &Path,
    versions: &[String],
    cache: &Path,
    options: &ExportOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<VersionRun>, ExportError> {
    let file = dir.join("repro.py");
    if !file.is_file() {
        return Err(ExportError::Invalid {
            reason: format!("{}: no exported repro.py there", dir.display()),
        });
    }
    let mut out = Vec::new();
    for version in versions {
        if parts(version).iter().all(|&p| p == 0) {
            return Err(ExportError::Invalid {
                reason: format!("{version:?} is not a Kazoo release number"),
            });
        }
        progress(&format!("kazoo {version}: installing (cached once)"));
        let venv_options = ExportOptions {
            python: venv(&options.python, cache, version)?,
            ..options.clone()
        };
        let mut failed = 0;
        for _ in 0..options.runs {
            if let (RunResult::Failed(_), _) = run_file(&venv_options, &file, false)? {
                failed += 1;
            }
        }
        progress(&format!(
            "kazoo {version}: failed {failed} of {}",
            options.runs
        ));
        out.push(VersionRun {
            version: version.clone(),
            failed,
            runs: options.runs,
        });
    }
    Ok(out)
}

/// The verdict in a line: "fixed in 2.9.0" when the oldest fail and every later passes.
pub fn summary(runs: &[VersionRun]) -> String {
    let affected: Vec<&str> = (runs.iter().filter(|r| r.affected()))
        .map(|r| r.version.as_str())
        .collect();
    let first_fixed = runs.iter().position(|r| !r.affected());
    match (affected.len(), first_fixed) {
        (0, _) => "affects none of the versions tried".to_owned(),
        (n, None) => format!("affects every version tried ({n})"),
        (n, Some(i)) if i == n && runs[i..].iter().all(|r| !r.affected()) => {
            format!(
                "affects {}; fixed in {}",
                affected.join(", "),
                runs[i].version
            )
        }
        _ => format!("affects {}", affected.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(version: &str, failed: u32) -> VersionRun {
        VersionRun {
            version: version.into(),
            failed,
            runs: 3,
        }
    }

    #[test]
    fn a_bug_the_oldest_releases_have_and_the_later_do_not_reads_fixed_in() {
        let runs = [run("2.8.0", 2), run("2.9.0", 0), run("2.10.0", 0)];
        assert_eq!(summary(&runs), "affects 2.8.0; fixed in 2.9.0");
        assert_eq!(
            summary(&[run("2.8.0", 3), run("2.9.0", 1)]),
            "affects every version tried (2)"
        );
        assert_eq!(
            summary(&[run("2.8.0", 0)]),
            "affects none of the versions tried"
        );
        let back = [run("2.8.0", 1), run("2.9.0", 0), run("2.10.0", 1)];
        assert_eq!(summary(&back), "affects 2.8.0, 2.10.0");
        assert!(parts("2.10.0") > parts("2.9.0"));
    }
}
