//! `pvfsctl ca init|issue`.

use crate::cli::{CaCommand, UsageArg};
use crate::{exit, output};
use pvfs_tls::Usage;

pub(crate) fn run(command: CaCommand) -> anyhow::Result<u8> {
    match command {
        CaCommand::Init { dir } => {
            let cert = pvfs_tls::init_ca(&dir)?;
            output::print(&format!(
                "created cluster CA {} (key {}, mode 0600)\nnext: `pvfsctl ca issue pvfsctl --dir {dir}` for the coordinator, and `pvfsctl ca issue NODE --dir {dir} --san NODE_IP` for each agent\n",
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
            let issued = pvfs_tls::issue(&args.dir, &args.name, &args.sans, usage, args.force)?;
            let what = match issued.usage {
                Usage::Agent => "agent (server)",
                Usage::Coordinator => "coordinator (client)",
            };
            let names = if issued.sans.is_empty() { "no names".to_owned() } else { issued.sans.join(", ") };
            output::print(&format!(
                "issued {what} certificate {} for {names}, valid until {}\nkey: {} (mode 0600)\n",
                issued.cert.display(),
                issued.not_after.date(),
                issued.key.display()
            ))?;
            if usage == Usage::Agent && issued.sans.iter().all(|s| s.parse::<std::net::IpAddr>().is_err()) {
                output::note(
                    "note: no IP address among the names; the coordinator verifies agents by the address it dials, so add --san IP unless the cluster file uses DNS names",
                );
            }
        }
    }
    Ok(exit::OK)
}
