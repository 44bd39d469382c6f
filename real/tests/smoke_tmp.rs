use std::time::{Duration, Instant};
use zklock_real::harness::TestServer;
use zklock_real::ZkClient;
use zklock_recipe::{Coordination, CreateMode};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke() {
    let t = Instant::now();
    let server = tokio::task::spawn_blocking(TestServer::start).await.unwrap().unwrap();
    eprintln!("started in {:?} at {}", t.elapsed(), server.connect_string());
    let c = ZkClient::connect(&server.connect_string(), 2000, 5000).await.unwrap();
    eprintln!("session {} timeout {:?} state {:?}", c.session_id(), c.negotiated_session_timeout(), c.session_state());
    let r = c.create("/a", b"x", CreateMode::Persistent).await;
    eprintln!("{r:?}");
    let r = c.create("/a/s-", b"x", CreateMode::EphemeralSequential).await;
    eprintln!("{r:?}");
    let mut ev = c.session_events();
    let t = Instant::now();
    server.expire_session(&c).await.unwrap();
    eprintln!("expired in {:?}", t.elapsed());
    while let Some(s) = ev.try_next() { eprintln!("event {s:?}"); }
    eprintln!("{:?}", c.exists("/a").await);
    drop(server);
    let _ = Duration::ZERO;
}
