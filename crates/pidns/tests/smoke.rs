//! Smoke test (to be replaced by the full suite).
use std::any::Any;
use std::sync::{Arc, Weak};
use uproc_pidns::*;

fn reaper(ns: &PidNamespace) {
    ns.set_child_reaper(Some(Weak::<()>::new() as Weak<dyn Any + Send + Sync>));
}

#[test]
fn smoke() {
    for p in [Profile::Linux618, Profile::Linux70] {
        let map = PidMap::new(p);
        let root = PidNamespace::new_root(&map, 400).unwrap();
        let a = alloc_pid(&root, &[], false).unwrap();
        assert_eq!(a.nr(), 1);
        assert_eq!(
            alloc_pid(&root, &[], false).unwrap_err(),
            uproc_abi::Errno::EINVAL
        );
        reaper(&root);
        let b = alloc_pid(&root, &[], false).unwrap();
        assert_eq!(b.nr(), 3);
        let child = root.new_child().unwrap();
        let c = alloc_pid(&child, &[], false).unwrap();
        assert_eq!(c.nspid(), vec![4, 1]);
        free_pid(&c);
        assert_eq!(child.nr_allocated(), 0);
        let mut v = vec![];
        for _ in 0..395 {
            match alloc_pid(&root, &[], false) {
                Ok(p) => v.push(p),
                Err(e) => {
                    assert_eq!(e, uproc_abi::Errno::EAGAIN);
                    break;
                }
            }
        }
        assert_eq!(
            root.nr_allocated(),
            397,
            "2 and 4 stay free below RESERVED_PIDS"
        );
        free_pid(&b);
        assert_eq!(
            alloc_pid(&root, &[], false).unwrap_err(),
            uproc_abi::Errno::EAGAIN
        );
        free_pid(&v[300]);
        let d = alloc_pid(&root, &[], false).unwrap();
        assert_eq!(d.nr(), v[300].nr());
        assert!(Arc::ptr_eq(&root.find_pid(d.nr()).unwrap(), &d));
        let st = map.pidmap_lock_stat();
        assert!(st.write > 0);
    }
}
