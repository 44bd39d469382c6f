//! Regressions files: the seeds that failed a test's sweep, kept beside the test's source
//! and committed, so that every later run of that test replays them first, as proptest's
//! `proptest-regressions/` files do.
//!
//! A sweep called from `tests/herd.rs` keeps its seeds in
//! `tests/zklock-regressions/herd.txt`: one line a seed, the test's name, the seed, and
//! after a `#` what failed. Lines starting with `#` and blank lines are comments.
//!
//! ```text
//! # Seeds that failed a zklock sweep; every later run of the same test replays them first.
//! # Commit this file. One line a seed: <test> <seed> # <what failed>
//! herd::the_herding_lock_herds 3 # no_herd
//! ```
//!
//! A file is read whole: at most [`REGRESSIONS_BYTES_MAX`] bytes, and a line that is not
//! a test name and a seed (a u64) is an error naming the file and the line.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The largest regressions file read, in bytes (1 MiB: some 20,000 seeds, or a thousand
/// or so of `explore --strategy coverage`'s, whose lines carry their scenarios).
pub const REGRESSIONS_BYTES_MAX: u64 = 1 << 20;

/// The directory, beside a test's source file, that holds its regressions file.
pub const REGRESSIONS_DIR: &str = "zklock-regressions";

const HEADER: &str = "# Seeds that failed a zklock sweep; every later run of the same test replays them first.\n\
# Commit this file. One line a seed: <test> <seed> # <what failed>\n";

/// A seed recorded for a test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub test: String,
    pub seed: u64,
}

/// Why a regressions file could not be read.
#[non_exhaustive]
#[derive(Debug)]
pub enum RegressionsError {
    Io {
        path: PathBuf,
        source: io::Error,
    },
    TooLarge {
        path: PathBuf,
        bytes: u64,
    },
    BadLine {
        path: PathBuf,
        line: usize,
        text: String,
    },
}

impl fmt::Display for RegressionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegressionsError::Io { path, source } => {
                write!(f, "regressions file {}: {source}", path.display())
            }
            RegressionsError::TooLarge { path, bytes } => write!(
                f,
                "regressions file {} is {bytes} bytes, more than the {REGRESSIONS_BYTES_MAX} \
                 read",
                path.display()
            ),
            RegressionsError::BadLine { path, line, text } => write!(
                f,
                "regressions file {} line {line}: {text:?} is not `<test> <seed> # <what \
                 failed>`",
                path.display()
            ),
        }
    }
}

impl std::error::Error for RegressionsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RegressionsError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The regressions file of the test source `source` (as `file!()` gives it: relative to
/// the workspace root that compiled it, or absolute), looked for from `base` (the
/// package's directory) and each of its parents: `<dir>/zklock-regressions/<stem>.txt`
/// beside the source. `None` when the source is not found there.
pub fn beside(base: &Path, source: &str) -> Option<PathBuf> {
    let source = Path::new(source);
    let found = if source.is_absolute() {
        Some(source.to_owned())
    } else {
        base.ancestors()
            .map(|dir| dir.join(source))
            .find(|p| p.is_file())
    }?;
    let found = found.is_file().then_some(found)?;
    let stem = found.file_stem()?.to_owned();
    let mut name = stem;
    name.push(".txt");
    Some(found.parent()?.join(REGRESSIONS_DIR).join(name))
}

/// The regressions file of the test source `source` as the running test sees it: looked
/// for from `$CARGO_MANIFEST_DIR` (cargo sets it for the tests it runs), else from the
/// working directory.
pub fn beside_source(source: &str) -> Option<PathBuf> {
    let base = match std::env::var_os("CARGO_MANIFEST_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::current_dir().ok()?,
    };
    beside(&base, source)
}

/// Every entry of `path`; none when the file does not exist.
pub fn read(path: &Path) -> Result<Vec<Entry>, RegressionsError> {
    let io_err = |source| RegressionsError::Io {
        path: path.to_owned(),
        source,
    };
    let bytes = match fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err(e)),
        Ok(m) => m.len(),
    };
    if bytes > REGRESSIONS_BYTES_MAX {
        return Err(RegressionsError::TooLarge {
            path: path.to_owned(),
            bytes,
        });
    }
    let text = fs::read_to_string(path).map_err(io_err)?;
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let content = line.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let mut words = content.split_whitespace();
        let parsed = match (words.next(), words.next(), words.next()) {
            (Some(test), Some(seed), None) => seed.parse::<u64>().ok().map(|seed| Entry {
                test: test.to_owned(),
                seed,
            }),
            _ => None,
        };
        let Some(entry) = parsed else {
            return Err(RegressionsError::BadLine {
                path: path.to_owned(),
                line: i + 1,
                text: line.to_owned(),
            });
        };
        entries.push(entry);
    }
    Ok(entries)
}

/// The seeds recorded for `test` in `path`, in file order, each once.
pub fn seeds_for(path: &Path, test: &str) -> Result<Vec<u64>, RegressionsError> {
    let mut seeds: Vec<u64> = Vec::new();
    for e in read(path)? {
        if e.test == test && !seeds.contains(&e.seed) {
            seeds.push(e.seed);
        }
    }
    Ok(seeds)
}

/// Whether [`record`] added the seed or found it there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    Added,
    AlreadyThere,
}

/// Adds `test`'s failing `seed` to `path` (creating it and its directory), unless it is
/// there already. The file is rewritten whole, atomically, under a process-wide lock, so
/// that two tests of one source failing at once both keep their seeds.
pub fn record(
    path: &Path,
    test: &str,
    seed: u64,
    what: &str,
) -> Result<Recorded, RegressionsError> {
    static WRITING: Mutex<()> = Mutex::new(());
    let _writing = WRITING.lock().unwrap_or_else(|p| p.into_inner());
    let entries = read(path)?;
    if entries.iter().any(|e| e.test == test && e.seed == seed) {
        return Ok(Recorded::AlreadyThere);
    }
    let io_err = |source| RegressionsError::Io {
        path: path.to_owned(),
        source,
    };
    let mut text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => HEADER.to_owned(),
        Err(e) => return Err(io_err(e)),
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    // One line whatever `what` holds.
    let what = what.lines().next().unwrap_or("");
    text.push_str(&format!("{test} {seed} # {what}\n"));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(io_err)?;
    }
    let tmp = path.with_extension(format!("txt.{}.tmp", std::process::id()));
    // Private, as every file zklock writes (0600 on Unix); the rename keeps the mode.
    let mut open = fs::OpenOptions::new();
    open.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
    let written = open
        .open(&tmp)
        .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()))
        .and_then(|()| fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io_err(e));
    }
    Ok(Recorded::Added)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The regressions file was 0644, where zklock's files are private.
    #[cfg(unix)]
    #[test]
    fn a_regressions_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zklock-regressions").join("sweep.txt");
        record(&path, "t", 3, "mutual_exclusion").unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_recorded_seed_reads_back_once_per_test() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zklock-regressions").join("herd.txt");
        assert_eq!(seeds_for(&path, "a").unwrap(), Vec::<u64>::new());
        assert_eq!(record(&path, "a", 7, "no_herd").unwrap(), Recorded::Added);
        assert_eq!(record(&path, "b", 9, "x\ny").unwrap(), Recorded::Added);
        assert_eq!(
            record(&path, "a", 7, "no_herd").unwrap(),
            Recorded::AlreadyThere
        );
        assert_eq!(seeds_for(&path, "a").unwrap(), vec![7]);
        assert_eq!(seeds_for(&path, "b").unwrap(), vec![9]);
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# Seeds"), "{text}");
        assert!(text.ends_with("a 7 # no_herd\nb 9 # x\n"), "{text}");
    }

    #[test]
    fn a_bad_line_names_the_file_and_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.txt");
        fs::write(&path, "# fine\n\nt 1\nt one # what\n").unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains("r.txt line 4"), "{e}");
    }

    #[test]
    fn the_file_sits_beside_the_source_found_from_a_parent() {
        let dir = tempfile::tempdir().unwrap();
        let pkg = dir.path().join("member");
        fs::create_dir_all(pkg.join("tests")).unwrap();
        fs::write(pkg.join("tests/herd.rs"), "").unwrap();
        // As a workspace member's `file!()`: relative to the workspace root.
        let got = beside(&pkg, "member/tests/herd.rs").unwrap();
        assert_eq!(got, pkg.join("tests/zklock-regressions/herd.txt"));
        // As a package of its own's.
        let got = beside(&pkg, "tests/herd.rs").unwrap();
        assert_eq!(got, pkg.join("tests/zklock-regressions/herd.txt"));
        assert_eq!(beside(&pkg, "tests/missing.rs"), None);
    }
}
