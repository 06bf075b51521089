//! Resource controllers. uproc has one, the pids controller (`kernel/cgroup/pids.c`).

pub(crate) mod pids;
