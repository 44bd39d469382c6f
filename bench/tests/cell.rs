//! The real benchmark's measurement code (`zklock_bench::cells`, behind `zklock bench`) on
//! tiny cells against a harness server: each lock's cell counts acquisitions and yields
//! ordered handoff percentiles, and the raw write rate counts writes. No timing
//! thresholds: benchmarks are figures, not timed tests.
//!
//! Needs Java and ZooKeeper (and python3-kazoo for Kazoo's cell); without them each test
//! prints "skipping: ..." and passes, except under `CI=true`, where it fails.

use std::path::PathBuf;
use std::time::Duration;
use tokio::task::block_in_place;
use zklock_bench::cells::{
    CellConfig, CellResult, Contender, Floor, FloorResult, RecipeRelease, curator_cell,
    curator_classpath, floor_cell, kazoo_cell, raw_write_rate, recipe_cell, zookeeper_client_cell,
};
use zklock_real::harness::{TestServer, available_for_tests as zookeeper_available};
use zklock_real::reactor;

fn under_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// The Python that has Kazoo, if any. Under CI a missing one panics.
fn kazoo_python() -> Option<PathBuf> {
    match zklock_bench::cells::kazoo_python() {
        Ok((python, _version)) => Some(python),
        Err(why) if under_ci() => panic!("CI=true but Kazoo's bench cell cannot run: {why}"),
        Err(why) => {
            eprintln!("skipping: {why}");
            None
        }
    }
}

const TINY: Duration = Duration::from_millis(300);
/// Windows grow from `TINY` by doubling at most this many times (to about 38 s): only a
/// hang measures nothing then.
const GROWTHS_MAX: usize = 7;

/// Measures with `cell` (given a window and the attempt's number, for a fresh lock path)
/// until it counted at least `min` acquisitions, doubling the window each time, so that a
/// loaded machine measures as much as a quiet one, only over longer windows.
async fn until_measured<F: Future<Output = CellResult>>(
    min: u64,
    mut cell: impl FnMut(Duration, usize) -> F,
) -> CellResult {
    let mut window = TINY;
    for attempt in 0..=GROWTHS_MAX {
        let r = cell(window, attempt).await;
        if r.acquisitions >= min || attempt == GROWTHS_MAX {
            return r;
        }
        window *= 2;
    }
    unreachable!("the last attempt returns")
}

/// [`until_measured`] for cells measured by blocking calls.
fn until_measured_blocking(
    min: u64,
    mut cell: impl FnMut(Duration, usize) -> CellResult,
) -> CellResult {
    let mut window = TINY;
    for attempt in 0..=GROWTHS_MAX {
        let r = cell(window, attempt);
        if r.acquisitions >= min || attempt == GROWTHS_MAX {
            return r;
        }
        window *= 2;
    }
    unreachable!("the last attempt returns")
}

fn assert_measured(r: &CellResult, contender: Contender, clients: u32) {
    eprintln!(
        "{contender}, {clients} client(s): {} acquisitions, {:.0}/s, handoff p50 {:?} us, \
         p99 {:?} us",
        r.acquisitions,
        r.acquisitions_per_s,
        r.handoff_p50_us(),
        r.handoff_p99_us()
    );
    assert_eq!((r.contender, r.clients), (contender, clients));
    assert!(r.acquisitions > 0, "{contender}: no acquisition measured");
    assert!(r.acquisitions_per_s > 0.0);
    assert_eq!(r.per_client.len(), clients as usize);
    assert_eq!(r.per_client.iter().sum::<u64>(), r.acquisitions);
    assert_eq!(r.handoff_ns.len() as u64, r.acquisitions - 1);
    if r.acquisitions > 1 {
        let (p50, p99) = (r.handoff_p50_us().unwrap(), r.handoff_p99_us().unwrap());
        assert!(p50 <= p99, "{contender}: p50 {p50} us > p99 {p99} us");
    }
    assert_eq!(
        r.overlaps, 0,
        "{contender}: a hold began before the last ended"
    );
    // The Rust locks run in this process, so their client CPU is measured.
    let cpu = r.client_cpu.map(|c| c.per_acquisition_us());
    if matches!(contender, Contender::Kazoo | Contender::Curator) {
        assert_eq!(cpu, None);
    } else {
        assert!(
            cpu.flatten().is_some_and(|us| us > 0.0),
            "{contender}: {cpu:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_cells_of_the_rust_locks_and_the_raw_write_rate_measure_something() {
    if !zookeeper_available() {
        return;
    }
    let server = block_in_place(TestServer::start).unwrap();
    let addr = server.connect_string();

    for release in [RecipeRelease::InBackground, RecipeRelease::Awaited] {
        let r = until_measured(2, |window, n| {
            let cfg = CellConfig::new(1, window, &format!("/bench-test/{release:?}-1-{n}"));
            let addr = addr.clone();
            async move { recipe_cell(&addr, &cfg, release).await.unwrap() }
        })
        .await;
        assert_measured(&r, release.contender(), 1);
        assert!(r.acquisitions > 1, "one client acquires again and again");
    }

    let r = until_measured(2, |window, n| {
        let cfg = CellConfig::new(1, window, &format!("/bench-test/zkc-1-{n}"));
        let addr = addr.clone();
        async move { zookeeper_client_cell(&addr, &cfg).await.unwrap() }
    })
    .await;
    assert_measured(&r, Contender::ZookeeperClient, 1);

    // Contention: handoffs between clients, and no two holds overlap.
    for release in [RecipeRelease::InBackground, RecipeRelease::Awaited] {
        let r = until_measured(2, |window, n| {
            let cfg = CellConfig::new(3, window, &format!("/bench-test/{release:?}-3-{n}"));
            let addr = addr.clone();
            async move { recipe_cell(&addr, &cfg, release).await.unwrap() }
        })
        .await;
        assert_measured(&r, release.contender(), 3);
    }

    let mut window = TINY;
    let mut raw = raw_write_rate(&addr, "/bench-test/raw-0", 8, window)
        .await
        .unwrap();
    for n in 1..=GROWTHS_MAX {
        if raw.writes > 0 {
            break;
        }
        window *= 2;
        raw = raw_write_rate(&addr, &format!("/bench-test/raw-{n}"), 8, window)
            .await
            .unwrap();
    }
    eprintln!("raw: {raw:?}");
    assert!(raw.writes > 0 && raw.writes_per_s > 0.0);
    assert_eq!(raw.in_flight, 8);
}

/// As `zklock bench` runs them: on the thread that drives async-io's reactor, which also
/// runs zookeeper-client's session tasks. Contended, so watches fire there too.
#[test]
fn tiny_contended_cells_measure_something_on_the_reactor_thread() {
    if !zookeeper_available() {
        return;
    }
    let server = TestServer::start().unwrap();
    let addr = server.connect_string();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for release in [RecipeRelease::InBackground, RecipeRelease::Awaited] {
        let r = until_measured_blocking(2, |window, n| {
            let cfg = CellConfig::new(3, window, &format!("/bench-reactor/{release:?}-3-{n}"));
            reactor::block_on(&runtime, recipe_cell(&addr, &cfg, release)).unwrap()
        });
        assert_measured(&r, release.contender(), 3);
    }
    let r = until_measured_blocking(2, |window, n| {
        let cfg = CellConfig::new(3, window, &format!("/bench-reactor/zkc-3-{n}"));
        reactor::block_on(&runtime, zookeeper_client_cell(&addr, &cfg)).unwrap()
    });
    assert_measured(&r, Contender::ZookeeperClient, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_kazoo_cell_measures_something() {
    if !zookeeper_available() {
        return;
    }
    let Some(python) = kazoo_python() else {
        return;
    };
    let server = block_in_place(TestServer::start).unwrap();
    let addr = server.connect_string();
    for clients in [1, 2] {
        let r = until_measured_blocking(2, |window, n| {
            let cfg = CellConfig::new(clients, window, &format!("/bench-test/kazoo-{clients}-{n}"));
            block_in_place(|| kazoo_cell(&python, &addr, &cfg)).unwrap()
        });
        assert_measured(&r, Contender::Kazoo, clients);
    }
}

/// Curator's cell: one JVM for its clients, compiled on first use into a scratch dir.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_curator_cell_measures_something() {
    if !zookeeper_available() {
        return;
    }
    let classpath = match curator_classpath() {
        Ok((cp, _version)) => cp,
        Err(why) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but Curator's cell cannot run: {why}")
        }
        Err(why) => {
            eprintln!("skipping: {why}");
            return;
        }
    };
    let server = block_in_place(TestServer::start).unwrap();
    let addr = server.connect_string();
    for clients in [1, 2] {
        let r = until_measured_blocking(2, |window, n| {
            let path = format!("/bench-test/curator-{clients}-{n}");
            let cfg = CellConfig::new(clients, window, &path);
            block_in_place(|| curator_cell(&classpath, &addr, &cfg)).unwrap()
        });
        assert_measured(&r, Contender::Curator, clients);
    }
}

/// Each floor's chain runs until at least two were timed (windows doubling as for the
/// cells), and its figures are ordered and consistent: no timing thresholds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_floors_time_their_chains() {
    if !zookeeper_available() {
        return;
    }
    let server = TestServer::start().expect("start server");
    let addr = server.connect_string();
    for floor in Floor::ALL {
        let mut window = TINY;
        let mut r = None;
        for attempt in 0..=GROWTHS_MAX {
            let dir = format!("/bench/{}-{attempt}", floor.key());
            let got = floor_cell(&addr, &dir, floor, window)
                .await
                .unwrap_or_else(|e| panic!("{floor}: {e}"));
            let enough = got.samples_ns.len() >= 2;
            r = Some(got);
            if enough {
                break;
            }
            window *= 2;
        }
        let r = r.expect("measured");
        eprintln!(
            "{floor}: {} chains, p50 {:?} us, {:?}/s",
            r.samples_ns.len(),
            r.p50_us(),
            r.chain_per_s()
        );
        assert_eq!(r.floor, floor);
        assert!(
            r.samples_ns.len() >= 2,
            "{floor}: fewer than 2 chains timed"
        );
        assert!(r.samples_ns.windows(2).all(|w| w[0] <= w[1]), "sorted");
        assert!(r.p50_us().unwrap() > 0.0 && r.chain_per_s().unwrap() > 0.0);
        let pooled = FloorResult::pool(&[r.clone(), r.clone()]).unwrap();
        assert_eq!(pooled.samples_ns.len(), 2 * r.samples_ns.len());
        assert_eq!(pooled.window_s, 2.0 * r.window_s);
    }
}
