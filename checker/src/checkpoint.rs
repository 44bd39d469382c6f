//! A checkpoint of an exhaustive check, so that a long check can stop (at a bound, or
//! when interrupted) and resume later, in another process or another CI job, as loom's
//! `LOOM_CHECKPOINT_FILE` does.
//!
//! The depth-first search is fully described by the next schedule prefix to run, the set
//! of state digests seen, and its counters: resuming from them runs exactly the schedules
//! the uninterrupted search would have run next, with the same pruning, so the verdict and
//! the counts of a resumed check equal those of one run in one go (a test pins this).
//!
//! A checkpoint names what it checks (recipe, scenario, pruning) and the zklock that wrote
//! it (version and commit): the choices of a prefix and the encoding of a digest mean
//! something only to the same simulation, so any difference is refused
//! ([`CheckpointError::Mismatch`]) rather than resumed unsoundly.
//!
//! The format is binary, little-endian: a magic line, the format version, the identity
//! (lengths then bytes), the counters, the prefix, the digests (sorted, so equal searches
//! write equal files), and a checksum over everything before it. A checkpoint holds at
//! most [`CHECKPOINT_STATES_MAX`] digests (16 bytes each) and a prefix of at most
//! [`CHECKPOINT_PREFIX_MAX`] choices; a file is refused unread past
//! [`CHECKPOINT_BYTES_MAX`].

use crate::trace::{ZKLOCK_COMMIT, ZKLOCK_VERSION};
use std::fmt;
use zklock_sim::Scenario;

/// The first bytes of every checkpoint file.
pub const CHECKPOINT_MAGIC: &[u8; 18] = b"zklock checkpoint\n";
/// The format this zklock writes and reads.
pub const CHECKPOINT_FORMAT_VERSION: u32 = 1;
/// Distinct states a checkpoint holds at most: 2^28, a file of 4 GiB.
pub const CHECKPOINT_STATES_MAX: u64 = 1 << 28;
/// Choices in a checkpoint's prefix at most (a schedule is far shorter).
pub const CHECKPOINT_PREFIX_MAX: u32 = 1 << 20;
/// Identity strings (version, commit, recipe, scenario) at most, in bytes each.
const IDENTITY_BYTES_MAX: u32 = 1 << 16;
/// A checkpoint file at most, in bytes: the most states and prefix, plus the identity.
pub const CHECKPOINT_BYTES_MAX: u64 = CHECKPOINT_STATES_MAX * 16
    + CHECKPOINT_PREFIX_MAX as u64 * 4
    + 4 * IDENTITY_BYTES_MAX as u64
    + 1024;

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
    /// Schedules run before the checkpoint.
    pub schedules: u64,
    /// Of those, how many stopped at a seen state.
    pub pruned: u64,
    /// The most choices any schedule made.
    pub max_depth: u64,
    /// The next schedule to run: its prefix of choices.
    pub next_prefix: Vec<u32>,
    /// Every state digest seen, sorted.
    pub visited: Vec<u128>,
}

/// Why a checkpoint could not be read, or does not belong to this check.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckpointError {
    /// Not a checkpoint: the magic line is missing.
    NotACheckpoint,
    /// Written in a format this zklock does not know.
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
                "checkpoint format {found}, but this zklock reads format {supported}"
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
        Checkpoint::start_reduced(recipe, scenario, prune, false)
    }

    /// As [`start`](Checkpoint::start), of a check that prunes states up to a permutation
    /// of clients when `symmetry` (and `prune`) says so.
    pub fn start_reduced(
        recipe: &str,
        scenario: &Scenario,
        prune: bool,
        symmetry: bool,
    ) -> Checkpoint {
        Checkpoint {
            version: ZKLOCK_VERSION.to_string(),
            commit: ZKLOCK_COMMIT.to_string(),
            recipe: recipe.to_string(),
            scenario_json: serde_json::to_string(scenario).expect("a scenario serializes"),
            prune,
            symmetry: prune && symmetry,
            schedules: 0,
            pruned: 0,
            max_depth: 0,
            next_prefix: Vec::new(),
            visited: Vec::new(),
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
    /// permutation of clients when `symmetry` says so: a checkpoint's states are digests
    /// of one kind, and never mix with the other's.
    pub fn belongs_to_reduced(
        &self,
        recipe: &str,
        scenario: &Scenario,
        prune: bool,
        symmetry: bool,
    ) -> Result<(), CheckpointError> {
        self.belongs_to(recipe, scenario, prune)?;
        if self.symmetry != (prune && symmetry) {
            return Err(CheckpointError::Mismatch {
                what: "symmetry",
                checkpoint: self.symmetry.to_string(),
                this: (prune && symmetry).to_string(),
            });
        }
        Ok(())
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(256 + self.visited.len() * 16 + self.next_prefix.len() * 4);
        b.extend_from_slice(CHECKPOINT_MAGIC);
        b.extend_from_slice(&CHECKPOINT_FORMAT_VERSION.to_le_bytes());
        for s in [
            &self.version,
            &self.commit,
            &self.recipe,
            &self.scenario_json,
        ] {
            b.extend_from_slice(&(s.len() as u32).to_le_bytes());
            b.extend_from_slice(s.as_bytes());
        }
        // 2: pruned up to a permutation of clients.
        b.push(u8::from(self.prune) + u8::from(self.prune && self.symmetry));
        for n in [self.schedules, self.pruned, self.max_depth] {
            b.extend_from_slice(&n.to_le_bytes());
        }
        b.extend_from_slice(&(self.next_prefix.len() as u32).to_le_bytes());
        for c in &self.next_prefix {
            b.extend_from_slice(&c.to_le_bytes());
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
        let version = r.u32()?;
        if version != CHECKPOINT_FORMAT_VERSION {
            return Err(CheckpointError::Format {
                found: version,
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
        let (prune, symmetry) = match r.take(1)?[0] {
            0 => (false, false),
            1 => (true, false),
            2 => (true, true),
            _ => {
                return Err(CheckpointError::Corrupt {
                    what: "pruning flag",
                });
            }
        };
        let (schedules, pruned, max_depth) = (r.u64()?, r.u64()?, r.u64()?);
        let prefix_len = r.u32()?;
        if prefix_len > CHECKPOINT_PREFIX_MAX {
            return Err(CheckpointError::TooLarge {
                what: "the prefix (choices)",
                value: prefix_len.into(),
                max: CHECKPOINT_PREFIX_MAX.into(),
            });
        }
        let next_prefix = r
            .take(prefix_len as usize * 4)?
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
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
            schedules,
            pruned,
            max_depth,
            next_prefix,
            visited,
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
            schedules: 7,
            pruned: 3,
            max_depth: 12,
            next_prefix: vec![0, 2, 1],
            visited: vec![1, 5, u128::MAX],
            ..Checkpoint::start("zklock", &Scenario::default(), true)
        }
    }

    #[test]
    fn a_checkpoint_reads_back_as_written() {
        let c = sample();
        assert_eq!(Checkpoint::from_bytes(&c.to_bytes()), Ok(c));
    }

    #[test]
    fn every_truncation_and_every_flipped_byte_is_refused() {
        let bytes = sample().to_bytes();
        for n in 0..bytes.len() {
            assert!(
                Checkpoint::from_bytes(&bytes[..n]).is_err(),
                "truncated at {n}"
            );
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
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
