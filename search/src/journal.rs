//! The search's journal (`--journal`): each judged run's outcome, saved as it comes, so
//! that a stopped search goes on where it stopped (`--resume`) and judges each point once.

use crate::error::SearchError;
use crate::frontier::Point;
use crate::pool::Job;
use crate::setup::Outcome;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use zklock_real::plan::SeenRequest;
use zklock_real::shapes::Shape;

/// The results of a search, saved as they come (`--journal`), one JSON object a line: the
/// setup (the script and the actions, which a resumed search must share), the reference
/// run's outcome, then each judged plan's.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    file: Option<std::fs::File>,
    path: Option<PathBuf>,
    pub(crate) reference: Option<Outcome>,
    /// Saved outcomes not yet replayed, by [`plan_key`].
    judged: HashMap<String, Outcome>,
    /// How many points, and how many shapes, the saved journal had judged.
    resumed_points: usize,
    resumed_shapes: usize,
}

/// A plan's name in a journal: its points as `--aim` takes them.
pub(crate) fn plan_key(plan: &[Point]) -> String {
    plan.iter()
        .map(Point::aim_arg)
        .collect::<Vec<_>>()
        .join(" ")
}

const SHAPE_KEY_PREFIX: &str = "shape:";
/// A control run's name in a journal: this, then its index.
pub(crate) const CONTROL_KEY_PREFIX: &str = "control:";

/// A shape's run's name in a journal (a plan's starts with a client's number).
fn shape_key(shape: Shape) -> String {
    format!("{SHAPE_KEY_PREFIX}{shape}")
}

impl Journal {
    pub(crate) fn open(
        path: Option<&Path>,
        resume: bool,
        setup: &str,
    ) -> Result<Journal, SearchError> {
        let Some(path) = path else {
            return Ok(Journal::default());
        };
        let mut journal = Journal {
            path: Some(path.to_owned()),
            ..Journal::default()
        };
        if !resume {
            if path.exists() {
                return Err(journal_error(
                    path,
                    format!(
                        "--journal {}: the file exists; add --resume to go on with its search, or name another",
                        path.display()
                    ),
                ));
            }
            let io = |e: std::io::Error| {
                journal_error(
                    path,
                    format!("creating the journal {}: {e}", path.display()),
                )
            };
            let mut file = std::fs::File::create(path).map_err(io)?;
            writeln!(file, "{}", serde_json::json!({ "setup": setup })).map_err(io)?;
            journal.file = Some(file);
            return Ok(journal);
        }
        let text = std::fs::read_to_string(path).map_err(|e| {
            journal_error(path, format!("reading the journal {}: {e}", path.display()))
        })?;
        let bad = |line: usize, why: &str| {
            journal_error(
                path,
                format!("--resume: {} line {}: {why}", path.display(), line + 1),
            )
        };
        for (n, line) in text.lines().enumerate() {
            let v: serde_json::Value =
                serde_json::from_str(line).map_err(|e| bad(n, &e.to_string()))?;
            if let Some(saved) = v.get("setup") {
                if saved.as_str() != Some(setup) {
                    return Err(bad(
                        n,
                        &format!("it was saved by another script or actions: {saved}"),
                    ));
                }
            } else if let Some(r) = v.get("reference") {
                journal.reference = Some(outcome_of(r).ok_or_else(|| bad(n, "a bad outcome"))?);
            } else if let (Some(key), Some(o)) =
                (v.get("plan").and_then(|k| k.as_str()), v.get("outcome"))
            {
                let outcome = outcome_of(o).ok_or_else(|| bad(n, "a bad outcome"))?;
                journal.judged.insert(key.to_owned(), outcome);
            } else {
                return Err(bad(n, "neither setup, reference nor plan"));
            }
        }
        if journal.reference.is_none() && !journal.judged.is_empty() {
            return Err(journal_error(
                path,
                format!("--resume: {} has no reference run", path.display()),
            ));
        }
        // Shapes are saved beside the points, under keys of their own.
        journal.resumed_shapes = (journal.judged.keys())
            .filter(|k| k.starts_with(SHAPE_KEY_PREFIX))
            .count();
        let controls = (journal.judged.keys())
            .filter(|k| k.starts_with(CONTROL_KEY_PREFIX))
            .count();
        journal.resumed_points = journal.judged.len() - journal.resumed_shapes - controls;
        journal.file = Some(
            std::fs::OpenOptions::new()
                .append(true)
                .open(path)
                .map_err(|e| {
                    journal_error(path, format!("opening the journal {}: {e}", path.display()))
                })?,
        );
        Ok(journal)
    }

    pub(crate) fn describe(&self) -> String {
        let path = self.path.as_deref().unwrap_or(Path::new("-"));
        let shapes = match self.resumed_shapes {
            0 => String::new(),
            n => format!(", {n} shape(s)"),
        };
        format!(
            "{} ({} points judged{shapes})",
            path.display(),
            self.resumed_points
        )
    }

    pub(crate) fn write_line(&mut self, v: serde_json::Value) -> Result<(), SearchError> {
        if let (Some(file), Some(path)) = (&mut self.file, &self.path) {
            // One write per line, so a search killed mid-write loses that line only.
            file.write_all(format!("{v}\n").as_bytes())
                .map_err(|e| journal_error(path, format!("writing the journal: {e}")))?;
        }
        Ok(())
    }

    pub(crate) fn write_reference(&mut self, outcome: &Outcome) -> Result<(), SearchError> {
        self.write_line(serde_json::json!({ "reference": outcome_json(outcome) }))
    }

    pub(crate) fn write(&mut self, job: &Job, outcome: &Outcome) -> Result<(), SearchError> {
        self.write_line(serde_json::json!({
            "plan": job.key(),
            "outcome": outcome_json(outcome),
        }))
    }

    /// The saved outcome of `job`, once.
    pub(crate) fn judged(&mut self, job: &Job) -> Option<Outcome> {
        self.judged.remove(&job.key())
    }

    pub(crate) fn write_shape(
        &mut self,
        shape: Shape,
        outcome: &Outcome,
    ) -> Result<(), SearchError> {
        self.write_line(serde_json::json!({
            "plan": shape_key(shape),
            "outcome": outcome_json(outcome),
        }))
    }

    /// The saved outcome of `shape`'s run, once.
    pub(crate) fn judged_shape(&mut self, shape: Shape) -> Option<Outcome> {
        self.judged.remove(&shape_key(shape))
    }
}

fn outcome_json(o: &Outcome) -> serde_json::Value {
    let requests: Vec<Vec<(i32, &str)>> = o
        .requests
        .iter()
        .map(|r| r.iter().map(|s| (s.op, s.path.as_str())).collect())
        .collect();
    serde_json::json!({
        "violated": o.violated,
        "struck": o.struck,
        "requests": requests,
        "timeline": o.timeline,
        "run_ms": o.run_ms,
        "signatures": o.signatures,
        "explanation": o.explanation,
        "html": o.html,
        "acquired": o.acquired,
        "acquire_failures": o.acquire_failures,
    })
}

fn outcome_of(v: &serde_json::Value) -> Option<Outcome> {
    let strings = |v: &serde_json::Value| {
        v.as_array()?
            .iter()
            .map(|p| p.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
    };
    let text = |key: &str| v.get(key).and_then(|t| t.as_str()).map(str::to_owned);
    let violated = strings(v.get("violated")?)?;
    let signatures = match v.get("signatures") {
        Some(s) => strings(s)?,
        None => violated.clone(),
    };
    let requests = v
        .get("requests")?
        .as_array()?
        .iter()
        .map(|client| {
            client
                .as_array()?
                .iter()
                .map(|r| {
                    Some(SeenRequest {
                        op: i32::try_from(r.get(0)?.as_i64()?).ok()?,
                        path: r.get(1)?.as_str()?.to_owned(),
                    })
                })
                .collect::<Option<Vec<_>>>()
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Outcome {
        violated,
        struck: v.get("struck")?.as_bool()?,
        requests,
        timeline: v
            .get("timeline")
            .and_then(|t| t.as_str())
            .map(str::to_owned),
        run_ms: v.get("run_ms").and_then(|t| t.as_u64()).unwrap_or(0),
        signatures,
        explanation: text("explanation"),
        html: text("html"),
        acquired: v.get("acquired").and_then(|n| n.as_u64()),
        acquire_failures: (v.get("acquire_failures").and_then(|m| m.as_object()))
            .map(|m| {
                let counts = m.iter().filter_map(|(k, n)| Some((k.clone(), n.as_u64()?)));
                counts.collect()
            })
            .unwrap_or_default(),
    })
}

fn journal_error(path: &Path, reason: String) -> SearchError {
    SearchError::Journal {
        path: path.to_owned(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(violated: &[&str]) -> Outcome {
        Outcome {
            violated: violated.iter().map(|s| s.to_string()).collect(),
            struck: true,
            requests: vec![vec![SeenRequest {
                op: 1,
                path: "/zklock/lock".into(),
            }]],
            timeline: Some("t\n".into()),
            run_ms: 12,
            signatures: violated.iter().map(|s| format!("{s} at c0#1")).collect(),
            explanation: Some("FAILED".into()),
            html: Some("<html>".into()),
            acquired: Some(3),
            acquire_failures: [("no node".to_owned(), 2)].into(),
        }
    }

    fn job(key: &str) -> Job {
        // A control run's key is its index: a plan-free job names itself by it.
        let i = key.trim_start_matches(CONTROL_KEY_PREFIX).parse().unwrap();
        Job {
            plan: Vec::new(),
            control: Some(i),
        }
    }

    #[test]
    fn a_resumed_journal_gives_back_its_reference_and_each_judged_run_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let mut j = Journal::open(Some(&path), false, "setup A").unwrap();
        j.write_reference(&outcome(&[])).unwrap();
        j.write(&job("control:0"), &outcome(&["node_outlives_attempt"]))
            .unwrap();
        j.write_shape(Shape::ALL[0], &outcome(&[])).unwrap();
        drop(j);
        let mut again = Journal::open(Some(&path), true, "setup A").unwrap();
        assert_eq!(again.reference, Some(outcome(&[])));
        assert_eq!(
            again.describe(),
            format!("{} (0 points judged, 1 shape(s))", path.display())
        );
        let control = job("control:0");
        assert_eq!(
            again.judged(&control),
            Some(outcome(&["node_outlives_attempt"]))
        );
        assert_eq!(
            again.judged(&control),
            None,
            "each judged run is given back once"
        );
        assert_eq!(again.judged_shape(Shape::ALL[0]), Some(outcome(&[])));
    }

    #[test]
    fn a_journal_is_never_overwritten_nor_resumed_by_another_script() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        Journal::open(Some(&path), false, "setup A").unwrap();
        let e = Journal::open(Some(&path), false, "setup A").unwrap_err();
        assert!(e.to_string().contains("the file exists"), "{e}");
        let e = Journal::open(Some(&path), true, "setup B").unwrap_err();
        assert!(e.to_string().contains("saved by another script"), "{e}");
        assert!(matches!(e, SearchError::Journal { .. }));
    }

    #[test]
    fn an_outcome_written_before_signatures_and_run_times_were_kept_still_reads() {
        let old = serde_json::json!({
            "violated": ["liveness_after_heal"],
            "struck": false,
            "requests": [[[4, "/zklock/a"]]],
            "timeline": null,
        });
        let o = outcome_of(&old).unwrap();
        assert_eq!(o.signatures, vec!["liveness_after_heal".to_owned()]);
        assert_eq!(o.run_ms, 0);
        assert_eq!((o.explanation, o.html), (None, None));
        assert_eq!(o.requests[0][0].path, "/zklock/a");
        // And what is written reads back as it was.
        let now = outcome(&["a"]);
        assert_eq!(outcome_of(&outcome_json(&now)), Some(now));
    }
}
