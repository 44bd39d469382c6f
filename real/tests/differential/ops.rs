//! Random request sequences, from a seed.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zklock_recipe::{CreateMode, Op};
use zklock_sim::REQUEST_BYTES_MAX;

/// Sessions of one sequence.
pub const SESSIONS: usize = 3;

/// A request, its paths relative to the sequence's own directory: `~` stands for it.
#[derive(Clone, Debug)]
pub enum Req {
    Create {
        path: String,
        data: Data,
        mode: CreateMode,
    },
    Delete {
        path: String,
        version: Option<i32>,
    },
    Exists {
        path: String,
        watch: bool,
    },
    GetData {
        path: String,
        watch: bool,
    },
    GetChildren {
        path: String,
        watch: bool,
    },
    SetData {
        path: String,
        data: Data,
        version: Option<i32>,
    },
    Multi(Vec<Op>),
    Close,
    /// The server expires the session (as Curator's KillSession forces it).
    Expire,
    /// The session's connection is cut while nothing is in flight; the client
    /// reconnects to the same session.
    Disconnect,
}

/// Data: a few bytes, or a run of zeros of a length around the request size bound.
#[derive(Clone, Debug)]
pub enum Data {
    Bytes(Vec<u8>),
    Zeros(usize),
}

impl Data {
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Data::Bytes(b) => b.clone(),
            Data::Zeros(n) => vec![0; *n],
        }
    }
}

impl Req {
    /// Whether it can change the tree.
    fn writes(&self) -> bool {
        matches!(
            self,
            Req::Create { .. }
                | Req::Delete { .. }
                | Req::SetData { .. }
                | Req::Multi(_)
                | Req::Close
        )
    }

    /// The paths it writes, and their parents.
    fn touched(&self) -> Vec<String> {
        let paths: Vec<&str> = match self {
            Req::Create { path, .. } | Req::Delete { path, .. } | Req::SetData { path, .. } => {
                vec![path]
            }
            Req::Multi(ops) => ops.iter().map(Op::path).collect(),
            _ => Vec::new(),
        };
        let mut out = Vec::new();
        for p in paths {
            out.push(p.to_owned());
            if let Some(i) = p.rfind('/') {
                out.push(p[..i].to_owned());
            }
        }
        out
    }

    fn path(&self) -> Option<&str> {
        match self {
            Req::Create { path, .. }
            | Req::Delete { path, .. }
            | Req::Exists { path, .. }
            | Req::GetData { path, .. }
            | Req::GetChildren { path, .. }
            | Req::SetData { path, .. } => Some(path),
            _ => None,
        }
    }
}

/// One step: a pipelined batch per session, all sent at once. With more than one
/// session, only the first writes and the others read paths it does not touch, so the
/// outcome cannot depend on how the server interleaves them.
#[derive(Clone, Debug)]
pub struct Step {
    pub batches: Vec<(usize, Vec<Req>)>,
}

impl Step {
    pub fn is_concurrent(&self) -> bool {
        self.batches.len() > 1
    }
}

const VALID: &[&str] = &["~", "~/a", "~/a/b", "~/a/c", "~/b", "~/e", "~/e/x"];
const SEQUENTIAL: &[&str] = &["~/s-", "~/a/s-", "~/e/s-", "~/"];
/// Refused by the client (non-BMP characters among them: a surrogate pair to ZooKeeper).
const INVALID: &[&str] = &[
    "rel",
    "~/",
    "~//x",
    "~/./x",
    "~/a/..",
    "~/\u{1F600}",
    "~/a/x\u{1}",
    "",
];
/// ZooKeeper's own nodes, with what may be asked of them without changing them: reads,
/// and writes the server refuses.
const SPECIAL_READ: &[&str] = &["/zookeeper", "/zookeeper/quota", "/zookeeper/config"];

fn pick<'a>(rng: &mut ChaCha8Rng, from: &[&'a str]) -> &'a str {
    from[rng.random_range(0..from.len())]
}

fn version(rng: &mut ChaCha8Rng) -> Option<i32> {
    match rng.random_range(0..6) {
        0 | 1 => None,
        2 => Some(-1),
        3 => Some(0),
        4 => Some(1),
        _ => Some(2),
    }
}

fn data(rng: &mut ChaCha8Rng) -> Data {
    let n = rng.random_range(0..4);
    Data::Bytes((0..n).map(|_| rng.random_range(b'a'..=b'z')).collect())
}

fn path(rng: &mut ChaCha8Rng) -> String {
    match rng.random_range(0..20) {
        0 => pick(rng, INVALID).to_owned(),
        _ => pick(rng, VALID).to_owned(),
    }
}

fn mode(rng: &mut ChaCha8Rng) -> CreateMode {
    [
        CreateMode::Persistent,
        CreateMode::Ephemeral,
        CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential,
    ][rng.random_range(0..4)]
}

fn create(rng: &mut ChaCha8Rng) -> (String, CreateMode) {
    let mode = mode(rng);
    // A sequential create of "~" itself would name a sibling of the directory, from
    // the root's counter, which every earlier sequence moved on.
    let path = if mode.is_sequential() && rng.random_bool(0.6) {
        pick(rng, SEQUENTIAL).to_owned()
    } else {
        match path(rng) {
            p if p == "~" && mode.is_sequential() => "~/a".to_owned(),
            p => p,
        }
    };
    (path, mode)
}

fn op(rng: &mut ChaCha8Rng) -> Op {
    match rng.random_range(0..4) {
        0 => Op::Check {
            path: path(rng),
            version: version(rng).unwrap_or(-1),
        },
        1 => {
            let (path, mode) = create(rng);
            Op::Create {
                path,
                data: data(rng).bytes(),
                mode,
            }
        }
        2 => Op::Delete {
            path: path(rng),
            version: version(rng),
        },
        _ => Op::SetData {
            path: path(rng),
            data: data(rng).bytes(),
            version: version(rng),
        },
    }
}

fn read(rng: &mut ChaCha8Rng, path: String) -> Req {
    let watch = rng.random_bool(0.5);
    match rng.random_range(0..3) {
        0 => Req::Exists { path, watch },
        1 => Req::GetData { path, watch },
        _ => Req::GetChildren { path, watch },
    }
}

/// A request of any kind but Close.
fn request(rng: &mut ChaCha8Rng) -> Req {
    match rng.random_range(0..40) {
        0..=7 => {
            let (path, mode) = create(rng);
            Req::Create {
                path,
                data: data(rng),
                mode,
            }
        }
        8..=11 => Req::Delete {
            path: path(rng),
            version: version(rng),
        },
        12..=15 => Req::SetData {
            path: path(rng),
            data: data(rng),
            version: version(rng),
        },
        16..=20 => Req::Multi((0..rng.random_range(0..4)).map(|_| op(rng)).collect()),
        21 => special(rng),
        _ => {
            let p = path(rng);
            read(rng, p)
        }
    }
}

/// A request on ZooKeeper's own nodes that changes nothing.
fn special(rng: &mut ChaCha8Rng) -> Req {
    let path = pick(rng, SPECIAL_READ).to_owned();
    match rng.random_range(0..5) {
        // Refused: the node exists (a sequential name would be new), or the config
        // node's ACL forbids children.
        0 => Req::Create {
            path,
            data: data(rng),
            mode: [CreateMode::Persistent, CreateMode::Ephemeral][rng.random_range(0..2)],
        },
        1 => Req::Create {
            path: "/zookeeper/config/x".to_owned(),
            data: data(rng),
            mode: mode(rng),
        },
        2 => Req::Delete {
            path,
            version: version(rng),
        },
        3 => Req::SetData {
            path: "/zookeeper/config".to_owned(),
            data: data(rng),
            version: version(rng),
        },
        _ => read(rng, path),
    }
}

/// A request whose frame is at the server's bound, or one byte past it.
fn sized(rng: &mut ChaCha8Rng, dir_len: usize) -> Req {
    let path = "~/b".to_owned();
    let path_len = path.len() - 1 + dir_len;
    let over = rng.random_range(0..2);
    if rng.random_bool(0.5) {
        // header 8, path, data's length, version
        let fixed = 8 + 4 + path_len + 4 + 4;
        Req::SetData {
            path,
            data: Data::Zeros(REQUEST_BYTES_MAX - fixed + over),
            version: None,
        }
    } else {
        // header 8, path, data's length, one ACL (27), flags
        let fixed = 8 + 4 + path_len + 4 + 27 + 4;
        Req::Create {
            path,
            data: Data::Zeros(REQUEST_BYTES_MAX - fixed + over),
            mode: CreateMode::Persistent,
        }
    }
}

/// A sequence of steps from `seed`, for a directory whose path is `dir_len` bytes long.
pub fn sequence(seed: u64, dir_len: usize) -> Vec<Step> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = rng.random_range(4..24);
    let mut steps = Vec::with_capacity(n);
    for _ in 0..n {
        let session = rng.random_range(0..SESSIONS);
        let step = match rng.random_range(0..100) {
            0..=3 => Step {
                batches: vec![(session, vec![Req::Close])],
            },
            96..=97 => Step {
                batches: vec![(session, vec![Req::Expire])],
            },
            98..=99 => Step {
                batches: vec![(session, vec![Req::Disconnect])],
            },
            4..=5 => Step {
                batches: vec![(session, vec![sized(&mut rng, dir_len)])],
            },
            6..=25 => concurrent(&mut rng, session),
            _ => Step {
                batches: vec![(
                    session,
                    (0..rng.random_range(1..5))
                        .map(|_| request(&mut rng))
                        .collect(),
                )],
            },
        };
        steps.push(step);
    }
    steps
}

fn concurrent(rng: &mut ChaCha8Rng, writer: usize) -> Step {
    let writes: Vec<Req> = (0..rng.random_range(1..4)).map(|_| request(rng)).collect();
    let touched: Vec<String> = writes.iter().flat_map(Req::touched).collect();
    let mut batches = vec![(writer, writes)];
    for reader in (0..SESSIONS).filter(|&s| s != writer) {
        if rng.random_bool(0.3) {
            continue;
        }
        let reads: Vec<Req> = (0..rng.random_range(1..4))
            .map(|_| {
                let p = path(rng);
                read(rng, p)
            })
            .filter(|r| r.path().is_some_and(|p| !touched.iter().any(|t| t == p)))
            .collect();
        debug_assert!(reads.iter().all(|r| !r.writes()));
        if !reads.is_empty() {
            batches.push((reader, reads));
        }
    }
    Step { batches }
}
