//! Ctrl-C (SIGINT) and SIGTERM: the first stops the run where it can stop cleanly (a sweep
//! starts no new seed, a real run heals its faults and starts no new acquisition), so that
//! what ran is judged, reported and written; a second exits at once, with status 130.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use zklock_checker::Interrupt;

/// The process's switches, set together by the handler.
#[derive(Debug)]
struct Switches {
    sweep: Interrupt,
    real: Arc<AtomicBool>,
}

static SWITCHES: OnceLock<Switches> = OnceLock::new();
static PRESSES: AtomicU32 = AtomicU32::new(0);

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
        let _ = ctrlc::set_handler(move || {
            if PRESSES.fetch_add(1, Ordering::SeqCst) == 0 {
                eprintln!(
                    "\ninterrupted: finishing what is under way, then judging it \
                     (Ctrl-C again to exit at once)"
                );
                sweep.set();
                real.store(true, Ordering::Release);
            } else {
                std::process::exit(EXIT_AT_ONCE);
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
