//! An export's README.md, to paste into an issue: the versions, the steps in the
//! library's own calls, what was expected against what happened, the rate.

use super::java::{self, Library};
use super::line::RealLine;
use super::{Exported, Language, ToExport};
use zklock_recipe::history::AcquireMode;

pub(super) fn readme(
    finding: &ToExport,
    lang: Language,
    found: &RealLine,
    best: &RealLine,
    e: &Exported,
    title: &str,
    checks: &[String],
) -> String {
    let w = &best.workload;
    let rate = match (e.failed, e.runs) {
        (f, r) if f == r => format!("it failed in {f} of {r} runs"),
        (f, r) => format!("it failed in {f} of {r} runs only: the outcome turns on timing"),
    };
    let control = match e.control_passed {
        Some(_) => "With `--no-fault` (the same script, no fault injected) it passes.".to_owned(),
        None => "The finding needs no fault: `--no-fault` runs the same script.".to_owned(),
    };
    let shrunk = match e.shrunk {
        true => format!(
            "This file runs a smaller script than the search's, the smallest that still \
             fails (fewer attempts, clients or faults), as zklock runs it: `{}`.",
            e.line
        ),
        false => "No smaller script (fewer attempts, clients or faults) still fails.".to_owned(),
    };
    let files = [
        (
            "timeline.txt",
            &finding.timeline,
            "zklock's timeline of a run that found it",
        ),
        (
            "explanation.txt",
            &finding.explanation,
            "zklock's checker on each property",
        ),
        ("timeline.html", &finding.html, "the timeline as a page"),
    ];
    let files: String = files
        .iter()
        .filter(|(_, text, _)| text.is_some())
        .map(|(name, _, what)| format!("- [`{name}`]({name}): {what}\n"))
        .collect();
    let (how, error) = match lang {
        Language::Python => (
            "```sh\npython3 repro.py            # starts a ZooKeeper server of its own\n\
             ZK_HOSTS=127.0.0.1:2181 python3 repro.py   # or uses yours\n```\n\n\
             The file needs Python 3 and Kazoo alone (and, to start its own server, Java and the \
             ZooKeeper jars: `ZK_JAVA`, `ZK_JAR`). Each client is a `KazooClient` of its own, \
             connected through a small proxy in the file that injects the faults below at the \
             requests they name."
                .to_owned(),
            "AssertionError",
        ),
        Language::Java(library) => {
            let cp = java::classpath(library, std::path::Path::new(super::JAVA_LIBS_DEFAULT));
            let client = match library {
                Library::Curator => "a `CuratorFramework` of its own",
                Library::WriteLock | Library::Election => "a `ZooKeeper` handle of its own",
            };
            (
                format!(
                    "```sh\nCP={cp}\n\
                     javac -cp \"$CP\" Repro.java\n\
                     java -cp \"$CP:.\" Repro                            # starts a ZooKeeper server of its own\n\
                     ZK_HOSTS=127.0.0.1:2181 java -cp \"$CP:.\" Repro    # or uses yours\n```\n\n\
                     The file needs Java 17 and the jars above alone (Debian's, in /usr/share/java; \
                     its own server is ZooKeeper's `ZooKeeperServer` in the same JVM, on a free \
                     loopback port). Each client is {client}, connected through a small proxy in \
                     the file (plain `java.net`) that injects the faults below at the requests \
                     they name."
                ),
                "java.lang.AssertionError",
            )
        }
    };
    format!(
        "# {title}\n\n\
         ## Versions\n\n{versions}\n\n\
         ## Steps\n\n{how}\n\n\
         What it does, on sessions of {session} ms:\n\n{steps}\n\n\
         ## Expected\n\n{expected}\n\n\
         ## What happened\n\n```\n{error}: {assertion}\n```\n\n\
         Verified here: {rate}. {control}\n\n{shrunk}\n\n\
         The finding, as zklock runs it: `{found}`\n\n{files}",
        versions = e.versions,
        session = w.session_timeout_ms,
        steps = steps(lang, best),
        expected = expected(lang, &best.lock, checks),
        assertion = e.assertion,
    )
}

/// Client `i`'s lock object, in the library's terms.
fn class_of(line: &RealLine, i: u32) -> &'static str {
    let reader = i < line.workload.readers;
    match (line.lock.as_str(), reader) {
        ("kazoo-semaphore", _) => "Semaphore(max_leases=1)",
        ("kazoo-rw", true) => "ReadLock",
        ("kazoo-rw", false) => "WriteLock",
        ("curator-mutex", _) => "InterProcessMutex",
        ("curator-semaphore-mutex", _) => "InterProcessSemaphoreMutex",
        ("curator-rw", true) => "InterProcessReadWriteLock.readLock()",
        ("curator-rw", false) => "InterProcessReadWriteLock.writeLock()",
        ("curator-leader-latch", _) => "LeaderLatch",
        ("zookeeper-writelock", _) => "WriteLock",
        ("zookeeper-election", _) => "LeaderElectionSupport",
        _ => "Lock",
    }
}

/// Whether `lock` is an election, each hold a term of leadership (the driver's own word).
fn line_is_election(lock: &str) -> bool {
    zklock_real::driver::DriverKind::parse(lock).is_ok_and(|k| k.is_election())
}

/// One attempt's call, in the library's terms.
fn call(lang: Language, lock: &str, mode: AcquireMode) -> String {
    let secs = |ms: u64| ms as f64 / 1000.0;
    if lock == "curator-leader-latch" {
        return match mode {
            AcquireMode::Blocking => "a new latch's `start()` and `await()`".to_owned(),
            AcquireMode::Try => "`start()` and `await(0, MILLISECONDS)`".to_owned(),
            AcquireMode::Timeout { timeout_ms } => {
                format!("`start()` and `await({timeout_ms}, MILLISECONDS)`")
            }
            AcquireMode::Dropped { after_ms } => format!(
                "`start()` and `await()`, given up (its thread interrupted) after {after_ms} ms"
            ),
        };
    }
    match (lang, mode) {
        (Language::Python, AcquireMode::Blocking) => "`acquire()`".to_owned(),
        (Language::Python, AcquireMode::Try) => "`acquire(blocking=False)`".to_owned(),
        (Language::Python, AcquireMode::Timeout { timeout_ms }) => {
            format!("`acquire(timeout={})`", secs(timeout_ms))
        }
        (Language::Python, AcquireMode::Dropped { after_ms }) => {
            format!("`acquire()` cancelled (`cancel()`) after {after_ms} ms")
        }
        (Language::Java(Library::Curator), AcquireMode::Blocking) => "`acquire()`".to_owned(),
        (Language::Java(Library::Curator), AcquireMode::Try) => {
            "`acquire(0, MILLISECONDS)`".to_owned()
        }
        (Language::Java(Library::Curator), AcquireMode::Timeout { timeout_ms }) => {
            format!("`acquire({timeout_ms}, MILLISECONDS)`")
        }
        (Language::Java(Library::Curator), AcquireMode::Dropped { after_ms }) => {
            format!("`acquire()` given up (its thread interrupted) after {after_ms} ms")
        }
        (Language::Java(Library::WriteLock), AcquireMode::Blocking) => {
            "`lock()` and a wait for `lockAcquired()`".to_owned()
        }
        (Language::Java(Library::WriteLock), AcquireMode::Try) => {
            "`lock()` once (a try)".to_owned()
        }
        (Language::Java(Library::WriteLock), AcquireMode::Timeout { timeout_ms }) => {
            format!("`lock()` and a wait of {timeout_ms} ms for `lockAcquired()`")
        }
        (Language::Java(Library::WriteLock), AcquireMode::Dropped { after_ms }) => {
            format!("`lock()` given up (its thread interrupted) after {after_ms} ms")
        }
        (Language::Java(Library::Election), AcquireMode::Blocking) => {
            "a new `start()` and a wait for `ELECTED_COMPLETE`".to_owned()
        }
        (Language::Java(Library::Election), AcquireMode::Try) => {
            "`start()`, leading or not at its return (a try)".to_owned()
        }
        (Language::Java(Library::Election), AcquireMode::Timeout { timeout_ms }) => {
            format!("`start()` and a wait of {timeout_ms} ms for `ELECTED_COMPLETE`")
        }
        (Language::Java(Library::Election), AcquireMode::Dropped { after_ms }) => {
            format!("`start()` and a wait for `ELECTED_COMPLETE`, given up after {after_ms} ms")
        }
    }
}

/// The script in the library's terms: each client's calls, then the faults.
fn steps(lang: Language, line: &RealLine) -> String {
    let w = &line.workload;
    let (release, give_up) = match lang {
        Language::Python => (
            "`release()`",
            "the caller gives the acquire up (`cancel()`)",
        ),
        Language::Java(Library::Curator) => (
            "`release()`",
            "the caller gives the acquire up (its thread interrupted)",
        ),
        Language::Java(Library::WriteLock) => (
            "`unlock()`",
            "the caller gives the acquire up (its thread interrupted)",
        ),
        Language::Java(Library::Election) => ("`stop()`", "the caller gives the acquire up"),
    };
    let release = match line.lock.as_str() {
        "curator-leader-latch" => "`close()`",
        _ => release,
    };
    let mut out = Vec::new();
    for i in 0..w.clients {
        let calls: Vec<String> = (0..u64::from(w.attempts_per_client))
            .map(|k| {
                call(
                    lang,
                    &line.lock,
                    zklock_real::workload::mode_of(i as usize, k, w),
                )
            })
            .collect();
        let start = match w.start_stagger_ms.saturating_mul(u64::from(i)) {
            0 => String::new(),
            ms => format!(", from {ms} ms"),
        };
        out.push(format!(
            "- client {i}, a `{}` on `{}`{start}: {}; each hold {}, then {release}",
            class_of(line, i),
            w.lock_path,
            calls.join(", "),
            match w.long_hold_every {
                0 => format!("{} ms", w.hold_ms),
                1 => format!("{} ms", w.long_hold_ms),
                n => format!("{} ms ({} ms every {n}th)", w.hold_ms, w.long_hold_ms),
            }
        ));
    }
    if lang == Language::Java(Library::Election) {
        out.push(
            "- every acquire that does not lead (`FAILED`, a timeout, a give-up) calls `stop()` \
             to withdraw its offer; a give-up sets a flag the wait looks at and interrupts \
             nothing, since an interrupt inside `start()` may leave an offer it never learnt of"
                .to_owned(),
        );
    }
    if lang == Language::Java(Library::WriteLock) {
        out.push(
            "- every acquire that does not end held calls `unlock()` to withdraw its node, \
             as WriteLock's javadoc asks"
                .to_owned(),
        );
    }
    for aim in &line.aims {
        let what = match aim.action.as_str() {
            "drop-request" => {
                "is dropped before the server sees it and the connection cut (ConnectionLoss)"
                    .to_owned()
            }
            "withhold-reply" => {
                "reaches the server, its reply is withheld and the connection cut (ConnectionLoss)"
                    .to_owned()
            }
            "expire" => {
                "is dropped, the connection cut, and the session closed at the server before the client reconnects (SessionExpired)"
                    .to_owned()
            }
            _ => format!("is held 1 s while {give_up}, then goes on"),
        };
        let which = match aim.repeat {
            zklock_real::plan::Repeat::Once => format!("request {} of", aim.nth),
            zklock_real::plan::Repeat::Next(n) => {
                format!("requests {} to {} of", aim.nth, aim.nth + n - 1)
            }
            zklock_real::plan::Repeat::WindowMs(ms) => {
                format!("for {ms} ms from request {} of", aim.nth)
            }
        };
        out.push(format!(
            "- the fault: client {}'s {which} its `{}` requests under `{}` {what}",
            aim.client, aim.op, aim.under
        ));
    }
    if line.aims.is_empty() {
        out.push("- no fault".to_owned());
    }
    out.join("\n")
}

fn expected(lang: Language, lock: &str, checks: &[String]) -> String {
    let (timed, blocking, granted) = match lang {
        _ if lock == "curator-leader-latch" => (
            "`await(T, MILLISECONDS)` returns",
            "a blocking `await()` is served",
            "`await()` returns (true)",
        ),
        Language::Python => (
            "`acquire(timeout=T)` returns",
            "a blocking `acquire()` is served",
            "`acquire()` returns True",
        ),
        Language::Java(Library::Curator) => (
            "`acquire(T, MILLISECONDS)` returns",
            "a blocking `acquire()` is served",
            "`acquire()` returns (true)",
        ),
        Language::Java(Library::WriteLock) => (
            "a timed wait for `lockAcquired()` ends",
            "`lockAcquired()` comes to a waiting `lock()`",
            "`lock()` returns true (or `lockAcquired()` comes)",
        ),
        Language::Java(Library::Election) => (
            "a timed wait for `ELECTED_COMPLETE` ends",
            "`ELECTED_COMPLETE` comes to a waiting contender",
            "`ELECTED_COMPLETE` comes",
        ),
    };
    let lines: Vec<String> = checks
        .iter()
        .map(|p| match p.as_str() {
            "node_outlives_attempt" => format!(
                "- an acquire that fails, times out or is {} leaves no node behind: its cleanup \
                 deletes it, or the session ends",
                match lang {
                    Language::Python => "cancelled",
                    Language::Java(_) => "given up",
                }
            ),
            "timed_acquire_in_time" => {
                format!("- {timed} within T (and a second of grace for its cleanup)")
            }
            "mutual_exclusion" if line_is_election(lock) => {
                "- no two clients lead at once".to_owned()
            }
            "mutual_exclusion" => "- no two clients hold the lock at once".to_owned(),
            "liveness_after_heal" => format!(
                "- {blocking} within twice the session timeout and 1 s of its start, the last \
                 fault and the last release, unless another client holds"
            ),
            _ => format!("- {granted} only while the client's own node exists"),
        })
        .collect();
    lines.join("\n")
}
