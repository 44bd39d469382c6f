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

pub use cluster::TestCluster;
pub use process::four_letter_word;
pub use server::TestServer;

use crate::client::{SessionCredentials, ZkClient};
use crate::error::RealError;
use std::path::PathBuf;
use std::time::Duration;
use zklock_recipe::{Coordination, SessionState};
use zookeeper_client as zk;

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

/// Where Java and ZooKeeper are.
#[derive(Clone, Debug)]
pub struct Installation {
    pub java: PathBuf,
    pub jar: PathBuf,
    /// Put first on the classpath (it holds the logging config); `None` if absent.
    pub conf: Option<PathBuf>,
}

impl Installation {
    /// Finds Java and ZooKeeper from the environment variables or Debian's paths.
    pub fn detect() -> Result<Installation, RealError> {
        let from_env = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from);
        let java = from_env(JAVA_ENV).unwrap_or_else(|| PathBuf::from(DEFAULT_JAVA));
        if !java.is_file() {
            return Err(RealError::NotInstalled { what: "Java", path: java, env_var: JAVA_ENV });
        }
        let jar = from_env(JAR_ENV).unwrap_or_else(|| PathBuf::from(DEFAULT_JAR));
        if !jar.is_file() {
            return Err(RealError::NotInstalled { what: "the ZooKeeper jar", path: jar, env_var: JAR_ENV });
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
        Ok(Installation { java, jar, conf })
    }
}

/// `Ok` when Java and ZooKeeper are installed, so real-server tests can run; otherwise the
/// error says what to install.
pub fn availability() -> Result<(), RealError> {
    Installation::detect().map(|_| ())
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
}

impl Default for ServerOptions {
    /// A 200 ms tick and sessions from 400 ms, so expiry tests take a second or two.
    fn default() -> Self {
        ServerOptions {
            tick_time_ms: 200,
            min_session_timeout_ms: 400,
            max_session_timeout_ms: 60_000,
            start_timeout: Duration::from_secs(60),
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
}

/// Ends the session of `credentials` at the server, as Curator's `KillSession` does: a
/// second client attaches to the same session (same id and password) and closes it. The
/// server deletes the session's ephemerals at once; the original client learns `Expired`
/// when it next talks to the server (attaching takes its connection away, so at once).
///
/// Succeeds also if the session was already gone.
pub async fn kill_session(
    connect_string: &str,
    credentials: &SessionCredentials,
    timeout: Duration,
) -> Result<(), RealError> {
    let session = credentials.session_id().to_string();
    let fail = |reason: String| RealError::ExpireSession { session: session.clone(), reason };
    let attach = zk::Client::connector()
        .with_session(credentials.info.clone())
        .with_session_timeout(credentials.timeout)
        .connect(connect_string);
    let work = async {
        let twin = match attach.await {
            Ok(twin) => twin,
            Err(zk::Error::SessionExpired) => return Ok(()),
            Err(e) => return Err(fail(format!("attaching to the session failed: {e}"))),
        };
        let mut states = twin.state_watcher();
        // Dropping the last handle makes zookeeper-client send CloseSession. If the
        // original client takes the session back first, the twin reconnects and closes it
        // then, since its request channel is closed.
        drop(twin);
        loop {
            match states.changed().await {
                zk::SessionState::Closed | zk::SessionState::Expired => return Ok(()),
                zk::SessionState::AuthFailed => {
                    return Err(fail("the server refused authentication".to_string()));
                }
                _ => {}
            }
        }
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(result) => result,
        Err(_) => Err(fail(format!("no confirmation within {} ms", timeout.as_millis()))),
    }
}

/// Forces `client`'s session to expire (see [`kill_session`]) and waits until the client
/// itself reports [`SessionState::Expired`].
pub async fn expire_session(
    connect_string: &str,
    client: &ZkClient,
    timeout: Duration,
) -> Result<(), RealError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut events = client.session_events();
    kill_session(connect_string, &client.session_credentials(), timeout).await?;
    let expired = tokio::time::timeout_at(deadline, async {
        while client.session_state() != SessionState::Expired {
            if events.next().await.is_none() {
                break;
            }
        }
    })
    .await;
    match client.session_state() {
        SessionState::Expired => Ok(()),
        state => Err(RealError::ExpireSession {
            session: client.session_id().to_string(),
            reason: match expired {
                Ok(()) => format!("the client ended in state {state:?}, not Expired"),
                Err(_) => format!(
                    "the server closed the session, but the client still reports {state:?} \
                     after {} ms",
                    timeout.as_millis()
                ),
            },
        }),
    }
}
