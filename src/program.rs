//! How the command line names itself in the commands it prints (a failing seed's replay
//! line, the next steps after a sweep): a user's binary built on [`crate::main_with`] is
//! not `zklock`, and its traces reproduce at its own commit.

use std::ffi::OsStr;

/// The command that runs this program, and the commit of its source.
#[derive(Clone, Debug)]
pub(crate) struct Program {
    /// Printed before a subcommand: `cargo run --release --`, or the program as invoked.
    command: String,
    /// The commit of the program's own source, where its builder named one.
    commit: Option<String>,
}

impl Program {
    /// `command`, or else the program as invoked (`argv0`, quoted for a shell where it
    /// must be), or else `zklock`.
    pub(crate) fn new(command: Option<&str>, argv0: Option<&OsStr>, commit: Option<&str>) -> Self {
        let command = match (command, argv0) {
            (Some(c), _) => c.to_owned(),
            (None, Some(a)) if !a.is_empty() => shell_word(&a.to_string_lossy()),
            (None, _) => "zklock".to_owned(),
        };
        Program {
            command,
            commit: commit.filter(|c| !c.is_empty()).map(str::to_owned),
        }
    }

    /// The command line that runs `args` (a subcommand and its flags) with this program.
    pub(crate) fn line(&self, args: &str) -> String {
        format!("{} {args}", self.command)
    }

    /// Where a trace written by zklock at `zklock_commit` (empty if unknown) reproduces
    /// exactly: ` (at commit C)` naming the program's commit, and zklock's where it is
    /// another; empty when neither is known.
    pub(crate) fn at(&self, zklock_commit: &str) -> String {
        match (self.commit.as_deref(), zklock_commit) {
            (None, "") => String::new(),
            (None, z) => format!(" (with zklock at commit {z})"),
            (Some(c), z) if z.is_empty() || z == c => format!(" (at commit {c})"),
            (Some(c), z) => format!(" (at commit {c}, with zklock at commit {z})"),
        }
    }
}

/// `word` as one shell word: as it is when it holds only characters no shell reads
/// specially, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c);
    if word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_named_as_invoked_and_quoted_for_a_shell() {
        let p = Program::new(None, Some(OsStr::new("target/debug/team-zklock")), None);
        assert_eq!(
            p.line("replay t.json"),
            "target/debug/team-zklock replay t.json"
        );
        let p = Program::new(None, Some(OsStr::new("/opt/my tools/z'k")), None);
        assert_eq!(p.line("--help"), r"'/opt/my tools/z'\''k' --help");
        let p = Program::new(Some("cargo run --release --"), Some(OsStr::new("x")), None);
        assert_eq!(p.line("--help"), "cargo run --release -- --help");
        assert_eq!(
            Program::new(None, None, None).line("--help"),
            "zklock --help"
        );
    }

    #[test]
    fn the_commits_named_are_the_programs_and_zklocks_where_it_differs() {
        let user = Program::new(None, None, Some("u1"));
        assert_eq!(user.at("z1"), " (at commit u1, with zklock at commit z1)");
        assert_eq!(user.at(""), " (at commit u1)");
        // zklock's own binary: its commit is zklock's.
        assert_eq!(user.at("u1"), " (at commit u1)");
        let unknown = Program::new(None, None, Some(""));
        assert_eq!(unknown.at("z1"), " (with zklock at commit z1)");
        assert_eq!(unknown.at(""), "");
    }
}
