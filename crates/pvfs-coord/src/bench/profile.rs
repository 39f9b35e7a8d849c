//! `pvfsctl bench --gluster-profile`: GlusterFS's own profile of the cluster's volume over each
//! phase — every brick's file operations, their calls and latencies, and its bytes — from
//! `gluster volume profile`, which the operator consents to with the flag (profiling times
//! every call on every brick).
//!
//! One server's agent is asked (glusterd answers for the whole volume): the profile is started
//! before the first phase (left as it was if it was on already), read at each phase's start
//! (which only resets the interval) and end (`info incremental`: what each brick did since the
//! last reading, so the phase's own), and stopped after the run if this run started it. The
//! readings are made in order by one task, so a phase's reset never lands after its reading.

use crate::dial::Dialer;
use pvfs_bench::phase::Phase;
use pvfs_bench::results::{BenchEvent, ProfiledBrick, ProfiledFop};
use pvfs_config::{Cluster, KindSpec, Node, Role};
use pvfs_proto::pb;
use pvfs_proto::pb::gluster_profile_request::Action;
use std::time::Duration;
use tokio::sync::mpsc;

/// How long the end of a run waits for the last phase's reading.
const LAST_READING_WITHIN: Duration = Duration::from_secs(90);

/// Why the profile could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--gluster-profile: {0}")]
pub struct ProfileError(pub String);

/// The volume and the server asked for its profile: the first GlusterFS server of the cluster.
pub fn target(cluster: &Cluster) -> Result<(Node, String), ProfileError> {
    let KindSpec::Glusterfs { volume, .. } = &cluster.spec else {
        return Err(ProfileError(format!(
            "GlusterFS's profile needs a GlusterFS cluster, and {} is {}",
            cluster.name, cluster.kind
        )));
    };
    let server = cluster.nodes.iter().find(|n| n.has(Role::Server)).ok_or_else(|| {
        ProfileError(format!("{} has no server to ask for {volume}'s profile", cluster.source.display()))
    })?;
    Ok((server.clone(), volume.clone()))
}

/// One profile request to the server's agent.
async fn ask(
    dialer: &Dialer,
    node: &Node,
    volume: &str,
    action: Action,
) -> Result<pb::GlusterProfileResponse, String> {
    let mut conn = dialer.connect(node).await.map_err(|e| e.to_string())?;
    let request = pb::GlusterProfileRequest { volume: volume.to_owned(), action: action.into() };
    conn.agent
        .gluster_profile(request)
        .await
        .map(tonic::Response::into_inner)
        .map_err(|status| format!("{}: {}", node.name, status.message()))
}

/// A reading the worker makes: a phase's start resets the interval, its end is kept.
enum Reading {
    Reset,
    Keep { iteration: u32, phase: Phase },
}

/// The run's profile as it goes.
pub struct Profiler {
    node: Node,
    volume: String,
    dialer: Dialer,
    /// Whether this run started it (and so stops it).
    started_here: bool,
    readings: Option<mpsc::UnboundedSender<Reading>>,
    worker: Option<tokio::task::JoinHandle<()>>,
}

impl Profiler {
    /// Starts the volume's profile; its readings come back as events on the returned channel
    /// (to be kept with the run's). Refused or failed: the run does not start.
    pub async fn start(
        node: Node,
        volume: String,
        dialer: Dialer,
    ) -> Result<(Profiler, mpsc::UnboundedReceiver<BenchEvent>), ProfileError> {
        let started = ask(&dialer, &node, &volume, Action::Start).await.map_err(ProfileError)?;
        let (readings, mut queue) = mpsc::unbounded_channel::<Reading>();
        let (tx, events) = mpsc::unbounded_channel();
        let worker = {
            let (dialer, node, volume) = (dialer.clone(), node.clone(), volume.clone());
            tokio::spawn(async move {
                while let Some(reading) = queue.recv().await {
                    let answer = ask(&dialer, &node, &volume, Action::Info).await;
                    let Reading::Keep { iteration, phase } = reading else { continue };
                    let (bricks, error) = match answer {
                        Ok(answer) => (answer.bricks.into_iter().map(brick).collect(), None),
                        Err(why) => (Vec::new(), Some(why)),
                    };
                    let event = BenchEvent::GlusterProfile {
                        iteration,
                        phase,
                        volume: volume.clone(),
                        bricks,
                        error,
                    };
                    if tx.send(event).is_err() {
                        return;
                    }
                }
            })
        };
        let profiler = Profiler {
            node,
            volume,
            dialer,
            started_here: !started.already_started,
            readings: Some(readings),
            worker: Some(worker),
        };
        Ok((profiler, events))
    }

    /// Takes in one of the run's events: a phase's start and end are read.
    pub fn on_event(&self, event: &BenchEvent) {
        let Some(readings) = &self.readings else { return };
        let reading = match event {
            BenchEvent::PhaseStarted { .. } => Reading::Reset,
            BenchEvent::PhaseDone { iteration, phase, .. } => {
                Reading::Keep { iteration: *iteration, phase: *phase }
            }
            _ => return,
        };
        let _ = readings.send(reading);
    }

    /// The run is over: the readings asked are made (bounded), and the profile is stopped if
    /// this run started it. Returns what went wrong stopping it, if anything.
    pub async fn finish(&mut self) -> Option<String> {
        self.readings = None;
        if let Some(mut worker) = self.worker.take()
            && tokio::time::timeout(LAST_READING_WITHIN, &mut worker).await.is_err()
        {
            worker.abort();
        }
        if !self.started_here {
            return None;
        }
        ask(&self.dialer, &self.node, &self.volume, Action::Stop)
            .await
            .err()
            .map(|why| format!("stopping {}'s profile: {why}", self.volume))
    }
}

/// A brick's reading as the run keeps it: its operations, most called first.
fn brick(b: pb::GlusterBrickProfile) -> ProfiledBrick {
    let mut fops: Vec<ProfiledFop> = b
        .fops
        .into_iter()
        .map(|f| ProfiledFop {
            name: f.name,
            hits: f.hits,
            avg_ns: f.avg_latency_ns,
            max_ns: f.max_latency_ns,
        })
        .collect();
    fops.sort_by(|a, b| b.hits.cmp(&a.hits).then_with(|| a.name.cmp(&b.name)));
    ProfiledBrick {
        brick: b.brick,
        seconds: b.duration_s,
        read_bytes: b.read_bytes,
        write_bytes: b.write_bytes,
        fops,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::fault::tests::cluster;

    #[test]
    fn the_profile_is_the_volumes_asked_of_its_first_server() {
        let (node, volume) = target(&cluster("glusterfs")).unwrap();
        assert_eq!((node.name.as_str(), volume.as_str()), ("gfs1", "gv0"));
        let err = target(&cluster("local")).unwrap_err().to_string();
        assert!(err.contains("needs a GlusterFS cluster"), "{err}");
    }

    #[test]
    fn a_bricks_operations_are_kept_most_called_first() {
        let fop = |name: &str, hits| pb::GlusterFop {
            name: name.into(),
            hits,
            avg_latency_ns: 1.0,
            ..Default::default()
        };
        let kept = brick(pb::GlusterBrickProfile {
            brick: "gfs1:/bricks/gv0".into(),
            duration_s: 3,
            read_bytes: 0,
            write_bytes: 4096,
            fops: vec![fop("LOOKUP", 2), fop("WRITE", 900), fop("FSYNC", 2)],
        });
        let names: Vec<&str> = kept.fops.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["WRITE", "FSYNC", "LOOKUP"]);
        assert_eq!((kept.seconds, kept.write_bytes), (3, 4096));
    }
}
