//! The flags given on the command line, as opposed to their defaults: a flag that does
//! not apply to the chosen recipe, lock or setup is refused when given, not ignored, so
//! that a run never seems to have tested what it did not.

use anyhow::{Result, bail};
use clap::ArgMatches;
use clap::parser::ValueSource;

/// The ids of the flags a subcommand was given on the command line.
#[derive(Debug, Default)]
pub struct Given(Vec<String>);

impl Given {
    /// The flags `m` (one subcommand's matches) holds from the command line.
    pub fn of(m: &ArgMatches) -> Given {
        Given(
            m.ids()
                .filter(|id| m.value_source(id.as_str()) == Some(ValueSource::CommandLine))
                .map(|id| id.as_str().to_owned())
                .collect(),
        )
    }

    /// Whether the flag of id `id` (its field's name) was given.
    pub fn has(&self, id: &str) -> bool {
        self.0.iter().any(|g| g == id)
    }

    /// Refuses the first of `ids` that was given: it does not apply to `what`, `why`.
    pub fn refuse(&self, ids: &[&str], what: &str, why: &str) -> Result<()> {
        if let Some(id) = ids.iter().find(|id| self.has(id)) {
            bail!(
                "--{} does not apply to {what}: {why}; leave it out",
                id.replace('_', "-")
            );
        }
        Ok(())
    }
}
