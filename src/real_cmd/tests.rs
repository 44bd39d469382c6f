//! `zklock real`'s parsing, refusals and verdicts, without a server unless a test says so.
use super::*;
use crate::cli::{Cli, Command};
use crate::real_recipes::RealRecipeKind;
use clap::Parser;

/// `zklock real LIST...`'s arguments, and the flags given.
fn args(list: &[&str]) -> (RealArgs, Given) {
    use clap::FromArgMatches;
    let all: Vec<&str> = ["zklock", "real"].iter().chain(list).copied().collect();
    let m = crate::cli::command().try_get_matches_from(all).unwrap();
    let given = Given::of(m.subcommand().unwrap().1);
    match Cli::from_arg_matches(&m).unwrap().command {
        Some(Command::Real(a)) => (a, given),
        other => panic!("{other:?}"),
    }
}

fn parse((a, given): (RealArgs, Given)) -> Result<RealOptions> {
    super::parse(a, &given, &RealRecipes::default())
}

fn run((a, given): (RealArgs, Given)) -> Result<Status> {
    let program = Program::new(None, None, None);
    super::run(a, &given, &program, &RealRecipes::default())
}

/// `real --items 5` on a lock was taken and ignored: every flag that does not apply
/// to the recipe, lock or setup chosen is refused, naming itself.
#[test]
fn flags_that_do_not_apply_to_the_recipe_are_refused_not_ignored() {
    for (bad, says) in [
        (
            &["--items", "5"][..],
            "--items does not apply to the zklock recipe",
        ),
        (&["--producers", "2"], "--producers does not apply"),
        (
            &["--recipe", "semaphore", "--items", "5"],
            "--items does not apply",
        ),
        (
            &["--lock", "kazoo-lock", "--items", "5"],
            "--items does not apply to --lock",
        ),
        (
            &["--recipe", "queue", "--drop-every", "2"],
            "--drop-every does not apply to the work queue",
        ),
        (
            &["--recipe", "queue", "--mix-offset", "1"],
            "--mix-offset does not apply",
        ),
        (
            &["--recipe", "queue", "--acquire-timeout-ms", "9"],
            "--acquire-timeout-ms does not apply",
        ),
        (
            &["--allow-foreign-naming"],
            "--allow-foreign-naming does not apply",
        ),
        (
            &["--lock", "curator-mutex", "--revokers", "1"],
            "--revokers: only zklock's lock can be asked to give up",
        ),
        (
            &["--recipe", "semaphore", "--revokers", "1"],
            "--revokers: only zklock's lock can be asked to give up",
        ),
        (
            &["--clients", "2", "--readers", "1", "--revokers", "1"],
            "leave no writer",
        ),
        (
            &["--connect", "127.0.0.1:2181", "--ensemble", "3"],
            "--ensemble does not apply",
        ),
        (
            &["--restart-killed-leader"],
            "--restart-killed-leader does not apply",
        ),
        (
            &["--warm-up-runs", "1"],
            "--warm-up-runs: warms a released library's driver",
        ),
        (
            &["--lock", "kazoo-lock", "--warm-up-runs", "11"],
            "--warm-up-runs: 0 to 10, got 11",
        ),
        (
            &[
                "--ensemble",
                "3",
                "--faults",
                "cut",
                "--restart-killed-leader",
            ],
            "--restart-killed-leader does not apply",
        ),
    ] {
        let e = format!("{:#}", parse(args(bad)).unwrap_err());
        assert!(e.contains(says), "{bad:?}: {e}");
    }
    // Where they apply, they are taken.
    for good in [
        &["--recipe", "queue", "--items", "5", "--producers", "2"][..],
        &["--items", "20", "--recipe", "canary-queue-no-exists-check"],
        &[
            "--drop-every",
            "2",
            "--mix-offset",
            "1",
            "--acquire-timeout-ms",
            "9",
        ],
        &["--lock", "zklock,curator-mutex", "--allow-foreign-naming"],
        &["--ensemble", "3", "--restart-killed-leader"],
        &["--connect", "127.0.0.1:2181"],
        &["--lock", "curator-mutex", "--warm-up-runs", "10"],
    ] {
        assert!(parse(args(good)).is_ok(), "{good:?}");
    }
}

#[test]
fn an_unreachable_server_is_a_clear_error_within_the_connect_timeout() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let started = Instant::now();
    let outcome = run(args(&[
        "--connect",
        &addr,
        "--connect-timeout-ms",
        "1000",
        "--duration",
        "5s",
    ]));
    let message = format!("{:#}", outcome.expect_err("nothing listens there"));
    assert!(
        message.contains("no ZooKeeper server") && message.contains(&addr),
        "{message}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_lock_and_aimed_faults_are_checked_before_anything_runs() {
    let o = parse(args(&["--lock", "kazoo-lock"])).unwrap();
    assert_eq!(o.driver, Some(DriverKind::KazooLock));
    assert_eq!(parse(args(&[])).unwrap().driver, None);
    let e = parse(args(&["--lock", "redlock"])).unwrap_err();
    assert!(e.to_string().contains("curator-mutex"), "{e}");
    let o = parse(args(&["--lock", "zklock,curator-mutex,zkclient-lock"])).unwrap();
    assert_eq!(o.mix.map(|m| m.len()), Some(3));
    assert_eq!(
        parse(args(&["--lock", "kazoo-lock,kazoo-lock"]))
            .unwrap()
            .mix,
        None
    );
    let e = parse(args(&["--lock", "curator-mutex,kazoo-lock"])).unwrap_err();
    assert!(e.to_string().contains("do not interoperate"), "{e}");
    let forced = [
        "--lock",
        "curator-mutex,kazoo-lock",
        "--allow-foreign-naming",
    ];
    assert!(parse(args(&forced)).unwrap().mix.is_some());
    let e = parse(args(&["--lock", "zklock,kazoo-rw"])).unwrap_err();
    assert!(e.to_string().contains("cannot be mixed"), "{e}");
    let e = parse(args(&["--lock", "zklock,redlock"])).unwrap_err();
    assert!(e.to_string().contains("unknown lock"), "{e}");
    let e = parse(args(&["--lock", "zklock,curator-mutex", "--readers", "1"])).unwrap_err();
    assert!(e.to_string().contains("no read side"), "{e}");
    let e = parse(args(&["--lock", "kazoo-lock", "--readers", "1"])).unwrap_err();
    assert!(e.to_string().contains("no read side"), "{e}");
    assert!(parse(args(&["--lock", "curator-rw", "--readers", "2"])).is_ok());
    let o = parse(args(&["--aim", "1:drop-request:get-children:/zklock/lock"])).unwrap();
    assert_eq!(o.faults.aimed.len(), 1);
    assert_eq!(o.faults.aimed[0].0, 1);
    assert_eq!(o.faults.aimed[0].1.action, AimedAction::DropRequest);
    let o = parse(args(&["--aim", "0:expire:delete:/zklock/lock/"])).unwrap();
    assert_eq!(o.faults.aimed[0].1.action, AimedAction::Expire);
    // An ordinal and a repetition, and every point the search prints reads back.
    let o = parse(args(&[
        "--aim",
        "0:drop-request:delete:/zklock/lock/:2:3000ms",
    ]))
    .unwrap();
    let aimed = &o.faults.aimed[0].1;
    assert_eq!((aimed.skip, aimed.repeat), (1, Repeat::WindowMs(3_000)));
    assert_eq!(
        aimed.to_string(),
        "drop-request:delete:/zklock/lock/:2:3000ms"
    );
    for spec in [
        "1:withhold-reply:create:/zklock/lock/:3:4",
        "0:pause-9000ms:get-children:/zklock/lock:2",
        "0:crash:get-data:/zklock/lock-__lock__/",
        "1:give-up:delete:/zklock/lock/locks/:2",
    ] {
        let o = parse(args(&["--aim", spec])).unwrap();
        let (client, fault) = &o.faults.aimed[0];
        assert_eq!(format!("{client}:{fault}"), spec);
    }
    let o = parse(args(&[
        "--aim",
        "0:pause:delete:/x",
        "--session-timeout-ms",
        "3000",
    ]))
    .unwrap();
    let pause = AimedAction::Pause { pause_ms: 6_000 };
    assert_eq!(o.faults.aimed[0].1.action, pause);
    // An outage lasts as a pause does, or as long as it says.
    let o = parse(args(&["--aim", "0:outage:delete:/x"])).unwrap();
    assert!(matches!(
        o.faults.aimed[0].1.action,
        AimedAction::Outage { .. }
    ));
    let o = parse(args(&["--aim", "1:outage-2500ms:create:/zklock/lock/"])).unwrap();
    let (client, fault) = &o.faults.aimed[0];
    assert_eq!(fault.action, AimedAction::Outage { down_ms: 2_500 });
    assert_eq!(
        format!("{client}:{fault}"),
        "1:outage-2500ms:create:/zklock/lock/"
    );
    // An isolation too: twice the session timeout (3 s here), or as long as it says.
    let o = parse(args(&[
        "--aim",
        "0:isolate:exists:/x",
        "--session-timeout-ms",
        "3000",
    ]))
    .unwrap();
    assert_eq!(
        o.faults.aimed[0].1.action,
        AimedAction::Isolate { isolated_ms: 6_000 }
    );
    let o = parse(args(&["--aim", "2:isolate-9s:get-children:/zklock/"])).unwrap();
    let (client, fault) = &o.faults.aimed[0];
    assert_eq!(fault.action, AimedAction::Isolate { isolated_ms: 9_000 });
    assert_eq!(
        format!("{client}:{fault}"),
        "2:isolate-9000ms:get-children:/zklock/"
    );
    // A burst: 4 cuts, or as many as it says.
    let o = parse(args(&["--aim", "0:burst:get-children:/x"])).unwrap();
    assert_eq!(o.faults.aimed[0].1.action, AimedAction::Burst { cuts: 4 });
    let o = parse(args(&["--aim", "1:burst-7:exists:/zklock/lock/"])).unwrap();
    let (client, fault) = &o.faults.aimed[0];
    assert_eq!(fault.action, AimedAction::Burst { cuts: 7 });
    assert_eq!(
        format!("{client}:{fault}"),
        "1:burst-7:exists:/zklock/lock/"
    );
    for (bad, says) in [
        ("0:drop-request:delete:/x:0", "NTH must be 1 to"),
        ("0:drop-request:delete:/x:1:0", "REPEAT must be 1 to"),
        ("0:pause-forever:delete:/x", "unknown action"),
        ("0:outage-0ms:delete:/x", "unknown action"),
        ("0:isolate-61m:delete:/x", "unknown action"),
        ("0:burst-0:delete:/x", "unknown action"),
        ("0:burst-101:delete:/x", "unknown action"),
        ("9:drop-request:delete:/x", "client must be 0 to 4"),
        ("0:explode:delete:/x", "unknown action"),
        ("0:drop-request:sync:/x", "unknown operation"),
        ("0:drop-request:delete:relative", "must start with /"),
        ("0:drop-request", "CLIENT:ACTION:OP:PATH"),
    ] {
        let e = parse(args(&["--aim", bad])).unwrap_err();
        assert!(e.to_string().contains(says), "{bad}: {e}");
    }
}

#[test]
fn a_recipe_and_several_locks_are_checked_before_anything_runs() {
    let o = parse(args(&[
        "--recipe",
        "semaphore",
        "--locks",
        "3",
        "--seed",
        "9",
    ]))
    .unwrap();
    assert_eq!(o.recipe.kind(), Some(RealRecipeKind::Semaphore));
    assert_eq!((o.workload.locks, o.workload.lock_seed), (3, 9));
    assert_eq!(
        parse(args(&[])).unwrap().recipe.kind(),
        Some(RealRecipeKind::Shipped)
    );
    let o = parse(args(&["--recipe", "canary-lease-outside-lock"])).unwrap();
    assert_eq!(o.recipe.must_violate(), Some("semaphore_leases"));
    for (bad, says) in [
        (&["--recipe", "queue-of-dreams"][..], "unknown recipe"),
        (&["--recipe", "semaphore", "--readers", "1"], "no read side"),
        (
            &["--lock", "kazoo-lock", "--locks", "2"],
            "one lock directory",
        ),
        (&["--locks", "65"], "locks must be 1 to 64"),
        (&["--locks", "0"], "locks must be 1 to 64"),
    ] {
        let e = format!("{:#}", parse(args(bad)).unwrap_err());
        assert!(e.contains(says), "{bad:?}: {e}");
    }
    let o = parse(args(&[
        "--recipe",
        "queue-naive",
        "--producers",
        "2",
        "--items",
        "5",
        "--drain-timeout-ms",
        "20000",
    ]))
    .unwrap();
    assert_eq!(o.recipe.kind(), Some(RealRecipeKind::Queue { naive: true }));
    assert_eq!((o.queue.producers, o.queue.items_per_producer), (2, 5));
    assert_eq!(o.workload.drain_timeout_ms, 20_000);
    for (bad, says) in [
        (
            &["--recipe", "queue", "--producers", "5"][..],
            "producers must be 1 to 4",
        ),
        (
            &["--recipe", "queue", "--producers", "0"],
            "producers must be 1 to 4",
        ),
        (
            &["--recipe", "queue", "--items", "0"],
            "items per producer must be 1 to 10000",
        ),
        (
            &["--recipe", "queue", "--items", "10001"],
            "items per producer must be 1 to 10000",
        ),
        (
            &["--recipe", "queue", "--clients", "1"],
            "at least 2 clients",
        ),
        (&["--recipe", "queue", "--locks", "2"], "one queue"),
        (&["--recipe", "queue", "--readers", "1"], "no read side"),
        (
            &["--drain-timeout-ms", "3600001"],
            "drain_timeout_ms must be at most",
        ),
    ] {
        let e = format!("{:#}", parse(args(bad)).unwrap_err());
        assert!(e.contains(says), "{bad:?}: {e}");
    }
    // One recipe or one library's lock, not both.
    let both = [
        "zklock",
        "real",
        "--recipe",
        "semaphore",
        "--lock",
        "kazoo-lock",
    ];
    assert!(Cli::try_parse_from(both).is_err());
}

/// `real --duration 1ms` ran no acquisition and said "ok: every property held
/// (0 checked acquisitions)", exit status 0.
#[test]
fn a_real_run_that_checked_nothing_is_inconclusive() {
    let made = |acquisitions, acquire_failures| {
        let c = zklock_checker::Counters {
            acquisitions,
            acquire_failures,
            ..Default::default()
        };
        Exercised::of_counters(&c, 1)
    };
    assert_eq!(verdict(true, false, &made(0, 0)), Status::Inconclusive);
    assert_eq!(verdict(true, false, &made(1, 0)), Status::Held);
    assert_eq!(verdict(true, true, &made(5, 0)), Status::Inconclusive);
    assert_eq!(verdict(false, false, &made(0, 0)), Status::Violated);
    assert_eq!(verdict(false, true, &made(5, 0)), Status::Violated);
    // Every acquire failed: as the sweep and the check judge it.
    assert_eq!(verdict(true, false, &made(0, 7)), Status::Inconclusive);
    // A queue's run counts items processed, not acquisitions.
    let queue = zklock_checker::Counters {
        acquisitions: 3,
        queue: Some(Default::default()),
        ..Default::default()
    };
    let queue = Exercised::of_counters(&queue, 1);
    assert_eq!(verdict(true, false, &queue), Status::Inconclusive);
}

#[test]
fn durations_take_units() {
    let ms = |s: &str| parse_duration_ms("--duration", s).unwrap();
    assert_eq!(
        (ms("30s"), ms("1500ms"), ms("2m"), ms("7")),
        (30_000, 1_500, 120_000, 7_000)
    );
    assert!(parse_duration_ms("--duration", "soon").is_err());
}

#[test]
fn all_faults_fit_the_setup_and_heal_before_the_end() {
    let o = parse(args(&["--clients", "3", "--duration", "9s", "--seed", "4"])).unwrap();
    assert!(!o.faults.faults.contains(RealFault::KillLeader));
    assert!(o.faults.faults.contains(RealFault::BlackHole));
    assert_eq!((o.faults.heal_ms, o.faults.seed), (6_000, 4));
    let o = parse(args(&["--ensemble", "3"])).unwrap();
    assert!(o.faults.faults.contains(RealFault::KillLeader));
    let e = parse(args(&["--faults", "kill-leader"])).unwrap_err();
    assert!(e.to_string().contains("--ensemble 3"), "{e}");
    let o = parse(args(&["--connect", "127.0.0.1:2181", "--faults", "cut"])).unwrap();
    assert!(o.workload.lock_path.starts_with("/zklock/real-"));
    assert!(parse(args(&["--clients", "65"])).is_err());
    assert!(parse(args(&["--faults", "gremlins"])).is_err());
    assert_eq!(parse(args(&[])).unwrap().workload.mix_offset, 0);
    let o = parse(args(&["--mix-offset", "2"])).unwrap();
    assert_eq!(o.workload.mix_offset, 2);
    assert!(Cli::try_parse_from(["zklock", "real", "--mix-offset", "timed"]).is_err());
    let o = parse(args(&["--acquire-timeout-ms", "20"])).unwrap();
    assert_eq!(o.workload.acquire_timeout_ms, 20);
    // The help's range (1 to MAX_ENSEMBLE_SIZE) is the one accepted.
    assert!(parse(args(&["--ensemble", &MAX_ENSEMBLE_SIZE.to_string()])).is_ok());
    for bad in [0, MAX_ENSEMBLE_SIZE + 1] {
        let e = parse(args(&["--ensemble", &bad.to_string()])).unwrap_err();
        let says = format!("--ensemble must be 1 to {MAX_ENSEMBLE_SIZE}");
        assert!(e.to_string().contains(&says), "{e}");
    }
}
