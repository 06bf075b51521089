//! Replays every seed of the `pidns_ops` fuzz target (`fuzz/corpus/pidns_ops`) through the
//! same decoder and reference model on stable Rust, so CI checks the corpus without
//! nightly or cargo-fuzz.

#[path = "../../../fuzz/src/corpus.rs"]
mod corpus;
#[path = "../../../fuzz/src/pidns_model.rs"]
mod pidns_model;

use corpus::corpus;
use uproc_abi::Profile;

/// The model pins Linux's cyclic numbering: the `Linux*` profiles only (`Scalable`
/// hands numbers out in pool order; its own properties are in `scalable_pool.rs`).
const LINUX_NUMBERING: &[Profile] = &[Profile::Linux618, Profile::Linux70];

#[test]
fn every_corpus_file_matches_the_linux_model_in_every_profile() {
    let (mut ops, mut allocs) = (0, 0);
    let mut errors = std::collections::BTreeSet::new();
    for (path, bytes) in corpus("pidns_ops", 10) {
        let case = pidns_model::decode(&bytes);
        ops += case.ops.len();
        for &profile in LINUX_NUMBERING {
            let stats = pidns_model::run(profile, &case)
                .unwrap_or_else(|d| panic!("{}: diverges from Linux: {d}", path.display()));
            allocs += stats.ok;
            errors.extend(
                stats
                    .errors
                    .iter()
                    .chain(&stats.ns_errors)
                    .map(|e| e.name()),
            );
        }
    }
    assert!(
        ops > 0 && allocs > 0,
        "the corpus exercises successful allocations"
    );
    let want = ["EAGAIN", "EEXIST", "EINVAL", "ENOMEM", "ENOSPC", "EPERM"];
    assert_eq!(
        errors.into_iter().collect::<Vec<_>>(),
        want,
        "the corpus reaches every error alloc_pid / new_child / set_pid_max can give"
    );
}

#[test]
fn decoder_round_trips_hand_built_cases() {
    use pidns_model::{Case, Op, decode, encode};
    let case = Case {
        root_pid_max: 400,
        ops: vec![
            Op::Alloc {
                ns: 0,
                set_tid: vec![],
                cap: false,
            },
            Op::NewChild { ns: 0 },
            Op::Alloc {
                ns: 1,
                set_tid: vec![1, 42],
                cap: true,
            },
            Op::Alloc {
                ns: 1,
                set_tid: vec![],
                cap: false,
            },
            Op::SetPidMax {
                ns: 1,
                pid_max: 350,
            },
            Op::SetPidMax {
                ns: 0,
                pid_max: 300,
            },
            Op::Churn { ns: 0, n: 8 },
            Op::Free { idx: 1 },
            Op::Disable { ns: 1 },
        ],
    };
    let decoded = decode(&encode(&case));
    assert_eq!(format!("{:?}", decoded.ops), format!("{:?}", case.ops));
    assert_eq!(decoded.root_pid_max, 400);
    for &profile in LINUX_NUMBERING {
        let stats = pidns_model::run(profile, &decoded).expect("matches the model");
        assert_eq!(
            stats.ok,
            3 + 8,
            "{profile}: root init, two in the child, eight churned"
        );
        assert!(stats.errors.is_empty(), "{profile}: {:?}", stats.errors);
    }
}
