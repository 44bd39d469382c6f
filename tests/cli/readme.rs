//! The README's commands, run as written: every `cargo run --release -- ...` line of its
//! shell blocks runs here, in order, in one scratch directory, with the exit status its
//! comment names (0 when it names none); every other command must be one `.ci/run` runs.

use super::zklock;
use std::path::Path;

/// One command of the README: its words after `cargo run --release --`, or the whole line
/// for a command this test does not run itself, and the exit status its comment names.
#[derive(Debug)]
struct Command {
    line: String,
    args: Option<Vec<String>>,
    status: i32,
}

fn readme_commands(readme: &str) -> Vec<Command> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_sh = !in_sh && line.trim() == "```sh";
            continue;
        }
        if !in_sh || line.trim().is_empty() {
            continue;
        }
        let (cmd, comment) = line.split_once(" #").unwrap_or((line, ""));
        let status = comment
            .split("exit status ")
            .nth(1)
            .map(|s| s.split(|c: char| !c.is_ascii_digit()).next().unwrap())
            .map_or(0, |n| n.parse().expect("an exit status"));
        let cmd = cmd.trim().to_string();
        let args = cmd
            .strip_prefix("cargo run --release -- ")
            .map(|rest| rest.split_whitespace().map(str::to_string).collect());
        out.push(Command {
            line: cmd,
            args,
            status,
        });
    }
    out
}

/// Whether a `zklock real` command can run here: a server, and the library its `--lock`
/// names. Otherwise it says why and the command is skipped, except under `CI=true`, where
/// that fails.
fn real_available(args: &[String]) -> bool {
    if !zklock_real::harness::available_for_tests() {
        return false;
    }
    let Some(name) = args.iter().skip_while(|a| *a != "--lock").nth(1) else {
        return true;
    };
    let kind = zklock_real::driver::DriverKind::parse(name).expect("a lock the CLI knows");
    super::driver_ready(kind, &format!("the README's `real --lock {name}`"))
}

#[test]
fn readme_tour_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    let commands = readme_commands(&readme);
    assert!(
        commands.iter().filter(|c| c.args.is_some()).count() >= 6,
        "the README's tour has lost its commands: {commands:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    // Twice in one directory: a second pass exits as the first did (it once exited 2 at
    // steps 4 and 5, their outputs there already).
    for pass in 1..=2 {
        readme_pass(&commands, &ci, dir.path(), pass);
    }
    // Everything the tour wrote is under traces/failures/, which git ignores (step 5
    // once left lost-wakeup.html in the repository's root).
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["traces"], "the tour wrote outside traces/failures/");
    let traces: Vec<_> = std::fs::read_dir(dir.path().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        traces,
        ["failures"],
        "the tour wrote outside traces/failures/"
    );
}

/// One pass of the README's commands, in `dir`.
fn readme_pass(commands: &[Command], ci: &str, dir: &Path, pass: u32) {
    for c in commands {
        let Some(args) = &c.args else {
            // The main job, the tests and the user's crate: .ci/run runs each.
            let covered = match c.line.as_str() {
                "cargo run --release" => ci.lines().any(|l| l.trim() == "cargo run --release"),
                // Run as written, or with its status kept until the background jobs end,
                // or with the committed reproductions' runs skipped there and run beside.
                "cargo test --workspace" => ci.lines().any(|l| {
                    let l = l.trim();
                    l == "cargo test --workspace"
                        || l.starts_with("cargo test --workspace || ")
                        || (l.starts_with("cargo test --workspace -- --exact \"${skips[@]}\" ")
                            && ci.contains(
                                "cargo test --workspace --test findings -- --exact \"${slow_findings[@]}\"",
                            ))
                }),
                "cargo test --manifest-path examples/user-crate/Cargo.toml" => ci.contains(
                    "cargo test --manifest-path \"$repo/examples/user-crate/Cargo.toml\"",
                ),
                _ => false,
            };
            assert!(covered, "no test or .ci/run runs the README's `{}`", c.line);
            continue;
        };
        if args[0] == "real" && !real_available(args) {
            continue;
        }
        let (code, out, err) = zklock(args, dir);
        assert_eq!(
            code, c.status,
            "pass {pass}: the README's `{}` exited {code}\nstdout:\n{out}\nstderr:\n{err}",
            c.line
        );
    }
}

#[test]
fn readme_commands_are_read_with_their_exit_status() {
    let text = "intro\n```sh\ncargo run --release -- explore --seeds 2   # exit status 1: why\n\
                cargo test --workspace\n```\n```rust\nnot a command\n```\n";
    let c = readme_commands(text);
    assert_eq!(c.len(), 2, "{c:?}");
    assert_eq!(
        c[0].args.as_deref(),
        Some(&["explore".to_string(), "--seeds".into(), "2".into()][..])
    );
    assert_eq!(c[0].status, 1);
    assert_eq!(c[1].args, None);
    assert_eq!(c[1].status, 0);
}
