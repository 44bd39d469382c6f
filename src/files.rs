//! Files the command line writes: private to the user, and never silently replacing one
//! that is there.

use anyhow::{Context, Result, bail};
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use zklock_checker::Trace;

/// Most numbered names tried beside an existing trace (`seed-3-2.json` ...).
const BESIDE_MAX: u32 = 1000;

/// Creates `dir` and its missing parents, private to the user (0700 on Unix).
pub fn create_private_dir(dir: &Path) -> Result<()> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
        .with_context(|| format!("creating {}", dir.display()))
}

/// Creates `path` as a new, empty, private file (0600 on Unix); fails if it exists.
fn create_new_private(path: &Path) -> io::Result<fs::File> {
    let mut o = fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
}

/// Whether `path`, its shrunk trace (`.min.json`), or a timeline of either exists.
fn trace_taken(path: &Path) -> bool {
    let min = path.with_extension("min.json");
    [path, min.as_path()]
        .iter()
        .any(|p| p.exists() || Trace::timeline_path(p).exists() || Trace::html_path(p).exists())
}

/// `dir/stem.json`, or, where that trace, its timeline or its shrunk trace exists, the
/// first free `dir/stem-2.json`, `dir/stem-3.json`... With `force`, `dir/stem.json`
/// whatever is there. The name is reserved (an empty private file) so that a run in parallel does not
/// take it too; [`Trace::write`] then replaces the reservation.
pub fn trace_path(dir: &Path, stem: &str, force: bool) -> Result<PathBuf> {
    let first = dir.join(format!("{stem}.json"));
    if force {
        return Ok(first);
    }
    for k in 1..=BESIDE_MAX {
        let path = match k {
            1 => first.clone(),
            k => dir.join(format!("{stem}-{k}.json")),
        };
        if trace_taken(&path) {
            continue;
        }
        match create_new_private(&path) {
            Ok(_) => return Ok(path),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
        }
    }
    bail!(
        "{} and {BESIDE_MAX} numbered names beside it exist already: move some away, or \
         pass --force to replace it",
        first.display()
    )
}

/// Checks, before a run, that `dir` can be the directory `flag` names for its output: a
/// directory, or a path whose nearest existing ancestor is one (it is created when
/// something is written). A run must not find out after its work that its findings have
/// nowhere to go.
pub fn check_out_dir(flag: &str, dir: &Path) -> Result<()> {
    let mut at = Some(dir);
    while let Some(p) = at {
        // An empty path is the working directory.
        let p = if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        };
        match fs::metadata(p) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) if p == dir => bail!(
                "{flag} {}: it is a file, not a directory: name a directory",
                dir.display()
            ),
            Ok(_) => bail!(
                "{flag} {}: {} is a file, so the directory cannot be created",
                dir.display(),
                p.display()
            ),
            // Not there, or under a file: the ancestors tell which.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                at = p.parent()
            }
            Err(e) => return Err(e).with_context(|| format!("{flag} {}", dir.display())),
        }
    }
    Ok(())
}

/// Checks, before a run, the file `flag` names for its output: not a directory, not
/// there already unless `force` (nor, for a trace, its timelines), and in a directory
/// that exists.
pub fn check_out_file(flag: &str, path: &Path, is_trace: bool, force: bool) -> Result<()> {
    refuse_existing(path, is_trace, force).with_context(|| flag.to_owned())?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        bail!(
            "{flag} {}: the directory {} does not exist",
            path.display(),
            parent.display()
        );
    }
    Ok(())
}

/// Refuses `path` if it (or, for a trace, one of its timelines) exists, unless `force`;
/// a directory always.
pub fn refuse_existing(path: &Path, is_trace: bool, force: bool) -> Result<()> {
    if path.is_dir() {
        bail!(
            "{} is a directory: name a file (--force replaces a file, never a directory \
             and what it holds)",
            path.display()
        );
    }
    if force {
        return Ok(());
    }
    let timeline = Trace::timeline_path(path);
    let html = Trace::html_path(path);
    let taken = if path.exists() {
        Some(path)
    } else if is_trace && timeline.exists() {
        Some(timeline.as_path())
    } else if is_trace && html.exists() {
        Some(html.as_path())
    } else {
        None
    };
    if let Some(p) = taken {
        bail!(
            "{} exists already: pass --force to replace it, or choose another name",
            p.display()
        );
    }
    Ok(())
}

/// Writes `bytes` to `path` as a private file, through a temporary file and a rename;
/// replaces an existing file only with `force` (checked again right before).
pub fn write_private(path: &Path, bytes: &[u8], force: bool) -> Result<()> {
    use std::io::Write as _;
    refuse_existing(path, false, force)?;
    let mut tmp: OsString = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let result = (|| {
        let mut f = create_new_private(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        if force {
            fs::rename(&tmp, path)
        } else {
            // A hard link fails if the name was taken meanwhile, where a rename would not.
            fs::hard_link(&tmp, path).and_then(|()| fs::remove_file(&tmp))
        }
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_name_in_use_gets_a_numbered_one_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let a = trace_path(dir.path(), "seed-3", false).unwrap();
        assert_eq!(a, dir.path().join("seed-3.json"));
        let b = trace_path(dir.path(), "seed-3", false).unwrap();
        assert_eq!(b, dir.path().join("seed-3-2.json"));
        // A timeline alone holds its trace's name too.
        fs::write(dir.path().join("seed-3-3.json.timeline.txt"), "x").unwrap();
        let c = trace_path(dir.path(), "seed-3", false).unwrap();
        assert_eq!(c, dir.path().join("seed-3-4.json"));
        // And a shrunk trace its original's, whose shrink goes beside it.
        fs::write(dir.path().join("seed-3-5.min.json"), "x").unwrap();
        let d = trace_path(dir.path(), "seed-3", false).unwrap();
        assert_eq!(d, dir.path().join("seed-3-6.json"));
        assert_eq!(trace_path(dir.path(), "seed-3", true).unwrap(), a);
    }

    #[cfg(unix)]
    #[test]
    fn files_and_directories_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a/b");
        create_private_dir(&sub).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&sub), 0o700);
        assert_eq!(mode(&dir.path().join("a")), 0o700);
        let f = sub.join("s.json");
        write_private(&f, b"{}", false).unwrap();
        assert_eq!(mode(&f), 0o600);
        let e = write_private(&f, b"{}", false).unwrap_err();
        assert!(format!("{e:#}").contains("exists already"), "{e:#}");
        write_private(&f, b"[]", true).unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"[]");
    }
}

/// The names of `known` nearest to `name`, the nearest first, at most 3: those within a
/// few edits of it (a third of its length, at least 2), or that contain it or it them.
pub(crate) fn nearest_names<'a>(name: &str, known: &[&'a str]) -> Vec<&'a str> {
    let within = (name.chars().count() / 3).max(2);
    let mut near: Vec<(usize, &str)> = known
        .iter()
        .map(|k| (edit_distance(name, k), *k))
        .filter(|(d, k)| {
            *d <= within || (name.len() >= 3 && (k.contains(name) || name.contains(k)))
        })
        .collect();
    near.sort();
    near.into_iter().take(3).map(|(_, k)| k).collect()
}

/// Levenshtein's distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(diag + usize::from(ca != *cb));
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod nearest_tests {
    use super::nearest_names;

    /// An unknown recipe listed 28 names and no "did you mean".
    #[test]
    fn a_typo_finds_the_name_it_meant() {
        let known = [
            "zklock",
            "zklock-rw",
            "semaphore",
            "blind-lock",
            "herd-lock",
        ];
        assert_eq!(nearest_names("semaphor", &known), ["semaphore"]);
        assert_eq!(nearest_names("zklok", &known)[0], "zklock");
        assert!(nearest_names("entirely-else", &known).is_empty());
    }
}
