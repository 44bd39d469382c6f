//! Driver processes kept from one run for the next. A search makes a thousand runs or
//! more, and each started a process per client: a JVM's start was most of a run's CPU.
//! A process whose run is done with it is reset (protocol 3: its session closed, every
//! request of it ended, its ids forgotten) and kept here; the next run of the same driver
//! opens its session on it (`open`) instead of starting one.
//!
//! What a run sees does not change: the process says hello with its new session before the
//! run's clock starts, and it knows nothing of its old session. A process that does not
//! answer its reset within 5 s (a library call stuck, a process stopped or killed by a
//! fault) is killed, never kept. A driver of protocol 2 is never kept.

use super::conn::{Idle, KeepsIdle};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// The most processes a pool keeps by default: two a client for eight runs of four
/// clients at once.
pub const IDLE_MAX_DEFAULT: usize = 64;

/// Reset driver processes waiting for their next run, shared by the runs of one search
/// ([`super::DriverRecipe::with_pool`]). Dropping it kills the processes it keeps.
#[derive(Debug)]
pub struct DriverPool {
    idle: Mutex<Vec<(String, Idle)>>,
    idle_max: usize,
    started: AtomicU64,
    reused: AtomicU64,
    /// Processes sent a reset whose answer (or end) has not come yet.
    resetting: AtomicUsize,
}

impl Default for DriverPool {
    fn default() -> Self {
        DriverPool::new(IDLE_MAX_DEFAULT)
    }
}

impl DriverPool {
    /// A pool that keeps at most `idle_max` processes; the rest are closed.
    pub fn new(idle_max: usize) -> DriverPool {
        DriverPool {
            idle: Mutex::new(Vec::new()),
            idle_max,
            started: AtomicU64::new(0),
            reused: AtomicU64::new(0),
            resetting: AtomicUsize::new(0),
        }
    }

    /// Processes started for the runs that use this pool.
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }

    /// Sessions opened on a kept process instead of a new one.
    pub fn reused(&self) -> u64 {
        self.reused.load(Ordering::Relaxed)
    }

    /// A kept process of the launcher `key`, if any is alive.
    pub(crate) fn take(&self, key: &str) -> Option<Idle> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        // A process that exited while kept is dropped (and reaped by `kill_on_drop`).
        idle.retain(|(_, p)| p.alive());
        let at = idle.iter().rposition(|(k, _)| k == key)?;
        self.reused.fetch_add(1, Ordering::Relaxed);
        Some(idle.swap_remove(at).1)
    }

    pub(crate) fn count_started(&self) {
        self.started.fetch_add(1, Ordering::Relaxed);
    }

    /// Processes being reset now: kept, or gone, once their reset is answered.
    pub fn resetting(&self) -> usize {
        self.resetting.load(Ordering::Acquire)
    }

    /// The processes kept now.
    pub fn idle(&self) -> usize {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl KeepsIdle for DriverPool {
    fn reset_started(&self) {
        self.resetting.fetch_add(1, Ordering::AcqRel);
    }

    fn reset_ended(&self) {
        self.resetting.fetch_sub(1, Ordering::AcqRel);
    }

    /// Keeps a reset process, or closes it when the pool is full.
    fn put(&self, key: String, process: Idle) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < self.idle_max {
            idle.push((key, process));
        } else {
            drop(idle);
            process.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::DriverKind;
    use crate::driver::locate::{Launcher, SessionArgs};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    const HELLO: &str = r#"{"event":"hello","protocol":3,"library":"fake","version":"1","lock":"L","session_id":1}"#;

    /// A driver in sh that says `hello`, answers a reset with `on_reset`, and an open with a
    /// second hello.
    fn fake(dir: &tempfile::TempDir, hello: &str, on_reset: &str) -> Launcher {
        let script = dir.path().join("fake-driver.sh");
        let text = format!(
            "echo '{hello}'\n\
             while IFS= read -r line; do\n\
               case \"$line\" in\n\
                 *'\"op\":\"reset\"'*) {on_reset} ;;\n\
                 *'\"op\":\"open\"'*) echo '{HELLO}' ;;\n\
                 *'\"op\":\"close\"'*) exit 0 ;;\n\
               esac\n\
             done\n"
        );
        std::fs::write(&script, text).unwrap();
        // The launcher runs `PYTHON -u SCRIPT ...`: sh takes `-u` too.
        Launcher::Python {
            python: "/bin/sh".into(),
            script,
        }
    }

    /// Starts the fake through `pool`, waits for its hello, lets the run drop it, and
    /// waits (a deadline only a hang reaches) until it is kept or its process is gone.
    async fn after_one_run(launcher: &Launcher, pool: &Arc<DriverPool>) -> (bool, u32) {
        let conn = launcher
            .spawn(
                DriverKind::KazooLock,
                SessionArgs {
                    program_kind: "lock",
                    connect: "127.0.0.1:1",
                    lock_path: "/zklock/lock",
                    session_timeout_ms: 2_000,
                },
                Arc::default(),
                Some(pool),
            )
            .unwrap();
        conn.hello(Duration::from_secs(60)).await.unwrap();
        let pid = conn.pid().unwrap();
        drop(conn);
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let alive = rustix::process::test_kill_process(
                rustix::process::Pid::from_raw(pid as i32).unwrap(),
            )
            .is_ok();
            if pool.idle() == 1 {
                return (true, pid);
            }
            if !alive {
                return (false, pid);
            }
            assert!(Instant::now() < deadline, "neither kept nor gone");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn a_process_that_answers_its_reset_is_kept_and_opens_the_next_session() {
        let dir = tempfile::tempdir().unwrap();
        let launcher = fake(&dir, HELLO, r#"echo '{"event":"reset"}'"#);
        let pool = Arc::new(DriverPool::new(4));
        let (kept, pid) = after_one_run(&launcher, &pool).await;
        assert!(kept, "not kept");
        let conn = launcher
            .spawn(
                DriverKind::KazooLock,
                SessionArgs {
                    program_kind: "lock",
                    connect: "127.0.0.1:2",
                    lock_path: "/zklock/lock",
                    session_timeout_ms: 2_000,
                },
                Arc::default(),
                Some(&pool),
            )
            .unwrap();
        assert_eq!(conn.pid(), Some(pid), "a new process was started");
        assert_eq!(
            conn.hello(Duration::from_secs(60)).await.unwrap(),
            "fake 1 L"
        );
        assert_eq!((pool.started(), pool.reused(), pool.idle()), (1, 1, 0));
    }

    /// A driver whose library call is stuck exits at the reset: not kept.
    #[tokio::test]
    async fn a_process_that_exits_at_its_reset_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let pool = Arc::new(DriverPool::new(4));
        let (kept, _) = after_one_run(&fake(&dir, HELLO, "exit 0"), &pool).await;
        assert!(!kept);
        assert_eq!(pool.idle(), 0);
    }

    /// Silent past the grace (a process stopped, a driver that ignores the reset): killed.
    #[tokio::test]
    async fn a_process_silent_at_its_reset_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let pool = Arc::new(DriverPool::new(4));
        let (kept, _) = after_one_run(&fake(&dir, HELLO, ":"), &pool).await;
        assert!(!kept);
        assert_eq!(pool.idle(), 0);
    }

    /// Protocol 2 has no reset: such a driver closes and exits as it always did.
    #[tokio::test]
    async fn a_protocol_2_driver_is_never_kept() {
        let dir = tempfile::tempdir().unwrap();
        let pool = Arc::new(DriverPool::new(4));
        let old = HELLO.replace("\"protocol\":3", "\"protocol\":2");
        let launcher = fake(&dir, &old, r#"echo '{"event":"reset"}'"#);
        let (kept, _) = after_one_run(&launcher, &pool).await;
        assert!(!kept);
    }

    /// A full pool closes what it cannot keep.
    #[tokio::test]
    async fn a_full_pool_closes_the_process() {
        let dir = tempfile::tempdir().unwrap();
        let pool = Arc::new(DriverPool::new(0));
        let launcher = fake(&dir, HELLO, r#"echo '{"event":"reset"}'"#);
        let (kept, _) = after_one_run(&launcher, &pool).await;
        assert!(!kept);
    }
}
