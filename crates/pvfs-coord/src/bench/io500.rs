//! `--preset io500` on the built-in engine through the agents: io500's stages in its order
//! (`pvfs_bench::io500::plan`), each one's engine phases run on every client as any run's are,
//! the stonewalled writes' counts carried to their reads, the timestamp made on the file system
//! between the writes and the find (a directory whose change time the find reads, as pfind's
//! `-newer` reads io500's timestamp file), and the find scanning the run's data on every client, each its share of
//! the directories with its tasks as pfind's threads. The run is then told as io500 tells one
//! (`pvfs_bench::io500::assemble`): figures, rules, score.

use super::{BenchError, BenchOutcome, BenchSpec, drop_caches, phase_done, run_phase};
use crate::dial::{Connection, Dialer};
use pvfs_bench::io500::assemble::{self, StageOutcome};
use pvfs_bench::io500::plan::{self, Family, Io500Params, Stage, workload};
use pvfs_bench::params::Workload;
use pvfs_bench::phase::{MdtestPhase, Phase};
use pvfs_bench::results::{BenchEvent, unix};
use pvfs_config::Node;
use std::collections::HashMap;
use std::time::{Instant, SystemTime};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Runs the IO500 on `spec`'s clients (already connected), until it ends or is cancelled.
pub(super) async fn run(
    spec: &BenchSpec,
    params: &Io500Params,
    connections: &[(Node, Connection)],
    dialer: &Dialer,
    events: &mpsc::UnboundedSender<BenchEvent>,
    cancel: &CancellationToken,
    outcome: &mut BenchOutcome,
) {
    let procs = u64::from(spec.tasks_per_client) * connections.len() as u64;
    // Each family's stonewalled count, from its write to its reads.
    let mut counts: HashMap<Family, Option<u64>> = HashMap::new();
    let mut stages = Vec::new();
    // The timestamp's directory, made on the file system by the first client.
    let timestamp = BenchSpec {
        workload: plan::timestamp_workload(),
        dir: spec.dir.join(plan::TIMESTAMP_DIR),
        ..spec.clone()
    };
    'stages: for stage in Stage::ALL {
        let started = Instant::now();
        let _ = events.send(BenchEvent::Io500Stage { stage, at: unix(SystemTime::now()) });
        if stage == Stage::Timestamp {
            // io500 makes its timestamp file here; the find finds what changed after it, by the
            // file system's clock.
            let phase = Phase::Mdtest(MdtestPhase::TreeCreate);
            match run_phase(&timestamp, &connections[..1], dialer, 0, phase, None, None, events).await {
                Ok(mut record) => {
                    record.stage = Some(stage);
                    outcome.phases.push(record);
                }
                Err(failures) => {
                    outcome.error = Some(BenchError::Phase { iteration: 0, phase, failures });
                    break 'stages;
                }
            }
            stages.push(StageOutcome {
                stage,
                seconds: started.elapsed().as_secs_f64(),
                totals: None,
                found: None,
                command: None,
                ended: Some(unix(SystemTime::now())),
            });
            send_result(events, params, procs, &stages);
            continue;
        }
        let (sub, clients) = match stage {
            Stage::Find => {
                (BenchSpec { workload: Workload::Find(assemble::find_params()), ..spec.clone() }, connections)
            }
            _ => {
                let (Some(family), Some(workload)) =
                    (stage.family(), workload(stage, &params.options, &params.seeds))
                else {
                    continue;
                };
                (BenchSpec { workload, dir: spec.dir.join(family.dir()), ..spec.clone() }, connections)
            }
        };
        let (phases, scored) = match stage {
            Stage::Find => (vec![Phase::Find], Some(Phase::Find)),
            _ => stage.engine_phases(),
        };
        let mut scored_record = None;
        for phase in phases {
            let dropped = match drop_caches(spec, dialer, 0, phase, cancel).await {
                Ok(dropped) => dropped,
                Err(err) => {
                    outcome.error = Some(err);
                    break 'stages;
                }
            };
            if !dropped.is_empty() {
                let _ =
                    events.send(BenchEvent::CachesDropped { iteration: 0, phase, nodes: dropped.clone() });
            }
            let stop_after = stage.family().and_then(|f| counts.get(&f).copied().flatten());
            let running = run_phase(&sub, clients, dialer, 0, phase, stop_after, None, events);
            let result = tokio::select! {
                result = running => result.map_err(|failures| BenchError::Phase { iteration: 0, phase, failures }),
                () = cancel.cancelled() => Err(BenchError::Interrupted { during: Some((0, phase)) }),
            };
            match result {
                Ok(mut record) => {
                    record.caches_dropped = dropped;
                    record.stage = Some(stage);
                    let ops = record.tasks.iter().map(|t| t.ops);
                    if let (Some(family), Some(carried)) =
                        (stage.family(), pvfs_bench::request::carried(&sub.workload, phase, ops))
                    {
                        counts.insert(family, carried);
                    }
                    let _ = events.send(phase_done(&record));
                    if Some(phase) == scored {
                        scored_record = Some(record.clone());
                    }
                    outcome.phases.push(record);
                }
                Err(err) => {
                    outcome.error = Some(err);
                    break 'stages;
                }
            }
        }
        stages.push(StageOutcome {
            stage,
            seconds: started.elapsed().as_secs_f64(),
            totals: scored_record.as_ref().map(|r| r.totals),
            found: scored_record.as_ref().and_then(|r| r.found),
            command: assemble::command(stage, params, &spec.dir),
            ended: Some(unix(SystemTime::now())),
        });
        send_result(events, params, procs, &stages);
    }
    // io500 removes what its phases left; mdtest's files went with its delete stages.
    if outcome.error.is_none() {
        let phase = Phase::Mdtest(MdtestPhase::TreeRemove);
        if let Err(failures) =
            run_phase(&timestamp, &connections[..1], dialer, 0, phase, None, None, events).await
        {
            outcome.error = Some(BenchError::Phase { iteration: 0, phase, failures });
        }
    }
    if outcome.error.is_none() {
        for stage in [Stage::IorEasyWrite, Stage::IorHardWrite] {
            let (Some(family), Some(workload)) =
                (stage.family(), workload(stage, &params.options, &params.seeds))
            else {
                continue;
            };
            let sub = BenchSpec { workload, dir: spec.dir.join(family.dir()), ..spec.clone() };
            if let Err(failures) =
                run_phase(&sub, connections, dialer, 0, Phase::IorCleanup, None, None, events).await
            {
                outcome.error = Some(BenchError::Phase { iteration: 0, phase: Phase::IorCleanup, failures });
                break;
            }
        }
    }
    let run = assemble::assemble(params, procs, &stages);
    if let Some(score) = run.score {
        let mut reasons = run.invalid_reasons.clone();
        for p in &run.phases {
            reasons.extend(p.invalid_reasons.iter().map(|r| format!("{}: {r}", p.result.name)));
        }
        let _ = events.send(BenchEvent::Io500Score { score, invalid_reasons: reasons });
    }
    outcome.io500 = Some(run);
}

/// Sends the last stage's figure, as io500 prints it.
fn send_result(
    events: &mpsc::UnboundedSender<BenchEvent>,
    params: &Io500Params,
    procs: u64,
    stages: &[StageOutcome],
) {
    if let Some(phase) = assemble::assemble(params, procs, stages).phases.pop() {
        let _ = events.send(BenchEvent::Io500Result { result: phase.result });
    }
}
