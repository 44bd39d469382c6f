//! Canaries: buggy variants of the recipe, built from its public building blocks, to
//! show the blocks suffice to write them compactly and that the scenarios expose them.

use crate::common::{DIR, nodes, sim};
use zklock_recipe::lock::queue::{blocker, position};
use zklock_recipe::lock::{
    ContenderSpec, OwnNode, await_watch, create_contender, ensure_path, list_contenders, watch_node,
};
use zklock_recipe::path::join;
use zklock_recipe::{
    Coordination, CreateMode, Lock, LockError, LockGuard, LockOptions, LostPolicy, NodeKind,
    RetryPolicy, ZkError,
};
use zklock_sim::SimClient;

/// How a canary creates its node.
async fn create_blindly(c: &SimClient, prefix: &str) -> Result<OwnNode, LockError> {
    // BUG: retries the create after connection loss without looking for the first one.
    loop {
        match c.create(prefix, b"", CreateMode::EphemeralSequential).await {
            Ok((path, stat)) => return OwnNode::new(path, stat.czxid),
            Err(e) if e.is_connection_loss() => c.sleep(RetryPolicy::default().backoff(1)).await,
            Err(e) => return Err(e.into()),
        }
    }
}

/// The recipe's loop, with two switchable bugs.
async fn canary(
    c: &SimClient,
    by_name: bool,
    blind: bool,
) -> Result<LockGuard<SimClient>, LockError> {
    let policy = RetryPolicy::default();
    let guid = format!("{:x}-1", c.session_id().0);
    let own = if blind {
        create_blindly(c, &format!("{DIR}/_c_{guid}-lock-")).await?
    } else {
        let spec = ContenderSpec {
            dir: DIR,
            guid: &guid,
            kind: NodeKind::Exclusive,
            data: b"",
            create_parents: true,
            retry: &policy,
        };
        create_contender(c, &spec).await?
    };
    let mut events = c.session_events();
    loop {
        let mut list = list_contenders(c, &policy, DIR).await?;
        if by_name {
            list.sort_by(|a, b| a.name.cmp(&b.name)); // BUG: order by full name
        }
        let ours = position(&list, &own.name).ok_or(LockError::Zk(ZkError::NoNode))?;
        let Some(ahead) = blocker(&list, ours) else {
            let lost = LostPolicy::default();
            return LockGuard::adopt(c.clone(), own, NodeKind::Exclusive, lost, policy).await;
        };
        if let Some(w) = watch_node(c, &policy, &join(DIR, &ahead.name)).await? {
            await_watch(w, &mut events).await?;
        }
    }
}

#[test]
fn ordering_by_full_name_grants_two_holders() {
    sim(200, |sim| async move {
        let (a, b) = (sim.client(), sim.client());
        // b (session 0x...2) queues first, then a (session 0x...1) sorts before it by name.
        let held = Lock::new(b, DIR, LockOptions::default())
            .unwrap()
            .acquire()
            .await
            .unwrap();
        let wrong = canary(&a, true, false).await.unwrap();
        assert_eq!(nodes(&sim).len(), 2);
        assert!(wrong.sequence() > held.sequence(), "both believe they hold");
    });
}

#[test]
fn a_blind_create_retry_leaves_an_orphan_and_a_stuck_lock() {
    sim(201, |sim| async move {
        let a = sim.client();
        ensure_path(&a, &RetryPolicy::default(), DIR).await.unwrap();
        sim.lose_next_create_response(&a);
        let waiter = {
            let a = a.clone();
            sim.spawn(async move { canary(&a, false, true).await.map(drop) })
        };
        a.sleep(std::time::Duration::from_secs(3)).await;
        // Two nodes of one session: the first is an orphan that blocks the second forever.
        let mine = nodes(&sim);
        assert_eq!(mine.len(), 2, "{mine:?}");
        for n in &mine {
            let owner = sim.server_stat(&join(DIR, n)).unwrap().ephemeral_owner;
            assert_eq!(owner, a.session_id().0);
        }
        waiter.abort();
    });
}
