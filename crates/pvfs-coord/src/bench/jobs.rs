//! A Lustre phase's own I/O per target, from the servers' `job_stats`.
//!
//! Each phase's tasks run under a name of their own (`pvfs_bench::request::job_tag`), so each
//! client's Lustre client tags their I/O with a job id the client's agent works out and
//! reports with the phase's end (or why there is none: `jobid_var = disable`, an id per
//! thread, …). Once every client is done, every MDS and OSS agent is asked what its targets
//! counted under those ids (`LustreJobs`), and the answers — summed over the ids per target —
//! become one [`BenchEvent::LustreJobs`]. The servers' counters then say where the phase's
//! bytes and operations went, apart from anything else the file system served meanwhile;
//! `report` shows the balance over the targets and whether the OSTs' bytes add up to the
//! application's.

use crate::dial::Dialer;
use pvfs_bench::phase::Phase;
use pvfs_bench::results::{BenchEvent, ClientJobId, JobCounter, TargetJobStats};
use pvfs_config::{Cluster, KindSpec, Node, Role};
use pvfs_proto::pb;
use std::collections::BTreeMap;
use tokio::task::JoinSet;

/// The nodes whose targets keep job_stats: a Lustre cluster's MDSs and OSSs (none elsewhere,
/// and then no phase is tagged).
pub fn servers(cluster: &Cluster) -> Vec<Node> {
    if !matches!(cluster.spec, KindSpec::Lustre { .. }) {
        return Vec::new();
    }
    cluster.nodes.iter().filter(|n| n.has(Role::Mds) || n.has(Role::Oss)).cloned().collect()
}

/// A run's nonce for its job tags: random per run (std's hasher keys are), so two runs' ids
/// differ even within Lustre's 600 s before an idle job's counters are dropped.
pub fn nonce() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos(),
    );
    h.finish() as u32
}

/// Asks every server for the clients' ids and sums each target's counters over them.
pub async fn read(
    dialer: &Dialer,
    servers: &[Node],
    iteration: u32,
    phase: Phase,
    clients: Vec<ClientJobId>,
) -> BenchEvent {
    let mut ids: Vec<String> = clients.iter().filter_map(|c| c.job_id.clone()).collect();
    ids.sort();
    ids.dedup();
    let mut targets = Vec::new();
    let mut errors = Vec::new();
    if !ids.is_empty() {
        let mut asked = JoinSet::new();
        for node in servers {
            let (dialer, node, ids) = (dialer.clone(), node.clone(), ids.clone());
            asked.spawn(async move {
                let answer = ask(&dialer, &node, ids).await;
                (node.name, answer)
            });
        }
        let mut answers = Vec::new();
        while let Some(joined) = asked.join_next().await {
            match joined {
                Ok(answer) => answers.push(answer),
                Err(e) => errors.push(e.to_string()),
            }
        }
        // In the cluster file's order, whichever server answered first.
        answers.sort_by_key(|(name, _)| servers.iter().position(|n| &n.name == name));
        for (node, answer) in answers {
            match answer {
                Ok(answer) => {
                    targets.extend(summed(&node, answer.jobs));
                    errors.extend(answer.errors.into_iter().map(|e| format!("{node}: {e}")));
                }
                Err(why) => errors.push(format!("{node}: {why}")),
            }
        }
    }
    BenchEvent::LustreJobs { iteration, phase, clients, targets, errors }
}

async fn ask(dialer: &Dialer, node: &Node, job_ids: Vec<String>) -> Result<pb::LustreJobsResponse, String> {
    let mut conn = dialer.connect(node).await.map_err(|e| e.to_string())?;
    let call = conn.agent.lustre_jobs(pb::LustreJobsRequest { job_ids });
    match tokio::time::timeout(dialer.timeout(), call).await {
        Ok(Ok(answer)) => Ok(answer.into_inner()),
        Ok(Err(status)) => Err(status.message().to_owned()),
        Err(_) => Err(format!("no answer within {} s", dialer.timeout().as_secs())),
    }
}

/// One server's answer as targets, each target's counters summed over the ids it counted
/// (one per client when the id names the node), in the order the agent found them.
fn summed(node: &str, jobs: Vec<pb::LustreTargetJob>) -> Vec<TargetJobStats> {
    let mut order: Vec<(String, String)> = Vec::new();
    let mut by_target: BTreeMap<(String, String), BTreeMap<String, (u64, u64)>> = BTreeMap::new();
    for job in jobs {
        let key = (job.kind, job.target);
        if !by_target.contains_key(&key) {
            order.push(key.clone());
        }
        let counters = by_target.entry(key).or_default();
        for c in job.counters {
            let (samples, sum) = counters.entry(c.name).or_default();
            *samples = samples.saturating_add(c.samples);
            *sum = sum.saturating_add(c.sum);
        }
    }
    order
        .into_iter()
        .map(|key| {
            let counters = by_target.remove(&key).unwrap_or_default();
            let (kind, target) = key;
            TargetJobStats {
                node: node.to_owned(),
                kind,
                target,
                counters: counters
                    .into_iter()
                    .map(|(name, (samples, sum))| JobCounter { name, samples, sum })
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(target: &str, id: &str, write: (u64, u64)) -> pb::LustreTargetJob {
        pb::LustreTargetJob {
            kind: "obdfilter".into(),
            target: target.into(),
            job_id: id.into(),
            counters: vec![
                pb::LustreJobCounter {
                    name: "write_bytes".into(),
                    unit: "bytes".into(),
                    samples: write.0,
                    sum: write.1,
                },
                pb::LustreJobCounter { name: "punch".into(), unit: "usecs".into(), samples: 1, sum: 40 },
            ],
        }
    }

    /// Two clients' ids on one OST are one target, their counters added; targets keep the
    /// order the agent found them in.
    #[test]
    fn a_targets_counters_are_summed_over_the_clients_ids() {
        let out = summed(
            "oss1",
            vec![
                job("fs-OST0001", "pv1w0.c1", (4, 16 << 20)),
                job("fs-OST0000", "pv1w0.c1", (1, 1 << 20)),
                job("fs-OST0001", "pv1w0.c2", (2, 8 << 20)),
            ],
        );
        assert_eq!(out.iter().map(|t| t.target.as_str()).collect::<Vec<_>>(), ["fs-OST0001", "fs-OST0000"]);
        assert_eq!(out[0].counter("write_bytes"), (6, 24 << 20));
        assert_eq!(out[0].counter("punch"), (2, 80));
        assert_eq!((out[0].other_ops(), out[0].node.as_str()), (2, "oss1"));
        assert_eq!(out[1].counter("read_bytes"), (0, 0));
    }
}
