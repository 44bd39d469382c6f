//! The simulation against a real ZooKeeper: random request sequences (several sessions,
//! every request kind, multis, watches, closes, invalid paths, ZooKeeper's own nodes,
//! requests at the server's size bound, pipelined batches, sessions in flight at once)
//! run through `SimClient` and through `ZkClient` on a server the test starts, compared
//! result by result: error kinds, paths with their suffixes, stats (zxids by their order),
//! children, data, and watch outcomes with the step whose replies first showed them.
//!
//! A few hundred sequences by default; `ZKLOCK_DIFF_SEQUENCES=N` runs N, and
//! `ZKLOCK_DIFF_SEED=S` starts from seed S. A difference fails the test with the seed and
//! the sequence shrunk (steps, then requests, removed while the difference stays).
//!
//! The sequences run in `LANES` lanes at once on the one server, seed by seed in turn:
//! a sequence mostly waits on the server's answers, and each lane's sequences keep to
//! directories of their own, so no lane sees another's nodes.
//!
//! `in_flight` adds what the comparison cannot: a request in flight at a connection loss
//! is applied once or not at all, never twice, on both sides.
//!
//! What "in flight at once" may hold: in a step with several sessions only the first
//! writes, and the others read paths it does not touch, so their results cannot depend
//! on the server's interleaving. A watch outcome such a reader's step caused may show in
//! that step or at the reader's next one; both count as that step.

mod in_flight;
mod ops;
mod run;

use ops::{Req, Step};
use run::{Entry, Kind, Seen};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use zklock_real::ZkClient;
use zklock_real::harness::{self, TestServer};
use zklock_real::proxy::Proxy;
use zklock_recipe::{Coordination, CreateMode, SessionState, Stat};
use zklock_sim::SimConfig;

/// Sequences of the default suite.
const SEQUENCES_DEFAULT: u64 = 300;
/// The largest `ZKLOCK_DIFF_SEQUENCES` taken.
const SEQUENCES_MAX: u64 = 10_000_000;
/// Session timeout of the real clients: long enough that none expires while the test
/// runs on a loaded machine.
const SESSION_TIMEOUT_MS: u64 = 30_000;
const CONNECT_TIMEOUT_MS: u64 = 60_000;
/// Re-runs a shrink may take.
const SHRINK_RUNS_MAX: usize = 300;
/// Sequences run at once, each lane with a session and directories of its own.
const LANES: u64 = 4;

fn env_u64(name: &str, default: u64, max: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => match v.parse::<u64>() {
            Ok(n) if n <= max => n,
            _ => panic!("{name}={v:?}: want a whole number up to {max}"),
        },
        _ => default,
    }
}

/// A lane on the real server: a long-lived session that makes each of its sequences'
/// directories, named after the lane so that lanes never share one.
struct Real<'a> {
    server: &'a TestServer,
    setup: ZkClient,
    lane: u64,
    dirs: u64,
}

impl<'a> Real<'a> {
    async fn new(server: &'a TestServer, lane: u64) -> Self {
        let setup = ZkClient::connect(
            &server.connect_string(),
            SESSION_TIMEOUT_MS,
            CONNECT_TIMEOUT_MS,
        )
        .await
        .expect("client connects");
        Real {
            server,
            setup,
            lane,
            dirs: 0,
        }
    }

    /// The directory of this lane's next sequence.
    fn next_dir(&self) -> String {
        format!("/l{}d{}", self.lane, self.dirs + 1)
    }

    /// A fresh directory for one run.
    async fn fresh_dir(&mut self) -> String {
        let dir = self.next_dir();
        self.dirs += 1;
        self.setup
            .create(&dir, b"", CreateMode::Persistent)
            .await
            .expect("directory created");
        dir
    }

    async fn run(&mut self, steps: &[Step], dir: Option<&str>) -> Outcome {
        let dir = match dir {
            Some(d) => d.to_owned(),
            None => self.fresh_dir().await,
        };
        // Each session through a proxy of its own, which can cut its connection.
        let mut clients = Vec::new();
        let mut proxies = Vec::new();
        for _ in 0..ops::SESSIONS {
            let proxy = Proxy::start(self.server.addr())
                .await
                .expect("proxy starts");
            clients.push(
                ZkClient::connect(
                    &proxy.connect_string(),
                    SESSION_TIMEOUT_MS,
                    CONNECT_TIMEOUT_MS,
                )
                .await
                .expect("client connects"),
            );
            proxies.push(proxy);
        }
        let faults = RealFaults {
            server: self.server.connect_string(),
            clients: &clients,
            proxies: &proxies,
        };
        let entries = run::run(&clients, &faults, &dir, steps).await;
        let sessions = clients.iter().map(|c| c.session_id().0).collect();
        for c in &clients {
            let _ = c.close().await;
        }
        Outcome { entries, sessions }
    }
}

/// The simulation's side: a world of its own, with the same directory made first.
/// It runs on a thread of its own (a madsim world cannot start inside tokio's runtime),
/// awaited without blocking the other lanes.
async fn sim_run(seed: u64, steps: &[Step], dir: &str) -> Outcome {
    let (steps, dir) = (steps.to_vec(), dir.to_owned());
    let (done, outcome) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let outcome = zklock_sim::run(SimConfig::with_seed(seed), move |sim| async move {
            let setup = sim.client();
            if !dir.is_empty() {
                setup
                    .create(&dir, b"", CreateMode::Persistent)
                    .await
                    .expect("directory created");
            }
            let clients: Vec<_> = (0..ops::SESSIONS).map(|_| sim.client()).collect();
            let faults = SimFaults {
                sim: &sim,
                clients: &clients,
            };
            let entries = run::run(&clients, &faults, &dir, &steps).await;
            let sessions = clients.iter().map(|c| c.session_id().0).collect();
            Outcome { entries, sessions }
        })
        .expect("simulation runs");
        let _ = done.send(outcome);
    });
    outcome
        .await
        .expect("the simulation thread ends with an outcome")
}

/// Faults on the real server: expiry by a second connection on the session (as
/// Curator's KillSession), a cut through the session's proxy.
struct RealFaults<'a> {
    server: String,
    clients: &'a [ZkClient],
    proxies: &'a [Proxy],
}

impl run::Faults for RealFaults<'_> {
    async fn expire(&self, session: usize) {
        if self.clients[session].session_state().is_terminal() {
            return;
        }
        let bound = Duration::from_millis(CONNECT_TIMEOUT_MS);
        harness::expire_session(&self.server, &self.clients[session], bound)
            .await
            .expect("session expires");
    }

    async fn disconnect(&self, session: usize) {
        let c = &self.clients[session];
        if c.session_state() != SessionState::Connected {
            return;
        }
        // Cut, with the session's reconnects refused for a moment, until the client has
        // seen it: a read it sends fails (these reads are not compared; they change
        // nothing). Should the client not look within the moment, cut again.
        let proxy = &self.proxies[session];
        let deadline = Instant::now() + Duration::from_millis(CONNECT_TIMEOUT_MS);
        loop {
            assert!(
                Instant::now() < deadline,
                "the cut never reached the client"
            );
            proxy.refuse_session_for(c.session_id().0, Duration::from_millis(100));
            proxy.cut_all();
            let until = Instant::now() + Duration::from_millis(50);
            while Instant::now() < until {
                if c.exists("/").await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
    }
}

/// The same faults in the simulation.
struct SimFaults<'a> {
    sim: &'a zklock_sim::Sim,
    clients: &'a [zklock_sim::SimClient],
}

impl run::Faults for SimFaults<'_> {
    async fn expire(&self, session: usize) {
        let c = &self.clients[session];
        if c.session_state().is_terminal() {
            return;
        }
        self.sim.expire(c);
        while !c.session_state().is_terminal() {
            c.sleep(Duration::from_millis(10)).await;
        }
    }

    async fn disconnect(&self, session: usize) {
        let c = &self.clients[session];
        if c.session_state() != SessionState::Connected {
            return;
        }
        self.sim.disconnect(c);
        c.sleep(Duration::from_millis(1)).await;
    }
}

struct Outcome {
    entries: Vec<Entry>,
    sessions: Vec<i64>,
}

/// Entries in a form both sides share: zxids replaced by their rank among the zxids the
/// run saw (the server also spends zxids on sessions and failed writes), ephemeral
/// owners by session index, and watch outcomes at a reader's concurrent step merged
/// with its next step (see the module's docs).
fn canonical(outcome: &Outcome, steps: &[Step]) -> Vec<Entry> {
    let mut zxids = BTreeSet::new();
    let stats = |seen: &Seen| -> Vec<Stat> {
        match seen {
            Seen::Created(_, s) | Seen::Data(_, s) | Seen::Stat(s) | Seen::Exists(Some(s)) => {
                vec![*s]
            }
            Seen::Multi(_, s) => s.clone(),
            _ => Vec::new(),
        }
    };
    for e in &outcome.entries {
        for s in stats(&e.seen) {
            zxids.extend([s.czxid, s.mzxid, s.pzxid].into_iter().filter(|&z| z > 0));
        }
    }
    let rank: BTreeMap<i64, i64> = zxids.into_iter().zip(1..).collect();
    let fix = |s: &Stat| Stat {
        czxid: rank.get(&s.czxid).copied().unwrap_or(s.czxid),
        mzxid: rank.get(&s.mzxid).copied().unwrap_or(s.mzxid),
        pzxid: rank.get(&s.pzxid).copied().unwrap_or(s.pzxid),
        ephemeral_owner: match s.ephemeral_owner {
            0 => 0,
            owner => outcome
                .sessions
                .iter()
                .position(|&o| o == owner)
                .map_or(-1, |i| i as i64 + 1),
        },
        ..*s
    };
    // Per session: the step a watch outcome seen at `step` counts as. A step that
    // follows the session's reading step in a concurrent one counts as that step's (in
    // a chain of them, as the first's).
    // A step without a reply from the server (see `run::from_server`) shows nothing
    // new, so it does not end the chain.
    let answered: BTreeSet<(usize, usize)> = outcome
        .entries
        .iter()
        .filter(|e| matches!(e.what, Kind::Response(_)) && run::from_server(&e.seen))
        .map(|e| (e.session, e.step))
        .collect();
    let mut merged: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for session in 0..ops::SESSIONS {
        let mut reader_at: Option<usize> = None;
        let active = steps.iter().enumerate().filter_map(|(i, step)| {
            let pos = step.batches.iter().position(|(s, _)| *s == session)?;
            Some((i, step.is_concurrent() && pos > 0))
        });
        // The final read of every session is the step after the last.
        for (i, reader) in active.chain([(steps.len(), false)]) {
            let canon = reader_at.unwrap_or(i);
            merged.insert((session, i), canon);
            if reader {
                reader_at = Some(canon);
            } else if answered.contains(&(session, i)) {
                reader_at = None;
            }
        }
    }
    let mut out: Vec<Entry> = outcome
        .entries
        .iter()
        .map(|e| {
            let seen = match &e.seen {
                Seen::Created(p, s) => Seen::Created(p.clone(), fix(s)),
                Seen::Data(d, s) => Seen::Data(d.clone(), fix(s)),
                Seen::Stat(s) => Seen::Stat(fix(s)),
                Seen::Exists(s) => Seen::Exists(s.as_ref().map(fix)),
                Seen::Multi(n, s) => Seen::Multi(n.clone(), s.iter().map(fix).collect()),
                other => other.clone(),
            };
            let step = match e.what {
                Kind::Watch(..) => merged.get(&(e.session, e.step)).copied().unwrap_or(e.step),
                Kind::Response(_) => e.step,
            };
            Entry {
                step,
                session: e.session,
                what: e.what.clone(),
                seen,
            }
        })
        .collect();
    out.sort_by(|a, b| (a.step, a.session, &a.what).cmp(&(b.step, b.session, &b.what)));
    out
}

/// The first difference between the two sides, if any.
fn difference(sim: &[Entry], real: &[Entry]) -> Option<String> {
    let n = sim.len().max(real.len());
    for i in 0..n {
        let (a, b) = (sim.get(i), real.get(i));
        if a != b {
            let show = |e: Option<&Entry>| e.map_or("(nothing)".to_owned(), Entry::to_string);
            return Some(format!("simulation: {}\n      real: {}", show(a), show(b)));
        }
    }
    None
}

async fn compare(
    real: &mut Real<'_>,
    seed: u64,
    steps: &[Step],
    dir: Option<&str>,
) -> Option<String> {
    let real_dir = dir.map_or_else(|| real.next_dir(), str::to_owned);
    let got = real.run(steps, dir).await;
    let sim = sim_run(seed, steps, &real_dir).await;
    difference(&canonical(&sim, steps), &canonical(&got, steps))
}

/// Removes steps, then requests, while the sequence still shows a difference.
async fn shrink(real: &mut Real<'_>, seed: u64, mut steps: Vec<Step>) -> (Vec<Step>, String) {
    let mut why = compare(real, seed, &steps, None)
        .await
        .unwrap_or_else(|| "(the difference did not show again)".to_owned());
    let mut runs = 0;
    let mut changed = true;
    while changed && runs < SHRINK_RUNS_MAX {
        changed = false;
        let mut i = steps.len();
        while i > 0 && runs < SHRINK_RUNS_MAX {
            i -= 1;
            let mut fewer = steps.clone();
            fewer.remove(i);
            runs += 1;
            if let Some(w) = compare(real, seed, &fewer, None).await {
                (steps, why, changed) = (fewer, w, true);
            }
        }
        for s in (0..steps.len()).rev() {
            for b in (0..steps[s].batches.len()).rev() {
                for r in (0..steps[s].batches[b].1.len()).rev() {
                    if runs >= SHRINK_RUNS_MAX || steps[s].batches[b].1.len() < 2 {
                        continue;
                    }
                    let mut fewer = steps.clone();
                    fewer[s].batches[b].1.remove(r);
                    runs += 1;
                    if let Some(w) = compare(real, seed, &fewer, None).await {
                        (steps, why, changed) = (fewer, w, true);
                    }
                }
            }
        }
    }
    (steps, why)
}

fn show(steps: &[Step]) -> String {
    let mut s = String::new();
    for (i, step) in steps.iter().enumerate() {
        for (session, reqs) in &step.batches {
            let reqs: Vec<String> = reqs.iter().map(short).collect();
            s += &format!("  step {i} session {session}: {}\n", reqs.join(", "));
        }
    }
    s
}

/// A request, with long data shown by its length.
fn short(r: &Req) -> String {
    let text = format!("{r:?}");
    if text.len() > 300 {
        format!("{}... ({} chars)", &text[..200], text.len())
    } else {
        text
    }
}

/// Reads, sequential names and refused writes at the root and on ZooKeeper's own nodes,
/// on a server nothing else has touched yet.
fn fresh_server_steps() -> Vec<Step> {
    let read = |path: &str, watch| Req::GetData {
        path: path.to_owned(),
        watch,
    };
    let b = |s: usize, reqs: Vec<Req>| Step {
        batches: vec![(s, reqs)],
    };
    let create = |path: &str, mode| Req::Create {
        path: path.to_owned(),
        data: ops::Data::Bytes(Vec::new()),
        mode,
    };
    vec![
        b(
            0,
            vec![
                read("~/", false),
                Req::GetChildren {
                    path: "~/".to_owned(),
                    watch: true,
                },
                read("~/zookeeper", true),
                read("~/zookeeper/config", false),
                read("~/zookeeper/quota", false),
                Req::GetChildren {
                    path: "~/zookeeper".to_owned(),
                    watch: false,
                },
            ],
        ),
        b(
            1,
            vec![
                create("~/zookeeper", CreateMode::Persistent),
                create("~/zookeeper/quota", CreateMode::Persistent),
                create("~/zookeeper/config/x", CreateMode::Persistent),
                Req::SetData {
                    path: "~/zookeeper/config".to_owned(),
                    data: ops::Data::Bytes(b"x".to_vec()),
                    version: Some(0),
                },
                Req::Delete {
                    path: "~/zookeeper/quota".to_owned(),
                    version: None,
                },
                Req::Delete {
                    path: "~/".to_owned(),
                    version: None,
                },
            ],
        ),
        b(
            2,
            vec![
                create("~/r-", CreateMode::PersistentSequential),
                create("~/", CreateMode::EphemeralSequential),
                create("~/", CreateMode::Persistent),
                read("~/", false),
                read("~/zookeeper", false),
            ],
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulation_answers_as_a_real_zookeeper_does() {
    if !harness::available_for_tests() {
        return;
    }
    let sequences = env_u64("ZKLOCK_DIFF_SEQUENCES", SEQUENCES_DEFAULT, SEQUENCES_MAX);
    let first_seed = env_u64("ZKLOCK_DIFF_SEED", 0, u64::MAX - SEQUENCES_MAX);
    let server = tokio::task::block_in_place(TestServer::start).expect("ZooKeeper starts");
    let mut first = Real::new(&server, 0).await;

    // "~/" is the root here: "~" stands for "". This runs alone, before any lane has
    // made a directory.
    let fresh = fresh_server_steps();
    if let Some(why) = compare(&mut first, 0, &fresh, Some("")).await {
        panic!(
            "on a fresh server the simulation answered otherwise:\n{why}\nsteps:\n{}",
            show(&fresh)
        );
    }

    let started = std::time::Instant::now();
    let seeds = first_seed..first_seed + sequences;
    let mut lanes = vec![first];
    for lane in 1..LANES {
        lanes.push(Real::new(&server, lane).await);
    }
    // Lane L runs the seeds S with S % LANES == L; each stops at its first difference.
    let runs = lanes.into_iter().map(|mut real| {
        let lane = real.lane;
        let seeds = seeds.clone().filter(move |s| s % LANES == lane);
        async move {
            let mut requests = 0;
            for seed in seeds {
                let steps = ops::sequence(seed, real.next_dir().len());
                requests += steps
                    .iter()
                    .flat_map(|s| &s.batches)
                    .map(|(_, r)| r.len())
                    .sum::<usize>();
                if compare(&mut real, seed, &steps, None).await.is_some() {
                    let (shrunk, why) = shrink(&mut real, seed, steps).await;
                    return Err((seed, shrunk, why));
                }
            }
            Ok(requests)
        }
    });
    let mut requests = 0;
    let mut differences = Vec::new();
    for lane in futures_util::future::join_all(runs).await {
        match lane {
            Ok(n) => requests += n,
            Err(found) => differences.push(found),
        }
    }
    // The lowest seed that differed, whichever lane found it first.
    if let Some((seed, shrunk, why)) = differences.into_iter().min_by_key(|d| d.0) {
        panic!(
            "seed {seed} (ZKLOCK_DIFF_SEED={seed} ZKLOCK_DIFF_SEQUENCES=1 reruns it): the \
             simulation and ZooKeeper differ\n{why}\nshrunk sequence (\"~\" is the \
             sequence's directory):\n{}",
            show(&shrunk)
        );
    }
    eprintln!(
        "{sequences} sequences from seed {first_seed}, {requests} requests, no difference, in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
