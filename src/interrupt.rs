//! Ctrl-C (SIGINT) and SIGTERM: the first stops the run where it can stop cleanly (a sweep
//! starts no new seed, a real run heals its faults and starts no new acquisition), so that
//! what ran is judged, reported and written; a second, [`SECOND_AFTER_MS`] or more after
//! the first, exits at once, with status 130. One sooner is the same interrupt told twice:
//! GNU `timeout` and CI runners signal the process and then its process group,
//! microseconds apart.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use zklock_checker::Interrupt;

/// The process's switches, set together by the handler.
#[derive(Debug)]
struct Switches {
    sweep: Interrupt,
    real: Arc<AtomicBool>,
}

static SWITCHES: OnceLock<Switches> = OnceLock::new();
/// When the first interrupt came.
static FIRST: OnceLock<Instant> = OnceLock::new();

/// How long after the first interrupt a second one exits at once, in ms: sooner, it is
/// the first one delivered again (to the process, then to its group).
pub const SECOND_AFTER_MS: u64 = 500;

/// Whether an interrupt at `now`, after a first at `first`, is a second one of its own.
fn is_a_second(first: Instant, now: Instant) -> bool {
    now.saturating_duration_since(first) >= Duration::from_millis(SECOND_AFTER_MS)
}

/// The exit status of a process ended by a second Ctrl-C: 128 + SIGINT, as shells report.
pub const EXIT_AT_ONCE: i32 = 130;

fn switches() -> &'static Switches {
    SWITCHES.get_or_init(|| {
        let s = Switches {
            sweep: Interrupt::new(),
            real: Arc::new(AtomicBool::new(false)),
        };
        let (sweep, real) = (s.sweep.clone(), Arc::clone(&s.real));
        // Fails only when a handler is already set (by the program embedding us): then
        // Ctrl-C keeps that program's meaning.
        // ctrlc runs this on one thread of its own: no two calls overlap.
        let _ = ctrlc::set_handler(move || {
            let now = Instant::now();
            match FIRST.get() {
                Some(first) if is_a_second(*first, now) => std::process::exit(EXIT_AT_ONCE),
                Some(_) => {}
                None => {
                    let _ = FIRST.set(now);
                    eprintln!(
                        "\ninterrupted: finishing what is under way, then judging it \
                         (Ctrl-C again to exit at once)"
                    );
                    sweep.set();
                    real.store(true, Ordering::Release);
                }
            }
        });
        s
    })
}

/// The switch a sweep's budget watches.
pub fn for_sweep() -> Interrupt {
    switches().sweep.clone()
}

/// The switch a real run's workload watches.
#[cfg(feature = "real")]
pub fn for_real_run() -> Arc<AtomicBool> {
    Arc::clone(&switches().real)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GNU timeout's two signals, microseconds apart, exited 130 with no report.
    #[test]
    fn an_interrupt_told_twice_at_once_is_one() {
        let t = Instant::now();
        assert!(!is_a_second(t, t + Duration::from_micros(50)));
        assert!(!is_a_second(
            t,
            t + Duration::from_millis(SECOND_AFTER_MS - 1)
        ));
        assert!(is_a_second(t, t + Duration::from_millis(SECOND_AFTER_MS)));
    }
}
