//! Finding and building the drivers: Kazoo's is a Python script, Curator's and ZooKeeper's
//! contrib recipes' are Java classes compiled with `javac` against Debian's jars on first use;
//! all are embedded in zklock
//! and written to a cache directory ([`cache_dir`]), keyed by a hash of their source, so
//! a changed driver is rebuilt and an unchanged one is not.

use super::DriverKind;
use super::conn::Conn;
use super::pool::DriverPool;
use super::protocol::Request;
use crate::error::RealError;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

/// Overrides the Python that has Kazoo (default `/usr/bin/python3`).
pub const PYTHON_ENV: &str = "ZKLOCK_PYTHON";
/// Overrides the `javac` that builds the Java drivers (default `/usr/bin/javac`).
pub const JAVAC_ENV: &str = "ZKLOCK_JAVAC";
/// Overrides the directory of Curator's, ZooKeeper's and their dependencies' jars
/// (default `/usr/share/java`, where Debian's `libcurator-recipes-java` and
/// `libzookeeper-java` put them).
pub const JARS_ENV: &str = "ZKLOCK_JAVA_LIBS";
/// Overrides where built drivers are kept (default `$XDG_CACHE_HOME/zklock/drivers`, or
/// `~/.cache/zklock/drivers`).
pub const CACHE_ENV: &str = "ZKLOCK_DRIVER_CACHE";

/// What each library's driver needs installed, for the "not installed" errors.
pub const KAZOO_HINT: &str = "apt-get install -y python3-kazoo";
pub const CURATOR_HINT: &str = "apt-get install -y libcurator-recipes-java openjdk-17-jdk-headless";
/// ZooKeeper's WriteLock and LeaderElectionSupport are in `zookeeper-recipes-lock.jar` and
/// `zookeeper-recipes-election.jar`, which Debian's `zookeeper` package installs (through
/// `libzookeeper-java`).
pub const ZOOKEEPER_HINT: &str = "apt-get install -y libzookeeper-java openjdk-17-jdk-headless";

const KAZOO_SOURCE: &str = include_str!("../../../drivers/kazoo/zklock_driver.py");
const CURATOR_SOURCE: &str = include_str!("../../../drivers/curator/ZklockCuratorDriver.java");
const CURATOR_CLASS: &str = "ZklockCuratorDriver";
const ZOOKEEPER_SOURCE: &str =
    include_str!("../../../drivers/zookeeper/ZklockZookeeperDriver.java");
const ZOOKEEPER_CLASS: &str = "ZklockZookeeperDriver";
/// The jars ZooKeeper's recipes' driver compiles and runs against: the recipes, ZooKeeper's
/// client, and what it loads.
const ZOOKEEPER_JARS: [&str; 6] = [
    "zookeeper-recipes-lock",
    "zookeeper-recipes-election",
    "zookeeper",
    "zookeeper-jute",
    "slf4j-api",
    "slf4j-nop",
];
/// The jars Curator's driver compiles and runs against: Curator, ZooKeeper's client, and
/// what they load (slf4j-nop silences slf4j's missing-binding notice).
const CURATOR_JARS: [&str; 8] = [
    "curator-recipes",
    "curator-framework",
    "curator-client",
    "zookeeper",
    "zookeeper-jute",
    "guava",
    "slf4j-api",
    "slf4j-nop",
];
/// The JVM's options: a driver is small, and several run at once on a small machine.
/// Its stdout carries the protocol only: the JVM's own warnings go to stderr (by default
/// they go to stdout, as the warning of an `hsperfdata` file another process holds once
/// did), and it keeps no `hsperfdata` file at all.
pub const JVM_OPTIONS: [&str; 6] = [
    "-Xmx128m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Xss512k",
    "-XX:-UsePerfData",
    "-Xlog:all=warning:stderr",
];

/// What a driver's session is opened with: its command line, or its `open`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SessionArgs<'a> {
    /// The driver's own name of the lock (`mutex`, `read`, ...).
    pub program_kind: &'a str,
    pub connect: &'a str,
    pub lock_path: &'a str,
    pub session_timeout_ms: u64,
}

/// How to start a driver of one library.
#[derive(Debug)]
pub enum Launcher {
    Python {
        python: PathBuf,
        script: PathBuf,
    },
    /// `archive`: the archive of the driver's classes the JVM maps at start, when
    /// one could be made.
    Java {
        java: PathBuf,
        classpath: String,
        archive: Option<PathBuf>,
    },
    InProcess,
}

impl Launcher {
    /// Locates the library of `kind` and its driver, building it if need be.
    pub fn prepare(kind: DriverKind) -> Result<Launcher, RealError> {
        let err = |reason: String| RealError::Driver {
            driver: kind.name().into(),
            reason,
        };
        match kind {
            DriverKind::KazooLock
            | DriverKind::KazooRw
            | DriverKind::KazooSemaphore
            | DriverKind::KazooElection => {
                let python = python();
                let probe = std::process::Command::new(&python)
                    .args(["-c", "import kazoo.recipe.lock"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                if !probe.is_ok_and(|s| s.success()) {
                    return Err(err(format!(
                        "{} cannot import Kazoo: {KAZOO_HINT}, or point {PYTHON_ENV} at a \
                         Python that has it",
                        python.display()
                    )));
                }
                let dir = cache_dir()
                    .map_err(err)?
                    .join(format!("kazoo-{}", hash(KAZOO_SOURCE)));
                let script = dir.join("zklock_driver.py");
                if !script.is_file() {
                    write_atomically(&dir, &script, KAZOO_SOURCE).map_err(err)?;
                }
                Ok(Launcher::Python { python, script })
            }
            DriverKind::CuratorMutex
            | DriverKind::CuratorRw
            | DriverKind::CuratorSemaphoreMutex
            | DriverKind::CuratorLeaderLatch
            | DriverKind::CuratorLeaderSelector => {
                let classpath = curator_program(CURATOR_CLASS, CURATOR_SOURCE).map_err(err)?;
                java_launcher(classpath, CURATOR_CLASS)
            }
            DriverKind::ZookeeperWriteLock | DriverKind::ZookeeperElection => {
                let classpath = java_program(
                    ZOOKEEPER_CLASS,
                    ZOOKEEPER_SOURCE,
                    &ZOOKEEPER_JARS,
                    ZOOKEEPER_HINT,
                )
                .map_err(err)?;
                java_launcher(classpath, ZOOKEEPER_CLASS)
            }
            DriverKind::ZkclientLock => Ok(Launcher::InProcess),
        }
    }

    /// Starts a driver of `kind` for `session` (or opens it on a process `pool` kept):
    /// the connection speaks the protocol from here on (its hello comes in its own time).
    pub(crate) fn spawn(
        &self,
        kind: DriverKind,
        session: SessionArgs<'_>,
        fatal: Arc<Mutex<Option<String>>>,
        pool: Option<&Arc<DriverPool>>,
    ) -> Result<Conn, String> {
        let SessionArgs {
            program_kind,
            connect,
            lock_path,
            session_timeout_ms,
        } = session;
        // Processes of one launcher are alike: one kept from another run serves as well.
        let key = format!("{self:?}");
        if !matches!(self, Launcher::InProcess)
            && let Some(pool) = pool
            && let Some(idle) = pool.take(&key)
        {
            let open = Request::Open {
                kind: program_kind.to_owned(),
                connect: connect.to_owned(),
                lock_path: lock_path.to_owned(),
                session_timeout_ms,
            };
            return Ok(Conn::reopen(idle, &open, fatal, pool.clone(), key));
        }
        let args = [
            program_kind.to_owned(),
            connect.to_owned(),
            lock_path.to_owned(),
            session_timeout_ms.to_string(),
        ];
        let mut command = match self {
            Launcher::Python { python, script } => {
                let mut c = orphan_proof(python);
                // Unbuffered: every report leaves at once.
                c.arg("-u").arg(script);
                c
            }
            Launcher::Java {
                java,
                classpath,
                archive,
            } => {
                let mut c = orphan_proof(java);
                c.args(JVM_OPTIONS);
                if let Some(archive) = archive {
                    // A JVM that cannot use it (another JDK, changed jars) says so on
                    // stderr and loads the classes itself.
                    c.arg(format!("-XX:SharedArchiveFile={}", archive.display()));
                }
                c.arg("-cp").arg(classpath).arg(java_class(kind));
                c
            }
            Launcher::InProcess => {
                return Ok(super::zkclient::spawn(
                    kind.name(),
                    connect,
                    lock_path,
                    session_timeout_ms,
                    fatal,
                ));
            }
        };
        command
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A process group of its own: a Ctrl-C at the terminal reaches zklock, which
            // winds the run down and needs its drivers for that, not the drivers.
            .process_group(0)
            .kill_on_drop(true);
        // A kept process serves runs on other threads than the one that started it: it is
        // started from a thread that lasts as long as zklock, so that its parent-death
        // signal comes with zklock's end, not with a job thread's.
        let spawned = match pool {
            Some(_) => spawn_lasting(command),
            None => command.spawn(),
        };
        let mut child = spawned.map_err(|e| format!("starting driver {kind}: {e}"))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(format!("driver {kind}: its pipes were not set up"));
        };
        let mut conn = Conn::new(kind.name().into(), stdout, stdin, Some(child), fatal);
        conn.follow_stderr(stderr);
        if let Some(pool) = pool {
            pool.count_started();
            conn = conn.returning_to(pool.clone(), key);
        }
        Ok(conn)
    }
}

/// The launcher of a Java driver `class` on `classpath`, with its class archive.
fn java_launcher(classpath: String, class: &str) -> Result<Launcher, RealError> {
    let java = crate::harness::Installation::detect()?.java;
    let archive = class_archive(&java, &classpath, class);
    Ok(Launcher::Java {
        java,
        classpath,
        archive,
    })
}

/// The main class of a Java driver of `kind`.
fn java_class(kind: DriverKind) -> &'static str {
    match kind {
        DriverKind::ZookeeperWriteLock | DriverKind::ZookeeperElection => ZOOKEEPER_CLASS,
        _ => CURATOR_CLASS,
    }
}

/// The Python that runs Kazoo's driver: [`PYTHON_ENV`] if set and not empty, else
/// `/usr/bin/python3`. Whether it has Kazoo is not checked here.
pub fn python() -> PathBuf {
    env_path(PYTHON_ENV, "/usr/bin/python3")
}

/// The `javac` that builds the Java drivers: [`JAVAC_ENV`] if set and not empty, else
/// `/usr/bin/javac`. Whether it exists is not checked here.
pub fn javac() -> PathBuf {
    env_path(JAVAC_ENV, "/usr/bin/javac")
}

fn env_path(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(default), PathBuf::from)
}

/// Where built drivers are kept: [`CACHE_ENV`], `$XDG_CACHE_HOME/zklock/drivers`, or
/// `~/.cache/zklock/drivers`.
pub fn cache_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os(CACHE_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })
        .ok_or_else(|| format!("no cache directory: set {CACHE_ENV}, XDG_CACHE_HOME or HOME"))?;
    Ok(base.join("zklock").join("drivers"))
}

/// FNV-1a of `text`, in hex: names a driver's build by its source.
fn hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Creates `dir` (private) and writes `file` through a temporary name, so a concurrent
/// run never reads half a file.
fn write_atomically(dir: &Path, file: &Path, text: &str) -> Result<(), String> {
    create_private_dir(dir)?;
    let tmp = dir.join(format!(".tmp-{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| format!("writing {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, file).map_err(|e| format!("writing {}: {e}", file.display()))
}

fn create_private_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("creating {}: {e}", dir.display()))
}

/// The classpath that runs `class` (its source `source`) against Debian's Curator jars:
/// the jars, and `source` compiled with `javac` into the cache on first use (by the
/// source's hash, so an edited source builds afresh). Curator's driver and the bench's
/// Curator contender both run this way.
pub fn curator_program(class: &str, source: &str) -> Result<String, String> {
    java_program(class, source, &CURATOR_JARS, CURATOR_HINT)
}

/// The classpath that runs `class` (its source `source`) against the jars named `jars`
/// in [`JARS_ENV`]'s directory, as [`curator_program`] does; `hint` says what to install
/// when one is missing.
fn java_program(class: &str, source: &str, jars: &[&str], hint: &str) -> Result<String, String> {
    let dir_of_jars = env_path(JARS_ENV, "/usr/share/java");
    let mut classpath = Vec::new();
    for jar in jars {
        let path = dir_of_jars.join(format!("{jar}.jar"));
        if !path.is_file() {
            let names: Vec<String> = jars.iter().map(|j| format!("{j}.jar")).collect();
            return Err(format!(
                "{} is missing: {hint}, or point {JARS_ENV} at a directory holding {}",
                path.display(),
                names.join(", ")
            ));
        }
        classpath.push(path.display().to_string());
    }
    // The layout's version is hashed with the source: a cache of another layout is not
    // read as this one.
    let key = hash(&format!("{BUILD_LAYOUT}\n{source}"));
    let dir = cache_dir()?.join(format!("{}-{key}", class.to_lowercase()));
    if !dir.join("classes").join(format!("{class}.class")).is_file() {
        compile_java(&dir, &classpath.join(":"), class, source, hint)?;
    }
    // The JVM archives the classes of jars only ([`class_archive`]).
    let jar = dir.join(format!("{class}.jar"));
    let program = if jar.is_file() {
        jar
    } else {
        dir.join("classes")
    };
    classpath.push(program.display().to_string());
    Ok(classpath.join(":"))
}

/// The layout of a build in the cache: `classes/` (javac's output), `<class>.jar` (the
/// same classes, when the JDK has `jar`), and `classes-<jvm>.jsa` ([`class_archive`]).
const BUILD_LAYOUT: u32 = 2;

/// A name no other build or training of this process or another uses at once.
fn private_name(prefix: &str, suffix: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{prefix}-{}-{n}{suffix}", std::process::id())
}

/// How long the training run behind [`class_archive`] may take; it needs no server and
/// takes about a second.
const TRAINING_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The archive of the classes a Java driver (`class`) loads, for the JVM to map at start
/// (application class-data sharing) rather than load them again: it halves the CPU a
/// driver's JVM takes to start, and zklock starts several a run (two a client, with the
/// one started ahead). Made on first use by the driver's training run
/// (`<class> train`, offline), and kept beside the build, named by the JVM it
/// was made with. None, and the driver starts without it, when the driver is not in a
/// jar (no `jar` tool) or the training fails (said once on stderr).
fn class_archive(java: &Path, classpath: &str, class: &str) -> Option<PathBuf> {
    let program = Path::new(classpath.rsplit(':').next()?);
    if program.extension().is_none_or(|e| e != "jar") {
        return None;
    }
    let dir = program.parent()?;
    let jvm = std::fs::canonicalize(java).ok()?;
    let built = std::fs::metadata(&jvm).and_then(|m| m.modified()).ok();
    let key = hash(&format!(
        "{}\n{built:?}\n{}",
        jvm.display(),
        JVM_OPTIONS.join(" ")
    ));
    let archive = dir.join(format!("classes-{key}.jsa"));
    if archive.is_file() {
        return Some(archive);
    }
    // A training that failed is not tried again by this process: a search prepares a
    // driver for every run. The lock is held through a training, so that threads
    // preparing at once wait for one JVM's archive instead of each training their own.
    static FAILED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let mut failed = FAILED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if failed.contains(&archive) {
        return None;
    }
    let made = make_archive(java, classpath, &archive, class);
    if made.is_none() {
        failed.push(archive);
    }
    made
}

fn make_archive(java: &Path, classpath: &str, archive: &Path, class: &str) -> Option<PathBuf> {
    let tmp = archive.with_file_name(private_name(".classes", ".jsa"));
    let made = train(java, classpath, &tmp, class).and_then(|()| {
        std::fs::rename(&tmp, archive).map_err(|e| format!("it wrote no archive ({e})"))
    });
    match made {
        Ok(()) => Some(archive.to_path_buf()),
        Err(why) => {
            eprintln!("note: {class} starts without a class archive: {why}");
            let _ = std::fs::remove_file(&tmp);
            None
        }
    }
}

/// Runs the driver's training with `-XX:ArchiveClassesAtExit=archive`.
fn train(java: &Path, classpath: &str, archive: &Path, class: &str) -> Result<(), String> {
    let mut child = std::process::Command::new(java)
        .args(JVM_OPTIONS)
        .arg(format!("-XX:ArchiveClassesAtExit={}", archive.display()))
        .arg("-cp")
        .arg(classpath)
        .args([class, "train"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("running {}: {e}", java.display()))?;
    let deadline = std::time::Instant::now() + TRAINING_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("its training run ended with {status}")),
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "its training run took over {} s",
                    TRAINING_TIMEOUT.as_secs()
                ));
            }
            Err(e) => return Err(format!("waiting for its training run: {e}")),
        }
    }
}

/// Compiles `class` against `classpath` into `dir`, through a private build directory
/// renamed into place, so a concurrent run sees the class whole or not at all.
fn compile_java(
    dir: &Path,
    classpath: &str,
    class: &str,
    source: &str,
    hint: &str,
) -> Result<(), String> {
    let javac = javac();
    if !javac.is_file() {
        return Err(format!(
            "{} is missing ({class} is compiled on first use): {hint}, or point {JAVAC_ENV} \
             at a javac",
            javac.display()
        ));
    }
    let parent = dir.parent().ok_or("the cache directory has no parent")?;
    create_private_dir(parent)?;
    let build = parent.join(private_name(".build", ""));
    let _ = std::fs::remove_dir_all(&build);
    create_private_dir(&build)?;
    let file = build.join(format!("{class}.java"));
    std::fs::write(&file, source).map_err(|e| format!("writing {}: {e}", file.display()))?;
    eprintln!("building {class} with {} (once)...", javac.display());
    let classes = build.join("classes");
    let out = std::process::Command::new(&javac)
        .args(["-nowarn", "-encoding", "UTF-8", "-d"])
        .arg(&classes)
        .arg("-cp")
        .arg(classpath)
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running {}: {e}", javac.display()))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&build);
        return Err(format!(
            "{} failed on {class}: {}",
            javac.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    jar_up(&javac, &classes, &build.join(format!("{class}.jar")));
    match std::fs::rename(&build, dir) {
        Ok(()) => Ok(()),
        // Another run built it meanwhile: theirs is as good.
        Err(_) if dir.join("classes").join(format!("{class}.class")).is_file() => {
            let _ = std::fs::remove_dir_all(&build);
            Ok(())
        }
        Err(e) => Err(format!("moving the build to {}: {e}", dir.display())),
    }
}

/// Puts `classes` into `jar` with the `jar` tool beside `javac`, if it has one; without,
/// the program runs from its directory (and without a class archive).
fn jar_up(javac: &Path, classes: &Path, jar: &Path) {
    let Some(tool) = std::fs::canonicalize(javac)
        .ok()
        .and_then(|j| Some(j.parent()?.join("jar")))
        .filter(|t| t.is_file())
    else {
        return;
    };
    let made = std::process::Command::new(tool)
        .arg("--create")
        .arg("--file")
        .arg(jar)
        .arg("-C")
        .arg(classes)
        .arg(".")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !made.is_ok_and(|s| s.success()) {
        let _ = std::fs::remove_file(jar);
    }
}

/// A spawn on the current runtime, from a thread that never ends (started on first use).
fn spawn_lasting(mut command: tokio::process::Command) -> std::io::Result<tokio::process::Child> {
    type Job = (
        tokio::process::Command,
        tokio::runtime::Handle,
        std::sync::mpsc::SyncSender<std::io::Result<tokio::process::Child>>,
    );
    static SPAWNER: std::sync::OnceLock<Mutex<std::sync::mpsc::Sender<Job>>> =
        std::sync::OnceLock::new();
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return command.spawn();
    };
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let started = std::thread::Builder::new()
            .name("zklock-driver-spawner".into())
            .spawn(move || {
                for (mut command, handle, reply) in rx {
                    // The child is the runtime's: its exit is reaped by that runtime.
                    let _entered = handle.enter();
                    let _ = reply.send(command.spawn());
                }
            });
        if let Err(e) = started {
            eprintln!("note: no thread for kept driver processes ({e})");
        }
        Mutex::new(tx)
    });
    let (reply, answer) = std::sync::mpsc::sync_channel(1);
    let sent = spawner
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .send((command, handle, reply));
    match sent {
        Ok(()) => answer
            .recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("the spawner thread is gone"))),
        // No spawner thread: started here, as without a pool.
        Err(std::sync::mpsc::SendError((mut command, _, _))) => command.spawn(),
    }
}

/// util-linux's setpriv, which sets the parent-death signal of the program it runs.
const SETPRIV: &str = "/usr/bin/setpriv";

/// A command running `program` that the kernel kills (SIGKILL) when the thread that
/// started it ends, through setpriv where there is one: a driver must not outlive
/// zklock, even when zklock is killed (SIGKILL, a second Ctrl-C) while a pause fault
/// holds the driver stopped (SIGSTOP), where nothing else would ever end it. setpriv
/// execs the program, so the driver keeps the pid the faults signal. The drivers are
/// started from the runtime's worker threads, which live as long as the run.
fn orphan_proof(program: &Path) -> tokio::process::Command {
    if Path::new(SETPRIV).is_file() {
        let mut c = tokio::process::Command::new(SETPRIV);
        c.args(["--pdeathsig", "KILL", "--"]).arg(program);
        c
    } else {
        tokio::process::Command::new(program)
    }
}
