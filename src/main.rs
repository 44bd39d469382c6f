//! The `zklock` command line.

mod args;
mod bench;
mod check_cmd;
mod explore;
mod real_cmd;
mod replay;
mod shrink_cmd;

use anyhow::{Result, bail};
use std::process::ExitCode;

// A simulation allocates and frees many small strings and vectors per step; mimalloc
// serves them in a fraction of glibc's instructions (see the README's figures).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str = "\
zklock: deterministic simulator and model checker for ZooKeeper lock recipes

USAGE:
    zklock [explore] [OPTIONS]   run the shipped lock recipe on the simulated ZooKeeper with
                                 all faults on, over a range of seeds, checking every
                                 property (the default job); stops at the first violation,
                                 writes its trace and prints the replay command
    zklock check [OPTIONS]       bounded exhaustive model checking: every interleaving and
                                 fault placement of a small configuration
                                 [--clients 1|2|3 (2)] [--faults-max K (1)]
                                 [--acquisitions N (1)] [--readers N] [--schedules-max N]
                                 [--time-limit-s S] [--no-prune] [--mix-offset N (0;
                                 2: each client's first acquire is the timed one)]
                                 [--sequence-start N (0), as for explore]
    zklock replay <TRACE>        re-run a trace file's exact schedule, compare the history
                                 with the recorded one, print the timeline and the verdict
    zklock shrink <TRACE>        minimize a failing trace: fewer clients, acquisitions,
                                 faults and choices, same violated property
                                 [--out FILE] [--runs-max N (4000)] [--time-limit-s S (60)]
                                 [--fresh-seeds N (100): seeds tried per smaller client
                                 or acquisition count, 0 for none]
                                 [--exhaustive-schedules N (20000): schedules of the
                                 exhaustive search of the smaller sizes (at most 3
                                 clients x 2 acquisitions, 1 fault), 0 for none]
    zklock merge <SUMMARY>...    merge the JSON summaries of explore shards
    zklock real [OPTIONS]        run the shipped recipe and the same workload on real
                                 ZooKeeper servers (started by the run, or --connect),
                                 with faults until 2/3 of the run, and check the history
                                 [--clients N (5, at most 64)] [--duration 30s]
                                 [--ensemble 1|3 (1)] [--readers N]
                                 [--faults none|all|cut,lost-create,expire,black-hole,
                                 local-expire,pause,crash,kill-leader (all)]
                                 [--connect HOST:PORT[,...]] [--seed S]
                                 [--session-timeout-ms MS (4000)] [--hold-ms MS (5)]
                                 [--connect-timeout-ms MS (10000)] [--out DIR]
                                 [--drop-every N (4; 0: never)] [--mix-offset N (0;
                                 2: each client's first acquire is the timed one)]
                                 [--acquire-timeout-ms MS (3000), of the timed acquires]
                                 [--restart-killed-leader] (off: a killed leader stays
                                 down, as ZooKeeper 3.8.0 can keep an uncommitted
                                 transaction when it rejoins)
    zklock bench [OPTIONS]       benchmark figures, side by side in one run, printed and
                                 written to target/zklock-bench/bench.json: simulation
                                 against its madsim ceiling, exhaustive schedules/states
                                 per second, real lock throughput and handoff latency
                                 against zookeeper-client's lock and Kazoo's
                                 [--sim-only | --real-only] [--seeds N (2000)]
                                 [--exhaustive-limit-s S (60)] [--real-cell-s S]
                                 (`zklock bench --help` lists every flag)
    zklock help                  print this help

OPTIONS (explore):
    --seeds N            seeds in the range (default 100)
    --seed-start S       first seed (default 0)
    --clients N          contending clients (default 5, at most 64)
    --acquisitions N     acquisitions per client (default 20)
    --readers N          clients taking the read lock; the rest write (default 0: exclusive)
    --drop-every N       drop every N-th acquire of a client after a delay the chooser
                         draws in 0..=20 ms, as tokio::time::timeout does (default 4;
                         0: never)
    --mix-offset N       start each client's acquires at the N-th of the mix of modes
                         (blocking, try, timed, and the drops): 2 starts with a timed
                         acquire (default 0)
    --sequence-start N   the lock directory's sequential counter when it is created
                         (default 0): at 2147483600 every run crosses ZooKeeper's wrap
                         of the counter to -2147483648
    --out DIR            where failing traces go (default traces/failures)
    --threads N          worker threads (default: every core)
    --time-limit-s S     start no new seed after S seconds
    --shard K/N          run only seeds with seed % N == K-1, to spread a sweep over jobs
    --summary FILE       write the sweep's summary as JSON (merge shards with `zklock merge`)
    --no-shrink          do not shrink a failing trace

EXIT STATUS: 0 when every property held, 1 on a violation or an error.
";

fn main() -> ExitCode {
    match dispatch() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Ok(true): all good; Ok(false): a property was violated (already reported).
fn dispatch() -> Result<bool> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("help" | "--help" | "-h") => {
            print!("{USAGE}");
            Ok(true)
        }
        Some("explore") => explore::run(&args[1..]),
        Some("replay") => replay::run(&args[1..]),
        Some("shrink") => shrink_cmd::run(&args[1..]),
        Some("check") => check_cmd::run(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("merge") => explore::merge(&args[1..]),
        Some("real") => real_cmd::run(&args[1..]),
        None => explore::run(&[]),
        Some(a) if a.starts_with("--") => explore::run(&args),
        Some(other) => bail!("unknown command {other:?}\n\n{USAGE}"),
    }
}
