//! Every checked-in fuzz input through its harness, on stable Rust: the corpora in
//! `fuzz/corpus/<target>/` (what fuzzing reached, minimised) and the inputs that once made
//! a target fail, in `fuzz/regressions/<target>/`.

use std::fs;
use std::path::{Path, PathBuf};

use millinet_fuzzing::TARGETS;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `dir`, sorted, none if it does not exist.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.map(|e| e.expect("a readable folder").path()).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

fn replay(folder: &str, require_each: bool) -> usize {
    let mut total = 0;
    for (name, harness) in TARGETS {
        let files = inputs(&fuzz_dir().join(folder).join(name));
        assert!(!require_each || !files.is_empty(), "fuzz/{folder}/{name} is empty or missing");
        for file in &files {
            let data = fs::read(file).expect("a readable input");
            // The file's name in the panic message says which input broke.
            let result = std::panic::catch_unwind(|| harness(&data));
            assert!(result.is_ok(), "{} fails its harness", file.display());
        }
        total += files.len();
    }
    total
}

#[test]
fn every_target_has_a_corpus_and_its_inputs_pass() {
    replay("corpus", true);
}

#[test]
fn regression_inputs_pass() {
    replay("regressions", false);
}

#[test]
fn every_cargo_fuzz_target_is_a_harness_and_back() {
    let manifest = fs::read_to_string(fuzz_dir().join("Cargo.toml")).expect("fuzz/Cargo.toml");
    let bins: Vec<&str> =
        manifest.lines().filter_map(|l| l.strip_prefix("name = \"")?.strip_suffix('"')).filter(|n| *n != "millinet-fuzz").collect();
    let names: Vec<&str> = TARGETS.iter().map(|t| t.0).collect();
    assert_eq!(bins, names, "fuzz/Cargo.toml targets and millinet_fuzzing::TARGETS differ");
    for name in names {
        let wrapper = fs::read_to_string(fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"))).expect("a target file");
        assert!(wrapper.contains(&format!("millinet_fuzzing::{name}(data)")), "fuzz_targets/{name}.rs does not call its harness");
    }
}
