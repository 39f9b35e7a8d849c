//! Rebooting a node into the kernel a step said it must boot, and waiting for it to come back
//! running that kernel: the one part of `up` that outlives the agent it talks to.
//!
//! The agent checks and sets the boot default before it answers (see the agent's `Reboot`),
//! so an answer means the node is going down into the right kernel. "Back" is proven by the
//! kernel's boot id changing, not by the agent answering again: an agent that answers before
//! the node has gone down still reports the old boot. The wait is bounded, and reports where
//! it is at every poll so that a long firmware POST does not look like a hang.

use crate::dial::{Connection, DialError, Dialer, from_status};
use pvfs_config::Node;
use pvfs_proto::pb;
use std::time::{Duration, Instant};

/// How long a node has to come back by default: bare-metal servers spend minutes in firmware.
pub const REBOOT_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// How the wait goes.
#[derive(Debug, Clone, Copy)]
pub struct Wait {
    /// The node must answer on a new boot within this long.
    pub timeout: Duration,
    /// Asked this often whether it is back.
    pub poll: Duration,
}

impl Default for Wait {
    fn default() -> Wait {
        Wait { timeout: REBOOT_TIMEOUT, poll: Duration::from_secs(5) }
    }
}

/// Why the node is not back running the kernel.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RebootError {
    /// The agent would not reboot (policy, kernel not installed, boot loader, busy); nothing
    /// changed, and the message says what to do.
    #[error("the agent did not reboot {node}: {message}")]
    Refused { node: String, message: String },
    #[error("cannot ask {node}'s agent to reboot: {source}")]
    Unreachable {
        node: String,
        #[source]
        source: DialError,
    },
    #[error(
        "{node} did not come back within {}s of rebooting into {kernel} (last: {last}); check \
         its console, then run `pvfsctl up` again",
        timeout.as_secs()
    )]
    Timeout { node: String, kernel: String, timeout: Duration, last: String },
    #[error(
        "{node} rebooted but runs {running}, not {kernel}: its boot loader did not start the \
         kernel (check `grubby --default-kernel` and the console), then run `pvfsctl up` again"
    )]
    WrongKernel { node: String, kernel: String, running: String },
}

/// Where a reboot is, for the live view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// The agent set the boot default and is rebooting the node.
    Rebooting,
    /// Not back yet, after `elapsed`; `last` says what the last poll found.
    Waiting { elapsed: Duration, last: String },
    /// Back on a new boot, running the kernel.
    Back { elapsed: Duration },
}

/// Reboots `node` into `kernel` over `conn` and waits until it is back running it; a fresh
/// connection to it then. A node already running `kernel` is not rebooted.
pub async fn reboot_into(
    node: &Node,
    mut conn: Connection,
    dialer: &Dialer,
    kernel: &str,
    wait: Wait,
    progress: impl Fn(Progress),
) -> Result<Connection, RebootError> {
    let started = Instant::now();
    let request = pb::RebootRequest { kernel: kernel.to_owned() };
    let answer = match conn.agent.reboot(request).await {
        Ok(answer) => answer.into_inner(),
        Err(status)
            if matches!(
                status.code(),
                tonic::Code::PermissionDenied | tonic::Code::FailedPrecondition | tonic::Code::Aborted
            ) =>
        {
            return Err(RebootError::Refused {
                node: node.name.clone(),
                message: status.message().to_owned(),
            });
        }
        Err(status) => {
            let source = from_status(&status, &node.address, dialer.timeout());
            return Err(RebootError::Unreachable { node: node.name.clone(), source });
        }
    };
    if answer.already_running {
        return Ok(conn);
    }
    progress(Progress::Rebooting);
    // The old connection dies with the node; every poll dials afresh.
    drop(conn);
    let mut last = "not asked yet".to_owned();
    loop {
        let elapsed = started.elapsed();
        if elapsed >= wait.timeout {
            return Err(RebootError::Timeout {
                node: node.name.clone(),
                kernel: kernel.to_owned(),
                timeout: wait.timeout,
                last,
            });
        }
        tokio::time::sleep(wait.poll.min(wait.timeout - elapsed)).await;
        // A dead host can hold a call open past the dial timeout; each poll is bounded.
        let bound = dialer.timeout() * 2;
        match tokio::time::timeout(bound, ask(node, dialer)).await {
            Ok(Ok((conn, info))) if !info.boot_id.is_empty() && info.boot_id != answer.boot_id => {
                if info.kernel != kernel {
                    return Err(RebootError::WrongKernel {
                        node: node.name.clone(),
                        kernel: kernel.to_owned(),
                        running: info.kernel,
                    });
                }
                progress(Progress::Back { elapsed: started.elapsed() });
                return Ok(conn);
            }
            Ok(Ok(_)) => last = "the agent answers, still on the boot it was asked to leave".to_owned(),
            Ok(Err(err)) => last = format!("not answering: {err}"),
            Err(_) => last = format!("no answer within {}s", bound.as_secs()),
        }
        progress(Progress::Waiting { elapsed: started.elapsed(), last: last.clone() });
    }
}

/// A new connection to `node` and its facts.
async fn ask(node: &Node, dialer: &Dialer) -> Result<(Connection, pb::NodeInfo), DialError> {
    let mut conn = dialer.connect(node).await?;
    let info = conn
        .agent
        .info(pb::InfoRequest {})
        .await
        .map_err(|status| from_status(&status, &node.address, dialer.timeout()))?
        .into_inner()
        .node
        .unwrap_or_default();
    Ok((conn, info))
}
