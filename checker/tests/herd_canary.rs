//! A herd canary (waiters watch the parent directory) run on the simulation without
//! faults: `no_herd` must catch it, and every other property must still hold.

use std::time::Duration;
use zklock_checker::{CheckConfig, check_all};
use zklock_recipe::history::LockRole;
use zklock_recipe::{Coordination, CreateMode, ZkError};
use zklock_sim::{Faults, LockUnderTest, Recipe, Scenario, SimClient, run_scenario};

struct Herd;

struct HerdLock {
    c: SimClient,
    dir: String,
}

impl Recipe for Herd {
    type Lock = HerdLock;
    fn name(&self) -> String {
        "herd".into()
    }
    fn lock(&self, client: SimClient, _role: LockRole, path: &str) -> HerdLock {
        HerdLock {
            c: client,
            dir: path.to_owned(),
        }
    }
}

fn seq(name: &str) -> u64 {
    name[name.len() - 10..].parse().unwrap()
}

impl HerdLock {
    async fn enqueue(&self) -> Result<String, ZkError> {
        let mut at = String::new();
        for part in self.dir.split('/').filter(|p| !p.is_empty()) {
            at = format!("{at}/{part}");
            match self.c.create(&at, b"", CreateMode::Persistent).await {
                Ok(_) | Err(ZkError::NodeExists) => {}
                Err(e) => return Err(e),
            }
        }
        let prefix = format!("{}/lock-", self.dir);
        let (path, _) = self
            .c
            .create(&prefix, b"", CreateMode::EphemeralSequential)
            .await?;
        Ok(path)
    }

    async fn first(
        &self,
        me: &str,
        watch: bool,
    ) -> Result<(bool, Option<zklock_recipe::Watch>), ZkError> {
        let (children, w) = if watch {
            let (c, w) = self.c.get_children_watch(&self.dir).await?;
            (c, Some(w))
        } else {
            (self.c.get_children(&self.dir).await?, None)
        };
        let lowest = children.iter().map(seq).min();
        Ok((lowest == Some(seq(me)), w))
    }

    async fn wait(&self, me: String) -> Result<String, ZkError> {
        loop {
            let (first, w) = self.first(&me, true).await?;
            if first {
                return Ok(me);
            }
            // The herd: every change of the directory wakes every waiter.
            w.expect("watched").await?;
        }
    }
}

impl LockUnderTest for HerdLock {
    type Guard = String;
    async fn acquire(&self) -> Result<String, String> {
        let me = self.enqueue().await.map_err(|e| e.to_string())?;
        self.wait(me).await.map_err(|e| e.to_string())
    }
    async fn try_acquire(&self) -> Result<Option<String>, String> {
        let me = self.enqueue().await.map_err(|e| e.to_string())?;
        let (first, _) = self.first(&me, false).await.map_err(|e| e.to_string())?;
        if first {
            return Ok(Some(me));
        }
        self.c.delete(&me, None).await.map_err(|e| e.to_string())?;
        Ok(None)
    }
    async fn acquire_timeout(&self, _timeout: Duration) -> Result<Option<String>, String> {
        self.acquire().await.map(Some)
    }
    fn token(&self, guard: &String) -> i64 {
        seq(guard) as i64
    }
    fn node(&self, guard: &String) -> String {
        guard.clone()
    }
    async fn lost<'a>(&'a self, _guard: &'a String) -> String {
        std::future::pending().await
    }
    async fn release(&self, guard: String) -> Result<(), String> {
        self.c.delete(&guard, None).await.map_err(|e| e.to_string())
    }
}

#[test]
fn no_herd_catches_a_parent_watching_recipe() {
    let sc = Scenario {
        faults: Faults::none(),
        clients: 4,
        acquisitions_per_client: 6,
        ..Scenario::default()
    };
    let out = run_scenario(&sc, 7, &Herd);
    let cfg = CheckConfig::from_scenario(&sc)
        .with_final_children(out.final_lock_children.clone())
        .with_run_end_us(out.end_time_us);
    let report = check_all(&out.history, &cfg);
    assert_eq!(report.violated(), vec!["no_herd"], "{report}");
    let v = report.verdict("no_herd").unwrap().report.as_ref().unwrap();
    assert!(v.events.len() >= 3, "{v}");
}
