//! A checkpoint of an exhaustive check, so that a long check can stop (at a bound, or
//! when interrupted) and resume later, in another process or another CI job, as loom's
//! `LOOM_CHECKPOINT_FILE` does.
//!
//! **What it holds.** The search is fully described by the work left, the set of state
//! digests seen, and its counters. The work left is a list of [`Subtree`]s: on one
//! thread, a single one, the whole tree from the next schedule prefix on; on several
//! threads ([`crate::parallel`]), every job queued and every worker's job where it
//! stopped, each with its next prefix and the positions where alternatives were handed
//! to other jobs (its caps). Workers stop only between two runs, so every schedule is
//! either run or in exactly one subtree left.
//!
//! **Why resuming is exact.** On one thread, resuming runs exactly the schedules the
//! uninterrupted search would have run next, with the same pruning, so the verdict and
//! the counts of a resumed check equal those of one run in one go (a test pins this). On
//! several threads the argument is the one of [`crate::parallel`]: a state in the seen
//! set was reached first by a run whose continuations are explored by its job's
//! backtracking or by jobs split from it, and each of those is either done or in a
//! subtree left; so the work left, searched with that seen set, explores every
//! continuation of every seen state, and pruning at a seen state loses nothing. A resumed
//! search (on any number of threads, one included) therefore reaches the same distinct
//! states, final states and verdict as a search run in one go; only the schedule counts
//! vary, as they do on several threads.
//!
//! A checkpoint names what it checks (recipe, scenario, pruning) and the zklock that wrote
//! it (version and commit): the choices of a prefix and the encoding of a digest mean
//! something only to the same simulation, so any difference is refused
//! ([`CheckpointError::Mismatch`]) rather than resumed unsoundly.
//! A shard's checkpoint ([`crate::shard`]) names its shard with its recipe
//! ("zklock (shard 2/8)"), so that it resumes that shard only.
//!
//! **Format.** Binary, little-endian: a magic line, the format version, the identity
//! (lengths then bytes), the counters, the work left, the digests (sorted, so equal
//! searches write equal files), and a checksum over everything before it. Format 1 holds
//! the work of one thread, a single prefix; format 2 a list of subtrees, each its root's
//! length, its next prefix and its caps (position, alternatives kept; at most one a
//! position, from the root's length to the prefix's). Format 3 is format 2 with what the
//! schedules run before the checkpoint exercised ([`Exercised`]) after the counters: runs,
//! acquisitions, items completed, a work-queue flag (one byte), then the failed acquires'
//! reasons (at most [`FAILURE_REASONS_MAX`] and the bucket of the others, each its text
//! and its count), so that a resumed check is judged on the whole check, as one run in
//! one go is (a check that, in total, acquired nothing is inconclusive). Format 4 is
//! format 3 with the revoke requests and the holds given up when asked after the reasons
//! (two counts), so that a resumed check of revocation is judged on the whole check too.
//! This zklock writes format 4; format 3 is read with no revocation counted, formats 1
//! and 2 as a checkpoint without counts
//! ([`Checkpoint::exercised`] is `None`), and a check resumed from one is not judged for
//! "nothing checked". A checkpoint holds at most
//! [`CHECKPOINT_STATES_MAX`] digests (16 bytes each), at most [`CHECKPOINT_SUBTREES_MAX`]
//! subtrees, at most [`CHECKPOINT_PREFIX_MAX`] choices in all its prefixes together, and
//! at most one cap more in a subtree than choices in its prefix; a file is refused unread
//! past
//! [`CHECKPOINT_BYTES_MAX`].

use crate::exercised::{Exercised, FAILURE_REASONS_MAX};
use crate::trace::{ZKLOCK_COMMIT, ZKLOCK_VERSION};
use std::fmt;
use zklock_sim::Scenario;

/// The first bytes of every checkpoint file.
pub const CHECKPOINT_MAGIC: &[u8; 18] = b"zklock checkpoint\n";
/// The newest format this zklock writes and reads (it reads formats 1 to 3 too).
pub const CHECKPOINT_FORMAT_VERSION: u32 = 4;
/// The format of a checkpoint with counts but no revocation counts.
const FORMAT_COUNTS: u32 = 3;
/// The format of a checkpoint whose work is a single prefix, without counts.
const FORMAT_ONE_PREFIX: u32 = 1;
/// The format of a checkpoint whose work is a list of subtrees, without counts.
const FORMAT_SUBTREES: u32 = 2;
/// Distinct states a checkpoint holds at most: 2^28, a file of 4 GiB.
pub const CHECKPOINT_STATES_MAX: u64 = 1 << 28;
/// Choices in a checkpoint's prefixes at most, all its subtrees together (a schedule is
/// far shorter).
pub const CHECKPOINT_PREFIX_MAX: u32 = 1 << 20;
/// Subtrees of work left in a checkpoint at most: a search on
/// [`THREADS_MAX`](crate::limits::THREADS_MAX) threads
/// leaves at most one per thread and one queued.
pub const CHECKPOINT_SUBTREES_MAX: u32 = 1 << 16;
/// Identity strings (version, commit, recipe, scenario) at most, in bytes each.
const IDENTITY_BYTES_MAX: u32 = 1 << 16;
/// A checkpoint file at most, in bytes: the most states, choices (each with a cap at
/// most) and subtrees, plus the identity.
pub const CHECKPOINT_BYTES_MAX: u64 = CHECKPOINT_STATES_MAX * 16
    + CHECKPOINT_PREFIX_MAX as u64 * (4 + 8)
    + CHECKPOINT_SUBTREES_MAX as u64 * (12 + 8)
    + 4 * IDENTITY_BYTES_MAX as u64
    + 1024;

/// A subtree of schedules left to search: those that start with the first `root_len`
/// choices of `next_prefix`, from `next_prefix` on in depth-first order, without the
/// alternatives that `caps` hands to other subtrees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subtree {
    /// The choices shared by every schedule of the subtree, at most `next_prefix`'s.
    pub root_len: u32,
    /// The next schedule to run: its prefix of choices.
    pub next_prefix: Vec<u32>,
    /// (position, alternatives kept), by increasing position, each at least `root_len`
    /// and at most `next_prefix`'s length: the alternatives past those kept at a position
    /// belong to another subtree.
    pub caps: Vec<(u32, u32)>,
}

impl Subtree {
    /// Every schedule from `next_prefix` on, depth first: the work left on one thread.
    pub fn from_prefix(next_prefix: Vec<u32>) -> Subtree {
        Subtree {
            root_len: 0,
            next_prefix,
            caps: Vec::new(),
        }
    }

    /// Whether this is [`from_prefix`](Subtree::from_prefix)'s kind of subtree.
    pub fn is_whole_tree(&self) -> bool {
        self.root_len == 0 && self.caps.is_empty()
    }
}

/// Where an exhaustive check stopped: enough to run the rest of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The zklock version that wrote it ([`ZKLOCK_VERSION`]).
    pub version: String,
    /// The commit of that zklock ([`ZKLOCK_COMMIT`]; empty if unknown).
    pub commit: String,
    /// The recipe's name ([`Recipe::name`](zklock_sim::Recipe::name)).
    pub recipe: String,
    /// The scenario searched, as JSON (as a trace writes it).
    pub scenario_json: String,
    /// Whether revisited states are pruned.
    pub prune: bool,
    /// Whether they are pruned up to a permutation of clients (see
    /// [`Bounds::symmetry`](crate::Bounds::symmetry)); only with `prune`.
    pub symmetry: bool,
    /// Whether states are counted by what recipes keep of replies (see
    /// [`Bounds::keep_only`](crate::Bounds::keep_only)); only with `prune`.
    pub keep_only: bool,
    /// Schedules run before the checkpoint.
    pub schedules: u64,
    /// Of those, how many stopped at a seen state.
    pub pruned: u64,
    /// The most choices any schedule made.
    pub max_depth: u64,
    /// The work left: one [`Subtree`] from a search on one thread, one per unfinished job
    /// from a search on several.
    pub work: Vec<Subtree>,
    /// Every state digest seen, sorted.
    pub visited: Vec<u128>,
    /// What the schedules run before the checkpoint exercised (`runs` counts them); `None`
    /// in a checkpoint of format 1 or 2, which carries no counts.
    pub exercised: Option<Exercised>,
}

/// Why a checkpoint could not be read, or does not belong to this check.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckpointError {
    /// Not a checkpoint: the magic line is missing.
    NotACheckpoint,
    /// Written in a format this zklock does not know (it reads 1 to `supported`).
    Format { found: u32, supported: u32 },
    /// Truncated, or damaged: the checksum or a length does not agree.
    Corrupt { what: &'static str },
    /// Larger than [`CHECKPOINT_BYTES_MAX`], or holding more than its bounds.
    TooLarge {
        what: &'static str,
        value: u64,
        max: u64,
    },
    /// A checkpoint of another check, or of another zklock.
    Mismatch {
        what: &'static str,
        checkpoint: String,
        this: String,
    },
}

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckpointError::NotACheckpoint => write!(f, "not a zklock checkpoint"),
            CheckpointError::Format { found, supported } => write!(
                f,
                "checkpoint format {found}, but this zklock reads formats 1 to {supported}"
            ),
            CheckpointError::Corrupt { what } => {
                write!(f, "corrupt or truncated checkpoint: {what}")
            }
            CheckpointError::TooLarge { what, value, max } => {
                write!(f, "checkpoint too large: {what} is {value}, at most {max}")
            }
            CheckpointError::Mismatch {
                what,
                checkpoint,
                this,
            } => write!(
                f,
                "the checkpoint is of another check: its {what} is {checkpoint}, this \
                 check's is {this}"
            ),
        }
    }
}

impl std::error::Error for CheckpointError {}

impl Checkpoint {
    /// The identity of a check of `recipe` on `scenario` by this zklock, with no progress.
    pub fn start(recipe: &str, scenario: &Scenario, prune: bool) -> Checkpoint {
        Checkpoint::start_reduced(recipe, scenario, prune, false, false)
    }

    /// As [`start`](Checkpoint::start), of a check that prunes states up to a permutation
    /// of clients when `symmetry` (and `prune`) says so, and counts them by what recipes
    /// keep of replies when `keep_only` (and `prune`) does.
    pub fn start_reduced(
        recipe: &str,
        scenario: &Scenario,
        prune: bool,
        symmetry: bool,
        keep_only: bool,
    ) -> Checkpoint {
        Checkpoint {
            version: ZKLOCK_VERSION.to_string(),
            commit: ZKLOCK_COMMIT.to_string(),
            recipe: recipe.to_string(),
            scenario_json: serde_json::to_string(scenario).expect("a scenario serializes"),
            prune,
            symmetry: prune && symmetry,
            keep_only: prune && keep_only,
            schedules: 0,
            pruned: 0,
            max_depth: 0,
            work: vec![Subtree::from_prefix(Vec::new())],
            visited: Vec::new(),
            exercised: Some(Exercised::default()),
        }
    }

    /// Whether this checkpoint continues the check of `recipe` on `scenario` by this
    /// zklock: the first difference otherwise.
    pub fn belongs_to(
        &self,
        recipe: &str,
        scenario: &Scenario,
        prune: bool,
    ) -> Result<(), CheckpointError> {
        let this = Checkpoint::start(recipe, scenario, prune);
        let pairs = [
            ("zklock version", &self.version, &this.version),
            ("zklock commit", &self.commit, &this.commit),
            ("recipe", &self.recipe, &this.recipe),
            ("scenario", &self.scenario_json, &this.scenario_json),
        ];
        for (what, a, b) in pairs {
            if a != b {
                let (checkpoint, this) = if what == "scenario" {
                    scenario_difference(a, b)
                } else {
                    (a.clone(), b.clone())
                };
                return Err(CheckpointError::Mismatch {
                    what,
                    checkpoint,
                    this,
                });
            }
        }
        if self.prune != prune {
            return Err(CheckpointError::Mismatch {
                what: "pruning",
                checkpoint: self.prune.to_string(),
                this: prune.to_string(),
            });
        }
        Ok(())
    }

    /// As [`belongs_to`](Checkpoint::belongs_to), for a check that prunes up to a
    /// permutation of clients when `symmetry` says so, and by what recipes keep of replies
    /// when `keep_only` does: a checkpoint's states are digests of one kind, and never mix
    /// with another's.
    pub fn belongs_to_reduced(
        &self,
        recipe: &str,
        scenario: &Scenario,
        prune: bool,
        symmetry: bool,
        keep_only: bool,
    ) -> Result<(), CheckpointError> {
        self.belongs_to(recipe, scenario, prune)?;
        for (what, theirs, ours) in [
            ("symmetry", self.symmetry, prune && symmetry),
            ("keep-only", self.keep_only, prune && keep_only),
        ] {
            if theirs != ours {
                return Err(CheckpointError::Mismatch {
                    what,
                    checkpoint: theirs.to_string(),
                    this: ours.to_string(),
                });
            }
        }
        Ok(())
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let choices: usize = self.work.iter().map(|w| w.next_prefix.len()).sum();
        let mut b = Vec::with_capacity(256 + self.visited.len() * 16 + choices * 12);
        let one_prefix = match self.work.as_slice() {
            [w] if w.is_whole_tree() => Some(&w.next_prefix),
            _ => None,
        };
        b.extend_from_slice(CHECKPOINT_MAGIC);
        // Without counts, the older formats, as older zklocks wrote them.
        let format = match (&self.exercised, one_prefix) {
            (Some(_), _) => CHECKPOINT_FORMAT_VERSION,
            (None, Some(_)) => FORMAT_ONE_PREFIX,
            (None, None) => FORMAT_SUBTREES,
        };
        let one_prefix = one_prefix.filter(|_| format == FORMAT_ONE_PREFIX);
        b.extend_from_slice(&format.to_le_bytes());
        for s in [
            &self.version,
            &self.commit,
            &self.recipe,
            &self.scenario_json,
        ] {
            b.extend_from_slice(&(s.len() as u32).to_le_bytes());
            b.extend_from_slice(s.as_bytes());
        }
        // 2: pruned up to a permutation of clients; plus 4: by what recipes keep.
        b.push(
            u8::from(self.prune)
                + u8::from(self.prune && self.symmetry)
                + 4 * u8::from(self.prune && self.keep_only),
        );
        for n in [self.schedules, self.pruned, self.max_depth] {
            b.extend_from_slice(&n.to_le_bytes());
        }
        if let Some(e) = &self.exercised {
            for n in [e.runs, e.acquisitions, e.items_completed] {
                b.extend_from_slice(&n.to_le_bytes());
            }
            b.push(u8::from(e.queue));
            b.extend_from_slice(&(e.failures.len() as u32).to_le_bytes());
            for (reason, n) in &e.failures {
                b.extend_from_slice(&(reason.len() as u32).to_le_bytes());
                b.extend_from_slice(reason.as_bytes());
                b.extend_from_slice(&n.to_le_bytes());
            }
            for n in [e.revoke_requests, e.revocations] {
                b.extend_from_slice(&n.to_le_bytes());
            }
        }
        let prefix = |b: &mut Vec<u8>, p: &[u32]| {
            b.extend_from_slice(&(p.len() as u32).to_le_bytes());
            for c in p {
                b.extend_from_slice(&c.to_le_bytes());
            }
        };
        match one_prefix {
            Some(p) => prefix(&mut b, p),
            None => {
                b.extend_from_slice(&(self.work.len() as u32).to_le_bytes());
                for w in &self.work {
                    b.extend_from_slice(&w.root_len.to_le_bytes());
                    prefix(&mut b, &w.next_prefix);
                    b.extend_from_slice(&(w.caps.len() as u32).to_le_bytes());
                    for (at, kept) in &w.caps {
                        b.extend_from_slice(&at.to_le_bytes());
                        b.extend_from_slice(&kept.to_le_bytes());
                    }
                }
            }
        }
        b.extend_from_slice(&(self.visited.len() as u64).to_le_bytes());
        for d in &self.visited {
            b.extend_from_slice(&d.to_le_bytes());
        }
        let sum = checksum(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    }

    /// Reads a checkpoint from its file's bytes. Never panics: a damaged file is a
    /// [`CheckpointError`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Checkpoint, CheckpointError> {
        if bytes.len() as u64 > CHECKPOINT_BYTES_MAX {
            return Err(CheckpointError::TooLarge {
                what: "the file (bytes)",
                value: bytes.len() as u64,
                max: CHECKPOINT_BYTES_MAX,
            });
        }
        let Some(body) = bytes.strip_prefix(CHECKPOINT_MAGIC.as_slice()) else {
            return Err(CheckpointError::NotACheckpoint);
        };
        let mut r = Reader(body);
        let format = r.u32()?;
        if !(FORMAT_ONE_PREFIX..=CHECKPOINT_FORMAT_VERSION).contains(&format) {
            return Err(CheckpointError::Format {
                found: format,
                supported: CHECKPOINT_FORMAT_VERSION,
            });
        }
        // The checksum first: a damaged length must not be trusted below.
        let Some(split) = bytes.len().checked_sub(8) else {
            return Err(CheckpointError::Corrupt {
                what: "no checksum",
            });
        };
        let (covered, sum) = bytes.split_at(split);
        if checksum(covered).to_le_bytes() != sum {
            return Err(CheckpointError::Corrupt {
                what: "the checksum does not match",
            });
        }
        let mut r = Reader(&covered[CHECKPOINT_MAGIC.len() + 4..]);
        let mut string = || r.string();
        let (version, commit, recipe, scenario_json) = (string()?, string()?, string()?, string()?);
        let (prune, symmetry, keep_only) = match r.take(1)?[0] {
            0 => (false, false, false),
            1 => (true, false, false),
            2 => (true, true, false),
            5 => (true, false, true),
            6 => (true, true, true),
            _ => {
                return Err(CheckpointError::Corrupt {
                    what: "pruning flag",
                });
            }
        };
        let (schedules, pruned, max_depth) = (r.u64()?, r.u64()?, r.u64()?);
        let exercised = match format {
            CHECKPOINT_FORMAT_VERSION => Some(r.exercised(true)?),
            FORMAT_COUNTS => Some(r.exercised(false)?),
            _ => None,
        };
        let work = if format == FORMAT_ONE_PREFIX {
            vec![Subtree::from_prefix(r.prefix(&mut 0)?)]
        } else {
            r.work()?
        };
        let states = r.u64()?;
        if states > CHECKPOINT_STATES_MAX {
            return Err(CheckpointError::TooLarge {
                what: "the states",
                value: states,
                max: CHECKPOINT_STATES_MAX,
            });
        }
        let visited: Vec<u128> = r
            .take(states as usize * 16)?
            .chunks_exact(16)
            .map(|c| u128::from_le_bytes(c.try_into().expect("16 bytes")))
            .collect();
        if !r.0.is_empty() {
            return Err(CheckpointError::Corrupt {
                what: "bytes after the states",
            });
        }
        if !visited.is_sorted() {
            return Err(CheckpointError::Corrupt {
                what: "states out of order",
            });
        }
        Ok(Checkpoint {
            version,
            commit,
            recipe,
            scenario_json,
            prune,
            symmetry,
            keep_only,
            schedules,
            pruned,
            max_depth,
            work,
            visited,
            exercised,
        })
    }
}

/// The fields in which two scenarios (as JSON) differ, as `name=value` lists, so that a
/// refusal names what differs rather than two whole scenarios.
fn scenario_difference(a: &str, b: &str) -> (String, String) {
    use serde_json::{Map, Value};
    let fields = |s: &str| match serde_json::from_str::<Value>(s) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let (fa, fb) = (fields(a), fields(b));
    let mut keys: Vec<&String> = fa.keys().chain(fb.keys()).collect();
    keys.sort();
    keys.dedup();
    let (mut da, mut db) = (Vec::new(), Vec::new());
    for k in keys {
        let (va, vb) = (fa.get(k), fb.get(k));
        if va != vb {
            let show = |v: Option<&Value>| v.map_or("(none)".to_string(), Value::to_string);
            da.push(format!("{k}={}", show(va)));
            db.push(format!("{k}={}", show(vb)));
        }
    }
    if da.is_empty() {
        return (a.to_string(), b.to_string());
    }
    (da.join(" "), db.join(" "))
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CheckpointError> {
        if self.0.len() < n {
            return Err(CheckpointError::Corrupt {
                what: "the file ends early",
            });
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u32(&mut self) -> Result<u32, CheckpointError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }
    fn u64(&mut self) -> Result<u64, CheckpointError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
    /// A prefix of choices, counting them into `choices` (all prefixes together are
    /// bounded).
    fn prefix(&mut self, choices: &mut u64) -> Result<Vec<u32>, CheckpointError> {
        let n = self.u32()?;
        *choices += u64::from(n);
        if *choices > CHECKPOINT_PREFIX_MAX.into() {
            return Err(CheckpointError::TooLarge {
                what: "the prefixes (choices)",
                value: *choices,
                max: CHECKPOINT_PREFIX_MAX.into(),
            });
        }
        Ok(self
            .take(n as usize * 4)?
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect())
    }

    /// Format 2's list of subtrees.
    fn work(&mut self) -> Result<Vec<Subtree>, CheckpointError> {
        let n = self.u32()?;
        if n > CHECKPOINT_SUBTREES_MAX {
            return Err(CheckpointError::TooLarge {
                what: "the subtrees of work left",
                value: n.into(),
                max: CHECKPOINT_SUBTREES_MAX.into(),
            });
        }
        let mut choices = 0;
        let mut work = Vec::new();
        for _ in 0..n {
            let root_len = self.u32()?;
            let next_prefix = self.prefix(&mut choices)?;
            let len = next_prefix.len() as u32;
            if root_len > len {
                return Err(CheckpointError::Corrupt {
                    what: "a subtree's root is longer than its prefix",
                });
            }
            let caps_len = self.u32()?;
            // Positions increase within [root_len, len]: at most one cap a choice, and one.
            if caps_len > len - root_len + 1 {
                return Err(CheckpointError::Corrupt {
                    what: "a subtree has more caps than choices",
                });
            }
            let mut caps = Vec::with_capacity(caps_len as usize);
            for _ in 0..caps_len {
                let (at, kept) = (self.u32()?, self.u32()?);
                if at < root_len || at > len || caps.last().is_some_and(|&(p, _)| p >= at) {
                    return Err(CheckpointError::Corrupt {
                        what: "a subtree's cap is out of place",
                    });
                }
                caps.push((at, kept));
            }
            work.push(Subtree {
                root_len,
                next_prefix,
                caps,
            });
        }
        Ok(work)
    }

    /// The counts of what the schedules run exercised: format 3's, and with `revocation`
    /// format 4's two counts of revocation after them.
    fn exercised(&mut self, revocation: bool) -> Result<Exercised, CheckpointError> {
        let (runs, acquisitions, items_completed) = (self.u64()?, self.u64()?, self.u64()?);
        let queue = match self.take(1)?[0] {
            0 => false,
            1 => true,
            _ => {
                return Err(CheckpointError::Corrupt {
                    what: "the work-queue flag",
                });
            }
        };
        let reasons = self.u32()?;
        // The reasons kept, and the bucket of the others.
        let reasons_max = FAILURE_REASONS_MAX as u64 + 1;
        if u64::from(reasons) > reasons_max {
            return Err(CheckpointError::TooLarge {
                what: "the failed acquires' reasons",
                value: reasons.into(),
                max: reasons_max,
            });
        }
        let mut failures = std::collections::BTreeMap::new();
        for _ in 0..reasons {
            let reason = self.string()?;
            let n = self.u64()?;
            if failures.insert(reason, n).is_some() {
                return Err(CheckpointError::Corrupt {
                    what: "a failed acquires' reason twice",
                });
            }
        }
        let (revoke_requests, revocations) = match revocation {
            true => (self.u64()?, self.u64()?),
            false => (0, 0),
        };
        Ok(Exercised {
            runs,
            acquisitions,
            items_completed,
            queue,
            failures,
            revoke_requests,
            revocations,
        })
    }

    fn string(&mut self) -> Result<String, CheckpointError> {
        let n = self.u32()?;
        if n > IDENTITY_BYTES_MAX {
            return Err(CheckpointError::TooLarge {
                what: "an identity string (bytes)",
                value: n.into(),
                max: IDENTITY_BYTES_MAX.into(),
            });
        }
        String::from_utf8(self.take(n as usize)?.to_vec()).map_err(|_| CheckpointError::Corrupt {
            what: "an identity string is not UTF-8",
        })
    }
}

/// A 64-bit checksum, eight bytes a round with a multiply (corruption, not adversaries).
fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(K).rotate_left(29);
    }
    h ^ (h >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Checkpoint {
        Checkpoint {
            exercised: None,
            schedules: 7,
            pruned: 3,
            max_depth: 12,
            work: vec![Subtree::from_prefix(vec![0, 2, 1])],
            visited: vec![1, 5, u128::MAX],
            ..Checkpoint::start("zklock", &Scenario::default(), true)
        }
    }

    #[test]
    fn a_checkpoint_reads_back_as_written() {
        let c = sample();
        assert_eq!(Checkpoint::from_bytes(&c.to_bytes()), Ok(c));
    }

    /// A search that counts states by what recipes keep of replies digests them
    /// otherwise: its checkpoint says so, and resumes only such a search.
    #[test]
    fn a_checkpoint_by_what_recipes_keep_resumes_only_a_search_that_counts_so() {
        let scenario = Scenario::default();
        for symmetry in [false, true] {
            let c = Checkpoint::start_reduced("zklock", &scenario, true, symmetry, true);
            assert!(c.keep_only);
            assert_eq!(Checkpoint::from_bytes(&c.to_bytes()), Ok(c.clone()));
            assert_eq!(
                c.belongs_to_reduced("zklock", &scenario, true, symmetry, true),
                Ok(())
            );
            assert!(matches!(
                c.belongs_to_reduced("zklock", &scenario, true, symmetry, false),
                Err(CheckpointError::Mismatch {
                    what: "keep-only",
                    ..
                })
            ));
        }
        let plain = Checkpoint::start_reduced("zklock", &scenario, true, true, false);
        assert!(matches!(
            plain.belongs_to_reduced("zklock", &scenario, true, true, true),
            Err(CheckpointError::Mismatch {
                what: "keep-only",
                ..
            })
        ));
    }

    /// The work of a search on several threads: three subtrees, one of them capped.
    fn sample_of_threads() -> Checkpoint {
        Checkpoint {
            work: vec![
                Subtree {
                    root_len: 1,
                    next_prefix: vec![0, 2, 1, 1],
                    caps: vec![(1, 3), (3, 2)],
                },
                Subtree::from_prefix(vec![1]),
                Subtree {
                    root_len: 2,
                    next_prefix: vec![0, 0, 0],
                    caps: Vec::new(),
                },
            ],
            ..sample()
        }
    }

    /// A checkpoint with counts, as this zklock writes it: format 4, its counts back.
    fn sample_with_counts() -> Checkpoint {
        let mut failures = std::collections::BTreeMap::new();
        failures.insert("no node".to_string(), 12);
        failures.insert(crate::exercised::OTHER_REASONS.to_string(), 2);
        Checkpoint {
            exercised: Some(Exercised {
                runs: 7,
                acquisitions: 0,
                items_completed: 0,
                queue: false,
                failures,
                revoke_requests: 5,
                revocations: 3,
            }),
            ..sample()
        }
    }

    #[test]
    fn a_checkpoint_with_counts_reads_back_as_written_in_format_4() {
        for c in [
            sample_with_counts(),
            Checkpoint {
                exercised: sample_with_counts().exercised,
                ..sample_of_threads()
            },
            Checkpoint::start("zklock", &Scenario::default(), true),
        ] {
            let bytes = c.to_bytes();
            assert_eq!(bytes[CHECKPOINT_MAGIC.len()..][..4], 4u32.to_le_bytes());
            assert_eq!(Checkpoint::from_bytes(&bytes), Ok(c));
        }
    }

    /// Counts past their bounds (more reasons than a count keeps) are refused.
    #[test]
    fn a_checkpoints_counts_past_their_bounds_are_refused() {
        let mut bytes = vec![0u8; 24];
        bytes.push(0);
        bytes.extend_from_slice(&(FAILURE_REASONS_MAX as u32 + 2).to_le_bytes());
        assert!(matches!(
            Reader(&bytes).exercised(false),
            Err(CheckpointError::TooLarge {
                what: "the failed acquires' reasons",
                ..
            })
        ));
        let mut bytes = vec![0u8; 24];
        bytes.push(2);
        assert!(matches!(
            Reader(&bytes).exercised(false),
            Err(CheckpointError::Corrupt { .. })
        ));
    }

    /// Format 3, as zklock wrote it before revocation was counted: format 4 without the
    /// two counts after the reasons. It reads with no revocation counted.
    #[test]
    fn a_checkpoint_of_format_3_still_loads_with_no_revocation_counted() {
        let mut c = sample_with_counts();
        let e = c.exercised.as_mut().expect("counts");
        (e.revoke_requests, e.revocations) = (0, 0);
        let mut b = c.to_bytes();
        let identity: usize = [&c.version, &c.commit, &c.recipe, &c.scenario_json]
            .iter()
            .map(|s| 4 + s.len())
            .sum();
        let failures = &c.exercised.as_ref().expect("counts").failures;
        let reasons: usize = failures.keys().map(|r| 4 + r.len() + 8).sum();
        let at = CHECKPOINT_MAGIC.len() + 4 + identity + 1 + 24 + 24 + 1 + 4 + reasons;
        assert_eq!(b[at..at + 16], [0u8; 16]);
        b.drain(at..at + 16);
        b[CHECKPOINT_MAGIC.len()..][..4].copy_from_slice(&3u32.to_le_bytes());
        b.truncate(b.len() - 8);
        let sum = checksum(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        assert_eq!(Checkpoint::from_bytes(&b), Ok(c));
    }

    #[test]
    fn a_checkpoint_of_several_subtrees_reads_back_as_written_in_format_2() {
        let c = sample_of_threads();
        let bytes = c.to_bytes();
        assert_eq!(bytes[CHECKPOINT_MAGIC.len()..][..4], 2u32.to_le_bytes());
        assert_eq!(Checkpoint::from_bytes(&bytes), Ok(c));
    }

    /// Format 1, as zklock wrote it before subtrees, by hand: it reads as the work of one
    /// thread, and a single prefix is still written so, byte for byte.
    #[test]
    fn a_one_thread_checkpoint_of_format_1_still_loads() {
        let c = sample();
        let mut b = CHECKPOINT_MAGIC.to_vec();
        b.extend_from_slice(&1u32.to_le_bytes());
        for s in [&c.version, &c.commit, &c.recipe, &c.scenario_json] {
            b.extend_from_slice(&(s.len() as u32).to_le_bytes());
            b.extend_from_slice(s.as_bytes());
        }
        b.push(1);
        for n in [7u64, 3, 12] {
            b.extend_from_slice(&n.to_le_bytes());
        }
        b.extend_from_slice(&3u32.to_le_bytes());
        for choice in [0u32, 2, 1] {
            b.extend_from_slice(&choice.to_le_bytes());
        }
        b.extend_from_slice(&3u64.to_le_bytes());
        for d in [1u128, 5, u128::MAX] {
            b.extend_from_slice(&d.to_le_bytes());
        }
        let sum = checksum(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        assert_eq!(Checkpoint::from_bytes(&b), Ok(c.clone()));
        assert_eq!(c.to_bytes(), b);
    }

    /// A subtree that cannot come from a search (its root past its prefix, a cap outside
    /// the subtree or out of order) is refused, checksum or not.
    #[test]
    fn a_subtree_out_of_shape_is_refused() {
        let bad = |w: Subtree| {
            let c = Checkpoint {
                work: vec![w, Subtree::from_prefix(vec![1])],
                ..sample()
            };
            Checkpoint::from_bytes(&c.to_bytes())
        };
        let w = |root_len, caps: &[(u32, u32)]| Subtree {
            root_len,
            next_prefix: vec![0, 1, 0],
            caps: caps.to_vec(),
        };
        assert!(bad(w(1, &[(1, 2), (2, 1), (3, 1)])).is_ok());
        for (root_len, caps) in [
            (4, &[][..]),
            (1, &[(0, 1)][..]),
            (1, &[(4, 1)][..]),
            (1, &[(2, 1), (1, 1)][..]),
            (1, &[(1, 1), (1, 1)][..]),
        ] {
            assert!(
                matches!(bad(w(root_len, caps)), Err(CheckpointError::Corrupt { .. })),
                "root {root_len}, caps {caps:?}"
            );
        }
    }

    /// More subtrees, or more choices in all prefixes together, than the bounds.
    #[test]
    fn a_checkpoint_past_its_subtree_or_choice_bounds_is_refused() {
        let bytes = (CHECKPOINT_SUBTREES_MAX + 1).to_le_bytes();
        assert!(matches!(
            Reader(&bytes).work(),
            Err(CheckpointError::TooLarge {
                what: "the subtrees of work left",
                ..
            })
        ));
        // Two subtrees of half the choices and one more.
        let mut bytes = 2u32.to_le_bytes().to_vec();
        for _ in 0..2 {
            bytes.extend_from_slice(&0u32.to_le_bytes());
            bytes.extend_from_slice(&(CHECKPOINT_PREFIX_MAX / 2 + 1).to_le_bytes());
            bytes.extend(std::iter::repeat_n(
                0u8,
                (CHECKPOINT_PREFIX_MAX / 2 + 1) as usize * 4,
            ));
            bytes.extend_from_slice(&0u32.to_le_bytes());
        }
        assert!(matches!(
            Reader(&bytes).work(),
            Err(CheckpointError::TooLarge {
                what: "the prefixes (choices)",
                ..
            })
        ));
    }

    #[test]
    fn every_truncation_and_every_flipped_byte_is_refused() {
        for c in [sample(), sample_of_threads(), sample_with_counts()] {
            refused_when_damaged(&c.to_bytes());
        }
    }

    fn refused_when_damaged(bytes: &[u8]) {
        for n in 0..bytes.len() {
            assert!(
                Checkpoint::from_bytes(&bytes[..n]).is_err(),
                "truncated at {n}"
            );
        }
        for i in 0..bytes.len() {
            let mut b = bytes.to_vec();
            b[i] ^= 0x10;
            assert!(Checkpoint::from_bytes(&b).is_err(), "byte {i} flipped");
        }
        assert_eq!(
            Checkpoint::from_bytes(b"{\"json\": 1}"),
            Err(CheckpointError::NotACheckpoint)
        );
    }

    #[test]
    fn a_checkpoint_of_another_check_is_refused() {
        let c = sample();
        let sc = Scenario::default();
        assert_eq!(c.belongs_to("zklock", &sc, true), Ok(()));
        let other = Scenario {
            clients: 3,
            ..sc.clone()
        };
        // A refusal names the fields that differ, not two whole scenarios.
        assert_eq!(
            c.belongs_to("zklock", &other, true),
            Err(CheckpointError::Mismatch {
                what: "scenario",
                checkpoint: "clients=5".into(),
                this: "clients=3".into()
            })
        );
        assert!(matches!(
            c.belongs_to("herd", &sc, true),
            Err(CheckpointError::Mismatch { what: "recipe", .. })
        ));
        assert!(matches!(
            c.belongs_to("zklock", &sc, false),
            Err(CheckpointError::Mismatch {
                what: "pruning",
                ..
            })
        ));
    }
}
