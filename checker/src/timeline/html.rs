//! The visual timeline: one self-contained HTML page per trace (inline CSS, script and
//! SVG; no network, no external script or font).
//!
//! The page has one lane per client and session. Each hold is a bar from `Acquired` to
//! the release or the loss that ended the belief; in a work queue's run, each item's
//! processing is a bar from `ProcessStart` to its completion, loss or crash, and each
//! produced item a labelled mark; each request a line from its issue to
//! its outcome (ok, failed, unknown); faults are drawn on the lane they strike, with their
//! duration shaded; the events the violation report names are ringed. Every mark has hover
//! text with the event's details. The script draws the SVG from data embedded in the page
//! and zooms on the time axis (wheel, drag, buttons). When more than
//! [`DETAIL_ITEMS_MAX`] requests and minor events are in view they are collapsed into a
//! per-lane density, so a run of 10,000 events stays readable; holds, faults, losses and
//! the violation stay drawn one by one.

use super::{Describer, format_ms};
use crate::holds::{all_holds, is_crash};
use crate::trace::{SavedReport, Trace};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use zklock_recipe::SessionId;
use zklock_recipe::history::{EventKind, FaultKind, History};

/// Most requests and minor events (session changes, watch events, resource reads and
/// writes...) the page draws one by one; past it, those in view become a density.
pub const DETAIL_ITEMS_MAX: usize = 3000;

/// The data the page's script draws from, embedded as JSON.
#[derive(Serialize)]
struct Model {
    /// Lane labels, `c1 s0x1`.
    lanes: Vec<String>,
    /// Per event: lane, time in µs, kind, hover text.
    ev: Vec<(usize, u64, &'static str, String)>,
    /// Per hold: lane, start event, end event (-1: still held when the history ends),
    /// how it ended, label.
    holds: Vec<(usize, usize, i64, &'static str, String)>,
    /// Per request: issue event, outcome event (-1: none recorded), outcome.
    ops: Vec<(usize, i64, &'static str)>,
    /// A work queue's: per processing of an item, as `holds` (lane, `ProcessStart`, end
    /// event or -1, how it ended, label).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    processing: Vec<(usize, usize, i64, &'static str, String)>,
    /// A work queue's: per produced item, its `ItemProduced` event and short label.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    produced: Vec<(usize, String)>,
    /// Per fault: event, duration in µs (0: instantaneous).
    faults: Vec<(usize, u64)>,
    /// Events the report names, with what it says of them.
    marked: Vec<(usize, String)>,
    /// Limit of detailed items in view ([`DETAIL_ITEMS_MAX`]).
    detail_max: usize,
}

/// The page of `trace`. Deterministic: the same trace gives the same bytes.
pub fn render_timeline_html(trace: &Trace) -> String {
    let title = format!(
        "zklock timeline: recipe {}, {}",
        trace.recipe,
        trace.seed_words()
    );
    let facts = format!(
        "{} clients, {} events, {} choices; zklock {}{}, trace format {}",
        trace.scenario.clients,
        trace.history.events.len(),
        trace.choices.len(),
        trace.zklock_version,
        match trace.zklock_commit.as_str() {
            "" => String::new(),
            c => format!(" (commit {c})"),
        },
        trace.format_version
    );
    let fallback = trace.violation.as_deref().unwrap_or("none");
    page(
        &title,
        &facts,
        &trace.history,
        trace.report.as_ref(),
        fallback,
    )
}

/// The page of a history that is no trace (a real server's run): `title` heads it,
/// `report` is the checker's on it.
pub fn render_history_html(title: &str, history: &History, report: &SavedReport) -> String {
    let facts = format!("{} events", history.events.len());
    page(title, &facts, history, Some(report), "none")
}

fn page(
    title: &str,
    facts: &str,
    history: &History,
    report: Option<&SavedReport>,
    fallback: &str,
) -> String {
    let model = model(history, report);
    let queue = !model.processing.is_empty() || !model.produced.is_empty();
    let json = serde_json::to_string(&model).unwrap_or_else(|_| "{}".into());
    let mut out = String::with_capacity(json.len() + 16 * 1024);
    out.push_str(HEAD);
    let _ = write!(
        out,
        "<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n\
         <p class=\"facts\">{}</p>\n",
        esc(title),
        esc(title),
        esc(facts)
    );
    header_report(&mut out, report, fallback);
    out.push_str(CONTROLS);
    out.push_str(LEGEND);
    if queue {
        out.push_str(QUEUE_LEGEND);
    }
    out.push_str(CHART);
    // `<` never appears raw inside the script element, so no string can end it.
    let safe = json
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    let _ = write!(
        out,
        "<script type=\"application/json\" id=\"zk-data\">{safe}</script>\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    );
    out
}

/// The violation in words, above the picture: what the trace records, and each proving
/// event as a link that zooms the picture to it.
fn header_report(out: &mut String, report: Option<&SavedReport>, fallback: &str) {
    let Some(report) = report else {
        let _ = writeln!(
            out,
            "<p class=\"violation\">violation: {}</p>\n<p>This trace carries no checker's \
             report (it was written by an older zklock): <code>zklock replay TRACE --save \
             NEW.json</code> writes one that does.</p>",
            esc(fallback)
        );
        return;
    };
    if report.violated.is_empty() {
        out.push_str("<p class=\"violation\">no property violated</p>\n");
    } else {
        let _ = writeln!(
            out,
            "<p class=\"violation\">VIOLATED: {}</p>",
            esc(&report.violated.join(", "))
        );
    }
    if let Some(why) = &report.stopped {
        let _ = writeln!(out, "<p>the run stopped early: {}</p>", esc(why));
    }
    for v in &report.violations {
        let _ = writeln!(
            out,
            "<div class=\"report\"><p><b>{}</b>{}: {}</p>",
            esc(&v.property),
            if v.known_unavoidable {
                " (known, unavoidable class: not a failure)"
            } else {
                ""
            },
            esc(&v.summary)
        );
        if let Some(why) = &v.explanation {
            let _ = writeln!(out, "<p>{}</p>", esc(why));
        }
        out.push_str("<ul>\n");
        for e in &v.events {
            let _ = writeln!(
                out,
                "<li><a href=\"#chart\" data-ev=\"{}\">#{}</a> <code>{}</code> &larr; {}</li>",
                e.index,
                e.index,
                esc(&e.description),
                esc(&e.role)
            );
        }
        for e in &v.faults_before {
            let _ = writeln!(
                out,
                "<li><a href=\"#chart\" data-ev=\"{}\">#{}</a> <code>{}</code> &larr; fault \
                 just before</li>",
                e.index,
                e.index,
                esc(&e.description)
            );
        }
        out.push_str("</ul></div>\n");
    }
    let _ = writeln!(
        out,
        "<details><summary>the checker's full report</summary><pre>{}</pre></details>",
        esc(&report.text)
    );
}

fn model(history: &History, report: Option<&SavedReport>) -> Model {
    let lanes = lanes(history);
    let lane_of = |client: u32, session: SessionId| lanes.get(&(client, session)).copied();
    let describer = Describer::new(history);
    let mut ev = Vec::with_capacity(history.events.len());
    let mut ops = Vec::new();
    let mut open_ops: BTreeMap<(u32, u64), usize> = BTreeMap::new();
    let mut faults = Vec::new();
    for (i, e) in history.events.iter().enumerate() {
        let lane = lane_of(e.client, e.session).unwrap_or(0);
        let kind = match &e.kind {
            EventKind::OpInvoke { op_id, .. } => {
                open_ops.insert((e.client, *op_id), ops.len());
                ops.push((i, -1, "pending"));
                "op"
            }
            EventKind::OpOk { op_id } => {
                close_op(&mut ops, &mut open_ops, e.client, *op_id, i, "ok")
            }
            EventKind::OpFail { op_id, .. } => {
                close_op(&mut ops, &mut open_ops, e.client, *op_id, i, "fail")
            }
            EventKind::OpUnknown { op_id } => {
                close_op(&mut ops, &mut open_ops, e.client, *op_id, i, "unknown")
            }
            EventKind::AcquireInvoked { .. } => "acq",
            EventKind::Acquired { .. } => "acquired",
            EventKind::AcquireFailed { .. } => "acqfail",
            EventKind::ReleaseInvoked => "rel",
            EventKind::Released => "released",
            EventKind::ReleaseFailed { .. } => "relfail",
            EventKind::Lost { .. } => "lost",
            EventKind::Session { .. } => "session",
            EventKind::ResourceRead { .. } => "read",
            EventKind::ResourceWrite {
                fenced_accepted: false,
                ..
            } => "rejected",
            EventKind::ResourceWrite { .. } => "write",
            EventKind::Fault { fault } => {
                faults.push((i, fault_duration_us(*fault)));
                "fault"
            }
            EventKind::Done => "done",
            EventKind::WatchEvent { .. } => "watch",
            EventKind::ItemProduced { .. } => "produced",
            EventKind::ProcessStart { .. } => "process",
            EventKind::ProcessEnd { .. } => "completed",
            _ => "other",
        };
        let text = format!(
            "#{i}  {} ms  c{} s{}  {}",
            format_ms(e.time_us),
            e.client,
            e.session,
            describer.describe(i)
        );
        ev.push((lane, e.time_us, kind, text));
    }
    let holds = all_holds(history)
        .into_iter()
        .map(|h| {
            let lane = lane_of(h.client, h.session).unwrap_or(0);
            let end_kind = match h.end.map(|i| &history.events[i]) {
                None => "open",
                Some(e) if is_crash(e) => "crash",
                Some(e) => match e.kind {
                    EventKind::Lost { .. } => "lost",
                    _ => "released",
                },
            };
            let label = format!("{} token {} ({})", h.label(), h.token, h.node);
            (
                lane,
                h.start,
                h.end.map_or(-1, |e| e as i64),
                end_kind,
                label,
            )
        })
        .collect();
    let processing = processing(history)
        .into_iter()
        .map(|(start, end, how)| {
            let e = &history.events[start];
            let label = match &e.kind {
                EventKind::ProcessStart { item, token } => format!("item {item} token {token}"),
                _ => String::new(),
            };
            let lane = lane_of(e.client, e.session).unwrap_or(0);
            (lane, start, end.map_or(-1, |i| i as i64), how, label)
        })
        .collect();
    let produced = history
        .events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match &e.kind {
            EventKind::ItemProduced { item } => Some((i, item_label(item))),
            _ => None,
        })
        .collect();
    let marked = report
        .map(|r| {
            r.marks()
                .into_iter()
                .filter(|(i, _)| *i < history.events.len())
                .map(|(i, m)| (i, m.join("; ")))
                .collect()
        })
        .unwrap_or_default();
    let mut labels = vec![String::new(); lanes.len()];
    for ((client, session), lane) in &lanes {
        labels[*lane] = format!("c{client} s{session}");
    }
    Model {
        lanes: labels,
        ev,
        holds,
        ops,
        processing,
        produced,
        faults,
        marked,
        detail_max: DETAIL_ITEMS_MAX,
    }
}

/// Every processing of an item: its `ProcessStart`, the event that ended the consumer's
/// belief (its `ProcessEnd`, `Lost`, crash, next `ProcessStart` or `Done`; `None`: still
/// processing when the history ends), and how it ended.
fn processing(history: &History) -> Vec<(usize, Option<usize>, &'static str)> {
    let mut out: Vec<(usize, Option<usize>, &'static str)> = Vec::new();
    // By client: its processing under way (an index into `out`).
    let mut open: BTreeMap<u32, usize> = BTreeMap::new();
    for (i, e) in history.events.iter().enumerate() {
        let how = match &e.kind {
            EventKind::ProcessStart { .. } => "open",
            EventKind::ProcessEnd { .. } => "completed",
            EventKind::Lost { .. } => "lost",
            EventKind::Done => "open",
            _ if is_crash(e) => "crash",
            _ => continue,
        };
        if let Some(k) = open.remove(&e.client) {
            out[k] = (out[k].0, Some(i), how);
        }
        if matches!(e.kind, EventKind::ProcessStart { .. }) {
            open.insert(e.client, out.len());
            out.push((i, None, "open"));
        }
    }
    out
}

/// A produced item's label: its sequence number (`item-<guid>-0000000007`: "item 7"),
/// or its whole name if it has none.
fn item_label(item: &str) -> String {
    match item.rsplit_once('-') {
        Some((_, seq)) if !seq.is_empty() && seq.bytes().all(|b| b.is_ascii_digit()) => {
            format!(
                "item {}",
                seq.trim_start_matches('0').parse::<u64>().unwrap_or(0)
            )
        }
        _ => item.to_owned(),
    }
}

/// Ends the request `op_id` of `client` at event `i`; the event's kind for the page.
fn close_op(
    ops: &mut [(usize, i64, &'static str)],
    open: &mut BTreeMap<(u32, u64), usize>,
    client: u32,
    op_id: u64,
    i: usize,
    outcome: &'static str,
) -> &'static str {
    if let Some(k) = open.remove(&(client, op_id)) {
        ops[k].1 = i as i64;
        ops[k].2 = outcome;
    }
    outcome
}

/// Lane numbers: one per (client, session), by client, then by first appearance.
fn lanes(history: &History) -> BTreeMap<(u32, SessionId), usize> {
    let mut first: BTreeMap<(u32, SessionId), usize> = BTreeMap::new();
    for (i, e) in history.events.iter().enumerate() {
        first.entry((e.client, e.session)).or_insert(i);
    }
    let mut order: Vec<((u32, SessionId), usize)> = first.into_iter().collect();
    order.sort_by_key(|((client, _), at)| (*client, *at));
    order
        .into_iter()
        .enumerate()
        .map(|(lane, (key, _))| (key, lane))
        .collect()
}

fn fault_duration_us(fault: FaultKind) -> u64 {
    let ms = match fault {
        FaultKind::Partition { duration_ms } | FaultKind::Pause { duration_ms } => duration_ms,
        FaultKind::DelayedDelivery { delay_ms } => delay_ms,
        _ => 0,
    };
    ms.saturating_mul(1000)
}

/// Text for HTML content and attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const HEAD: &str = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n";

const CONTROLS: &str = r#"<div id="controls">
<button type="button" id="zoom-in" title="zoom in (or the mouse wheel over the picture)">+</button>
<button type="button" id="zoom-out" title="zoom out">&minus;</button>
<button type="button" id="fit" title="the whole run">fit</button>
<button type="button" id="to-violation" title="zoom to the events the report names">violation</button>
<label>axis <select id="axis"><option value="time">time</option><option value="order">event order</option></select></label>
<span id="status"></span>
</div>
"#;

const LEGEND: &str = r#"<div id="legend">
<span><i class="sw hold"></i>hold (acquired to release)</span>
<span><i class="sw hold-lost"></i>hold ended by loss or crash</span>
<span><i class="sw op-ok"></i>request ok</span>
<span><i class="sw op-fail"></i>failed</span>
<span><i class="sw op-unknown"></i>outcome unknown</span>
<span><i class="sw fault"></i>fault</span>
<span><i class="sw watch"></i>watch event</span>
<span><i class="sw ring"></i>named by the violation report</span>
"#;

/// A work queue's legend entries, on its pages only.
const QUEUE_LEGEND: &str = r#"<span><i class="sw proc"></i>processing an item (taken to completed)</span>
<span><i class="sw proc-lost"></i>processing ended by loss or crash</span>
<span><i class="sw produced"></i>item produced</span>
"#;

const CHART: &str = r#"</div>
<div id="wrap"><svg id="chart" xmlns="http://www.w3.org/2000/svg" width="1200" height="100"></svg></div>
<noscript><p>The picture is drawn by the page's script; the report above and the trace's
text timeline hold the same facts.</p></noscript>
"#;

const STYLE: &str = include_str!("html.css");

/// The page's script: draws the SVG from the embedded data, zooms and pans.
const SCRIPT: &str = include_str!("html.js");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Hb;
    use zklock_recipe::SessionState;
    use zklock_sim::Scenario;

    fn trace_of(history: History) -> Trace {
        Trace::new(Scenario::default(), 3, vec![], "mutex", history, None)
    }

    #[test]
    fn a_node_name_cannot_end_the_script_or_inject_markup() {
        let mut h = Hb::new();
        h.ev(
            1,
            EventKind::Acquired {
                token: 1,
                node: "</script><script>alert(1)</script><b>".into(),
            },
        );
        let mut trace = trace_of(h.build());
        trace.recipe = "<img src=x onerror=alert(1)>".into();
        let page = render_timeline_html(&trace);
        assert_eq!(
            page.matches("<script").count(),
            2,
            "only the page's two scripts"
        );
        assert!(!page.contains("<img"), "the recipe's name is escaped");
        assert!(!page.contains("<b>"));
        assert!(!SCRIPT.contains("</script") && !STYLE.contains("</style"));
    }

    #[test]
    fn the_page_fetches_nothing() {
        let mut h = Hb::new();
        h.acquire(1, 1);
        h.release(1, 1);
        let page = render_timeline_html(&trace_of(h.build()));
        for outside in [
            "src=",
            "href=\"http",
            "@import",
            "url(http",
            "<link",
            "fetch(",
        ] {
            assert!(!page.contains(outside), "{outside}");
        }
        assert!(page.contains("default-src 'none'"));
    }

    #[test]
    fn one_lane_per_client_and_session_with_holds_requests_and_faults() {
        let mut h = Hb::new();
        h.acquire(1, 1);
        h.fault(1, FaultKind::Pause { duration_ms: 40 });
        h.session(1, SessionState::Expired);
        h.acquire(2, 2);
        let mut history = h.build();
        // Client 1 comes back on a new session: a lane of its own.
        let mut again = history.events[0].clone();
        again.session = SessionId(0x9);
        again.time_us += 100_000;
        history.events.push(again);
        let m = model(&history, None);
        assert_eq!(m.lanes, ["c1 s0x1001", "c1 s0x9", "c2 s0x1002"]);
        assert_eq!(m.holds.len(), 2);
        assert!(m.holds.iter().all(|h| h.3 == "open"), "{:?}", m.holds);
        assert_eq!((m.holds[0].0, m.holds[1].0), (0, 2));
        assert!(m.ops.iter().all(|o| o.1 >= 0 && o.2 == "ok"), "{:?}", m.ops);
        assert_eq!(m.faults.len(), 1);
        assert_eq!(m.faults[0].1, 40_000);
        assert!(m.ev.iter().all(|e| e.3.starts_with('#')));
    }

    #[test]
    fn a_work_queues_processing_is_a_bar_to_its_end_and_each_produced_item_a_mark() {
        let mut h = Hb::new();
        let item = |n: u32| format!("item-1001x{n}-000000000{n}");
        let produced = h.ev(1, EventKind::ItemProduced { item: item(1) });
        h.ev(1, EventKind::ItemProduced { item: item(2) });
        let start = |h: &mut Hb, c: u32, n: u32| {
            h.ev(
                c,
                EventKind::ProcessStart {
                    item: item(n),
                    token: i64::from(n),
                },
            )
        };
        let first = start(&mut h, 2, 1);
        let completed = h.ev(2, EventKind::ProcessEnd { item: item(1) });
        let second = start(&mut h, 3, 2);
        let lost = h.ev(
            3,
            EventKind::Lost {
                reason: "disconnected".into(),
            },
        );
        let third = start(&mut h, 2, 2);
        let history = h.build();
        let m = model(&history, None);
        let ends: Vec<(usize, i64, &str)> = m.processing.iter().map(|p| (p.1, p.2, p.3)).collect();
        assert_eq!(
            ends,
            [
                (first, completed as i64, "completed"),
                (second, lost as i64, "lost"),
                (third, -1, "open"),
            ]
        );
        assert_eq!(m.processing[0].4, "item item-1001x1-0000000001 token 1");
        assert_eq!(m.produced[0], (produced, "item 1".to_owned()));
        assert_eq!(m.produced.len(), 2);
        let page = render_timeline_html(&trace_of(history));
        assert!(page.contains("item produced"), "the queue's legend");
        // A lock's page has neither the queue's data nor its legend.
        let mut h = Hb::new();
        h.acquire(1, 1);
        let page = render_timeline_html(&trace_of(h.build()));
        assert!(!page.contains("item produced") && !page.contains("\"processing\""));
    }

    #[test]
    fn the_page_is_the_same_for_the_same_trace() {
        let mut h = Hb::new();
        h.acquire(1, 1);
        h.acquire(2, 2);
        let t = trace_of(h.build());
        assert_eq!(render_timeline_html(&t), render_timeline_html(&t));
    }
}
