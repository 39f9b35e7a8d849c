//! io500's phases as pvfs runs them on its own engine (IO500/io500 at 02091cf: the order of
//! `src/phase-definitions.h`, each phase's IOR or mdtest options from `src/phase_*.c`): which
//! workload each phase runs, with which of the engine's phases, and which figure of it io500
//! scores. The sizes come from io500's ini knobs ([`Options`], their defaults io500's), which
//! `--set` names as io500's ini does (`ior-easy.transferSize`, `debug.stonewall-time`).
//!
//! Every write phase is stonewalled with wear-out (IOR's `-D -O stoneWallingWearOut=1`,
//! mdtest's `-W`) and its reads stop at its count, as io500 carries it in its `.stonewall`
//! files; the reads are not stonewalled themselves. Data is verified as it is read back
//! (IOR's `-R`, mdtest's `-X`).

use crate::params::{DataPacket, IorParams, MdtestParams, Workload, format_size, parse_size};
use crate::phase::{IorPhase, MdtestPhase, Phase};
use std::fmt;

/// An io500 phase of the standard score, and the timestamp between the writes and the find,
/// in the order io500 runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    IorEasyWrite,
    MdtestEasyWrite,
    Timestamp,
    IorHardWrite,
    MdtestHardWrite,
    Find,
    IorEasyRead,
    MdtestEasyStat,
    IorHardRead,
    MdtestHardStat,
    MdtestEasyDelete,
    MdtestHardRead,
    MdtestHardDelete,
}

/// The four workloads io500's phases share (a write and its reads run the same files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    IorEasy,
    IorHard,
    MdtestEasy,
    MdtestHard,
}

impl Family {
    pub const ALL: [Family; 4] = [Family::IorEasy, Family::IorHard, Family::MdtestEasy, Family::MdtestHard];

    /// Its directory under the data directory, as io500 names it.
    pub fn dir(self) -> &'static str {
        match self {
            Family::IorEasy => "ior-easy",
            Family::IorHard => "ior-hard",
            Family::MdtestEasy => "mdtest-easy",
            Family::MdtestHard => "mdtest-hard",
        }
    }
}

impl Stage {
    pub const ALL: [Stage; 13] = [
        Stage::IorEasyWrite,
        Stage::MdtestEasyWrite,
        Stage::Timestamp,
        Stage::IorHardWrite,
        Stage::MdtestHardWrite,
        Stage::Find,
        Stage::IorEasyRead,
        Stage::MdtestEasyStat,
        Stage::IorHardRead,
        Stage::MdtestHardStat,
        Stage::MdtestEasyDelete,
        Stage::MdtestHardRead,
        Stage::MdtestHardDelete,
    ];

    /// io500's name for it (its result files', its output's).
    pub fn name(self) -> &'static str {
        match self {
            Stage::IorEasyWrite => "ior-easy-write",
            Stage::MdtestEasyWrite => "mdtest-easy-write",
            Stage::Timestamp => "timestamp",
            Stage::IorHardWrite => "ior-hard-write",
            Stage::MdtestHardWrite => "mdtest-hard-write",
            Stage::Find => "find",
            Stage::IorEasyRead => "ior-easy-read",
            Stage::MdtestEasyStat => "mdtest-easy-stat",
            Stage::IorHardRead => "ior-hard-read",
            Stage::MdtestHardStat => "mdtest-hard-stat",
            Stage::MdtestEasyDelete => "mdtest-easy-delete",
            Stage::MdtestHardRead => "mdtest-hard-read",
            Stage::MdtestHardDelete => "mdtest-hard-delete",
        }
    }

    pub fn parse(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whose files it works on; `None` for the timestamp and the find (which reads them all).
    pub fn family(self) -> Option<Family> {
        Some(match self {
            Stage::IorEasyWrite | Stage::IorEasyRead => Family::IorEasy,
            Stage::IorHardWrite | Stage::IorHardRead => Family::IorHard,
            Stage::MdtestEasyWrite | Stage::MdtestEasyStat | Stage::MdtestEasyDelete => Family::MdtestEasy,
            Stage::MdtestHardWrite
            | Stage::MdtestHardStat
            | Stage::MdtestHardRead
            | Stage::MdtestHardDelete => Family::MdtestHard,
            Stage::Timestamp | Stage::Find => return None,
        })
    }

    /// Whether it counts in the score (all but the timestamp).
    pub fn scored(self) -> bool {
        self != Stage::Timestamp
    }

    /// The engine's phases it runs, in order, and which of them io500 scores: an mdtest run
    /// that creates files makes its tree first and one that removes them removes the tree
    /// after, and io500 scores the files' rate alone.
    pub fn engine_phases(self) -> (Vec<Phase>, Option<Phase>) {
        use MdtestPhase::*;
        let md = |p| Phase::Mdtest(p);
        let (all, scored) = match self {
            Stage::IorEasyWrite | Stage::IorHardWrite => (vec![Phase::Ior(IorPhase::Write)], 0),
            Stage::IorEasyRead | Stage::IorHardRead => (vec![Phase::Ior(IorPhase::Read)], 0),
            Stage::MdtestEasyWrite | Stage::MdtestHardWrite => (vec![md(TreeCreate), md(FileCreate)], 1),
            Stage::MdtestEasyStat | Stage::MdtestHardStat => (vec![md(FileStat)], 0),
            Stage::MdtestHardRead => (vec![md(FileRead)], 0),
            Stage::MdtestEasyDelete | Stage::MdtestHardDelete => (vec![md(FileRemove), md(TreeRemove)], 0),
            Stage::Timestamp | Stage::Find => return (Vec::new(), None),
        };
        let scored = all.get(scored).copied();
        (all, scored)
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// io500's ini knobs that shape the phases, with io500's defaults.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// `[debug] stonewall-time`: 300 s (io500's rule; 30 s in the student cluster competition).
    pub stonewall: u32,
    /// `[global] scc`: the Student Cluster Competition's rules (a 30 s stonewall is valid).
    pub scc: bool,
    /// `[ior-easy] transferSize`, `blockSize`, `filePerProc`: 2m, 9920000m, true.
    pub ior_easy_transfer: u64,
    pub ior_easy_block: u64,
    pub ior_easy_file_per_proc: bool,
    /// `[ior-hard] segmentCount`: 10,000,000 segments of one 47008-byte transfer per task.
    pub ior_hard_segments: u32,
    /// `[mdtest-easy] n`, `[mdtest-hard] n`: files per task, 1,000,000 each.
    pub mdtest_easy_files: u64,
    pub mdtest_hard_files: u64,
}

/// ior-hard's transfer and block, and mdtest-hard's file size: io500's fixed, awkward sizes.
pub const IOR_HARD_TRANSFER: u64 = 47_008;
pub const MDTEST_HARD_BYTES: u64 = 3_901;

impl Default for Options {
    fn default() -> Options {
        Options {
            stonewall: 300,
            scc: false,
            ior_easy_transfer: 2 << 20,
            ior_easy_block: 9_920_000 << 20,
            ior_easy_file_per_proc: true,
            ior_hard_segments: 10_000_000,
            mdtest_easy_files: 1_000_000,
            mdtest_hard_files: 1_000_000,
        }
    }
}

/// An ini knob pvfs does not know, or a value it cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    #[error("unknown io500 option {0:?}: use {KNOWN}")]
    Unknown(String),
    #[error("io500 option {key} = {value:?}: {why}")]
    Bad { key: String, value: String, why: String },
}

/// The knobs [`Options::set`] takes, as an error lists them.
pub const KNOWN: &str = "debug.stonewall-time, global.scc, ior-easy.transferSize, ior-easy.blockSize, \
                     ior-easy.filePerProc, ior-hard.segmentCount, mdtest-easy.n, mdtest-hard.n";

/// Every knob by its ini name.
const KNOBS: [&str; 8] = [
    "debug.stonewall-time",
    "global.scc",
    "ior-easy.transferSize",
    "ior-easy.blockSize",
    "ior-easy.filePerProc",
    "ior-hard.segmentCount",
    "mdtest-easy.n",
    "mdtest-hard.n",
];

impl OptionError {
    /// What is wrong, without the knob's name and value (which the caller shows).
    pub fn why(&self) -> String {
        match self {
            OptionError::Unknown(_) => format!("use {KNOWN}"),
            OptionError::Bad { why, .. } => why.clone(),
        }
    }
}

impl Options {
    /// The knob `key` names, as its ini name, if it is one.
    pub fn knob(key: &str) -> Option<&'static str> {
        KNOBS.into_iter().find(|k| *k == key)
    }

    /// Sets the knob `SECTION.KEY` as io500's ini names it (`ior-easy.transferSize = 1m`).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), OptionError> {
        let bad = |why: &str| OptionError::Bad {
            key: key.to_owned(),
            value: value.to_owned(),
            why: why.to_owned(),
        };
        let size = || parse_size(value).filter(|n| *n > 0).ok_or_else(|| bad("expected a size such as 2m"));
        let count = || {
            value.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| bad("expected a whole number above 0"))
        };
        // io500's INI_BOOL: TRUE or FALSE, in any case.
        let flag = || match value.to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(bad("expected TRUE or FALSE")),
        };
        match key {
            "debug.stonewall-time" => {
                self.stonewall =
                    value.parse().ok().filter(|s| *s > 0).ok_or_else(|| bad("expected seconds above 0"))?
            }
            "global.scc" => self.scc = flag()?,
            "ior-easy.transferSize" => self.ior_easy_transfer = size()?,
            "ior-easy.blockSize" => self.ior_easy_block = size()?,
            "ior-easy.filePerProc" => self.ior_easy_file_per_proc = flag()?,
            "ior-hard.segmentCount" => {
                self.ior_hard_segments = u32::try_from(count()?).map_err(|_| bad("too many segments"))?
            }
            "mdtest-easy.n" => self.mdtest_easy_files = count()?,
            "mdtest-hard.n" => self.mdtest_hard_files = count()?,
            _ => return Err(OptionError::Unknown(key.to_owned())),
        }
        Ok(())
    }

    /// The knobs that differ from io500's defaults, as `SECTION.KEY = VALUE` would set them.
    pub fn changed(&self) -> Vec<(&'static str, String)> {
        let d = Options::default();
        let mut out = Vec::new();
        let mut add = |on: bool, key, value: String| {
            if on {
                out.push((key, value));
            }
        };
        add(self.stonewall != d.stonewall, "debug.stonewall-time", self.stonewall.to_string());
        add(self.scc != d.scc, "global.scc", self.scc.to_string().to_uppercase());
        add(
            self.ior_easy_transfer != d.ior_easy_transfer,
            "ior-easy.transferSize",
            format_size(self.ior_easy_transfer),
        );
        add(self.ior_easy_block != d.ior_easy_block, "ior-easy.blockSize", format_size(self.ior_easy_block));
        let fpp = self.ior_easy_file_per_proc;
        add(fpp != d.ior_easy_file_per_proc, "ior-easy.filePerProc", fpp.to_string().to_uppercase());
        add(
            self.ior_hard_segments != d.ior_hard_segments,
            "ior-hard.segmentCount",
            self.ior_hard_segments.to_string(),
        );
        add(
            self.mdtest_easy_files != d.mdtest_easy_files,
            "mdtest-easy.n",
            self.mdtest_easy_files.to_string(),
        );
        add(
            self.mdtest_hard_files != d.mdtest_hard_files,
            "mdtest-hard.n",
            self.mdtest_hard_files.to_string(),
        );
        out
    }
}

/// The seed of each family's data (IOR's and mdtest's `-G`), which io500 draws per phase name
/// from its run's timestamp; a write and its reads share one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Seeds {
    pub ior_easy: u32,
    pub ior_hard: u32,
    pub mdtest_easy: u32,
    pub mdtest_hard: u32,
}

impl Seeds {
    /// Four seeds from one number (the run's start, say), none of them 0 (which IOR and pvfs
    /// read as "none given").
    pub fn from(base: u64) -> Seeds {
        // splitmix64's steps: four well-spread 32-bit values from any base.
        let mut state = base;
        let mut next = || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) as u32).max(1)
        };
        Seeds { ior_easy: next(), ior_hard: next(), mdtest_easy: next(), mdtest_hard: next() }
    }
}

/// An IO500 run's shape: io500's knobs, and the seeds of its data (drawn when the run is
/// planned, as io500 draws them from its timestamp).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Io500Params {
    pub options: Options,
    pub seeds: Seeds,
}

impl Io500Params {
    /// Every stage that runs a workload, with it.
    pub fn stage_workloads(&self) -> impl Iterator<Item = (Stage, Workload)> + '_ {
        Stage::ALL.into_iter().filter_map(|stage| Some((stage, workload(stage, &self.options, &self.seeds)?)))
    }
}

/// The workload `stage` runs under `options`, as io500 gives IOR or mdtest its options;
/// `None` for the timestamp and the find.
pub fn workload(stage: Stage, options: &Options, seeds: &Seeds) -> Option<Workload> {
    let write = matches!(stage, Stage::IorEasyWrite | Stage::IorHardWrite);
    let ior = |transfer, block, segments, file_per_proc, signature| {
        Workload::Ior(IorParams {
            write,
            read: !write,
            odirect: false,
            reorder: true,
            iterations: 1,
            transfer,
            block,
            segments,
            file_per_proc,
            random: false,
            fsync: true,
            packet: DataPacket::Timestamp,
            deadline: if write { options.stonewall } else { 0 },
            wear_out: write,
            signature,
            verify: !write,
            keep: true,
        })
    };
    let created = matches!(stage, Stage::MdtestEasyWrite | Stage::MdtestHardWrite);
    let mdtest = |hard: bool| {
        Workload::Mdtest(MdtestParams {
            create: created,
            stat: matches!(stage, Stage::MdtestEasyStat | Stage::MdtestHardStat),
            read: stage == Stage::MdtestHardRead,
            remove: matches!(stage, Stage::MdtestEasyDelete | Stage::MdtestHardDelete),
            iterations: 1,
            items: 0,
            depth: 0,
            branch: 1,
            // mdtest-easy: a directory per task, files at the leaves (-u -L).
            leaf_only: !hard,
            unique_dir: !hard,
            files_only: true,
            per_task: if hard { options.mdtest_hard_files } else { options.mdtest_easy_files },
            stride: 1,
            write_bytes: if hard { MDTEST_HARD_BYTES } else { 0 },
            read_bytes: if hard { MDTEST_HARD_BYTES } else { 0 },
            verify: stage == Stage::MdtestHardRead,
            seed: if hard { seeds.mdtest_hard } else { seeds.mdtest_easy },
            deadline: if created { options.stonewall } else { 0 },
            sync: created,
            fsync: false,
        })
    };
    Some(match stage.family()? {
        Family::IorEasy => ior(
            options.ior_easy_transfer,
            options.ior_easy_block,
            1,
            options.ior_easy_file_per_proc,
            seeds.ior_easy,
        ),
        Family::IorHard => {
            ior(IOR_HARD_TRANSFER, IOR_HARD_TRANSFER, options.ior_hard_segments, false, seeds.ior_hard)
        }
        Family::MdtestEasy => mdtest(false),
        Family::MdtestHard => mdtest(true),
    })
}

/// Where the timestamp stage marks the time, below the run's directory: a directory the first
/// client makes (as an mdtest tree's root), whose change time the find reads as pfind's
/// `-newer` reads io500's timestamp file, so the threshold is the file system's clock, as the
/// files' change times are.
pub const TIMESTAMP_DIR: &str = "timestamp";

/// The timestamp's directory below the run's, as the find names it.
pub const TIMESTAMP_MARK: &str = "timestamp/test-dir.0-0/mdtest_tree.0";

/// What makes (and at the end removes) the timestamp's directory: an mdtest tree of one
/// directory, shared, so that only the first task makes it.
pub fn timestamp_workload() -> Workload {
    Workload::Mdtest(MdtestParams {
        create: true,
        remove: true,
        iterations: 1,
        per_task: 1,
        branch: 1,
        files_only: true,
        ..MdtestParams::default()
    })
}

/// Whether `name` is a directory an IO500 run makes below its own: a family's, or the
/// timestamp's.
pub fn is_stage_dir(name: &str) -> bool {
    name == TIMESTAMP_DIR || Family::ALL.iter().any(|f| f.dir() == name)
}

/// The stage whose stonewalled count `stage` stops at: its family's write.
pub fn counted_by(stage: Stage) -> Option<Stage> {
    Some(match stage.family()? {
        _ if matches!(
            stage,
            Stage::IorEasyWrite | Stage::IorHardWrite | Stage::MdtestEasyWrite | Stage::MdtestHardWrite
        ) =>
        {
            return None;
        }
        Family::IorEasy => Stage::IorEasyWrite,
        Family::IorHard => Stage::IorHardWrite,
        Family::MdtestEasy => Stage::MdtestEasyWrite,
        Family::MdtestHard => Stage::MdtestHardWrite,
    })
}
