//! The body of the PUT that creates (or changes) one node's VM.
//!
//! Written as the JSON of the ARM documentation, then read into `azure_mgmt_compute`'s
//! `VirtualMachine` model, so that what is sent is both recognisable and checked against the
//! crate's schema. Everything the VM needs is declared inline so that only Microsoft.Compute is
//! called: the NIC through `networkInterfaceConfigurations` (Compute creates it in the subnet),
//! the data disks as empty managed disks. Every dependent resource has `deleteOption: Delete`,
//! so deleting the VM deletes its NIC and disks and `deprovision` leaves nothing behind.

use crate::plan::ExistingVm;
use crate::{AzureError, CLUSTER_TAG, NODE_TAG};
use azure_mgmt_compute::package_2024_07_01::models::VirtualMachine;
use pvfs_config::azure::{Azure, AzureVm};
use serde_json::{Value, json};

/// The storage account type of Ultra Disks.
pub const ULTRA: &str = "UltraSSD_LRS";

/// The only `networkApiVersion` the 2024-07-01 Compute API accepts.
const NIC_API_VERSION: &str = "2020-11-01";

/// The name of the NIC Compute creates for `node` (and of its configuration).
pub fn nic_name(node: &str) -> String {
    format!("{node}-nic")
}

/// The name of `node`'s data disk at `lun`.
pub fn data_disk_name(node: &str, lun: u32) -> String {
    format!("{node}-data{lun:02}")
}

/// The JSON body that creates `vm` for cluster `cluster`.
pub fn vm_json(cluster: &str, azure: &Azure, vm: &AzureVm) -> Value {
    let disks: Vec<Value> = (0..vm.data_disks.count)
        .map(|lun| {
            json!({
                "lun": lun,
                "name": data_disk_name(&vm.node, lun),
                "createOption": "Empty",
                "diskSizeGB": vm.data_disks.size_gib,
                "caching": vm.data_disks.caching.as_str(),
                "managedDisk": { "storageAccountType": vm.data_disks.sku },
                "deleteOption": "Delete",
            })
        })
        .collect();
    let mut body = json!({
        "location": azure.location,
        "tags": { CLUSTER_TAG: cluster, NODE_TAG: vm.node },
        "properties": {
            "hardwareProfile": { "vmSize": vm.size },
            "storageProfile": {
                "imageReference": {
                    "publisher": vm.image.publisher,
                    "offer": vm.image.offer,
                    "sku": vm.image.sku,
                    "version": vm.image.version,
                },
                // StandardSSD: valid on every size, premium-capable or not; the OS disk is not
                // where the file system's data goes.
                "osDisk": {
                    "name": format!("{}-os", vm.node),
                    "createOption": "FromImage",
                    "caching": "ReadWrite",
                    "managedDisk": { "storageAccountType": "StandardSSD_LRS" },
                    "deleteOption": "Delete",
                },
                "dataDisks": disks,
            },
            "osProfile": {
                "computerName": vm.node,
                "adminUsername": azure.admin_user,
                "linuxConfiguration": {
                    "disablePasswordAuthentication": true,
                    "ssh": { "publicKeys": [{
                        "path": format!("/home/{}/.ssh/authorized_keys", azure.admin_user),
                        "keyData": azure.ssh_public_key.trim(),
                    }] },
                },
            },
            "networkProfile": {
                "networkApiVersion": NIC_API_VERSION,
                "networkInterfaceConfigurations": [{
                    "name": nic_name(&vm.node),
                    "properties": {
                        "primary": true,
                        "deleteOption": "Delete",
                        "enableAcceleratedNetworking": vm.accelerated_networking,
                        "ipConfigurations": [{
                            "name": "ipconfig1",
                            "properties": { "primary": true, "subnet": { "id": azure.subnet } },
                        }],
                    },
                }],
            },
        },
    });
    if let Some(zone) = &vm.zone {
        body["zones"] = json!([zone]);
    }
    // "Managed disks with storage account type UltraSSD_LRS can be added to a virtual machine
    // … only if this property is enabled" (the spec's AdditionalCapabilities.ultraSSDEnabled);
    // ARM answers 400 InvalidParameter without it. (Premium SSD v2 needs no flag, only the
    // zone that validate requires for both.)
    if vm.data_disks.count > 0 && vm.data_disks.sku == ULTRA {
        body["properties"]["additionalCapabilities"] = json!({ "ultraSSDEnabled": true });
    }
    if let Some(ppg) = &vm.proximity_placement_group {
        body["properties"]["proximityPlacementGroup"] = json!({ "id": ppg });
    }
    body
}

/// The body that changes the existing VM `existing` to `vm`: as [`vm_json`], except that
/// - the data disks it already has are attached by ID rather than created again (only new LUNs
///   are created empty);
/// - its `osProfile` is the one ARM gave for the VM, sent back as it is, never the file's: ARM
///   refuses a change there (409 `PropertyChangeNotAllowed`, "Changing property
///   'linuxConfiguration.ssh.publicKeys' is not allowed"; the spec's OSProfile: "some of the
///   settings cannot be changed once VM is provisioned"), so a new key in the cluster file would
///   make every resize fail. Sending the model back as read is what Azure's own CLI does for a
///   resize (`az vm resize`: GET, set the size, PUT). A VM that has no OS profile (made from a
///   specialized disk) gets none.
pub fn change_json(cluster: &str, azure: &Azure, vm: &AzureVm, existing: &ExistingVm) -> Value {
    let mut body = vm_json(cluster, azure, vm);
    match &existing.os_profile {
        Some(profile) => body["properties"]["osProfile"] = profile.clone(),
        None => drop(body["properties"].as_object_mut().map(|p| p.remove("osProfile"))),
    }
    if let Some(disks) = body["properties"]["storageProfile"]["dataDisks"].as_array_mut() {
        for disk in disks.iter_mut() {
            let lun = disk["lun"].as_u64();
            if let Some(old) = existing.data_disks.iter().find(|d| d["lun"].as_u64() == lun)
                && let Some(id) = old["managedDisk"]["id"].as_str()
            {
                disk["createOption"] = json!("Attach");
                disk["managedDisk"]["id"] = json!(id);
            }
        }
    }
    body
}

/// `json` read into the crate's model: the typed parameter of `create_or_update`.
pub fn typed(node: &str, json: Value) -> Result<VirtualMachine, AzureError> {
    serde_json::from_value(json).map_err(|e| AzureError::Unexpected {
        resource: node.into(),
        operation: "building the VM body".into(),
        detail: format!("azure_mgmt_compute's model refuses it: {e}"),
    })
}
