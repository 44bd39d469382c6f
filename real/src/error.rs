//! The crate's typed error: what went wrong outside a ZooKeeper operation (connecting,
//! starting a server, running the proxy), and what to do about it.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;
use zklock_recipe::ZkError;

/// The install hint every "not installed" error carries.
pub const INSTALL_HINT: &str = "install ZooKeeper 3.8 and Java 17 with \
     `apt-get install -y zookeeper openjdk-17-jre-headless` (Debian/Ubuntu), or point \
     ZKLOCK_JAVA, ZKLOCK_ZOOKEEPER_JAR and ZKLOCK_ZOOKEEPER_CONF at an existing installation";

/// Errors of zklock-real outside ZooKeeper operations (those answer with
/// [`ZkError`](zklock_recipe::ZkError)).
#[non_exhaustive]
#[derive(Debug)]
pub enum RealError {
    /// No ZooKeeper server established a session within the connect timeout, or the
    /// client gave up before it.
    ConnectTimeout {
        addr: String,
        /// The connect timeout allowed.
        timeout: Duration,
        /// How long the connect actually waited: the client may give up sooner (after
        /// about a session timeout, or at once on an address it cannot resolve).
        waited: Duration,
    },
    /// Connecting failed for a reason other than a timeout, such as a malformed address.
    Connect { addr: String, error: ZkError },
    /// A program or file the real-server harness needs is missing.
    NotInstalled {
        /// What is missing, e.g. "java" or "ZooKeeper jar".
        what: &'static str,
        /// Where it was looked for.
        path: PathBuf,
        /// The environment variable that overrides that path.
        env_var: &'static str,
    },
    /// A ZooKeeper server did not become ready in time, or its process died while starting.
    ServerStart {
        /// Which server (e.g. "server 2 at 127.0.0.1:40123").
        server: String,
        /// What happened.
        reason: String,
        /// The last lines of the server's output, to see why.
        log_tail: String,
    },
    /// An ensemble has no leader after waiting.
    NoLeader { timeout: Duration },
    /// Forcing a session to expire did not succeed in time.
    ExpireSession { session: String, reason: String },
    /// Keeping an isolated client's session alive at the server failed.
    KeepSession { session: String, reason: String },
    /// A fault-injecting proxy could not do what was asked.
    Proxy { reason: String },
    /// A run's configuration is out of bounds or inconsistent.
    Config { reason: String },
    /// Clearing a subtree between runs failed at `path`.
    Tree { path: String, error: ZkError },
    /// A lock driver (a lock in another process, see `crate::driver`) could not be built
    /// or started, or broke the protocol.
    Driver { driver: String, reason: String },
    /// An I/O error, with what was being done.
    Io {
        context: String,
        source: std::io::Error,
    },
}

impl RealError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        RealError::Io {
            context: context.into(),
            source,
        }
    }
}

impl fmt::Display for RealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RealError::ConnectTimeout {
                addr,
                timeout,
                waited,
            } => {
                write!(
                    f,
                    "no ZooKeeper server at {addr} established a session in the {} ms the \
                     connect waited",
                    waited.as_millis()
                )?;
                // Say so when the client gave up before the timeout allowed.
                if waited < timeout {
                    write!(
                        f,
                        " (the client gave up before the connect timeout of {} ms)",
                        timeout.as_millis()
                    )?;
                }
                write!(
                    f,
                    "; check that a server is running and listening there \
                     (zklock_real::harness::TestServer starts one), or raise the connect \
                     timeout"
                )
            }
            RealError::Connect { addr, error } => write!(
                f,
                "cannot connect to ZooKeeper at {addr}: {error}; check the connect string \
                 (host:port[,host:port...])"
            ),
            RealError::NotInstalled {
                what,
                path,
                env_var,
            } => write!(
                f,
                "{what} not found at {} (set {env_var} to override); {INSTALL_HINT}",
                path.display()
            ),
            RealError::ServerStart {
                server,
                reason,
                log_tail,
            } => {
                write!(f, "ZooKeeper {server} did not start: {reason}")?;
                if log_tail.is_empty() {
                    f.write_str(" (the server wrote no output)")
                } else {
                    write!(f, "; its output ends with:\n{log_tail}")
                }
            }
            RealError::NoLeader { timeout } => write!(
                f,
                "the ensemble elected no leader within {} ms; check that a majority of its \
                 servers is running",
                timeout.as_millis()
            ),
            RealError::ExpireSession { session, reason } => {
                write!(f, "could not force session {session} to expire: {reason}")
            }
            RealError::KeepSession { session, reason } => {
                write!(
                    f,
                    "could not keep session {session} alive at the server: {reason}"
                )
            }
            RealError::Proxy { reason } => write!(f, "fault-injecting proxy: {reason}"),
            RealError::Config { reason } => write!(f, "invalid run configuration: {reason}"),
            RealError::Tree { path, error } => write!(f, "clearing {path}: {error}"),
            RealError::Driver { driver, reason } => write!(f, "lock driver {driver}: {reason}"),
            RealError::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

/// No `source()`: `Connect` and `Io` already say their cause in the message, and a cause
/// both shown and chained is printed twice by error reporters (anyhow's `{:#}`).
impl std::error::Error for RealError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--connect "not a host"` waited 4 s and said "within 10000 ms": the message names
    /// the time the connect waited.
    #[test]
    fn a_connect_timeout_names_the_time_it_actually_waited() {
        let e = RealError::ConnectTimeout {
            addr: "not a host".into(),
            timeout: Duration::from_millis(10_000),
            waited: Duration::from_millis(4_012),
        };
        let m = e.to_string();
        assert!(m.contains("in the 4012 ms the connect waited"), "{m}");
        assert!(
            m.contains("gave up before the connect timeout of 10000 ms"),
            "{m}"
        );
        let e = RealError::ConnectTimeout {
            addr: "h:1".into(),
            timeout: Duration::from_millis(1_000),
            waited: Duration::from_millis(1_000),
        };
        let m = e.to_string();
        assert!(m.contains("in the 1000 ms the connect waited;"), "{m}");
        assert!(!m.contains("gave up"), "{m}");
    }

    #[test]
    fn missing_installation_says_what_to_install() {
        let e = RealError::NotInstalled {
            what: "Java",
            path: PathBuf::from("/usr/bin/java"),
            env_var: "ZKLOCK_JAVA",
        };
        let message = e.to_string();
        assert!(
            message.contains("apt-get install -y zookeeper"),
            "{message}"
        );
        assert!(
            message.contains("/usr/bin/java") && message.contains("ZKLOCK_JAVA"),
            "{message}"
        );
    }

    #[test]
    fn start_errors_quote_the_log() {
        let e = RealError::ServerStart {
            server: "server at 127.0.0.1:1".into(),
            reason: "its process exited".into(),
            log_tail: "java.net.BindException: Address already in use".into(),
        };
        assert!(e.to_string().ends_with("Address already in use"));
    }

    #[test]
    fn an_io_error_says_its_cause_once_with_its_source_chain() {
        let e = RealError::io("reading zoo.cfg", std::io::Error::other("disk gone"));
        let mut text = e.to_string();
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            text = format!("{text}: {c}");
            cause = c.source();
        }
        assert_eq!(text, "reading zoo.cfg: disk gone");
    }
}
