//! The guide's Rust snippets are crate docs' doc tests, word for word, so that each
//! compiles and runs as the guide shows it.

/// The doc comment text of a crate root, as rustdoc reads it.
fn doc_text(src: &str) -> String {
    src.lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
        .collect()
}

/// The body of the first ```rust block of `page` that starts with `first_line`.
fn snippet(page: &str, first_line: &str) -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let text = std::fs::read_to_string(format!("{root}/{page}")).unwrap();
    let start = format!("```rust\n{first_line}\n");
    let at = text
        .find(&start)
        .unwrap_or_else(|| panic!("{page} has the snippet starting {first_line:?}"))
        + "```rust\n".len();
    let len = text[at..].find("```\n").expect("the snippet ends");
    text[at..at + len].to_string()
}

#[test]
fn the_your_lock_snippet_is_the_checker_crate_docs_doc_test() {
    let s = snippet("docs/your-lock.md", "use zklock_checker::check_seeds;");
    assert!(
        doc_text(include_str!("../src/lib.rs")).contains(&format!("```\n{s}```\n")),
        "docs/your-lock.md's snippet is not zklock-checker's doc test:\n{s}"
    );
}

#[test]
fn the_recipes_snippet_is_the_recipe_crate_docs_doc_test() {
    let s = snippet(
        "docs/recipes.md",
        "use zklock_recipe::{Lock, LockError, LockOptions};",
    );
    assert!(
        doc_text(include_str!("../../recipe/src/lib.rs")).contains(&format!("```\n{s}```\n")),
        "docs/recipes.md's snippet is not zklock-recipe's doc test:\n{s}"
    );
}

#[test]
fn the_work_queue_snippet_is_the_work_queue_modules_doc_test() {
    let s = snippet(
        "docs/recipes.md",
        "use zklock_recipe::work_queue::{Consumer, Producer, QueueError, QueuePaths};",
    );
    assert!(
        doc_text(include_str!("../../recipe/src/work_queue/mod.rs"))
            .contains(&format!("```\n{s}```\n")),
        "docs/recipes.md's work-queue snippet is not zklock_recipe::work_queue's doc test:\n{s}"
    );
}

#[test]
fn the_your_lock_hand_over_snippet_is_a_doc_test_of_the_grant_module() {
    let s = snippet(
        "docs/your-lock.md",
        "use zklock_recipe::lock::{Lock, LockError, LockGuard, hand_over};",
    );
    assert!(
        doc_text(include_str!("../../recipe/src/lock/grant.rs"))
            .contains(&format!("```\n{s}```\n")),
        "docs/your-lock.md's hand_over snippet is not zklock-recipe's grant module's doc test:\n{s}"
    );
}

#[test]
fn the_election_snippet_is_the_election_modules_doc_test() {
    let s = snippet(
        "docs/recipes.md",
        "use zklock_recipe::election::{ElectionError, LeaderLatch};",
    );
    assert!(
        doc_text(include_str!("../../recipe/src/election/mod.rs"))
            .contains(&format!("```\n{s}```\n")),
        "docs/recipes.md's election snippet is not zklock_recipe::election's doc test:\n{s}"
    );
}
