//! The workload's shape as a choice: each attempt's mode, each client's count and a
//! bounded partition's or pause's duration are drawn from the chooser under kinds of
//! their own, and the fixed shape draws and serializes as it always did.

use std::sync::{Arc, Mutex};
use zklock_recipe::history::{AcquireMode, EventKind, FaultKind};
use zklock_sim::{
    ChoiceKind, Chooser, FaultMode, Faults, Rate, ReplayChooser, Scenario, Shape, ShippedRecipe,
    run_scenario_with,
};

/// Answers by kind (0 for kinds not listed), and records every kind it was asked.
struct Scripted {
    answers: Vec<(ChoiceKind, usize)>,
    asked: Arc<Mutex<Vec<ChoiceKind>>>,
}

impl Chooser for Scripted {
    fn choose(&mut self, kind: ChoiceKind, n: usize) -> usize {
        self.asked.lock().unwrap().push(kind);
        let a = self
            .answers
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(0, |a| a.1);
        a.min(n - 1)
    }
}

/// One client, two attempts, every shape decision chosen, and one bounded pause.
fn shaped() -> Scenario {
    Scenario {
        clients: 1,
        acquisitions_per_client: 2,
        shape: Shape::all(),
        fault_mode: FaultMode::Bounded { faults_max: 1 },
        faults: Faults {
            pause: Rate::new(1, 1),
            ..Faults::none()
        },
        ..Scenario::default()
    }
}

fn run(answers: Vec<(ChoiceKind, usize)>) -> (zklock_sim::RunOutcome, Vec<ChoiceKind>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let chooser = Scripted {
        answers,
        asked: asked.clone(),
    };
    let out = run_scenario_with(&shaped(), 0, Box::new(chooser), &ShippedRecipe::default());
    let asked = asked.lock().unwrap().clone();
    (out, asked)
}

fn modes(out: &zklock_sim::RunOutcome) -> Vec<AcquireMode> {
    out.history
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AcquireInvoked { mode, .. } => Some(*mode),
            _ => None,
        })
        .collect()
}

fn pauses(out: &zklock_sim::RunOutcome) -> Vec<u64> {
    out.history
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Fault {
                fault: FaultKind::Pause { duration_ms },
            } => Some(duration_ms),
            _ => None,
        })
        .collect()
}

#[test]
fn the_chooser_picks_each_attempts_mode_and_whether_a_client_goes_on() {
    let (out, asked) = run(vec![(ChoiceKind::AcquireMode, 1)]);
    assert!(asked.contains(&ChoiceKind::AcquireMode));
    assert!(asked.contains(&ChoiceKind::AcquireCount));
    assert_eq!(modes(&out), [AcquireMode::Try, AcquireMode::Try]);
    let (out, _) = run(vec![
        (ChoiceKind::AcquireMode, 2),
        (ChoiceKind::AcquireCount, 1),
    ]);
    assert_eq!(modes(&out), [AcquireMode::Timeout { timeout_ms: 3000 }]);
}

#[test]
fn a_pause_ends_after_at_or_before_the_session_timeout_as_chosen() {
    for (i, ms) in [12_000, 6000, 4500].into_iter().enumerate() {
        let (out, asked) = run(vec![(ChoiceKind::Fault, 1), (ChoiceKind::FaultDuration, i)]);
        assert!(asked.contains(&ChoiceKind::FaultDuration));
        assert_eq!(pauses(&out), [ms], "answer {i}");
    }
}

#[test]
fn a_shaped_run_replays_from_its_choices() {
    let (a, _) = run(vec![
        (ChoiceKind::Fault, 1),
        (ChoiceKind::FaultDuration, 2),
        (ChoiceKind::AcquireMode, 3),
    ]);
    let b = run_scenario_with(
        &shaped(),
        0,
        Box::new(ReplayChooser::new(a.choices.clone())),
        &ShippedRecipe::default(),
    );
    assert_eq!(a.history, b.history);
    assert!(matches!(modes(&a)[0], AcquireMode::Dropped { .. }));
}

#[test]
fn the_fixed_shape_is_left_out_of_a_scenarios_json_and_read_back_as_fixed() {
    let json = serde_json::to_string(&Scenario::default()).unwrap();
    assert!(!json.contains("shape"), "{json}");
    let back: Scenario = serde_json::from_str(&json).unwrap();
    assert!(back.shape.is_fixed());
    // The fixed shape asks for none of the shape's kinds.
    let sc = Scenario {
        shape: Shape::fixed(),
        ..shaped()
    };
    let asked = Arc::new(Mutex::new(Vec::new()));
    let chooser = Scripted {
        answers: vec![(ChoiceKind::Fault, 1)],
        asked: asked.clone(),
    };
    let out = run_scenario_with(&sc, 0, Box::new(chooser), &ShippedRecipe::default());
    assert_eq!(pauses(&out), [12_000]);
    let asked = asked.lock().unwrap();
    for k in [
        ChoiceKind::AcquireMode,
        ChoiceKind::AcquireCount,
        ChoiceKind::FaultDuration,
    ] {
        assert!(!asked.contains(&k), "{k:?}");
    }
    let shaped_json = serde_json::to_string(&shaped()).unwrap();
    let back: Scenario = serde_json::from_str(&shaped_json).unwrap();
    assert_eq!(back, shaped());
}

/// The hold of each acquisition, from its grant to its release's invocation, in ms.
fn holds_ms(out: &zklock_sim::RunOutcome) -> Vec<u64> {
    let mut held_at = None;
    let mut out_ms = Vec::new();
    for e in &out.history.events {
        match e.kind {
            EventKind::Acquired { .. } => held_at = Some(e.time_us),
            EventKind::ReleaseInvoked => {
                if let Some(t) = held_at.take() {
                    out_ms.push((e.time_us - t) / 1000);
                }
            }
            _ => {}
        }
    }
    out_ms
}

#[test]
fn a_hold_lasts_hold_ms_or_a_session_timeout_longer_as_chosen() {
    let sc = Scenario {
        clients: 1,
        acquisitions_per_client: 1,
        shape: Shape {
            holds_chosen: true,
            ..Shape::fixed()
        },
        faults: Faults::none(),
        ..Scenario::default()
    };
    for (answer, ms) in [(0, 5), (1, 6005)] {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let chooser = Scripted {
            answers: vec![(ChoiceKind::HoldLength, answer)],
            asked: asked.clone(),
        };
        let out = run_scenario_with(&sc, 0, Box::new(chooser), &ShippedRecipe::default());
        assert!(asked.lock().unwrap().contains(&ChoiceKind::HoldLength));
        assert_eq!(holds_ms(&out), [ms], "answer {answer}");
    }
    // Not chosen: no such choice, and the hold is hold_ms.
    let fixed = Scenario {
        shape: Shape::fixed(),
        ..sc
    };
    let out = zklock_sim::run_scenario(&fixed, 0, &ShippedRecipe::default());
    assert_eq!(holds_ms(&out), [5]);
    // A shape that chooses holds serializes it; the others leave it out.
    let json = serde_json::to_string(&Shape::all()).unwrap();
    assert!(!json.contains("holds_chosen"), "{json}");
    let chosen = Shape {
        holds_chosen: true,
        ..Shape::fixed()
    };
    let back: Shape = serde_json::from_str(&serde_json::to_string(&chosen).unwrap()).unwrap();
    assert_eq!(back, chosen);
}
