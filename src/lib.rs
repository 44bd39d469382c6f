//! The `zklock` command line, as a library: every workflow of the `zklock` binary
//! (explore, check, replay, shrink, merge, ...) on the recipes you give it by name.
//!
//! Your own lock gets the whole command line from a `[[bin]]` or an example of your
//! crate: register it beside (or instead of) the shipped lock, and hand the set to
//! [`main_with`].
//!
//! ```no_run
//! use std::process::ExitCode;
//! use zklock::Recipes;
//! # use zklock_sim::ShippedRecipe as MyRecipe;
//!
//! fn main() -> ExitCode {
//!     let mut recipes = Recipes::shipped();
//!     recipes
//!         .register("my-lock", "my team's lock", MyRecipe::default())
//!         .expect("a new, valid name");
//!     // `my-cli explore --recipe my-lock`, `my-cli replay traces/failures/seed-3.json`...
//!     zklock::main_with(recipes)
//! }
//! ```
//!
//! # Cargo features
//!
//! `real` (the `real` and `search` subcommands: runs on real ZooKeeper servers, through
//! zklock-real, tokio and zookeeper-client, of zklock's recipes and of yours given
//! `CommandLine::real_recipe`) and `bench` (the `bench` subcommand), both default. A
//! binary for your own lock in simulation needs neither: with
//! `default-features = false` zklock builds the simulation's command line alone, and the
//! subcommands left out exit 2 naming the feature they need.
//!
//! # Exit status
//!
//! [`Status`]: 0 when every property held, 1 when one was violated (or a simulated run
//! did not finish, or a replay did not reproduce its trace), 2 for a usage error or bad
//! input, 3 when nothing was violated but the check did not finish.

#[macro_use]
mod out;
#[cfg(feature = "bench")]
mod bench_cmd;
mod check_cmd;
mod check_merge;
mod cli;
mod explore;
#[cfg(feature = "real")]
mod export_args;
#[cfg(feature = "real")]
mod export_cmd;
mod program;
pub use explore::SEEDS_DEFAULT;
mod fault_args;
mod files;
mod given;
mod interrupt;
mod numbers;
#[cfg(feature = "real")]
mod real_cmd;
#[cfg(feature = "real")]
mod real_recipes;
mod replay;
mod scenario_args;
#[cfg(feature = "real")]
mod search_cmd;
mod shape_args;
mod shrink_cmd;
mod timeline_cmd;
#[cfg(feature = "real")]
mod workload_args;

pub use zklock_checker::registry::{AnyRecipe, Recipes, RegistryError};
/// The real side of a recipe, for [`CommandLine::real_recipe`]: its lock on a real
/// ZooKeeper session ([`RecordingClient`]), as [`zklock_sim::Recipe`] makes it on a
/// simulated one.
#[cfg(feature = "real")]
pub use zklock_real::{recording::RecordingClient, workload::RealRecipe};

use clap::FromArgMatches;
use cli::{Cli, Command};
use std::ffi::OsString;
use std::process::ExitCode;

/// How a command ended: its exit status.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// 0: every property held (replay: on the recorded history; shrink: a shrunk trace
    /// was written; help, version, lists).
    Held,
    /// 1: a property was violated, a simulated run did not finish within its limits, or
    /// a replay's history differs from the recorded one.
    Violated,
    /// 2: a usage error or bad input: an unknown flag, recipe or subcommand, a value out
    /// of range, an unreadable, corrupt or non-failing trace, a file that exists already
    /// (without `--force`), a server that cannot be reached.
    BadInput,
    /// 3: inconclusive: nothing was violated, but the check did not finish (an
    /// exhaustive search stopped by a bound, a sweep stopped before its last seed, a
    /// merge lacking any seed, an interrupted run).
    Inconclusive,
}

impl Status {
    /// The process exit status.
    pub fn code(self) -> u8 {
        match self {
            Status::Held => 0,
            Status::Violated => 1,
            Status::BadInput => 2,
            Status::Inconclusive => 3,
        }
    }
}

impl From<Status> for ExitCode {
    fn from(s: Status) -> ExitCode {
        ExitCode::from(s.code())
    }
}

/// The `zklock` command line on `recipes`, with the process's arguments: the whole of a
/// `main`. Arguments need not be UTF-8 (paths are taken as they are). The commands it
/// prints (a failing seed's replay line, the next steps) name the program as it was
/// invoked; [`CommandLine`] names a commit of yours beside them.
pub fn main_with(recipes: Recipes) -> ExitCode {
    CommandLine::new(recipes).main()
}

/// The command line on `recipes` with `args` (the first is the program's name), printing
/// to stdout and stderr as the binary does.
pub fn run<I, T>(args: I, recipes: &Recipes) -> Status
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    run_as(
        args,
        &Setting {
            recipes,
            command: None,
            commit: None,
            #[cfg(feature = "real")]
            real: &real_recipes::RealRecipes::default(),
        },
    )
}

/// The command line on a set of recipes, and how it names itself in the commands it
/// prints: [`main_with`] with settings.
///
/// ```no_run
/// # let recipes = zklock::Recipes::shipped();
/// // `MY_COMMIT` set by your build.rs (`cargo:rustc-env=MY_COMMIT=...`), if it sets it.
/// zklock::CommandLine::new(recipes)
///     .commit(option_env!("MY_COMMIT").unwrap_or(""))
///     .main()
/// # ;
/// ```
#[derive(Debug)]
pub struct CommandLine {
    recipes: Recipes,
    command: Option<String>,
    commit: Option<String>,
    #[cfg(feature = "real")]
    real: real_recipes::RealRecipes,
}

impl CommandLine {
    /// The command line on `recipes`, naming the program as it was invoked (its first
    /// argument, as `target/debug/my-cli replay traces/failures/seed-3.json`), and no
    /// commit of yours.
    pub fn new(recipes: Recipes) -> CommandLine {
        CommandLine {
            recipes,
            command: None,
            commit: None,
            #[cfg(feature = "real")]
            real: real_recipes::RealRecipes::default(),
        }
    }

    /// Adds `recipe`, the real side of a recipe of yours, under `name`: `real --recipe
    /// NAME` runs it on real ZooKeeper servers with the workload and faults of zklock's
    /// lock, and judges it with the same checker; `search --lock NAME` searches it. Give it
    /// the name its simulation side is registered under ([`Recipes::register`]); a name of
    /// one of zklock's recipes (`zklock`, `semaphore`, ...) then runs yours. Needs the
    /// cargo feature `real`.
    ///
    /// ```no_run
    /// use zklock::{RealRecipe, RecordingClient};
    /// use zklock_recipe::history::LockRole;
    /// use zklock_recipe::lock::LockOptions;
    /// use zklock_recipe::under_test::ShippedLock;
    /// use zklock_sim::{Recipe, SimClient};
    ///
    /// /// Your recipe (here zklock's lock), one type for both sides.
    /// struct MyRecipe;
    ///
    /// impl Recipe for MyRecipe {
    ///     type Lock = ShippedLock<SimClient>;
    ///     fn lock(&self, client: SimClient, role: LockRole, path: &str) -> Self::Lock {
    ///         ShippedLock::new(client, role, path, LockOptions::default()).expect("a valid path")
    ///     }
    /// }
    ///
    /// impl RealRecipe for MyRecipe {
    ///     type Lock = ShippedLock<RecordingClient>;
    ///     fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> Self::Lock {
    ///         ShippedLock::new(client, role, path, LockOptions::default()).expect("a valid path")
    ///     }
    /// }
    ///
    /// let mut recipes = zklock::Recipes::new();
    /// recipes.register("my-lock", "my team's lock", MyRecipe).expect("a new, valid name");
    /// let mut cli = zklock::CommandLine::new(recipes);
    /// cli.real_recipe("my-lock", MyRecipe).expect("a new, valid name");
    /// // `my-cli real --recipe my-lock`, `my-cli search --lock my-lock`, ...
    /// cli.main();
    /// ```
    #[cfg(feature = "real")]
    pub fn real_recipe<R: RealRecipe>(
        &mut self,
        name: impl Into<String>,
        recipe: R,
    ) -> Result<&mut CommandLine, RegistryError> {
        self.real.register(name.into(), recipe)?;
        Ok(self)
    }

    /// The commit of your program's source, named beside each command that replays a
    /// trace (with zklock's, where it is another): a trace reproduces exactly on the code
    /// that wrote it. Empty: none.
    pub fn commit(mut self, commit: impl Into<String>) -> CommandLine {
        self.commit = Some(commit.into());
        self
    }

    /// The command printed before a subcommand in the commands it prints, instead of the
    /// program as invoked: the `zklock` binary says `cargo run --release --`.
    pub fn invoked_as(mut self, command: impl Into<String>) -> CommandLine {
        self.command = Some(command.into());
        self
    }

    /// The whole of a `main`: [`CommandLine::run`] with the process's arguments.
    pub fn main(self) -> ExitCode {
        self.run(std::env::args_os()).into()
    }

    /// The command line with `args` (the first is the program's name), printing to
    /// stdout and stderr as the binary does.
    pub fn run<I, T>(&self, args: I) -> Status
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        run_as(
            args,
            &Setting {
                recipes: &self.recipes,
                command: self.command.as_deref(),
                commit: self.commit.as_deref(),
                #[cfg(feature = "real")]
                real: &self.real,
            },
        )
    }
}

/// What the command line runs on, and how it names itself: a [`CommandLine`]'s fields.
struct Setting<'a> {
    recipes: &'a Recipes,
    command: Option<&'a str>,
    commit: Option<&'a str>,
    #[cfg(feature = "real")]
    real: &'a real_recipes::RealRecipes,
}

fn run_as<I, T>(args: I, setting: &Setting<'_>) -> Status
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let (recipes, command, commit) = (setting.recipes, setting.command, setting.commit);
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    // Usage lines and completions name the binary as it was run: a user's own binary
    // built on this library is not called `zklock`.
    let bin = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_stem())
        .map_or_else(|| "zklock".to_owned(), |s| s.to_string_lossy().into_owned());
    let program = program::Program::new(command, args.first().map(OsString::as_os_str), commit);
    let parsed = cli::command()
        .bin_name(&bin)
        .try_get_matches_from(args)
        .and_then(|m| {
            // The flags given, of the subcommand (or of the default explore).
            let given = match m.subcommand() {
                Some((_, sub)) => given::Given::of(sub),
                None => given::Given::of(&m),
            };
            Ok((Cli::from_arg_matches(&m)?, given))
        });
    let (cli, given) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            // Help and version go to stdout with status 0, usage errors to stderr with 2.
            let _ = e.print();
            return if e.use_stderr() {
                Status::BadInput
            } else {
                Status::Held
            };
        }
    };
    let outcome = match cli.command {
        None => explore::run(cli.explore, recipes, &given, &program),
        Some(Command::Explore(a)) => explore::run(a, recipes, &given, &program),
        Some(Command::Check(a)) => check_cmd::run(a, recipes, &given, &program),
        Some(Command::Replay(a)) => replay::run(a, recipes),
        Some(Command::Shrink(a)) => shrink_cmd::run(a, recipes, &program),
        Some(Command::Timeline(a)) => timeline_cmd::run(a),
        Some(Command::Merge(a)) => explore::merge(a, &program),
        #[cfg(feature = "real")]
        Some(Command::Real(a)) => real_cmd::run(a, &given, &program, setting.real),
        #[cfg(feature = "real")]
        Some(Command::Search(a)) => search_cmd::run(a, &program, setting.real),
        #[cfg(feature = "real")]
        Some(Command::Export(a)) => export_cmd::run(a),
        #[cfg(feature = "bench")]
        Some(Command::Bench(a)) => bench_cmd::run(a, recipes),
        #[cfg(not(feature = "real"))]
        Some(Command::Real(_)) => Err(absent(&bin, "real", "real")),
        #[cfg(not(feature = "real"))]
        Some(Command::Search(_)) => Err(absent(&bin, "search", "real")),
        #[cfg(not(feature = "real"))]
        Some(Command::Export(_)) => Err(absent(&bin, "export", "real")),
        #[cfg(not(feature = "bench"))]
        Some(Command::Bench(_)) => Err(absent(&bin, "bench", "bench")),
        Some(Command::Recipes) => Ok(list_recipes(recipes)),
        Some(Command::Completions { shell }) => {
            let mut cmd = cli::command();
            // Into memory first: `generate` panics when its writer fails, as stdout does
            // for a reader gone early.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, &bin, &mut script);
            out!("{}", String::from_utf8_lossy(&script));
            Ok(Status::Held)
        }
    };
    outcome.unwrap_or_else(|e| {
        eprintln!("error: {e:#}");
        Status::BadInput
    })
}

/// The error for a subcommand this build leaves out: it names the cargo feature that
/// brings it.
#[cfg(not(all(feature = "real", feature = "bench")))]
fn absent(bin: &str, sub: &str, feature: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "`{bin} {sub}` is not in this build: it needs zklock's cargo feature `{feature}` \
         (in Cargo.toml: `zklock = {{ ..., features = [\"{feature}\"] }}`)"
    )
}

/// `zklock recipes`: each name and what it is, and where its own scenario (what explore
/// and check run it in) differs from the default.
fn list_recipes(recipes: &Recipes) -> Status {
    let width = recipes.names().map(str::len).max().unwrap_or(0);
    for e in recipes {
        outln!("{:<width$}  {}", e.name(), e.description());
        let own = explore::scenario_differences(&e.recipe().scenario());
        if !own.is_empty() {
            outln!("{:<width$}  runs in: {own}", "");
        }
    }
    Status::Held
}

/// The recipe registered under `name`, or an error naming the ones there are.
/// A trace file read, with the registered recipe it recorded (replay and shrink).
fn read_trace<'a>(
    recipes: &'a Recipes,
    path: &std::path::Path,
) -> anyhow::Result<(zklock_checker::Trace, &'a dyn AnyRecipe)> {
    let trace = zklock_checker::Trace::read(path)?;
    let what = format!("{}: recorded with recipe", path.display());
    let lock = recipe(recipes, &trace.recipe, &what)?;
    Ok((trace, lock))
}

fn recipe<'a>(recipes: &'a Recipes, name: &str, what: &str) -> anyhow::Result<&'a dyn AnyRecipe> {
    recipes.get(name).ok_or_else(|| {
        let known: Vec<&str> = recipes.names().collect();
        // The closest names first: a typo is told what it meant.
        let near = files::nearest_names(name, &known);
        let hint = match near.as_slice() {
            [] => String::new(),
            [one] => format!(" (did you mean {one:?}?)"),
            some => format!(" (did you mean one of {}?)", some.join(", ")),
        };
        anyhow::anyhow!(
            "{what} {name:?} is not a recipe of this command{hint}; it knows {} (its \
             `recipes` subcommand lists them)",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        )
    })
}
