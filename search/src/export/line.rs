//! A finding's `zklock real` line, read back into the script and points it runs: what an
//! export turns into a reproduction, and what shrinking makes smaller.

use super::ExportError;
use std::fmt;
use zklock_real::plan::{Repeat, op};
use zklock_real::workload::WorkloadConfig;

/// A `zklock real` line of a search's finding: its lock, its script and its points.
#[derive(Clone, Debug)]
pub struct RealLine {
    /// The lock's name (`--lock`).
    pub lock: String,
    pub workload: WorkloadConfig,
    pub aims: Vec<Aim>,
}

/// One `--aim CLIENT:ACTION:OP:PATH[:NTH[:REPEAT]]` of a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aim {
    pub client: u32,
    /// The action's name (`drop-request`, `pause-4000ms`, ...).
    pub action: String,
    /// The operation's name ([`op::NAMES`]).
    pub op: String,
    pub under: String,
    /// 1 for the first matching request.
    pub nth: u32,
    pub repeat: Repeat,
}

impl fmt::Display for Aim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}:{}",
            self.client, self.action, self.op, self.under
        )?;
        match self.repeat {
            Repeat::Once if self.nth == 1 => Ok(()),
            Repeat::Once => write!(f, ":{}", self.nth),
            Repeat::Next(n) => write!(f, ":{}:{n}", self.nth),
            Repeat::WindowMs(ms) => write!(f, ":{}:{ms}ms", self.nth),
        }
    }
}

fn invalid(reason: String) -> ExportError {
    ExportError::Invalid { reason }
}

impl Aim {
    /// Parses `CLIENT:ACTION:OP:PATH[:NTH[:REPEAT]]`, as `zklock real --aim` takes it.
    pub fn parse(s: &str) -> Result<Aim, ExportError> {
        let bad = |why: &str| invalid(format!("--aim {s}: {why}"));
        let parts: Vec<&str> = s.split(':').collect();
        if !(4..=6).contains(&parts.len()) {
            return Err(bad("expected CLIENT:ACTION:OP:PATH[:NTH[:REPEAT]]"));
        }
        let client = parts[0].parse().map_err(|_| bad("a bad client"))?;
        if op::by_name(parts[2]).is_none() {
            return Err(bad("an unknown operation"));
        }
        let nth = match parts.get(4) {
            Some(n) => n
                .parse()
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| bad("a bad NTH"))?,
            None => 1,
        };
        let repeat = match parts.get(5) {
            None => Repeat::Once,
            Some(r) => match r.strip_suffix("ms") {
                Some(ms) => Repeat::WindowMs(ms.parse().map_err(|_| bad("a bad window"))?),
                None => Repeat::Next(r.parse().map_err(|_| bad("a bad repeat"))?),
            },
        };
        Ok(Aim {
            client,
            action: parts[1].to_owned(),
            op: parts[2].to_owned(),
            under: parts[3].to_owned(),
            nth,
            repeat,
        })
    }
}

/// A duration flag's value: `30000ms`, `30s` or plain milliseconds.
fn millis(v: &str) -> Option<u64> {
    if let Some(ms) = v.strip_suffix("ms") {
        ms.parse().ok()
    } else if let Some(s) = v.strip_suffix('s') {
        s.parse::<u64>().ok()?.checked_mul(1_000)
    } else {
        v.parse().ok()
    }
}

impl RealLine {
    /// Reads a finding's line (`zklock real --lock ... --aim ...`; the program's name and
    /// `real` may be left out). A flag a search's line does not carry is refused.
    pub fn parse(line: &str) -> Result<RealLine, ExportError> {
        // The program may be several words (`cargo run --release --`): its flags end
        // at `real`.
        let all: Vec<&str> = line.split_whitespace().collect();
        let from = match all.iter().position(|w| *w == "real") {
            Some(at) => at + 1,
            None => all
                .iter()
                .position(|w| w.starts_with("--"))
                .unwrap_or(all.len()),
        };
        let mut words = all[from..].iter().copied();
        let mut w = WorkloadConfig::default();
        let (mut lock, mut aims) = (None, Vec::new());
        while let Some(flag) = words.next() {
            let value = words
                .next()
                .ok_or_else(|| invalid(format!("{flag}: no value in {line:?}")))?;
            let bad = || invalid(format!("{flag} {value}: not a number"));
            let n = || value.parse::<u64>().map_err(|_| bad());
            let n32 = || value.parse::<u32>().map_err(|_| bad());
            match flag {
                "--lock" => lock = Some(value.to_owned()),
                "--recipe" => {
                    return Err(ExportError::UnsupportedLock {
                        lock: value.to_owned(),
                    });
                }
                "--clients" => w.clients = n32()?,
                "--readers" => w.readers = n32()?,
                "--attempts" => w.attempts_per_client = n32()?,
                "--session-timeout-ms" => w.session_timeout_ms = n()?,
                "--hold-ms" => w.hold_ms = n()?,
                "--drop-every" => w.drop_every = n32()?,
                "--drop-after-ms-max" => w.drop_after_ms_max = n()?,
                "--acquire-timeout-ms" => w.acquire_timeout_ms = n()?,
                "--duration" => w.duration_ms = millis(value).ok_or_else(bad)?,
                "--mix-offset" => w.mix_offset = n32()?,
                "--start-stagger-ms" => w.start_stagger_ms = n()?,
                "--idle-after-give-up-ms" => w.idle_after_give_up_ms = n()?,
                "--leak-bound-ms" => w.leak_bound_ms = n()?,
                "--fresh-lock-every" => w.fresh_lock_every = n32()?,
                "--long-hold-every" => w.long_hold_every = n32()?,
                "--long-hold-ms" => w.long_hold_ms = n()?,
                "--revokers" => {
                    return Err(ExportError::Unsupported {
                        reason: format!(
                            "{flag} {value}: the libraries' tests have no revoker (only \
                             zklock's lock is revoked)"
                        ),
                    });
                }
                "--faults" if value == "none" => {}
                "--faults" => {
                    return Err(ExportError::Unsupported {
                        reason: format!("--faults {value}: an export carries aimed faults only"),
                    });
                }
                // The warm-up of zklock's drivers: nothing of the script.
                "--warm-up-runs" => {}
                "--container-check-interval-ms" => {
                    return Err(ExportError::Unsupported {
                        reason: format!(
                            "{flag} {value}: an export's server reaps containers at \
                             ZooKeeper's default"
                        ),
                    });
                }
                "--aim" => aims.push(Aim::parse(value)?),
                _ => {
                    return Err(invalid(format!(
                        "{flag}: not a flag of a search's finding line"
                    )));
                }
            }
        }
        let lock = lock.ok_or_else(|| invalid(format!("no --lock in {line:?}")))?;
        Ok(RealLine {
            lock,
            workload: w,
            aims,
        })
    }
}

impl fmt::Display for RealLine {
    /// The line as a search writes it (`zklock real ...`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "zklock real --lock {} {}",
            self.lock,
            crate::setup::script_args(&self.workload)
        )?;
        for aim in &self.aims {
            write!(f, " --aim {aim}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "zklock real --lock kazoo-lock --clients 2 --attempts 4 --session-timeout-ms 2000 --hold-ms 5 --drop-every 4 --acquire-timeout-ms 1000 --duration 30000ms --faults none --warm-up-runs 3 --aim 0:drop-request:delete:/zklock/lock/:4";

    #[test]
    fn a_search_line_reads_back_as_it_was_written() {
        let l = RealLine::parse(LINE).unwrap();
        assert_eq!((l.workload.clients, l.workload.attempts_per_client), (2, 4));
        assert_eq!(l.workload.duration_ms, 30_000);
        assert_eq!(l.aims[0].nth, 4);
        assert_eq!(l.aims[0].under, "/zklock/lock/");
        // Written again without the drivers' warm-up, the rest word for word.
        assert_eq!(l.to_string(), LINE.replace(" --warm-up-runs 3", ""));
        let cargo = "cargo run --release -- real --lock kazoo-lock --attempts 2";
        assert_eq!(
            RealLine::parse(cargo).unwrap().workload.attempts_per_client,
            2
        );
        let window = Aim::parse("1:drop-request:exists:/zklock/lock/:2:3000ms").unwrap();
        assert_eq!(window.repeat, Repeat::WindowMs(3_000));
        assert_eq!(
            window.to_string(),
            "1:drop-request:exists:/zklock/lock/:2:3000ms"
        );
    }

    #[test]
    fn a_line_an_export_cannot_read_is_refused_with_its_flag() {
        let e = RealLine::parse("zklock real --lock kazoo-lock --seed 3").unwrap_err();
        assert!(e.to_string().contains("--seed"), "{e}");
        let e = RealLine::parse("zklock real --clients 2").unwrap_err();
        assert!(e.to_string().contains("no --lock"), "{e}");
        let e = RealLine::parse("real --lock kazoo-lock --aim 0:drop-request:nope:/a").unwrap_err();
        assert!(e.to_string().contains("unknown operation"), "{e}");
        let e = RealLine::parse("real --lock kazoo-lock --faults seed").unwrap_err();
        assert!(matches!(e, ExportError::Unsupported { .. }), "{e}");
        let e = RealLine::parse("real --lock zklock --revokers 1").unwrap_err();
        assert!(e.to_string().contains("have no revoker"), "{e}");
    }

    /// A script with revokers writes them into its line (what `zklock real` reruns), and
    /// one without writes none.
    #[test]
    fn a_scripts_revokers_are_in_its_line() {
        let mut w = zklock_real::workload::WorkloadConfig {
            clients: 3,
            ..Default::default()
        };
        assert!(!crate::setup::script_args(&w).contains("--revokers"));
        w.revokers = 1;
        assert!(crate::setup::script_args(&w).contains(" --revokers 1"));
    }
}
