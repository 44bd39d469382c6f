//! One test per ZooKeeper rule the simulated world must honour, at the client level.
//! (Rules of the data tree alone are pinned in `zklock_sim::tree`'s unit tests.)

use futures_util::future::join;
use std::time::Duration;
use zklock_recipe::{Coordination, CreateMode, EventType, Op, SessionState, ZkError};
use zklock_sim::{SimConfig, run};

const T_MS: u64 = 6000; // the default session timeout

fn cfg(seed: u64) -> SimConfig {
    SimConfig::with_seed(seed)
}

#[test]
fn watch_event_precedes_later_response() {
    run(cfg(1), |sim| async move {
        let a = sim.client();
        let b = sim.client();
        let (stat, mut w) = a.exists_watch("/x").await.unwrap();
        assert!(stat.is_none());
        b.create("/x", b"", CreateMode::Persistent).await.unwrap();
        // A's next reply comes after the NodeCreated event on A's connection.
        a.get_data("/x").await.unwrap();
        let ev = w
            .try_take()
            .expect("watch fired before the later reply")
            .unwrap();
        assert_eq!(ev.event_type, EventType::NodeCreated);
        assert_eq!(ev.path, "/x");
    })
    .unwrap();
}

#[test]
fn requests_of_one_client_apply_in_order() {
    for seed in 0..20 {
        run(cfg(seed), |sim| async move {
            let a = sim.client();
            let b = sim.client();
            // Issued together: if the server reordered them, the child create would fail.
            let (r1, r2) = join(
                a.create("/p", b"", CreateMode::Persistent),
                a.create("/p/c", b"", CreateMode::Persistent),
            )
            .await;
            r1.unwrap();
            r2.unwrap();
            // B's interleaving does not break A's order either.
            let (r3, r4) = join(a.delete("/p/c", None), b.get_children("/p")).await;
            r3.unwrap();
            assert!(r4.is_ok());
        })
        .unwrap();
    }
}

#[test]
fn watches_are_one_shot() {
    run(cfg(2), |sim| async move {
        let a = sim.client();
        a.create("/x", b"1", CreateMode::Persistent).await.unwrap();
        let (_, _, w) = a.get_data_watch("/x").await.unwrap();
        a.set_data("/x", b"2", None).await.unwrap();
        assert_eq!(w.await.unwrap().event_type, EventType::NodeDataChanged);
        // No watch is left: a second change fires nothing, and a new watch sees only
        // what happens after it was set.
        a.set_data("/x", b"3", None).await.unwrap();
        let (_, _, mut w2) = a.get_data_watch("/x").await.unwrap();
        a.exists("/x").await.unwrap();
        assert!(w2.try_take().is_none());
        a.delete("/x", None).await.unwrap();
        assert_eq!(w2.await.unwrap().event_type, EventType::NodeDeleted);
    })
    .unwrap();
}

#[test]
fn child_watch_fires_node_children_changed() {
    run(cfg(3), |sim| async move {
        let a = sim.client();
        let b = sim.client();
        a.create("/d", b"", CreateMode::Persistent).await.unwrap();
        let (kids, w) = a.get_children_watch("/d").await.unwrap();
        assert!(kids.is_empty());
        b.create("/d/k", b"", CreateMode::Ephemeral).await.unwrap();
        let ev = w.await.unwrap();
        assert_eq!(ev.event_type, EventType::NodeChildrenChanged);
        assert_eq!(ev.path, "/d");
    })
    .unwrap();
}

#[test]
fn sequential_suffix_comes_from_parent_cversion_through_the_client() {
    run(cfg(4), |sim| async move {
        let a = sim.client();
        a.create("/s", b"", CreateMode::Persistent).await.unwrap();
        a.create("/s/plain", b"", CreateMode::Persistent)
            .await
            .unwrap();
        // One child create so far: the next sequential child is numbered 1.
        let (p, _) = a
            .create("/s/n-", b"", CreateMode::EphemeralSequential)
            .await
            .unwrap();
        assert_eq!(p, "/s/n-0000000001");
        let (q, _) = a
            .create("/s/n-", b"", CreateMode::EphemeralSequential)
            .await
            .unwrap();
        assert_eq!(q, "/s/n-0000000002");
    })
    .unwrap();
}

#[test]
fn conditional_writes_check_the_version() {
    run(cfg(5), |sim| async move {
        let a = sim.client();
        a.create("/v", b"0", CreateMode::Persistent).await.unwrap();
        let s1 = a.set_data("/v", b"1", Some(0)).await.unwrap();
        assert_eq!(s1.version, 1);
        assert_eq!(
            a.set_data("/v", b"x", Some(0)).await,
            Err(ZkError::BadVersion)
        );
        assert_eq!(a.delete("/v", Some(0)).await, Err(ZkError::BadVersion));
        a.delete("/v", Some(1)).await.unwrap();
    })
    .unwrap();
}

#[test]
fn multi_is_atomic_through_the_client() {
    run(cfg(6), |sim| async move {
        let a = sim.client();
        let before = sim.server_paths();
        let r = a
            .multi(vec![
                Op::Create {
                    path: "/m".into(),
                    data: vec![],
                    mode: CreateMode::Persistent,
                },
                Op::Check {
                    path: "/nope".into(),
                    version: 0,
                },
            ])
            .await;
        assert!(
            matches!(r, Err(ZkError::MultiFailed { index: 1, .. })),
            "{r:?}"
        );
        assert_eq!(sim.server_paths(), before);
    })
    .unwrap();
}

#[test]
fn invalid_paths_are_bad_arguments() {
    run(cfg(7), |sim| async move {
        let a = sim.client();
        for p in ["", "x", "/a/", "/a//b", "/a/./b"] {
            let r = a.create(p, b"", CreateMode::Persistent).await;
            assert!(matches!(r, Err(ZkError::BadArguments(_))), "{p:?}: {r:?}");
        }
    })
    .unwrap();
}

/// As on a real server (real/tests/real_server.rs checks the same on ZooKeeper): closing
/// deletes the session's ephemerals while its connection is still registered, so its own
/// watches on them fire NodeDeleted; its other watches end with SessionClosed.
#[test]
fn a_closing_session_hears_its_own_ephemerals_deleted() {
    run(cfg(81), |sim| async move {
        let a = sim.client();
        a.create("/p", b"", CreateMode::Persistent).await.unwrap();
        a.create("/e", b"", CreateMode::Ephemeral).await.unwrap();
        let (_, _, own) = a.get_data_watch("/e").await.unwrap();
        let (_, other) = a.exists_watch("/p").await.unwrap();
        a.close().await.unwrap();
        let own = own.await.unwrap();
        assert_eq!(
            (own.event_type, own.path.as_str()),
            (EventType::NodeDeleted, "/e")
        );
        assert_eq!(other.await, Err(ZkError::SessionClosed));
    })
    .unwrap();
}

#[test]
fn ephemerals_go_atomically_when_the_session_closes() {
    run(cfg(8), |sim| async move {
        let a = sim.client();
        let b = sim.client();
        b.create("/e", b"", CreateMode::Persistent).await.unwrap();
        for _ in 0..3 {
            a.create("/e/n-", b"", CreateMode::EphemeralSequential)
                .await
                .unwrap();
        }
        let (_, w) = b.get_children_watch("/e").await.unwrap();
        a.close().await.unwrap();
        assert_eq!(w.await.unwrap().event_type, EventType::NodeChildrenChanged);
        assert!(sim.server_children("/e").is_empty());
        assert_eq!(a.session_state(), SessionState::Closed);
        assert_eq!(a.exists("/e").await, Err(ZkError::SessionClosed));
    })
    .unwrap();
}

#[test]
fn idle_connected_session_never_expires() {
    // Pings keep a connected session alive however long it idles.
    run(cfg(9), |sim| async move {
        let a = sim.client();
        a.create("/idle", b"", CreateMode::Ephemeral).await.unwrap();
        a.sleep(Duration::from_millis(10 * T_MS)).await;
        assert_eq!(a.session_state(), SessionState::Connected);
        assert!(a.exists("/idle").await.unwrap().is_some());
    })
    .unwrap();
}

#[test]
fn disconnected_at_two_thirds_and_expired_after_the_timeout() {
    run(cfg(10), |sim| async move {
        let a = sim.client();
        let b = sim.client();
        a.create("/eph", b"", CreateMode::Ephemeral).await.unwrap();
        let (_, w) = b.exists_watch("/eph").await.unwrap();
        let mut events = a.session_events();
        let t0 = sim.now();
        sim.partition(&a, Duration::from_millis(3 * T_MS));
        assert_eq!(events.next().await, Some(SessionState::Disconnected));
        assert_eq!(sim.now() - t0, Duration::from_millis(T_MS * 2 / 3));
        // While disconnected, requests fail at once.
        assert_eq!(a.exists("/eph").await, Err(ZkError::ConnectionLoss));
        // The server expires the session after the full timeout; B sees the node go.
        assert_eq!(w.await.unwrap().event_type, EventType::NodeDeleted);
        assert_eq!(sim.now() - t0, Duration::from_millis(T_MS));
        // After the partition heals, A learns it expired.
        assert_eq!(events.next().await, Some(SessionState::Expired));
        assert!(sim.now() - t0 >= Duration::from_millis(3 * T_MS));
        assert_eq!(a.exists("/eph").await, Err(ZkError::SessionExpired));
    })
    .unwrap();
}

#[test]
fn reconnect_within_timeout_resumes_the_session_and_its_watches() {
    run(cfg(11), |sim| async move {
        let a = sim.client();
        let b = sim.client();
        a.create("/mine", b"", CreateMode::Ephemeral).await.unwrap();
        b.create("/other", b"", CreateMode::Persistent)
            .await
            .unwrap();
        let (_, w) = a.exists_watch("/other").await.unwrap();
        let mut events = a.session_events();
        sim.disconnect(&a);
        assert_eq!(events.next().await, Some(SessionState::Disconnected));
        b.delete("/other", None).await.unwrap();
        assert_eq!(events.next().await, Some(SessionState::Connected));
        // The watch survived the reconnect and reports what happened meanwhile.
        assert_eq!(w.await.unwrap().event_type, EventType::NodeDeleted);
        assert!(
            a.exists("/mine").await.unwrap().is_some(),
            "the session lived on"
        );
    })
    .unwrap();
}

#[test]
fn in_flight_requests_end_unknown_either_way() {
    // Connection loss with a request in flight: the caller gets ConnectionLoss, and the
    // request was applied or not as the chooser decided. Across seeds, both happen.
    let mut applied = [false, false];
    for seed in 0..40 {
        let was = run(cfg(seed), |sim| async move {
            let a = sim.client();
            let (r, ()) = join(a.create("/f", b"", CreateMode::Persistent), async {
                sim.disconnect(&a);
            })
            .await;
            assert_eq!(r, Err(ZkError::ConnectionLoss));
            sim.server_stat("/f").is_some()
        })
        .unwrap();
        applied[was as usize] = true;
    }
    assert_eq!(applied, [true, true], "both fates must be reachable");
}

#[test]
fn lost_create_response_applies_the_create() {
    run(cfg(12), |sim| async move {
        let a = sim.client();
        sim.lose_next_create_response(&a);
        let r = a.create("/lost", b"", CreateMode::Ephemeral).await;
        assert_eq!(r, Err(ZkError::ConnectionLoss));
        let stat = sim.server_stat("/lost").expect("the create was applied");
        assert_eq!(stat.ephemeral_owner, a.session_id().0);
    })
    .unwrap();
}

#[test]
fn forced_expiry_deletes_ephemerals_and_fails_watches() {
    run(cfg(13), |sim| async move {
        let a = sim.client();
        let b = sim.client();
        b.create("/w", b"", CreateMode::Persistent).await.unwrap();
        a.create("/a-eph", b"", CreateMode::Ephemeral)
            .await
            .unwrap();
        let (_, w) = a.exists_watch("/w").await.unwrap();
        let mut events = a.session_events();
        sim.expire(&a);
        b.exists("/w").await.unwrap();
        assert!(sim.server_stat("/a-eph").is_none(), "ephemerals go at once");
        assert_eq!(events.next().await, Some(SessionState::Disconnected));
        assert_eq!(events.next().await, Some(SessionState::Expired));
        assert_eq!(events.next().await, None, "Expired is final");
        assert_eq!(w.await, Err(ZkError::SessionExpired));
    })
    .unwrap();
}

/// Curator's own session timer (and its KillSession) declare a session expired in the
/// client while the server still holds it: the old session's ephemerals stand for a
/// session timeout, a new session sees them, and the old watches tell it nothing.
#[test]
fn local_expiry_leaves_the_old_session_to_the_server() {
    run(cfg(16), |sim| async move {
        let a = sim.client();
        let b = sim.client();
        b.create("/w", b"", CreateMode::Persistent).await.unwrap();
        a.create("/a-eph", b"", CreateMode::Ephemeral)
            .await
            .unwrap();
        let (_, old_watch) = a.exists_watch("/w").await.unwrap();
        let (_, gone) = b.exists_watch("/a-eph").await.unwrap();
        let mut events = a.session_events();
        let t0 = sim.now();
        sim.expire_locally(&a);
        b.exists("/w").await.unwrap();
        assert_eq!(events.next().await, Some(SessionState::Expired));
        assert_eq!(events.next().await, None, "Expired is final");
        assert_eq!(old_watch.await, Err(ZkError::SessionExpired));
        assert_eq!(a.exists("/w").await, Err(ZkError::SessionExpired));
        let a2 = sim.renew_session(&a).await.expect("the session ended");
        let old = a.session_id().0;
        let stat = a2
            .exists("/a-eph")
            .await
            .unwrap()
            .expect("the server still holds it");
        assert_eq!(stat.ephemeral_owner, old);
        assert_ne!(a2.session_id().0, old);
        // A change the old session watched reaches nobody: not a watch the new session
        // sets after it.
        b.set_data("/w", b"x", None).await.unwrap();
        let (_, mut new_watch) = a2.exists_watch("/w").await.unwrap();
        b.exists("/w").await.unwrap();
        a2.exists("/w").await.unwrap();
        assert!(
            new_watch.try_take().is_none(),
            "an old session's event fired it"
        );
        // The server hears nothing from the closed handle: a session timeout later, the
        // old session's ephemerals go.
        assert_eq!(gone.await.unwrap().event_type, EventType::NodeDeleted);
        assert_eq!(sim.now() - t0, Duration::from_millis(T_MS));
        assert_eq!(a2.session_state(), SessionState::Connected);
    })
    .unwrap();
}

/// Requests in flight when the client library gives up on its session fail with
/// SessionExpired, as ZooKeeper's client fails every pending request once its handle is
/// closed; the chooser decides which reached the server, and those stand.
#[test]
fn local_expiry_fails_requests_in_flight_with_session_expired() {
    let mut applied = [false; 2];
    for seed in 0..40 {
        let got = run(cfg(seed), |sim| async move {
            let a = sim.client();
            let create = a.create("/in-flight", b"", CreateMode::Persistent);
            let expire = async {
                sim.expire_locally(&a);
            };
            let (r, ()) = join(create, expire).await;
            assert_eq!(r, Err(ZkError::SessionExpired));
            sim.server_stat("/in-flight").is_some()
        })
        .unwrap();
        applied[got as usize] = true;
    }
    assert_eq!(applied, [true, true], "both outcomes occur across seeds");
}

#[test]
fn pause_longer_than_the_session_resumes_believing_then_learns_expired() {
    run(cfg(14), |sim| async move {
        let a = sim.client();
        let b = sim.client();
        a.create("/held", b"", CreateMode::Ephemeral).await.unwrap();
        let (_, w) = b.exists_watch("/held").await.unwrap();
        let mut events = a.session_events();
        let t0 = sim.now();
        sim.pause(&a, Duration::from_millis(2 * T_MS));
        // The server expires A while it is frozen.
        assert_eq!(w.await.unwrap().event_type, EventType::NodeDeleted);
        assert_eq!(sim.now() - t0, Duration::from_millis(T_MS));
        // A's own sleep ends only when it resumes, still believing it is connected...
        a.sleep(Duration::from_millis(1)).await;
        assert!(sim.now() - t0 >= Duration::from_millis(2 * T_MS));
        // ...and then its library notices: Disconnected, then Expired.
        assert_eq!(events.next().await, Some(SessionState::Disconnected));
        assert_eq!(events.next().await, Some(SessionState::Expired));
    })
    .unwrap();
}

/// A paused process's client library runs no more than its code: a partition's read
/// timeout that passes during the pause is noticed at the resume, not while paused, and
/// a process that crashes behind a partition never hears of it.
#[test]
fn a_paused_client_notices_a_partition_only_when_it_resumes() {
    run(cfg(16), |sim| async move {
        let a = sim.client();
        let mut events = a.session_events();
        let t0 = sim.now();
        sim.partition(&a, Duration::from_millis(3 * T_MS));
        // The read timeout passes at 2/3 of the session timeout, inside the pause, which
        // alone is too short for the library to drop the connection at its end.
        sim.sleep(Duration::from_millis(T_MS / 2)).await;
        sim.pause(&a, Duration::from_millis(T_MS / 3));
        assert_eq!(events.next().await, Some(SessionState::Disconnected));
        assert_eq!(sim.now() - t0, Duration::from_millis(T_MS / 2 + T_MS / 3));
    })
    .unwrap();
    run(cfg(17), |sim| async move {
        let a = sim.client();
        let b = sim.client();
        a.create("/c", b"", CreateMode::Ephemeral).await.unwrap();
        let (_, w) = b.exists_watch("/c").await.unwrap();
        let mut events = a.session_events();
        sim.partition(&a, Duration::from_millis(3 * T_MS));
        sim.crash(&a);
        assert_eq!(w.await.unwrap().event_type, EventType::NodeDeleted);
        sim.sleep(Duration::from_millis(4 * T_MS)).await;
        assert_eq!(
            events.try_next(),
            None,
            "a crashed client heard of its session"
        );
    })
    .unwrap();
}

#[test]
fn crashed_client_session_expires_after_its_timeout() {
    run(cfg(15), |sim| async move {
        let a = sim.client();
        let b = sim.client();
        a.create("/c", b"", CreateMode::Ephemeral).await.unwrap();
        let (_, w) = b.exists_watch("/c").await.unwrap();
        let t0 = sim.now();
        sim.crash(&a);
        assert_eq!(w.await.unwrap().event_type, EventType::NodeDeleted);
        assert_eq!(sim.now() - t0, Duration::from_millis(T_MS));
    })
    .unwrap();
}

#[test]
fn zxids_totally_order_writes() {
    run(cfg(16), |sim| async move {
        let a = sim.client();
        let b = sim.client();
        let mut last = 0;
        for i in 0..10 {
            let c = if i % 2 == 0 { &a } else { &b };
            let (_, s) = c
                .create(&format!("/z{i}"), b"", CreateMode::Persistent)
                .await
                .unwrap();
            assert!(s.czxid > last, "zxids increase across clients");
            last = s.czxid;
        }
    })
    .unwrap();
}

/// A small fixed workload from three clients whose interleaving the chooser decides;
/// returns every result as text.
fn transcript(config: SimConfig) -> Vec<String> {
    run(config, |sim| async move {
        let clients: Vec<_> = (0..3).map(|_| sim.client()).collect();
        clients[0]
            .create("/t", b"", CreateMode::Persistent)
            .await
            .unwrap();
        let mut tasks = Vec::new();
        for (i, c) in clients.iter().cloned().enumerate() {
            tasks.push(sim.spawn(async move {
                let mut out = Vec::new();
                for k in 0..5 {
                    let r = c
                        .create("/t/n-", b"", CreateMode::EphemeralSequential)
                        .await;
                    out.push(format!("{i}.{k} create {r:?} at {:?}", c.now()));
                    let kids = c.get_children("/t").await;
                    out.push(format!("{i}.{k} children {kids:?}"));
                    if let Ok((p, _)) = r {
                        out.push(format!("{i}.{k} delete {:?}", c.delete(&p, None).await));
                    }
                }
                out
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await);
        }
        all.push(format!("{:?}", sim.choices()));
        all
    })
    .unwrap()
}

#[test]
fn same_seed_gives_the_same_results_twice() {
    for seed in [1, 2, 3] {
        assert_eq!(transcript(cfg(seed)), transcript(cfg(seed)));
    }
    assert_ne!(transcript(cfg(1)), transcript(cfg(2)), "the seed matters");
}

#[test]
fn madsim_task_order_never_changes_the_results() {
    let reference = transcript(cfg(5));
    for madsim_seed in 100..110 {
        let c = SimConfig {
            madsim_seed: Some(madsim_seed),
            ..cfg(5)
        };
        assert_eq!(transcript(c), reference, "madsim seed {madsim_seed}");
    }
}

#[test]
fn stuck_world_is_reported_not_hung() {
    let r = run(cfg(17), |sim| async move {
        let a = sim.client();
        a.create("/never", b"", CreateMode::Persistent)
            .await
            .unwrap();
        a.delete("/never", None).await.unwrap();
        // Waits for a node nobody will ever create.
        let (_, w) = a.exists_watch("/never").await.unwrap();
        let _ = w.await;
    });
    assert!(
        matches!(r, Err(zklock_sim::SimError::Stuck { .. })),
        "{r:?}"
    );
}

#[test]
fn delayed_replies_and_events_arrive_late_and_in_order() {
    run(cfg(18), |sim| async move {
        let a = sim.client();
        let b = sim.client();
        a.create("/slow", b"", CreateMode::Persistent)
            .await
            .unwrap();
        let (_, w) = a.exists_watch("/slow").await.unwrap();
        sim.delay_delivery(&a, Duration::from_millis(500));
        let t0 = sim.now();
        b.set_data("/slow", b"x", None).await.unwrap();
        // A's reply comes after the held event, both after the delay.
        let (data, _) = a.get_data("/slow").await.unwrap();
        assert_eq!(data, b"x");
        assert!(sim.now() - t0 >= Duration::from_millis(500));
        let mut w = w;
        let ev = w
            .try_take()
            .expect("the event was delivered before the reply")
            .unwrap();
        assert_eq!(ev.event_type, EventType::NodeDataChanged);
        assert_eq!(
            a.session_state(),
            SessionState::Connected,
            "a delay is not a disconnect"
        );
    })
    .unwrap();
}

/// Two clients each create one sequential node; a depth-first walk of the guided chooser
/// visits both orders, and nothing else.
// Hosted on a madsim runtime, as a user's `#[madsim::test]` suite would host it.
#[cfg(madsim)]
#[test]
fn guided_chooser_enumerates_every_interleaving() {
    use std::sync::{Arc, Mutex};
    use zklock_sim::{GuidedChooser, Sim};
    let mut prefix = Some(Vec::new());
    let mut outcomes = Vec::new();
    while let Some(p) = prefix {
        let chooser = Arc::new(Mutex::new(GuidedChooser::new(p)));
        let rt = madsim::runtime::Runtime::with_seed_and_config(0, Default::default());
        let sim = Sim::with_chooser(SimConfig::default(), Box::new(chooser.clone()));
        let s = sim.clone();
        let first = rt
            .block_on(sim.run(async move {
                let a = s.client();
                let b = s.client();
                a.create("/q", b"", CreateMode::Persistent).await.unwrap();
                let (ra, rb) = join(
                    a.create("/q/n-", b"", CreateMode::EphemeralSequential),
                    b.create("/q/n-", b"", CreateMode::EphemeralSequential),
                )
                .await;
                if ra.unwrap().0 < rb.unwrap().0 {
                    "a"
                } else {
                    "b"
                }
            }))
            .unwrap();
        outcomes.push(first);
        prefix = GuidedChooser::next_prefix(&chooser.lock().unwrap().made);
    }
    assert_eq!(outcomes, vec!["a", "b"]);
}

/// The simulation once refused data past 1 MiB with BadArguments; a real server bounds
/// the whole request frame (jute.maxbuffer) and drops the connection past it.
#[test]
fn oversized_request_drops_the_connection_and_applies_nothing() {
    run(cfg(1), |sim| async move {
        let a = sim.client();
        let (_, before) = a.create("/big", b"", CreateMode::Persistent).await.unwrap();
        // setData's frame: header 8, the path's length and bytes, the data's length,
        // the version.
        let fixed = 8 + 4 + "/big".len() + 4 + 4;
        let over = vec![0; zklock_sim::REQUEST_BYTES_MAX - fixed + 1];
        let (cut, after) = join(a.set_data("/big", &over, None), a.exists("/big")).await;
        assert_eq!(cut, Err(ZkError::ConnectionLoss));
        // Sent after it on the same connection: never read by the server.
        assert_eq!(after, Err(ZkError::ConnectionLoss));
        assert_eq!(a.session_state(), SessionState::Disconnected);
        while a.session_state() != SessionState::Connected {
            a.sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(a.exists("/big").await.unwrap(), Some(before));
        // At the bound exactly, it is applied.
        let fits = vec![0; zklock_sim::REQUEST_BYTES_MAX - fixed];
        assert_eq!(a.set_data("/big", &fits, None).await.unwrap().version, 1);
    })
    .unwrap();
}

/// The simulation once judged a multi op by op, failing at an earlier op with NoNode
/// where a real client refuses the whole multi at the invalid op.
#[test]
fn multi_with_an_invalid_path_is_refused_whole_at_that_op() {
    run(cfg(1), |sim| async move {
        let a = sim.client();
        let ops = vec![
            Op::Delete {
                path: "/absent".into(),
                version: None,
            },
            Op::Create {
                path: "/ok".into(),
                data: vec![],
                mode: CreateMode::Persistent,
            },
            Op::Check {
                path: "/bad/".into(),
                version: 0,
            },
        ];
        match a.multi(ops.clone()).await {
            Err(ZkError::MultiFailed { index: 2, error }) => {
                assert!(matches!(*error, ZkError::BadArguments(_)), "{error:?}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(a.exists("/ok").await.unwrap(), None);
        // Disconnected, the client still judges the paths first.
        sim.disconnect(&a);
        a.sleep(Duration::from_millis(1)).await;
        assert_eq!(a.session_state(), SessionState::Disconnected);
        assert_eq!(a.exists("/ok").await, Err(ZkError::ConnectionLoss));
        assert!(matches!(
            a.multi(ops).await,
            Err(ZkError::MultiFailed { index: 2, .. })
        ));
        assert!(matches!(
            a.exists("/\u{1F600}").await,
            Err(ZkError::BadArguments(_))
        ));
    })
    .unwrap();
}

/// `ZkClient` answers a multi's create with zookeeper-client's placeholder stat; the
/// simulation once answered with the node's real stat.
#[test]
fn multi_create_answers_with_the_placeholder_stat() {
    run(cfg(1), |sim| async move {
        let a = sim.client();
        let results = a
            .multi(vec![Op::Create {
                path: "/m".into(),
                data: vec![],
                mode: CreateMode::Persistent,
            }])
            .await
            .unwrap();
        assert_eq!(
            results,
            vec![zklock_recipe::OpResult::Create {
                path: "/m".into(),
                stat: zklock_sim::MULTI_CREATE_STAT,
            }]
        );
    })
    .unwrap();
}
