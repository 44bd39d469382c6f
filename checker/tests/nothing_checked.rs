//! A sweep that checks nothing is not a pass: a lock whose every acquire fails holds
//! every safety property vacuously, and `check_seeds` must say so rather than return Ok.

// The locks below spell the trait's methods as it declares them.
#![allow(clippy::manual_async_fn)]

use std::future::Future;
use std::time::Duration;
use zklock_checker::{Sweep, SweepError};
use zklock_recipe::history::LockRole;
use zklock_sim::{LockUnderTest, Recipe, Scenario, ShippedRecipe, SimClient};

/// A lock whose every acquire fails with "no node", as a lock that never creates its
/// directory's parents does.
struct NeverLock;

impl LockUnderTest for NeverLock {
    type Guard = ();
    fn acquire(&self) -> impl Future<Output = Result<(), String>> + Send {
        async { Err("no node".to_owned()) }
    }
    fn acquire_timeout(
        &self,
        _: Duration,
    ) -> impl Future<Output = Result<Option<()>, String>> + Send {
        async { Err("no node".to_owned()) }
    }
    fn token(&self, _: &()) -> i64 {
        0
    }
    fn node(&self, _: &()) -> String {
        String::new()
    }
    fn lost<'a>(&'a self, _: &'a ()) -> impl Future<Output = String> + Send + 'a {
        std::future::pending()
    }
    fn release(&self, _: ()) -> impl Future<Output = Result<(), String>> + Send {
        async { Ok(()) }
    }
}

struct NeverRecipe;

impl Recipe for NeverRecipe {
    type Lock = NeverLock;
    fn lock(&self, _: SimClient, _: LockRole, _: &str) -> NeverLock {
        NeverLock
    }
}

fn sweep<R: Recipe>(sc: &Scenario, recipe: &R, seeds: std::ops::Range<u64>) -> Box<SweepError> {
    Sweep::new(sc, recipe)
        .seeds(seeds)
        .without_regressions()
        .failures_dir(std::env::temp_dir().join("zklock-nothing-checked"))
        .run()
        .expect_err("a sweep that checked nothing passed")
}

#[test]
fn a_lock_that_never_acquires_fails_the_sweep_and_names_its_error() {
    let err = sweep(&Scenario::default(), &NeverRecipe, 0..3);
    let SweepError::NothingChecked(n) = &*err else {
        panic!("not NothingChecked: {err}");
    };
    let (reason, count) = n.only_error().expect("one error");
    assert_eq!(reason, "no node");
    assert!(count > 0);
    assert_eq!(n.runs, 3);
    let text = err.to_string();
    assert!(text.contains("0 acquisitions"), "{text}");
    assert!(
        text.contains(&format!("{count} with \"no node\"")),
        "{text}"
    );
}

#[test]
fn a_sweep_of_no_seeds_checks_nothing() {
    let err = sweep(&Scenario::default(), &ShippedRecipe::default(), 5..5);
    assert!(
        matches!(&*err, SweepError::NothingChecked(n) if n.runs == 0),
        "{err}"
    );
}

#[test]
fn a_scenario_of_no_acquisitions_checks_nothing() {
    let sc = Scenario {
        acquisitions_per_client: 0,
        ..Scenario::default()
    };
    if sc.validate().is_err() {
        // Refused up front instead: also not a pass.
        let err = sweep(&sc, &ShippedRecipe::default(), 0..2);
        assert!(matches!(&*err, SweepError::Scenario(_)), "{err}");
        return;
    }
    let err = sweep(&sc, &ShippedRecipe::default(), 0..2);
    assert!(matches!(&*err, SweepError::NothingChecked(_)), "{err}");
}

/// The bounds of the exhaustive checks below: 2 clients, no fault, on `threads` threads.
fn two_clients_no_fault(threads: usize) -> zklock_checker::Bounds {
    zklock_checker::Bounds {
        clients: 2,
        faults_max: 0,
        threads,
        ..zklock_checker::Bounds::default()
    }
}

/// The exhaustive check counts what its schedules exercised, on one thread and on
/// several, so that `zklock check` can refuse to call a vacuous check a pass.
#[test]
fn an_exhaustive_check_of_a_lock_that_never_acquires_checked_nothing() {
    checks_nothing_where_the_shipped_checks_something(
        &Scenario::default(),
        &NeverRecipe,
        &ShippedRecipe::default(),
    );
}

/// On one thread and on two, the exhaustive check of `never` completes without a
/// violation but says it checked nothing, every schedule's acquires failing with "no
/// node"; that of `shipped`, at the same bounds, checked something.
fn checks_nothing_where_the_shipped_checks_something(
    sc: &Scenario,
    never: &impl Recipe,
    shipped: &impl Recipe,
) {
    for threads in [1, 2] {
        let b = two_clients_no_fault(threads);
        let r = zklock_checker::check_exhaustive(sc, never, &b).unwrap();
        assert!(r.complete && r.violation.is_none(), "{r}");
        let n = r.exercised.verdict().expect_err("checked nothing");
        assert_eq!(
            n.only_error().map(|e| e.0),
            Some("no node"),
            "{threads} threads"
        );
        assert_eq!(n.runs, r.schedules, "{threads} threads");
        let ok = zklock_checker::check_exhaustive(sc, shipped, &b).unwrap();
        assert!(ok.violation.is_none(), "{ok}");
        assert_eq!(ok.exercised.verdict(), Ok(()), "{threads} threads");
    }
}

/// A lock that takes no lock at all and numbers its grants with a process-wide counter:
/// it fails mutual exclusion, and its histories differ from run to run.
struct CounterLock;

static GRANTS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

impl LockUnderTest for CounterLock {
    type Guard = i64;
    fn acquire(&self) -> impl Future<Output = Result<i64, String>> + Send {
        async { Ok(GRANTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst)) }
    }
    fn acquire_timeout(
        &self,
        _: Duration,
    ) -> impl Future<Output = Result<Option<i64>, String>> + Send {
        async {
            Ok(Some(
                GRANTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst),
            ))
        }
    }
    fn token(&self, g: &i64) -> i64 {
        *g
    }
    fn node(&self, g: &i64) -> String {
        format!("/lock/n-{g:010}")
    }
    fn lost<'a>(&'a self, _: &'a i64) -> impl Future<Output = String> + Send + 'a {
        std::future::pending()
    }
    fn release(&self, _: i64) -> impl Future<Output = Result<(), String>> + Send {
        async { Ok(()) }
    }
}

struct CounterRecipe;

impl Recipe for CounterRecipe {
    type Lock = CounterLock;
    fn lock(&self, _: SimClient, _: LockRole, _: &str) -> CounterLock {
        CounterLock
    }
}

/// Its trace failed to replay ("the history DIFFERS"), late: the sweep runs a failing
/// seed twice and says the recipe is not deterministic, with the first difference.
#[test]
fn a_recipe_sharing_state_across_runs_is_told_not_deterministic() {
    let err = sweep(&Scenario::default(), &CounterRecipe, 0..3);
    let SweepError::NotDeterministic { difference, .. } = &*err else {
        panic!("not NotDeterministic: {err}");
    };
    assert!(difference.starts_with("event "), "{difference}");
    assert!(err.to_string().contains("not deterministic"), "{err}");
}

/// A deterministic recipe's failing seed is reported with its trace and the trace shrunk.
#[test]
fn a_failing_seed_is_reported_with_its_shrunk_trace() {
    let dir = tempfile::tempdir().unwrap();
    let err = Sweep::new(&Scenario::default(), &FreeRecipe)
        .seeds(0..20)
        .without_regressions()
        .failures_dir(dir.path())
        .run()
        .expect_err("a lock of no exclusion passed");
    let f = err.seed_failure().expect("a seed failed");
    let min = f.shrunk.as_ref().expect("shrunk");
    assert!(
        min.exists() && min.to_string_lossy().ends_with(".min.json"),
        "{err}"
    );
}

/// A sweep told not to shrink (`shrink_time_limit_ms(0)`) reports its failing seed with
/// its trace and no shrunk trace: shrinking could take a minute, with no way to skip it.
#[test]
fn a_sweep_with_a_shrink_time_limit_of_0_does_not_shrink() {
    let dir = tempfile::tempdir().unwrap();
    let err = Sweep::new(&Scenario::default(), &FreeRecipe)
        .seeds(0..20)
        .without_regressions()
        .failures_dir(dir.path())
        .shrink_time_limit_ms(0)
        .run()
        .expect_err("a lock of no exclusion passed");
    let f = err.seed_failure().expect("a seed failed");
    assert!(f.trace.as_ref().is_some_and(|t| t.exists()), "{err}");
    assert_eq!(f.shrunk, None, "{err}");
    let min = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .to_string_lossy()
                .ends_with(".min.json")
        })
        .count();
    assert_eq!(min, 0, "{err}");
}

/// A lock that takes no lock, deterministically: every grant at once, token 1.
struct FreeLock;

impl LockUnderTest for FreeLock {
    type Guard = ();
    fn acquire(&self) -> impl Future<Output = Result<(), String>> + Send {
        async { Ok(()) }
    }
    fn acquire_timeout(
        &self,
        _: Duration,
    ) -> impl Future<Output = Result<Option<()>, String>> + Send {
        async { Ok(Some(())) }
    }
    fn token(&self, _: &()) -> i64 {
        1
    }
    fn node(&self, _: &()) -> String {
        "/lock/n-0000000001".to_owned()
    }
    fn lost<'a>(&'a self, _: &'a ()) -> impl Future<Output = String> + Send + 'a {
        std::future::pending()
    }
    fn release(&self, _: ()) -> impl Future<Output = Result<(), String>> + Send {
        async { Ok(()) }
    }
}

struct FreeRecipe;

impl Recipe for FreeRecipe {
    type Lock = FreeLock;
    fn lock(&self, _: SimClient, _: LockRole, _: &str) -> FreeLock {
        FreeLock
    }
}

/// A check of a lock that never acquires, stopped by its schedule bound and resumed from
/// its checkpoint (read back from its bytes) until it completes, on one thread or two:
/// the resumed report counts the whole check, so that it is judged "nothing checked" as
/// a check run in one go is. The counts were of the last part alone, and a resumed
/// check was never judged.
#[test]
fn a_check_resumed_from_its_checkpoint_is_judged_on_the_whole_check() {
    use zklock_checker::{Bounds, Checkpoint, Control, check_exhaustive_controlled};
    let base = Scenario::default();
    let failing = |run: &zklock_checker::CheckedRun| run.failure().is_some();
    for threads in [1, 2] {
        let bounds = Bounds {
            faults_max: 1,
            threads,
            ..Bounds::default()
        };
        let go = |b: &Bounds, resume: Option<Checkpoint>| {
            let control = Control {
                resume,
                checkpoint: true,
                ..Control::default()
            };
            check_exhaustive_controlled(&base, &NeverRecipe, b, &failing, &|_, _| {}, control)
                .unwrap()
        };
        let whole = go(&bounds, None);
        assert!(whole.complete && whole.schedules > 3, "{whole}");
        let in_one_go = whole
            .exercised_whole()
            .expect("a fresh check counts it all");
        assert_eq!(in_one_go.runs, whole.schedules);
        let step = Bounds {
            schedules_max: whole.schedules / 3,
            ..bounds.clone()
        };
        let mut resume = None;
        let mut parts = 0;
        let last = loop {
            let r = go(&step, resume.take());
            parts += 1;
            let Some(c) = r.checkpoint.clone() else {
                break r;
            };
            assert!(c.exercised.is_some(), "a checkpoint carries its counts");
            resume = Some(Checkpoint::from_bytes(&c.to_bytes()).unwrap());
        };
        assert!(parts >= 3 && last.complete, "{threads} threads: {last}");
        assert!(last.resumed_at_schedules > 0);
        let all = last
            .exercised_whole()
            .expect("a check resumed from counts counts it all");
        assert_eq!(all.runs, last.schedules, "{threads} threads");
        if threads == 1 {
            // On one thread the parts run the schedules of one go, exactly.
            assert_eq!(all, in_one_go);
        }
        let nothing = all
            .verdict()
            .expect_err("a resumed check that checked nothing");
        assert!(nothing.to_string().contains("\"no node\""), "{nothing}");
        // A checkpoint without counts (of an older zklock's format) still resumes, and
        // its report says the whole is not known rather than judging a part.
        let stopped = go(&step, None);
        let old = Checkpoint {
            exercised: None,
            ..stopped.checkpoint.expect("a stopped check's checkpoint")
        };
        let bytes = old.to_bytes();
        assert_ne!(bytes[18..22], 3u32.to_le_bytes(), "an older format");
        let resumed = go(&bounds, Some(Checkpoint::from_bytes(&bytes).unwrap()));
        assert!(resumed.complete, "{resumed}");
        assert!(resumed.exercised_whole().is_none(), "{resumed}");
    }
}

/// A latch that never leads: every `await_leadership` fails with "no node", as a latch
/// whose election path's parents were never made.
struct NeverLatch;

type Boxed<'a, T> = std::pin::Pin<Box<dyn Future<Output = T> + Send + 'a>>;

impl zklock_recipe::election::LatchUnderTest for NeverLatch {
    fn await_leadership(&self) -> Boxed<'_, Result<zklock_recipe::election::Term, String>> {
        Box::pin(async { Err("no node".to_owned()) })
    }
    fn lost(&self) -> Boxed<'_, String> {
        Box::pin(async { "not leading".to_owned() })
    }
    fn close(&self) -> Boxed<'_, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
}

/// An election none of whose contenders is ever elected.
struct NeverElected;

impl Recipe for NeverElected {
    type Lock = zklock_sim::ShippedLock;
    fn lock(&self, client: SimClient, role: LockRole, path: &str) -> Self::Lock {
        ShippedRecipe::default().lock(client, role, path)
    }
    fn election(&self) -> Option<zklock_sim::Election> {
        Some(zklock_sim::Election {
            contender: std::sync::Arc::new(|_, _, _| {
                zklock_recipe::election::ElectionUnderTest::Latch(Box::new(NeverLatch))
            }),
        })
    }
    fn scenario(&self) -> Scenario {
        zklock_sim::ElectionRecipe::default_scenario()
    }
}

/// An election that elected nobody holds every election property vacuously: the sweep
/// fails and names the error, and the exhaustive check (one thread and two) says it
/// checked nothing, where the shipped latch's, at the same bounds, checked something.
#[test]
fn an_election_that_never_elects_checks_nothing() {
    let sc = NeverElected.scenario();
    let err = sweep(&sc, &NeverElected, 0..3);
    let SweepError::NothingChecked(n) = &*err else {
        panic!("not NothingChecked: {err}");
    };
    assert_eq!(n.only_error().map(|e| e.0), Some("no node"), "{err}");
    assert_eq!(n.runs, 3);
    checks_nothing_where_the_shipped_checks_something(
        &sc,
        &NeverElected,
        &zklock_sim::ElectionRecipe::default(),
    );
}
