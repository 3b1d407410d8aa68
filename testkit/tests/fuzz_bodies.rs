//! Every fuzz target body (`zmtp_testkit::fuzz`) run as a plain test: over the seed
//! corpus in `fuzz/corpus/`, over the seeds the crate generates, and over a few thousand
//! pseudo-random inputs per target (random bytes and mutated seeds), so that
//! `cargo test -p zmtp-testkit` exercises them without cargo-fuzz. The `cabi` body (the C
//! ABI) and its corpus run only with the feature that links it: `cargo test -p
//! zmtp-testkit --features cabi`, which the test command runs too.
//!
//! The corpus files are the generated seeds (named) and what fuzzing campaigns kept
//! (`bash scripts/fuzz.sh campaign`, named by content): every one of them is replayed here,
//! so an input a campaign found stays a test. After a change to the seed generator or to
//! the bytes the core sends, rewrite the seeds with
//! `cargo test -p zmtp-testkit --test fuzz_bodies -- --ignored write_seed_corpus`.
#![cfg(feature = "curve")]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use zmtp_testkit::fuzz::{seed_corpus, Body, TARGETS};
use zmtp_testkit::Rng;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus")
}

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

/// Run `body` on `data`; a panic fails the test with the input in hex, to replay it.
fn run(target: &str, body: Body, data: &[u8]) {
    if catch_unwind(AssertUnwindSafe(|| body(data))).is_err() {
        panic!("{target} panicked on input {}", hex(data));
    }
}

/// A seed with a few random edits: byte changes, insertions, deletions, a cut.
fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(data.len() + 1);
        match rng.below(4) {
            0 if at < data.len() => data[at] = rng.next_u64() as u8,
            1 if at < data.len() => data[at] ^= 1 << rng.below(8),
            2 => {
                let len = 1 + rng.below(8);
                let extra = rng.bytes(len);
                data.splice(at..at, extra);
            }
            _ if at < data.len() => {
                let end = (at + 1 + rng.below(16)).min(data.len());
                data.drain(at..end);
            }
            _ => {}
        }
    }
    if rng.below(8) == 0 {
        data.truncate(rng.below(data.len() + 1));
    }
    data
}

#[test]
fn bodies_pass_on_the_corpus_files() {
    for (target, body) in TARGETS {
        let dir = corpus_dir().join(target);
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .collect::<Result<Vec<_>, _>>()
            .expect("corpus directory entries");
        assert!(!entries.is_empty(), "{}: no seeds", dir.display());
        for entry in entries {
            let data = std::fs::read(entry.path()).expect("read a seed");
            run(target, *body, &data);
        }
    }
}

#[test]
fn bodies_pass_on_the_generated_seeds() {
    for seed in seed_corpus() {
        let (_, body) = TARGETS
            .iter()
            .find(|(name, _)| *name == seed.target)
            .expect("a seed for a known target");
        run(seed.target, *body, &seed.data);
    }
}

#[test]
fn bodies_pass_on_pseudo_random_inputs() {
    let seeds = seed_corpus();
    for (i, (target, body)) in TARGETS.iter().enumerate() {
        let mine: Vec<&[u8]> = seeds
            .iter()
            .filter(|s| s.target == *target)
            .map(|s| &s.data[..])
            .collect();
        let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1));
        for n in 0..3000 {
            let data = if n % 3 == 0 || mine.is_empty() {
                let len = rng.below(512);
                rng.bytes(len)
            } else {
                let seed = mine[rng.below(mine.len())];
                mutate(&mut rng, seed)
            };
            run(target, *body, &data);
        }
    }
}

/// Whether a corpus file is one a campaign kept: libFuzzer names those by the SHA-1 of
/// their content (40 hex digits); seeds have names of their own.
fn kept_by_campaign(name: &str) -> bool {
    name.len() == 40 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Rewrites the seeds in `fuzz/corpus/` from the generated ones (run on purpose, see the
/// file docs), keeping what campaigns added.
#[test]
#[ignore]
fn write_seed_corpus() {
    let root = corpus_dir();
    for (target, _) in TARGETS {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).expect("create a corpus directory");
        for entry in std::fs::read_dir(&dir).expect("list a corpus directory") {
            let entry = entry.expect("a corpus directory entry");
            if !kept_by_campaign(&entry.file_name().to_string_lossy()) {
                std::fs::remove_file(entry.path()).expect("remove an old seed");
            }
        }
    }
    for seed in seed_corpus() {
        let path = root.join(seed.target).join(&seed.name);
        std::fs::write(&path, &seed.data).expect("write a seed");
    }
}

/// Inputs the fuzzers found crashes with, kept once fixed.
#[test]
fn past_findings() {
    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }
    // PROBE_ROUTER let a peer queue SNDHWM + 1 messages (the probe did not count). The
    // first byte picks the socket type; rewritten when the draft types joined the list, so
    // that each input still picks the type it was found with (REQ 07, DEALER 09).
    for input in [
        "092501000600060101000300",
        "09250100060006250100060006f6f6f6f640939393554293939393000037000000000e00000f000e00",
        "07ac0f0201010000b600d600b600d6d6d6d606000a0002010100230030d60e00",
        "0921254041700100087d11828282ff7d8282828202222222222222222682ff7d82828282a3a282220079fffff909ffa6ce0ddbf6f6faff0e00",
    ] {
        run("socket", zmtp_testkit::fuzz::socket, &unhex(input));
    }
}
