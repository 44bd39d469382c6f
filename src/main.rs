//! The `zklock` command line.

use anyhow::{Context, Result, bail};
use zklock_recipe::{Coordination, CreateMode};
use zklock_sim::{SimConfig, run};

const USAGE: &str = "\
zklock: deterministic simulator and model checker for ZooKeeper lock recipes

USAGE:
    zklock demo [--seed N]    run a small simulated contention demo and print its log
    zklock help               print this help
";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None | Some("demo") => demo(&args[args.len().min(1)..]),
        Some("help" | "--help" | "-h") => {
            print!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown command {other:?}\n\n{USAGE}"),
    }
}

fn demo(args: &[String]) -> Result<()> {
    let mut seed = 1;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seed" => {
                let v = it.next().context("--seed needs a value")?;
                seed = v
                    .parse()
                    .with_context(|| format!("--seed: {v:?} is not a u64"))?;
            }
            other => bail!("unknown option {other:?}\n\n{USAGE}"),
        }
    }
    let log = run(SimConfig::with_seed(seed), |sim| async move {
        let clients: Vec<_> = (0..3).map(|_| sim.client()).collect();
        clients[0]
            .create("/demo", b"", CreateMode::Persistent)
            .await
            .expect("create /demo");
        let mut tasks = Vec::new();
        for (i, c) in clients.into_iter().enumerate() {
            tasks.push(sim.spawn(async move {
                let (p, s) = c
                    .create("/demo/n-", b"", CreateMode::EphemeralSequential)
                    .await
                    .expect("create");
                format!(
                    "{:>8.3} ms  client {i} (session {}) created {p} czxid {}",
                    c.now().as_secs_f64() * 1e3,
                    c.session_id(),
                    s.czxid
                )
            }));
        }
        let mut lines = Vec::new();
        for t in tasks {
            lines.push(t.await);
        }
        lines.push(format!("children: {:?}", sim.server_children("/demo")));
        lines.push(format!("choices drawn: {:?}", sim.choices()));
        lines
    })?;
    println!("seed {seed}");
    for l in log {
        println!("{l}");
    }
    Ok(())
}
