//! Cells whose clients run in other processes (Kazoo's, one process per client; Curator's,
//! one JVM for all), speaking the line protocol of `bench/drivers/kazoo_bench.py`:
//! `READY <t>` from each process, `GO <start> <end>` to each, then `H [<client>]
//! <acquired> <release>` per hold and `DONE <holds> <t>`, times in CLOCK_MONOTONIC seconds.
//! A process that hosts one client omits `<client>`; one that hosts them all numbers them
//! from 0.

use super::{BenchError, CellConfig, CellResult, Contender, Hold, summarize, window};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};
use zklock_real::monotonic_now;

/// CLOCK_MONOTONIC now, in seconds, and the run clock at the same instant.
fn clocks_now() -> (f64, Duration) {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let run = monotonic_now();
    (ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9, run)
}

/// A contender's process: killed and reaped on drop.
struct Process {
    child: Child,
    stdin: Option<ChildStdin>,
    stderr: Arc<std::sync::Mutex<String>>,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

enum Line {
    Line(u32, String),
    Closed(u32),
}

/// Runs one cell of `cfg.clients` clients hosted by the processes `commands` start: one
/// client each, or, with `numbered`, all in one that numbers its holds by client. Every
/// process ready, one window for all, every hold collected. Blocks the calling thread.
pub(super) fn run_cell(
    contender: Contender,
    commands: Vec<Command>,
    numbered: bool,
    cfg: &CellConfig,
) -> Result<CellResult, BenchError> {
    let (tx, lines) = mpsc::channel();
    let mut procs = Vec::new();
    let name = contender.key();
    for (index, mut command) in (0u32..).zip(commands) {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                BenchError::new(format!(
                    "starting {}: {e}",
                    command.get_program().to_string_lossy()
                ))
            })?;
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr_pipe = child.stderr.take().expect("piped stderr");
        let stderr = Arc::new(std::sync::Mutex::new(String::new()));
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(Line::Line(index, line)).is_err() {
                    return;
                }
            }
            let _ = tx.send(Line::Closed(index));
        });
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr_pipe.read_to_string(&mut text);
            *sink.lock().unwrap_or_else(|p| p.into_inner()) = text;
        });
        procs.push(Process {
            stdin: child.stdin.take(),
            child,
            stderr,
        });
    }
    drop(tx);
    let failed = |procs: &mut Vec<Process>, index: u32, why: &str| -> BenchError {
        // Let the failing process finish writing its traceback.
        let p = &mut procs[index as usize];
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline && matches!(p.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(50));
        let err = p.stderr.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let tail: Vec<&str> = err.lines().rev().take(12).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        BenchError::new(format!(
            "{name} process {index} {why}; its stderr ends with:\n{}",
            tail.join("\n")
        ))
    };
    let recv = |until: Instant| -> Result<Line, BenchError> {
        lines
            .recv_timeout(until.saturating_duration_since(Instant::now()))
            .map_err(|_| BenchError::new(format!("{name} processes did not answer in time")))
    };

    // Every process connected and ready.
    let ready_by = Instant::now() + cfg.stop_timeout;
    let mut ready = 0;
    while ready < procs.len() {
        match recv(ready_by)? {
            Line::Line(_, l) if l.starts_with("READY") => ready += 1,
            Line::Line(..) => {}
            Line::Closed(i) => return Err(failed(&mut procs, i, "exited before READY")),
        }
    }

    // One window for all, on CLOCK_MONOTONIC and on the run clock.
    let (mono, run) = clocks_now();
    let offset_s = mono - run.as_secs_f64();
    let (start, end) = window(cfg.duration);
    let go = format!(
        "GO {:.9} {:.9}\n",
        start.as_secs_f64() + offset_s,
        end.as_secs_f64() + offset_s
    );
    for p in &mut procs {
        if let Some(stdin) = p.stdin.as_mut() {
            stdin
                .write_all(go.as_bytes())
                .and_then(|()| stdin.flush())
                .map_err(|e| BenchError::new(format!("writing to a {name} process: {e}")))?;
        }
    }
    let to_run = |secs: f64| Duration::from_secs_f64((secs - offset_s).max(0.0));

    let done_by = Instant::now() + cfg.duration + cfg.stop_timeout;
    let mut holds = Vec::new();
    let mut finished = vec![false; procs.len()];
    let mut done = 0;
    while done < procs.len() {
        match recv(done_by)? {
            Line::Line(index, l) => {
                let fields: Vec<&str> = l.split_whitespace().collect();
                let bad = || BenchError::new(format!("{name} process {index} printed {l:?}"));
                let parse = |s: &str| s.parse::<f64>().map_err(|_| bad());
                let (client, acquired, released) = match fields.as_slice() {
                    ["H", a, r] if !numbered => (index, a, r),
                    ["H", c, a, r] if numbered => (c.parse::<u32>().map_err(|_| bad())?, a, r),
                    ["H", ..] => return Err(bad()),
                    ["DONE", ..] => {
                        finished[index as usize] = true;
                        done += 1;
                        continue;
                    }
                    _ => continue,
                };
                if client >= cfg.clients {
                    return Err(bad());
                }
                holds.push(Hold {
                    client,
                    acquired: to_run(parse(acquired)?),
                    release_invoked: to_run(parse(released)?),
                });
            }
            Line::Closed(i) if finished[i as usize] => {}
            Line::Closed(i) => return Err(failed(&mut procs, i, "exited before DONE")),
        }
    }
    // The processes close their sessions and exit; give them a moment, then kill (drop).
    let exit_by = Instant::now() + Duration::from_secs(10);
    for p in &mut procs {
        p.stdin = None;
        while Instant::now() < exit_by && matches!(p.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    drop(procs);
    Ok(summarize(contender, cfg.clients, &holds, start, end))
}
