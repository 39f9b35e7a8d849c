//! `pvfsctl provision` / `deprovision` / `up --provision`: the cluster's Azure VMs.
//!
//! What they do is `pvfs_azure`'s; this resolves the flags, finds credentials, shows the plan
//! and asks before deleting. Azure support is a cargo feature (`azure`), off by default so
//! that the agent's build does not compile the Azure SDK; without it these commands exist and
//! say how to get it.

use crate::cli::{DeprovisionArgs, ProvisionArgs, UpCli};

/// What the commands say when pvfs was built without the feature.
#[cfg(not(feature = "azure"))]
const NO_AZURE: &str = "this pvfsctl was built without Azure support; build one with it: \
     `cargo build --release -p pvfs --features azure` (the agent does not need it)";

#[cfg(not(feature = "azure"))]
pub(crate) async fn provision(_: ProvisionArgs) -> anyhow::Result<u8> {
    anyhow::bail!("{NO_AZURE}")
}

#[cfg(not(feature = "azure"))]
pub(crate) async fn deprovision(_: DeprovisionArgs) -> anyhow::Result<u8> {
    anyhow::bail!("{NO_AZURE}")
}

#[cfg(not(feature = "azure"))]
pub(crate) async fn up(_: UpCli) -> anyhow::Result<u8> {
    anyhow::bail!("up --provision: {NO_AZURE}")
}

#[cfg(feature = "azure")]
pub(crate) use with_azure::{deprovision, provision, up};

#[cfg(feature = "azure")]
mod with_azure {
    use super::*;
    use crate::cli::{AzureArgs, BootstrapArgs};
    use crate::{exit, output};
    use anyhow::{Context, bail};
    use pvfs_azure::plan::Plan;
    use pvfs_azure::{Arm, ArmOptions, apply, deprovision as dep, quota};
    use pvfs_config::azure::Azure;
    use std::io::{BufRead, IsTerminal, Write};
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::time::Duration;

    /// The cluster's name, its `[azure]` section and its state file. Nodes may have no
    /// address yet: that is what provisioning gives them.
    fn load(path: &Path) -> anyhow::Result<(String, Azure, PathBuf)> {
        let p = pvfs_config::load_provisioning(path)?;
        Ok((p.cluster.name, p.azure, p.state))
    }

    /// A connection to ARM: the given endpoint, certificate and token (tests), else the public
    /// cloud with the first credentials that work.
    async fn connect(args: &AzureArgs) -> anyhow::Result<Arm> {
        let mut options = ArmOptions::default();
        if let Some(endpoint) = &args.azure_endpoint {
            options.endpoint =
                endpoint.parse().with_context(|| format!("the Azure endpoint {endpoint:?} is not a URL"))?;
            // A local endpoint answers at once; do not wait the public cloud's interval.
            options.default_poll = Duration::from_millis(200);
        }
        if let Some(ca) = &args.azure_ca {
            options.extra_root_pem = Some(pvfs_host::local_file::read(ca, pvfs_tls::PEM_FILE)?);
        }
        let credential: Arc<dyn pvfs_azure::credentials::TokenCredential> = match &args.azure_token {
            Some(token) => Arc::new(pvfs_azure::credentials::StaticToken(token.clone())),
            None => pvfs_azure::credentials::credential(&options.endpoint).await?,
        };
        Ok(Arm::new(credential, options)?)
    }

    /// The plan as JSON, with the limits' verdict.
    #[derive(serde::Serialize)]
    struct PlanJson<'a> {
        plan: &'a Plan,
        limits: &'a [String],
    }

    pub(crate) async fn provision(args: ProvisionArgs) -> anyhow::Result<u8> {
        let (name, azure, state) = load(&args.cluster)?;
        let arm = connect(&args.azure).await?;
        let plan = apply::plan(&arm, &name, &azure).await?;
        if args.plan {
            let limits = match quota::check(&arm, &azure.subscription, &plan).await {
                Ok(()) => Vec::new(),
                Err(pvfs_azure::AzureError::Limits { problems, .. }) => problems,
                Err(e) => return Err(e.into()),
            };
            if args.json {
                output::json(&PlanJson { plan: &plan, limits: &limits })?;
            } else {
                let mut text = plan.to_string();
                if limits.is_empty() {
                    text.push_str(&format!("quotas and sizes of {}: enough\n", azure.location));
                } else {
                    text.push_str(&format!("the limits of {} refuse this plan:\n", azure.location));
                    for p in &limits {
                        text.push_str(&format!("  {p}\n"));
                    }
                }
                output::print(&text)?;
            }
            let blocked = !limits.is_empty() || !plan.refusals().is_empty();
            return Ok(if blocked { exit::FAILURES } else { exit::OK });
        }
        if !args.json {
            output::print(&plan.to_string())?;
        }
        let outcomes = apply::provision(&arm, &azure, &plan, &state).await?;
        for o in &outcomes {
            if args.json {
                output::json(o)?;
            } else {
                output::print(&format!("{:<8} {:<12} {}\n", o.result, o.node, o.address))?;
            }
        }
        if !args.json {
            output::print(&format!("addresses in {}\n", state.display()))?;
        }
        Ok(exit::OK)
    }

    pub(crate) async fn deprovision(args: DeprovisionArgs) -> anyhow::Result<u8> {
        let (name, azure, state) = load(&args.cluster)?;
        let arm = connect(&args.azure).await?;
        let vms = dep::list(&arm, &name, &azure).await?;
        if vms.is_empty() {
            output::print(&format!(
                "nothing in resource group {} carries the tag {}={name}: nothing to delete\n",
                azure.resource_group,
                pvfs_azure::CLUSTER_TAG
            ))?;
            return Ok(exit::OK);
        }
        let mut text = format!(
            "these VMs of cluster {name} in resource group {} carry the tag {}={name}; they are deleted with their NICs and disks:\n",
            azure.resource_group,
            pvfs_azure::CLUSTER_TAG
        );
        for vm in &vms {
            text.push_str(&format!("  {} ({}, {} data disks)\n", vm.name, vm.size, vm.data_disks.len()));
        }
        output::print(&text)?;
        if !args.yes {
            confirm(&name)?;
        }
        dep::delete(&arm, &name, &azure, &vms, &state).await?;
        output::print(&format!("deleted {} VMs\n", vms.len()))?;
        Ok(exit::OK)
    }

    /// Goes on only if the operator types the cluster's name at a terminal.
    fn confirm(name: &str) -> anyhow::Result<()> {
        if !std::io::stdin().is_terminal() {
            bail!(
                "refusing to delete: the cluster's name is asked at a terminal, and there is none; pass --yes to confirm (nothing was deleted)"
            );
        }
        let mut err = std::io::stderr();
        write!(err, "type the cluster's name ({name}) to delete them: ")?;
        err.flush()?;
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        if line.trim() != name {
            bail!(
                "refusing to delete: {:?} is not the cluster's name ({name}); nothing was deleted",
                line.trim()
            );
        }
        Ok(())
    }

    /// `up --provision`: provision, bootstrap, then converge.
    pub(crate) async fn up(cli: UpCli) -> anyhow::Result<u8> {
        let path = cli.up.cluster.clone();
        let (_, azure, _) = load(&path)?;
        let code = provision(ProvisionArgs {
            cluster: path.clone(),
            plan: false,
            json: cli.up.json,
            azure: (*cli.azure).clone(),
        })
        .await?;
        if code != exit::OK {
            return Ok(code);
        }
        // New VMs: log in as the image's admin user (not root), through sudo, and record their
        // host keys on first contact (a key that later changes is still refused).
        let bootstrap = BootstrapArgs {
            cluster: path,
            connect: cli.up.connect.clone(),
            ssh_user: Some(azure.admin_user.clone()),
            identity: None,
            ssh_config: None,
            accept_new_host_keys: true,
            sudo: true,
            from: None,
            deb: None,
            // Every node of the cluster: the VMs just provisioned are all of them.
            nodes: Vec::new(),
            plan: false,
            json: cli.up.json,
            parallel: 16,
            wait: Duration::from_secs(120),
            ssh_timeout: Duration::from_secs(30),
            no_multiplex: false,
            verbose: cli.up.verbose,
        };
        let code = super::super::bootstrap::run(bootstrap).await?;
        if code != exit::OK {
            return Ok(code);
        }
        super::super::up::run(UpCli { provision: false, ..cli }).await
    }
}
