//! The README's snippet for checking your own lock is the crate docs' doc test, word for
//! word, so that it compiles as the README shows it.

#[test]
fn the_readme_snippet_is_the_crate_docs_doc_test() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let start = "```rust\nuse zklock_checker::check_seeds;\n";
    let at = readme.find(start).expect("the README has the snippet") + "```rust\n".len();
    let len = readme[at..].find("```\n").expect("the snippet ends");
    let snippet = &readme[at..at + len];
    let docs: String = include_str!("../src/lib.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
        .collect();
    assert!(
        docs.contains(&format!("```\n{snippet}```\n")),
        "the README's snippet is not the crate docs' doc test:\n{snippet}"
    );
}
