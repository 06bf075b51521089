//! Property test: random alloc / free / set_tid / set_pid_max / new_child / close
//! sequences give the same numbers and errors as a small reference model of Linux's rules
//! (a set and a cursor per namespace level), in both lock profiles.
//!
//! The model (`fuzz/src/pidns_model.rs`) is shared with the `pidns_ops` fuzz target.

#[path = "../../../fuzz/src/pidns_model.rs"]
mod pidns_model;

use pidns_model::{Case, Op};
use proptest::prelude::*;
use uproc_abi::Profile;

/// The model pins Linux's cyclic numbering: the `Linux*` profiles only (`Scalable`
/// hands numbers out in pool order; its own properties are in `scalable_pool.rs`).
const LINUX_NUMBERING: &[Profile] = &[Profile::Linux618, Profile::Linux70];

fn tid() -> impl Strategy<Value = i32> {
    prop_oneof![
        6 => 1..40i32,      // low numbers, often in use
        2 => 290..420i32,   // around RESERVED_PIDS and a small pid_max
        1 => Just(1),
        1 => prop_oneof![Just(0), Just(-1), Just(i32::MAX)],
    ]
}

fn pid_max() -> impl Strategy<Value = i32> {
    prop_oneof![
        6 => 301..500i32,
        1 => Just(300),       // EINVAL
        1 => Just(4_194_305), // EINVAL
        1 => Just(4_194_304),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let ns = 0..8usize;
    prop_oneof![
        8 => (ns.clone(), any::<bool>()).prop_map(|(ns, cap)| Op::Alloc { ns, set_tid: vec![], cap }),
        3 => (ns.clone(), proptest::collection::vec(tid(), 1..4), prop::bool::weighted(0.9))
            .prop_map(|(ns, set_tid, cap)| Op::Alloc { ns, set_tid, cap }),
        6 => any::<u8>().prop_map(|i| Op::Free { idx: i.into() }),
        1 => (ns.clone(), pid_max()).prop_map(|(ns, pid_max)| Op::SetPidMax { ns, pid_max }),
        2 => ns.clone().prop_map(|ns| Op::NewChild { ns }),
        1 => (ns.clone(), prop::bool::weighted(0.2))
            .prop_map(|(ns, close)| if close { Op::Disable { ns } } else { Op::NewChild { ns } }),
        2 => (ns, 0..400u16).prop_map(|(ns, n)| Op::Churn { ns, n }),
    ]
}

/// A single op, or now and then a burst of allocations that are kept (to fill a level).
fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop_oneof![
        30 => op().prop_map(|o| vec![o]),
        1 => (0..8usize, 100..450usize).prop_map(|(ns, n)| {
            vec![Op::Alloc { ns, set_tid: vec![], cap: true }; n]
        }),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (301..=500i32, proptest::collection::vec(ops(), 1..60)).prop_map(|(root_pid_max, ops)| Case {
        root_pid_max,
        ops: ops.into_iter().flatten().collect(),
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn alloc_free_sequences_match_the_linux_model(case in case()) {
        for &profile in LINUX_NUMBERING {
            if let Err(divergence) = pidns_model::run(profile, &case) {
                return Err(TestCaseError::fail(format!("uproc-pidns diverges from Linux: {divergence}")));
            }
        }
    }
}

/// Makes sure the generator reaches the interesting states (a wrap past pid_max, every
/// alloc error), so the property above cannot pass by never getting there.
#[test]
fn generator_reaches_wrap_and_every_alloc_error() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, TestRunner};
    let mut runner = TestRunner::new(Config {
        cases: 1,
        ..Config::default()
    });
    let mut seen = std::collections::BTreeSet::new();
    // About one case in twelve produces EPERM: 64 cases missed it in one run of ~300
    // (a flaky failure); 256 miss it about once in 10^10 runs.
    for _ in 0..256 {
        let case = case().new_tree(&mut runner).expect("tree").current();
        let stats = pidns_model::run(Profile::Linux70, &case).expect("matches the model");
        seen.extend(stats.errors.iter().map(|e| e.name()));
    }
    for want in ["EAGAIN", "EEXIST", "EINVAL", "ENOMEM", "EPERM"] {
        assert!(
            seen.contains(want),
            "256 generated cases never produced {want}: {seen:?}"
        );
    }
}
