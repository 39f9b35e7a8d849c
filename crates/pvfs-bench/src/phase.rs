//! The phases of a run and their order: which phases an iteration of a workload runs (IOR's
//! write and read; mdtest's tree, directory and file phases), and the label each is known by
//! in results.json, the CSV files and the output.
//!
//! Pure data, shared by every way a run is driven (one machine, MPI ranks, the coordinator),
//! so they cannot disagree on the schedule or on a phase's name.

use crate::params::{MdtestParams, Workload};

/// One IOR phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IorPhase {
    Write,
    Read,
}

/// One mdtest phase; each is one row of mdtest's SUMMARY.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MdtestPhase {
    TreeCreate,
    DirCreate,
    DirStat,
    DirRemove,
    FileCreate,
    FileStat,
    FileRead,
    FileRemove,
    TreeRemove,
}

impl MdtestPhase {
    /// The phases an iteration runs, in mdtest's order: the tree, directory items, file items,
    /// the tree's removal.
    pub fn sequence(p: &MdtestParams) -> Vec<MdtestPhase> {
        let (create, stat, read, remove) = p.phases();
        let mut out = Vec::new();
        if create {
            out.push(MdtestPhase::TreeCreate);
        }
        if !p.files_only {
            out.extend(create.then_some(MdtestPhase::DirCreate));
            out.extend(stat.then_some(MdtestPhase::DirStat));
            out.extend(remove.then_some(MdtestPhase::DirRemove));
        }
        out.extend(create.then_some(MdtestPhase::FileCreate));
        out.extend(stat.then_some(MdtestPhase::FileStat));
        out.extend(read.then_some(MdtestPhase::FileRead));
        out.extend(remove.then_some(MdtestPhase::FileRemove));
        if remove {
            out.push(MdtestPhase::TreeRemove);
        }
        out
    }

    /// mdtest's name for the row.
    pub fn row(self) -> &'static str {
        match self {
            MdtestPhase::TreeCreate => "Tree creation",
            MdtestPhase::DirCreate => "Directory creation",
            MdtestPhase::DirStat => "Directory stat",
            MdtestPhase::DirRemove => "Directory removal",
            MdtestPhase::FileCreate => "File creation",
            MdtestPhase::FileStat => "File stat",
            MdtestPhase::FileRead => "File read",
            MdtestPhase::FileRemove => "File removal",
            MdtestPhase::TreeRemove => "Tree removal",
        }
    }
}

/// Any phase of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    Ior(IorPhase),
    /// Remove the client's IOR files (after the last read).
    IorCleanup,
    Mdtest(MdtestPhase),
    /// pfind's scan of a run's files (io500's find).
    Find,
}

impl Phase {
    pub const ALL: [Phase; 13] = [
        Phase::Ior(IorPhase::Write),
        Phase::Ior(IorPhase::Read),
        Phase::IorCleanup,
        Phase::Mdtest(MdtestPhase::TreeCreate),
        Phase::Mdtest(MdtestPhase::DirCreate),
        Phase::Mdtest(MdtestPhase::DirStat),
        Phase::Mdtest(MdtestPhase::DirRemove),
        Phase::Mdtest(MdtestPhase::FileCreate),
        Phase::Mdtest(MdtestPhase::FileStat),
        Phase::Mdtest(MdtestPhase::FileRead),
        Phase::Mdtest(MdtestPhase::FileRemove),
        Phase::Mdtest(MdtestPhase::TreeRemove),
        Phase::Find,
    ];

    /// The phase's name on a command line (`ior-write`, `md-file-create`).
    pub fn name(self) -> &'static str {
        match self {
            Phase::Ior(IorPhase::Write) => "ior-write",
            Phase::Ior(IorPhase::Read) => "ior-read",
            Phase::IorCleanup => "ior-cleanup",
            Phase::Mdtest(m) => match m {
                MdtestPhase::TreeCreate => "md-tree-create",
                MdtestPhase::DirCreate => "md-dir-create",
                MdtestPhase::DirStat => "md-dir-stat",
                MdtestPhase::DirRemove => "md-dir-remove",
                MdtestPhase::FileCreate => "md-file-create",
                MdtestPhase::FileStat => "md-file-stat",
                MdtestPhase::FileRead => "md-file-read",
                MdtestPhase::FileRemove => "md-file-remove",
                MdtestPhase::TreeRemove => "md-tree-remove",
            },
            Phase::Find => "find",
        }
    }

    pub fn from_name(name: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The phase a label names (see [`Phase::label`]); labels are unique across phases.
    pub fn from_label(label: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.label() == label)
    }

    /// The phase's label in results and output: IOR's operation ("write", "read") or mdtest's
    /// row name ("File creation"), as the tools print them, so that the built-in engine's
    /// results read like theirs. The unmeasured cleanup is "cleanup".
    pub fn label(self) -> &'static str {
        match self {
            Phase::Ior(IorPhase::Write) => "write",
            Phase::Ior(IorPhase::Read) => "read",
            Phase::IorCleanup => "cleanup",
            Phase::Mdtest(m) => m.row(),
            Phase::Find => "find",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// In results.json, events.jsonl and the MPI ranks' lines a phase is its label, so those
/// files read as they always have, and a label no phase has is refused when read back.
impl serde::Serialize for Phase {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.label())
    }
}

impl<'de> serde::Deserialize<'de> for Phase {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Phase, D::Error> {
        let label = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Phase::from_label(&label)
            .ok_or_else(|| serde::de::Error::custom(format!("{label:?} is not a phase of IOR or mdtest")))
    }
}

/// The measured phases of one iteration of `workload`, in order: IOR's write then read (those
/// asked for), or mdtest's [`MdtestPhase::sequence`]. IOR's removal of the test files after
/// each iteration ([`Phase::IorCleanup`]) is not among them: it is not measured.
pub fn iteration_phases(workload: &Workload) -> Vec<Phase> {
    match workload {
        Workload::Ior(p) => {
            let mut out = Vec::new();
            if p.write {
                out.push(Phase::Ior(IorPhase::Write));
            }
            if p.read {
                out.push(Phase::Ior(IorPhase::Read));
            }
            out
        }
        Workload::Mdtest(p) => MdtestPhase::sequence(p).into_iter().map(Phase::Mdtest).collect(),
        Workload::Find(_) => vec![Phase::Find],
        // Its stages run their own workloads (`crate::io500::plan::Stage::engine_phases`).
        Workload::Io500(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Preset;

    fn labels(workload: &Workload) -> Vec<&'static str> {
        iteration_phases(workload).into_iter().map(Phase::label).collect()
    }

    #[test]
    fn ior_writes_then_reads_what_was_asked_for() {
        let Workload::Ior(mut p) = Preset::Throughput.workload() else { panic!("an IOR preset") };
        assert_eq!(labels(&Workload::Ior(p.clone())), ["write", "read"]);
        p.read = false;
        assert_eq!(labels(&Workload::Ior(p.clone())), ["write"]);
        p.read = true;
        p.write = false;
        assert_eq!(labels(&Workload::Ior(p)), ["read"]);
    }

    #[test]
    fn mdtest_runs_the_tree_directories_files_then_removes_the_tree() {
        let Workload::Mdtest(mut p) = Preset::Metadata.workload() else { panic!("an mdtest preset") };
        p.create = false;
        p.stat = false;
        p.read = false;
        p.remove = false;
        p.files_only = false;
        assert_eq!(
            labels(&Workload::Mdtest(p.clone())),
            [
                "Tree creation",
                "Directory creation",
                "Directory stat",
                "Directory removal",
                "File creation",
                "File stat",
                "File read",
                "File removal",
                "Tree removal",
            ],
            "none asked for is all of them"
        );
        p.files_only = true;
        p.create = true;
        p.stat = true;
        assert_eq!(labels(&Workload::Mdtest(p)), ["Tree creation", "File creation", "File stat"]);
    }

    #[test]
    fn names_round_trip_and_labels_are_the_tools() {
        for phase in Phase::ALL {
            assert_eq!(Phase::from_name(phase.name()), Some(phase));
        }
        assert_eq!(Phase::from_name("ior-append"), None);
        assert_eq!(Phase::IorCleanup.label(), "cleanup");
        assert_eq!(Phase::Mdtest(MdtestPhase::TreeRemove).label(), "Tree removal");
    }

    #[test]
    fn a_phase_is_its_label_in_json_and_an_unknown_label_is_refused() {
        for phase in Phase::ALL {
            let json = serde_json::to_string(&phase).expect("a label serializes");
            assert_eq!(json, format!("{:?}", phase.label()));
            assert_eq!(serde_json::from_str::<Phase>(&json).expect("its label reads back"), phase);
        }
        let err = serde_json::from_str::<Phase>("\"append\"").expect_err("no such phase");
        assert!(err.to_string().contains("\"append\" is not a phase"), "{err}");
    }
}
