//! The HTML timelines in a real browser: headless Chromium loads each page, its script
//! draws the picture, and the DOM it built is checked (so the script ran), and a
//! screenshot is a real PNG. Without Chromium the browser tests are skipped with a notice,
//! except under CI=true, where that is a failure (`.ci/run` installs Debian's `chromium`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use zklock_checker::{Trace, check_seed};
use zklock_sim::{Scenario, ShippedRecipe};

/// Chromium's binary: `ZKLOCK_CHROMIUM`, else `chromium` or `chromium-browser` on PATH.
/// `None` (with a notice) where there is none, outside CI.
fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("ZKLOCK_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| {
            let path = std::env::var_os("PATH")?;
            std::env::split_paths(&path)
                .flat_map(|d| [d.join("chromium"), d.join("chromium-browser")])
                .find(|p| p.is_file())
        });
    if found.is_none() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true but Chromium is not installed: apt-get install chromium");
        }
        eprintln!("skipped: no chromium on PATH (apt-get install chromium to run this test)");
    }
    found
}

/// Runs headless Chromium on `page` with `args`; its stdout. Each run gets a profile
/// directory of its own, so that runs in parallel do not share one.
fn headless(chromium: &Path, page: &Path, args: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.canonicalize().unwrap().display()))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed on {}: {}",
        page.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The page's DOM after its script ran.
fn dump_dom(chromium: &Path, page: &Path) -> String {
    headless(chromium, page, &["--dump-dom"])
}

/// The DOM before the page's scripts: what the script drew, without the script's own
/// text (which spells the markup it draws).
fn drawn(dom: &str) -> &str {
    &dom[..dom.find("<script").expect("the page has its scripts")]
}

/// Every trace in traces/ and its subdirectories (the semaphore's, for one), sorted.
fn committed_traces() -> Vec<PathBuf> {
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("traces")];
    let mut traces: Vec<PathBuf> = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                // traces/failures/ holds what local runs wrote (git ignores it).
                if path.file_name().is_some_and(|n| n != "failures") {
                    dirs.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "json") {
                traces.push(path);
            }
        }
    }
    traces.sort();
    assert!(traces.len() >= 10, "traces/ holds {} traces", traces.len());
    traces
}

/// The lanes a trace's page draws: one per (client, session) of its history.
fn lanes_of(trace: &Trace) -> usize {
    let lanes: BTreeSet<_> = trace
        .history
        .events
        .iter()
        .map(|e| (e.client, e.session))
        .collect();
    lanes.len()
}

/// Checks the DOM `dom` of `trace`'s page: the script drew every lane, and rings each
/// event the report names.
fn assert_drawn(name: &str, trace: &Trace, dom: &str) {
    let dom = drawn(dom);
    assert!(
        dom.contains(&format!(
            "data-rendered=\"{} events\"",
            trace.history.events.len()
        )),
        "{name}: the script did not draw the picture:\n{}",
        &dom[..dom.len().min(3000)]
    );
    assert_eq!(
        dom.matches("<g class=\"lane\"").count(),
        lanes_of(trace),
        "{name}: lanes"
    );
    let report = trace
        .report
        .as_ref()
        .expect("a committed trace has a report");
    let named: BTreeSet<usize> = report.marks().into_keys().collect();
    assert!(!named.is_empty(), "{name}: its report names no event");
    assert_eq!(
        dom.matches("class=\"violation-mark\"").count(),
        named.len(),
        "{name}: every named event is ringed"
    );
    for property in &report.violated {
        assert!(
            dom.contains(property.as_str()),
            "{name}: {property} not shown"
        );
    }
}

#[test]
fn every_committed_trace_has_its_html_timeline_as_zklock_draws_it_now() {
    for path in committed_traces() {
        let trace = Trace::read(&path).unwrap();
        let html = Trace::html_path(&path);
        let committed = std::fs::read_to_string(&html).unwrap_or_else(|e| {
            panic!(
                "{}: {e}: write it with `zklock timeline {} --force`",
                html.display(),
                path.display()
            )
        });
        assert!(
            committed == trace.timeline_html(),
            "{} is stale: rewrite it with `zklock timeline {} --force`",
            html.display(),
            path.display()
        );
        assert!(
            trace.report.is_some(),
            "{}: no report; `zklock replay {} --save {} --force` adds it",
            path.display(),
            path.display(),
            path.display()
        );
    }
}

#[test]
fn every_committed_timeline_renders_in_chromium_with_its_lanes_and_violation() {
    let Some(chromium) = chromium() else { return };
    let traces = committed_traces();
    let started = Instant::now();
    // Chromium spends most of a run waiting on itself: a few at once take the time of one.
    let doms: Vec<(PathBuf, String)> = std::thread::scope(|s| {
        let chunks: Vec<&[PathBuf]> = traces.chunks(traces.len().div_ceil(4)).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let chromium = &chromium;
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|p| (p.clone(), dump_dom(chromium, &Trace::html_path(p))))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    eprintln!(
        "rendered {} timelines in Chromium in {:.1} s",
        doms.len(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(doms.len(), traces.len());
    for (path, dom) in doms {
        let trace = Trace::read(&path).unwrap();
        assert_drawn(&path.display().to_string(), &trace, &dom);
    }
}

/// The width and height of a PNG, from its IHDR chunk; `None` if it is not a PNG.
fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
    if bytes.len() < 24 || &bytes[..8] != SIGNATURE || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    Some((be(&bytes[16..20]), be(&bytes[20..24])))
}

#[test]
fn a_canary_timeline_renders_to_a_screenshot() {
    let Some(chromium) = chromium() else { return };
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/canary-deaf-holder.json");
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("timeline.png");
    headless(
        &chromium,
        &Trace::html_path(&trace),
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1600,900",
            "--hide-scrollbars",
        ],
    );
    let bytes = std::fs::read(&png).expect("chromium wrote the screenshot");
    assert_eq!(png_size(&bytes), Some((1600, 900)), "not a 1600x900 PNG");
    // A blank page compresses to a few kilobytes; lanes, bars and text take far more.
    assert!(
        bytes.len() > 20_000,
        "a near-empty screenshot: {} bytes",
        bytes.len()
    );
}

/// A run of more than 10,000 events: the page draws its lanes and holds, and collapses
/// requests into a density until zoomed.
#[test]
fn a_timeline_of_ten_thousand_events_renders_collapsed() {
    let Some(chromium) = chromium() else { return };
    let scenario = Scenario {
        clients: 5,
        acquisitions_per_client: 220,
        ..Scenario::default()
    };
    let run = check_seed(&scenario, 7, &ShippedRecipe::default());
    let trace = run.trace(&scenario, 7, "mutex");
    let events = trace.history.events.len();
    assert!(events > 10_000, "only {events} events");
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("big.html");
    std::fs::write(&page, trace.timeline_html()).unwrap();
    let started = Instant::now();
    let dom = dump_dom(&chromium, &page);
    eprintln!(
        "{events} events: {} bytes of HTML, drawn in Chromium in {:.1} s",
        std::fs::metadata(&page).unwrap().len(),
        started.elapsed().as_secs_f64()
    );
    let dom = drawn(&dom);
    assert!(dom.contains(&format!("data-rendered=\"{events} events\"")));
    assert_eq!(dom.matches("<g class=\"lane\"").count(), lanes_of(&trace));
    assert!(dom.contains("class=\"density\""), "requests not collapsed");
    assert!(dom.contains("class=\"hold "), "holds not drawn");
    // Collapsed, the picture has far fewer shapes than the run has events.
    let shapes = dom.matches("<rect").count() + dom.matches("<circle").count();
    assert!(shapes < events, "{shapes} shapes for {events} events");
}

/// A work queue's page: every processing of an item is a bar, every produced item a
/// labelled mark, and the legend names both.
#[test]
fn a_work_queue_timeline_draws_processing_as_bars_and_produced_items_as_marks() {
    let Some(chromium) = chromium() else { return };
    let scenario = Scenario::default();
    let run = check_seed(&scenario, 3, &zklock_sim::QueueRecipe::default());
    assert!(run.report.ok(), "{}", run.report);
    let trace = run.trace(&scenario, 3, "queue");
    let count = |of: fn(&zklock_recipe::history::EventKind) -> bool| {
        trace.history.events.iter().filter(|e| of(&e.kind)).count()
    };
    use zklock_recipe::history::EventKind as K;
    let processings = count(|k| matches!(k, K::ProcessStart { .. }));
    let produced = count(|k| matches!(k, K::ItemProduced { .. }));
    assert!(
        processings >= 20 && produced >= 20,
        "{processings} {produced}"
    );
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("queue.html");
    std::fs::write(&page, trace.timeline_html()).unwrap();
    let dom = dump_dom(&chromium, &page);
    let dom = drawn(&dom);
    // A passing run opens on the whole run: every bar and mark is in view.
    assert_eq!(dom.matches("<rect class=\"proc end-").count(), processings);
    assert_eq!(dom.matches("<path class=\"produced\"").count(), produced);
    assert_eq!(dom.matches("class=\"produced-label\"").count(), produced);
    assert!(dom.contains("processing an item (taken to completed)"));
    assert!(dom.contains("item produced"));
    assert!(dom.contains("items processing"), "the status counts them");
}
