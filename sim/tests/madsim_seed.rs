//! A user's own `#[madsim::test]` suite drives the world from `MADSIM_TEST_SEED`, and
//! `MADSIM_TEST_NUM` sweeps seeds: try
//! `MADSIM_TEST_NUM=20 cargo test -p zklock-sim --test suite madsim_seed`. Only with
//! madsim turned on (`--cfg madsim`, as the workspace's `.cargo/config.toml` does).
#![cfg(madsim)]

use zklock_recipe::lock::{Lock, LockOptions};
use zklock_sim::{Sim, SimConfig};

#[madsim::test]
async fn world_seed_follows_madsim_test_seed() {
    let sim = Sim::from_madsim(SimConfig::default());
    assert_eq!(sim.seed(), madsim::runtime::Handle::current().seed());
    let s = sim.clone();
    let tokens = sim
        .run(async move {
            let mut tokens = Vec::new();
            for _ in 0..3 {
                let c = s.client();
                let lock = Lock::new(c, "/app/lock", LockOptions::default()).unwrap();
                let g = lock.acquire().await.unwrap();
                tokens.push(g.fencing_token().0);
                g.release().await.unwrap();
            }
            tokens
        })
        .await
        .unwrap();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
}
