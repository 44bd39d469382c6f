//! The scenario: every knob of a workload run, with its default.

use super::Shape;
use serde::{Deserialize, Serialize};
use zklock_recipe::history::ZkOp;

/// A probability as an integer ratio, `num` in `den`, checked once per world step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rate {
    pub num: u32,
    pub den: u32,
}

impl Rate {
    pub const NEVER: Rate = Rate { num: 0, den: 1 };
    pub const fn new(num: u32, den: u32) -> Rate {
        Rate { num, den }
    }
    /// [`Rate::NEVER`], as a function (for serde defaults).
    pub const fn never() -> Rate {
        Rate::NEVER
    }
    pub fn is_never(self) -> bool {
        self.num == 0 || self.den == 0
    }
}

/// Which faults strike and how often. Every fault can be switched off with
/// [`Rate::NEVER`]; all stop at `Scenario::heal_ms`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Faults {
    /// Connection loss, with in-flight requests applied or not. Default 1 in 400 steps.
    pub connection_loss: Rate,
    /// A create applied whose reply is lost with the connection. Default 1 in 400.
    pub lost_create_response: Rate,
    /// Forced expiry, as Curator's KillSession. Default 1 in 1500.
    pub forced_expiry: Rate,
    /// A partition (natural expiry when it outlasts the session). Default 1 in 1500.
    pub partition: Rate,
    /// A process pause, possibly longer than the session. Default 1 in 1500.
    pub pause: Rate,
    /// A client crash. Default 1 in 4000.
    pub crash: Rate,
    /// Replies and watch events to a client held back for a while (a slow link; shorter
    /// than the client's disconnect detection). Default 1 in 400.
    pub delayed_delivery: Rate,
    /// Expiry declared by the client library on its own while the server still holds
    /// the session, as Curator's does (by its own session timer, and in KillSession): the
    /// process opens a new session at once, and the old session's nodes stand until the
    /// server expires it a session timeout later (CURATOR-498). Default 1 in 1500; a
    /// trace written before it existed reads it as never, so that it replays as it ran.
    #[serde(default = "Rate::never")]
    pub local_expiry: Rate,
    /// Longest delivery delay, in milliseconds. Default 1000.
    pub delay_ms_max: u64,
    /// Longest partition, in milliseconds. Default 2 × the session timeout (12000).
    pub partition_ms_max: u64,
    /// Longest process pause, in milliseconds. Default 12000.
    pub pause_ms_max: u64,
    /// `Some(op)`: every fault is aimed at a request of that operation in flight. A fault
    /// strikes only a client with such a request sent and not yet applied, and a step
    /// where no client has one draws no fault: the rates count the steps where one is in
    /// flight. Default `None`, a fault at any step (a trace without it reads `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aim: Option<ZkOp>,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            connection_loss: Rate::new(1, 400),
            lost_create_response: Rate::new(1, 400),
            forced_expiry: Rate::new(1, 1500),
            partition: Rate::new(1, 1500),
            pause: Rate::new(1, 1500),
            crash: Rate::new(1, 4000),
            delayed_delivery: Rate::new(1, 400),
            local_expiry: Rate::new(1, 1500),
            delay_ms_max: 1000,
            partition_ms_max: 12_000,
            pause_ms_max: 12_000,
            aim: None,
        }
    }
}

impl Faults {
    /// No faults at all.
    pub fn none() -> Faults {
        Faults {
            connection_loss: Rate::NEVER,
            lost_create_response: Rate::NEVER,
            forced_expiry: Rate::NEVER,
            partition: Rate::NEVER,
            pause: Rate::NEVER,
            crash: Rate::NEVER,
            delayed_delivery: Rate::NEVER,
            local_expiry: Rate::NEVER,
            ..Faults::default()
        }
    }
    /// Every kind's rate, in the order a fault choice lists the kinds that are on.
    pub fn rates(&self) -> [Rate; 8] {
        [
            self.connection_loss,
            self.lost_create_response,
            self.forced_expiry,
            self.partition,
            self.pause,
            self.crash,
            self.delayed_delivery,
            self.local_expiry,
        ]
    }
    /// How many kinds of fault are on (their rate is not never).
    pub fn kinds_on(&self) -> usize {
        self.rates().iter().filter(|r| !r.is_never()).count()
    }
    /// Whether any fault that can outlive a session (pause) is on: such runs are judged
    /// by fencing, since no recipe can keep belief-based mutual exclusion under them.
    pub fn has_pauses(&self) -> bool {
        !self.pause.is_never()
    }
}

/// [`Scenario::request_time_us`] by default, in microseconds.
pub const REQUEST_TIME_US_DEFAULT: u64 = 100;

fn is_default_request_time(us: &u64) -> bool {
    *us == REQUEST_TIME_US_DEFAULT
}

/// PCT-style scheduling (Burckhardt et al., ASPLOS 2010): of the clients with a request
/// ready, the server applies the one of highest priority, instead of one drawn uniformly.
/// A client's priority is drawn when it is first ready; at each step where two or more
/// are ready, at the `change` rate, the client about to run drops below every other (a
/// priority change point). A run then keeps one order of clients for long stretches and
/// starves the low ones, where a uniform draw interleaves them evenly: the orders a bug
/// of a few ordering constraints needs are each reached with a probability that does not
/// shrink with the run's length. Priorities and change points are draws of kind
/// [`ChoiceKind::Priority`](crate::ChoiceKind::Priority): a run replays and shrinks as
/// any other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Priorities {
    /// How often a step with two or more clients ready is a change point.
    pub change: Rate,
}

/// How faults are drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum FaultMode {
    /// At each step, a fault strikes with the rates of [`Faults`] (random sweeps).
    #[default]
    Random,
    /// At each step, the Chooser picks "no fault" or one of the enabled kinds, at most
    /// `faults_max` times per run; durations are fixed (partitions and pauses outlive the
    /// session). For exhaustive exploration, where every placement is a branch.
    Bounded { faults_max: u32 },
}

/// A workload: `clients` clients, each on its own session, repeat acquire → critical
/// section on the shared resource → release, `acquisitions_per_client` times.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Scenario {
    /// Contending clients. Default 5; at most 64.
    pub clients: u32,
    /// Acquire attempts per client. Default 20.
    pub acquisitions_per_client: u32,
    /// How many of the clients take the read lock (the rest write). Default 0: an
    /// exclusive-lock scenario.
    pub readers: u32,
    /// The lock's directory. Default "/zklock/lock".
    pub lock_path: String,
    /// How many lock directories the clients contend for: each acquisition takes one,
    /// drawn by the chooser. At 1 the one lock is `lock_path`; above it, lock `i` is
    /// `lock_path-i` ([`Scenario::lock_paths`]), and every property is judged per lock.
    /// Default 1 (0 reads as 1); at most 64
    /// ([`limits::LOCKS_MAX`](super::limits::LOCKS_MAX)).
    pub locks: u32,
    /// Session timeout of every client, in milliseconds. Default 6000.
    pub session_timeout_ms: u64,
    /// Time in the critical section, between reading and writing the resource, in
    /// milliseconds. Default 5.
    pub hold_ms: u64,
    /// Timeout of the timed acquire mode, in milliseconds. Default 3000.
    pub acquire_timeout_ms: u64,
    /// Virtual time the server takes to apply each request, in microseconds: the clock
    /// moves by it at every request. Default 100 (written only when it differs), at most
    /// [`REQUEST_TIME_US_MAX`](super::limits::REQUEST_TIME_US_MAX). At 0 the clock moves
    /// only to the next timer, once no request is ready: the exhaustive check's model
    /// (`Bounds::request_time_us` in zklock-checker), where states then differ by what
    /// happened in what order, not by how many requests came before.
    #[serde(skip_serializing_if = "is_default_request_time")]
    pub request_time_us: u64,
    /// Every `drop_every`-th acquire attempt of a client is a blocking acquire whose
    /// future the client drops after a delay, unless it finished first (as
    /// `tokio::time::timeout` does): a recipe must leave no node behind. 0: never.
    /// Default 4 (the 4th, 8th, ... attempt).
    pub drop_every: u32,
    /// Where each client's attempts start in the mix of acquire modes (blocking, try,
    /// timed, and dropped every `drop_every`-th): attempt `k` takes the mode of
    /// `k + mix_offset`. At 2, each client's first attempt is timed, so that bounds of
    /// one acquisition per client check timed acquires exhaustively. Default 0.
    pub mix_offset: u32,
    /// Longest delay before a dropped acquire is dropped, in milliseconds; the chooser
    /// draws it in `0..=drop_after_ms_max` (capped at 65535). At 0 the drop comes before
    /// the server applies the create. Default 20.
    pub drop_after_ms_max: u64,
    /// The lock directory's sequential counter when it is created, as if that many
    /// contender nodes had been created in it before. ZooKeeper's counter is a signed
    /// 32-bit int that wraps from 2147483647 to -2147483648 (suffix `-2147483648`, then
    /// `-2147483647`, ...): at 2147483600 every run crosses the wrap, which lock recipes
    /// have got wrong (Kazoo#730, go-zookeeper/zk#65, ZOOKEEPER-4372). Default 0.
    pub sequence_start: i32,
    /// Which of the workload's decisions (modes, counts, fault durations) the chooser
    /// makes. Default [`Shape::fixed`], which a serialized scenario leaves out.
    #[serde(skip_serializing_if = "Shape::is_fixed")]
    pub shape: Shape,
    /// Faults and their rates.
    pub faults: Faults,
    /// `Some`: requests are applied in the order of client priorities
    /// ([`Priorities`]); `None`, the default (which a serialized scenario leaves out):
    /// each step's request is drawn uniformly among the clients ready. The exhaustive
    /// check explores every order, and sets it to `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priorities: Option<Priorities>,
    /// Random rates, or a bounded number of explicitly chosen faults. Default Random.
    pub fault_mode: FaultMode,
    /// Virtual time at which faults stop, in milliseconds, so liveness can be judged.
    /// Default 30000.
    pub heal_ms: u64,
    /// After the heal, every live waiter must acquire within this bound, in
    /// milliseconds. Default 2 × session timeout + 1000 (13000).
    pub liveness_bound_ms: u64,
    /// The run stops (and is reported) past this much virtual time, in milliseconds.
    /// Default 600000.
    pub time_limit_ms: u64,
    /// How many of the clients are revokers rather than holders: the last `revokers`
    /// clients each, once for every acquire attempt of every holder, wait `hold_ms / 2`,
    /// list the first lock's directory and ask the holder of one node of it (the
    /// chooser's pick) to give up, through the recipe's
    /// [`revoke`](zklock_recipe::LockUnderTest::revoke). The
    /// holders then race each hold against
    /// [`revocation`](zklock_recipe::LockUnderTest::revocation) and give up when asked,
    /// and the run is judged by the revocation properties too (`zklock_checker`'s
    /// `properties::revocation`). Default 0 (written only when set): no revocation. At
    /// most `clients - 1`; a lock run only (not a semaphore, queue or election).
    #[serde(skip_serializing_if = "is_zero")]
    pub revokers: u32,
    /// How long a holder asked to give up may take to begin its release, in milliseconds,
    /// from the later of the request's acknowledgement and its grant (unless a fault
    /// strikes the holder meanwhile). Default 250 (written only when it differs): a
    /// simulated holder hears a request within a few requests' time.
    #[serde(skip_serializing_if = "is_default_revoke_bound")]
    pub revoke_bound_ms: u64,
}

/// [`Scenario::revoke_bound_ms`] by default.
pub const REVOKE_BOUND_MS_DEFAULT: u64 = 250;

fn is_default_revoke_bound(ms: &u64) -> bool {
    *ms == REVOKE_BOUND_MS_DEFAULT
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            clients: 5,
            acquisitions_per_client: 20,
            readers: 0,
            lock_path: "/zklock/lock".into(),
            locks: 1,
            session_timeout_ms: 6000,
            hold_ms: 5,
            acquire_timeout_ms: 3000,
            request_time_us: REQUEST_TIME_US_DEFAULT,
            drop_every: 4,
            mix_offset: 0,
            drop_after_ms_max: 20,
            sequence_start: 0,
            shape: Shape::fixed(),
            faults: Faults::default(),
            priorities: None,
            fault_mode: FaultMode::Random,
            heal_ms: 30_000,
            liveness_bound_ms: 13_000,
            time_limit_ms: 600_000,
            revokers: 0,
            revoke_bound_ms: REVOKE_BOUND_MS_DEFAULT,
        }
    }
}

impl Scenario {
    /// The lock directories of the run, in lock order: `lock_path` alone for one lock,
    /// else `lock_path-0`, `lock_path-1`, ... (siblings, so that no lock's directory
    /// holds another's).
    pub fn lock_paths(&self) -> Vec<String> {
        if self.locks <= 1 {
            return vec![self.lock_path.clone()];
        }
        (0..self.locks)
            .map(|i| format!("{}-{i}", self.lock_path.trim_end_matches('/')))
            .collect()
    }
}
