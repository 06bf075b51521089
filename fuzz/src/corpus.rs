//! Reading a committed seed corpus, for the stable replay tests (included with
//! `#[path]` from `crates/*/tests/fuzz_corpus_replay.rs`, whose manifest directory is
//! two levels below the repository root).
#![allow(dead_code)]

use std::path::PathBuf;

/// Every file of `fuzz/corpus/<target>` with its bytes, sorted by name; panics unless
/// there are at least `min`.
pub(crate) fn corpus(target: &str, min: usize) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("seed corpus {} missing: {e}", dir.display()))
        .map(|e| e.expect("readable corpus entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(files.len() >= min, "{target}: at least {min} seeds");
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).expect("readable seed");
            (p, bytes)
        })
        .collect()
}
