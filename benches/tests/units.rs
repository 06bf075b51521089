//! Unit checks of the harness's pieces through their public API: the command line, the
//! model against closed forms, the lock-count check, the runners and the peers.

mod args {
    use clap::Parser;
    use uproc_abi::Profile;
    use uproc_benches::args::*;

    fn parse(s: &str) -> Result<Options, clap::Error> {
        Options::try_parse_from(std::iter::once("threadspawn").chain(s.split_whitespace()))
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let o = parse("").unwrap();
        assert_eq!(o.profile_list(), Profile::ALL.to_vec());
        assert_eq!(&o.worker_list()[..2], &[1, 2]);
        assert_eq!((o.seconds, o.repeats, o.shape.levels), (2.0, 3, 0));
        assert_eq!(o.body_list(), vec![Body::None]);
        assert!(o.peers && !o.json && !o.memory && o.plot.is_none());
        assert_eq!(o.sample_one_in, 64);
        assert_eq!(o.count, 1_000_000);
    }

    #[test]
    fn lists_and_flags_parse() {
        let o = parse("--workers 4,1,2,2 --seconds=0.5 --repeats 1 --levels 2 --pidfd --cgroup --body none,tokio,none --no-peers --json --plot x.svg --profile linux70,linux618,linux70")
            .unwrap();
        assert_eq!(o.worker_list(), vec![1, 2, 4]);
        assert_eq!((o.seconds, o.repeats, o.shape.levels), (0.5, 1, 2));
        assert!(o.shape.pidfd && o.shape.cgroup && o.json && !o.peers);
        assert_eq!(o.body_list(), vec![Body::None, Body::Tokio]);
        assert_eq!(o.profile_list(), vec![Profile::Linux70, Profile::Linux618]);
        assert_eq!(o.plot.as_deref(), Some(std::path::Path::new("x.svg")));
        assert!(parse("--no-peers --peers").unwrap().peers);
    }

    #[test]
    fn values_are_checked() {
        for bad in [
            "--workers 0",
            "--workers 1,x",
            "--seconds 0",
            "--seconds -1",
            "--repeats 0",
            "--levels 33",
            "--body fibre",
            "--bogus",
            "--seconds",
            "--json=1",
            "--profile bogus",
            "--count 0",
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}: {e}");
        }
    }

    #[test]
    fn help_lists_defaults_and_allowed_values() {
        let help = format!(
            "{}",
            <Options as clap::CommandFactory>::command().render_long_help()
        );
        for needle in [
            "[default: all]",
            "[possible values: all, linux618, linux70",
            "[default: 2]",
            "- tokio:",
            "--plot <FILE>",
            "linux618",
        ] {
            assert!(help.contains(needle), "{needle} missing from\n{help}");
        }
    }
}

mod model {
    use uproc_benches::model::*;

    /// The machine-repairman closed form: one exponential server of demand `d`, think
    /// time `z`, `n` customers: X = (1 - p0) / d with
    /// p0 = 1 / sum_k n!/(n-k)! (d/z)^k.
    fn repairman(z: f64, d: f64, n: usize) -> f64 {
        let (mut term, mut sum) = (1.0, 1.0);
        for k in 1..=n {
            term *= (n - k + 1) as f64 * d / z;
            sum += term;
        }
        (1.0 - 1.0 / sum) / d * 1e9
    }

    #[test]
    fn one_lock_reproduces_the_repairman_closed_form() {
        let d = Demands {
            parallel_ns: 700.0,
            holds_ns: vec![100.0],
        };
        for (n, x) in predict(&d, 64).into_iter().enumerate() {
            let want = repairman(700.0, 100.0, n + 1);
            assert!(
                (x - want).abs() / want < 1e-9,
                "{} workers: {x} vs {want}",
                n + 1
            );
        }
    }

    #[test]
    fn bounds_one_worker_and_saturation() {
        let d = Demands {
            parallel_ns: 600.0,
            holds_ns: vec![80.0, 150.0, 20.0],
        };
        let x = predict(&d, 64);
        assert!((x[0] - 1e9 / 850.0).abs() < 1e-6, "no queue at one worker");
        for (n, v) in x.iter().enumerate() {
            assert!(*v <= (n + 1) as f64 * 1e9 / 850.0 + 1e-6);
            assert!(*v <= ceiling(150.0) + 1e-6);
        }
        assert!(x.windows(2).all(|w| w[1] >= w[0]), "never falls");
        assert!(
            x[63] > 0.95 * ceiling(150.0),
            "saturates at the busiest lock"
        );
        assert_eq!(binding(&d), Some(1));
        assert_eq!(
            binding(&Demands {
                parallel_ns: 1.0,
                holds_ns: vec![0.0]
            }),
            None
        );
        assert_eq!(ceiling(0.0), f64::INFINITY);
        assert_eq!(error_pct(110.0, 100.0).round(), 10.0);
    }

    #[test]
    fn no_lock_scales_linearly() {
        let x = predict(
            &Demands {
                parallel_ns: 1000.0,
                holds_ns: vec![],
            },
            4,
        );
        assert_eq!(x, vec![1e6, 2e6, 3e6, 4e6]);
    }
}

mod report {
    use uproc_benches::report::*;

    #[test]
    fn median_and_utc() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13:20 UTC");
    }
}

mod threadspawn {
    use uproc_abi::Profile;
    use uproc_benches::args::Body;
    use uproc_benches::load::Locks;
    use uproc_benches::report::Subject;
    use uproc_benches::threadspawn::*;

    fn locks(writes: [u64; 3]) -> Locks {
        let mut l = Locks::default();
        for (s, w) in l.0.iter_mut().zip(writes) {
            s.write = w;
            s.read = 7;
        }
        l
    }

    #[test]
    fn lock_check_is_exact_and_only_for_bookkeeping() {
        let s = |profile, body| Subject::Uproc { profile, body };
        let good = locks([20, 30, 30]);
        assert!(check_locks(s(Profile::Linux70, Body::None), 0, 10, &good).is_ok());
        let bad = locks([21, 30, 30]);
        let e = check_locks(s(Profile::Linux70, Body::None), 0, 10, &bad).unwrap_err();
        assert!(
            e.contains("pidmap_lock") && e.contains("expected Exactly(2)"),
            "{e}"
        );
        assert!(check_locks(s(Profile::Linux618, Body::None), 0, 10, &good).is_err());
        assert!(
            check_locks(
                s(Profile::Linux618, Body::None),
                2,
                10,
                &locks([50, 30, 30])
            )
            .is_ok()
        );
        assert!(check_locks(s(Profile::Linux70, Body::Thread), 0, 10, &bad).is_ok());
        assert!(check_locks(Subject::Pthread, 0, 10, &bad).is_ok());
    }

    #[test]
    fn a_bound_admits_up_to_its_value() {
        use uproc_benches::load::Expected::{AtMost, Exactly};
        assert!(AtMost(0.05).admits(0, 100) && AtMost(0.05).admits(5, 100));
        assert!(!AtMost(0.05).admits(6, 100));
        assert!(Exactly(2).admits(20, 10) && !Exactly(2).admits(19, 10));
    }
}

mod run {
    use uproc_benches::run::*;

    #[test]
    fn thread_runner_counts_complete_ops_and_reports_failures() {
        let o = run_threads(2, 0.05, |_| || Ok(()));
        assert!(o.ops > 0 && o.failure.is_none());
        let o = run_threads(2, 0.05, |i| {
            let mut k = 0;
            move || {
                k += 1;
                if i == 1 && k == 3 {
                    Err("boom".to_string())
                } else {
                    Ok(())
                }
            }
        });
        assert_eq!(o.failure.as_deref(), Some("boom"));
    }

    #[test]
    fn tokio_runner_counts_complete_ops() {
        let o = run_tokio(2, 0.05, |_, stop| async move {
            uproc_benches::worker_loop!(stop, async { Ok::<(), String>(()) })
        });
        assert!(o.ops > 0 && o.failure.is_none());
    }
}

mod peers {
    use uproc_benches::peers::*;

    #[test]
    fn every_peer_completes_cycles() {
        for o in [pthread(1, 0.02), std_thread(1, 0.02), tokio(1, 0.02)] {
            assert!(o.ops > 0, "{o:?}");
            assert!(o.failure.is_none(), "{o:?}");
        }
    }
}

mod report_values {
    use clap::Parser;
    use uproc_abi::Profile;
    use uproc_benches::args::{Body, Options};
    use uproc_benches::load::Locks;
    use uproc_benches::report::*;

    /// One worker, 1e6 ops/s, 1e6 life cycles; pidmap taken twice per life cycle, every
    /// sampled hold 60 ns (50 ns once the 10 ns clock read is taken off).
    fn report() -> Report {
        let mut locks = Locks::default();
        locks.0[0].write = 2_000_000;
        for _ in 0..100 {
            locks.0[0].hold.record(60);
            locks.0[0].wait.record(0);
        }
        let subject = Subject::Uproc {
            profile: Profile::Linux70,
            body: Body::None,
        };
        let row = Row {
            subject,
            workers: 1,
            rates: vec![1e6, 0.9e6, 1.1e6],
            ops: 1_000_000,
            locks: Some(locks),
        };
        let options = Options::parse_from(["threadspawn", "--predict-to", "64"]);
        Report {
            options,
            rows: vec![row],
            started_unix: 0,
            clock_ns: 10.0,
        }
    }

    #[test]
    fn budget_ceiling_and_prediction_follow_from_the_samples() {
        let r = report();
        let b = &r.rows[0].budgets(r.clock_ns).unwrap()[0];
        assert_eq!((b.write, b.samples, b.long_holds), (2.0, 100, 0));
        assert!((b.hold_ns_mean - 50.0).abs() < 60.0 / 16.0, "{b:?}");
        assert!((b.hold_ns_per_cycle - 2.0 * b.hold_ns_mean).abs() < 1e-9);
        assert!((b.ceiling_ops_per_s - 1e9 / b.hold_ns_per_cycle).abs() < 1e-3);
        let d = r.rows[0].demands(r.clock_ns).unwrap();
        assert!(
            (d.parallel_ns + d.holds_ns[0] - 1000.0).abs() < 1e-6,
            "{d:?}"
        );
        let (pred, from1) = r.validation(&r.rows[0]);
        assert!((pred.unwrap() - 1e6).abs() < 1.0, "no queue at one worker");
        assert_eq!(pred, from1);
        let p = &r.predictions()[0];
        assert_eq!((p.from_workers, p.ops_per_s.len()), (1, 64));
        assert!(
            p.ops_per_s[63] <= b.ceiling_ops_per_s && p.ops_per_s[63] > 0.9 * b.ceiling_ops_per_s
        );
    }

    #[test]
    fn json_and_table_carry_the_same_row() {
        let r = report();
        let v = r.values();
        assert_eq!(v[0]["type"], "meta");
        let row = &v[1];
        assert_eq!(
            (
                row["type"].as_str(),
                row["profile"].as_str(),
                row["body"].as_str()
            ),
            (Some("row"), Some("linux70"), Some("none"))
        );
        assert_eq!(row["ops_per_s"], 1e6);
        assert_eq!(row["ops_per_s_min"], 0.9e6);
        assert_eq!(row["locks_per_cycle"]["pidmap_lock"]["write"], 2.0);
        assert!(
            row["locks_per_cycle"]["tasklist_lock"]["ceiling_ops_per_s"].is_null(),
            "never held: no ceiling"
        );
        assert_eq!(v.iter().filter(|l| l["type"] == "prediction").count(), 64);
        let t = r.table();
        assert!(
            t.contains("uproc linux70 body=none")
                && t.contains("PREDICTION*")
                && t.contains("binding lock of uproc linux70 body=none (1w): pidmap_lock"),
            "{t}"
        );
    }

    #[test]
    fn grid_and_columns() {
        let g = grid(
            ["a", "bb"],
            vec![
                vec!["xyz".into(), "1".into()],
                vec![],
                vec!["q".into(), "22".into()],
            ],
        );
        assert_eq!(g, "a   bb\n------\nxyz  1\n\nq   22\n");
        let c = columns("x=/a/b:2 y=/c:0");
        assert_eq!(c, vec![("x", "/a/b", 2), ("y", "/c", 0)]);
    }
}
