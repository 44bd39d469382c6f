//! `zklock search`: the fault-point search over real runs ([`zklock_search`]): its flags
//! parsed, the search run, and what it found printed. Each violation is printed with the
//! `real` line that reproduces it, naming the program as invoked (a user's binary on
//! `zklock::CommandLine` is not `zklock`), and its timeline written under `--out`.

use crate::Status;
use crate::cli::SearchArgs;
use crate::files::create_private_dir;
use crate::program::Program;
use crate::real_recipes::RealRecipes;
use anyhow::{Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zklock_real::shapes::Shape;
use zklock_real::workload::WorkloadConfig;
use zklock_search::{
    Actions, Event, Finding, Findings, Lock, Origin, Progress, Search, default_script,
};

pub fn run(a: SearchArgs, program: &Program, recipes: &RealRecipes) -> Result<Status> {
    let search = parse(&a, recipes, program)?.stop(crate::interrupt::for_real_run());
    if a.export.export.is_some() {
        // Refused before any run: a search of hours whose findings cannot be exported.
        zklock_search::export::check_lock(search.lock().name())?;
    }
    let mut printer = Printer {
        search: &a,
        lock: search.lock().name().to_owned(),
        readers: 0,
        bar: None,
        timelines: Vec::new(),
        next_file: 1,
    };
    printer.readers = script_readers(&a, search.lock());
    let started = Instant::now();
    let findings = search.run_with(&mut printer)?;
    if let Some(bar) = &printer.bar {
        bar.finish_and_clear();
    }
    if let Some((started, reused)) = findings.driver_processes {
        eprintln!("driver processes: {started} started, {reused} sessions opened on a kept one");
    }
    if !findings.reference_run {
        outln!("interrupted in the reference run: no point was tried");
        journal_hint(&a);
        return Ok(Status::Inconclusive);
    }
    print_table(&printer, &findings, started.elapsed());
    if findings.interrupted {
        journal_hint(&a);
    }
    if let Some(dir) = &a.export.export {
        export_findings(&findings, dir, &a)?;
    }
    // A lock that never acquires holds every property vacuously: never green.
    let exercised = findings.nothing_exercised();
    if let (true, Some(why)) = (findings.findings.is_empty(), &exercised) {
        outln!("inconclusive: {why}, so no property was put to the test");
    }
    Ok(match (findings.findings.is_empty(), findings.interrupted) {
        (false, _) => Status::Violated,
        (true, true) => Status::Inconclusive,
        (true, false) if exercised.is_some() => Status::Inconclusive,
        (true, false) => Status::Held,
    })
}

/// `--export DIR`: one export per cause; each that fails to export is said, and the
/// command fails once every one was tried.
fn export_findings(findings: &Findings, dir: &Path, a: &SearchArgs) -> Result<()> {
    let mut failed = Vec::new();
    for &i in findings.by_cause().keys() {
        let what = zklock_search::export::ToExport::from(&findings.findings[i]);
        if let Err(e) = crate::export_cmd::export_one(&what, dir, &a.export.verify) {
            outln!("not exported: {}: {e}", what.repro);
            failed.push(what.repro);
        }
    }
    if !failed.is_empty() {
        bail!("--export: {} finding(s) not exported (above)", failed.len());
    }
    Ok(())
}

fn journal_hint(a: &SearchArgs) {
    if let Some(path) = &a.journal {
        outln!(
            "go on with: the same command with --journal {} --resume",
            path.display()
        );
    }
}

/// What the search tells, printed as it comes: its lines, a progress bar over the
/// points, and each finding's timeline written under `--out`.
struct Printer<'a> {
    search: &'a SearchArgs,
    lock: String,
    readers: u32,
    bar: Option<ProgressBar>,
    /// Where each finding's files went, by its index.
    timelines: Vec<Option<Files>>,
    /// The number the next finding's files try first.
    next_file: usize,
}

/// A finding's files: its text timeline, its HTML timeline and the checker's explanation.
struct Files {
    timeline: PathBuf,
    html: Option<PathBuf>,
    explanation: Option<PathBuf>,
}

/// The first `search-LOCK-N` from `from` on that names none of a finding's files yet, and
/// its N: nothing another search wrote is replaced.
fn free_stem(out: &Path, lock: &str, from: usize) -> (PathBuf, usize) {
    let mut n = from;
    loop {
        let stem = out.join(format!("search-{lock}-{n}"));
        let taken = [".timeline.txt", ".timeline.html", ".explanation.txt"]
            .iter()
            .any(|ext| with_ext(&stem, ext).exists());
        if !taken {
            return (stem, n);
        }
        n += 1;
    }
}

fn with_ext(stem: &Path, ext: &str) -> PathBuf {
    let mut name = stem.as_os_str().to_owned();
    name.push(ext);
    PathBuf::from(name)
}

impl Printer<'_> {
    /// Prints `line` above the progress bar.
    fn line(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| outln!("{line}")),
            None => outln!("{line}"),
        }
    }

    fn found(&mut self, f: &Finding, in_pairs: bool) -> Result<()> {
        let points: Vec<String> = f.points.iter().map(ToString::to_string).collect();
        let violated = f.violated.join(", ");
        match f.origin {
            Origin::Point if in_pairs => {
                self.line(&format!("violated {violated} at {}", points.join(" and ")));
            }
            Origin::Point => {
                self.line(&format!("violated {violated} at {}", points.join(" then ")))
            }
            Origin::Control(i) => self.line(&format!(
                "violated {violated} without a fault (control run {})",
                i + 1
            )),
            // A shape's verdict was printed as it was judged; the reference run's is in
            // the table.
            _ => {}
        }
        let files = match &f.timeline {
            Some(text) => {
                let out = &self.search.out;
                create_private_dir(out)?;
                let (stem, n) = free_stem(out, &self.lock, self.next_file);
                self.next_file = n + 1;
                let header = format!("{}\n", f.repro);
                let write = |ext: &str, bytes: &[u8]| -> Result<PathBuf> {
                    let path = with_ext(&stem, ext);
                    crate::files::write_private(&path, bytes, false)?;
                    Ok(path)
                };
                let timeline = write(".timeline.txt", (header.clone() + text).as_bytes())?;
                let html = (f.html.as_ref()).map(|page| write(".timeline.html", page.as_bytes()));
                let explanation = (f.explanation.as_ref())
                    .map(|text| write(".explanation.txt", (header + text).as_bytes()));
                Some(Files {
                    timeline,
                    html: html.transpose()?,
                    explanation: explanation.transpose()?,
                })
            }
            None => None,
        };
        self.timelines.push(files);
        Ok(())
    }

    fn event(&mut self, event: Event<'_>) -> Result<()> {
        let a = self.search;
        match event {
            Event::ServersStarting { jobs } => eprintln!("starting {jobs} ZooKeeper server(s)..."),
            Event::Started { jobs } => outln!(
                "zklock search: {} with {} clients ({} readers{}), {} attempts each (drop every \
                 {}, session {} ms), k = {}, {jobs} at once, actions: {}",
                self.lock,
                a.clients,
                self.readers,
                match a.revokers {
                    0 => String::new(),
                    n => format!(", {n} revokers"),
                },
                a.attempts,
                a.workload.drop_every,
                a.workload.session_timeout_ms,
                a.k,
                match a.actions.is_empty() {
                    true => "all".to_owned(),
                    false => actions_named(&a.actions).join(","),
                }
            ),
            Event::Resumed { journal } => outln!("resumed from {journal}"),
            Event::ShapesStarting { shapes } => outln!(
                "workload shapes: {} runs without a fault ({})",
                shapes.len(),
                shapes
                    .iter()
                    .map(|s| s.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Event::ShapeJudged { shape, violated } => match violated.is_empty() {
                true => outln!("shape {shape}: every property held"),
                false => outln!("violated {} in shape {shape}", violated.join(", ")),
            },
            Event::Reference { requests, points } => {
                outln!("reference run: {requests} requests, {points} points");
                self.bar = Some(
                    ProgressBar::new(points as u64).with_style(
                        ProgressStyle::with_template(
                            "{bar:30} {pos}/{len} points, {elapsed} {msg}",
                        )
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                    ),
                );
            }
            Event::Pairs { pairs } => {
                self.line(&format!("k = 2: {pairs} pairs after dynamic reduction"));
                if let Some(bar) = &self.bar {
                    bar.set_length(bar.position() + pairs as u64);
                }
            }
            Event::Judged { queued, violations } => {
                if let Some(bar) = &self.bar {
                    if let Some(queued) = queued {
                        bar.set_length(queued as u64);
                    }
                    bar.inc(1);
                    bar.set_message(format!("{violations} violations"));
                }
            }
            Event::Found {
                finding, in_pairs, ..
            } => self.found(finding, in_pairs)?,
            _ => {}
        }
        Ok(())
    }
}

impl Progress for Printer<'_> {
    fn event(&mut self, event: Event<'_>) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        Printer::event(self, event).map_err(Into::into)
    }
}

fn print_table(p: &Printer<'_>, findings: &Findings, elapsed: Duration) {
    let mut by_property: BTreeMap<&str, u64> = BTreeMap::new();
    for f in &findings.findings {
        for p in &f.violated {
            *by_property.entry(p.as_str()).or_default() += 1;
        }
    }
    let violations = if by_property.is_empty() {
        "none".to_owned()
    } else {
        by_property
            .iter()
            .map(|(p, n)| format!("{p} ({n})"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    outln!();
    outln!("| lock | requests seen | points tried (k=2 pairs) | points that struck | violations |");
    outln!("|---|---|---|---|---|");
    let lock = match p.readers {
        0 => p.lock.clone(),
        r => format!("{} ({r} of {} clients read)", p.lock, p.search.clients),
    };
    outln!(
        "| {lock} | {} | {} ({}) | {} | {violations} |",
        findings.requests_seen,
        findings.tried,
        findings.pairs_tried,
        findings.struck,
    );
    print_left_out(findings);
    print_without_a_fault(findings);
    print_findings(p, findings);
    outln!();
    outln!(
        "{} in {:.0} s",
        if findings.interrupted {
            "interrupted (what ran is above)"
        } else {
            "searched"
        },
        elapsed.as_secs_f64()
    );
}

/// The workload shapes' runs, the fault-free runs, and how many violating points violated
/// only what a run without a fault did too.
fn print_without_a_fault(findings: &Findings) {
    if !findings.shapes.is_empty() {
        let runs: Vec<String> = findings
            .shapes
            .iter()
            .map(|(shape, violated)| match violated.is_empty() {
                true => format!("{shape} held"),
                false => format!("{shape} violated {}", violated.join(", ")),
            })
            .collect();
        outln!(
            "workload shapes, each run once without a fault: {}",
            runs.join("; ")
        );
    }
    let ff = &findings.fault_free;
    let controls = ff.runs.saturating_sub(1);
    outln!(
        "fault-free runs: {} (the reference run{}): {}",
        ff.runs,
        match (controls, findings.control_every) {
            (0, _) => String::new(),
            (n, every) =>
                format!(" and {n} control run(s), one after every {every} runs of points"),
        },
        ff.describe()
    );
    let explained = |f: &Finding| findings.as_without_a_fault(f);
    let at_points = findings
        .findings
        .iter()
        .filter(|f| f.origin == Origin::Point);
    let (violating, as_fault_free) =
        at_points.fold((0, 0), |(n, e), f| (n + 1, e + u64::from(explained(f))));
    if as_fault_free > 0 {
        outln!(
            "{as_fault_free} of the {violating} violating runs of points violated only what a \
             fault-free run violated too, at the same attempts: marked \"as without a fault\" \
             below (their fault is perhaps not the cause)"
        );
    }
}

/// Each finding listed first for its cause, with its reproduction, its files and where
/// the others of its cause struck.
fn print_findings(p: &Printer<'_>, findings: &Findings) {
    let explained = |f: &Finding| findings.as_without_a_fault(f);
    let groups = findings.by_cause();
    for (i, (f, files)) in findings.findings.iter().zip(&p.timelines).enumerate() {
        let Some(same) = groups.get(&i) else {
            // Listed with the first of its cause.
            continue;
        };
        outln!();
        let origin = match f.origin {
            Origin::Reference => " (without a fault: the reference run)".to_owned(),
            Origin::Control(i) => format!(" (without a fault: control run {})", i + 1),
            Origin::Point if explained(f) => " (as without a fault)".to_owned(),
            _ => String::new(),
        };
        outln!("{}{origin}:", f.violated.join(", "));
        outln!("  {}", f.repro);
        if let Some(files) = files {
            outln!("  timeline: {}", files.timeline.display());
            let more: Vec<String> = [("page", &files.html), ("explanation", &files.explanation)]
                .into_iter()
                .filter_map(|(what, path)| Some(format!("{what}: {}", path.as_ref()?.display())))
                .collect();
            if !more.is_empty() {
                outln!("  {}", more.join(", "));
            }
        }
        if !same.is_empty() {
            let at: Vec<String> = (same.iter())
                .map(|&j| {
                    let points = findings.findings[j].points.iter().map(ToString::to_string);
                    points.collect::<Vec<_>>().join(" then ")
                })
                .collect();
            outln!(
                "  and {} more run(s) of the same cause (the same violations after the same \
                 kind of fault; the journal and --out keep each), at: {}",
                same.len(),
                at.join("; ")
            );
        }
    }
}

fn print_left_out(findings: &Findings) {
    if findings.left_out > 0 {
        outln!(
            "{} points were left out: past --max-points, or a third point in a chain \
             (a request first seen after a fault first seen after a fault)",
            findings.left_out
        );
    }
    if findings.left_out_by_repeats > 0 {
        outln!(
            "{} points were left out past --follow-on-repeats-max {n}: a faulted run's new \
             requests of one client's operation and path class beyond its first {n} \
             (a library polling while stuck sends one at every turn)",
            findings.left_out_by_repeats,
            n = findings.follow_on_repeats_max
        );
    }
}

/// The readers of the script: `--readers`, else 1 for a read/write library lock (so
/// that its script has both sides), else 0.
fn script_readers(a: &SearchArgs, lock: &Lock) -> u32 {
    a.readers.unwrap_or(default_script(lock).readers)
}

/// The actions named, each once, in the order given.
fn actions_named(names: &[String]) -> Vec<&'static str> {
    let mut only = Vec::new();
    for name in names {
        if let Some(&known) = (Actions::NAMES.iter().chain(&Actions::OPT_IN)).find(|&&n| n == name)
            && !only.contains(&known)
        {
            only.push(known);
        }
    }
    only
}

/// The search the flags ask for; the library checks the settings' bounds.
fn parse(a: &SearchArgs, recipes: &RealRecipes, program: &Program) -> Result<Search> {
    let lock = Lock::named(&a.lock, recipes)?;
    if let Some(name) = a.actions.iter().find(|n| !Actions::knows(n)) {
        bail!(
            "--actions: unknown action {name:?} (drop-request, withhold-reply, expire, \
             pause, crash, give-up, isolate; outage and burst only when named)"
        );
    }
    let workload = a.workload.apply(WorkloadConfig {
        clients: a.clients,
        readers: script_readers(a, &lock),
        revokers: a.revokers,
        attempts_per_client: a.attempts,
        // A bound on each run only: a run ends once its script is done.
        duration_ms: a.run_limit_ms,
        drain_timeout_ms: a.workload.session_timeout_ms.saturating_mul(3),
        ..WorkloadConfig::default()
    });
    let actions = Actions {
        // Past the session timeout: the server expires the session in the pause.
        pause_ms: a.workload.session_timeout_ms.saturating_mul(2),
        repeat_next: a.repeat_next,
        repeat_window_ms: a.repeat_window_ms,
        only: actions_named(&a.actions),
    };
    let mut search = Search::new(lock)
        .script(workload)
        .actions(actions)
        .k(a.k)
        .jobs(a.jobs as usize)
        .shapes(parse_shapes(&a.shapes)?)
        .max_points(a.max_points)
        .max_runs(a.max_runs)
        .control_every(a.control_every)
        .follow_on_repeats_max(a.follow_on_repeats_max)
        .fresh_drivers(a.fresh_drivers)
        .container_check_interval_ms(a.container_check_interval_ms)
        .program(program.line("").trim_end());
    if let Some(path) = &a.journal {
        search = search.journal(path, a.resume);
    }
    Ok(search)
}

/// `--shapes`: every shape when none is named; `none` alone for no shape.
fn parse_shapes(names: &[String]) -> Result<Vec<Shape>> {
    if names.is_empty() {
        return Ok(Shape::ALL.to_vec());
    }
    if names.iter().any(|n| n == "none") {
        if names.len() > 1 {
            bail!("--shapes: none names no shape, and goes alone");
        }
        return Ok(Vec::new());
    }
    let mut shapes = Vec::new();
    for name in names {
        let Some(shape) = Shape::parse(name) else {
            let known: Vec<&str> = Shape::ALL.iter().map(|s| s.name()).collect();
            bail!(
                "--shapes: unknown shape {name:?} ({}, or none)",
                known.join(", ")
            );
        };
        if !shapes.contains(&shape) {
            shapes.push(shape);
        }
    }
    Ok(shapes)
}
