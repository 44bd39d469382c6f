//! `zklock check`'s `--faults`: which kinds of fault the exhaustive search places. Each
//! kind left out takes its placements out of the search, so that more clients or more
//! faults of the kinds that matter to a lock come within reach.

use zklock_recipe::history::ZkOp;
use zklock_sim::{Faults, Rate};

/// `--aim-at`'s names of the operations a fault can be aimed at.
const AIMS: [(&str, ZkOp); 7] = [
    ("create", ZkOp::Create),
    ("delete", ZkOp::Delete),
    ("exists", ZkOp::Exists),
    ("get-data", ZkOp::GetData),
    ("get-children", ZkOp::GetChildren),
    ("set-data", ZkOp::SetData),
    ("multi", ZkOp::Multi),
];

/// `--aim-at OP`: the operation whose requests in flight every fault strikes.
pub fn parse_aim(s: &str) -> Result<ZkOp, String> {
    AIMS.iter()
        .find(|(n, _)| *n == s)
        .map(|&(_, op)| op)
        .ok_or_else(|| {
            let names: Vec<&str> = AIMS.iter().map(|(n, _)| *n).collect();
            format!("unknown operation {s:?}: {}", names.join(", "))
        })
}

/// An operation's name on the command line.
pub fn aim_name(op: ZkOp) -> &'static str {
    AIMS.iter()
        .find(|(_, o)| *o == op)
        .map_or("close", |(n, _)| n)
}

/// One item of `--faults`.
#[derive(Clone, Copy, Debug)]
pub enum FaultArg {
    Kind(Kind),
    All,
    /// No fault at all, as `zklock real --faults none`.
    None,
}

/// A kind of fault, by its name on the command line.
#[derive(Clone, Copy, Debug)]
pub struct Kind {
    pub name: &'static str,
    rate: fn(&mut Faults) -> &mut Rate,
}

/// Every kind, in the order the search offers them.
pub const KINDS: [Kind; 8] = [
    Kind::new("connection-loss", |f| &mut f.connection_loss),
    Kind::new("lost-create-response", |f| &mut f.lost_create_response),
    Kind::new("forced-expiry", |f| &mut f.forced_expiry),
    Kind::new("partition", |f| &mut f.partition),
    Kind::new("pause", |f| &mut f.pause),
    Kind::new("crash", |f| &mut f.crash),
    Kind::new("delayed-delivery", |f| &mut f.delayed_delivery),
    Kind::new("local-expiry", |f| &mut f.local_expiry),
];

impl Kind {
    const fn new(name: &'static str, rate: fn(&mut Faults) -> &mut Rate) -> Kind {
        Kind { name, rate }
    }
}

/// `zklock real --faults`'s names of the same kinds, accepted too: (real's, this one's).
const REAL_NAMES: [(&str, &str); 5] = [
    ("cut", "connection-loss"),
    ("lost-create", "lost-create-response"),
    ("expire", "forced-expiry"),
    ("black-hole", "partition"),
    ("local-expire", "local-expiry"),
];

pub fn parse_fault(s: &str) -> Result<FaultArg, String> {
    match s {
        "all" => return Ok(FaultArg::All),
        "none" => return Ok(FaultArg::None),
        _ => {}
    }
    let name = REAL_NAMES
        .iter()
        .find(|(real, _)| *real == s)
        .map_or(s, |(_, name)| name);
    KINDS
        .iter()
        .find(|k| k.name == name)
        .map(|&k| FaultArg::Kind(k))
        .ok_or_else(|| {
            let names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
            format!("unknown fault {s:?}: {}, all or none", names.join(", "))
        })
}

/// The faults `list` names (`None`: the flag was not given, so `recipe`'s own), each
/// kind at `recipe`'s rate where it has that kind on, else at its default rate.
pub fn faults_or(list: Option<&[FaultArg]>, recipe: &Faults) -> Result<Faults, String> {
    let Some(list) = list else {
        return Ok(recipe.clone());
    };
    let mut faults = Faults {
        delay_ms_max: recipe.delay_ms_max,
        partition_ms_max: recipe.partition_ms_max,
        pause_ms_max: recipe.pause_ms_max,
        ..faults_of(list)?
    };
    let mut own = recipe.clone();
    for k in KINDS {
        let r = *(k.rate)(&mut own);
        if !r.is_never() && !(k.rate)(&mut faults).is_never() {
            *(k.rate)(&mut faults) = r;
        }
    }
    Ok(faults)
}

/// The faults `list` names: only those kinds on, at their default rates (a sweep draws
/// them at those rates; a check places them at every step whatever their rate); a kind
/// listed twice, or `all` beside others, is refused.
pub fn faults_of(list: &[FaultArg]) -> Result<Faults, String> {
    match list {
        [FaultArg::All] => return Ok(Faults::default()),
        [FaultArg::None] => return Ok(Faults::none()),
        _ => {}
    }
    let (mut faults, mut all) = (Faults::none(), Faults::default());
    let mut seen: Vec<&str> = Vec::new();
    for f in list {
        let k = match *f {
            FaultArg::Kind(k) => k,
            FaultArg::All => return Err("--faults: `all` stands alone".into()),
            FaultArg::None => return Err("--faults: `none` stands alone".into()),
        };
        if seen.contains(&k.name) {
            return Err(format!("--faults lists {} twice", k.name));
        }
        seen.push(k.name);
        *(k.rate)(&mut faults) = *(k.rate)(&mut all);
    }
    Ok(faults)
}

/// Whether a kind on, or a fault's length, is not at its default.
pub fn rates_of_its_own(faults: &Faults) -> bool {
    let (mut f, mut d) = (faults.clone(), Faults::default());
    KINDS.iter().any(|k| {
        let r = *(k.rate)(&mut f);
        !r.is_never() && r != *(k.rate)(&mut d)
    }) || (f.delay_ms_max, f.partition_ms_max, f.pause_ms_max)
        != (d.delay_ms_max, d.partition_ms_max, d.pause_ms_max)
}

/// The kinds on, comma-separated, when not every kind is.
fn kinds_on(faults: &Faults) -> Option<String> {
    let mut f = faults.clone();
    let on: Vec<&str> = KINDS
        .iter()
        .filter(|k| !(k.rate)(&mut f).is_never())
        .map(|k| k.name)
        .collect();
    (on.len() != KINDS.len()).then(|| on.join(","))
}

/// The kinds on, for a report line, when not every kind is: empty otherwise.
pub fn describe(faults: &Faults) -> String {
    let kinds = match kinds_on(faults) {
        None => String::new(),
        Some(on) if on.is_empty() => " of no kind (--faults none)".to_owned(),
        Some(on) => format!(" of kinds {on}"),
    };
    match faults.aim {
        Some(op) => format!("{kinds} aimed at {} requests in flight", aim_name(op)),
        None => kinds,
    }
}

/// The `--faults` flag that asks for these kinds, for a command to suggest: empty when
/// every kind is on.
pub fn flag(faults: &Faults) -> String {
    let kinds = match kinds_on(faults) {
        None => String::new(),
        Some(on) if on.is_empty() => " --faults none".to_owned(),
        Some(on) => format!(" --faults {on}"),
    };
    match faults.aim {
        Some(op) => format!("{kinds} --aim-at {}", aim_name(op)),
        None => kinds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(s: &str) -> Result<Faults, String> {
        let items: Result<Vec<FaultArg>, String> = s.split(',').map(parse_fault).collect();
        faults_of(&items?)
    }

    #[test]
    fn an_aim_is_named_as_its_flag_takes_it() {
        for (name, op) in AIMS {
            assert_eq!(parse_aim(name), Ok(op));
            assert_eq!(aim_name(op), name);
        }
        let err = parse_aim("getdata").unwrap_err();
        assert!(err.contains("get-data"), "{err}");
        let f = Faults {
            aim: Some(ZkOp::Delete),
            ..Faults::default()
        };
        assert_eq!(flag(&f), " --aim-at delete");
        assert_eq!(describe(&f), " aimed at delete requests in flight");
    }

    #[test]
    fn a_list_turns_on_only_its_kinds_at_their_default_rates() {
        let f = list("crash,connection-loss").unwrap();
        let d = Faults::default();
        assert_eq!(f.crash, d.crash);
        assert_eq!(f.connection_loss, d.connection_loss);
        assert!(f.pause.is_never() && f.partition.is_never() && f.local_expiry.is_never());
        assert_eq!(describe(&f), " of kinds connection-loss,crash");
        assert_eq!(flag(&f), " --faults connection-loss,crash");
        assert_eq!(flag(&Faults::default()), "");
        assert_eq!(list("all").unwrap(), Faults::default());
        assert_eq!(describe(&Faults::default()), "");
        // `zklock real`'s names of the same kinds.
        let real = list("cut,lost-create,expire,black-hole,local-expire,pause,crash").unwrap();
        assert_eq!(
            describe(&real),
            " of kinds connection-loss,lost-create-response,forced-expiry,partition,pause,\
             crash,local-expiry"
        );
        assert_eq!(
            list("cut,connection-loss").unwrap_err(),
            "--faults lists connection-loss twice"
        );
    }

    #[test]
    fn a_kind_twice_all_beside_others_and_an_unknown_kind_are_refused() {
        assert_eq!(
            list("crash,crash").unwrap_err(),
            "--faults lists crash twice"
        );
        assert_eq!(
            list("all,crash").unwrap_err(),
            "--faults: `all` stands alone"
        );
        let e = list("crsh").unwrap_err();
        assert!(
            e.starts_with("unknown fault \"crsh\": connection-loss, "),
            "{e}"
        );
    }

    #[test]
    fn a_recipes_rates_stand_for_the_kinds_it_has_on() {
        let mut own = Faults::none();
        own.forced_expiry = Rate::new(1, 100);
        // No flag: the recipe's faults as they are.
        assert_eq!(faults_or(None, &own).unwrap(), own);
        // A list: the recipe's rate for a kind it has, the default rate for the others.
        let items = [
            parse_fault("forced-expiry").unwrap(),
            parse_fault("crash").unwrap(),
        ];
        let f = faults_or(Some(&items), &own).unwrap();
        assert_eq!(f.forced_expiry, Rate::new(1, 100));
        assert_eq!(f.crash, Faults::default().crash);
        assert!(f.connection_loss.is_never());
    }

    /// Every kind of the simulator's faults has a name here: a kind added there and not
    /// here would stay on whatever `--faults` says.
    /// `--faults none` was refused by explore and check ("unknown fault"), though
    /// `zklock real` takes it.
    #[test]
    fn faults_none_is_taken_as_by_real() {
        assert_eq!(list("none").unwrap(), Faults::none());
        assert_eq!(describe(&Faults::none()), " of no kind (--faults none)");
        assert_eq!(flag(&Faults::none()), " --faults none");
        assert_eq!(
            list("none,crash").unwrap_err(),
            "--faults: `none` stands alone"
        );
    }

    #[test]
    fn every_kind_is_named() {
        let mut f = Faults::none();
        for k in KINDS {
            *(k.rate)(&mut f) = Rate::new(1, 2);
        }
        let mut expected = Faults::default();
        for k in KINDS {
            *(k.rate)(&mut expected) = Rate::new(1, 2);
        }
        assert_eq!(f, expected);
        assert_eq!(list("all").unwrap(), Faults::default());
    }
}
