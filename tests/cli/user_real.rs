//! `real` and `search` for a user's recipe: a binary of the user's own on
//! `zklock::CommandLine` registers its recipe's real side (`CommandLine::real_recipe`)
//! beside its simulation side, `real --recipe NAME` runs it on a real server and judges
//! it, and `search --lock NAME` searches it, naming the binary in the lines it prints.
//! Such a binary's
//! output goes straight to stdout, so each test runs this test binary again as the user's
//! binary, and reads that output.

use std::path::Path;
use std::process::Command;
use zklock::{CommandLine, RealRecipe, Recipes, RecordingClient, RegistryError};
use zklock_canaries::{Bug, Canary, CanaryLock};
use zklock_recipe::history::LockRole;
use zklock_recipe::lock::LockOptions;
use zklock_recipe::under_test::ShippedLock;
use zklock_sim::{Recipe, SimClient};

/// A user's recipe, one type for both sides: its lock on a simulated client and on a real
/// session's (here zklock's lock, under the team's name).
struct TeamLock;

impl Recipe for TeamLock {
    type Lock = ShippedLock<SimClient>;
    fn lock(&self, client: SimClient, role: LockRole, path: &str) -> Self::Lock {
        ShippedLock::new(client, role, path, LockOptions::default()).expect("a valid path")
    }
}

impl RealRecipe for TeamLock {
    type Lock = ShippedLock<RecordingClient>;
    fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> Self::Lock {
        ShippedLock::new(client, role, path, LockOptions::default()).expect("a valid path")
    }
}

/// A user's recipe with a bug: zklock's canary that forgets a release's delete whatever
/// came of it, on a real session (its simulation side is the canary itself).
struct TeamForgetful;

impl RealRecipe for TeamForgetful {
    type Lock = CanaryLock<RecordingClient>;
    fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> Self::Lock {
        let index = client.index();
        Canary(Bug::ForgetfulRelease).lock_on(client, index, role, path)
    }
}

/// Set in the process that plays the user's binary: its arguments, one a line.
const AS_USERS_BINARY: &str = "ZKLOCK_TEST_AS_USERS_REAL_BINARY";

/// The user's binary, as its `main` would build it.
fn users_command_line() -> CommandLine {
    let mut recipes = Recipes::new();
    recipes
        .register("team-lock", "our team's lock", TeamLock)
        .expect("a new, valid name");
    let forgetful = Canary(Bug::ForgetfulRelease);
    recipes
        .register("team-forgetful", "our lock's first release", forgetful)
        .expect("a new, valid name");
    let mut cli = CommandLine::new(recipes);
    cli.real_recipe("team-lock", TeamLock)
        .expect("a new, valid name");
    cli.real_recipe("team-forgetful", TeamForgetful)
        .expect("a new, valid name");
    cli
}

/// In the process that plays the user's binary, runs it and exits with its status.
fn as_users_binary() {
    if let Some(args) = std::env::var_os(AS_USERS_BINARY) {
        let args = args.to_string_lossy().into_owned();
        let argv = std::iter::once("/opt/team/team-zklock").chain(args.lines());
        let status = users_command_line().run(argv);
        std::process::exit(status.code().into());
    }
}

/// Runs the user's binary on `args` in `dir`, through `test` (the test calling it, which
/// starts with [`as_users_binary`]): (exit code, stdout, stderr).
fn users_binary(test: &str, args: &[&str], dir: &Path) -> (i32, String, String) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &format!("cli::user_real::{test}")])
        .args(["--nocapture", "--test-threads", "1"])
        .env(AS_USERS_BINARY, args.join("\n"))
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.code().expect("exited"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_unknown_real_recipe_is_refused_naming_the_binarys_recipes() {
    as_users_binary();
    let dir = tempfile::tempdir().unwrap();
    let test = "an_unknown_real_recipe_is_refused_naming_the_binarys_recipes";
    for args in [
        &["real", "--recipe", "no-such-lock"][..],
        &["search", "--lock", "no-such-lock"],
    ] {
        let (code, out, err) = users_binary(test, args, dir.path());
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        // The user's recipe, and zklock's, which every binary runs on real servers.
        assert!(
            err.contains("no-such-lock") && err.contains("team-lock") && err.contains("zklock"),
            "{args:?}: {err}"
        );
    }
    // A real side is registered by the rule for names, once a name.
    let mut cli = users_command_line();
    let again = cli.real_recipe("team-lock", TeamLock).unwrap_err();
    assert_eq!(
        again,
        RegistryError::Duplicate {
            name: "team-lock".into()
        }
    );
    let bad = cli.real_recipe("team lock", TeamLock).unwrap_err();
    assert!(matches!(bad, RegistryError::InvalidName { .. }), "{bad}");
}

#[test]
fn a_users_recipe_runs_on_a_real_server_and_is_judged_by_the_checker() {
    as_users_binary();
    if !zklock_real::harness::available_for_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let test = "a_users_recipe_runs_on_a_real_server_and_is_judged_by_the_checker";
    // A fixed script (3 attempts a client, no fault): the run ends once it is done, so
    // that it checks acquisitions however slow the machine.
    let args = [
        "real",
        "--recipe",
        "team-lock",
        "--clients",
        "3",
        "--attempts",
        "3",
        "--faults",
        "none",
        "--duration",
        "60s",
        "--out",
        "failures",
    ];
    let (code, out, err) = users_binary(test, &args, dir.path());
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("zklock real: team-lock 3 clients"), "{out}");
    assert!(out.contains("ok: every property held"), "{out}");
}

/// `search` prints the `real` line that reproduces a violation: a user's binary names
/// itself there, and its recipe by the name it registered.
#[test]
fn a_users_binary_searches_its_recipe_and_names_itself_in_the_reproduction() {
    as_users_binary();
    if !zklock_real::harness::available_for_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let test = "a_users_binary_searches_its_recipe_and_names_itself_in_the_reproduction";
    // The smallest script, as tests/cli/search.rs searches zklock's canary.
    let mut args = vec!["search", "--lock", "team-forgetful", "--out", "failures"];
    args.extend(super::search::SMALL);
    args.extend(super::search::JOBS);
    args.extend(super::search::DROPS);
    let (code, out, err) = users_binary(test, &args, dir.path());
    assert_eq!(code, 1, "{out}{err}");
    let line = out
        .lines()
        .map(str::trim)
        .find(|l| l.ends_with("--aim 0:drop-request:delete:/zklock/lock/"))
        .unwrap_or_else(|| panic!("no reproduction line for the dropped delete:\n{out}"));
    assert!(
        line.starts_with("/opt/team/team-zklock real --recipe team-forgetful "),
        "{line}"
    );
}

/// docs/your-lock.md's snippet of what a user writes is `CommandLine::real_recipe`'s doc
/// test, word for word, so that it compiles as the guide shows it.
#[test]
fn the_your_lock_real_snippet_is_the_doc_test_of_real_recipe() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let guide = std::fs::read_to_string(root.join("docs/your-lock.md")).unwrap();
    let start = "```rust,no_run\nuse zklock::{RealRecipe, RecordingClient};\n";
    let at = guide.find(start).expect("the guide has the snippet") + "```rust,no_run\n".len();
    let snippet = &guide[at..at + guide[at..].find("```\n").expect("the snippet ends")];
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let docs: String = lib
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("///"))
        .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
        .collect();
    assert!(
        docs.contains(&format!("```no_run\n{snippet}```\n")),
        "docs/your-lock.md's snippet is not CommandLine::real_recipe's doc test:\n{snippet}"
    );
}
