//! The fault points of a systematic search over real runs, in the manner of FATE/DESTINI
//! and Filibuster: a reference run records every request each client sends
//! ([`zklock_real::workload::RealRun::requests`]); each request, named across runs by
//! ([`RequestKey`]: client, operation, [`path_class`], ordinal among that client's requests
//! of the same operation and class), meets every action a proxy can take ([`Point`]).
//! Requests first seen in a faulted run join the frontier ([`Frontier`]); pairs of points
//! keep only second points the first point's run reached (Filibuster's dynamic
//! reduction).
//!
//! Everything here is plain data: the caller runs each point's [`FaultConfig::aimed`]
//! plan and feeds back what the run saw.
//!
//! [`FaultConfig::aimed`]: zklock_real::faults::FaultConfig::aimed

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use zklock_real::plan::{
    AimedAction, AimedFault, BURST_CUTS_DEFAULT, Repeat, SeenRequest, op, path_class,
};

/// One request, named so that the same request of another run has the same name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestKey {
    pub client: u32,
    /// The op's name (see [`op::NAMES`]).
    pub op: &'static str,
    /// The path prefix that names it ([`path_class`]).
    pub class: String,
    /// 1 for the client's first request of `op` under `class`.
    pub nth: u32,
}

/// A fault at a request: what a run of the search injects (one point, or two at k = 2).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Point {
    pub at: RequestKey,
    pub action: AimedAction,
    pub repeat: Repeat,
}

impl Point {
    /// The plan that strikes it: client and aimed fault, as `FaultConfig::aimed` takes it.
    pub fn aimed(&self) -> (u32, AimedFault) {
        let ops = op::by_name(self.at.op).unwrap_or(&[]);
        let mut fault = AimedFault::new(ops, self.at.class.clone(), self.action);
        fault.skip = self.at.nth.saturating_sub(1);
        fault.repeat = self.repeat;
        (self.at.client, fault)
    }

    /// The point as `zklock real --aim` takes it.
    pub fn aim_arg(&self) -> String {
        let (client, fault) = self.aimed();
        format!("{client}:{fault}")
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.aim_arg())
    }
}

/// Which actions the search tries at each request, and how it repeats them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Actions {
    /// How long a pause lasts: longer than the session timeout, so the server expires
    /// the session while the process is frozen.
    pub pause_ms: u64,
    /// The N of "the next N matching requests" (0: no such points).
    pub repeat_next: u32,
    /// The window of "every matching request for a while", in ms (0: no such points).
    pub repeat_window_ms: u64,
    /// The actions tried, by [`AimedAction::name`] (the repeated drops and withheld
    /// replies with theirs); empty: every one but the [`Actions::OPT_IN`] ones.
    pub only: Vec<&'static str>,
}

impl Actions {
    /// How many single-strike actions meet each request.
    pub const SINGLE: usize = 7;

    /// The names of the single-strike actions, as `only` takes them.
    pub const NAMES: [&'static str; Self::SINGLE] = [
        "drop-request",
        "withhold-reply",
        "expire",
        "pause",
        "crash",
        "give-up",
        "isolate",
    ];

    /// The actions tried only when `only` names them: an outage takes every server of
    /// the run down at each request, where the default menu touches one client; a burst
    /// of reconnects cuts a client's next connections as they come.
    pub const OPT_IN: [&'static str; 2] = ["outage", "burst"];

    /// Whether the search tries `action`.
    pub fn tries(&self, action: AimedAction) -> bool {
        if Self::OPT_IN.contains(&action.name()) {
            return self.only.contains(&action.name());
        }
        self.only.is_empty() || self.only.contains(&action.name())
    }

    /// Whether `name` names an action the search can try.
    pub fn knows(name: &str) -> bool {
        Self::NAMES.contains(&name) || Self::OPT_IN.contains(&name)
    }

    /// The single-strike actions, in the order the search tries them (all of them,
    /// whatever `only` says).
    pub fn single(&self) -> [AimedAction; Self::SINGLE] {
        [
            AimedAction::DropRequest,
            AimedAction::WithholdReply,
            AimedAction::Expire,
            AimedAction::Pause {
                pause_ms: self.pause_ms,
            },
            AimedAction::Crash,
            AimedAction::GiveUp,
            // As long as a pause: the client's library may declare its session lost.
            AimedAction::Isolate {
                isolated_ms: self.pause_ms,
            },
        ]
    }

    /// The points at one request: every single action; and, at a client's first request
    /// of an op and class, the repeated drops and withheld replies (the next N, every one
    /// for a window), which strike the same requests from any later start.
    pub fn points_at(&self, at: &RequestKey) -> Vec<Point> {
        let mut points: Vec<Point> = self
            .single()
            .into_iter()
            .filter(|&action| self.tries(action))
            .map(|action| Point {
                at: at.clone(),
                action,
                repeat: Repeat::Once,
            })
            .collect();
        // An outage as long as a pause: longer than the session timeout.
        let opt_in = [
            AimedAction::Outage {
                down_ms: self.pause_ms,
            },
            AimedAction::Burst {
                cuts: BURST_CUTS_DEFAULT,
            },
        ];
        for action in opt_in.into_iter().filter(|&a| self.tries(a)) {
            points.push(Point {
                at: at.clone(),
                action,
                repeat: Repeat::Once,
            });
        }
        if at.nth == 1 {
            let mut repeats = Vec::new();
            if self.repeat_next > 1 {
                repeats.push(Repeat::Next(self.repeat_next));
            }
            if self.repeat_window_ms > 0 {
                repeats.push(Repeat::WindowMs(self.repeat_window_ms));
            }
            for repeat in repeats {
                for action in [AimedAction::DropRequest, AimedAction::WithholdReply] {
                    if !self.tries(action) {
                        continue;
                    }
                    points.push(Point {
                        at: at.clone(),
                        action,
                        repeat,
                    });
                }
            }
        }
        points
    }
}

/// The keys of each client's requests (`requests[c]` is client c's, in order), as a
/// proxy aimed at them counts: the nth of a key is how many of the client's requests so
/// far match its op and start with its class.
pub fn request_keys(requests: &[Vec<SeenRequest>]) -> Vec<RequestKey> {
    let mut keys = Vec::new();
    for (client, seen) in requests.iter().enumerate() {
        for (i, request) in seen.iter().enumerate() {
            let Some(name) = op::name_of(request.op) else {
                continue;
            };
            let class = path_class(&request.path);
            let ops = op::by_name(name).unwrap_or(&[]);
            let nth = seen[..=i]
                .iter()
                .filter(|r| ops.contains(&r.op) && r.path.starts_with(class.as_str()))
                .count();
            keys.push(RequestKey {
                client: client as u32,
                op: name,
                class,
                nth: nth as u32,
            });
        }
    }
    keys
}

/// The plans still to try, in the order found, and every request key seen so far. A
/// plan is the points one run strikes: a point at a request of the reference run alone;
/// a point at a request first seen in a faulted run after the plan of that run, since
/// only that fault reaches it (a cleanup, a retry).
#[derive(Debug)]
pub struct Frontier {
    seen_keys: BTreeSet<RequestKey>,
    queued: BTreeSet<Vec<Point>>,
    order: std::collections::VecDeque<Vec<Point>>,
    follow_on_repeats_max: u32,
    /// The last ordinal of each client's (operation, path class) in the reference run.
    reference_last: BTreeMap<(u32, &'static str, String), u32>,
    /// Plans dropped because the frontier was full, or longer than the most points a
    /// run strikes.
    pub left_out: u64,
    /// Plans dropped by the cap on follow-on repeats
    /// ([`with_follow_on_repeats_max`](Frontier::with_follow_on_repeats_max)).
    pub left_out_by_repeats: u64,
}

/// Uncapped: every new request of a faulted run joins, as before the cap existed.
impl Default for Frontier {
    fn default() -> Frontier {
        Frontier {
            seen_keys: BTreeSet::new(),
            queued: BTreeSet::new(),
            order: std::collections::VecDeque::new(),
            follow_on_repeats_max: u32::MAX,
            reference_last: BTreeMap::new(),
            left_out: 0,
            left_out_by_repeats: 0,
        }
    }
}

/// The most points one plan of the frontier strikes: a point at a request its run saw
/// first, after at most one that led to it.
pub const MAX_PLAN_POINTS: usize = 2;

/// The default of [`Frontier::with_follow_on_repeats_max`] (`zklock search
/// --follow-on-repeats-max`): a fault's retries and cleanups add a few requests of one
/// kind, a library stuck polling adds thousands.
pub const FOLLOW_ON_REPEATS_MAX_DEFAULT: u32 = 8;

impl Frontier {
    /// A frontier where one faulted run adds at most `n` new ordinals of each client's
    /// (operation, path class), and none more than `n` past the reference run's last of
    /// that kind (past `n` for a kind the reference run never sent), whichever run sees
    /// it; the requests past them count as seen and their plans in
    /// [`left_out_by_repeats`](Frontier::left_out_by_repeats). A library stuck in a
    /// loop (polling the lock's directory) sends a new ordinal at every turn, each of
    /// which would otherwise be a request never seen, with its own points; without the
    /// second bound, each stuck run that polls longer than the last would add `n` more.
    /// The reference run is not capped: its requests are the script.
    pub fn with_follow_on_repeats_max(n: u32) -> Frontier {
        Frontier {
            follow_on_repeats_max: n,
            ..Frontier::default()
        }
    }

    /// The cap of [`with_follow_on_repeats_max`](Frontier::with_follow_on_repeats_max)
    /// (`u32::MAX`: none).
    pub fn follow_on_repeats_max(&self) -> u32 {
        self.follow_on_repeats_max
    }

    /// Adds the points of every request key of `requests` not seen before, each after
    /// `parent`, the plan of the run that saw them (empty for the reference run); at most
    /// `max_points` plans are ever queued (the rest are counted in
    /// [`left_out`](Frontier::left_out)), and at most the follow-on repeats' cap of new
    /// ordinals of one client's (operation, path class) per faulted run. Returns how many
    /// request keys were new.
    pub fn add_run(
        &mut self,
        parent: &[Point],
        requests: &[Vec<SeenRequest>],
        actions: &Actions,
        max_points: usize,
    ) -> usize {
        let mut new = 0;
        let mut follow_ons: BTreeMap<(u32, &'static str, String), u32> = BTreeMap::new();
        for key in request_keys(requests) {
            let kind = (key.client, key.op, key.class.clone());
            if parent.is_empty() {
                let last = self.reference_last.entry(kind.clone()).or_default();
                *last = (*last).max(key.nth);
            }
            if !self.seen_keys.insert(key.clone()) {
                continue;
            }
            new += 1;
            let points = actions.points_at(&key);
            // A plan too long is left out whatever the cap says: count it there.
            if !parent.is_empty() && parent.len() < MAX_PLAN_POINTS {
                let last = self.reference_last.get(&kind).copied().unwrap_or(0);
                let n = follow_ons.entry(kind).or_default();
                *n += 1;
                if *n > self.follow_on_repeats_max
                    || key.nth > last.saturating_add(self.follow_on_repeats_max)
                {
                    self.left_out_by_repeats += points.len() as u64;
                    continue;
                }
            }
            for point in points {
                let mut plan = parent.to_vec();
                plan.push(point);
                if self.queued.len() >= max_points || plan.len() > MAX_PLAN_POINTS {
                    self.left_out += 1;
                } else if self.queued.insert(plan.clone()) {
                    self.order.push_back(plan);
                }
            }
        }
        new
    }

    /// The next plan to try.
    pub fn pop(&mut self) -> Option<Vec<Point>> {
        self.order.pop_front()
    }

    /// Plans queued so far, tried or not.
    pub fn queued(&self) -> usize {
        self.queued.len()
    }

    /// Request keys seen so far.
    pub fn keys_seen(&self) -> usize {
        self.seen_keys.len()
    }
}

/// The pairs of k = 2 after `first`, whose run saw `reached`: every point of
/// `singles` other than `first` whose request that run reached (dynamic reduction: a
/// point whose request the first fault's run never sent is not tried with it), on a
/// request other than `first`'s.
pub fn second_points<'a>(
    first: &'a Point,
    reached: &'a [Vec<SeenRequest>],
    singles: &'a [Point],
) -> impl Iterator<Item = &'a Point> + 'a {
    let keys: BTreeSet<RequestKey> = request_keys(reached).into_iter().collect();
    singles
        .iter()
        .filter(move |p| p.at != first.at && keys.contains(&p.at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use zklock_real::plan::op as code;

    fn req(op: i32, path: &str) -> SeenRequest {
        SeenRequest {
            op,
            path: path.into(),
        }
    }

    #[test]
    fn each_request_is_named_by_op_class_and_ordinal_as_the_proxy_counts() {
        let client0 = vec![
            req(code::CREATE2, "/l/lock-0000000001"),
            req(code::GET_CHILDREN2, "/l"),
            req(code::DELETE, "/l/lock-0000000001"),
            req(code::CREATE2, "/l/lock-0000000004"),
            req(11, ""), // a ping: not aimable
        ];
        let keys = request_keys(&[client0, vec![req(code::GET_CHILDREN, "/l")]]);
        let named: Vec<(u32, &str, &str, u32)> = keys
            .iter()
            .map(|k| (k.client, k.op, k.class.as_str(), k.nth))
            .collect();
        assert_eq!(
            named,
            [
                (0, "create", "/l/", 1),
                (0, "get-children", "/l", 1),
                (0, "delete", "/l/", 1),
                (0, "create", "/l/", 2),
                (1, "get-children", "/l", 1),
            ]
        );
    }

    #[test]
    fn a_point_reads_back_as_its_aim() {
        let at = RequestKey {
            client: 1,
            op: "delete",
            class: "/zklock/lock/".into(),
            nth: 3,
        };
        let p = Point {
            at: at.clone(),
            action: AimedAction::WithholdReply,
            repeat: Repeat::Once,
        };
        assert_eq!(p.aim_arg(), "1:withhold-reply:delete:/zklock/lock/:3");
        let (_, fault) = p.aimed();
        assert_eq!(fault.skip, 2);
        let p = Point {
            at: RequestKey { nth: 1, ..at },
            action: AimedAction::DropRequest,
            repeat: Repeat::WindowMs(3_000),
        };
        assert_eq!(p.aim_arg(), "1:drop-request:delete:/zklock/lock/:1:3000ms");
    }

    #[test]
    fn requests_first_seen_in_a_faulted_run_join_the_frontier_once() {
        let actions = Actions {
            pause_ms: 5_000,
            repeat_next: 4,
            repeat_window_ms: 3_000,
            only: Vec::new(),
        };
        let mut f = Frontier::default();
        let reference = vec![vec![req(code::CREATE2, "/l/n-0000000001")]];
        assert_eq!(f.add_run(&[], &reference, &actions, 1_000), 1);
        // Every single action, and 2 repeats of 2 actions at a first request.
        let single = Actions::SINGLE;
        assert_eq!(f.queued(), single + 4);
        let first = f.pop().unwrap();
        assert_eq!(first.len(), 1);
        // A retry of the create, seen in the first point's run: a new request, with its
        // own points (no repeats at nth 2), each after the point that led to it.
        let faulted = vec![vec![
            req(code::CREATE2, "/l/n-0000000001"),
            req(code::CREATE2, "/l/n-0000000002"),
        ]];
        assert_eq!(f.add_run(&first, &faulted, &actions, 1_000), 1);
        assert_eq!(f.queued(), 2 * single + 4);
        let chained: Vec<Vec<Point>> = std::iter::from_fn(|| f.pop()).collect();
        let last = chained.last().unwrap();
        assert_eq!((last.len(), &last[0], last[1].at.nth), (2, &first[0], 2));
        assert_eq!(f.add_run(&first, &faulted, &actions, 1_000), 0);
        // Past the longest plan, or a full frontier: counted as left out.
        let more = vec![vec![req(code::DELETE, "/l/n-0000000001")]];
        f.add_run(&last.clone(), &more, &actions, 1_000);
        assert_eq!(
            (f.queued(), f.left_out),
            (2 * single + 4, single as u64 + 4)
        );
    }

    /// A library stuck polling lists the directory at every turn, each listing a new
    /// ordinal: a faulted run adds only the first few of each client's (operation,
    /// class), and says how many plans the cap left out; the reference run (the
    /// script) and the other kinds of request are not capped.
    #[test]
    fn a_faulted_run_adds_at_most_the_cap_of_new_ordinals_of_one_kind() {
        let actions = Actions {
            pause_ms: 5_000,
            repeat_next: 0,
            repeat_window_ms: 0,
            only: Vec::new(),
        };
        let listings = |n: usize| vec![req(code::GET_CHILDREN2, "/l"); n];
        let mut f = Frontier::with_follow_on_repeats_max(3);
        // The script lists 5 times: all 5 join, past the cap, each with every single action.
        let single = Actions::SINGLE;
        assert_eq!(f.add_run(&[], &[listings(5)], &actions, 100_000), 5);
        assert_eq!((f.queued(), f.left_out_by_repeats), (5 * single, 0));
        let first = f.pop().unwrap();
        // Stuck after the fault: 100 listings by client 0, 95 of them new; and 2 new
        // creates, and 4 listings by client 1, each kind within the cap but client 1's.
        let mut client0 = listings(100);
        client0.push(req(code::CREATE2, "/l/n-0000000001"));
        client0.push(req(code::CREATE2, "/l/n-0000000002"));
        let stuck = vec![client0, listings(4)];
        assert_eq!(f.add_run(&first, &stuck, &actions, 100_000), 95 + 2 + 4);
        let joined = 3 + 2 + 3;
        assert_eq!(f.queued(), 5 * single + joined * single);
        assert_eq!(f.left_out_by_repeats, (92 + 1) * single as u64);
        assert_eq!(f.left_out, 0);
        let chained: Vec<Vec<Point>> = std::iter::from_fn(|| f.pop())
            .filter(|p| p.len() == 2)
            .collect();
        let listed: BTreeSet<(u32, u32)> = chained
            .iter()
            .filter(|p| p[1].at.op == "get-children")
            .map(|p| (p[1].at.client, p[1].at.nth))
            .collect();
        let expected: BTreeSet<(u32, u32)> =
            [(0, 6), (0, 7), (0, 8), (1, 1), (1, 2), (1, 3)].into();
        assert_eq!(listed, expected);
        // The listings past the cap count as seen: another stuck run adds none of them.
        assert_eq!(f.add_run(&first, &stuck, &actions, 100_000), 0);
        // A run stuck longer adds new ordinals, but none joins: each is more than the cap
        // past the reference run's last listing (5), or past the cap for client 1, which
        // the reference run never had list.
        let longer = vec![listings(150), listings(60)];
        let left_out = f.left_out_by_repeats;
        assert_eq!(f.add_run(&first, &longer, &actions, 100_000), 50 + 56);
        assert_eq!(f.left_out_by_repeats - left_out, (50 + 56) * single as u64);
        // Uncapped (the default), the same run adds every new listing.
        let mut all = Frontier::default();
        all.add_run(&[], &[listings(5)], &actions, 100_000);
        all.add_run(&first, &stuck, &actions, 100_000);
        assert_eq!(all.queued(), 5 * single + (95 + 2 + 4) * single);
        assert_eq!(all.left_out_by_repeats, 0);
    }

    #[test]
    fn an_outage_and_a_burst_are_tried_only_when_named_and_an_isolation_by_default() {
        let mut actions = Actions {
            pause_ms: 5_000,
            repeat_next: 0,
            repeat_window_ms: 0,
            only: Vec::new(),
        };
        let key = &request_keys(&[vec![req(code::DELETE, "/l/n-0000000001")]])[0];
        let outage = |points: Vec<Point>| {
            (points.into_iter())
                .filter(|p| matches!(p.action, AimedAction::Outage { .. }))
                .count()
        };
        assert_eq!(outage(actions.points_at(key)), 0, "not by default");
        // An isolation is, as long as a pause.
        let isolations: Vec<_> = (actions.points_at(key).into_iter())
            .filter(|p| matches!(p.action, AimedAction::Isolate { .. }))
            .collect();
        assert_eq!(isolations.len(), 1);
        assert_eq!(
            isolations[0].action,
            AimedAction::Isolate { isolated_ms: 5_000 }
        );
        actions.only = vec!["outage"];
        let points = actions.points_at(key);
        assert_eq!(points.len(), 1);
        assert_eq!(points[0].action, AimedAction::Outage { down_ms: 5_000 });
        actions.only = vec!["outage", "expire"];
        assert_eq!(actions.points_at(key).len(), 2);
        actions.only = vec!["burst"];
        let points = actions.points_at(key);
        assert_eq!(points.len(), 1);
        assert_eq!(points[0].action, AimedAction::Burst { cuts: 4 });
        assert!(Actions::knows("outage") && Actions::knows("crash") && !Actions::knows("nap"));
    }

    #[test]
    fn pairs_keep_only_second_points_the_first_points_run_reached() {
        let actions = Actions {
            pause_ms: 5_000,
            repeat_next: 0,
            repeat_window_ms: 0,
            only: Vec::new(),
        };
        let reference = vec![vec![
            req(code::CREATE2, "/l/n-0000000001"),
            req(code::DELETE, "/l/n-0000000001"),
        ]];
        let singles: Vec<Point> = request_keys(&reference)
            .iter()
            .flat_map(|k| actions.points_at(k))
            .collect();
        let first = &singles[0]; // a dropped create
        // Its run never sent the delete: no pair with it.
        let reached = vec![vec![req(code::CREATE2, "/l/n-0000000001")]];
        assert_eq!(second_points(first, &reached, &singles).count(), 0);
        let reached = reference.clone();
        let seconds: Vec<&Point> = second_points(first, &reached, &singles).collect();
        assert_eq!(seconds.len(), Actions::SINGLE);
        assert!(seconds.iter().all(|p| p.at.op == "delete"));
    }

    #[test]
    fn only_the_named_actions_are_tried_and_the_names_are_the_actions() {
        let mut actions = Actions {
            pause_ms: 5_000,
            repeat_next: 4,
            repeat_window_ms: 3_000,
            only: Vec::new(),
        };
        assert_eq!(actions.single().map(AimedAction::name), Actions::NAMES);
        let first = RequestKey {
            client: 0,
            op: "delete",
            class: "/l/".into(),
            nth: 1,
        };
        assert_eq!(actions.points_at(&first).len(), Actions::SINGLE + 4);
        actions.only = vec!["give-up"];
        let tried: Vec<(AimedAction, Repeat)> = actions
            .points_at(&first)
            .into_iter()
            .map(|p| (p.action, p.repeat))
            .collect();
        assert_eq!(tried, [(AimedAction::GiveUp, Repeat::Once)]);
        // A drop's repeats come with it.
        actions.only = vec!["drop-request"];
        let tried: Vec<Repeat> = actions
            .points_at(&first)
            .into_iter()
            .map(|p| p.repeat)
            .collect();
        assert_eq!(
            tried,
            [Repeat::Once, Repeat::Next(4), Repeat::WindowMs(3_000)]
        );
    }
}
