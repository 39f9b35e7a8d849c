//! Workloads: the seed's presets, overrides from the cluster file and the command line, and the
//! exact IOR and mdtest arguments they stand for.

use std::fmt;

mod command;
mod find;
pub use command::{CommandError, Paths, ior_command, mdtest_command};
pub use find::{FindParams, NamePattern, PatternError};

/// An IOR workload (the parameters the seed's runs use). Serialised as results.json's
/// `params` keep it (the record adds the sizes as text); the wire has its own message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IorParams {
    /// `-w`
    pub write: bool,
    /// `-r`
    pub read: bool,
    /// O_DIRECT: the seed's `-B`, which IOR 3.3 replaced with `--posix.odirect`.
    pub odirect: bool,
    /// `-C`: read back what another node's task wrote, so the client cache cannot serve it.
    pub reorder: bool,
    /// `-i`
    pub iterations: u32,
    /// `-t`, bytes.
    pub transfer: u64,
    /// `-b`, bytes per task per segment.
    pub block: u64,
    /// `-s`
    pub segments: u32,
    /// `-F`
    pub file_per_proc: bool,
    /// `-z`: shuffled offsets.
    pub random: bool,
    /// `-e`: fsync at the end of each write phase.
    pub fsync: bool,
    /// `-l`: what the written data looks like. A record written before it was kept reads as
    /// IOR's default.
    #[serde(default)]
    pub packet: DataPacket,
    /// `-D`: the stonewall, in seconds (0: none). A task stops after the transfer during
    /// which this much time has passed since its first (IOR's `deadlineForStonewalling`).
    /// Left out of a record when 0, so a run without one records what it always did.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub deadline: u32,
    /// `-O stoneWallingWearOut=1`: at the stonewall every task learns the most transfers any
    /// task made and goes on to that many, so every task writes as much (and a read phase can
    /// read it all back). Needs `deadline`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wear_out: bool,
    /// `-G`: the written data's timestamp signature (0: the write's start in seconds, as IOR
    /// takes it when none is given). A run that verifies (`-R`) fixes one when it is planned,
    /// as IOR's rank 0 fixes it for every task.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub signature: u32,
    /// `-R`: every transfer read is compared with what its writer wrote.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verify: bool,
    /// `-k`: the files stay after each iteration (IOR removes them).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep: bool,
}

/// IOR's own defaults (`ior -h` at 5fcf0ba): one iteration of 256 KiB transfers in a 1 MiB
/// block, neither write nor read chosen yet.
impl Default for IorParams {
    fn default() -> IorParams {
        IorParams {
            write: false,
            read: false,
            odirect: false,
            reorder: false,
            iterations: 1,
            transfer: 256 << 10,
            block: 1 << 20,
            segments: 1,
            file_per_proc: false,
            random: false,
            fsync: false,
            packet: DataPacket::Timestamp,
            deadline: 0,
            wear_out: false,
            signature: 0,
            verify: false,
            keep: false,
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// IOR's `-l` (dataPacketType): the contents of every transfer it writes. It matters to a file
/// system or device that compresses or deduplicates, so the engine writes what IOR writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataPacket {
    /// IOR's default: 64-bit words `rank << 32 | (signature + i)`, the same for every transfer
    /// of a task (low entropy: compresses well).
    #[default]
    Timestamp,
    /// The timestamp words, with the first word of each 4 KiB stamped with the transfer's
    /// offset, per transfer.
    Offset,
    /// IOR's "incompressible": words from `rand_r`, re-seeded per word as IOR 4 does (so one
    /// value repeated), stamped per 4 KiB like `Offset`.
    Incompressible,
    /// Every transfer regenerated from a per-offset seed: incompressible, and costs CPU per
    /// transfer, as in IOR.
    Random,
}

impl DataPacket {
    pub const ALL: [DataPacket; 4] =
        [DataPacket::Timestamp, DataPacket::Offset, DataPacket::Incompressible, DataPacket::Random];

    /// The name IOR's `-l` takes (and prints as "data packet type").
    pub fn as_str(self) -> &'static str {
        match self {
            DataPacket::Timestamp => "timestamp",
            DataPacket::Offset => "offset",
            DataPacket::Incompressible => "incompressible",
            DataPacket::Random => "random",
        }
    }

    /// A name or its first letter, as IOR's `parsePacketType` reads only the first character.
    pub fn parse(s: &str) -> Option<DataPacket> {
        DataPacket::ALL.into_iter().find(|p| s == p.as_str() || s == &p.as_str()[..1])
    }
}

impl fmt::Display for DataPacket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An mdtest workload (serialised as results.json's `params` keep it). The default is no
/// workload (no iterations), for filling in the rest of one.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MdtestParams {
    /// `-C`, `-T`, `-E`, `-r`: the phases; none given means all of them (mdtest's default).
    pub create: bool,
    pub stat: bool,
    pub read: bool,
    pub remove: bool,
    /// `-i`
    pub iterations: u32,
    /// `-I`: items per directory.
    pub items: u32,
    /// `-z`: tree depth.
    pub depth: u32,
    /// `-b`: branching factor.
    pub branch: u32,
    /// `-L`: files only at the leaves.
    pub leaf_only: bool,
    /// `-u`: a directory per task.
    pub unique_dir: bool,
    /// `-F`: files only, no directory items.
    pub files_only: bool,
    /// `-n`: items per task across the tree (0: `-I` per directory instead). mdtest spreads
    /// them evenly over the directories that hold items, rounding down.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub per_task: u64,
    /// `-N`: the stride between the task that makes a file and the one that stats, reads and
    /// removes it (0: each its own), so no client's cache serves what it made.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stride: u32,
    /// `-w`: bytes written to each file after it is created.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub write_bytes: u64,
    /// `-e`: bytes read from each file in the read phase.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub read_bytes: u64,
    /// `-X`: check every byte read against what its writer wrote (IOR's memory pattern).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verify: bool,
    /// `-G`: the seed of the written data's pattern (mdtest draws one from the clock when it
    /// is not given; io500 gives one).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub seed: u32,
    /// `-W`: the stonewall of the file-creation phase, in seconds (0: none). At it every task
    /// learns the most files any task made and goes on to as many; the later file phases
    /// stat, read and remove that many.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub deadline: u32,
    /// `-Y`: `sync(2)` at the end of each phase, inside its time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sync: bool,
    /// `-y`: `fsync` each file after writing it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fsync: bool,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

impl MdtestParams {
    /// The phases that run: those asked for, or all of them when none is.
    pub fn phases(&self) -> (bool, bool, bool, bool) {
        if self.create || self.stat || self.read || self.remove {
            (self.create, self.stat, self.read, self.remove)
        } else {
            (true, true, true, true)
        }
    }

    /// Directories in the tree (root included): 1 + b + b² + … + b^z, or `None` when that does
    /// not fit in a u64 (branch and depth come from users and from the wire).
    pub fn tree_dirs(&self) -> Option<u64> {
        (0..=self.depth).try_fold(0u64, |sum, level| sum.checked_add(self.dirs_at(level)?))
    }

    /// Directories at `level` of the tree (b^level), `None` on overflow.
    pub fn dirs_at(&self, level: u32) -> Option<u64> {
        u64::from(self.branch).checked_pow(level)
    }

    /// Directories that hold items: the leaves with `-L`, all of them otherwise.
    pub fn item_dirs(&self) -> Option<u64> {
        if self.leaf_only { self.dirs_at(self.depth) } else { self.tree_dirs() }
    }

    /// Items in each item directory: `-I`, or `-n` spread over them as mdtest does (rounded
    /// down; `None` when the tree does not fit in a u64).
    pub fn items_per_dir(&self) -> Option<u64> {
        match self.per_task {
            0 => Some(u64::from(self.items)),
            n => Some(n / self.item_dirs()?),
        }
    }

    /// Items (files or directories) one task makes per phase, in every item directory.
    pub fn items_per_task(&self) -> Option<u64> {
        self.item_dirs()?.checked_mul(self.items_per_dir()?)
    }

    /// mdtest's number of the tree directory `child` of directory `dir` (0 is the root): its
    /// directories are numbered level by level, the children of `d` being `d·b + 1 …  d·b + b`.
    /// Items are numbered from their directory's: `dir · items_per_dir + i`.
    pub fn child_index(&self, dir: u64, child: u32) -> u64 {
        // Bounded by MAX_TREE_DIRS once checked.
        dir * u64::from(self.branch) + 1 + u64::from(child)
    }
}

/// What a benchmark run does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    Ior(IorParams),
    Mdtest(MdtestParams),
    /// pfind's scan of what a run left (io500's find): no preset of its own, a stage of one.
    Find(FindParams),
    /// The IO500: its phases in its order, each an IOR, mdtest or find workload of its own
    /// (`crate::io500::plan`), shaped by io500's ini knobs.
    Io500(crate::io500::plan::Io500Params),
}

/// The seed's runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// `-w -r -B -C -i4 -t32m -b4G -F`: sequential throughput.
    Throughput,
    /// `-w -r -B -C -i4 -t4k -b320m -F -z`: random 4 KiB IOPS.
    Iops,
    /// mdtest `-C -T -i4 -I 2000 -z 2 -b 4 -L -u -F`.
    Metadata,
    /// mdtest `-I 10 -i 2 -z 5 -b 5` (the seed's Lustre run).
    MetadataLustre,
    /// The IO500 as io500 runs it (its phases, sizes and rules; a 300 s stonewall).
    Io500,
    /// The IO500 under the Student Cluster Competition's rules (a 30 s stonewall).
    Io500Scc,
}

impl Preset {
    pub const ALL: [Preset; 6] = [
        Preset::Throughput,
        Preset::Iops,
        Preset::Metadata,
        Preset::MetadataLustre,
        Preset::Io500,
        Preset::Io500Scc,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Preset::Throughput => "throughput",
            Preset::Iops => "iops",
            Preset::Metadata => "metadata",
            Preset::MetadataLustre => "metadata-lustre",
            Preset::Io500 => "io500",
            Preset::Io500Scc => "io500-scc",
        }
    }

    pub fn parse(name: &str) -> Result<Preset, ParamError> {
        Preset::ALL
            .into_iter()
            .find(|p| p.as_str() == name)
            .ok_or_else(|| ParamError::UnknownPreset(name.to_owned()))
    }

    pub fn workload(self) -> Workload {
        const MIB: u64 = 1 << 20;
        let ior = |transfer, block, random| {
            Workload::Ior(IorParams {
                write: true,
                read: true,
                odirect: true,
                reorder: true,
                iterations: 4,
                transfer,
                block,
                file_per_proc: true,
                random,
                ..IorParams::default()
            })
        };
        match self {
            Preset::Throughput => ior(32 * MIB, 4096 * MIB, false),
            Preset::Iops => ior(4096, 320 * MIB, true),
            Preset::Metadata => Workload::Mdtest(MdtestParams {
                create: true,
                stat: true,
                read: false,
                remove: false,
                iterations: 4,
                items: 2000,
                depth: 2,
                branch: 4,
                leaf_only: true,
                unique_dir: true,
                files_only: true,
                ..MdtestParams::default()
            }),
            Preset::Io500 => Workload::Io500(crate::io500::plan::Io500Params::default()),
            Preset::Io500Scc => {
                let mut params = crate::io500::plan::Io500Params::default();
                (params.options.scc, params.options.stonewall) = (true, 30);
                Workload::Io500(params)
            }
            Preset::MetadataLustre => Workload::Mdtest(MdtestParams {
                create: false,
                stat: false,
                read: false,
                remove: false,
                iterations: 2,
                items: 10,
                depth: 5,
                branch: 5,
                leaf_only: false,
                unique_dir: false,
                files_only: false,
                ..MdtestParams::default()
            }),
        }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A bad preset name or parameter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    #[error("unknown preset {0:?}: use throughput, iops, metadata, metadata-lustre, io500 or io500-scc")]
    UnknownPreset(String),
    #[error("unknown {tool} parameter {key:?}: use {known}")]
    UnknownKey { tool: &'static str, key: String, known: &'static str },
    #[error("{key} = {value:?}: {why}")]
    BadValue { key: String, value: String, why: String },
    /// The workload as a whole breaks a rule: a bound, or a combination IOR would refuse.
    #[error(transparent)]
    Invalid(#[from] Violation),
}

/// A parameter beyond its bound, or a combination IOR or mdtest would refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{why}")]
pub struct Violation {
    /// The parameter at fault by its full name (`transfer`, `segments`, `items`, or `tasks` and
    /// `clients` for the run's size): the name cluster files, `--set` and the wire's fields use, so each
    /// can point at its own place.
    pub field: &'static str,
    /// What is wrong, with the value and the limit, and what to do instead.
    pub why: String,
}

impl Violation {
    pub fn new(field: &'static str, why: impl Into<String>) -> Violation {
        Violation { field, why: why.into() }
    }
}

/// The bounds on every size and count a workload may ask for, in one place.
///
/// A workload comes from a cluster file, a command line or the wire, and the agent that runs
/// it is root on a storage node: nothing a caller says may make it allocate, loop or overflow
/// without limit. Each bound is far beyond any real run (the seed's values are given for
/// scale) and small enough that every product of them below fits in a u64.
pub mod limits {
    /// `-t`: every task holds one transfer in memory (IOR's buffer and the engine's). The seed's
    /// largest is 32 MiB and IOR's default 256 KiB; a single request above 1 GiB per task
    /// measures the memory system, not storage.
    pub const MAX_TRANSFER: u64 = 1 << 30;
    /// `-b × -s`: what one task moves per phase, its file's size with `-F`. 16 TiB is ext4's
    /// largest file and four thousand times the seed's 4 GiB block.
    pub const MAX_BYTES_PER_TASK: u64 = 16 << 40;
    /// Transfers per task per phase (`b / t × s`), the offsets a task visits: 2^32 is 16 TiB in
    /// 4 KiB requests, more than an hour per phase even at a million IOPS per task.
    pub const MAX_TRANSFERS_PER_TASK: u64 = 1 << 32;
    /// `-s`: every segment is at least one request per task; 10^8 of them is more than a day
    /// at a thousand IOPS per task. (The seed runs one.)
    pub const MAX_SEGMENTS: u32 = 100_000_000;
    /// `-i`: the seed repeats a run 4 times; a thousand repetitions is a soak test.
    pub const MAX_ITERATIONS: u32 = 1000;
    /// Tasks on one client. The engine runs a thread per task (IOR a process per core), and
    /// 4096 is more than any client has cores; `pvfsctl bench --procs` has the same range.
    pub const MAX_TASKS_PER_CLIENT: u32 = 4096;
    /// Tasks in a run across every client: 2^20, 256 clients at the per-client maximum or a
    /// thousand clients at 1024 tasks each.
    pub const MAX_TOTAL_TASKS: u32 = 1 << 20;
    /// Clients in one run (the hosts of one MPI job): ten thousand, the largest cluster pvfs
    /// is measured at (`pvfsctl serve` following 10,000 agents). Without it a Launch naming
    /// 100,000 hosts at one task each started `mpirun -np 100000`.
    pub const MAX_CLIENTS: usize = 10_000;
    /// Items (files or directories) one task makes per phase, `-I` × item directories. The
    /// seed's metadata preset makes 32 000; 10^8 is more than a day at a thousand creates a
    /// second per task.
    pub const MAX_ITEMS_PER_TASK: u64 = 100_000_000;
    /// Items a phase makes across every task (and tree directories, with `-u`): ten billion,
    /// nearly three hours per phase for a metadata service creating a million files a second.
    pub const MAX_TOTAL_ITEMS: u64 = 10_000_000_000;
    /// `-z`: each level adds a `mdtest_tree.D.I/` component (at most 25 bytes), so 32 levels
    /// stay far below PATH_MAX (4096) under any run directory. The seed's deepest tree is 5.
    pub const MAX_DEPTH: u32 = 32;
    /// Directories in one mdtest tree (1 + b + … + b^z): ten million, 2500 times the seed's
    /// Lustre tree (3906).
    pub const MAX_TREE_DIRS: u64 = 10_000_000;
    /// Bytes a phase moves across every task: the largest file offset Linux takes (`off_t`
    /// is signed 64-bit), since a shared file holds every task's blocks.
    pub const MAX_PHASE_BYTES: u64 = i64::MAX as u64;
    /// The longest stonewall: a day.
    pub const MAX_DEADLINE: u32 = 86_400;
}

const IOR_KEYS: &str = "transfer (t), block (b), segments (s), iterations (i), file_per_proc (F), random (z), \
                        fsync (e), reorder (C), odirect (B), write (w), read (r), packet (l), deadline (D), \
                        wear_out (stoneWallingWearOut), signature (G), verify (R), keep (k)";
const MDTEST_KEYS: &str = "items (I), per_task (n), depth (z), branch (b), iterations (i), create (C), stat (T), \
                           read (E), remove (r), leaf_only (L), unique_dir (u), files_only (F), stride (N), \
                           write_bytes (w), read_bytes (e), verify (X), seed (G), deadline (W), sync (Y), fsync (y)";

/// How many tasks a run has: `per_client` on each of `clients`, within the bounds.
pub fn total_tasks(per_client: u32, clients: usize) -> Result<u32, Violation> {
    use limits::{MAX_CLIENTS, MAX_TASKS_PER_CLIENT, MAX_TOTAL_TASKS};
    if clients > MAX_CLIENTS {
        return Err(Violation::new(
            "clients",
            format!(
                "{clients} clients is more than {MAX_CLIENTS} in one run; run the benchmark on fewer clients \
                 (a subset of them, or several runs)"
            ),
        ));
    }
    if per_client == 0 {
        return Err(Violation::new("tasks", "procs (tasks per client) must be at least 1"));
    }
    if per_client > MAX_TASKS_PER_CLIENT {
        return Err(Violation::new(
            "tasks",
            format!(
                "procs {per_client} is more than {MAX_TASKS_PER_CLIENT} tasks per client: the engine runs a thread per \
                 task, and no client has that many cores; use fewer procs"
            ),
        ));
    }
    u32::try_from(clients)
        .ok()
        .and_then(|clients| per_client.checked_mul(clients))
        .filter(|total| *total <= MAX_TOTAL_TASKS)
        .ok_or_else(|| {
            Violation::new(
                "tasks",
                format!(
                    "{per_client} procs on each of {clients} clients is more than {MAX_TOTAL_TASKS} tasks in all; use \
                     fewer procs or clients"
                ),
            )
        })
}

impl Workload {
    /// The workload a tool's name on a command line starts from (`pvfs-agent engine-phase
    /// --preset NAME`): a preset's, or `find`'s (any file).
    pub fn base(name: &str) -> Result<Workload, ParamError> {
        match name {
            "find" => Ok(Workload::Find(FindParams::default())),
            preset => Ok(Preset::parse(preset)?.workload()),
        }
    }

    /// The name [`Workload::base`] takes back for a workload of this kind.
    pub fn tool(&self) -> &'static str {
        match self {
            Workload::Ior(_) => "throughput",
            Workload::Mdtest(_) => "metadata",
            Workload::Find(_) => "find",
            Workload::Io500(_) => "io500",
        }
    }

    /// Iterations the workload repeats (a find is one scan).
    pub fn iterations(&self) -> u32 {
        match self {
            Workload::Ior(p) => p.iterations,
            Workload::Mdtest(p) => p.iterations,
            Workload::Find(_) | Workload::Io500(_) => 1,
        }
    }

    /// Fixes the written data's signature at `now` (seconds since the epoch) when the run
    /// verifies what it reads and none was given: IOR's rank 0 takes the time and gives it to
    /// every task, so that each reader knows what its writer wrote; the clients of a run have
    /// no rank 0, so the run is given it when planned.
    pub fn fix_signature(&mut self, now: u64) {
        match self {
            Workload::Ior(p) if p.verify && p.signature == 0 => p.signature = (now as u32).max(1),
            // io500 draws its seeds from its run's timestamp.
            Workload::Io500(p) if p.seeds == crate::io500::plan::Seeds::default() => {
                p.seeds = crate::io500::plan::Seeds::from(now)
            }
            _ => {}
        }
    }

    /// Sets one parameter by name (or by its IOR/mdtest letter), checking the value and the
    /// workload as it then stands; a refused value leaves the workload as it was.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ParamError> {
        let mut changed = self.clone();
        changed.assign(key, value)?;
        changed.check().map_err(|v| ParamError::BadValue {
            key: key.to_owned(),
            value: value.to_owned(),
            why: v.why,
        })?;
        *self = changed;
        Ok(())
    }

    /// Sets every pair, then checks the whole: a full set of values (as [`Workload::settings`]
    /// gives) may pass through combinations that are invalid only halfway.
    pub fn set_all<'a>(
        &mut self,
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<(), ParamError> {
        for (key, value) in pairs {
            self.assign(key, value)?;
        }
        Ok(self.check()?)
    }

    /// Every parameter as `(name, value)`, in words `set` takes back: how a workload travels
    /// on a command line (`pvfs-agent engine --set …` under mpirun).
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        match self {
            Workload::Ior(p) => vec![
                ("write", p.write.to_string()),
                ("read", p.read.to_string()),
                ("odirect", p.odirect.to_string()),
                ("reorder", p.reorder.to_string()),
                ("iterations", p.iterations.to_string()),
                ("transfer", p.transfer.to_string()),
                ("block", p.block.to_string()),
                ("segments", p.segments.to_string()),
                ("file_per_proc", p.file_per_proc.to_string()),
                ("random", p.random.to_string()),
                ("fsync", p.fsync.to_string()),
                ("packet", p.packet.to_string()),
                ("deadline", p.deadline.to_string()),
                ("wear_out", p.wear_out.to_string()),
                ("signature", p.signature.to_string()),
                ("verify", p.verify.to_string()),
                ("keep", p.keep.to_string()),
            ],
            Workload::Mdtest(p) => vec![
                ("create", p.create.to_string()),
                ("stat", p.stat.to_string()),
                ("read", p.read.to_string()),
                ("remove", p.remove.to_string()),
                ("iterations", p.iterations.to_string()),
                ("items", p.items.to_string()),
                ("depth", p.depth.to_string()),
                ("branch", p.branch.to_string()),
                ("leaf_only", p.leaf_only.to_string()),
                ("unique_dir", p.unique_dir.to_string()),
                ("files_only", p.files_only.to_string()),
                ("per_task", p.per_task.to_string()),
                ("stride", p.stride.to_string()),
                ("write_bytes", p.write_bytes.to_string()),
                ("read_bytes", p.read_bytes.to_string()),
                ("verify", p.verify.to_string()),
                ("seed", p.seed.to_string()),
                ("deadline", p.deadline.to_string()),
                ("sync", p.sync.to_string()),
                ("fsync", p.fsync.to_string()),
            ],
            Workload::Io500(p) => p.options.changed(),
            Workload::Find(p) => vec![
                ("changed_since", p.changed_since.to_string()),
                ("size", p.size.map_or_else(String::new, |s| s.to_string())),
                ("name", p.name.clone()),
                ("newer", p.newer.clone()),
            ],
        }
    }

    /// The full name of parameter `key` (a name or an IOR/mdtest letter), as [`Violation::field`]
    /// names it; `None` for a key this workload does not have.
    pub fn field(&self, key: &str) -> Option<&'static str> {
        let known: &[(&str, &str)] = match self {
            Workload::Ior(_) => &[
                ("transfer", "t"),
                ("block", "b"),
                ("segments", "s"),
                ("iterations", "i"),
                ("file_per_proc", "F"),
                ("random", "z"),
                ("fsync", "e"),
                ("reorder", "C"),
                ("odirect", "B"),
                ("write", "w"),
                ("read", "r"),
                ("packet", "l"),
                ("deadline", "D"),
                // IOR spells it as an `-O` option.
                ("wear_out", "stoneWallingWearOut"),
                ("signature", "G"),
                ("verify", "R"),
                ("keep", "k"),
            ],
            Workload::Mdtest(_) => &[
                ("items", "I"),
                ("depth", "z"),
                ("branch", "b"),
                ("iterations", "i"),
                ("create", "C"),
                ("stat", "T"),
                ("read", "E"),
                ("remove", "r"),
                ("leaf_only", "L"),
                ("unique_dir", "u"),
                ("files_only", "F"),
                ("per_task", "n"),
                ("stride", "N"),
                ("write_bytes", "w"),
                ("read_bytes", "e"),
                ("verify", "X"),
                ("seed", "G"),
                ("deadline", "W"),
                ("sync", "Y"),
                ("fsync", "y"),
            ],
            Workload::Find(_) => {
                &[("changed_since", "since"), ("size", "size"), ("name", "name"), ("newer", "newer")]
            }
            Workload::Io500(_) => return crate::io500::plan::Options::knob(key),
        };
        known.iter().find(|(name, letter)| key == *name || key == *letter).map(|(name, _)| *name)
    }

    /// Sets one parameter without checking the workload as a whole (the value must still parse).
    pub fn assign(&mut self, key: &str, value: &str) -> Result<(), ParamError> {
        let bad = |why: &str| ParamError::BadValue {
            key: key.to_owned(),
            value: value.to_owned(),
            why: why.to_owned(),
        };
        let flag = || parse_bool(value).ok_or_else(|| bad("expected true or false"));
        let count = || {
            value.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| bad("expected a whole number above 0"))
        };
        let whole = || value.parse::<u64>().map_err(|_| bad("expected a whole number (0: none)"));
        let size = |example: &str| {
            parse_size(value).ok_or_else(|| bad(&format!("expected a size such as {example}")))
        };
        let seconds = || value.parse::<u32>().map_err(|_| bad("expected seconds, a whole number (0: none)"));
        let whole32 = || value.parse::<u32>().map_err(|_| bad("expected a whole number (0: none)"));
        // IOR's -G and mdtest's are C ints, and io500 prints its hashes as such (negative past
        // 2^31): either spelling is the same 32 bits.
        let int32 = || {
            value
                .parse::<u32>()
                .or_else(|_| value.parse::<i32>().map(|n| n as u32))
                .map_err(|_| bad("expected a whole number from -2147483648 to 4294967295 (0: none)"))
        };
        let Some(field) = self.field(key) else {
            return Err(match self {
                Workload::Ior(_) => {
                    ParamError::UnknownKey { tool: "IOR", key: key.to_owned(), known: IOR_KEYS }
                }
                Workload::Mdtest(_) => {
                    ParamError::UnknownKey { tool: "mdtest", key: key.to_owned(), known: MDTEST_KEYS }
                }
                Workload::Find(_) => ParamError::UnknownKey {
                    tool: "find",
                    key: key.to_owned(),
                    known: "changed_since, size, name, newer",
                },
                Workload::Io500(_) => ParamError::UnknownKey {
                    tool: "io500",
                    key: key.to_owned(),
                    known: crate::io500::plan::KNOWN,
                },
            });
        };
        match self {
            Workload::Ior(p) => match field {
                "transfer" => p.transfer = size("4k, 32m, 1g")?,
                "block" => p.block = size("320m, 4g")?,
                "segments" => p.segments = count()?,
                "iterations" => p.iterations = count()?,
                "file_per_proc" => p.file_per_proc = flag()?,
                "random" => p.random = flag()?,
                "fsync" => p.fsync = flag()?,
                "reorder" => p.reorder = flag()?,
                "odirect" => p.odirect = flag()?,
                "write" => p.write = flag()?,
                "deadline" => p.deadline = seconds()?,
                // IOR's own spelling is `stoneWallingWearOut=1`.
                "wear_out" => p.wear_out = if value == "1" || value == "0" { value == "1" } else { flag()? },
                "packet" => {
                    p.packet = DataPacket::parse(value).ok_or_else(|| {
                        bad("expected timestamp, offset, incompressible or random (IOR's -l)")
                    })?
                }
                "signature" => p.signature = int32()?,
                "verify" => p.verify = flag()?,
                "keep" => p.keep = flag()?,
                _ => p.read = flag()?,
            },
            Workload::Mdtest(p) => match field {
                "items" => p.items = whole32()?,
                "depth" => p.depth = value.parse().map_err(|_| bad("expected a whole number"))?,
                "branch" => p.branch = count()?,
                "iterations" => p.iterations = count()?,
                "create" => p.create = flag()?,
                "stat" => p.stat = flag()?,
                "read" => p.read = flag()?,
                "remove" => p.remove = flag()?,
                "leaf_only" => p.leaf_only = flag()?,
                "unique_dir" => p.unique_dir = flag()?,
                "files_only" => p.files_only = flag()?,
                "per_task" => p.per_task = whole()?,
                "stride" => p.stride = whole32()?,
                "write_bytes" => p.write_bytes = size("3901, 4k")?,
                "read_bytes" => p.read_bytes = size("3901, 4k")?,
                "verify" => p.verify = flag()?,
                "seed" => p.seed = int32()?,
                "deadline" => p.deadline = seconds()?,
                "sync" => p.sync = flag()?,
                _ => p.fsync = flag()?,
            },
            Workload::Find(p) => match field {
                "changed_since" => {
                    p.changed_since = value.parse().map_err(|_| bad("expected seconds since 1970"))?
                }
                "size" if value.is_empty() => p.size = None,
                "size" => {
                    p.size = Some(parse_size(value).ok_or_else(|| bad("expected a size such as 3901"))?)
                }
                "newer" => p.newer = value.to_owned(),
                _ => p.name = value.to_owned(),
            },
            Workload::Io500(p) => p.options.set(field, value).map_err(|e| bad(&e.why()))?,
        }
        Ok(())
    }

    /// Every bound of [`limits`] on the workload's own parameters, and the combinations IOR
    /// itself would refuse, said before anything runs. All arithmetic is checked: the values
    /// may come from the wire.
    pub fn check(&self) -> Result<(), Violation> {
        match self {
            Workload::Ior(p) => check_ior(p),
            Workload::Mdtest(p) => check_mdtest(p),
            Workload::Find(p) => {
                p.name_pattern().map_err(|e| Violation::new("name", e.to_string()))?;
                p.newer_path().map_err(|why| Violation::new("newer", why))?;
                Ok(())
            }
            Workload::Io500(p) => p.stage_workloads().try_for_each(|(_, w)| w.check()),
        }
    }

    /// [`Workload::check`], and what depends on the run's size too: the bytes a phase moves
    /// across `total_tasks` (a shared file's size), the items it makes.
    pub fn check_run(&self, total_tasks: u32) -> Result<(), Violation> {
        use limits::*;
        self.check()?;
        if total_tasks == 0 || total_tasks > MAX_TOTAL_TASKS {
            return Err(Violation::new(
                "tasks",
                format!("{total_tasks} tasks in all: a run has 1 to {MAX_TOTAL_TASKS} tasks"),
            ));
        }
        let tasks = u64::from(total_tasks);
        match self {
            Workload::Ior(p) => {
                let per_task = p.block * u64::from(p.segments); // bounded by check()
                if per_task.checked_mul(tasks).is_none_or(|all| all > MAX_PHASE_BYTES) {
                    return Err(Violation::new(
                        "tasks",
                        format!(
                            "{total_tasks} tasks x {} each is more than a phase can move: a shared file would pass \
                             the largest file offset (2^63 - 1 bytes); use fewer tasks or a smaller block",
                            format_size(per_task)
                        ),
                    ));
                }
            }
            Workload::Mdtest(p) => {
                let items = p.items_per_task().unwrap_or(u64::MAX); // bounded by check()
                if items.checked_mul(tasks).is_none_or(|all| all > MAX_TOTAL_ITEMS) {
                    return Err(Violation::new(
                        "items",
                        format!(
                            "{total_tasks} tasks x {items} items each is more than {MAX_TOTAL_ITEMS} items per phase; \
                             use fewer items or tasks"
                        ),
                    ));
                }
                let trees = if p.unique_dir { tasks } else { 1 };
                let dirs = p.tree_dirs().unwrap_or(u64::MAX);
                if dirs.checked_mul(trees).is_none_or(|all| all > MAX_TOTAL_ITEMS) {
                    return Err(Violation::new(
                        "branch",
                        format!(
                            "{total_tasks} trees (unique_dir) of {dirs} directories each is more than \
                             {MAX_TOTAL_ITEMS} directories; use a smaller tree or fewer tasks"
                        ),
                    ));
                }
            }
            Workload::Find(_) => {}
            Workload::Io500(p) => {
                for (_, w) in p.stage_workloads() {
                    w.check_run(total_tasks)?;
                }
            }
        }
        Ok(())
    }
}

/// A stonewall (IOR's `-D`, mdtest's `-W`) of at most a day.
fn check_deadline(deadline: u32) -> Result<(), Violation> {
    if deadline > limits::MAX_DEADLINE {
        return Err(Violation::new(
            "deadline",
            format!(
                "deadline {deadline} s is more than a day ({} s); a stonewall is seconds to minutes (IO500's is 300)",
                limits::MAX_DEADLINE
            ),
        ));
    }
    Ok(())
}

fn check_ior(p: &IorParams) -> Result<(), Violation> {
    use limits::*;
    if p.wear_out && p.deadline == 0 {
        // IOR refuses it too: "the stoneWallingWearOut is only sensible when setting a
        // stonewall deadline with -D".
        return Err(Violation::new("wear_out", "wear_out needs a stonewall: set deadline (IOR's -D) too"));
    }
    check_deadline(p.deadline)?;
    let (t, b) = (format_size(p.transfer), format_size(p.block));
    if p.transfer == 0 || p.block == 0 {
        let field = if p.transfer == 0 { "transfer" } else { "block" };
        return Err(Violation::new(field, "transfer and block must be above 0"));
    }
    if p.transfer > MAX_TRANSFER {
        return Err(Violation::new(
            "transfer",
            format!(
                "transfer {t} is larger than {}, the most one task may hold in memory: a request above 1 GiB is \
                 not a storage benchmark (the seed's largest is 32m); use a smaller transfer",
                format_size(MAX_TRANSFER)
            ),
        ));
    }
    if p.block > MAX_BYTES_PER_TASK {
        return Err(Violation::new(
            "block",
            format!(
                "block {b} is larger than {} per task (ext4's largest file; the seed's block is 4g); use a smaller \
                 block",
                format_size(MAX_BYTES_PER_TASK)
            ),
        ));
    }
    if p.segments == 0 || p.segments > MAX_SEGMENTS {
        return Err(Violation::new(
            "segments",
            format!("segments {} is not between 1 and {MAX_SEGMENTS}", p.segments),
        ));
    }
    if p.iterations == 0 || p.iterations > MAX_ITERATIONS {
        return Err(Violation::new(
            "iterations",
            format!("iterations {} is not between 1 and {MAX_ITERATIONS}", p.iterations),
        ));
    }
    if !p.block.is_multiple_of(p.transfer) {
        return Err(Violation::new(
            "block",
            format!("block ({b}) must be a multiple of transfer ({t}), as IOR requires"),
        ));
    }
    if p.odirect && !p.transfer.is_multiple_of(512) {
        return Err(Violation::new("transfer", "O_DIRECT needs transfers in multiples of 512 bytes"));
    }
    let per_task = p.block.checked_mul(u64::from(p.segments)).filter(|n| *n <= MAX_BYTES_PER_TASK);
    let Some(per_task) = per_task else {
        return Err(Violation::new(
            "segments",
            format!(
                "block {b} x {} segments is more than {} per task (ext4's largest file); use fewer segments or a \
                 smaller block",
                p.segments,
                format_size(MAX_BYTES_PER_TASK)
            ),
        ));
    };
    let transfers = per_task / p.transfer;
    if transfers > MAX_TRANSFERS_PER_TASK {
        return Err(Violation::new(
            "transfer",
            format!(
                "{} per task in transfers of {t} is {transfers} requests per task per phase, more than \
                 {MAX_TRANSFERS_PER_TASK}; use a larger transfer",
                format_size(per_task)
            ),
        ));
    }
    if !p.write && !p.read {
        return Err(Violation::new("write", "neither write nor read: nothing to do"));
    }
    if p.verify && !p.read {
        return Err(Violation::new(
            "verify",
            "verify (-R) checks what the read phase reads: set read (-r) too",
        ));
    }
    Ok(())
}

fn check_mdtest(p: &MdtestParams) -> Result<(), Violation> {
    use limits::*;
    if p.iterations == 0 || p.iterations > MAX_ITERATIONS {
        return Err(Violation::new(
            "iterations",
            format!("iterations {} is not between 1 and {MAX_ITERATIONS}", p.iterations),
        ));
    }
    if p.items == 0 && p.per_task == 0 {
        return Err(Violation::new("items", "items (-I) or per_task (-n) must be at least 1"));
    }
    if p.depth > MAX_DEPTH {
        return Err(Violation::new(
            "depth",
            format!("depth {} is deeper than {MAX_DEPTH} levels (paths would near PATH_MAX)", p.depth),
        ));
    }
    if p.depth > 0 && p.branch == 0 {
        return Err(Violation::new("branch", "a tree deeper than 0 needs branch >= 1"));
    }
    if p.tree_dirs().is_none_or(|dirs| dirs > MAX_TREE_DIRS) {
        return Err(Violation::new(
            "branch",
            format!(
                "a tree of depth {} and branch {} has more than {MAX_TREE_DIRS} directories (branch^depth grows \
                 fast); use a smaller branch or depth",
                p.depth, p.branch
            ),
        ));
    }
    let item_dirs = p.item_dirs().unwrap_or(u64::MAX);
    if p.per_task > MAX_ITEMS_PER_TASK {
        return Err(Violation::new(
            "per_task",
            format!("per_task {} is more than {MAX_ITEMS_PER_TASK} items per task; use fewer", p.per_task),
        ));
    }
    if p.per_task > 0 && p.per_task < item_dirs {
        return Err(Violation::new(
            "per_task",
            format!(
                "per_task {} is fewer than the {item_dirs} directories that hold items, so each would hold none \
                 (mdtest spreads -n over them, rounding down); use more items or a smaller tree",
                p.per_task
            ),
        ));
    }
    if p.items_per_task().is_none_or(|items| items > MAX_ITEMS_PER_TASK) {
        return Err(Violation::new(
            "items",
            format!(
                "{} items in each of {item_dirs} directories is more than {MAX_ITEMS_PER_TASK} items per task; use \
                 fewer items or a smaller tree",
                p.items,
            ),
        ));
    }
    // Each task holds one file's bytes in memory, as it holds one IOR transfer.
    for (field, bytes) in [("write_bytes", p.write_bytes), ("read_bytes", p.read_bytes)] {
        if bytes > MAX_TRANSFER {
            return Err(Violation::new(
                field,
                format!(
                    "{field} {} is larger than {}, the most one task may hold in memory; io500's files are 3901 \
                     bytes",
                    format_size(bytes),
                    format_size(MAX_TRANSFER)
                ),
            ));
        }
    }
    let (create, _, read, _) = p.phases();
    // mdtest's own refusals, in its words where it has them.
    if p.verify && !read {
        return Err(Violation::new(
            "verify",
            "verify (-X) needs the read phase (-E): \"Verify read requires that the read test is used\"",
        ));
    }
    if p.verify && p.read_bytes == 0 {
        return Err(Violation::new(
            "verify",
            "verify (-X) needs read_bytes (-e) above 0: \"Verify read requires that read bytes is > 0\"",
        ));
    }
    if create && read && p.read_bytes > p.write_bytes {
        return Err(Violation::new(
            "read_bytes",
            "read_bytes (-e) is more than write_bytes (-w): \"When writing and reading files, read bytes must be smaller than write bytes\"",
        ));
    }
    check_deadline(p.deadline)?;
    if p.deadline > 0 && p.depth > 0 {
        // mdtest refuses it above branch 1 ("stone wall timer does only work with a branch factor
        // <= 1"); along a chain of directories its continuation after the wall is its own.
        return Err(Violation::new(
            "deadline",
            format!(
                "the stonewall (-W) stops the creation of files in one directory per task: it needs depth 0 (this \
                 tree's is {}), as io500's mdtest phases have",
                p.depth
            ),
        ));
    }
    Ok(())
}

fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// `4k`, `32m`, `4G`, `320m`, `1048576`: IOR's size syntax (binary multiples).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, mult) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&s[..i], 1 << 20),
        (i, 'g' | 'G') => (&s[..i], 1 << 30),
        (i, 't' | 'T') => (&s[..i], 1 << 40),
        _ => (s, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(mult)
}

/// A size as IOR takes it, in the largest exact unit: `32m`, `4g`, `4k`.
pub fn format_size(bytes: u64) -> String {
    for (unit, shift) in [("t", 40), ("g", 30), ("m", 20), ("k", 10)] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// A size for people, rounded to one decimal in binary units: `4.0 TiB`, `23.5 GiB`.
pub fn format_bytes(bytes: u64) -> String {
    let units = [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)];
    match units.iter().find(|(_, shift)| bytes >= 1 << shift) {
        Some((unit, shift)) => format!("{:.1} {unit}", bytes as f64 / (1u64 << shift) as f64),
        None => format!("{bytes} bytes"),
    }
}

/// An IOR version, from its banner (`IOR-4.1.0+dev: MPI Coordinated Test of Parallel I/O`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct IorVersion(pub u32, pub u32, pub u32);

impl IorVersion {
    /// From the first `IOR-x.y.z` in `text` (`ior -h`, `ior --version` or a run's output).
    pub fn from_banner(text: &str) -> Option<IorVersion> {
        let at = text.find("IOR-")? + 4;
        let version: String = text[at..].chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
        Some(IorVersion(
            parts.next()??,
            parts.next().flatten().unwrap_or(0),
            parts.next().flatten().unwrap_or(0),
        ))
    }

    /// From `ior -h`, which states no version in 3.3 and later: a banner if there is one,
    /// else 3.3 when the options list `--posix.odirect` (added in 3.3, when `-B` went), else
    /// 3.2. Only the `-B` question depends on it.
    pub fn from_help(text: &str) -> IorVersion {
        IorVersion::from_banner(text).unwrap_or(if text.contains("--posix.odirect") {
            IorVersion(3, 3, 0)
        } else {
            IorVersion(3, 2, 0)
        })
    }

    /// IOR 3.3 removed `-B`; O_DIRECT is `--posix.odirect` since.
    pub fn has_dash_b(self) -> bool {
        self < IorVersion(3, 3, 0)
    }
}

/// IOR's arguments for `p`, writing to `test_file`, in the seed's order.
pub fn ior_args(p: &IorParams, version: IorVersion, test_file: &str) -> Vec<String> {
    let mut args = Vec::new();
    if p.write {
        args.push("-w".to_owned());
    }
    if p.read {
        args.push("-r".to_owned());
    }
    if p.odirect {
        args.push(if version.has_dash_b() { "-B" } else { "--posix.odirect" }.to_owned());
    }
    if p.reorder {
        args.push("-C".to_owned());
    }
    args.push(format!("-i{}", p.iterations));
    args.push(format!("-t{}", format_size(p.transfer)));
    args.push(format!("-b{}", format_size(p.block)));
    if p.segments > 1 {
        args.push(format!("-s{}", p.segments));
    }
    if p.file_per_proc {
        args.push("-F".to_owned());
    }
    if p.random {
        args.push("-z".to_owned());
    }
    if p.fsync {
        args.push("-e".to_owned());
    }
    // IOR's default needs no option (and IOR 2.10's `-l` meant something else).
    if p.packet != DataPacket::Timestamp {
        args.push(format!("-l{}", p.packet));
    }
    if p.deadline > 0 {
        args.extend(["-D".to_owned(), p.deadline.to_string()]);
    }
    if p.wear_out {
        args.extend(["-O".to_owned(), "stoneWallingWearOut=1".to_owned()]);
    }
    if p.signature > 0 {
        args.extend(["-G".to_owned(), (p.signature as i32).to_string()]);
    }
    for (on, flag) in [(p.verify, "-R"), (p.keep, "-k")] {
        if on {
            args.push(flag.to_owned());
        }
    }
    args.extend(["-o".to_owned(), test_file.to_owned()]);
    args
}

/// mdtest's arguments for `p` in `dir`.
pub fn mdtest_args(p: &MdtestParams, dir: &str) -> Vec<String> {
    let mut args = Vec::new();
    for (on, flag) in [(p.create, "-C"), (p.stat, "-T"), (p.read, "-E"), (p.remove, "-r")] {
        if on {
            args.push(flag.to_owned());
        }
    }
    // mdtest refuses -n beside -I with -u ("only specify the number of items or the number of
    // items per directory").
    match p.per_task {
        0 => args.extend([format!("-i{}", p.iterations), "-I".into(), p.items.to_string()]),
        n => args.extend([format!("-i{}", p.iterations), "-n".into(), n.to_string()]),
    }
    args.extend(["-z".into(), p.depth.to_string(), "-b".into(), p.branch.to_string()]);
    for (on, flag) in [(p.leaf_only, "-L"), (p.unique_dir, "-u"), (p.files_only, "-F")] {
        if on {
            args.push(flag.to_owned());
        }
    }
    for (value, flag) in [
        (u64::from(p.stride), "-N"),
        (p.write_bytes, "-w"),
        (p.read_bytes, "-e"),
        (u64::from(p.deadline), "-W"),
    ] {
        if value > 0 {
            args.extend([flag.to_owned(), value.to_string()]);
        }
    }
    // mdtest draws a seed from the clock when none is given: a verified read needs the same one
    // in its writer, which a single mdtest run has anyway.
    if p.seed > 0 {
        args.extend(["-G".to_owned(), (p.seed as i32).to_string()]);
    }
    for (on, flag) in [(p.verify, "-X"), (p.sync, "-Y"), (p.fsync, "-y")] {
        if on {
            args.push(flag.to_owned());
        }
    }
    args.extend(["-d".to_owned(), dir.to_owned()]);
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stonewall_is_iors_d_and_wear_out_its_o_option() {
        let mut w = Preset::Throughput.workload();
        w.set("D", "300").unwrap();
        w.set("stoneWallingWearOut", "1").unwrap();
        let Workload::Ior(p) = &w else { panic!() };
        assert_eq!((p.deadline, p.wear_out), (300, true));
        let args = ior_args(p, IorVersion(4, 1, 0), "f").join(" ");
        assert!(args.ends_with("-F -D 300 -O stoneWallingWearOut=1 -o f"), "{args}");
        // As settings, for the engine's command line, and back.
        let mut again = Preset::Throughput.workload();
        let settings = w.settings();
        again.set_all(settings.iter().map(|(k, v)| (*k, v.as_str()))).unwrap();
        assert_eq!(again, w);
        // IOR's own refusal: wear-out without a stonewall.
        let mut bare = Preset::Throughput.workload();
        let err = bare.set("wear_out", "true").unwrap_err().to_string();
        assert!(err.contains("wear_out needs a stonewall: set deadline (IOR's -D) too"), "{err}");
        let err = bare.set("deadline", "90000").unwrap_err().to_string();
        assert!(err.contains("more than a day"), "{err}");
        let err = bare.set("deadline", "-1").unwrap_err().to_string();
        assert!(err.contains("expected seconds"), "{err}");
    }

    #[test]
    fn presets_are_the_seed_commands() {
        let new = IorVersion(4, 1, 0);
        let old = IorVersion(3, 0, 1);
        let Workload::Ior(tput) = Preset::Throughput.workload() else { panic!() };
        assert_eq!(
            ior_args(&tput, old, "/mnt/lustre/ior").join(" "),
            "-w -r -B -C -i4 -t32m -b4g -F -o /mnt/lustre/ior"
        );
        assert_eq!(
            ior_args(&tput, new, "/mnt/lustre/ior").join(" "),
            "-w -r --posix.odirect -C -i4 -t32m -b4g -F -o /mnt/lustre/ior"
        );
        let Workload::Ior(iops) = Preset::Iops.workload() else { panic!() };
        assert_eq!(ior_args(&iops, old, "f").join(" "), "-w -r -B -C -i4 -t4k -b320m -F -z -o f");
        let Workload::Mdtest(md) = Preset::Metadata.workload() else { panic!() };
        assert_eq!(mdtest_args(&md, "/d").join(" "), "-C -T -i4 -I 2000 -z 2 -b 4 -L -u -F -d /d");
        let Workload::Mdtest(lustre) = Preset::MetadataLustre.workload() else { panic!() };
        assert_eq!(mdtest_args(&lustre, "/d").join(" "), "-i2 -I 10 -z 5 -b 5 -d /d");
        assert_eq!(lustre.phases(), (true, true, true, true));
        assert_eq!(lustre.tree_dirs(), Some(1 + 5 + 25 + 125 + 625 + 3125));
        assert_eq!(md.item_dirs(), Some(16));
    }

    #[test]
    fn versions_come_from_the_banner() {
        assert_eq!(IorVersion::from_banner("IOR-4.1.0+dev: MPI Coordinated Test"), Some(IorVersion(4, 1, 0)));
        assert_eq!(IorVersion::from_banner("IOR-3.2.1: MPI Coordinated"), Some(IorVersion(3, 2, 1)));
        assert!(IorVersion(3, 2, 1).has_dash_b() && !IorVersion(3, 3, 0).has_dash_b());
        assert_eq!(IorVersion::from_banner("mdtest-4.1.0"), None);
        // `ior -h` of 4.1 states no version, but lists --posix.odirect (3.3 and later).
        let help = include_str!("../testdata/ior/ior_help.txt");
        assert!(!IorVersion::from_help(help).has_dash_b());
        assert!(IorVersion::from_help("  -B  useO_DIRECT -- uses O_DIRECT for POSIX").has_dash_b());
    }

    #[test]
    fn overrides_are_checked() {
        let mut w = Preset::Throughput.workload();
        w.set("t", "1m").unwrap();
        w.set("block", "64m").unwrap();
        w.set("iterations", "2").unwrap();
        let Workload::Ior(p) = &w else { panic!() };
        assert_eq!((p.transfer, p.block, p.iterations), (1 << 20, 64 << 20, 2));
        assert_eq!(
            w.set("t", "3m").unwrap_err().to_string(),
            "t = \"3m\": block (64m) must be a multiple of transfer (3m), as IOR requires"
        );
        assert!(w.set("items", "10").unwrap_err().to_string().starts_with("unknown IOR parameter \"items\""));
        assert!(w.set("i", "0").is_err());
        let mut md = Preset::Metadata.workload();
        md.set("I", "10").unwrap();
        md.set("z", "0").unwrap();
        assert_eq!(parse_size("4G"), Some(4 << 30));
        assert_eq!(format_size(320 << 20), "320m");
        assert_eq!(format_size(4097), "4097");
        assert_eq!(format_bytes(24683656 << 10), "23.5 GiB");
        assert_eq!(format_bytes(4206672 << 20), "4.0 TiB");
        assert_eq!(format_bytes(100), "100 bytes");
        assert_eq!(
            Preset::parse("iopz").unwrap_err().to_string(),
            "unknown preset \"iopz\": use throughput, iops, metadata, metadata-lustre, io500 or io500-scc"
        );
    }

    /// serde names a preset as the CLI and the cluster file do.
    #[test]
    fn presets_serialize_by_their_names() {
        for p in Preset::ALL {
            assert_eq!(serde_json::to_string(&p).unwrap(), format!("\"{}\"", p.as_str()));
            assert_eq!(serde_json::from_str::<Preset>(&format!("\"{p}\"")).unwrap(), p);
        }
    }

    /// Every size and count is bounded, each refusal naming the parameter, its value and the
    /// limit; products are checked, never wrapped.
    #[test]
    fn sizes_and_counts_are_bounded() {
        let mut w = Preset::Throughput.workload();
        let err = w.set("t", "1t").unwrap_err().to_string();
        assert!(err.starts_with("t = \"1t\": transfer 1t is larger than 1g, the most one task"), "{err}");
        let err = w.set("b", "32t").unwrap_err().to_string();
        assert!(err.contains("block 32t is larger than 16t per task"), "{err}");
        w.set("b", "1t").unwrap();
        let err = w.set("s", "17").unwrap_err().to_string();
        assert!(err.contains("block 1t x 17 segments is more than 16t per task"), "{err}");
        assert!(w.set("s", "100000001").unwrap_err().to_string().contains("not between 1 and 100000000"));
        assert!(
            w.set("i", "1001").unwrap_err().to_string().contains("iterations 1001 is not between 1 and 1000")
        );
        let mut tiny = Preset::Throughput.workload();
        tiny.set_all([("B", "false"), ("t", "1"), ("b", "8g")]).unwrap_err();
        let err = tiny.set_all([("B", "false"), ("t", "1"), ("b", "4g"), ("s", "2")]).unwrap_err();
        let ParamError::Invalid(v) = &err else { panic!("{err:?}") };
        assert_eq!(v.field, "transfer");
        assert!(v.why.contains("8589934592 requests per task per phase"), "{v}");

        // From the wire, anything can arrive: the product overflows u64 and is refused, not wrapped.
        let Workload::Ior(mut p) = Preset::Throughput.workload() else { panic!() };
        (p.block, p.segments) = (1 << 40, 100_000_000);
        let v = Workload::Ior(p.clone()).check().unwrap_err();
        assert_eq!(v.field, "segments", "{v}");
        p.segments = 0;
        assert_eq!(Workload::Ior(p).check().unwrap_err().field, "segments");

        let mut md = Preset::Metadata.workload();
        let err = md.set("z", "33").unwrap_err().to_string();
        assert!(err.contains("depth 33 is deeper than 32 levels"), "{err}");
        let err = md.set("b", "4000000").unwrap_err().to_string();
        assert!(err.contains("more than 10000000 directories"), "{err}");
        let Workload::Mdtest(mut m) = Preset::Metadata.workload() else { panic!() };
        (m.branch, m.depth) = (u32::MAX, 32);
        assert_eq!(m.tree_dirs(), None, "u32::MAX^32 does not fit");
        assert_eq!(Workload::Mdtest(m.clone()).check().unwrap_err().field, "branch");
        (m.branch, m.depth, m.items) = (10, 6, 200);
        let v = Workload::Mdtest(m).check().unwrap_err();
        assert_eq!(v.field, "items");
        assert!(v.why.contains("200 items in each of 1000000 directories"), "{v}");
    }

    #[test]
    fn the_runs_size_is_bounded_too() {
        assert_eq!(total_tasks(4, 3), Ok(12));
        assert!(total_tasks(0, 3).unwrap_err().why.contains("at least 1"));
        assert!(total_tasks(4097, 1).unwrap_err().why.contains("more than 4096 tasks per client"));
        let v = total_tasks(4096, 257).unwrap_err();
        assert_eq!(v.field, "tasks");
        assert!(v.why.contains("4096 procs on each of 257 clients"), "{v}");
        assert!(total_tasks(4096, usize::MAX).is_err(), "more clients than a u32 holds");
        let v = total_tasks(1, 100_000).unwrap_err();
        assert_eq!(v.field, "clients");
        assert!(v.why.starts_with("100000 clients is more than 10000 in one run"), "{}", v.why);
        assert_eq!(total_tasks(1, limits::MAX_CLIENTS), Ok(10_000));

        let mut w = Preset::Throughput.workload();
        w.set_all([("b", "16t"), ("t", "1g")]).unwrap();
        w.check_run((1 << 19) - 1).unwrap();
        let v = w.check_run(1 << 19).unwrap_err();
        assert!(v.why.contains("largest file offset"), "{v}");
        assert_eq!(w.check_run(0).unwrap_err().field, "tasks");
        let mut md = Preset::Metadata.workload();
        md.set("I", "1000000").unwrap();
        let v = md.check_run(1000).unwrap_err();
        assert_eq!(v.field, "items");
        assert!(v.why.contains("1000 tasks x 16000000 items each"), "{v}");
    }

    /// io500's mdtest options: `-n` spread over the tree as mdtest spreads it, the rest in
    /// mdtest's words on its command line, and mdtest's own refusals.
    #[test]
    fn mdtest_takes_io500s_options() {
        let mut md = Preset::Metadata.workload();
        // -z 2 -b 4 -L: 16 leaves; 1000 files per task is 62 in each (mdtest rounds down).
        md.set("n", "1000").unwrap();
        let Workload::Mdtest(p) = &md else { panic!() };
        assert_eq!((p.items_per_dir(), p.items_per_task()), (Some(62), Some(992)));
        md.set_all([("L", "false"), ("z", "1"), ("b", "2")]).unwrap();
        let Workload::Mdtest(p) = &md else { panic!() };
        assert_eq!((p.items_per_dir(), p.child_index(0, 1), p.child_index(2, 0)), (Some(333), 2, 5));
        let err = md.set("n", "2").unwrap_err().to_string();
        assert!(err.contains("per_task 2 is fewer than the 3 directories"), "{err}");

        // io500's mdtest-hard write and read.
        let mut hard = Preset::Metadata.workload();
        let settings = [
            ("T", "false"),
            ("L", "false"),
            ("u", "false"),
            ("z", "0"),
            ("i", "1"),
            ("n", "1000000"),
            ("w", "3901"),
            ("e", "3901"),
            ("N", "1"),
            ("G", "-283548562"),
            ("W", "300"),
            ("E", "true"),
            ("X", "true"),
            ("Y", "true"),
        ];
        hard.set_all(settings).unwrap();
        let Workload::Mdtest(p) = &hard else { panic!() };
        assert_eq!(
            mdtest_args(p, "/mnt/io500/mdtest-hard").join(" "),
            "-C -E -i1 -n 1000000 -z 0 -b 4 -F -N 1 -w 3901 -e 3901 -W 300 -G -283548562 -X -Y -d /mnt/io500/mdtest-hard"
        );
        // Back through the engine's command line, unchanged.
        let mut again = Preset::Metadata.workload();
        let all = hard.settings();
        again.set_all(all.iter().map(|(k, v)| (*k, v.as_str()))).unwrap();
        assert_eq!(again, hard);

        for (key, value, says) in [
            ("e", "4000", "read bytes must be smaller than write bytes"),
            ("w", "2g", "write_bytes 2g is larger than 1g"),
            ("W", "90000", "more than a day"),
        ] {
            let err = hard.set(key, value).unwrap_err().to_string();
            assert!(err.contains(says), "{key}={value}: {err}");
        }
        let mut no_read = hard.clone();
        let err = no_read.set("E", "false").unwrap_err().to_string();
        assert!(err.contains("Verify read requires that the read test is used"), "{err}");
        let err = no_read.set_all([("X", "true"), ("e", "0")]).unwrap_err().to_string();
        assert!(err.contains("Verify read requires that read bytes is > 0"), "{err}");
        let mut tree = hard.clone();
        let err = tree.set_all([("z", "1"), ("b", "1")]).unwrap_err().to_string();
        assert!(
            err.contains("the stonewall (-W) stops the creation of files in one directory per task"),
            "{err}"
        );
        // A record from before these options reads as it always did.
        let old = r#"{"create":true,"stat":true,"read":false,"remove":false,"iterations":4,"items":2000,"depth":2,"branch":4,"leaf_only":true,"unique_dir":true,"files_only":true}"#;
        let p: MdtestParams = serde_json::from_str(old).unwrap();
        assert_eq!(Workload::Mdtest(p.clone()), Preset::Metadata.workload());
        assert_eq!(serde_json::to_string(&p).unwrap(), old);
    }

    /// io500's ior-hard: a shared file of 47008-byte transfers, verified on read (`-R`) against
    /// the `-G` signature, kept (`-k`) for the read that comes later.
    #[test]
    fn ior_takes_io500s_verify_signature_and_keep() {
        let mut w = Preset::Throughput.workload();
        let hard =
            [("B", "false"), ("t", "47008"), ("b", "47008"), ("s", "10000000"), ("F", "false"), ("i", "1")];
        w.set_all(hard).unwrap();
        w.set_all([("C", "true"), ("e", "true"), ("G", "2309145551"), ("k", "true"), ("R", "true")]).unwrap();
        w.set_all([("D", "300"), ("stoneWallingWearOut", "1")]).unwrap();
        let Workload::Ior(p) = &w else { panic!() };
        assert_eq!(
            ior_args(p, IorVersion(4, 1, 0), "/mnt/io500/ior-hard/file").join(" "),
            "-w -r -C -i1 -t47008 -b47008 -s10000000 -e -D 300 -O stoneWallingWearOut=1 -G -1985821745 -R -k -o \
             /mnt/io500/ior-hard/file"
        );
        let mut fixed = w.clone();
        fixed.fix_signature(1_800_000_000);
        assert_eq!(fixed, w, "a given signature is kept");
        let mut unsigned = w.clone();
        unsigned.set("G", "0").unwrap();
        unsigned.fix_signature(1_800_000_000);
        let Workload::Ior(p) = &unsigned else { panic!() };
        assert_eq!(p.signature, 1_800_000_000, "a run that verifies is given one when planned");
        let err = w.set("r", "false").unwrap_err().to_string();
        assert!(err.contains("verify (-R) checks what the read phase reads"), "{err}");
    }
}
