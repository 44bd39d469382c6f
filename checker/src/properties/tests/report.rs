use super::cfg;
use crate::properties::{
    CheckConfig, PROPERTY_NAMES, check_all, count, fenced_resource, fencing_token_order, fifo,
    liveness_after_heal, mutual_exclusion, no_herd, read_write_compat, rightful_write_accepted,
    timed_acquire,
};
use crate::testkit::Hb;
use std::collections::BTreeSet;
use zklock_recipe::SessionState;
use zklock_recipe::history::{EventKind, FaultKind, History, ZkOp};
use zklock_sim::{Scenario, ShippedRecipe, run_scenario};

#[test]
fn a_clean_history_passes_every_property() {
    let mut h = Hb::new();
    h.acquire(1, 1);
    h.release(1, 1);
    let report = check_all(&h.build(), &cfg());
    assert!(report.ok(), "{report}");
    let names: Vec<&str> = report.verdicts.iter().map(|v| v.property).collect();
    assert_eq!(names, PROPERTY_NAMES);
    assert!(report.first_failure().is_none());
}

#[test]
fn report_names_the_violated_property_and_its_events() {
    let mut h = Hb::new();
    h.acquire(1, 1);
    h.write(1, 1, true, false, false);
    h.fault(1, FaultKind::ForcedExpiry);
    h.session(1, SessionState::Expired);
    h.acquire(2, 2);
    h.write(2, 2, true, false, false);
    h.write(1, 1, false, false, true);
    let report = check_all(&h.build(), &cfg());
    assert_eq!(report.violated(), vec!["mutual_exclusion"]);
    assert_eq!(report.first_failure().unwrap().property, "mutual_exclusion");
    insta::assert_snapshot!(report.to_string());
}

/// check_all walks every property in one pass; each property's own `check` walks it
/// alone. Both must give the same verdicts, failing ones included: simulated runs, the
/// same runs with every k-th event dropped, with every block of k events reversed, with
/// tokens counting down, and with every listing leaving a watch; judged as run, and with
/// no time to serve waiters.
#[test]
fn each_property_alone_agrees_with_check_all() {
    let base = Scenario {
        clients: 3,
        acquisitions_per_client: 4,
        readers: 1,
        ..Scenario::default()
    };
    // Without dropped acquires, and with every other acquire dropped.
    let scenarios = [0, 2].map(|drop_every| Scenario {
        drop_every,
        ..base.clone()
    });
    let mut violated = BTreeSet::new();
    for (scenario, seed) in scenarios
        .iter()
        .flat_map(|s| (0..4).map(move |seed| (s, seed)))
    {
        let run = run_scenario(scenario, seed, &ShippedRecipe::default());
        let cfg = CheckConfig::from_scenario(scenario)
            .with_final_children(run.final_lock_children.clone())
            .with_run_end_us(run.end_time_us);
        let events = &run.history.events;
        let mut histories = vec![run.history.clone()];
        for k in [13, 7, 5, 3] {
            let dropped = events.iter().enumerate().filter(|(i, _)| i % k != 0);
            histories.push(History {
                events: dropped.map(|(_, e)| e.clone()).collect(),
            });
            let mut reversed = events.clone();
            reversed.chunks_mut(k).for_each(<[_]>::reverse);
            histories.push(History { events: reversed });
        }
        let mut countdown = run.history.clone();
        for e in &mut countdown.events {
            if let EventKind::Acquired { token, .. } | EventKind::ResourceWrite { token, .. } =
                &mut e.kind
            {
                *token = 1_000_000 - *token;
            }
        }
        histories.push(countdown);
        // And each of them with every listing leaving a watch: waiting on the whole
        // directory, so herds.
        let watching: Vec<History> = histories.iter().map(every_listing_watches).collect();
        histories.extend(watching);
        let hurried = CheckConfig {
            heal_ms: 0,
            liveness_bound_ms: 1,
            ..cfg.clone()
        };
        for (i, (history, cfg)) in histories
            .iter()
            .flat_map(|h| [(h, &cfg), (h, &hurried)])
            .enumerate()
        {
            let report = check_all(history, cfg);
            let alone = [
                mutual_exclusion::check(history, cfg),
                fenced_resource::check(history, cfg),
                fencing_token_order::check(history, cfg),
                rightful_write_accepted::check(history, cfg),
                read_write_compat::check(history, cfg),
                liveness_after_heal::check(history, cfg),
                no_herd::check(history, cfg),
                fifo::check(history, cfg),
                timed_acquire::check(history, cfg),
            ];
            assert_eq!(
                alone.as_slice(),
                report.verdicts.as_slice(),
                "seed {seed}, {i}"
            );
            assert_eq!(count(history), report.counters, "seed {seed}, {i}");
            violated.extend(report.violated());
        }
    }
    // Failing verdicts were compared too, not only passes.
    assert!(violated.len() >= 5, "{violated:?}");
}

fn every_listing_watches(history: &History) -> History {
    let mut h = history.clone();
    for e in &mut h.events {
        if let EventKind::OpInvoke {
            op: ZkOp::GetChildren,
            watch,
            ..
        } = &mut e.kind
        {
            *watch = true;
        }
    }
    h
}
