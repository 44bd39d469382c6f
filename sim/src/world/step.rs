//! The step function: what one quiescent point does (staged actions flushed, requests offered, time advanced to the next timer).

use super::*;

impl World {
    /// One step of the world, taken at a quiescent point; `woken` tells whether an actor
    /// is ready to run again.
    pub(crate) fn step(&mut self, woken: impl Fn() -> bool) -> Step {
        // Applying what actors staged is a step of its own, and may wake actors at once (a
        // resource reply, a refused request): then they run first. If it woke none, the
        // run loop would only find them all still blocked, so the next step follows here.
        if self.flush_staged() {
            if let Some(stop) = self.count_step() {
                return stop;
            }
            if woken() {
                return Step::Progress;
            }
        }
        if let Some(stop) = self.count_step() {
            return stop;
        }
        // Due timers first, in (time, creation) order.
        if let Some(t) = self.timers.pop_due(self.now_us) {
            self.fire(t);
            return Step::Progress;
        }
        // Background cleanup sends its next request (after a reconnect, or the reply to
        // the previous one) before anything is chosen, so faults can meet it in flight.
        self.kick_all_detached();
        // An explorer may prune a state it has seen (never a due timer: that is forced).
        if self.partial_order {
            let t = self.transition.take().map(|mut t| {
                t.finish();
                t
            });
            self.chooser.after_transition(t.as_ref());
        }
        if self.digesting {
            let needed = self.chooser.needs_digest();
            if needed {
                self.assert_folds_known();
            }
            let d = match (needed, self.prunes_by_symmetry) {
                (false, _) => 0,
                (true, true) => self.digest_sym(false).unwrap_or_else(|| self.digest()),
                (true, false) => self.digest(),
            };
            if !self.chooser.at_state(d) {
                return Step::Pruned;
            }
        }
        // A random fault may strike (only while a scenario's faults are on).
        if self.faults.is_some() && self.maybe_fault() {
            return Step::Progress;
        }
        // Then one pending request, from a client the chooser picks.
        // Counted, then the i-th found again unless it is the first: no list is built at
        // every step.
        let (n, first) = self.ready_clients().fold((0, 0), |(n, first), c| {
            (n + 1, if n == 0 { c } else { first })
        });
        if n > 0 {
            if self.partial_order && !self.offer_requests() {
                return Step::Pruned;
            }
            let i = if self.priorities.is_some() {
                self.by_priority()
            } else {
                self.choose(ChoiceKind::NextRequest, n)
            };
            let c = match i {
                0 => first,
                _ => self.ready_clients().nth(i).expect("i < n"),
            };
            self.advance_to(self.now_us + self.cfg.request_time_us);
            if self.partial_order {
                self.transition = Some(Footprint::new(c));
            }
            self.apply_next(c);
            return Step::Progress;
        }
        // Otherwise time moves on to the next timer.
        match self.timers.next_at() {
            Some(at) => {
                self.advance_to(at);
                Step::Progress
            }
            None => Step::Idle,
        }
    }

    /// Tells a reducing chooser the requests on offer, in choice order; `false` when it
    /// prunes the run here (every one of them is asleep).
    pub(super) fn offer_requests(&mut self) -> bool {
        let mut offers = std::mem::take(&mut self.offers);
        offers.clear();
        offers.extend(self.ready_clients().map(|c| {
            let o = self.clients[c].outbound.front().expect("a ready client");
            Offer {
                client: c as u32,
                fingerprint: footprint::fingerprint(&(&o.req, o.reply.is_detached())),
            }
        }));
        let go_on = self.chooser.offer_requests(&offers);
        self.offers = offers;
        go_on
    }

    /// Counts a step; `Some` when a limit stops the world.
    pub(super) fn count_step(&mut self) -> Option<Step> {
        self.steps += 1;
        if self.steps > self.cfg.steps_max {
            return Some(Step::OutOfSteps);
        }
        if self.now_us > self.cfg.time_limit_ms.saturating_mul(1000) {
            return Some(Step::OutOfTime);
        }
        None
    }

    pub(super) fn advance_to(&mut self, at: u64) {
        if at > self.now_us {
            // Keep madsim's clock in step, so code reading madsim's time sees ours.
            #[cfg(madsim)]
            if let Some(clock) = &self.madsim_clock {
                clock.advance(std::time::Duration::from_micros(at - self.now_us));
            }
            self.now_us = at;
        }
    }

    /// Applies everything actors staged since the last step, in (actor, sequence) order.
    pub(super) fn flush_staged(&mut self) -> bool {
        if self.staged.is_empty() {
            return false;
        }
        // Swapped with a spare vector and back, so staging never allocates once warm.
        let mut staged =
            std::mem::replace(&mut self.staged, std::mem::take(&mut self.staged_spare));
        // Usually in order already: one round polls actors in id order.
        if !staged.is_sorted_by_key(|(order, _)| *order) {
            staged.sort_by_key(|(order, _)| *order);
        }
        for (_, s) in staged.drain(..) {
            // An actor's requests are a transition's own; anything else it asks is not.
            if !matches!(s, Staged::Request { .. }) {
                self.touch_global();
            }
            match s {
                Staged::Request {
                    client,
                    session,
                    req,
                    reply,
                } => {
                    if session == self.clients[client].session {
                        self.submit(client, req, ReplyTo::Actor(reply));
                    } else {
                        self.touch_global();
                        let failed = Err(self.clients[client].ended_error(session));
                        self.observe(client, Seen::Reply(&failed));
                        self.slots.fill(reply, Delivered::Reply(failed));
                    }
                }
                Staged::Sleep {
                    client,
                    duration_us,
                    done,
                } => self.set_timer(self.now_us + duration_us, Timer::Sleep(client, done)),
                Staged::Control(c) => self.control(c),
                Staged::Record { client, kind } => self.record(client, kind),
                Staged::Resource { client, op, reply } => {
                    if self.clients[client].frozen_until.is_some() {
                        self.clients[client].deferred_resource.push((op, reply));
                    } else {
                        self.resource_op(client, op, reply);
                    }
                }
                Staged::CrashWatch { client, done } => {
                    if self.clients[client].crashed {
                        let _ = done.send(());
                    } else {
                        self.clients[client].crash_watchers.push(done);
                    }
                }
                Staged::Detached {
                    client,
                    session,
                    what,
                } => {
                    // An ended session's nodes went with it.
                    if session == self.clients[client].session {
                        self.add_detached(client, what);
                    }
                }
                Staged::Finished { client } => self.clients[client].finished = true,
                Staged::Renew { client, reply } => {
                    let renewed = self.renew_session(client);
                    self.observe(client, Seen::Renewed(renewed));
                    self.slots.fill(reply, Delivered::Renewed(renewed));
                }
                Staged::Choose {
                    client,
                    kind,
                    n,
                    reply,
                } => {
                    let v = self.choose(kind, n);
                    self.observe(client, Seen::Chosen(v));
                    self.slots.fill(reply, Delivered::Chosen(v));
                }
            }
        }
        self.staged_spare = staged;
        true
    }
}
