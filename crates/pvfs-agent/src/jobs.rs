//! Lustre's job ids for a benchmark: on a client, the id its Lustre client gives a phase's
//! task threads (named for the phase: `pvfs_bench::request::job_tag`); on a server, what each
//! target's `job_stats` holds for the ids the coordinator asks about. The servers count the
//! phase's I/O per target under that id, so the coordinator can attribute the phase's bytes
//! and operations to each OST and MDT from the servers' own counters, apart from whatever else
//! the file system served meanwhile.

use pvfs_bench::launch::Engine;
use pvfs_bench::request::PhaseRequest;
use pvfs_host::Root;
use pvfs_metrics::lustre::{jobid, jobstats};

/// The most job ids one request asks about: a phase has one id per client at most (one in
/// all when the id does not name the node), and a run asks phase by phase.
pub const MAX_IDS: usize = 64;

/// A phase's job id on this client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseJob {
    /// The variable (and its value, the tag) the engine's process is started with, when the
    /// Lustre client reads the id from its environment.
    pub env: Option<(String, String)>,
    /// The id its I/O carries, or why none is the phase's alone.
    pub id: Result<String, String>,
}

/// The job id this node's Lustre client gives `req`'s task threads.
pub fn of_phase(root: &Root, req: &PhaseRequest) -> PhaseJob {
    let none = |why: &str| PhaseJob { env: None, id: Err(why.to_owned()) };
    let Some(tag) = &req.job_tag else {
        return none("the coordinator gave this phase no job tag");
    };
    if req.engine != Engine::Builtin {
        return none("fio runs this phase's tasks: its processes are fio's, not named for the phase");
    }
    let Some(setting) = jobid::Setting::read(root) else {
        return none("no Lustre client on this node (no jobid_var)");
    };
    // The kernel's own name for the node (what `%h` expands to); the engine runs as the agent.
    let nodename = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let (uid, gid) = (nix::unistd::geteuid().as_raw(), nix::unistd::getegid().as_raw());
    let tagged = jobid::tagged(&setting, tag, uid, gid, nodename.trim());
    PhaseJob { env: tagged.env.map(|var| (var, tag.clone())), id: tagged.id }
}

/// Why a request's ids are refused, naming the first bad one.
pub fn check_ids(ids: &[String]) -> Result<(), String> {
    if ids.is_empty() || ids.len() > MAX_IDS {
        return Err(format!("job_ids: 1 to {MAX_IDS} ids, not {}", ids.len()));
    }
    for id in ids {
        // Printable ASCII: what the kernel prints unescaped or as `\xHH`, decoded; a job id
        // holds at most 31 characters (LUSTRE_JOBID_SIZE).
        if id.is_empty() || id.len() > jobid::MAX_LEN || !id.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            return Err(format!(
                "job_ids: {id:?} is no Lustre job id (1 to {} printable characters)",
                jobid::MAX_LEN
            ));
        }
    }
    Ok(())
}

/// What this node's targets hold for `ids` (checked with [`check_ids`] first).
pub fn on_targets(root: &Root, ids: &[String]) -> (Vec<jobstats::TargetJob>, Vec<String>) {
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    jobstats::of_ids(root, &ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(tag: Option<&str>, engine: Engine) -> PhaseRequest {
        PhaseRequest {
            engine,
            workload: pvfs_bench::params::Preset::Throughput.workload(),
            dir: "/mnt/lustre/pvfs-bench/r1".into(),
            first_task: 0,
            tasks: 1,
            total_tasks: 1,
            tasks_per_client: 1,
            iteration: 0,
            phase: pvfs_bench::phase::Phase::Ior(pvfs_bench::phase::IorPhase::Write),
            stop_after: None,
            job_tag: tag.map(str::to_owned),
        }
    }

    /// A client's settings decide the id and the variable; a node without a client, fio, or a
    /// phase without a tag say why there is none.
    #[test]
    fn a_phases_id_follows_the_clients_settings() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let tagged = request(Some("pv00001w0"), Engine::Builtin);
        assert!(of_phase(&root, &tagged).id.is_err_and(|w| w.contains("no Lustre client")));
        std::fs::create_dir_all(dir.path().join("sys/fs/lustre")).unwrap();
        std::fs::write(dir.path().join("sys/fs/lustre/jobid_var"), "procname_uid\n").unwrap();
        let uid = nix::unistd::geteuid().as_raw();
        assert_eq!(of_phase(&root, &tagged), PhaseJob { env: None, id: Ok(format!("pv00001w0.{uid}")) });
        std::fs::write(dir.path().join("sys/fs/lustre/jobid_var"), "SLURM_JOB_ID\n").unwrap();
        assert_eq!(
            of_phase(&root, &tagged),
            PhaseJob { env: Some(("SLURM_JOB_ID".into(), "pv00001w0".into())), id: Ok("pv00001w0".into()) }
        );
        assert!(
            of_phase(&root, &request(Some("pv00001w0"), Engine::Fio)).id.is_err_and(|w| w.contains("fio"))
        );
        assert!(of_phase(&root, &request(None, Engine::Builtin)).id.is_err_and(|w| w.contains("no job tag")));
    }

    #[test]
    fn ids_are_bounded_in_number_length_and_characters() {
        let ok = |ids: &[&str]| check_ids(&ids.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        assert!(ok(&["pv00001w0.0", "SLURM_JOB10:0:client"]).is_ok());
        assert!(ok(&[]).is_err());
        assert!(ok(&vec!["a"; MAX_IDS + 1]).is_err());
        for bad in ["", &"x".repeat(32), "a\nb", "tab\there", "é"] {
            assert!(ok(&[bad]).is_err(), "{bad:?}");
        }
    }
}
