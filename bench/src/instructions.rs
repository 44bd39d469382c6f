//! Instructions per state of the exhaustive check. Hardware counters are not there on
//! most shared VMs, so the instructions are counted by valgrind's cachegrind, which needs
//! none: this very binary runs `check --clients N --faults-max 1 --threads 1` under it.
//! The count does not move with the machine's load, so it compares builds and engines
//! where a rate cannot.

use serde::Serialize;
use std::path::Path;
use std::process::Command;

/// The bench's figure, or why it has none.
#[derive(Debug, Serialize)]
pub struct InstructionFigures {
    /// The check counted: `check --clients N --faults-max 1 --threads 1`.
    pub config: String,
    /// Instructions the whole process ran (its start and exit too: well under 1% here).
    pub instructions: Option<u64>,
    pub distinct_states: Option<u64>,
    pub per_state: Option<f64>,
    /// Why there is no figure: valgrind missing, or the check failed under it.
    pub not_measured: Option<String>,
}

impl InstructionFigures {
    /// The figures of the check at `clients` clients: `instructions` over `states`.
    fn measured(clients: u32, instructions: u64, states: u64) -> InstructionFigures {
        InstructionFigures {
            config: config_of(clients),
            instructions: Some(instructions),
            distinct_states: Some(states),
            per_state: Some(instructions as f64 / states as f64),
            not_measured: None,
        }
    }

    /// No figure for the check at `clients` clients, and why.
    pub fn not_measured(clients: u32, why: impl Into<String>) -> InstructionFigures {
        InstructionFigures {
            config: config_of(clients),
            instructions: None,
            distinct_states: None,
            per_state: None,
            not_measured: Some(why.into()),
        }
    }
}

fn config_of(clients: u32) -> String {
    format!("{clients} clients, 1 fault, 1 thread")
}

/// Counts the instructions of the check at `clients` clients and one fault, run by `exe`
/// under cachegrind; `valgrind` is the program to run (found on PATH by the caller).
pub fn measure(valgrind: &Path, exe: &Path, clients: u32) -> InstructionFigures {
    let missing = |why: String| InstructionFigures::not_measured(clients, why);
    let out = Command::new(valgrind)
        // No cache simulation: only the instruction count, at a fraction of the cost.
        .args(["--tool=cachegrind", "--cache-sim=no"])
        .arg("--cachegrind-out-file=/dev/null")
        .arg(exe)
        .args(["check", "--clients", &clients.to_string()])
        .args(["--faults-max", "1", "--threads", "1"])
        .output();
    let out = match out {
        Ok(out) => out,
        Err(e) => return missing(format!("{} did not start: {e}", valgrind.display())),
    };
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    if !out.status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        return missing(format!(
            "the check under cachegrind ended with {}: {}",
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        ));
    }
    match (instruction_refs(&stderr), distinct_states(&stdout)) {
        (Some(i), Some(s)) if s > 0 => InstructionFigures::measured(clients, i, s),
        _ => missing("cachegrind's or the check's summary was not found in their output".into()),
    }
}

/// `valgrind` on PATH, if it is there.
pub fn find_valgrind() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("valgrind"))
        .find(|p| p.is_file())
}

/// The count of cachegrind's summary line, `==PID== I refs:      11,467,237,349` (older
/// versions: `I   refs:`).
fn instruction_refs(stderr: &str) -> Option<u64> {
    stderr.lines().find_map(|l| {
        let (_, rest) = l.split_once("I ")?;
        let count = rest.trim_start().strip_prefix("refs:")?;
        count.trim().replace(',', "").parse().ok()
    })
}

/// The check's summary line: `...: 2920 schedules (...), 7265 distinct states, ...`.
fn distinct_states(stdout: &str) -> Option<u64> {
    stdout.lines().find_map(|l| {
        let (before, _) = l.split_once(" distinct states")?;
        before.rsplit(' ').next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cachegrinds_count_and_the_checks_states_are_read_from_their_summaries() {
        let stderr = "==4242== Cachegrind, a high-precision tracing profiler\n\
                      ==4242== \n\
                      ==4242== I refs:        11,467,237,349\n";
        assert_eq!(instruction_refs(stderr), Some(11_467_237_349));
        assert_eq!(
            instruction_refs("==1== I   refs:      1,024\n"),
            Some(1_024)
        );
        assert_eq!(instruction_refs("==1== D refs: 5\n"), None);
        let stdout = "recipe zklock, 2 clients x 1 acquisitions, at most 1 faults, symmetry on: \
                      2920 schedules (2777 pruned at seen states), 7265 distinct states, depth 34 \
                      choices, 0.12 s, complete\nok: every property held on every schedule\n";
        assert_eq!(distinct_states(stdout), Some(7_265));
        assert_eq!(distinct_states("ok\n"), None);
    }

    #[test]
    fn a_valgrind_that_cannot_start_is_a_reason_not_a_figure() {
        let f = measure(
            Path::new("/nonexistent/valgrind"),
            Path::new("/bin/true"),
            2,
        );
        assert_eq!(f.per_state, None);
        assert!(
            f.not_measured.as_deref().unwrap().contains("did not start"),
            "{f:?}"
        );
    }
}
