//! Real ZooKeeper servers for tests, in the manner of Curator's `TestingServer` and
//! `TestingCluster`: [`TestServer`] runs one standalone server, [`TestCluster`] an ensemble,
//! each on free loopback ports in its own temporary directory. Both kill their JVMs
//! (SIGKILL) and remove their files on drop, also while a test panics; a watchdog kills a
//! JVM even if the test process dies without unwinding.
//!
//! Java and ZooKeeper come from Debian's `zookeeper` package by default
//! (`/usr/bin/java`, `/usr/share/java/zookeeper.jar`, `/etc/zookeeper/conf`), or from
//! `ZKLOCK_JAVA`, `ZKLOCK_ZOOKEEPER_JAR` and `ZKLOCK_ZOOKEEPER_CONF`. Call
//! [`availability`] to decide whether to skip a test.
//!
//! Starting, killing and restarting servers block the calling thread (for up to
//! [`ServerOptions::start_timeout`]). In async tests, use a multi-threaded tokio runtime so
//! that clients keep running meanwhile, or call them through `spawn_blocking`.

mod cluster;
mod process;
mod server;
mod session;
mod tree;

pub use cluster::{MAX_ENSEMBLE_SIZE, TestCluster};
pub use process::four_letter_word;
pub use server::TestServer;
pub use session::{SessionKeeper, expire_session, keep_session, kill_session};
pub use tree::delete_tree;

use crate::error::RealError;
use std::path::PathBuf;
use std::time::Duration;

/// Overrides the Java executable (default `/usr/bin/java`).
pub const JAVA_ENV: &str = "ZKLOCK_JAVA";
/// Overrides the ZooKeeper server jar (default `/usr/share/java/zookeeper.jar`).
pub const JAR_ENV: &str = "ZKLOCK_ZOOKEEPER_JAR";
/// Overrides the ZooKeeper conf directory put on the classpath (default
/// `/etc/zookeeper/conf`, used only if it exists).
pub const CONF_ENV: &str = "ZKLOCK_ZOOKEEPER_CONF";

const DEFAULT_JAVA: &str = "/usr/bin/java";
const DEFAULT_JAR: &str = "/usr/share/java/zookeeper.jar";
const DEFAULT_CONF: &str = "/etc/zookeeper/conf";

/// How long [`TestServer::expire_session`] and [`TestCluster::expire_session`] may take.
pub const EXPIRE_TIMEOUT: Duration = Duration::from_secs(20);

/// Set (to anything non-empty) to keep the servers' directories (config, data, output)
/// after the test, for a post-mortem; each kept path is printed.
pub const KEEP_DIRS_ENV: &str = "ZKLOCK_KEEP_SERVER_DIRS";

/// Where Java and ZooKeeper are.
#[derive(Clone, Debug)]
pub struct Installation {
    pub java: PathBuf,
    pub jar: PathBuf,
    /// Put first on the classpath (it holds the logging config); `None` if absent.
    pub conf: Option<PathBuf>,
    /// slf4j-simple, next to the jar, if installed: the Debian jar ships no slf4j binding,
    /// and without one the server's log (which start errors quote) would be empty.
    pub logger: Option<PathBuf>,
}

impl Installation {
    /// Finds Java and ZooKeeper from the environment variables or Debian's paths.
    pub fn detect() -> Result<Installation, RealError> {
        let from_env = |var: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let java = from_env(JAVA_ENV).unwrap_or_else(|| PathBuf::from(DEFAULT_JAVA));
        if !java.is_file() {
            return Err(RealError::NotInstalled {
                what: "Java",
                path: java,
                env_var: JAVA_ENV,
            });
        }
        let jar = from_env(JAR_ENV).unwrap_or_else(|| PathBuf::from(DEFAULT_JAR));
        if !jar.is_file() {
            return Err(RealError::NotInstalled {
                what: "the ZooKeeper jar",
                path: jar,
                env_var: JAR_ENV,
            });
        }
        let conf = match from_env(CONF_ENV) {
            Some(conf) if conf.is_dir() => Some(conf),
            // Asked for explicitly, so its absence is a mistake worth reporting.
            Some(conf) => {
                return Err(RealError::NotInstalled {
                    what: "the ZooKeeper conf directory",
                    path: conf,
                    env_var: CONF_ENV,
                });
            }
            None => Some(PathBuf::from(DEFAULT_CONF)).filter(|c| c.is_dir()),
        };
        let logger = jar
            .parent()
            .map(|dir| dir.join("slf4j-simple.jar"))
            .filter(|l| l.is_file());
        Ok(Installation {
            java,
            jar,
            conf,
            logger,
        })
    }
}

/// `Ok` when Java and ZooKeeper are installed, so real-server tests can run; otherwise the
/// error says what to install.
pub fn availability() -> Result<(), RealError> {
    Installation::detect().map(|_| ())
}

/// For a test that needs a real server: true when one can start here. Otherwise it
/// prints why and returns false, so that the test passes as skipped; under `CI=true`,
/// where the real-server tests must run, it panics with why.
pub fn available_for_tests() -> bool {
    match availability() {
        Ok(()) => true,
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but the real-server tests cannot run: {e}")
        }
        Err(e) => {
            eprintln!("skipping: {e}");
            false
        }
    }
}

fn keep_dirs() -> bool {
    std::env::var_os(KEEP_DIRS_ENV).is_some_and(|v| !v.is_empty())
}

/// What a server's watchdog removes if the test process dies: `dir`, unless kept.
pub(crate) fn orphan_dir(dir: &tempfile::TempDir) -> Option<&std::path::Path> {
    (!keep_dirs()).then(|| dir.path())
}

/// A temporary directory for servers, private to the user (0700), kept if
/// [`KEEP_DIRS_ENV`] is set. Its name carries this process's id
/// (`<prefix><pid>-<random>`), so that a later start can tell a directory left by a
/// process killed outright with its watchdog (which is in a group of its own) and remove
/// it ([`remove_stale_dirs`]).
pub(crate) fn temp_dir(prefix: &str) -> Result<tempfile::TempDir, RealError> {
    let keep = keep_dirs();
    if !keep {
        remove_stale_dirs(&std::env::temp_dir(), prefix);
    }
    let dir = tempfile::Builder::new()
        .prefix(&format!("{prefix}{}-", std::process::id()))
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .disable_cleanup(keep)
        .tempdir()
        .map_err(|e| RealError::io("creating a temporary directory", e))?;
    if keep {
        eprintln!("zklock-real: keeping {}", dir.path().display());
    }
    Ok(dir)
}

/// Removes the directories under `parent` named `<prefix><pid>-...` whose process is no
/// longer running (no `/proc/<pid>`); a process still running keeps its own. Does nothing
/// where there is no `/proc`. Best effort: a directory that cannot be removed stays.
pub(crate) fn remove_stale_dirs(parent: &std::path::Path, prefix: &str) {
    if !std::path::Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Settings of the servers the harness starts.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// ZooKeeper's tick; sessions are checked for expiry once per tick.
    pub tick_time_ms: u32,
    /// The smallest session timeout the server grants.
    pub min_session_timeout_ms: u32,
    /// The largest session timeout the server grants.
    pub max_session_timeout_ms: u32,
    /// How long a server (or an ensemble) may take to start serving.
    pub start_timeout: Duration,
    /// Run the JVM with HotSpot's optimizing compiler (C2), as in production. Default
    /// off: the quick compiler alone (`-XX:TieredStopAtLevel=1`) starts the server sooner,
    /// and test servers do little work. The benchmark turns it on, since a server
    /// answering thousands of requests a second spends its CPU in compiled code.
    pub optimizing_jit: bool,
    /// fsync the transaction log before answering a write (ZooKeeper's `forceSync`, on in
    /// its own default). Default off: tests need no durability, and a write then costs a
    /// page-cache copy instead of a disk flush. The benchmark measures both.
    pub force_sync: bool,
    /// How often the server deletes its empty container nodes (ZooKeeper's
    /// `znode.container.checkIntervalMs`), in ms, 1 to 2^31 - 1. Default `None`:
    /// ZooKeeper's 60 s. Curator's lock directories are containers: a short interval
    /// makes one deleted and made again between a run's attempts.
    pub container_check_interval_ms: Option<u32>,
}

impl Default for ServerOptions {
    /// A 200 ms tick and sessions from 400 ms, so expiry tests take a second or two; the
    /// quick JIT only.
    fn default() -> Self {
        ServerOptions {
            tick_time_ms: 200,
            min_session_timeout_ms: 400,
            max_session_timeout_ms: 60_000,
            start_timeout: Duration::from_secs(60),
            optimizing_jit: false,
            force_sync: false,
            container_check_interval_ms: None,
        }
    }
}

impl ServerOptions {
    pub fn with_tick_time_ms(mut self, ms: u32) -> Self {
        self.tick_time_ms = ms;
        self
    }
    pub fn with_session_timeout_range_ms(mut self, min: u32, max: u32) -> Self {
        self.min_session_timeout_ms = min;
        self.max_session_timeout_ms = max;
        self
    }
    pub fn with_start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }
    pub fn with_optimizing_jit(mut self, on: bool) -> Self {
        self.optimizing_jit = on;
        self
    }
    pub fn with_force_sync(mut self, on: bool) -> Self {
        self.force_sync = on;
        self
    }
    /// See [`ServerOptions::container_check_interval_ms`]; 0 is taken as 1, and more
    /// than 2^31 - 1 as that.
    pub fn with_container_check_interval_ms(mut self, ms: u32) -> Self {
        self.container_check_interval_ms = Some(ms.clamp(1, i32::MAX as u32));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_server_dir_left_by_a_killed_process_is_removed_on_the_next_start() {
        let parent = tempfile::tempdir().unwrap();
        // No process has this id: it is above Linux's largest pid (2^22).
        let stale = parent.path().join("zklock-test-4294967294-abc");
        std::fs::create_dir_all(stale.join("data")).unwrap();
        let live = parent
            .path()
            .join(format!("zklock-test-{}-def", std::process::id()));
        std::fs::create_dir(&live).unwrap();
        let other = parent.path().join("someone-else-4294967294-x");
        std::fs::create_dir(&other).unwrap();
        remove_stale_dirs(parent.path(), "zklock-test-");
        assert!(!stale.exists(), "the dead process's directory stays");
        assert!(live.exists(), "a running process lost its directory");
        assert!(other.exists(), "a directory of another name was removed");
    }

    #[test]
    fn server_dirs_are_private_to_the_user() {
        let dir = temp_dir("zklock-private-test-").unwrap();
        let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        let name = dir.path().file_name().unwrap().to_str().unwrap().to_owned();
        assert!(
            name.starts_with(&format!("zklock-private-test-{}-", std::process::id())),
            "{name}"
        );
    }
}
