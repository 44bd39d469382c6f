//! One client's process and its loop of attempts, and the give-up of a stuck lock call.

use super::*;

/// One client's process: its worker, which a pause freezes, and after a crash, a new
/// process that starts with a new session a while later, as a supervisor would restart
/// it (none starts once acquisitions are over). Returns the last client to close, if any.
pub(super) async fn process<W: Work>(
    shared: Arc<Shared>,
    work: Arc<W>,
    index: usize,
    first: RecordingClient,
) -> Option<RecordingClient> {
    let control = Arc::clone(&shared.processes[index]);
    loop {
        let task = Arc::clone(&work).worker(Arc::clone(&shared), index, first.clone());
        tokio::select! {
            last = Pausable::new(task, Arc::clone(&control)) => {
                shared.scripts_done.fetch_add(1, Ordering::AcqRel);
                return last;
            }
            // The task is dropped here, wherever it was.
            () = control.crashed() => {}
        }
        shared.sessions.set(index, None);
        tokio::time::sleep(control.restart_after()).await;
        if shared.acquisitions_over() {
            shared.scripts_done.fetch_add(1, Ordering::AcqRel);
            return None;
        }
        // The crashed session is over (its client reports Expired): the worker starts by
        // opening a new one.
        debug_assert!(first.session_state().is_terminal());
    }
}

/// How long past its liveness deadline a lock call may stay unanswered before its client
/// gives it up: the run then outlives the deadline, so the checker sees it stuck.
pub const STUCK_MARGIN_MS: u64 = 1_000;

/// How often a lock call in progress is looked at for [`unless_stuck`].
pub(super) const STUCK_POLL_MS: u64 = 100;

/// `call`'s output, or `None` once the call is stuck: unanswered past its liveness deadline
/// ([`Shared::past_liveness_deadline`]) when no acquisition may start any more. A stuck
/// call lets a scripted run end without it; once given up, it stays unanswered in the
/// history, where `liveness_after_heal` judges it (a stuck lock, or a stuck release), and
/// its client does nothing more. Only a hang reaches it: a call answered late, but
/// answered, is recorded as it ended.
pub(super) async fn unless_stuck<T>(
    shared: &Shared,
    since_us: u64,
    call: impl std::future::Future<Output = T>,
) -> Option<T> {
    /// Counts its client in [`Shared::stuck_now`] while set; uncounts it when dropped,
    /// also when a crash drops the call.
    struct Counted<'a>(&'a AtomicU64, bool);
    impl Counted<'_> {
        fn set(&mut self, on: bool) {
            if on != self.1 {
                match on {
                    true => self.0.fetch_add(1, Ordering::AcqRel),
                    false => self.0.fetch_sub(1, Ordering::AcqRel),
                };
                self.1 = on;
            }
        }
    }
    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.set(false);
        }
    }
    tokio::pin!(call);
    let mut counted = Counted(&shared.stuck_now, false);
    loop {
        tokio::select! {
            biased;
            out = &mut call => return Some(out),
            () = tokio::time::sleep(Duration::from_millis(STUCK_POLL_MS)) => {}
        }
        // Judged again each time: a later strike moves the heal, and the deadline with it.
        let past = shared.past_liveness_deadline(since_us);
        counted.set(past);
        if past && shared.acquisitions_over() {
            return None;
        }
    }
}

/// One client's loop. Returns its last client, to be closed once the run is read; `None`
/// when it gave up a stuck call (the client is kept open in [`Shared::abandoned`]).
pub(super) async fn worker<R: RealRecipe>(
    shared: Arc<Shared>,
    work: Arc<LockWork<R>>,
    index: usize,
    first: RecordingClient,
) -> Option<RecordingClient> {
    let recipe = &work.0;
    let config = &shared.config;
    let role = role_in(index, config, recipe.leases());
    let paths = config.lock_paths();
    let locks_of = |client: &RecordingClient| -> Vec<R::Lock> {
        paths
            .iter()
            .map(|p| recipe.lock(client.clone(), role, p))
            .collect()
    };
    if index as u32 >= config.clients - config.revokers {
        return revoker(&shared, index, first, locks_of).await;
    }
    let mut client = first;
    let mut locks = locks_of(&client);
    // From the workers' start: a process restarted after a crash does not wait again.
    let start = Duration::from_millis(
        shared
            .workers_started_ms
            .load(Ordering::Acquire)
            .saturating_add(config.start_stagger_ms.saturating_mul(index as u64)),
    );
    let now = shared.recorder.elapsed();
    if start > now {
        tokio::time::sleep(start - now).await;
    }
    let mut k = 0u64;
    let script = u64::from(config.attempts_per_client);
    while !shared.acquisitions_over() && (script == 0 || k < script) {
        if client.session_state().is_terminal() {
            if let Some(fresh) = shared.renew(index).await {
                client = fresh;
                locks = locks_of(&client);
            }
            continue;
        }
        let mode = mode_of(index, k, config);
        let which = lock_of(config.lock_seed, index, k, config.locks);
        k += 1;
        let fresh_every = u64::from(config.fresh_lock_every);
        if fresh_every > 0 && k.is_multiple_of(fresh_every) {
            let fresh = recipe.fresh_lock(&locks[which], client.clone(), role, &paths[which]);
            locks[which] = fresh;
        }
        let lock = &locks[which];
        client.record(EventKind::AcquireInvoked {
            role,
            mode,
            // Named only in a run of several locks, as the simulation names it.
            lock: (config.locks > 1).then(|| paths[which].clone()),
        });
        let invoked_us = shared.recorder.now_us();
        // `None`: the call is stuck (see `unless_stuck`).
        let attempt = async {
            match mode {
                AcquireMode::Blocking => {
                    // The lock's own blocking acquire (its timed one may be another path),
                    // its future dropped at the drain, as `tokio::time::timeout` drops it,
                    // so that a stuck lock ends the run.
                    let drain = shared
                        .drain_deadline()
                        .saturating_sub(shared.recorder.elapsed());
                    Some(
                        tokio::time::timeout(drain, lock.acquire())
                            .await
                            .map_or(Ok(None), |got| got.map(Some)),
                    )
                }
                AcquireMode::Try => unless_stuck(&shared, invoked_us, lock.try_acquire()).await,
                AcquireMode::Timeout { timeout_ms } => {
                    let call = lock.acquire_timeout(Duration::from_millis(timeout_ms));
                    unless_stuck(&shared, invoked_us, call).await
                }
                AcquireMode::Dropped { after_ms } => Some(tokio::select! {
                    got = lock.acquire() => got.map(Some),
                    // The acquire's future is dropped here, wherever it was.
                    () = tokio::time::sleep(Duration::from_millis(after_ms)) => Ok(None),
                }),
            }
        };
        // An aimed give-up (see `record_aimed_strikes`) drops the attempt wherever it is.
        let (got, given_up) = tokio::select! {
            biased;
            got = attempt => (got, false),
            () = shared.processes[index].given_up() => (Some(Ok(None)), true),
        };
        let Some(got) = got else {
            return shared.abandon(client);
        };
        let guard = match got {
            Ok(Some(guard)) => guard,
            Ok(None) => {
                let reason = match mode {
                    _ if given_up => "given up",
                    AcquireMode::Try => "held by another",
                    AcquireMode::Dropped { .. } => "dropped",
                    _ => "timed out",
                };
                client.record(EventKind::AcquireFailed {
                    reason: reason.into(),
                });
                if config.idle_after_give_up_ms > 0 {
                    let idle = Duration::from_millis(config.idle_after_give_up_ms);
                    let from = shared.recorder.elapsed();
                    // What a cancelled acquire took after all is given back first, as the
                    // next acquire would: idle, the client would keep a hold the workload
                    // never believed in, and its node would read as left behind. Bounded
                    // by the idle: a library stuck on the cancel is the next acquire's.
                    let _ = tokio::time::timeout(idle, recipe.retire(lock)).await;
                    let spent = shared.recorder.elapsed().saturating_sub(from);
                    client.sleep(idle.saturating_sub(spent)).await;
                }
                continue;
            }
            Err(reason) => {
                client.record(EventKind::AcquireFailed { reason });
                tokio::time::sleep(Duration::from_millis(config.error_backoff_ms)).await;
                continue;
            }
        };
        let token = lock.token(&guard);
        client.record(EventKind::Acquired {
            token,
            node: lock.node(&guard),
        });
        // The critical section: read, work, write value + 1 with the fencing token, unless
        // the lost signal fires first.
        let session = client.session_id();
        let read = shared
            .recorder
            .read_resource_of(which, index as u32, session, token);
        if shared.processes[index].strike_armed(client.zk()) {
            // Crashed: the process is dropped here, at its next await.
            std::future::pending::<()>().await;
        }
        // A revocable hold (a run with revokers) is given up when asked, unless lost first.
        let revocable = config.revokers > 0;
        let ended = tokio::select! {
            // The work first, as the simulation's runner: a process resuming from a pause
            // finishes the step it was on before it reads its mail.
            biased;
            () = hold_for(&client, &shared, hold_of(k, config)) => None,
            reason = lock.lost(&guard), if !revocable => Some(Err(reason)),
            asked = lock.revocation(&guard), if revocable => Some(asked),
        };
        match ended {
            // Readers only read: their holds are shared.
            None if role == LockRole::Read => {}
            None => {
                shared
                    .recorder
                    .write_resource_of(which, index as u32, session, token, read);
            }
            // Asked to give up, it gives up before its write.
            Some(Ok(())) => client.record(EventKind::RevokeObserved),
            Some(Err(reason)) => client.record(EventKind::Lost { reason }),
        }
        client.record(EventKind::ReleaseInvoked);
        let invoked_us = shared.recorder.now_us();
        match unless_stuck(&shared, invoked_us, lock.release(guard)).await {
            Some(Ok(())) => client.record(EventKind::Released),
            Some(Err(reason)) => client.record(EventKind::ReleaseFailed { reason }),
            None => return shared.abandon(client),
        }
    }
    client.record(EventKind::Done);
    shared.sessions.set(index, None);
    // Bounded: a library that never answers must not keep the run from ending.
    let bound = Duration::from_millis(config.drain_timeout_ms);
    for lock in &locks {
        let _ = tokio::time::timeout(bound, recipe.retire(lock)).await;
    }
    shared
        .retired
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Box::new(locks));
    Some(client)
}

/// A revoker's loop ([`WorkloadConfig::revokers`]): until the run's acquisitions are over
/// (or, with a script, once for each attempt of each holder), wait half a hold, list the
/// first lock's directory and ask the holder of one of its nodes, each listing's next in
/// name order, to give up. A listing that fails or finds no node asks nobody.
async fn revoker<L: LockUnderTest>(
    shared: &Shared,
    index: usize,
    mut client: RecordingClient,
    locks_of: impl Fn(&RecordingClient) -> Vec<L>,
) -> Option<RecordingClient> {
    let config = &shared.config;
    let dir = config.lock_paths().swap_remove(0);
    let pause = Duration::from_millis((config.hold_ms / 2).max(1));
    let holders = u64::from(config.clients - config.revokers);
    let script = u64::from(config.attempts_per_client) * holders;
    let mut locks = locks_of(&client);
    let mut k = 0u64;
    while !shared.acquisitions_over() && (script == 0 || k < script) {
        if client.session_state().is_terminal() {
            if let Some(fresh) = shared.renew(index).await {
                client = fresh;
                locks = locks_of(&client);
            }
            continue;
        }
        k += 1;
        tokio::time::sleep(pause).await;
        let Ok(mut children) = client.get_children(&dir).await else {
            continue;
        };
        children.sort();
        let Some(name) = children.get((k as usize) % children.len().max(1)) else {
            continue;
        };
        let node = zklock_recipe::path::join(&dir, name);
        client.record(EventKind::RevokeRequested { node: node.clone() });
        // What it sent and what came back are in the history's requests.
        let _ = locks[0].revoke(&node).await;
    }
    client.record(EventKind::Done);
    shared.sessions.set(index, None);
    Some(client)
}
