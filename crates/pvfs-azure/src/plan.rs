//! What `provision` would do: the VMs the cluster file asks for against the VMs already in the
//! resource group, each to create, change or leave — or refused, when it cannot be changed in
//! place without losing something.
//!
//! A VM whose provisioning state is `Failed` is changed even when its model matches: "a
//! provisioning state is the status of a user-initiated, control-plane operation on the VM"
//! (Azure's VM states documentation), so `Failed` says the last operation on the model failed,
//! and a PUT of the model is a new operation that ARM carries out from where the VM is. What ARM cannot change on an existing VM (its OS profile: administrator,
//! SSH keys, computer name — "some of the settings cannot be changed once VM is provisioned",
//! the spec's OSProfile) is never sent changed: the plan says when the file differs there.

use crate::{CLUSTER_TAG, NODE_TAG};
use pvfs_config::azure::{Azure, AzureVm};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// A VM as ARM reported it, reduced to what pvfs compares.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExistingVm {
    pub name: String,
    pub id: String,
    pub tags: BTreeMap<String, String>,
    pub size: String,
    pub zone: Option<String>,
    /// `publisher:offer:sku`.
    pub image: Option<String>,
    /// The data disks as ARM gives them (LUN, size, SKU, caching, the managed disk's ID).
    #[serde(skip)]
    pub data_disks: Vec<Value>,
    pub provisioning_state: Option<String>,
    /// The IDs of its NICs, primary first.
    pub nics: Vec<String>,
    /// Its `osProfile` as ARM gave it (no password or custom data: ARM never returns them);
    /// what a change sends back unchanged.
    #[serde(skip)]
    pub os_profile: Option<Value>,
}

impl ExistingVm {
    /// From a VM's JSON (the model serialized back, or an ARM body).
    pub fn from_json(vm: &Value) -> ExistingVm {
        let s = |v: &Value| v.as_str().map(str::to_string);
        let props = &vm["properties"];
        let tags = vm["tags"]
            .as_object()
            .map(|t| t.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect())
            .unwrap_or_default();
        let image = &props["storageProfile"]["imageReference"];
        let mut nics: Vec<(bool, String)> = props["networkProfile"]["networkInterfaces"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|n| {
                        Some((n["properties"]["primary"].as_bool().unwrap_or(false), s(&n["id"])?))
                    })
                    .collect()
            })
            .unwrap_or_default();
        nics.sort_by_key(|(primary, _)| !primary);
        ExistingVm {
            name: s(&vm["name"]).unwrap_or_default(),
            id: s(&vm["id"]).unwrap_or_default(),
            tags,
            size: s(&props["hardwareProfile"]["vmSize"]).unwrap_or_default(),
            zone: vm["zones"].as_array().and_then(|z| z.first()).and_then(s),
            image: match (s(&image["publisher"]), s(&image["offer"]), s(&image["sku"])) {
                (Some(p), Some(o), Some(k)) => Some(format!("{p}:{o}:{k}")),
                _ => None,
            },
            data_disks: props["storageProfile"]["dataDisks"].as_array().cloned().unwrap_or_default(),
            provisioning_state: s(&props["provisioningState"]),
            nics: nics.into_iter().map(|(_, id)| id).collect(),
            os_profile: props.get("osProfile").filter(|p| p.is_object()).cloned(),
        }
    }

    /// The `keyData` of its SSH public keys.
    pub fn ssh_keys(&self) -> Vec<&str> {
        self.os_profile
            .as_ref()
            .and_then(|p| p["linuxConfiguration"]["ssh"]["publicKeys"].as_array())
            .map(|keys| keys.iter().filter_map(|k| k["keyData"].as_str()).collect())
            .unwrap_or_default()
    }

    /// Whether it carries `cluster`'s tag.
    pub fn belongs_to(&self, cluster: &str) -> bool {
        self.tags.get(CLUSTER_TAG).map(String::as_str) == Some(cluster)
    }
}

/// What to do with one node's VM.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", content = "why", rename_all = "snake_case")]
pub enum Action {
    Create,
    /// Changes ARM makes in place (a new size, more data disks), described.
    Change(Vec<String>),
    Leave,
    /// Cannot be made to match without deleting something; why, and what to do.
    Refuse(String),
}

/// One node's line of the plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Item {
    pub node: String,
    #[serde(flatten)]
    pub action: Action,
    #[serde(skip)]
    pub vm: AzureVm,
    /// The VM as it is, when it exists.
    #[serde(skip)]
    pub existing: Option<ExistingVm>,
    /// What the operator should know that the plan does not change (an SSH key ARM cannot
    /// replace on an existing VM).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The whole plan, in cluster-file order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    pub cluster: String,
    pub location: String,
    pub resource_group: String,
    pub items: Vec<Item>,
    /// VMs tagged with this cluster that the file no longer has: left alone (`deprovision`
    /// removes them), listed so that they are not forgotten.
    pub extra: Vec<String>,
}

impl Plan {
    /// Compares what `azure` asks for with `existing`, the resource group's VMs.
    pub fn make(cluster: &str, azure: &Azure, existing: &[ExistingVm]) -> Plan {
        let items = azure
            .vms
            .iter()
            .map(|vm| {
                let found = existing.iter().find(|e| e.name.eq_ignore_ascii_case(&vm.node));
                let action = match found {
                    None => Action::Create,
                    Some(e) if !e.belongs_to(cluster) => Action::Refuse(format!(
                        "a VM named {} already exists in resource group {} without the tag {CLUSTER_TAG}={cluster} (it is not this cluster's): rename the node or use another resource group",
                        e.name, azure.resource_group
                    )),
                    Some(e) => compare(vm, e),
                };
                let notes = found.filter(|e| e.belongs_to(cluster)).map(|e| notes(azure, e)).unwrap_or_default();
                Item { node: vm.node.clone(), action, vm: vm.clone(), existing: found.cloned(), notes }
            })
            .collect();
        let extra = existing
            .iter()
            .filter(|e| {
                e.belongs_to(cluster) && !azure.vms.iter().any(|vm| vm.node.eq_ignore_ascii_case(&e.name))
            })
            .map(|e| e.name.clone())
            .collect();
        Plan {
            cluster: cluster.into(),
            location: azure.location.clone(),
            resource_group: azure.resource_group.clone(),
            items,
            extra,
        }
    }

    /// The refusals, each naming its node.
    pub fn refusals(&self) -> Vec<String> {
        self.items
            .iter()
            .filter_map(|i| match &i.action {
                Action::Refuse(why) => Some(format!("{}: {why}", i.node)),
                _ => None,
            })
            .collect()
    }

    fn count(&self, pick: fn(&Action) -> bool) -> usize {
        self.items.iter().filter(|i| pick(&i.action)).count()
    }
}

/// What differs between the wanted `vm` and the existing `e` (same cluster, same name).
fn compare(vm: &AzureVm, e: &ExistingVm) -> Action {
    let mut refuse = Vec::new();
    let mut change = Vec::new();
    if e.zone != vm.zone {
        refuse.push(format!(
            "it is in zone {} and the file asks for zone {} (a VM cannot move zones)",
            e.zone.as_deref().unwrap_or("none"),
            vm.zone.as_deref().unwrap_or("none")
        ));
    }
    let want_image = format!("{}:{}:{}", vm.image.publisher, vm.image.offer, vm.image.sku);
    if let Some(image) = &e.image
        && !image.eq_ignore_ascii_case(&want_image)
    {
        refuse.push(format!(
            "it runs image {image} and the file asks for {want_image} (the OS disk would be replaced)"
        ));
    }
    let have = e.data_disks.len() as u32;
    let want = &vm.data_disks;
    if have > want.count {
        refuse.push(format!(
            "it has {have} data disks and the file asks for {} (pvfs never detaches a disk: it may hold data)",
            want.count
        ));
    }
    for disk in &e.data_disks {
        let lun = disk["lun"].as_u64().unwrap_or(0);
        let size = disk["diskSizeGB"].as_u64().unwrap_or(0);
        let sku = disk["managedDisk"]["storageAccountType"].as_str().unwrap_or("");
        if lun < u64::from(want.count)
            && (size != u64::from(want.size_gib) || !sku.eq_ignore_ascii_case(&want.sku))
        {
            refuse.push(format!(
                "its data disk at LUN {lun} is {size} GiB {sku} and the file asks for {} GiB {} (disks are not resized or converted)",
                want.size_gib, want.sku
            ));
        }
    }
    if !refuse.is_empty() {
        return Action::Refuse(format!(
            "{}; deprovision it (or change the file back) first",
            refuse.join("; ")
        ));
    }
    if e.provisioning_state.as_deref().is_some_and(|s| s.eq_ignore_ascii_case("Failed")) {
        change.push(
            "its provisioning state is Failed (its last operation failed): its model is sent again, and ARM retries it \
             (if it fails again, ARM's error says why; `pvfsctl deprovision` and provision again re-create it)"
                .into(),
        );
    }
    if !e.size.eq_ignore_ascii_case(&vm.size) {
        change.push(format!("size {} → {} (ARM restarts the VM)", e.size, vm.size));
    }
    if have < want.count {
        change.push(format!("add data disks at LUN {have}..{}", want.count - 1));
    }
    if change.is_empty() { Action::Leave } else { Action::Change(change) }
}

/// What differs in the existing VM's OS profile, which ARM does not let a PUT change
/// (`PropertyChangeNotAllowed`): said, and left as it is.
fn notes(azure: &Azure, e: &ExistingVm) -> Vec<String> {
    let Some(profile) = &e.os_profile else { return Vec::new() };
    let mut notes = Vec::new();
    // The key type and its base64: the comment after them is not part of the key.
    let key = |line: &str| line.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
    let wanted = key(&azure.ssh_public_key);
    let keys = e.ssh_keys();
    if !keys.is_empty() && !keys.iter().any(|k| key(k) == wanted) {
        notes.push(format!(
            "its SSH key is not the one in ssh_public_key_file, and ARM cannot change it on an existing VM (409 \
             PropertyChangeNotAllowed on linuxConfiguration.ssh.publicKeys): a change keeps the VM's key. To log in \
             with the new one, add it with the VM access extension (`az vm user update -g {} -n {} -u {} \
             --ssh-key-value FILE`), or deprovision the VM and provision it again",
            azure.resource_group, e.name, azure.admin_user
        ));
    }
    if let Some(admin) = profile["adminUsername"].as_str()
        && admin != azure.admin_user
    {
        notes.push(format!(
            "its administrator is {admin} and the file says {}, which ARM cannot change on an existing VM: log in as \
             {admin} (bootstrap --ssh-user {admin}), or deprovision the VM and provision it again",
            azure.admin_user
        ));
    }
    notes
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "cluster {} in {} (resource group {}): {} to create, {} to change, {} left, {} refused",
            self.cluster,
            self.location,
            self.resource_group,
            self.count(|a| matches!(a, Action::Create)),
            self.count(|a| matches!(a, Action::Change(_))),
            self.count(|a| matches!(a, Action::Leave)),
            self.count(|a| matches!(a, Action::Refuse(_))),
        )?;
        for item in &self.items {
            let vm = &item.vm;
            let verb = match &item.action {
                Action::Create => "create",
                Action::Change(_) => "change",
                Action::Leave => "leave",
                Action::Refuse(_) => "REFUSE",
            };
            let disks = if vm.data_disks.count == 0 {
                "no data disks".to_string()
            } else {
                format!(
                    "{} × {} GiB {} (caching {}) at LUN 0..{}",
                    vm.data_disks.count,
                    vm.data_disks.size_gib,
                    vm.data_disks.sku,
                    vm.data_disks.caching.as_str(),
                    vm.data_disks.count - 1
                )
            };
            writeln!(
                f,
                "  {verb:<6} {:<12} {:<18} zone {:<4} {disks}; image {}; accelerated networking {}{}",
                vm.node,
                vm.size,
                vm.zone.as_deref().unwrap_or("-"),
                vm.image,
                if vm.accelerated_networking { "on" } else { "off" },
                vm.proximity_placement_group
                    .as_deref()
                    .map(|p| format!("; placement group {}", short(p)))
                    .unwrap_or_default(),
            )?;
            match &item.action {
                Action::Change(what) => writeln!(f, "         {}", what.join("; "))?,
                Action::Refuse(why) => writeln!(f, "         {why}")?,
                _ => {}
            }
            for note in &item.notes {
                writeln!(f, "         note: {note}")?;
            }
        }
        for name in &self.extra {
            writeln!(
                f,
                "  extra  {name}: tagged {CLUSTER_TAG}={} but not in the cluster file; left alone (`pvfsctl deprovision` deletes it)",
                self.cluster
            )?;
        }
        Ok(())
    }
}

/// The last segment of an ARM ID (its name).
pub(crate) fn short(id: &str) -> &str {
    id.rsplit('/').next().unwrap_or(id)
}

/// The node tag of a VM, else its name.
pub(crate) fn node_of(vm: &ExistingVm) -> &str {
    vm.tags.get(NODE_TAG).map(String::as_str).unwrap_or(&vm.name)
}
