//! A Curator or ZooKeeper's-recipes finding as one Java file, `Repro.java`: the script
//! and its faults filled into `java_repro.java` with the library's calls, compiled with
//! `javac` against Debian's jars and run here to verify it.

use super::kazoo::{RunResult, outcome};
use super::line::RealLine;
use super::{ExportError, ExportOptions};
use std::path::{Path, PathBuf};
use std::process::Command;
use zklock_real::plan::{GIVE_UP_HOLD_MS, Repeat, op};

const TEMPLATE: &str = include_str!("java_repro.java");
const CURATOR_CODE: &str = include_str!("java_curator.java");
const WRITELOCK_CODE: &str = include_str!("java_writelock.java");
const ELECTION_CODE: &str = include_str!("java_election.java");

/// How the file states the line it runs, in a comment.
pub(crate) const LINE_PREFIX: &str = "// As zklock runs it: ";

/// The class the file declares, and so its name.
pub(super) const CLASS: &str = "Repro";
pub(super) const FILE_NAME: &str = "Repro.java";

/// A Java library whose locks export.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Library {
    Curator,
    WriteLock,
    /// ZooKeeper's contrib election, `LeaderElectionSupport`.
    Election,
}

/// The locks exported as Java, their library and their kind in the file. An election
/// is driven as the drivers drive it: an acquire joins and awaits leadership, a hold is
/// a term, the release leaves (docs/drivers.md).
pub(super) const LOCKS: [(&str, Library, &str); 6] = [
    ("curator-mutex", Library::Curator, "mutex"),
    ("curator-rw", Library::Curator, "rw"),
    (
        "curator-semaphore-mutex",
        Library::Curator,
        "semaphore-mutex",
    ),
    ("curator-leader-latch", Library::Curator, "leader-latch"),
    ("zookeeper-writelock", Library::WriteLock, "writelock"),
    ("zookeeper-election", Library::Election, "election"),
];

/// The actions the file's proxy carries out.
const ACTIONS: [&str; 4] = ["drop-request", "withhold-reply", "expire", "give-up"];

impl Library {
    pub(super) fn of(lock: &str) -> Option<Library> {
        LOCKS.iter().find(|l| l.0 == lock).map(|l| l.1)
    }

    /// The library's name, as its README says it.
    pub(super) fn name(self) -> &'static str {
        match self {
            Library::Curator => "Curator",
            Library::WriteLock | Library::Election => "ZooKeeper's recipes",
        }
    }

    /// The jars (by Debian's unversioned names) the file compiles and runs against: the
    /// library, ZooKeeper's client and server (the file starts one), and what they load
    /// (slf4j-nop silences slf4j's missing-binding notice).
    pub(super) fn jars(self) -> &'static [&'static str] {
        match self {
            Library::Curator => &[
                "curator-recipes",
                "curator-framework",
                "curator-client",
                "zookeeper",
                "zookeeper-jute",
                "guava",
                "slf4j-api",
                "slf4j-nop",
            ],
            Library::WriteLock => &[
                "zookeeper-recipes-lock",
                "zookeeper",
                "zookeeper-jute",
                "slf4j-api",
                "slf4j-nop",
            ],
            Library::Election => &[
                "zookeeper-recipes-election",
                "zookeeper",
                "zookeeper-jute",
                "slf4j-api",
                "slf4j-nop",
            ],
        }
    }

    fn imports(self) -> &'static str {
        match self {
            Library::Curator => {
                "import java.lang.reflect.Field;\n\
                 import java.lang.reflect.Method;\n\
                 import org.apache.curator.framework.CuratorFramework;\n\
                 import org.apache.curator.framework.CuratorFrameworkFactory;\n\
                 import org.apache.curator.framework.recipes.leader.LeaderLatch;\n\
                 import org.apache.curator.framework.recipes.locks.InterProcessLock;\n\
                 import org.apache.curator.framework.recipes.locks.InterProcessMutex;\n\
                 import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;\n\
                 import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;\n\
                 import org.apache.curator.framework.recipes.locks.Lease;\n\
                 import org.apache.curator.retry.ExponentialBackoffRetry;"
            }
            Library::WriteLock => {
                "import org.apache.zookeeper.recipes.lock.LockListener;\n\
                 import org.apache.zookeeper.recipes.lock.WriteLock;"
            }
            Library::Election => {
                "import java.lang.reflect.Field;\n\
                 import org.apache.zookeeper.recipes.leader.LeaderElectionSupport;\n\
                 import org.apache.zookeeper.recipes.leader.LeaderOffer;"
            }
        }
    }
}

/// The classpath of `library`'s jars under `dir`, as the README and the file's usage say it.
pub(super) fn classpath(library: Library, dir: &Path) -> String {
    let jars: Vec<String> = (library.jars().iter())
        .map(|j| dir.join(format!("{j}.jar")).display().to_string())
        .collect();
    jars.join(":")
}

fn java_string(s: &str) -> String {
    format!("{s:?}")
}

/// The file for `line`, checking `checks`, titled `title`.
pub(super) fn render(
    line: &RealLine,
    checks: &[String],
    title: &str,
) -> Result<String, ExportError> {
    let (library, kind) = LOCKS
        .iter()
        .find(|l| l.0 == line.lock)
        .map(|l| (l.1, l.2))
        .ok_or_else(|| ExportError::UnsupportedLock {
            lock: line.lock.clone(),
        })?;
    let w = &line.workload;
    if w.attempts_per_client == 0 {
        return Err(ExportError::Invalid {
            reason: "an export runs a fixed script: the line has no --attempts".into(),
        });
    }
    let mut faults = Vec::new();
    for aim in &line.aims {
        if !ACTIONS.contains(&aim.action.as_str()) {
            return Err(ExportError::Unsupported {
                reason: format!(
                    "--aim {aim}: a Java export carries {} only (a pause or a crash needs \
                     zklock's process control)",
                    ACTIONS.join(", ")
                ),
            });
        }
        let (next, window_ms) = match aim.repeat {
            Repeat::Once => (1, 0),
            Repeat::Next(n) => (n, 0),
            Repeat::WindowMs(ms) => (0, ms),
        };
        let ops: Vec<String> = (op::by_name(&aim.op).unwrap_or(&[]).iter())
            .map(|o| o.to_string())
            .collect();
        faults.push(format!(
            "        new Fault({}, {}, Set.of({}), {}, {}, {next}, {window_ms}, {GIVE_UP_HOLD_MS}),",
            aim.client,
            java_string(&aim.action),
            ops.join(", "),
            java_string(&aim.under),
            aim.nth - 1,
        ));
    }
    // Where the recipe keeps its nodes: a semaphore mutex its inner lock's and its leases.
    let dirs: Vec<String> = match kind {
        "semaphore-mutex" => vec![
            format!("{}/locks", w.lock_path),
            format!("{}/leases", w.lock_path),
        ],
        _ => vec![w.lock_path.clone()],
    };
    let dirs: Vec<String> = dirs.iter().map(|d| java_string(d)).collect();
    let checks_java: Vec<String> = checks.iter().map(|c| java_string(c)).collect();
    let script = format!(
        "    static final String KIND = {kind};\n\
         \x20   static String LOCK_PATH = {lock_path};\n\
         \x20   // Where its nodes are kept.\n\
         \x20   static final String[] NODE_DIRS = {{{dirs}}};\n\
         \x20   static final int CLIENTS = {clients}, READERS = {readers}, ATTEMPTS = {attempts};\n\
         \x20   static final long SESSION_TIMEOUT_MS = {session}, HOLD_MS = {hold}, ACQUIRE_TIMEOUT_MS = {timeout};\n\
         \x20   // Every DROP_EVERY-th attempt is given up (interrupted) after a few ms.\n\
         \x20   static final int DROP_EVERY = {drop_every}, MIX_OFFSET = {mix}, LONG_HOLD_EVERY = {long_every}, \
         FRESH_LOCK_EVERY = {fresh};\n\
         \x20   static final long DROP_AFTER_MS_MAX = {drop_max}, START_STAGGER_MS = {stagger}, \
         LONG_HOLD_MS = {long_ms}, IDLE_AFTER_GIVE_UP_MS = {idle};\n\
         \x20   // How long a failed attempt's node may outlive it while its session lives.\n\
         \x20   static final long LEAK_BOUND_MS = {leak};\n\
         \x20   // client, action, request types, path prefix, matching requests let through first,\n\
         \x20   // how many struck (or a window in ms), how long a give-up holds its request.\n\
         \x20   static final Fault[] FAULTS = {{\n{faults}\n    }};\n\
         \x20   static final Set<String> CHECK = Set.of({checks});",
        kind = java_string(kind),
        lock_path = java_string(&w.lock_path),
        dirs = dirs.join(", "),
        clients = w.clients,
        readers = w.readers,
        attempts = w.attempts_per_client,
        session = w.session_timeout_ms,
        hold = w.hold_ms,
        timeout = w.acquire_timeout_ms,
        drop_every = w.drop_every,
        mix = w.mix_offset,
        long_every = w.long_hold_every,
        fresh = w.fresh_lock_every,
        drop_max = w.drop_after_ms_max,
        stagger = w.start_stagger_ms,
        long_ms = w.long_hold_ms,
        idle = w.idle_after_give_up_ms,
        leak = w.leak_bound_in_force_ms(),
        faults = faults.join("\n"),
        checks = checks_java.join(", "),
    );
    let code = match library {
        Library::Curator => CURATOR_CODE,
        Library::WriteLock => WRITELOCK_CODE,
        Library::Election => ELECTION_CODE,
    };
    let cp = classpath(library, Path::new(super::JAVA_LIBS_DEFAULT));
    Ok(TEMPLATE
        .replacen("__TITLE__", title, 1)
        .replacen("__LINE__", &line.to_string(), 1)
        .replacen("__LIBRARY__", library.name(), 1)
        .replacen("__CLASSPATH__", &cp, 1)
        .replacen("__IMPORTS__", library.imports(), 1)
        .replacen("__SCRIPT__", &script, 1)
        .replacen("__LIBRARY_CODE__", code.trim_end(), 1))
}

fn run_error(reason: String) -> ExportError {
    ExportError::Run { reason }
}

/// Compiles `file` (once for each text: its classes are kept beside it, under a name of
/// its hash) and runs it once (its own server: `ZK_HOSTS` is not passed on), without its
/// faults when `no_fault`. The versions line comes back too.
pub(super) fn run_file(
    options: &ExportOptions,
    library: Library,
    file: &Path,
    no_fault: bool,
) -> Result<(RunResult, Option<String>), ExportError> {
    for jar in library.jars() {
        let path = options.java_libs.join(format!("{jar}.jar"));
        if !path.is_file() {
            return Err(run_error(format!(
                "{} not found: {} needs {} in {} (Debian: {})",
                path.display(),
                library.name(),
                library.jars().join(", "),
                options.java_libs.display(),
                match library {
                    Library::Curator => zklock_real::driver::locate::CURATOR_HINT,
                    Library::WriteLock | Library::Election => {
                        zklock_real::driver::locate::ZOOKEEPER_HINT
                    }
                }
            )));
        }
    }
    let cp = classpath(library, &options.java_libs);
    let classes = compiled(options, &cp, file)?;
    let mut command = Command::new(&options.java);
    command
        .args(["-Xmx256m", "-XX:+UseSerialGC", "-XX:-UsePerfData"])
        .arg("-cp")
        .arg(format!("{cp}:{}", classes.display()))
        .arg(CLASS)
        .env_remove("ZK_HOSTS");
    if no_fault {
        command.arg("--no-fault");
    }
    let out = command
        .output()
        .map_err(|e| run_error(format!("running {}: {e}", options.java.display())))?;
    outcome(&options.java.display().to_string(), file, &out)
}

/// The directory of `file`'s classes, compiled with `javac` unless they are already.
fn compiled(options: &ExportOptions, cp: &str, file: &Path) -> Result<PathBuf, ExportError> {
    use std::hash::{Hash, Hasher};
    let text = std::fs::read(file).map_err(|source| ExportError::Io {
        path: file.to_owned(),
        source,
    })?;
    // SipHash with fixed keys: the same text, the same directory.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    let parent = file.parent().unwrap_or(Path::new("."));
    let classes = parent.join(format!(".classes-{:016x}", h.finish()));
    if classes.join(format!("{CLASS}.class")).is_file() {
        return Ok(classes);
    }
    let out = Command::new(&options.javac)
        .args(["-nowarn", "-d"])
        .arg(&classes)
        .arg("-cp")
        .arg(cp)
        .arg(file)
        .output()
        .map_err(|e| run_error(format!("running {}: {e}", options.javac.display())))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&classes);
        return Err(run_error(format!(
            "{} {} did not compile: {}",
            options.javac.display(),
            file.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(classes)
}
