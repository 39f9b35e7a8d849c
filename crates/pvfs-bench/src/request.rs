//! What the coordinator asks of a client, as plain data: one client's share of one phase
//! ([`PhaseRequest`], the agents launcher) and a whole run as one MPI job ([`LaunchRequest`],
//! the mpi launcher). They live here, beside the workload and the phases they carry, so that
//! the wire conversion (`pvfs-proto`) and the coordinator name them without compiling the
//! engine that runs them; `pvfs-engine` and the agent take them as they are.

use crate::launch::Engine;
use crate::params::Workload;
use crate::phase::{IorPhase, MdtestPhase, Phase};
use std::path::PathBuf;

/// One client's share of one phase, as the coordinator asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseRequest {
    /// What does the I/O: the built-in engine or fio ([`Engine::Ior`] runs only under mpirun,
    /// and the wire conversion refuses it here).
    pub engine: Engine,
    pub workload: Workload,
    /// The run's directory on this client.
    pub dir: PathBuf,
    pub first_task: u32,
    pub tasks: u32,
    pub total_tasks: u32,
    pub tasks_per_client: u32,
    pub iteration: u32,
    pub phase: Phase,
    /// Transfers each task makes at most: IOR's `stoneWallingWearOutIterations`, which a read
    /// phase after a stonewalled write gets from the write ([`stop_after`]), so that it reads
    /// what was written. `None`: every transfer of the block.
    pub stop_after: Option<u64>,
    /// The name the built-in engine gives its task threads ([`job_tag`]), so that a Lustre
    /// client whose `jobid_var` is `procname_uid` tags their I/O with a job id pvfs knows, and
    /// the servers' `job_stats` tell what this phase did on each target. `None`: `task N`.
    pub job_tag: Option<String>,
}

/// The longest job tag: a thread's name (its `comm`) holds 15 characters.
pub const MAX_JOB_TAG: usize = 15;

/// The tag a phase's tasks run under: `pv`, the run's `nonce` (its low 20 bits, 5 hex digits),
/// the phase's code and the iteration (its last 6 digits) — one per phase of a run, so the
/// servers' `job_stats` hold this phase's I/O under it and nothing else's (Lustre keeps a
/// job's counters until it has been idle `job_cleanup_interval`, 600 s by default), within a
/// thread name's 15 characters.
pub fn job_tag(nonce: u32, iteration: u32, phase: Phase) -> String {
    let code = match phase {
        Phase::Ior(IorPhase::Write) => "w",
        Phase::Ior(IorPhase::Read) => "r",
        Phase::IorCleanup => "x",
        Phase::Mdtest(m) => match m {
            MdtestPhase::TreeCreate => "tc",
            MdtestPhase::DirCreate => "dc",
            MdtestPhase::DirStat => "ds",
            MdtestPhase::DirRemove => "dr",
            MdtestPhase::FileCreate => "fc",
            MdtestPhase::FileStat => "fs",
            MdtestPhase::FileRead => "fr",
            MdtestPhase::FileRemove => "fx",
            MdtestPhase::TreeRemove => "tr",
        },
        Phase::Find => "f",
    };
    format!("pv{:05x}{code}{}", nonce & 0xf_ffff, iteration % 1_000_000)
}

/// Whether the agent takes `tag` as its task threads' name: 1 to [`MAX_JOB_TAG`] letters,
/// digits, `.`, `_` or `-`, not starting with `-` (it ends up in job ids, `ps` and logs, so
/// nothing a shell or a terminal would read as more than a name).
pub fn valid_job_tag(tag: &str) -> bool {
    (1..=MAX_JOB_TAG).contains(&tag.len())
        && !tag.starts_with('-')
        && tag.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Which nodes drop their caches before a run's read and stat phases (`[bench] drop_caches`,
/// `--drop-caches`): elbencho drops on the clients only; io500 runs its command on every
/// rank's node; a server's cache serves reads as much as a client's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DropCaches {
    #[default]
    None,
    Clients,
    /// Clients and servers: every node of the cluster.
    All,
}

impl DropCaches {
    pub const ALL: [DropCaches; 3] = [DropCaches::None, DropCaches::Clients, DropCaches::All];

    pub fn as_str(self) -> &'static str {
        match self {
            DropCaches::None => "none",
            DropCaches::Clients => "clients",
            DropCaches::All => "all",
        }
    }

    pub fn parse(text: &str) -> Option<DropCaches> {
        DropCaches::ALL.into_iter().find(|d| d.as_str() == text)
    }

    /// Whether caches are dropped before `phase`: the phases that read what an earlier phase
    /// wrote (IOR's read, mdtest's stats and reads).
    pub fn before(self, phase: Phase) -> bool {
        use crate::phase::{IorPhase, MdtestPhase};
        self != DropCaches::None
            && matches!(
                phase,
                Phase::Ior(IorPhase::Read)
                    | Phase::Mdtest(MdtestPhase::DirStat | MdtestPhase::FileStat | MdtestPhase::FileRead)
                    | Phase::Find
            )
    }
}

/// What a read phase after a stonewalled write stops at, from the write's tasks' transfers:
/// with wear-out every task made the same count, which IOR carries to the read; without, IOR
/// carries each rank's own count, which a read of another task's file (`-C`) cannot use, so
/// the fewest any task made (nothing unwritten is read). `None` when the write had no
/// stonewall, or no task.
pub fn stop_after(
    params: &crate::params::IorParams,
    write_ops: impl IntoIterator<Item = u64>,
) -> Option<u64> {
    if params.deadline == 0 {
        return None;
    }
    let ops = write_ops.into_iter();
    if params.wear_out { ops.max() } else { ops.min() }
}

/// The count a phase leaves for the phases after it to stop at, when it is the one that sets
/// it: `Some(count)` after IOR's write ([`stop_after`]) and mdtest's file creation (with `-W`
/// every task made the count agreed at the stonewall, which mdtest's later file phases stat,
/// read and remove); `None` after any other phase, which leaves the count as it was.
pub fn carried(workload: &Workload, phase: Phase, ops: impl IntoIterator<Item = u64>) -> Option<Option<u64>> {
    match (workload, phase) {
        (Workload::Ior(p), Phase::Ior(IorPhase::Write)) => Some(stop_after(p, ops)),
        (Workload::Mdtest(p), Phase::Mdtest(MdtestPhase::FileCreate)) => {
            Some(if p.deadline > 0 { ops.into_iter().max() } else { None })
        }
        _ => None,
    }
}

/// What each task of `phase` is to do when its work has a fixed size: its transfers (IOR) or
/// items (mdtest's directory and file phases), and for IOR their bytes. `None` for a
/// stonewalled phase (it runs until its deadline), a tree phase, or another workload.
pub fn planned_per_task(workload: &Workload, phase: Phase) -> Option<(u64, Option<u64>)> {
    match (workload, phase) {
        (Workload::Ior(p), Phase::Ior(_)) if p.deadline == 0 => {
            let ops = (p.block / p.transfer.max(1)).checked_mul(u64::from(p.segments))?;
            Some((ops, ops.checked_mul(p.transfer)))
        }
        (Workload::Mdtest(p), Phase::Mdtest(m))
            if p.deadline == 0 && !matches!(m, MdtestPhase::TreeCreate | MdtestPhase::TreeRemove) =>
        {
            Some((p.items_per_task()?, None))
        }
        _ => None,
    }
}

/// Whether `phase` of `workload` agrees a count across every task of the run at its
/// stonewall (IOR's wear-out; mdtest's `-W`, which always does), and if so the most a task can
/// make: what an agent accepts as the run's answer.
pub fn wear_out_most(workload: &Workload, phase: Phase) -> Option<u64> {
    match (workload, phase) {
        (Workload::Ior(p), Phase::Ior(_)) if p.wear_out => {
            Some((p.block / p.transfer.max(1)).saturating_mul(u64::from(p.segments)))
        }
        (Workload::Mdtest(p), Phase::Mdtest(MdtestPhase::FileCreate)) if p.deadline > 0 => p.items_per_task(),
        _ => None,
    }
}

/// A request whose tasks are not a share of the run's (empty, or past its end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("first_task {first_task} and tasks {tasks}: not a share of {total_tasks} tasks")]
pub struct NotAShare {
    pub first_task: u32,
    pub tasks: u32,
    pub total_tasks: u32,
}

impl PhaseRequest {
    /// What this client's share of the phase needs in memory: a transfer buffer per IOR task
    /// (plus its alignment), every task thread's stack and bookkeeping, and the process. The
    /// agent refuses a phase its node cannot hold and sets the engine's memory limit from it.
    /// (Bounded: at most 4096 tasks of 1 GiB each.)
    pub fn memory_needed(&self) -> u64 {
        /// The binary, its runtime and allocator arenas.
        const PROCESS: u64 = 64 << 20;
        /// A task thread's stack (std's default, 2 MiB) and what it allocates besides.
        const PER_TASK: u64 = 3 << 20;
        let buffer = match (&self.workload, self.phase) {
            (Workload::Ior(p), Phase::Ior(_)) => p.transfer.saturating_add(4096),
            _ => 0,
        };
        PROCESS.saturating_add(u64::from(self.tasks).saturating_mul(PER_TASK.saturating_add(buffer)))
    }

    /// Whether the phase starts the run here and makes its directory first (IOR's write,
    /// mdtest's tree creation); the others find it made.
    pub fn creates_dir(&self) -> bool {
        matches!(self.phase, Phase::Ior(IorPhase::Write) | Phase::Mdtest(MdtestPhase::TreeCreate))
    }

    /// This client's tasks, checked against the run's size (no sum can wrap).
    pub fn task_range(&self) -> Result<std::ops::Range<u32>, NotAShare> {
        self.first_task
            .checked_add(self.tasks)
            .filter(|end| self.tasks > 0 && *end <= self.total_tasks)
            .map(|end| self.first_task..end)
            .ok_or(NotAShare {
                first_task: self.first_task,
                tasks: self.tasks,
                total_tasks: self.total_tasks,
            })
    }
}

/// A whole run as one MPI job, as the coordinator asks the launching client for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchRequest {
    /// What mpirun runs: [`Engine::Builtin`] is `pvfs-agent engine --mpi`, one rank per task;
    /// [`Engine::Ior`] is IOR for IOR workloads and mdtest for mdtest workloads;
    /// [`Engine::Io500`] is the real io500 for an IO500. fio is no MPI program (the wire
    /// conversion refuses it here).
    pub engine: Engine,
    pub workload: Workload,
    /// The run's directory, the same path on every client.
    pub dir: PathBuf,
    /// Every client as `(name, host)`, in order.
    pub clients: Vec<(String, String)>,
    pub tasks_per_client: u32,
    /// `[bench] mpi_ssh`: mpirun reaches the other clients with the cluster's MPI key and
    /// checks their host keys against the known_hosts `pvfsctl up` installed.
    pub mpi_ssh: bool,
    /// [`Engine::Io500`]: the io500 program on the clients (`[bench] io500`).
    pub io500_program: Option<PathBuf>,
    /// [`Engine::Io500`]: io500 drops caches on every rank before each phase (its
    /// `drop-caches`).
    pub drop_caches: bool,
}

impl LaunchRequest {
    pub fn hostfile(&self) -> Hostfile {
        Hostfile::new(&self.clients, self.tasks_per_client)
    }

    /// MPI processes in all (saturating; the wire conversion bounds it well below).
    pub fn ranks(&self) -> u32 {
        self.tasks_per_client.saturating_mul(u32::try_from(self.clients.len()).unwrap_or(u32::MAX))
    }
}

/// The hostfile mpirun reads, from the clients' hosts in order. Open MPI refuses a host listed
/// twice with `slots=` (two local-kind clients on one machine), so repeats are merged and
/// their slots added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hostfile {
    /// `host slots=N` lines.
    pub text: String,
    /// Which client each rank runs on: mpirun's default mapping fills a host's slots before
    /// the next host's, in hostfile order.
    pub owners: Vec<String>,
}

impl Hostfile {
    /// `clients` as `(name, host)`, each running `slots` ranks.
    pub fn new(clients: &[(String, String)], slots: u32) -> Hostfile {
        let mut hosts: Vec<(&str, Vec<&str>)> = Vec::new();
        for (name, host) in clients {
            match hosts.iter_mut().find(|(h, _)| h == host) {
                Some((_, names)) => names.push(name),
                None => hosts.push((host, vec![name])),
            }
        }
        let mut text = String::new();
        let mut owners = Vec::new();
        for (host, names) in &hosts {
            // In u64: no wrap, whatever the counts (the agent bounds them before this).
            text += &format!("{host} slots={}\n", u64::from(slots) * names.len() as u64);
            for name in names {
                owners.extend(std::iter::repeat_n((*name).to_owned(), slots as usize));
            }
        }
        Hostfile { text, owners }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostfile_merges_repeated_hosts_and_maps_ranks_by_slot() {
        let clients: Vec<(String, String)> = [("a", "10.0.0.1"), ("b", "10.0.0.2"), ("c", "10.0.0.1")]
            .iter()
            .map(|(n, h)| ((*n).to_owned(), (*h).to_owned()))
            .collect();
        let h = Hostfile::new(&clients, 2);
        assert_eq!(h.text, "10.0.0.1 slots=4\n10.0.0.2 slots=2\n");
        assert_eq!(h.owners, ["a", "a", "c", "c", "b", "b"]);
    }

    /// A task's work: IOR's transfers and bytes (block ÷ transfer × segments), mdtest's items in
    /// its directory and file phases (not its tree's), nothing for a stonewalled phase.
    #[test]
    fn a_tasks_planned_work() {
        use crate::params::{IorParams, MdtestParams};
        let ior = IorParams { transfer: 4096, block: 32 << 20, segments: 2, ..IorParams::default() };
        let write = Phase::Ior(IorPhase::Write);
        assert_eq!(planned_per_task(&Workload::Ior(ior.clone()), write), Some((16384, Some(64 << 20))));
        let stonewalled = IorParams { deadline: 6, ..ior };
        assert_eq!(planned_per_task(&Workload::Ior(stonewalled), write), None);
        let md = MdtestParams { items: 1000, depth: 0, branch: 1, ..MdtestParams::default() };
        let items = md.items_per_task();
        assert!(items.is_some_and(|n| n > 0));
        let mdtest = Workload::Mdtest(md);
        assert_eq!(
            planned_per_task(&mdtest, Phase::Mdtest(MdtestPhase::FileCreate)),
            items.map(|n| (n, None))
        );
        assert_eq!(planned_per_task(&mdtest, Phase::Mdtest(MdtestPhase::TreeCreate)), None);
        assert_eq!(planned_per_task(&mdtest, write), None);
    }

    /// Every phase's tag is a valid thread name and differs from every other phase's of the
    /// run, at the largest nonce and iteration too.
    #[test]
    fn job_tags_are_thread_names_one_per_phase() {
        for (nonce, iteration) in [(0, 0), (0xabcde, 7), (u32::MAX, u32::MAX)] {
            let tags: Vec<String> = Phase::ALL.iter().map(|&p| job_tag(nonce, iteration, p)).collect();
            for tag in &tags {
                assert!(valid_job_tag(tag), "{tag}");
            }
            let distinct: std::collections::BTreeSet<&String> = tags.iter().collect();
            assert_eq!(distinct.len(), tags.len(), "{tags:?}");
        }
        assert_eq!(job_tag(0xabcde, 7, Phase::Ior(IorPhase::Write)), "pvabcdew7");
        assert_ne!(job_tag(1, 0, Phase::Find), job_tag(2, 0, Phase::Find));
        for bad in ["", "-pv", "pv 1", "pv;reboot", "pv/1", "0123456789abcdef", "pv\n"] {
            assert!(!valid_job_tag(bad), "{bad:?}");
        }
    }
}
