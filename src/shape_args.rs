//! `zklock check`'s shape flags: which of the workload's decisions (each attempt's mode,
//! each client's count of attempts, partitions' and pauses' durations, holds) the exhaustive
//! search explores as choices.

use clap::{Args, ValueEnum};
use zklock_sim::{ModeKind, Shape};

/// `--shapes`: a preset the other shape flags refine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Shapes {
    /// The fixed mix of modes (see --mix-offset), every attempt made, faults that
    /// outlive the session
    Fixed,
    /// Every mode, every count up to --acquisitions, fault durations before, at and
    /// after the session timeout
    All,
}

/// `--counts` and `--fault-durations`: fixed or a choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Pick {
    Fixed,
    Chosen,
}

#[derive(Debug, Args)]
pub struct ShapeArgs {
    /// Which of the workload's decisions are choices the search explores: `fixed`, or
    /// `all` (the flags below refine either)
    #[arg(long, value_enum, value_name = "SHAPES", default_value_t = Shapes::Fixed)]
    pub shapes: Shapes,
    /// The modes each attempt chooses among, a comma-separated list of blocking, try,
    /// timed, dropped (each at most once), or `all`, or `fixed` for the fixed mix
    /// [default: as --shapes]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_mode)]
    pub modes: Option<Vec<ModeArg>>,
    /// `chosen`: each client makes 1 to --acquisitions attempts, as the search chooses
    /// [default: as --shapes]
    #[arg(long, value_enum, value_name = "PICK")]
    pub counts: Option<Pick>,
    /// `chosen`: a partition or pause lasts past, exactly or three quarters of the
    /// session timeout, as the search chooses [default: as --shapes]
    #[arg(long, value_enum, value_name = "PICK")]
    pub fault_durations: Option<Pick>,
    /// `chosen`: each hold (each queue item's processing) lasts --hold-ms or a session
    /// timeout longer, as the search chooses; with forced expiries, this reaches a
    /// grant whose session was lost before it was made. Not part of `--shapes all`
    /// [default: fixed]
    #[arg(long, value_enum, value_name = "PICK")]
    pub holds: Option<Pick>,
}

/// One item of `--modes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeArg {
    Mode(ModeKind),
    All,
    Fixed,
}

fn parse_mode(s: &str) -> Result<ModeArg, String> {
    match s {
        "all" => Ok(ModeArg::All),
        "fixed" => Ok(ModeArg::Fixed),
        _ => ModeKind::from_name(s).map(ModeArg::Mode).ok_or_else(|| {
            format!("unknown mode {s:?}: blocking, try, timed, dropped, all or fixed")
        }),
    }
}

impl ShapeArgs {
    /// The shape these flags ask for; a mode listed twice, or `all`/`fixed` beside
    /// others, is refused.
    pub fn shape(&self) -> Result<Shape, String> {
        let mut shape = match self.shapes {
            Shapes::Fixed => Shape::fixed(),
            Shapes::All => Shape::all(),
        };
        if let Some(list) = &self.modes {
            shape.modes = modes_of(list)?;
        }
        if let Some(p) = self.counts {
            shape.count_chosen = p == Pick::Chosen;
        }
        if let Some(p) = self.fault_durations {
            shape.fault_durations_chosen = p == Pick::Chosen;
        }
        if let Some(p) = self.holds {
            shape.holds_chosen = p == Pick::Chosen;
        }
        Ok(shape)
    }
}

fn modes_of(list: &[ModeArg]) -> Result<Vec<ModeKind>, String> {
    match list {
        [ModeArg::All] => return Ok(ModeKind::ALL.to_vec()),
        [ModeArg::Fixed] => return Ok(Vec::new()),
        _ => {}
    }
    let mut modes = Vec::new();
    for m in list {
        let ModeArg::Mode(m) = *m else {
            return Err("--modes: `all` and `fixed` stand alone".into());
        };
        if modes.contains(&m) {
            return Err(format!("--modes lists {} twice", m.name()));
        }
        modes.push(m);
    }
    Ok(modes)
}

/// The shape in words, for the check's report line: empty for the fixed shape.
pub fn describe(shape: &Shape) -> String {
    let mut out = String::new();
    if !shape.modes.is_empty() {
        let names: Vec<&str> = shape.modes.iter().map(|m| m.name()).collect();
        out.push_str(&format!(", modes chosen among {}", names.join(",")));
    }
    if shape.count_chosen {
        out.push_str(", counts chosen");
    }
    if shape.fault_durations_chosen {
        out.push_str(", fault durations chosen");
    }
    if shape.holds_chosen {
        out.push_str(", holds chosen");
    }
    out
}
