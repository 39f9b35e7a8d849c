//! `pvfsctl ca init|issue|revoke`.

use crate::cli::{CaCommand, UsageArg};
use crate::{exit, output};
use pvfs_tls::Usage;

pub(crate) fn run(command: CaCommand) -> anyhow::Result<u8> {
    match command {
        CaCommand::Init { dir } => {
            let cert = match pvfs_tls::init_ca(&dir) {
                // pvfs-tls's own message suggests --force, which fits a holder's certificate
                // but never a CA: replacing its key silently untrusts every certificate issued
                // from it. `ca init` has no --force, so say what to do instead.
                Err(pvfs_tls::TlsError::Exists { path }) => anyhow::bail!(
                    "{} already exists: {dir} holds a cluster CA, and pvfsctl never replaces a CA's key (every \
                     certificate issued from it would stop being trusted). To start a new CA, move {dir} aside, run \
                     `pvfsctl ca init --dir {dir}`, then issue every agent's and the coordinator's certificate anew",
                    path.display(),
                    dir = dir.display()
                ),
                other => other?,
            };
            output::print(&format!(
                "created cluster CA {} (key {}, mode 0600)\nnext: `pvfsctl bootstrap CLUSTER.toml` (with `[tls] dir = \"{dir}\"` in it, or --tls-dir {dir}) issues \
                 the coordinator's and each node's certificate from it and installs the agents over SSH; or by hand, \
                 `pvfsctl ca issue pvfsctl --dir {dir}` and `pvfsctl ca issue NODE --dir {dir} --san NODE_IP` for each agent\n",
                cert.display(),
                dir.join(pvfs_tls::CA_KEY).display(),
                dir = dir.display(),
            ))?;
        }
        CaCommand::Issue(args) => {
            let usage = match args.usage {
                Some(UsageArg::Agent) => Usage::Agent,
                Some(UsageArg::Coordinator) => Usage::Coordinator,
                None => Usage::default_for(&args.name),
            };
            let options =
                pvfs_tls::IssueOptions { sans: args.sans.clone(), usage, force: args.force, days: args.days };
            let issued = pvfs_tls::issue_with(&args.dir, &args.name, &options)?;
            let what = match issued.usage {
                Usage::Agent => "agent (server)",
                Usage::Coordinator => "coordinator (client)",
            };
            let names = if issued.sans.is_empty() { "no names".to_owned() } else { issued.sans.join(", ") };
            output::print(&format!(
                "issued {what} certificate {} for {names}, valid until {}\nserial: {}\nkey: {} (mode 0600)\n",
                issued.cert.display(),
                issued.not_after.date(),
                issued.serial,
                issued.key.display()
            ))?;
            if usage == Usage::Agent && issued.sans.iter().all(|s| s.parse::<std::net::IpAddr>().is_err()) {
                output::note(
                    "note: no IP address among the names; the coordinator verifies agents by the address it dials, so add --san IP unless the cluster file uses DNS names",
                );
            }
        }
        CaCommand::Revoke(args) => {
            let done = pvfs_tls::revoke_named(&args.dir, &args.target)?;
            let which = match &done.holder {
                Some(name) => format!("{name}'s certificate (serial {})", done.serial),
                None => format!("serial {}", done.serial),
            };
            let what = if done.added { "revoked" } else { "already revoked:" };
            output::print(&format!(
                "{what} {which} in {list}\nnext: copy {list} to every node's TLS directory (/etc/pvfs/tls/revoked.txt); \
                 agents re-read it on their next request, no restart needed\n",
                list = done.list.display(),
            ))?;
            if let Some(name) = &done.holder {
                output::note(&format!(
                    "note: {name}.crt is still in {dir}; issue a new one with `pvfsctl ca issue {name} --dir {dir} --force`",
                    dir = args.dir.display()
                ));
            }
        }
    }
    Ok(exit::OK)
}
