//! `provision`: make the resource group match the plan, then record every node's address.

use crate::arm::NETWORK_API_VERSION;
use crate::body;
use crate::plan::{Action, ExistingVm, Plan};
use crate::{Arm, AzureError, quota};
use futures::StreamExt;
use pvfs_config::azure::{Azure, NodeState, State};
use std::net::IpAddr;
use std::path::Path;

/// How many VMs are created at once: ARM takes them in parallel, and a bound keeps one
/// command from tripping the subscription's write throttling.
const PARALLEL: usize = 8;

/// The VMs of the resource group, as they are now.
pub async fn existing(arm: &Arm, azure: &Azure) -> Result<Vec<ExistingVm>, AzureError> {
    let what = format!("resource group {}", azure.resource_group);
    let mut pages =
        arm.compute.virtual_machines_client().list(&azure.resource_group, &azure.subscription).into_stream();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| AzureError::from_core(&what, "listing virtual machines", e))?;
        for vm in page.value {
            let json = serde_json::to_value(&vm).unwrap_or_default();
            out.push(ExistingVm::from_json(&json));
        }
    }
    Ok(out)
}

/// The plan for `cluster` against the resource group as it is.
pub async fn plan(arm: &Arm, cluster: &str, azure: &Azure) -> Result<Plan, AzureError> {
    Ok(Plan::make(cluster, azure, &existing(arm, azure).await?))
}

/// What happened to one node.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Outcome {
    pub node: String,
    /// `created`, `changed` or `ok`.
    pub result: &'static str,
    pub address: IpAddr,
}

/// Carries out `plan` (checked against the region's limits first; refused whole if any VM is
/// refused), then reads every node's private IP and writes the state at `state_path` — only if
/// it changed, so that a second run changes nothing at all.
pub async fn provision(
    arm: &Arm,
    azure: &Azure,
    plan: &Plan,
    state_path: &Path,
) -> Result<Vec<Outcome>, AzureError> {
    let refusals = plan.refusals();
    if !refusals.is_empty() {
        return Err(AzureError::Refused { problems: refusals });
    }
    quota::check(arm, &azure.subscription, plan).await?;
    let results: Vec<Result<(), AzureError>> = futures::stream::iter(plan.items.iter())
        .map(|item| async move {
            let json = match &item.action {
                Action::Create => body::vm_json(&plan.cluster, azure, &item.vm),
                Action::Change(_) => match &item.existing {
                    Some(existing) => body::change_json(&plan.cluster, azure, &item.vm, existing),
                    None => body::vm_json(&plan.cluster, azure, &item.vm),
                },
                Action::Leave | Action::Refuse(_) => return Ok(()),
            };
            put(arm, azure, &item.node, json).await
        })
        .buffer_unordered(PARALLEL)
        .collect()
        .await;
    let errors: Vec<AzureError> = results.into_iter().filter_map(Result::err).collect();
    if !errors.is_empty() {
        return Err(AzureError::Some { total: plan.items.len(), errors });
    }
    let mut state = State::default();
    let mut outcomes = Vec::new();
    for item in &plan.items {
        let (id, address) = address(arm, azure, &item.node).await?;
        state.node.insert(item.node.clone(), NodeState { address, vm_id: id });
        let result = match item.action {
            Action::Create => "created",
            Action::Change(_) => "changed",
            _ => "ok",
        };
        outcomes.push(Outcome { node: item.node.clone(), result, address });
    }
    if State::read(state_path)? != state {
        state.write(state_path)?;
    }
    Ok(outcomes)
}

/// One PUT of `node`'s VM, sent once, then its operation waited for.
async fn put(arm: &Arm, azure: &Azure, node: &str, json: serde_json::Value) -> Result<(), AzureError> {
    const OPERATION: &str = "creating or updating the virtual machine";
    let vm = body::typed(node, json)?;
    tracing::info!(node, "PUT virtual machine");
    let response = arm
        .compute
        .virtual_machines_client()
        .create_or_update(&azure.resource_group, node, vm, &azure.subscription)
        .send()
        .await
        .map_err(|e| AzureError::from_core(node, OPERATION, e))?;
    arm.wait(node, OPERATION, response.as_raw_response()).await?;
    Ok(())
}

/// `node`'s VM ID and the private IP of its primary NIC. The VM names its NICs; the address is
/// on the NIC, a Microsoft.Network resource, read with the same pipeline and token.
pub async fn address(arm: &Arm, azure: &Azure, node: &str) -> Result<(String, IpAddr), AzureError> {
    let vm = arm
        .compute
        .virtual_machines_client()
        .get(&azure.resource_group, node, &azure.subscription)
        .await
        .map_err(|e| AzureError::from_core(node, "reading the virtual machine", e))?;
    let vm = ExistingVm::from_json(&serde_json::to_value(&vm).unwrap_or_default());
    let unexpected = |detail: String| AzureError::Unexpected {
        resource: node.into(),
        operation: "reading its private IP".into(),
        detail,
    };
    let nic = vm.nics.first().ok_or_else(|| unexpected("the VM has no network interface".into()))?;
    let (_, _, json) = arm
        .get_json(node, "reading its network interface", arm.resource_url(nic, NETWORK_API_VERSION))
        .await?;
    let configs = json["properties"]["ipConfigurations"].as_array().cloned().unwrap_or_default();
    let primary = configs
        .iter()
        .find(|c| c["properties"]["primary"].as_bool() == Some(true))
        .or(configs.first())
        .ok_or_else(|| unexpected(format!("{nic} has no IP configuration")))?;
    let ip = primary["properties"]["privateIPAddress"]
        .as_str()
        .ok_or_else(|| unexpected(format!("{nic} has no private IP yet")))?;
    let ip = ip.parse().map_err(|_| unexpected(format!("{nic}'s private IP {ip:?} is not an address")))?;
    Ok((vm.id, ip))
}
