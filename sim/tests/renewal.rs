//! A new session after the old one ended (`Sim::renew_session`): what the new handle and
//! the old one see.

use std::time::Duration;
use zklock_recipe::history::EventKind;
use zklock_recipe::{Coordination, CreateMode, DetachedCleanup, SessionState, ZkError};
use zklock_sim::{Sim, SimClient, SimConfig, run};

/// Forces `a`'s session to expire and waits until `a` has learned it.
async fn expired(sim: &Sim, a: &SimClient) {
    let mut events = a.session_events();
    sim.expire(a);
    while events.next().await.is_some() {}
    assert_eq!(a.session_state(), SessionState::Expired);
}

#[test]
fn a_new_session_after_expiry_is_connected_and_the_old_handle_stays_expired() {
    run(SimConfig::with_seed(1), |sim| async move {
        let a = sim.client();
        a.create("/e", b"", CreateMode::Ephemeral).await.unwrap();
        expired(&sim, &a).await;
        let a2 = sim.renew_session(&a).await.expect("the session ended");
        assert_eq!(a2.index(), a.index(), "the same client, a new session");
        assert_ne!(a2.session_id(), a.session_id());
        assert_eq!(a2.session_state(), SessionState::Connected);

        // The new session works: the old ephemeral is gone, so it can take the name.
        a2.create("/e", b"", CreateMode::Ephemeral).await.unwrap();
        let owner = sim.server_stat("/e").unwrap().ephemeral_owner;
        assert_eq!(owner, a2.session_id().0);

        // The old handle stays on its ended session: its requests never reach the new
        // one, and it hears no more changes.
        assert_eq!(a.session_state(), SessionState::Expired);
        assert_eq!(
            a.create("/x", b"", CreateMode::Persistent).await,
            Err(ZkError::SessionExpired)
        );
        assert_eq!(a.session_events().next().await, None);
        // Its background cleanup is dropped rather than run as the new session.
        a.cleanup_detached(DetachedCleanup::Node("/e".into()));
        a2.sleep(Duration::from_millis(100)).await;
        assert_eq!(sim.detached_cleanups_pending(&a2), 0);
        assert!(
            sim.server_stat("/e").is_some(),
            "the new session's node stays"
        );
        assert!(sim.server_stat("/x").is_none());

        // The history shows the new session as Connected, under its own id.
        let h = sim.history();
        let last_session = h
            .events
            .iter()
            .rfind(|e| e.client == a.index() as u32 && matches!(e.kind, EventKind::Session { .. }))
            .unwrap();
        assert_eq!(last_session.session, a2.session_id());
        assert_eq!(
            last_session.kind,
            EventKind::Session {
                state: SessionState::Connected
            }
        );
    })
    .unwrap();
}

#[test]
fn renewal_waits_until_the_session_ended_and_the_client_can_reach_the_server() {
    run(SimConfig::with_seed(2), |sim| async move {
        let a = sim.client();
        assert!(sim.renew_session(&a).await.is_none(), "the session lives");
        expired(&sim, &a).await;
        sim.partition(&a, Duration::from_millis(500));
        assert!(sim.renew_session(&a).await.is_none(), "cut off");
        a.sleep(Duration::from_millis(600)).await;
        let a2 = sim.renew_session(&a).await.expect("healed");
        // Faults reach the new session as they reached the old one.
        let mut events = a2.session_events();
        sim.disconnect(&a2);
        assert_eq!(events.next().await, Some(SessionState::Disconnected));
        assert_eq!(events.next().await, Some(SessionState::Connected));
        // A session can only be renewed once: the new one lives.
        assert!(sim.renew_session(&a).await.is_none());
    })
    .unwrap();
}

#[test]
fn a_crashed_client_gets_no_new_session() {
    run(SimConfig::with_seed(3), |sim| async move {
        let a = sim.client();
        let b = sim.client();
        // Both learn their sessions ended; then a's process crashes.
        expired(&sim, &a).await;
        expired(&sim, &b).await;
        sim.crash(&a);
        b.sleep(Duration::from_millis(1)).await;
        assert!(sim.renew_session(&a).await.is_none(), "a crashed process");
        assert!(sim.renew_session(&b).await.is_some(), "b is alive");
    })
    .unwrap();
}
