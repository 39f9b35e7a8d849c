//! `deprovision`: delete the VMs that carry this cluster's tag — only those — with their NICs
//! and disks (the VMs were created with `deleteOption: Delete` on each).

use crate::plan::{ExistingVm, node_of};
use crate::{Arm, AzureError};
use futures::StreamExt;
use pvfs_config::azure::{Azure, State};
use std::path::Path;

/// The resource group's VMs tagged with `cluster`: what `delete` would remove. Shown to the
/// user before anything is deleted.
pub async fn list(arm: &Arm, cluster: &str, azure: &Azure) -> Result<Vec<ExistingVm>, AzureError> {
    Ok(crate::apply::existing(arm, azure).await?.into_iter().filter(|vm| vm.belongs_to(cluster)).collect())
}

/// Deletes `vms` (from [`list`]; checked again here: a VM without this cluster's tag is never
/// deleted), waits for each, and removes their nodes from the state at `state_path`.
pub async fn delete(
    arm: &Arm,
    cluster: &str,
    azure: &Azure,
    vms: &[ExistingVm],
    state_path: &Path,
) -> Result<(), AzureError> {
    const OPERATION: &str = "deleting the virtual machine";
    let vms: Vec<&ExistingVm> = vms.iter().filter(|vm| vm.belongs_to(cluster)).collect();
    let results: Vec<Result<(), AzureError>> = futures::stream::iter(vms.iter().copied())
        .map(|vm| async move {
            tracing::info!(vm = vm.name, "DELETE virtual machine");
            let response = arm
                .compute
                .virtual_machines_client()
                .delete(&azure.resource_group, &vm.name, &azure.subscription)
                .send()
                .await
                .map_err(|e| AzureError::from_core(&vm.name, OPERATION, e))?;
            arm.wait(&vm.name, OPERATION, response.as_raw_response()).await.map(drop)
        })
        // In order, so that each result pairs with its VM below.
        .buffered(8)
        .collect()
        .await;
    let mut state = State::read(state_path)?;
    let before = state.clone();
    for (vm, result) in vms.iter().zip(&results) {
        if result.is_ok() {
            state.node.remove(node_of(vm));
        }
    }
    if state != before {
        state.write(state_path)?;
    }
    let errors: Vec<AzureError> = results.into_iter().filter_map(Result::err).collect();
    if errors.is_empty() { Ok(()) } else { Err(AzureError::Some { total: vms.len(), errors }) }
}
