//! A request in flight when its connection is lost is applied once or not at all, never
//! twice: the client does not send it again on reconnecting. On the real server the
//! loss is certain and placed by an aimed proxy fault (the request reaches the server and
//! its reply is withheld, or the request is dropped before it), so each case has one
//! right answer; in the simulation the Chooser decides whether the request arrived, and
//! seeds must show both outcomes.

use super::{CONNECT_TIMEOUT_MS, SESSION_TIMEOUT_MS};
use std::pin::pin;
use std::time::{Duration, Instant};
use zklock_real::ZkClient;
use zklock_real::harness::{self, TestServer};
use zklock_real::proxy::{AimedAction, AimedFault, Proxy, op};
use zklock_recipe::{Coordination, CreateMode, SessionState, ZkError};
use zklock_sim::SimConfig;

/// The request put in flight.
#[derive(Clone, Copy, Debug)]
enum Request {
    /// A sequential create under the directory: applied twice would leave two children.
    SequentialCreate,
    /// An unconditional setData of the directory's node `n`: applied twice would leave
    /// version 2.
    SetData,
}

impl Request {
    fn ops(self) -> Vec<i32> {
        match self {
            Request::SequentialCreate => vec![op::CREATE, op::CREATE2],
            Request::SetData => vec![op::SET_DATA],
        }
    }

    /// Prepares `dir` (made by the caller) for the request.
    async fn prepare<C: Coordination>(self, c: &C, dir: &str) {
        if let Request::SetData = self {
            c.create(&format!("{dir}/n"), b"", CreateMode::Persistent)
                .await
                .expect("node created");
        }
    }

    async fn send<C: Coordination>(self, c: &C, dir: &str) -> Result<(), ZkError> {
        match self {
            Request::SequentialCreate => c
                .create(&format!("{dir}/x-"), b"", CreateMode::PersistentSequential)
                .await
                .map(drop),
            Request::SetData => c.set_data(&format!("{dir}/n"), b"1", None).await.map(drop),
        }
    }

    /// How many times the server applied it, read by another session.
    async fn applied<C: Coordination>(self, c: &C, dir: &str) -> usize {
        match self {
            Request::SequentialCreate => c
                .get_children(dir)
                .await
                .expect("directory listed")
                .iter()
                .filter(|n| n.starts_with("x-"))
                .count(),
            Request::SetData => {
                let (_, stat) = c.get_data(&format!("{dir}/n")).await.expect("node read");
                usize::try_from(stat.version).expect("a version")
            }
        }
    }
}

/// Waits until `c` is connected again and has answered a request.
async fn reconnected(c: &ZkClient, dir: &str) {
    let deadline = Instant::now() + Duration::from_millis(CONNECT_TIMEOUT_MS);
    loop {
        assert!(Instant::now() < deadline, "the client never reconnected");
        if c.session_state() == SessionState::Connected && c.exists(dir).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_in_flight_at_a_connection_loss_is_applied_once_or_not_at_all() {
    if !harness::available_for_tests() {
        return;
    }
    let server = tokio::task::block_in_place(TestServer::start).expect("ZooKeeper starts");
    let connect = |addr: String| async move {
        ZkClient::connect(&addr, SESSION_TIMEOUT_MS, CONNECT_TIMEOUT_MS)
            .await
            .expect("client connects")
    };
    let observer = connect(server.connect_string()).await;
    let mut case = 0;
    for request in [Request::SequentialCreate, Request::SetData] {
        for (action, expected) in [
            (AimedAction::WithholdReply, 1),
            (AimedAction::DropRequest, 0),
        ] {
            case += 1;
            let dir = format!("/in-flight-{case}");
            observer
                .create(&dir, b"", CreateMode::Persistent)
                .await
                .expect("directory created");
            let proxy = Proxy::start(server.addr()).await.expect("proxy starts");
            let client = connect(proxy.connect_string()).await;
            request.prepare(&client, &dir).await;
            proxy.aim(AimedFault::new(&request.ops(), dir.clone(), action));
            let result = request.send(&client, &dir).await;
            assert_eq!(
                result,
                Err(ZkError::ConnectionLoss),
                "{request:?}, {action:?}: the loss must reach the caller"
            );
            reconnected(&client, &dir).await;
            // After the reconnect, and a request answered on it, the server holds what it
            // will hold: the client sent nothing again.
            let applied = request.applied(&observer, &dir).await;
            assert_eq!(
                applied, expected,
                "{request:?}, {action:?}: applied {applied} times"
            );
            let _ = client.close().await;
        }
    }
}

/// The simulation's side: a request in flight when `Sim::disconnect` strikes. Returns
/// whether the caller saw ConnectionLoss and how many times the server applied it.
fn sim_in_flight(seed: u64, request: Request) -> (Result<(), ZkError>, usize) {
    std::thread::spawn(move || {
        zklock_sim::run(SimConfig::with_seed(seed), move |sim| async move {
            let observer = sim.client();
            let dir = "/in-flight";
            observer
                .create(dir, b"", CreateMode::Persistent)
                .await
                .expect("directory created");
            let client = sim.client();
            request.prepare(&client, dir).await;
            let mut sent = pin!(request.send(&client, dir));
            // Issued, not yet answered: then the connection goes.
            assert!(futures_util::poll!(&mut sent).is_pending());
            sim.disconnect(&client);
            let result = sent.await;
            while client.exists(dir).await.is_err() {
                client.sleep(Duration::from_millis(10)).await;
            }
            (result, request.applied(&observer, dir).await)
        })
        .expect("simulation runs")
    })
    .join()
    .expect("simulation thread")
}

#[test]
fn in_the_simulation_a_request_in_flight_at_a_connection_loss_is_applied_once_or_not_at_all() {
    for request in [Request::SequentialCreate, Request::SetData] {
        let mut outcomes = std::collections::BTreeSet::new();
        for seed in 0..64 {
            let (result, applied) = sim_in_flight(seed, request);
            assert!(
                applied <= 1,
                "{request:?}, seed {seed}: applied {applied} times"
            );
            if result.is_ok() {
                assert_eq!(applied, 1, "{request:?}, seed {seed}: ok but not applied");
            } else {
                assert_eq!(
                    result,
                    Err(ZkError::ConnectionLoss),
                    "{request:?}, seed {seed}"
                );
            }
            outcomes.insert((result.is_ok(), applied));
        }
        // Both fates of a lost request happen: applied and not.
        assert!(
            outcomes.contains(&(false, 0)) && outcomes.contains(&(false, 1)),
            "{request:?}: outcomes over 64 seeds: {outcomes:?}"
        );
    }
}
