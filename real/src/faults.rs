//! Faults for real runs, injected from one task on a seeded schedule until a heal time:
//!
//! | name          | what                                                            | history event            |
//! |---------------|-----------------------------------------------------------------|--------------------------|
//! | `cut`         | the target's connections are closed (its proxies cut them)       | `ConnectionLoss`         |
//! | `lost-create` | the target's next create is applied and its reply withheld      | `LostCreateResponse`, when it strikes |
//! | `expire`      | the target is cut off, then its session closed server-side, as Curator's KillSession (see [`expire_isolated`]) | `ForcedExpiry` |
//! | `black-hole`  | nothing reaches or leaves the target for a while; past its session timeout the server expires it | `Partition` |
//! | `local-expire` | the target's client library declares its session expired: it reports Expired, and the process opens a new session, while the server keeps the old one, and its nodes, for a session timeout (see [`ClientLink::expire_locally`]) | `LocalExpiry` |
//! | `pause`       | the target process freezes, as in a GC pause: its task is not polled and its proxies hold its traffic; past its session timeout the server expires it, and the process resumes believing what it believed. Some pauses strike at once, the rest at the target's next hold (`pause_in_hold_percent`; see [`crate::process`]) | `Pause` |
//! | `crash`       | the target process dies where it is: nothing more of it is recorded, its proxies keep its session from the server, which expires it a timeout later, and a new process with a new session starts `crash_restart_ms` later. Some crashes strike at once, the rest at the target's next hold (`crash_in_hold_percent`) | `Crash` |
//! | `kill-leader` | the ensemble's leader is SIGKILLed, and restarted a while later | `ConnectionLoss` for every client (every session is cut while the ensemble elects) |
//!
//! Each client talks through its own [`ClientLink`] (one proxy per server), so a proxy fault
//! strikes one client only. The schedule (gaps, kinds, targets, durations) comes from a
//! seed, kinds and targets each drawn from a bag, so that every kind comes up, and every
//! client is targeted, once before any comes up twice; what the servers and clients do in
//! between is real and not reproducible.

use crate::client::ZkClient;
use crate::error::RealError;
pub use crate::link::ClientLink;
use crate::process::{HoldFault, ProcessControl};
use crate::recorder::Recorder;
use crate::servers::Servers;
use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::task::{JoinHandle, JoinSet};
use zklock_recipe::history::{EventKind, FaultKind};
use zklock_recipe::{Coordination, SessionId, SessionState};

/// One kind of fault a real run can inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RealFault {
    Cut,
    LostCreate,
    Expire,
    BlackHole,
    LocalExpire,
    Pause,
    Crash,
    KillLeader,
}

impl RealFault {
    /// Every kind, in the order they are listed.
    pub const ALL: [RealFault; 8] = [
        RealFault::Cut,
        RealFault::LostCreate,
        RealFault::Expire,
        RealFault::BlackHole,
        RealFault::LocalExpire,
        RealFault::Pause,
        RealFault::Crash,
        RealFault::KillLeader,
    ];

    /// The kind's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            RealFault::Cut => "cut",
            RealFault::LostCreate => "lost-create",
            RealFault::Expire => "expire",
            RealFault::BlackHole => "black-hole",
            RealFault::LocalExpire => "local-expire",
            RealFault::Pause => "pause",
            RealFault::Crash => "crash",
            RealFault::KillLeader => "kill-leader",
        }
    }

    /// Whether the fault goes through the target's proxies.
    pub fn needs_proxy(self) -> bool {
        // Expire too: the victim is cut off first (see `expire_isolated`).
        !matches!(self, RealFault::KillLeader)
    }
}

/// Which faults a run injects: `none`, `all`, or a comma-separated list of names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultSet(BTreeSet<RealFault>);

impl FaultSet {
    pub fn none() -> FaultSet {
        FaultSet::default()
    }

    pub fn all() -> FaultSet {
        RealFault::ALL.into_iter().collect()
    }

    pub fn contains(&self, fault: RealFault) -> bool {
        self.0.contains(&fault)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn insert(&mut self, fault: RealFault) {
        self.0.insert(fault);
    }

    pub fn remove(&mut self, fault: RealFault) {
        self.0.remove(&fault);
    }

    pub fn iter(&self) -> impl Iterator<Item = RealFault> + '_ {
        self.0.iter().copied()
    }

    /// Whether any fault needs per-client proxies.
    pub fn needs_proxies(&self) -> bool {
        self.iter().any(RealFault::needs_proxy)
    }
}

impl FromIterator<RealFault> for FaultSet {
    fn from_iter<I: IntoIterator<Item = RealFault>>(iter: I) -> Self {
        FaultSet(iter.into_iter().collect())
    }
}

impl FromStr for FaultSet {
    type Err = String;

    fn from_str(s: &str) -> Result<FaultSet, String> {
        match s.trim() {
            "none" => return Ok(FaultSet::none()),
            "all" => return Ok(FaultSet::all()),
            _ => {}
        }
        s.split(',')
            .map(str::trim)
            .map(|name| {
                RealFault::ALL
                    .into_iter()
                    .find(|f| f.name() == name)
                    .ok_or_else(|| {
                        let names: Vec<&str> = RealFault::ALL.iter().map(|f| f.name()).collect();
                        format!(
                            "unknown fault {name:?}: use none, all, or a comma-separated list of {}",
                            names.join(", ")
                        )
                    })
            })
            .collect()
    }
}

impl fmt::Display for FaultSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        let names: Vec<&str> = self.iter().map(RealFault::name).collect();
        f.write_str(&names.join(","))
    }
}

/// When and how hard faults strike. Times are run time (since the run's recorder started).
#[derive(Clone, Debug)]
pub struct FaultConfig {
    pub faults: FaultSet,
    /// Seeds the schedule: gaps, kinds, targets and durations.
    pub seed: u64,
    /// No fault before this.
    pub start_ms: u64,
    /// No fault starts after, or lasts past, this: the heal time the checker judges
    /// liveness from. Must not be later than the run's duration; with no faults, a run
    /// takes it as 0.
    pub heal_ms: u64,
    /// Shortest pause between two faults.
    pub gap_ms_min: u64,
    /// Longest pause between two faults.
    pub gap_ms_max: u64,
    /// Shortest black hole.
    pub black_hole_ms_min: u64,
    /// Longest black hole; longer than the session timeout, the server expires the session.
    pub black_hole_ms_max: u64,
    /// Shortest process pause.
    pub pause_ms_min: u64,
    /// Longest process pause; longer than the session timeout, the server expires the
    /// session while the process still believes what it believed.
    pub pause_ms_max: u64,
    /// Of the pauses, the share armed for the target's next hold, in percent (0 to 100);
    /// the rest strike at once, wherever the target is.
    pub pause_in_hold_percent: u64,
    /// How long a crashed process stays down before a new one starts, with a new session.
    pub crash_restart_ms: u64,
    /// Of the crashes, the share armed for the target's next hold, in percent (0 to 100).
    pub crash_in_hold_percent: u64,
    /// How long a pause or crash armed for the target's next hold waits for it before it
    /// is disarmed unstruck.
    pub hold_arm_ms: u64,
    /// How long an armed lost create waits for the target's next create before it is
    /// disarmed unstruck.
    pub lost_create_arm_ms: u64,
    /// How long a killed leader stays down before it is restarted.
    pub leader_down_ms: u64,
    /// Restart a killed leader (after `leader_down_ms`, at the latest at the heal). Off (the
    /// default), it stays down, only one leader is killed, and the run ends on the rest of
    /// the ensemble: the run then judges the recipe alone. A restarted leader rejoins
    /// with whatever it had logged: ZooKeeper 3.8.0 was seen here serving a transaction
    /// the quorum never committed after such a restart (see the crate's docs).
    pub restart_killed_leader: bool,
    /// How long forcing one expiry, or finding the leader, may take.
    pub server_action_timeout_ms: u64,
    /// The heal waits until every kind of fault in `faults` has struck this many times
    /// (armed faults count once they strike): while one has not, the schedule goes on past
    /// `heal_ms`, one gap at a time, so that a slow machine sees the faults a fast one
    /// does, only later. The run's heal is then when it happened
    /// ([`FaultCounts::healed_at_ms`]). Default 0: the heal is at `heal_ms`, whatever
    /// struck. (A leader is killed once unless `restart_killed_leader`: ask for 1 then.)
    pub strikes_min_per_kind: u64,
    /// The heal also waits until this holds of the run's history so far (a handover after
    /// a crash, say), one gap at a time, as for `strikes_min_per_kind`. Default None.
    pub heal_after: Option<crate::goal::RunGoal>,
    /// The latest heal when `strikes_min_per_kind` or `heal_after` has not been met by
    /// then, in run time:
    /// a bound only a hang reaches. Default 600,000 (10 minutes).
    pub strikes_deadline_ms: u64,
    /// Scripted faults aimed at requests (see [`crate::proxy::Proxy::aim`]): each armed
    /// on its client's proxies (by index) as the run starts, to strike that client's
    /// first matching request, and recorded as a connection loss of that client when it
    /// strikes. They need no fault kind in `faults`, and do not wait for the heal.
    /// Default none.
    pub aimed: Vec<(u32, crate::plan::AimedFault)>,
    /// Give every client its proxies even without a fault that needs them, so that the
    /// run records each client's requests (`RealRun::requests`): the fault-point search's
    /// reference run. Default false.
    pub record_requests: bool,
}

impl FaultConfig {
    /// Whether the plan pauses processes (a `pause` fault, or a pause aimed at a request):
    /// the run is then judged as one with pauses, where no recipe keeps belief-based
    /// exclusion.
    pub fn pauses_on(&self) -> bool {
        self.faults.contains(RealFault::Pause)
            || self
                .aimed
                .iter()
                .any(|(_, a)| matches!(a.action, crate::plan::AimedAction::Pause { .. }))
    }
}

impl Default for FaultConfig {
    /// No faults; with faults on, one every 0.5–1.5 s from 1 s to the heal at 20 s, black
    /// holes and pauses of 0.5–8 s (past a 4 s session, an expiry), a crashed process
    /// restarted after 1 s, half the pauses and crashes armed for the target's next hold
    /// for up to 2 s, a killed leader down 3 s.
    fn default() -> Self {
        FaultConfig {
            faults: FaultSet::none(),
            seed: 0,
            start_ms: 1_000,
            heal_ms: 20_000,
            gap_ms_min: 500,
            gap_ms_max: 1_500,
            black_hole_ms_min: 500,
            black_hole_ms_max: 8_000,
            pause_ms_min: 500,
            pause_ms_max: 8_000,
            pause_in_hold_percent: 50,
            crash_restart_ms: 1_000,
            crash_in_hold_percent: 50,
            hold_arm_ms: 2_000,
            lost_create_arm_ms: 2_000,
            leader_down_ms: 3_000,
            restart_killed_leader: false,
            server_action_timeout_ms: 20_000,
            strikes_min_per_kind: 0,
            heal_after: None,
            strikes_deadline_ms: 600_000,
            aimed: Vec::new(),
            record_requests: false,
        }
    }
}

/// What the injector did, by fault.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultCounts {
    pub cuts: u64,
    pub lost_creates_armed: u64,
    /// Armed lost creates that caught a create (the rest were disarmed unstruck).
    pub lost_creates_struck: u64,
    pub expiries: u64,
    pub black_holes: u64,
    pub local_expiries: u64,
    /// Pauses that struck at once.
    pub pauses: u64,
    /// Pauses armed for the target's next hold.
    pub hold_pauses_armed: u64,
    /// Armed pauses that struck in a hold (the rest were disarmed unstruck).
    pub hold_pauses_struck: u64,
    /// Crashes that struck at once.
    pub crashes: u64,
    /// Crashes armed for the target's next hold.
    pub hold_crashes_armed: u64,
    /// Armed crashes that struck in a hold.
    pub hold_crashes_struck: u64,
    pub leader_kills: u64,
    /// Run time of the heal, in ms: `heal_ms`, or later when the heal waited for
    /// [`FaultConfig::strikes_min_per_kind`] strikes or [`FaultConfig::heal_after`].
    pub healed_at_ms: u64,
    /// Fault actions that failed (e.g. an expiry the server did not confirm in time), with
    /// the first reasons.
    pub failures: Vec<String>,
}

/// How many failure reasons [`FaultCounts`] keeps.
pub const MAX_FAILURES_KEPT: usize = 8;

impl FaultCounts {
    pub fn total(&self) -> u64 {
        self.cuts
            + self.lost_creates_struck
            + self.expiries
            + self.black_holes
            + self.local_expiries
            + self.pauses
            + self.hold_pauses_struck
            + self.crashes
            + self.hold_crashes_struck
            + self.leader_kills
    }

    fn fail(&mut self, reason: String) {
        if self.failures.len() < MAX_FAILURES_KEPT {
            self.failures.push(reason);
        }
    }
}

impl fmt::Display for FaultCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "injected: cut {}, lost-create {} (armed {}), expire {}, black-hole {}, \
             local-expire {}, pause {}, pause in a hold {} (armed {}), crash {}, \
             crash in a hold {} (armed {}), kill-leader {}; healed at {} ms",
            self.cuts,
            self.lost_creates_struck,
            self.lost_creates_armed,
            self.expiries,
            self.black_holes,
            self.local_expiries,
            self.pauses,
            self.hold_pauses_struck,
            self.hold_pauses_armed,
            self.crashes,
            self.hold_crashes_struck,
            self.hold_crashes_armed,
            self.leader_kills,
            self.healed_at_ms
        )?;
        if !self.failures.is_empty() {
            write!(f, "; failed actions: {}", self.failures.join("; "))?;
        }
        Ok(())
    }
}

/// The current session of each client, or `None` while it has none (reconnecting, done),
/// and the id of the last one it had.
#[derive(Debug)]
pub struct LiveSessions(Vec<Mutex<SessionSlot>>);

/// A client's current session, and the id of its last one.
type SessionSlot = (Option<Arc<ZkClient>>, Option<SessionId>);

impl LiveSessions {
    pub fn new(clients: usize) -> LiveSessions {
        LiveSessions((0..clients).map(|_| Mutex::new((None, None))).collect())
    }

    fn slot(&self, client: usize) -> MutexGuard<'_, SessionSlot> {
        self.0[client]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub fn set(&self, client: usize, session: Option<Arc<ZkClient>>) {
        let mut slot = self.slot(client);
        if let Some(c) = &session {
            slot.1 = Some(c.session_id());
        }
        slot.0 = session;
    }

    pub fn get(&self, client: usize) -> Option<Arc<ZkClient>> {
        self.slot(client).0.clone()
    }

    /// The client's current session id, if it has a session.
    pub fn session_id(&self, client: usize) -> Option<SessionId> {
        self.get(client).map(|c| c.session_id())
    }

    /// The id of the client's current session, or of its last one (a client done with
    /// its script keeps no current session).
    pub fn last_session_id(&self, client: usize) -> Option<SessionId> {
        self.slot(client).1
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// SplitMix64: a tiny seeded generator for the schedule (no RNG crate needed).
#[derive(Clone, Debug)]
struct Schedule(u64);

impl Schedule {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi` (modulo bias is irrelevant here).
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next() % (hi - lo + 1)
    }

    /// Fisher–Yates.
    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.range(0, i as u64) as usize;
            items.swap(i, j);
        }
    }
}

/// Everything the injector acts on.
#[derive(Debug)]
pub struct FaultTargets {
    pub recorder: Arc<Recorder>,
    /// Per client; empty when no fault needs proxies.
    pub links: Vec<Arc<ClientLink>>,
    pub sessions: Arc<LiveSessions>,
    /// Per client: its process's pause and crash switches.
    pub processes: Vec<Arc<ProcessControl>>,
    pub servers: Arc<Mutex<Servers>>,
    /// Where forced expiries attach: the servers themselves, not the proxies.
    pub server_connect_string: String,
    /// Set to the heal's run time, in ms, when it happens ([`NOT_HEALED`] until then), so
    /// that the workload runs on past a heal that came late.
    pub healed_at_ms: Arc<AtomicU64>,
    /// Set when the run is interrupted: the schedule stops and the heal comes at once
    /// (pauses and black holes already under way end at their own time).
    pub stop: Arc<AtomicBool>,
    /// The run's facts so far, given the heal's run time in ms, for
    /// [`FaultConfig::heal_after`].
    pub facts_so_far: FactsSoFar,
}

/// See [`FaultTargets::facts_so_far`]: the run's facts, given the heal's run time in ms.
#[derive(Clone)]
pub struct FactsSoFar(pub Arc<FactsFn>);

impl fmt::Debug for FactsSoFar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FactsSoFar(..)")
    }
}

/// See [`FaultTargets::facts_so_far`].
pub type FactsFn = dyn Fn(u64) -> zklock_recipe::history::RunFacts + Send + Sync;

/// [`FaultTargets::healed_at_ms`] before the heal.
pub const NOT_HEALED: u64 = u64::MAX;

/// A leader killed and its pending restart.
struct Downed {
    server: usize,
    restart: JoinHandle<Result<(), RealError>>,
    /// Not restarted: no further leader is killed (the ensemble keeps its last quorum).
    stays_down: bool,
}

/// Runs the fault schedule from `config.start_ms` until `config.heal_ms` of the recorder's
/// clock (later, while fewer than `config.strikes_min` faults have struck), then heals
/// everything: black holes end, armed lost creates are disarmed, a killed server is
/// restarted (and waited for).
pub async fn inject(config: &FaultConfig, targets: &FaultTargets) -> FaultCounts {
    let mut counts = FaultCounts::default();
    let mut schedule = Schedule(config.seed);
    let mut background: JoinSet<TaskOutcome> = JoinSet::new();
    let mut downed: Option<Downed> = None;
    let mut kinds_bag = Vec::new();
    let mut targets_bag = Vec::new();
    let mut heal = Duration::from_millis(config.heal_ms);
    let deadline = Duration::from_millis(config.strikes_deadline_ms.max(config.heal_ms));
    let clients = targets.sessions.len();
    let mut next = Duration::from_millis(config.start_ms);
    if !config.faults.is_empty() && clients > 0 {
        loop {
            if targets.stop.load(Ordering::Acquire) {
                heal = heal.min(targets.recorder.elapsed());
                break;
            }
            if next >= heal {
                while let Some(done) = background.try_join_next() {
                    note(&mut counts, done);
                }
                let short = config.faults.iter().any(|kind| {
                    struck_so_far(kind, &counts, targets) < config.strikes_min_per_kind
                }) || config.heal_after.as_ref().is_some_and(|goal| {
                    let now_ms = targets.recorder.elapsed().as_millis() as u64;
                    !goal.reached(
                        &targets.recorder.history(),
                        &(targets.facts_so_far.0)(now_ms),
                    )
                });
                if !short || heal >= deadline {
                    break;
                }
                // Too few struck yet: the heal moves on by a gap, and the schedule with it.
                heal = (next + Duration::from_millis(config.gap_ms_max.max(1))).min(deadline);
                if next >= heal {
                    break;
                }
            }
            sleep_unless_stopped(targets, next).await;
            if targets.stop.load(Ordering::Acquire) {
                continue;
            }
            while let Some(done) = background.try_join_next() {
                note(&mut counts, done);
            }
            if downed
                .as_ref()
                .is_some_and(|d| !d.stays_down && d.restart.is_finished())
            {
                let d = downed.take().expect("checked above");
                note_restart(&mut counts, d).await;
            }
            if let Some(kind) = next_kind(&mut kinds_bag, &mut schedule, |k| {
                config.faults.contains(k) && applicable(k, targets, downed.is_some())
            }) {
                let target = next_target(&mut targets_bag, &mut schedule, clients);
                let ctx = Strike {
                    config,
                    targets,
                    heal,
                    target,
                };
                match kind {
                    RealFault::Cut => ctx.cut(&mut counts),
                    RealFault::LostCreate => ctx.lost_create(&mut counts, &mut background),
                    RealFault::Expire => ctx.expire(&mut counts, &mut background),
                    RealFault::BlackHole => ctx.black_hole(&mut counts, &mut schedule),
                    RealFault::LocalExpire => ctx.local_expire(&mut counts),
                    RealFault::Pause => ctx.pause(&mut counts, &mut schedule),
                    RealFault::Crash => ctx.crash(&mut counts, &mut schedule),
                    RealFault::KillLeader => {
                        downed = ctx.kill_leader(&mut counts).await;
                    }
                }
            }
            let gap = schedule.range(config.gap_ms_min, config.gap_ms_max.max(1));
            next = targets.recorder.elapsed() + Duration::from_millis(gap);
        }
    }
    sleep_unless_stopped(targets, heal).await;
    if targets.stop.load(Ordering::Acquire) {
        heal = heal.min(targets.recorder.elapsed());
    }
    for link in &targets.links {
        link.heal();
    }
    counts.healed_at_ms = heal.as_millis() as u64;
    targets
        .healed_at_ms
        .store(counts.healed_at_ms, Ordering::Release);
    while let Some(done) = background.join_next().await {
        note(&mut counts, done);
    }
    if let Some(d) = downed {
        note_restart(&mut counts, d).await;
    }
    // Armed faults never strike past the heal, so these counts are final.
    counts.hold_pauses_struck = targets.processes.iter().map(|p| p.pauses_in_hold()).sum();
    counts.hold_crashes_struck = targets.processes.iter().map(|p| p.crashes_in_hold()).sum();
    counts
}

/// How often faults of `kind` struck so far: at once, or armed and then struck.
fn struck_so_far(kind: RealFault, counts: &FaultCounts, targets: &FaultTargets) -> u64 {
    let processes = targets.processes.iter();
    match kind {
        RealFault::Cut => counts.cuts,
        RealFault::LostCreate => counts.lost_creates_struck,
        RealFault::Expire => counts.expiries,
        RealFault::BlackHole => counts.black_holes,
        RealFault::LocalExpire => counts.local_expiries,
        RealFault::Pause => counts.pauses + processes.map(|p| p.pauses_in_hold()).sum::<u64>(),
        RealFault::Crash => counts.crashes + processes.map(|p| p.crashes_in_hold()).sum::<u64>(),
        RealFault::KillLeader => counts.leader_kills,
    }
}

/// The next fault's target: drawn from a bag holding each client once, refilled in a
/// seeded order when empty, so every client is struck once before any is struck twice.
fn next_target(bag: &mut Vec<usize>, schedule: &mut Schedule, clients: usize) -> usize {
    if bag.is_empty() {
        bag.extend(0..clients);
        schedule.shuffle(bag);
    }
    bag.pop().expect("refilled above, with at least one client")
}

/// The next fault kind: drawn from a bag holding each kind once, refilled in a seeded
/// order when empty, so even a short run sees every kind. Kinds `usable` refuses now are
/// passed over.
fn next_kind(
    bag: &mut Vec<RealFault>,
    schedule: &mut Schedule,
    usable: impl Fn(RealFault) -> bool,
) -> Option<RealFault> {
    for _ in 0..2 {
        while let Some(kind) = bag.pop() {
            if usable(kind) {
                return Some(kind);
            }
        }
        bag.extend(RealFault::ALL);
        schedule.shuffle(bag);
    }
    None
}

fn applicable(kind: RealFault, targets: &FaultTargets, server_down: bool) -> bool {
    match kind {
        RealFault::Cut
        | RealFault::LostCreate
        | RealFault::BlackHole
        | RealFault::Expire
        | RealFault::LocalExpire
        | RealFault::Pause
        | RealFault::Crash => !targets.links.is_empty(),
        // One server down at a time, so the ensemble keeps its quorum.
        RealFault::KillLeader => !server_down && lock_servers(&targets.servers).can_kill_leader(),
    }
}

fn lock_servers(servers: &Mutex<Servers>) -> std::sync::MutexGuard<'_, Servers> {
    servers.lock().unwrap_or_else(PoisonError::into_inner)
}

/// [`sleep_until`], cut short when the run is stopped (looked at every 50 ms).
async fn sleep_unless_stopped(targets: &FaultTargets, at: Duration) {
    loop {
        let now = targets.recorder.elapsed();
        if at <= now || targets.stop.load(Ordering::Acquire) {
            return;
        }
        tokio::time::sleep((at - now).min(Duration::from_millis(50))).await;
    }
}

async fn sleep_until(recorder: &Recorder, at: Duration) {
    let now = recorder.elapsed();
    if at > now {
        tokio::time::sleep(at - now).await;
    }
}

/// How a background fault task ended: `Ok(true)` when a lost create struck.
type TaskOutcome = Result<bool, String>;

fn note(counts: &mut FaultCounts, done: Result<TaskOutcome, tokio::task::JoinError>) {
    match done {
        Ok(Ok(struck)) => counts.lost_creates_struck += u64::from(struck),
        Ok(Err(reason)) => counts.fail(reason),
        Err(e) => counts.fail(format!("a fault task failed: {e}")),
    }
}

async fn note_restart(counts: &mut FaultCounts, downed: Downed) {
    match downed.restart.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => counts.fail(format!("restarting server {}: {e}", downed.server)),
        Err(e) => counts.fail(format!("restarting server {}: {e}", downed.server)),
    }
}

/// One fault about to strike one client.
struct Strike<'a> {
    config: &'a FaultConfig,
    targets: &'a FaultTargets,
    heal: Duration,
    target: usize,
}

impl Strike<'_> {
    fn record(&self, client: usize, fault: FaultKind) {
        let session = self
            .targets
            .sessions
            .session_id(client)
            .unwrap_or(SessionId(0));
        self.targets
            .recorder
            .record(client as u32, session, EventKind::Fault { fault });
    }

    fn cut(&self, counts: &mut FaultCounts) {
        self.record(self.target, FaultKind::ConnectionLoss);
        self.targets.links[self.target].cut();
        counts.cuts += 1;
    }

    fn lost_create(&self, counts: &mut FaultCounts, background: &mut JoinSet<TaskOutcome>) {
        let link = Arc::clone(&self.targets.links[self.target]);
        if !link.arm_lost_create() {
            return;
        }
        counts.lost_creates_armed += 1;
        let before = link.lost_reply_count();
        let recorder = Arc::clone(&self.targets.recorder);
        let sessions = Arc::clone(&self.targets.sessions);
        let client = self.target;
        // Never armed past the heal.
        let until = (recorder.elapsed() + Duration::from_millis(self.config.lost_create_arm_ms))
            .min(self.heal);
        background.spawn(async move {
            // Recorded when it strikes, so the history shows it inside the acquire it hit.
            while recorder.elapsed() < until {
                if link.lost_reply_count() > before {
                    let session = sessions.session_id(client).unwrap_or(SessionId(0));
                    recorder.record(
                        client as u32,
                        session,
                        EventKind::Fault {
                            fault: FaultKind::LostCreateResponse,
                        },
                    );
                    link.disarm_lost_create();
                    return Ok(true);
                }
                tokio::time::sleep(Duration::from_millis(LOST_CREATE_POLL_MS)).await;
            }
            link.disarm_lost_create();
            Ok(false)
        });
    }

    fn expire(&self, counts: &mut FaultCounts, background: &mut JoinSet<TaskOutcome>) {
        let Some(client) = self.targets.sessions.get(self.target) else {
            return;
        };
        self.record(self.target, FaultKind::ForcedExpiry);
        counts.expiries += 1;
        let link = Arc::clone(&self.targets.links[self.target]);
        let connect = self.targets.server_connect_string.clone();
        let timeout = Duration::from_millis(self.config.server_action_timeout_ms);
        // A lock in a process of its own (a driver) has a session of its own: it expires
        // with the client's, while both are cut off.
        let os = self.targets.processes[self.target].os_process();
        background.spawn(async move {
            if let Some(os) = os.filter(|os| os.session != 0) {
                // Cut off first, as `expire_isolated` does; a closed socket is news a
                // driver's client hears at once. The black hole lasts until the client's
                // own session is expired below.
                link.black_hole();
                link.cut();
                tokio::time::sleep(Duration::from_millis(ISOLATION_GRACE_MS * 2)).await;
                let killed =
                    crate::harness::kill_session(&connect, SessionId(os.session), timeout).await;
                if let Err(e) = killed {
                    link.end_black_hole();
                    return Err(format!("forcing a driver's expiry: {e}"));
                }
            }
            expire_isolated(&link, &client, &connect, timeout)
                .await
                .map(|()| false)
                .map_err(|e| format!("forcing an expiry: {e}"))
        });
    }

    fn black_hole(&self, counts: &mut FaultCounts, schedule: &mut Schedule) {
        let left = self
            .heal
            .saturating_sub(self.targets.recorder.elapsed())
            .as_millis() as u64;
        let ms = schedule
            .range(self.config.black_hole_ms_min, self.config.black_hole_ms_max)
            .min(left);
        if ms == 0 {
            return;
        }
        self.record(self.target, FaultKind::Partition { duration_ms: ms });
        self.targets.links[self.target].black_hole_for(Duration::from_millis(ms));
        counts.black_holes += 1;
    }

    fn local_expire(&self, counts: &mut FaultCounts) {
        let Some(client) = self.targets.sessions.get(self.target) else {
            return;
        };
        if client.session_state().is_terminal() {
            return;
        }
        // Recorded first, so that the history shows the fault before the Expired it causes.
        self.record(self.target, FaultKind::LocalExpiry);
        let refuse_for = client.negotiated_session_timeout() * 2;
        if self.targets.links[self.target].expire_locally(&client, refuse_for) {
            counts.local_expiries += 1;
        } else {
            counts.fail(format!(
                "a local expiry found session {} over already",
                client.session_id()
            ));
        }
    }

    fn pause(&self, counts: &mut FaultCounts, schedule: &mut Schedule) {
        let now = self.targets.recorder.elapsed();
        let left = self.heal.saturating_sub(now).as_millis() as u64;
        let ms = schedule
            .range(self.config.pause_ms_min, self.config.pause_ms_max)
            .min(left);
        let in_hold = schedule.range(1, 100) <= self.config.pause_in_hold_percent;
        if ms == 0 {
            return;
        }
        let duration = Duration::from_millis(ms);
        let process = &self.targets.processes[self.target];
        if in_hold {
            // The worker records it when it strikes, inside the hold it hit.
            process.arm_for_hold(HoldFault::Pause(duration), self.arm_until(), self.heal);
            counts.hold_pauses_armed += 1;
        } else {
            self.record(self.target, FaultKind::Pause { duration_ms: ms });
            process.pause_for(duration);
            counts.pauses += 1;
        }
    }

    fn crash(&self, counts: &mut FaultCounts, schedule: &mut Schedule) {
        let in_hold = schedule.range(1, 100) <= self.config.crash_in_hold_percent;
        let restart_after = Duration::from_millis(self.config.crash_restart_ms);
        let process = &self.targets.processes[self.target];
        if in_hold {
            let fault = HoldFault::Crash { restart_after };
            process.arm_for_hold(fault, self.arm_until(), self.heal);
            counts.hold_crashes_armed += 1;
        } else if let Some(client) = self.targets.sessions.get(self.target)
            && process.crash(&client, restart_after)
        {
            counts.crashes += 1;
        }
    }

    /// Until when a fault armed for the target's next hold may strike.
    fn arm_until(&self) -> Duration {
        self.targets.recorder.elapsed() + Duration::from_millis(self.config.hold_arm_ms)
    }

    async fn kill_leader(&self, counts: &mut FaultCounts) -> Option<Downed> {
        let servers = Arc::clone(&self.targets.servers);
        let timeout = Duration::from_millis(self.config.server_action_timeout_ms);
        let killed =
            tokio::task::spawn_blocking(move || lock_servers(&servers).kill_leader(timeout)).await;
        let server = match killed {
            Ok(Ok(server)) => server,
            Ok(Err(e)) => {
                counts.fail(format!("killing the leader: {e}"));
                return None;
            }
            Err(e) => {
                counts.fail(format!("killing the leader: {e}"));
                return None;
            }
        };
        // Every session loses its connection while the ensemble elects a new leader.
        for client in 0..self.targets.sessions.len() {
            self.record(client, FaultKind::ConnectionLoss);
        }
        counts.leader_kills += 1;
        if !self.config.restart_killed_leader {
            return Some(Downed {
                server,
                restart: tokio::spawn(async { Ok(()) }),
                stays_down: true,
            });
        }
        let servers = Arc::clone(&self.targets.servers);
        let recorder = Arc::clone(&self.targets.recorder);
        // Back before the heal, so the run ends with the full ensemble.
        let at =
            (recorder.elapsed() + Duration::from_millis(self.config.leader_down_ms)).min(self.heal);
        let restart = tokio::spawn(async move {
            sleep_until(&recorder, at).await;
            tokio::task::spawn_blocking(move || lock_servers(&servers).restart(server))
                .await
                .unwrap_or_else(|e| Err(RealError::io("restart task", std::io::Error::other(e))))
        });
        Some(Downed {
            server,
            restart,
            stays_down: false,
        })
    }
}

/// Forces `client`'s session to expire as Curator's KillSession does, but with the client
/// cut off first, so that it stops believing before the server lets anyone else in.
///
/// A bare KillSession races: the server deletes the session's nodes (and wakes the next
/// waiter) while the victim learns of it only from a closed connection or its reconnect,
/// each a few milliseconds either way. No recipe can win that race, and zklock's simulation
/// does not model it (there the victim is disconnected in the same step). So: black-hole and
/// cut the victim's `link`, wait until the client reports the disconnect (plus
/// [`ISOLATION_GRACE_MS`] for its lock guards to hear of it), close the session through
/// `server_connect_string` (the servers themselves), then let the victim reconnect and
/// learn `Expired`.
pub async fn expire_isolated(
    link: &ClientLink,
    client: &ZkClient,
    server_connect_string: &str,
    timeout: Duration,
) -> Result<(), RealError> {
    let deadline = tokio::time::Instant::now() + timeout;
    link.black_hole();
    link.cut();
    while client.session_state() == SessionState::Connected {
        if tokio::time::Instant::now() >= deadline {
            link.end_black_hole();
            return Err(RealError::ExpireSession {
                session: client.session_id().to_string(),
                reason: "the client did not notice its cut connection".into(),
            });
        }
        tokio::time::sleep(Duration::from_millis(ISOLATION_POLL_MS)).await;
    }
    tokio::time::sleep(Duration::from_millis(ISOLATION_GRACE_MS)).await;
    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
    let killed =
        crate::harness::kill_session(server_connect_string, client.session_id(), left).await;
    link.end_black_hole();
    killed
}

/// How often [`expire_isolated`] checks whether the victim noticed its cut.
const ISOLATION_POLL_MS: u64 = 2;
/// How long after the victim reports the disconnect [`expire_isolated`] waits before the
/// kill, for the news to reach the victim's lock guards.
pub const ISOLATION_GRACE_MS: u64 = 50;

/// How often an armed lost create is checked for having struck.
const LOST_CREATE_POLL_MS: u64 = 5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_sets_parse_and_print() {
        assert_eq!("none".parse::<FaultSet>().unwrap(), FaultSet::none());
        assert_eq!("all".parse::<FaultSet>().unwrap(), FaultSet::all());
        let set: FaultSet = "cut, expire,kill-leader".parse().unwrap();
        assert!(set.contains(RealFault::Cut) && set.contains(RealFault::KillLeader));
        assert!(!set.contains(RealFault::BlackHole));
        assert_eq!(set.to_string(), "cut,expire,kill-leader");
        let err = "cut,meteor".parse::<FaultSet>().unwrap_err();
        assert!(
            err.contains("\"meteor\"") && err.contains("black-hole"),
            "{err}"
        );
        assert!(!"kill-leader".parse::<FaultSet>().unwrap().needs_proxies());
        assert!("expire".parse::<FaultSet>().unwrap().needs_proxies());
        assert!("lost-create".parse::<FaultSet>().unwrap().needs_proxies());
        assert!("pause".parse::<FaultSet>().unwrap().needs_proxies());
        assert!("crash".parse::<FaultSet>().unwrap().needs_proxies());
    }

    #[test]
    fn the_schedule_is_a_function_of_the_seed() {
        let draw = |seed| {
            let mut s = Schedule(seed);
            (0..20).map(|_| s.range(500, 1500)).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        assert!(draw(7).iter().all(|g| (500..=1500).contains(g)));
    }

    #[test]
    fn every_client_is_struck_once_per_round() {
        let mut bag = Vec::new();
        let mut s = Schedule(3);
        for _ in 0..3 {
            let mut round: Vec<usize> = (0..5).map(|_| next_target(&mut bag, &mut s, 5)).collect();
            round.sort_unstable();
            assert_eq!(round, [0, 1, 2, 3, 4]);
        }
        assert_eq!(next_target(&mut Vec::new(), &mut s, 1), 0);
    }

    #[test]
    fn every_usable_kind_comes_once_per_round() {
        let mut bag = Vec::new();
        let mut s = Schedule(3);
        let usable = |k| k != RealFault::KillLeader;
        let mut round: Vec<RealFault> = (0..7)
            .map(|_| next_kind(&mut bag, &mut s, usable).unwrap())
            .collect();
        round.sort();
        assert_eq!(
            round,
            [
                RealFault::Cut,
                RealFault::LostCreate,
                RealFault::Expire,
                RealFault::BlackHole,
                RealFault::LocalExpire,
                RealFault::Pause,
                RealFault::Crash
            ]
        );
        assert_eq!(next_kind(&mut bag, &mut s, |_| false), None);
    }
}
