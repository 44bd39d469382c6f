//! One ZooKeeper server process: its config, start, readiness, SIGKILL and restart.

use super::{Installation, ServerOptions};
use crate::error::RealError;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a 4lw exchange may take before the server counts as not answering.
const FOUR_LETTER_TIMEOUT: Duration = Duration::from_millis(1000);
/// Pause between readiness probes.
const PROBE_INTERVAL: Duration = Duration::from_millis(50);
/// How long a killed server's watchdog may take to reap it before it is killed itself.
const REAP_TIMEOUT: Duration = Duration::from_secs(10);
/// Lines of server output quoted in a start error.
const LOG_TAIL_LINES: usize = 40;

/// Runs Java under a tiny shell watchdog that SIGKILLs it when the watchdog's stdin closes.
/// The harness writes a line first when it kills a server on purpose. A close without that
/// line means the test process died without unwinding (the kernel closed the pipe): the
/// watchdog then also removes the server's temporary directory, which nobody else will.
/// fd 3 keeps the pipe for the background reader, whose stdin sh replaces with /dev/null.
const WATCHDOG_SCRIPT: &str = r#"exec 3<&0
orphan_dir=$1
shift
"$@" </dev/null 3<&- &
pid=$!
(
    if read -r _line <&3; then
        kill -9 "$pid" 2>/dev/null
    else
        kill -9 "$pid" 2>/dev/null
        while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
        [ -n "$orphan_dir" ] && rm -rf "$orphan_dir" 2>/dev/null
    fi
) </dev/null &
exec 3<&-
wait "$pid""#;

/// Sends a ZooKeeper four-letter-word command (`ruok`, `srvr`, `stat`, `cons`...) and returns
/// the answer. Needs `4lw.commands.whitelist` on the server (the harness sets `*`).
pub fn four_letter_word(
    addr: SocketAddr,
    command: &str,
    timeout: Duration,
) -> std::io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(command.as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

/// How many sets of ports a start tries, when a port it was given is taken before its
/// server binds it: [`free_ports`] frees its ports before the servers bind them.
pub(crate) const PORT_TRIES: u32 = 3;

/// Starts something (a server, an ensemble) with `start` on the ports `next_ports` picks,
/// and again on the next ports while a start fails with one of its ports taken, at most
/// [`PORT_TRIES`] starts in all; any other failure, or the last, is returned. A failed
/// start is dropped whole, its servers killed and its directory removed, so `start` makes
/// a fresh directory each time.
pub(crate) fn start_retrying_taken_ports<P: AsRef<[u16]>, T>(
    mut next_ports: impl FnMut() -> Result<P, RealError>,
    mut start: impl FnMut(&P) -> Result<T, RealError>,
) -> Result<T, RealError> {
    let mut tries = 0;
    loop {
        tries += 1;
        let ports = next_ports()?;
        match start(&ports) {
            Ok(started) => return Ok(started),
            // The failed start's servers are down: their ports are free unless taken. A
            // port taken only for a moment (a proxy's or a client's, on a busy machine) is
            // free again by now, but the server said so in its log.
            Err(e)
                if tries < PORT_TRIES
                    && (bind_refused(&e) || !ports.as_ref().iter().all(|&p| port_is_free(p))) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Whether a server's start failed because a port it was given was in use when it bound.
fn bind_refused(e: &RealError) -> bool {
    matches!(e, RealError::ServerStart { log_tail, .. }
        if log_tail.contains("java.net.BindException") || log_tail.contains("Address already in use"))
}

/// Whether nothing listens on loopback `port` (a listener of ours binds it, and goes).
pub(crate) fn port_is_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// A loopback port held by the listener returned with it, for the tests of a start whose
/// port is taken; None (after a notice) where no server can run.
#[cfg(test)]
pub(crate) fn held_port() -> Option<(TcpListener, u16)> {
    if !super::available_for_tests() {
        return None;
    }
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port();
    Some((holder, port))
}

/// Ports for the tries of a start, counted in `tries`: `n` free ones each time, the first
/// of them `taken` on the first try.
#[cfg(test)]
pub(crate) fn taken_on_first_try(
    taken: u16,
    n: usize,
    tries: &std::cell::Cell<u32>,
) -> impl FnMut() -> Result<Vec<u16>, RealError> + '_ {
    move || {
        tries.set(tries.get() + 1);
        let mut ports = free_ports(n)?;
        if tries.get() == 1 {
            ports[0] = taken;
        }
        Ok(ports)
    }
}

/// Picks `n` distinct free loopback ports by binding them all at once. The server binds them
/// a moment later; another process could take one in between, and the start then tries
/// again on others ([`PORT_TRIES`]).
pub(crate) fn free_ports(n: usize) -> Result<Vec<u16>, RealError> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| RealError::io("binding a free loopback port", e))?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| RealError::io("reading a bound port", e))
}

/// The peer and election ports of one ensemble member.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Peer {
    pub(crate) id: usize,
    pub(crate) quorum_port: u16,
    pub(crate) election_port: u16,
}

/// A server's identity and files, and its process when running.
#[derive(Debug)]
pub(crate) struct Node {
    /// "server" or "server 2", for messages.
    pub(crate) name: String,
    pub(crate) client_port: u16,
    dir: PathBuf,
    /// What the watchdog removes if the test process dies (the whole temporary directory);
    /// `None` to keep it.
    orphan_dir: Option<PathBuf>,
    config: PathBuf,
    log: PathBuf,
    standalone: bool,
    /// C2 on (see [`ServerOptions::optimizing_jit`]).
    optimizing_jit: bool,
    /// See [`ServerOptions::container_check_interval_ms`].
    container_check_interval_ms: Option<u32>,
    process: Option<Running>,
}

#[derive(Debug)]
struct Running {
    watchdog: Child,
    /// Closing it makes the watchdog SIGKILL the JVM.
    lifeline: Option<ChildStdin>,
}

impl Node {
    /// Writes the node's directory and config. `peers` is empty for a standalone server.
    pub(crate) fn create(
        dir: &Path,
        orphan_dir: Option<&Path>,
        name: String,
        my_id: usize,
        client_port: u16,
        peers: &[Peer],
        options: &ServerOptions,
    ) -> Result<Node, RealError> {
        let data = dir.join("data");
        std::fs::create_dir_all(&data)
            .map_err(|e| RealError::io(format!("creating {}", data.display()), e))?;
        // Every setting is in zoo.cfg (not -D flags) so that a reader of the temp dir sees it.
        let mut config = format!(
            "tickTime={tick}\ninitLimit=10\nsyncLimit=5\ndataDir={data}\nclientPort={client_port}\n\
             clientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\nadmin.enableServer=false\n\
             minSessionTimeout={min}\nmaxSessionTimeout={max}\n\
             # Tests need no durability (ServerOptions::force_sync): small preallocated logs.\n\
             forceSync={sync}\npreAllocSize=1024\nmaxClientCnxns=0\n",
            tick = options.tick_time_ms,
            sync = if options.force_sync { "yes" } else { "no" },
            data = data.display(),
            min = options.min_session_timeout_ms,
            max = options.max_session_timeout_ms,
        );
        for peer in peers {
            let _ = writeln!(
                config,
                "server.{}=127.0.0.1:{}:{}",
                peer.id, peer.quorum_port, peer.election_port
            );
        }
        if !peers.is_empty() {
            std::fs::write(data.join("myid"), format!("{my_id}\n"))
                .map_err(|e| RealError::io("writing myid", e))?;
        }
        let config_path = dir.join("zoo.cfg");
        std::fs::write(&config_path, config)
            .map_err(|e| RealError::io(format!("writing {}", config_path.display()), e))?;
        Ok(Node {
            name,
            client_port,
            dir: dir.to_path_buf(),
            orphan_dir: orphan_dir.map(Path::to_path_buf),
            config: config_path,
            log: dir.join("server.log"),
            standalone: peers.is_empty(),
            optimizing_jit: options.optimizing_jit,
            container_check_interval_ms: options.container_check_interval_ms,
            process: None,
        })
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.client_port))
    }

    pub(crate) fn describe(&self) -> String {
        format!("{} at {}", self.name, self.addr())
    }

    /// Starts the JVM without waiting for it to serve.
    pub(crate) fn spawn(&mut self, install: &Installation) -> Result<(), RealError> {
        if self.process.is_some() {
            return Ok(());
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| RealError::io(format!("opening {}", self.log.display()), e))?;
        let log_err = log
            .try_clone()
            .map_err(|e| RealError::io("duplicating the log file", e))?;
        let mut classpath = std::ffi::OsString::new();
        if let Some(conf) = &install.conf {
            classpath.push(conf);
            classpath.push(":");
        }
        classpath.push(&install.jar);
        if let Some(logger) = &install.logger {
            classpath.push(":");
            classpath.push(logger);
        }
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(WATCHDOG_SCRIPT)
            .arg("zklock-zookeeper-watchdog")
            .arg(self.orphan_dir.as_deref().unwrap_or(Path::new("")))
            .arg(&install.java)
            // A small JVM: the servers hold a few znodes.
            .args(["-Xms32m", "-Xmx256m", "-XX:+UseSerialGC"])
            .args((!self.optimizing_jit).then_some("-XX:TieredStopAtLevel=1"))
            .args(["-XX:-UsePerfData", "-Djava.awt.headless=true"])
            // A restarted server may find a transaction log but no snapshot yet.
            .arg("-Dzookeeper.snapshot.trust.empty=true")
            .arg(format!("-Dzookeeper.log.dir={}", self.dir.display()))
            // Read as a system property only (zoo.cfg's unknown keys get a `zookeeper.`
            // prefix).
            .args(
                (self.container_check_interval_ms)
                    .map(|ms| format!("-Dznode.container.checkIntervalMs={ms}")),
            )
            .args(["-Dorg.slf4j.simpleLogger.showDateTime=true"])
            .args(["-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS"])
            .arg("-cp")
            .arg(classpath)
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(&self.config)
            .current_dir(&self.dir)
            .stdin(Stdio::piped())
            .stdout(log)
            .stderr(log_err);
        // A process group of its own: a signal to the caller's group (Ctrl-C at the
        // terminal, a CI runner's SIGTERM) reaches the caller, which winds its run down on
        // these servers and then stops them; the lifeline stops them if it dies instead.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut watchdog = command
            .spawn()
            .map_err(|e| RealError::io(format!("starting {} with sh", self.describe()), e))?;
        let lifeline = watchdog.stdin.take();
        self.process = Some(Running { watchdog, lifeline });
        Ok(())
    }

    /// True while the JVM runs (it may not be serving yet).
    pub(crate) fn is_running(&mut self) -> bool {
        match self.process.as_mut() {
            None => false,
            Some(running) => matches!(running.watchdog.try_wait(), Ok(None)),
        }
    }

    /// SIGKILLs the server and reaps it. Does nothing if it is not running.
    pub(crate) fn kill(&mut self) {
        let Some(mut running) = self.process.take() else {
            return;
        };
        if let Some(mut lifeline) = running.lifeline.take() {
            // The watchdog may be gone already (its JVM exited); then there is nothing to do.
            let _ = lifeline.write_all(b"stop\n");
        }
        let deadline = Instant::now() + REAP_TIMEOUT;
        loop {
            match running.watchdog.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) if Instant::now() >= deadline => {
                    // The watchdog is stuck; killing it at least frees the test. The JVM
                    // would then be orphaned, which the warning makes visible.
                    eprintln!(
                        "zklock-real: {} did not stop within {:?}; killing its watchdog",
                        self.describe(),
                        REAP_TIMEOUT
                    );
                    let _ = running.watchdog.kill();
                    let _ = running.watchdog.wait();
                    return;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    }

    /// The answer to `srvr` when the server is serving clients, else `None`.
    pub(crate) fn serving_status(&self) -> Option<String> {
        let status = four_letter_word(self.addr(), "srvr", FOUR_LETTER_TIMEOUT).ok()?;
        status.contains("Mode: ").then_some(status)
    }

    /// True if `srvr` says this server leads the ensemble.
    pub(crate) fn is_leader(&self) -> bool {
        self.serving_status()
            .is_some_and(|s| s.contains("Mode: leader"))
    }

    /// Waits until the server answers `ruok` with `imok` and serves clients (`srvr` shows a
    /// mode: standalone, leader or follower).
    pub(crate) fn wait_serving(&mut self, deadline: Instant) -> Result<(), RealError> {
        loop {
            if !self.is_running() {
                return Err(self.start_error("its process exited"));
            }
            let imok = four_letter_word(self.addr(), "ruok", FOUR_LETTER_TIMEOUT)
                .is_ok_and(|answer| answer == "imok");
            if imok && self.serving_status().is_some() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let what = if imok {
                    "it answered `ruok` but never served"
                } else {
                    "no `imok`"
                };
                let mode = if self.standalone {
                    ""
                } else {
                    " (is a quorum of the ensemble up?)"
                };
                return Err(self.start_error(&format!("{what} before the start timeout{mode}")));
            }
            std::thread::sleep(PROBE_INTERVAL);
        }
    }

    fn start_error(&self, reason: &str) -> RealError {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n");
        RealError::ServerStart {
            server: self.describe(),
            reason: reason.to_string(),
            log_tail: tail,
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A start that fails with its ports free failed for another reason: no retry hides it.
    #[test]
    fn a_start_that_fails_on_free_ports_is_not_tried_again() {
        let mut tries = 0;
        let err = start_retrying_taken_ports(
            || free_ports(2),
            |_| -> Result<(), RealError> {
                tries += 1;
                Err(RealError::io("starting", std::io::ErrorKind::Other.into()))
            },
        )
        .unwrap_err();
        assert_eq!(tries, 1);
        assert!(matches!(err, RealError::Io { .. }), "{err:?}");
    }

    /// A server that found a port taken when it bound, though the port is free again when
    /// its start is judged (taken for a moment by another process), starts on other ports.
    #[test]
    fn a_start_whose_server_found_its_port_in_use_is_tried_on_other_ports() {
        let mut tries = 0;
        let started = start_retrying_taken_ports(
            || free_ports(1),
            |_| -> Result<u32, RealError> {
                tries += 1;
                if tries == 1 {
                    return Err(RealError::ServerStart {
                        server: "server at 127.0.0.1:1".into(),
                        reason: "its process exited".into(),
                        log_tail: "java.net.BindException: Address already in use".into(),
                    });
                }
                Ok(tries)
            },
        )
        .unwrap();
        assert_eq!(started, 2);
        // Every try fails so: the last failure is returned, after PORT_TRIES starts.
        let mut tries = 0;
        let err = start_retrying_taken_ports(
            || free_ports(1),
            |_| -> Result<(), RealError> {
                tries += 1;
                Err(RealError::ServerStart {
                    server: "server at 127.0.0.1:1".into(),
                    reason: "its process exited".into(),
                    log_tail: "Address already in use".into(),
                })
            },
        )
        .unwrap_err();
        assert_eq!(tries, PORT_TRIES);
        assert!(matches!(err, RealError::ServerStart { .. }), "{err:?}");
    }
}
