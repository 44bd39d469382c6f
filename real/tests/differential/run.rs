//! Runs a sequence on any `Coordination` and records what its clients saw.

use super::ops::{Req, Step};
use futures_util::future::join_all;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::time::Duration;
use zklock_recipe::{Coordination, Op, OpResult, SessionState, Stat, Watch, ZkError};

/// What one response or watch outcome was, in comparable form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    Err(String),
    Created(String, Stat),
    Done,
    Exists(Option<Stat>),
    Data(Vec<u8>, Stat),
    Children(Vec<String>),
    Stat(Stat),
    Multi(Vec<String>, Vec<Stat>),
    Event(String, String),
    /// A fault the test injected.
    Fault,
}

/// The faults a side injects, each awaited until the client has seen it through: an
/// expired session reports Expired, a cut connection is up again.
pub trait Faults: Sync {
    fn expire(&self, session: usize) -> impl Future<Output = ()> + Send;
    fn disconnect(&self, session: usize) -> impl Future<Output = ()> + Send;
}

/// One entry of a run: a response to (step, session, request index), or a watch outcome
/// (the step at whose response it was first seen, session, the request that set it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub step: usize,
    pub session: usize,
    pub what: Kind,
    pub seen: Seen,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Response(usize),
    /// The watch set by (step, request index) fired.
    Watch(usize, usize),
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "step {} session {} {:?}: {:?}",
            self.step, self.session, self.what, self.seen
        )
    }
}

fn error_kind(e: &ZkError) -> String {
    match e {
        ZkError::MultiFailed { index, error } => {
            format!("MultiFailed({index}, {})", error_kind(error))
        }
        other => {
            let s = format!("{other:?}");
            s.split(['(', ' ', '{']).next().unwrap_or("").to_owned()
        }
    }
}

fn abs(dir: &str, p: &str) -> String {
    p.replacen('~', dir, 1)
}

fn rel(dir: &str, p: &str) -> String {
    match p.strip_prefix(dir) {
        Some(rest) => format!("~{rest}"),
        None => p.to_owned(),
    }
}

fn op_abs(dir: &str, op: &Op) -> Op {
    match op.clone() {
        Op::Check { path, version } => Op::Check {
            path: abs(dir, &path),
            version,
        },
        Op::Create { path, data, mode } => Op::Create {
            path: abs(dir, &path),
            data,
            mode,
        },
        Op::Delete { path, version } => Op::Delete {
            path: abs(dir, &path),
            version,
        },
        Op::SetData {
            path,
            data,
            version,
        } => Op::SetData {
            path: abs(dir, &path),
            data,
            version,
        },
    }
}

async fn one<C: Coordination>(c: &C, dir: &str, req: &Req) -> (Seen, Option<Watch>) {
    let err = |e: ZkError| (Seen::Err(error_kind(&e)), None);
    match req {
        Req::Create { path, data, mode } => {
            match c.create(&abs(dir, path), &data.bytes(), *mode).await {
                Ok((p, s)) => (Seen::Created(rel(dir, &p), s), None),
                Err(e) => err(e),
            }
        }
        Req::Delete { path, version } => match c.delete(&abs(dir, path), *version).await {
            Ok(()) => (Seen::Done, None),
            Err(e) => err(e),
        },
        Req::Exists { path, watch: false } => match c.exists(&abs(dir, path)).await {
            Ok(s) => (Seen::Exists(s), None),
            Err(e) => err(e),
        },
        Req::Exists { path, watch: true } => match c.exists_watch(&abs(dir, path)).await {
            Ok((s, w)) => (Seen::Exists(s), Some(w)),
            Err(e) => err(e),
        },
        Req::GetData { path, watch: false } => match c.get_data(&abs(dir, path)).await {
            Ok((d, s)) => (Seen::Data(d, s), None),
            Err(e) => err(e),
        },
        Req::GetData { path, watch: true } => match c.get_data_watch(&abs(dir, path)).await {
            Ok((d, s, w)) => (Seen::Data(d, s), Some(w)),
            Err(e) => err(e),
        },
        Req::GetChildren { path, watch } => {
            let got = if *watch {
                c.get_children_watch(&abs(dir, path))
                    .await
                    .map(|(ch, w)| (ch, Some(w)))
            } else {
                c.get_children(&abs(dir, path)).await.map(|ch| (ch, None))
            };
            match got {
                Ok((ch, w)) => {
                    let mut names: Vec<String> = ch.iter().map(str::to_owned).collect();
                    names.sort();
                    (Seen::Children(names), w)
                }
                Err(e) => err(e),
            }
        }
        Req::SetData {
            path,
            data,
            version,
        } => match c.set_data(&abs(dir, path), &data.bytes(), *version).await {
            Ok(s) => (Seen::Stat(s), None),
            Err(e) => err(e),
        },
        Req::Multi(ops) => {
            let ops = ops.iter().map(|op| op_abs(dir, op)).collect();
            match c.multi(ops).await {
                Ok(results) => {
                    let mut names = Vec::new();
                    let mut stats = Vec::new();
                    for r in results {
                        match r {
                            OpResult::Check => names.push("check".to_owned()),
                            OpResult::Delete => names.push("delete".to_owned()),
                            OpResult::Create { path, stat } => {
                                names.push(format!("create {}", rel(dir, &path)));
                                stats.push(stat);
                            }
                            OpResult::SetData { stat } => {
                                names.push("set".to_owned());
                                stats.push(stat);
                            }
                        }
                    }
                    (Seen::Multi(names, stats), None)
                }
                Err(e) => err(e),
            }
        }
        Req::Close => match c.close().await {
            Ok(()) => (Seen::Done, None),
            Err(e) => err(e),
        },
        Req::Expire | Req::Disconnect => unreachable!("faults are injected by `batch`"),
    }
}

/// A session's watches not yet fired: (step, request index) -> the watch.
type Pending = BTreeMap<(usize, usize), Watch>;

/// Takes the outcome of every watch that has one, as seen at `step`.
fn take_fired(dir: &str, pending: &mut Pending, step: usize, session: usize, out: &mut Vec<Entry>) {
    pending.retain(|&(at, index), w| match w.try_take() {
        None => true,
        Some(outcome) => {
            let seen = match outcome {
                Ok(ev) => Seen::Event(format!("{:?}", ev.event_type), rel(dir, &ev.path)),
                Err(e) => Seen::Err(error_kind(&e)),
            };
            out.push(Entry {
                step,
                session,
                what: Kind::Watch(at, index),
                seen,
            });
            false
        }
    });
}

/// Whether the server surely answered this.
pub fn from_server(seen: &Seen) -> bool {
    match seen {
        Seen::Fault => false,
        Seen::Err(kind) => {
            let root = kind
                .rsplit(", ")
                .next()
                .unwrap_or(kind)
                .trim_end_matches(')');
            !matches!(
                root,
                "BadArguments" | "ConnectionLoss" | "SessionExpired" | "SessionClosed"
            )
        }
        _ => true,
    }
}

/// A session's batch, pipelined: every request is sent before any reply is awaited.
async fn batch<C: Coordination, F: Faults>(
    c: &C,
    faults: &F,
    dir: &str,
    step: usize,
    session: usize,
    reqs: &[Req],
    pending: &std::sync::Mutex<Pending>,
) -> Vec<Entry> {
    let futures = reqs.iter().enumerate().map(|(index, req)| async move {
        let (seen, watch) = match req {
            Req::Expire => (faults.expire(session).await, (Seen::Fault, None)).1,
            Req::Disconnect => (faults.disconnect(session).await, (Seen::Fault, None)).1,
            _ => one(c, dir, req).await,
        };
        let mut out = Vec::new();
        let mut pending = pending.lock().unwrap();
        // Outcomes that arrived before this reply are seen now, in this step. Only a
        // reply from the server orders them: a request the client refused itself (a bad
        // path, a session gone) or lost with its connection shows nothing.
        if from_server(&seen) {
            take_fired(dir, &mut pending, step, session, &mut out);
        }
        if let Some(w) = watch {
            pending.insert((step, index), w);
        }
        out.push(Entry {
            step,
            session,
            what: Kind::Response(index),
            seen,
        });
        out
    });
    join_all(futures).await.into_iter().flatten().collect()
}

/// Waits until the session is connected again after a connection loss (or has ended).
async fn settle<C: Coordination>(c: &C) {
    for _ in 0..12_000 {
        match c.session_state() {
            SessionState::Disconnected => c.sleep(Duration::from_millis(10)).await,
            _ => return,
        }
    }
    panic!("session still disconnected after 120 s");
}

/// Runs `steps` with `clients` (one per session) in directory `dir`, which exists, then
/// has each session read `dir` once, so that every watch outcome due has been seen.
pub async fn run<C: Coordination, F: Faults>(
    clients: &[C],
    faults: &F,
    dir: &str,
    steps: &[Step],
) -> Vec<Entry> {
    let pending: Vec<std::sync::Mutex<Pending>> =
        clients.iter().map(|_| Default::default()).collect();
    let mut entries = Vec::new();
    let flush = Step {
        batches: (0..clients.len())
            .map(|s| {
                (
                    s,
                    vec![Req::Exists {
                        path: "~".to_owned(),
                        watch: false,
                    }],
                )
            })
            .collect(),
    };
    let flushes = std::iter::repeat_n(&flush, 1);
    for (i, step) in steps.iter().chain(flushes).enumerate() {
        let batches = step.batches.iter().map(|(session, reqs)| {
            batch(
                &clients[*session],
                faults,
                dir,
                i,
                *session,
                reqs,
                &pending[*session],
            )
        });
        for got in join_all(batches).await {
            entries.extend(got);
        }
        for (session, _) in &step.batches {
            settle(&clients[*session]).await;
        }
    }
    entries
}
