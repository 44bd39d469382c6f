//! Each canary is caught by `explore` within its default budget and by the exhaustive
//! check within its bounds, by the property expected for its bug; its minimized trace in
//! traces/ replays to the same violation. The shipped recipe passes the same budgets.

use super::{Bug, Canary};
use std::path::PathBuf;
use zklock_checker::{
    Bounds, Budget, ExhaustiveReport, ShrinkLimits, Shrunk, Strategy, Trace, check_exhaustive,
    check_exhaustive_until, explore, explore_until, render_timeline, replay, shrink,
};
use zklock_sim::{Rate, Recipe, Scenario, ShippedRecipe};

/// The scenario each canary is explored in: [`scenario_with_every_fault`], without local
/// expiry for the canaries older than it (all but the CURATOR-498 and unordered-token
/// canaries). Those keep the faults their minimized traces
/// were made with, so that re-blessing gives the same sizes: with local expiry a client
/// can also wait behind its own old session's node, and abandoned-wait shrank to one
/// client. (With local expiry on, every one of them was caught by the same tests when it
/// came, in de7c23c.)
pub(super) fn scenario(bug: Bug) -> Scenario {
    let mut sc = scenario_with_every_fault(bug);
    if !matches!(bug, Bug::GuidOutlivesSession | Bug::UnorderedToken) {
        sc.faults.local_expiry = Rate::NEVER;
    }
    sc
}

/// The canary's own scenario ([`Bug::scenario`]), every fault kind on.
fn scenario_with_every_fault(bug: Bug) -> Scenario {
    bug.scenario()
}

/// The smallest bounds that can show each bug: a herd needs two waiters (a reader's herd
/// two writers and the reader: the first writer's release wakes the second and the
/// reader queued behind it); the name-order
/// bug needs no fault; expiry and lost creates need one; a forgotten node strands its own
/// client's next acquire; an abandoned wait needs a holder, and a second acquisition for
/// the client that waits (each client's second acquisition is a try); a lost wake-up needs
/// the holder to release between the waiter's listing and its watch, which a connection
/// loss lets happen (the watch's retry then finds the blocker gone); a reader waiting for a
/// later writer needs that writer queued when the reader lists; a create forgotten by a
/// dropped acquire strands its own client, once a connection loss holds the create that
/// makes the node unanswered until the drop (without faults it is answered within 1 ms);
/// a waiter that starts over after a disconnect needs a holder to wait for, and the
/// disconnect; a deadline looked at only when woken needs a timed attempt (each client's
/// first, by the scenario's `mix_offset`) waiting behind a holder held up past it (the
/// one fault: a partition or pause that outlives the holder's session); an order blind
/// to the counter's wrap needs a holder and a node created past the wrap; a guid that
/// outlives its session needs a client-side expiry that leaves a node behind, a lost
/// create reply in the next session (its second acquisition), and a waiter behind the
/// node it adopts; tokens in no order need two holds, which one client's two
/// acquisitions make (whether its second token is the lower is fixed by the node names,
/// and it is).
pub(super) fn bounds(bug: Bug) -> Bounds {
    let (clients, faults_max, acquisitions_per_client) = match bug {
        Bug::WatchParent | Bug::ReaderWatchesFirstWriter => (3, 0, 1),
        Bug::FullNameOrder | Bug::ReaderWaitsForLaterWriter | Bug::OrderBlindToWrap => (2, 0, 1),
        Bug::DeafHolder
        | Bug::BlindRetry
        | Bug::LostWakeup
        | Bug::DeafWaiter
        | Bug::RestartForgetsNode => (2, 1, 1),
        Bug::ForgetfulRelease => (1, 1, 2),
        Bug::DroppedCreate => (1, 1, 1),
        Bug::AbandonedWait => (2, 0, 2),
        Bug::DeadlineOnWake => (2, 1, 1),
        Bug::GuidOutlivesSession => (2, 2, 2),
        Bug::UnorderedToken => (1, 0, 2),
    };
    Bounds {
        clients,
        faults_max,
        acquisitions_per_client,
        ..Bounds::default()
    }
}

/// The lowest seed of the default budget on which the canary violates its property.
fn caught_by_explore(bug: Bug) -> Option<(u64, zklock_checker::CheckedRun)> {
    caught_by_explore_under(bug, Strategy::default()).map(|(seed, run, _)| (seed, run))
}

/// As [`caught_by_explore`], under `strategy`, with the failing seed's own scenario (the
/// canary's under `uniform`).
fn caught_by_explore_under(
    bug: Bug,
    strategy: Strategy,
) -> Option<(u64, zklock_checker::CheckedRun, Scenario)> {
    let expected = bug.caught_by();
    let budget = Budget {
        strategy,
        ..Budget::default()
    };
    let e = explore_until(&scenario(bug), &Canary(bug), &budget, &|_, _| {}, &|r| {
        r.violates(expected)
    })
    .unwrap();
    let sc = e.failure_scenario;
    e.failure
        .map(|(seed, run)| (seed, run, sc.expect("a failure has its scenario")))
}

/// The exhaustive check at the canary's bounds, stopped at its first run that violates
/// the canary's property.
fn caught_by_exhaustive(bug: Bug) -> ExhaustiveReport {
    let expected = bug.caught_by();
    check_exhaustive_until(&scenario(bug), &Canary(bug), &bounds(bug), &|r| {
        r.violates(expected)
    })
    .unwrap()
}

fn trace_path(bug: Bug) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("traces")
        .join(format!("{}.json", bug.name()))
}

#[test]
fn every_canary_is_caught_by_explore_within_the_default_budget() {
    for bug in Bug::ALL {
        let (seed, run) = caught_by_explore(bug)
            .unwrap_or_else(|| panic!("{} survived the default budget", bug.name()));
        assert!(run.violates(bug.caught_by()), "{} seed {seed}", bug.name());
    }
}

/// The exhaustive check's model of time, where requests take none, loses no canary: each
/// is caught, at its bounds, with requests taking the simulation's 100 µs too.
#[test]
fn every_canary_is_caught_with_requests_taking_time_as_without() {
    for bug in Bug::ALL {
        let b = Bounds {
            request_time_us: 100,
            ..bounds(bug)
        };
        let expected = bug.caught_by();
        let r = check_exhaustive_until(&scenario(bug), &Canary(bug), &b, &|r| r.violates(expected))
            .unwrap();
        assert_eq!(r.scenario.request_time_us, 100);
        let run = r.violation.unwrap_or_else(|| {
            panic!(
                "{} survived the check with 100 us requests ({} schedules)",
                bug.name(),
                r.schedules
            )
        });
        assert!(run.violates(expected), "{}", bug.name());
        // The other canary tests search with none.
        assert_eq!(bounds(bug).scenario(&scenario(bug)).request_time_us, 0);
    }
}

/// Symmetry reduction loses no canary: at each canary's bounds, the reduced search
/// finds a violation of the canary's property exactly when the unreduced one does (the
/// canaries whose bug makes identities matter are searched unreduced either way).
#[test]
fn symmetry_reduction_catches_every_canary_the_unreduced_search_catches() {
    for bug in Bug::ALL {
        let b = bounds(bug);
        if b.clients < 2 {
            continue;
        }
        let expected = bug.caught_by();
        let e = zklock_checker::symmetry::compare(&scenario(bug), &Canary(bug), &b, &|r| {
            r.violates(expected)
        })
        .unwrap();
        let reduced = Canary(bug).symmetric();
        assert_eq!(e.reduced.symmetry, reduced, "{}", bug.name());
        assert!(
            e.unreduced.violation.is_some(),
            "{}: {}",
            bug.name(),
            e.unreduced
        );
        assert!(
            e.reduced.violation.is_some(),
            "{}: {}",
            bug.name(),
            e.reduced
        );
        eprintln!(
            "{}: reduced {} / unreduced {} states before the catch",
            bug.name(),
            e.reduced.distinct_states,
            e.unreduced.distinct_states
        );
    }
}

/// Partial-order reduction loses no canary: at each canary's bounds, the search that
/// runs one order of commuting requests finds a violation of the canary's property (as
/// the search of every order does:
/// `every_canary_is_caught_by_the_exhaustive_check_on_one_thread_and_on_several`), alone
/// and with symmetry reduction.
#[test]
fn partial_order_reduction_catches_every_canary() {
    for bug in Bug::ALL {
        let expected = bug.caught_by();
        // With symmetry on too, for a canary searched up to symmetry.
        let symmetries: &[bool] = match Canary(bug).symmetric() {
            true => &[false, true],
            false => &[false],
        };
        for &symmetry in symmetries {
            let b = Bounds {
                symmetry,
                partial_order: true,
                ..bounds(bug)
            };
            let r =
                check_exhaustive_until(&scenario(bug), &Canary(bug), &b, &|r| r.violates(expected))
                    .unwrap();
            assert!(r.partial_order, "{}", bug.name());
            let run = r.violation.unwrap_or_else(|| {
                panic!(
                    "{} (symmetry {symmetry}) survived the reduced check ({} schedules)",
                    bug.name(),
                    r.schedules
                )
            });
            assert!(run.violates(expected), "{}", bug.name());
            eprintln!(
                "{} (symmetry {symmetry}): caught after {} schedules, {:.2} s",
                bug.name(),
                r.schedules,
                r.wall_ms as f64 / 1000.0
            );
        }
    }
}

/// The exhaustive check catches every canary at its bounds, and a search on several
/// threads reports each canary's violation as the search on one does: the same
/// schedule, found after the same runs, so its trace is the same.
#[test]
fn every_canary_is_caught_by_the_exhaustive_check_on_one_thread_and_on_several() {
    for bug in Bug::ALL {
        let expected = bug.caught_by();
        let one = caught_by_exhaustive(bug);
        let caught = one.violation.as_ref().unwrap_or_else(|| {
            panic!(
                "{} survived the exhaustive check ({} schedules)",
                bug.name(),
                one.schedules
            )
        });
        assert!(caught.violates(expected), "{}", bug.name());
        let b = Bounds {
            threads: 2,
            ..bounds(bug)
        };
        let many =
            check_exhaustive_until(&scenario(bug), &Canary(bug), &b, &|r| r.violates(expected))
                .unwrap();
        assert_eq!(many.threads, 2, "{}", bug.name());
        let (Some(a), Some(b)) = (&one.violation, &many.violation) else {
            panic!("{}: one thread {one}; two threads {many}", bug.name());
        };
        assert_eq!(
            a.outcome.choices,
            b.outcome.choices,
            "{}: another schedule reported",
            bug.name()
        );
        assert_eq!(
            (one.schedules, one.distinct_states),
            (many.schedules, many.distinct_states),
            "{}",
            bug.name()
        );
    }
}

#[test]
fn the_shipped_recipe_passes_the_canary_budgets() {
    let recipe = ShippedRecipe::default();
    for sc in [
        Scenario::default(),
        scenario(Bug::ReaderWaitsForLaterWriter),
        scenario(Bug::DroppedCreate),
        scenario(Bug::DeadlineOnWake),
        scenario(Bug::OrderBlindToWrap),
        scenario(Bug::GuidOutlivesSession),
    ] {
        let e = explore(&sc, &recipe, &Budget::default(), &|_, _| {}).unwrap();
        assert!(e.failure.is_none(), "{:?}", e.summary.failures);
        assert_eq!(e.summary.seeds_run, Budget::default().seeds);
    }
    for bug in [
        Bug::WatchParent,
        Bug::DeafHolder,
        Bug::ForgetfulRelease,
        Bug::AbandonedWait,
        Bug::ReaderWaitsForLaterWriter,
        Bug::DroppedCreate,
        Bug::DeadlineOnWake,
        Bug::OrderBlindToWrap,
        Bug::UnorderedToken,
        Bug::ReaderWatchesFirstWriter,
    ] {
        let (sc, bounds) = (scenario(bug), bounds(bug));
        let r = check_exhaustive(&sc, &recipe, &bounds).unwrap();
        assert!(r.violation.is_none(), "{} {bounds:?}", sc.readers);
        assert!(r.complete, "{bounds:?}: {r}");
    }
    // Two faults and two acquisitions each take long to search in full: the shipped
    // recipe gets the canary's bounds up to a schedule limit, past the 45,242nd
    // schedule, where the canary is caught
    // (`every_canary_is_caught_by_the_exhaustive_check_on_one_thread_and_on_several`).
    let bug = Bug::GuidOutlivesSession;
    let bounds = Bounds {
        schedules_max: SHIPPED_SCHEDULES_MAX,
        ..bounds(bug)
    };
    let r = check_exhaustive(&scenario(bug), &recipe, &bounds).unwrap();
    assert!(r.violation.is_none(), "{bounds:?}: {r}");
    assert_eq!(r.schedules, SHIPPED_SCHEDULES_MAX, "{r}");
}

/// How far the shipped recipe is searched at a canary's bounds that the search cannot
/// finish.
const SHIPPED_SCHEDULES_MAX: u64 = 100_000;

/// The fewest clients that can show each bug: a herd needs a holder and two waiters
/// (a reader's herd, a reader behind two writers),
/// two believers need two clients, an orphan node strands even a lone client, a wait
/// is only given up, its wake-up lost, or started over behind itself, while another
/// client holds, a reader waits for a later writer only if there is one, a node
/// adopted from an old session is taken over by another client, and a token lower than
/// an earlier hold's may follow its own client's earlier hold.
fn clients_needed(bug: Bug) -> u32 {
    match bug {
        Bug::WatchParent | Bug::ReaderWatchesFirstWriter => 3,
        Bug::DeafHolder
        | Bug::FullNameOrder
        | Bug::AbandonedWait
        | Bug::LostWakeup
        | Bug::DeafWaiter
        | Bug::RestartForgetsNode
        | Bug::ReaderWaitsForLaterWriter
        | Bug::DeadlineOnWake
        | Bug::OrderBlindToWrap
        | Bug::GuidOutlivesSession => 2,
        Bug::BlindRetry | Bug::ForgetfulRelease | Bug::DroppedCreate | Bug::UnorderedToken => 1,
    }
}

/// Shrinking used to keep every client of a failing default run: its choices are
/// positions among what is pending, and they seldom mean the same with fewer clients.
/// A two-client bug found with five clients now shrinks to two, by fresh seeds alone
/// (the exhaustive search, which would find it too, is off here).
#[test]
fn shrinking_drops_the_clients_a_violation_does_not_need() {
    let bug = Bug::DeafHolder;
    let limits = ShrinkLimits {
        exhaustive_schedules_max: 0,
        ..unhurried()
    };
    let shrunk = shrink_what_explore_finds(bug, &limits);
    assert_eq!(shrunk.before.clients, 5);
    assert_eq!(shrunk.exhaustive_schedules, 0);
    assert_eq!(
        shrunk.after.clients,
        clients_needed(bug),
        "{:?} -> {:?}",
        shrunk.before,
        shrunk.after
    );
}

/// Random runs seldom show a bug at the smallest size: shrinking a waiter deaf to its
/// session's end by replays and fresh seeds alone kept ten acquisitions per client. The
/// exhaustive search of the smaller sizes finds it with one.
#[test]
fn shrinking_searches_the_smallest_sizes_exhaustively() {
    let shrunk = shrink_what_explore_finds(Bug::DeafWaiter, &unhurried());
    assert!(shrunk.exhaustive_schedules > 0);
    assert_eq!(
        (shrunk.after.clients, shrunk.after.acquisitions_per_client),
        (2, 1),
        "{:?} -> {:?}",
        shrunk.before,
        shrunk.after
    );
}

/// The default limits without a wall-time limit a loaded machine could reach (an hour):
/// the shrinks here end on their run budgets, so their results are the same anywhere.
fn unhurried() -> ShrinkLimits {
    ShrinkLimits {
        time_limit_ms: 3_600_000,
        ..ShrinkLimits::default()
    }
}

/// Shrinks the run `explore` catches `bug` in, and checks that the shrunk trace replays
/// to the same violation and history.
fn shrink_what_explore_finds(bug: Bug, limits: &ShrinkLimits) -> Shrunk {
    // Uniform: the shrinks start from the canary's 5-client run, as the committed
    // minimized traces did.
    let (seed, run, sc) = caught_by_explore_under(bug, Strategy::Uniform).expect("caught");
    let trace = run.trace(&sc, seed, bug.name());
    let shrunk = shrink(&trace, &Canary(bug), limits).unwrap();
    assert!(
        !shrunk.time_limit_hit,
        "{}: the shrink hit its time limit, so its result depends on this machine",
        bug.name()
    );
    let again = replay(&shrunk.trace, &Canary(bug)).unwrap();
    assert!(again.violates(bug.caught_by()));
    assert!(again.outcome.history == shrunk.trace.history);
    shrunk
}

/// The failing run a canary's minimized trace is shrunk from: the one `explore` catches,
/// or, for a bug that needs two faults (more than the shrinker's exhaustive search of
/// the smaller sizes places), the exhaustive check's counterexample at its bounds.
fn failing_trace(bug: Bug) -> Trace {
    if bug == Bug::GuidOutlivesSession {
        let r = caught_by_exhaustive(bug);
        return r
            .violation
            .expect("caught")
            .trace(&r.scenario, 0, bug.name());
    }
    let (seed, run, sc) = caught_by_explore_under(bug, Strategy::Uniform).expect("caught");
    run.trace(&sc, seed, bug.name())
}

/// `ZKLOCK_BLESS=1 cargo test canary` (re)writes the minimized traces;
/// `ZKLOCK_BLESS=canary-deaf-holder` only that canary's.
#[test]
fn canary_minimized_traces_replay_to_the_same_violation() {
    let bless = std::env::var("ZKLOCK_BLESS").ok();
    for bug in Bug::ALL {
        let path = trace_path(bug);
        // A value naming no canary blesses them all.
        let named = |b: &str| Bug::ALL.iter().any(|x| x.name() == b);
        if bless
            .as_deref()
            .is_some_and(|b| b == bug.name() || !named(b))
        {
            let mut trace = failing_trace(bug);
            trace.violation = Some(bug.caught_by().to_string());
            let shrunk = shrink(&trace, &Canary(bug), &unhurried()).unwrap();
            // A trace cut short by the clock would differ from machine to machine.
            assert!(
                !shrunk.time_limit_hit,
                "{}: the shrink hit its time limit; raise ShrinkLimits::time_limit_ms",
                bug.name()
            );
            shrunk.trace.write(&path).unwrap();
        }
        let trace = Trace::read(&path).unwrap_or_else(|e| {
            panic!("{e}: write it with ZKLOCK_BLESS=1 cargo test canary_minimized")
        });
        assert_eq!(trace.recipe, bug.name());
        assert_eq!(
            trace.scenario.clients,
            clients_needed(bug),
            "{}",
            bug.name()
        );
        // No more than the exhaustive check needs (a forgotten node is an orphan at the
        // end of a single acquisition too).
        assert!(
            trace.scenario.acquisitions_per_client <= bounds(bug).acquisitions_per_client,
            "{}: {} acquisitions per client",
            bug.name(),
            trace.scenario.acquisitions_per_client
        );
        let violation = trace
            .violation
            .clone()
            .expect("a canary trace records its violation");
        assert_eq!(violation, bug.caught_by());
        let again = replay(&trace, &Canary(bug)).unwrap();
        assert!(
            again.violates(&violation),
            "{}: replay no longer violates",
            bug.name()
        );
        assert!(
            again.outcome.history == trace.history,
            "{}: history differs",
            bug.name()
        );
        insta::assert_snapshot!(bug.name(), render_timeline(&trace.history));
    }
}

/// The fence refuses the rightful holder of a lock whose tokens are in no order: the
/// unordered-token canary's minimized trace breaks `rightful_write_accepted` too.
#[test]
fn unordered_tokens_make_the_fence_refuse_a_rightful_holder() {
    let bug = Bug::UnorderedToken;
    let trace = Trace::read(&trace_path(bug)).unwrap();
    let again = replay(&trace, &Canary(bug)).unwrap();
    assert!(again.violates("fencing_token_order"));
    assert!(again.violates("rightful_write_accepted"));
}

/// A stuck run's report named no cause ("a waiter never got its wake-up"), and its page
/// opened on the waiting acquires alone, far from what made the wait endless. In the
/// README's lost-wakeup canary the waiter's getData of the node before it fails "no
/// node", so no watch is set: that answer is in the report's proof, in words, and among
/// the events the page rings and opens on.
#[test]
fn a_stuck_runs_report_names_the_answer_after_which_the_waiter_waits_forever() {
    use zklock_checker::trace::SavedReport;
    use zklock_recipe::ZkError;
    use zklock_recipe::history::EventKind;
    let bug = Bug::LostWakeup;
    let trace = Trace::read(&trace_path(bug)).unwrap();
    let run = replay(&trace, &Canary(bug)).unwrap();
    let cause = run.stuck_cause().expect("the canary's run is stuck");
    let gone = cause
        .events
        .iter()
        .find(|e| e.role.contains("the node it came to watch was gone"))
        .unwrap_or_else(|| panic!("no cause among the proving events: {cause}"));
    assert!(
        matches!(
            run.outcome.history.events[gone.index].kind,
            EventKind::OpFail {
                error: ZkError::NoNode,
                ..
            }
        ),
        "{cause}"
    );
    let text = run.report_text();
    assert!(text.contains("with a watch failed with no node"), "{text}");
    assert!(!text.contains("cut-off"), "{text}");
    let marks = SavedReport::of(&run).marks();
    assert!(marks.contains_key(&gone.index), "{marks:?}");
}
