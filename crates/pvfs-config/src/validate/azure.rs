//! `[azure]`: its values checked against ARM's shapes and limits, resolved into one
//! [`AzureVm`] per node; and node addresses read from the state file `provision` writes.

use super::Validator;
use crate::azure::{Azure, AzureVm, Caching, DataDisks, ImageRef, State, state_path};
use crate::load::Addresses;
use crate::model::{Address, Host, Kind, Node, Role};
use crate::schema::{AzureRoleSection, AzureSection, ClusterFile, DataDisksSection, NodeSpec};
use crate::suggest::closest;
use std::net::{IpAddr, Ipv4Addr};
use toml::Spanned;

/// The seed's VM size (seed 000: "The DS14v2 size was used for its balance of performance and
/// cost").
pub(crate) const DEFAULT_VM_SIZE: &str = "Standard_DS14_v2";
/// The seed's image: "Lustre 2.9.0 on an OpenLogic CentOS 7.3 image from the Azure
/// Marketplace" (seed 000), the release whose kernel (3.10.0-514) Lustre 2.9.0's packages
/// are built for.
pub(crate) const DEFAULT_IMAGE: &str = "OpenLogic:CentOS:7.3:latest";
/// A P30, the seed's data disk ("10 additional P30 data disks of 1 terabyte").
const DEFAULT_DISK_GIB: u32 = 1024;
const DEFAULT_DISK_SKU: &str = "Premium_LRS";
/// ARM's managed disk sizes.
const DISK_GIB: std::ops::RangeInclusive<u32> = 4..=32767;
/// The most data disks any VM size takes (M-series); a size's own limit is ARM's to enforce.
const MAX_DATA_DISKS: u32 = 64;
/// ARM's `storageAccountType`s for managed data disks.
const DISK_SKUS: &[&str] = &[
    "Standard_LRS",
    "StandardSSD_LRS",
    "StandardSSD_ZRS",
    "Premium_LRS",
    "Premium_ZRS",
    "PremiumV2_LRS",
    "UltraSSD_LRS",
];
/// The disk SKUs ARM attaches only to a VM in an availability zone: an Ultra Disk or a Premium
/// SSD v2 is a zonal resource, created in the VM's zone ("Premium SSD v2 disks can only be
/// attached to zonal VMs", Azure's "Deploy a Premium SSD v2"; an Ultra Disk also needs the VM's
/// `additionalCapabilities.ultraSSDEnabled`, which `provision` sets). A zone is asked for rather
/// than picked: which zones offer Ultra Disks for a size is the region's answer (`provision`
/// checks it against the SKU list), and the zone cannot be changed once the VM exists. (Azure
/// now also offers both without a zone in regions that have none, and Premium SSD v2 in a few
/// that do; pvfs still asks for a zone there — strict, never wrong for a region with zones.)
const ZONAL_DISK_SKUS: &[&str] = &["UltraSSD_LRS", "PremiumV2_LRS"];
/// The by-LUN names Azure's udev rules give data disks (waagent's 66-azure-storage.rules).
const LUN_PREFIX: &str = "/dev/disk/azure/scsi1/lun";

/// Where a node whose address is not known yet points: the unspecified address, which no
/// agent listens on (see `Provisioning::unaddressed`).
pub(super) fn unknown_address() -> Address {
    Address { host: Host::Ip(IpAddr::V4(Ipv4Addr::UNSPECIFIED)), port: crate::DEFAULT_AGENT_PORT }
}

/// One role's settings (or one node's override), each checked; `None` where not given.
#[derive(Default)]
struct Settings {
    size: Option<String>,
    image: Option<ImageRef>,
    data_disks: Option<DataDisks>,
    accelerated_networking: Option<bool>,
    zone: Option<String>,
    proximity_placement_group: Option<String>,
    /// `data_disks` was given but refused (reported): the node's disks are not checked
    /// against a count that is not known.
    disks_refused: bool,
    /// Where `data_disks` was given (its `sku`, else the table) and in which section, for
    /// errors about the disks as a whole.
    disks_at: Option<(std::ops::Range<usize>, String)>,
}

impl Validator<'_> {
    /// The address `provision` recorded for a node the cluster file gives none, or `None`
    /// (reported unless the file may be provisioned first).
    pub(super) fn state_address(&mut self, name: &str, spec: &NodeSpec) -> Option<Address> {
        // The [azure] section did not deserialize (reported): its nodes are checked without.
        if self.incomplete.section("azure") {
            return None;
        }
        let path = state_path(self.path);
        let state = self.state.get_or_insert_with(|| State::read(&path).map_err(|e| Some(e.to_string())));
        match state {
            Ok(state) => {
                if let Some(node) = state.node.get(name) {
                    return Some(Address { host: Host::Ip(node.address), port: crate::DEFAULT_AGENT_PORT });
                }
            }
            Err(why) => {
                // Reported once, at the first node that needed it.
                if let Some(why) = why.take() {
                    self.error(
                        &spec.name,
                        format!("node {name:?} has no address in the cluster file: {why}"),
                    );
                }
                return None;
            }
        }
        match self.context.addresses {
            Addresses::MayBeUnknown => self.unaddressed.push(name.to_owned()),
            Addresses::Required => self.error(
                &spec.name,
                format!(
                    "node {name} has no address: the cluster file gives none and {} has none; run `pvfsctl provision {}` first",
                    path.display(),
                    self.path.display()
                ),
            ),
        }
        None
    }

    /// `[azure]`, resolved per node; `None` without one.
    pub(super) fn azure(
        &mut self,
        kind: Option<Kind>,
        file: &ClusterFile,
        nodes: &[(Node, &NodeSpec)],
    ) -> Option<Azure> {
        let Some(s) = file.azure.as_ref() else {
            if !self.incomplete.section("azure") {
                for (node, spec) in nodes.iter().filter(|(_, spec)| spec.azure.is_some()) {
                    self.error(
                        &spec.name,
                        format!(
                            "node {:?} has `azure` settings but the file has no [azure] section: add one, or drop them",
                            node.name
                        ),
                    );
                }
            }
            return None;
        };
        self.check(&s.subscription, |v| guid("subscription", v));
        self.check(&s.resource_group, |v| resource_group("resource_group", v));
        self.check(&s.location, location);
        if self.check(&s.subnet, subnet) {
            let in_sub = s.subnet.get_ref().split('/').nth(2).unwrap_or_default();
            let sub = s.subscription.get_ref();
            if guid("", sub).is_ok() && !in_sub.eq_ignore_ascii_case(sub) {
                self.error(
                    &s.subnet,
                    format!(
                        "the subnet is in subscription {in_sub} but [azure] subscription is {sub}: a VM's NIC joins \
                         a subnet of its own subscription"
                    ),
                );
            }
        }
        self.check(&s.admin_user, admin_user);
        let ssh_public_key = self.ssh_public_key(&s.ssh_public_key_file).unwrap_or_default();

        let roles = self.azure_roles(kind, s);
        let vms = nodes.iter().filter_map(|(node, spec)| self.azure_vm(node, spec, &roles)).collect();
        Some(Azure {
            subscription: s.subscription.get_ref().clone(),
            resource_group: s.resource_group.get_ref().clone(),
            location: s.location.get_ref().clone(),
            subnet: s.subnet.get_ref().clone(),
            admin_user: s.admin_user.get_ref().clone(),
            ssh_public_key,
            vms,
        })
    }

    /// `[azure.role.ROLE]` sections, each for a role of the cluster's kind.
    fn azure_roles(&mut self, kind: Option<Kind>, s: &AzureSection) -> Vec<(Role, Settings)> {
        let mut roles: Vec<(Role, Settings)> = Vec::new();
        for (key, section) in &s.role {
            let place = format!("[azure.role.{}]", key.get_ref());
            let settings = self.settings(section, &place);
            let given = key.get_ref().as_str();
            match given.parse::<Role>() {
                Ok(role) if kind.is_none_or(|k| k.roles().contains(&role)) => roles.push((role, settings)),
                Ok(_) => {
                    let valid: Vec<&str> =
                        kind.map_or(&[][..], |k| k.roles()).iter().map(|r| r.as_str()).collect();
                    self.error(
                        key,
                        format!(
                            "{place}: role {given:?} is not valid for kind {}: use {}",
                            kind.map_or("", |k| k.as_str()),
                            valid.join(", ")
                        ),
                    );
                }
                Err(()) => {
                    let all: Vec<&'static str> =
                        kind.map_or(&Role::ALL[..], |k| k.roles()).iter().map(|r| r.as_str()).collect();
                    let hint =
                        closest(given, &all).map(|r| format!("; did you mean {r:?}?")).unwrap_or_default();
                    self.error(
                        key,
                        format!("{place}: unknown role {given:?}: roles are {}{hint}", all.join(", ")),
                    );
                }
            }
        }
        roles
    }

    /// One node's VM: its own settings over its role's (exactly one role must describe it),
    /// its LUN disks within the VM's data disks, zonal disk SKUs only in a zone.
    fn azure_vm(&mut self, node: &Node, spec: &NodeSpec, roles: &[(Role, Settings)]) -> Option<AzureVm> {
        let own = spec.azure.as_ref().map(|o| self.settings(o, &format!("node {:?}'s azure", node.name)));
        let with: Vec<&(Role, Settings)> = roles.iter().filter(|(r, _)| node.roles.contains(r)).collect();
        let settings = match with.as_slice() {
            [one] => &one.1,
            [] => {
                // A node whose roles were all refused has had its errors.
                if let Some(role) = node.roles.first() {
                    let names: Vec<&str> = node.roles.iter().map(|r| r.as_str()).collect();
                    self.error(
                        &spec.roles,
                        format!(
                            "node {:?} has role {} but [azure] has no [azure.role.{role}]: add one, so that \
                             provision knows what VM the node is",
                            node.name,
                            names.join(" and ")
                        ),
                    );
                }
                return None;
            }
            several => {
                let names: Vec<String> = several.iter().map(|(r, _)| format!("[azure.role.{r}]")).collect();
                self.error(
                    &spec.roles,
                    format!(
                        "node {:?} is described by {}: a node is one VM, so give the settings in one of them",
                        node.name,
                        names.join(" and ")
                    ),
                );
                return None;
            }
        };
        // The node's own setting, else its role's.
        macro_rules! pick {
            ($field:ident) => {
                own.as_ref().and_then(|o| o.$field.clone()).or_else(|| settings.$field.clone())
            };
        }
        let data_disks = pick!(data_disks).unwrap_or(DataDisks {
            count: 0,
            size_gib: DEFAULT_DISK_GIB,
            sku: DEFAULT_DISK_SKU.to_owned(),
            caching: Caching::None,
        });
        let disks_refused = match &own {
            Some(own) if own.data_disks.is_some() || own.disks_refused => own.disks_refused,
            _ => settings.disks_refused,
        };
        // The node's `disks` by LUN name must be disks its VM has.
        for disk in spec.disks.iter().filter(|_| !disks_refused) {
            let lun = disk.get_ref().strip_prefix(LUN_PREFIX).and_then(|n| n.parse::<u32>().ok());
            if let Some(lun) = lun.filter(|&lun| lun >= data_disks.count) {
                let has = match data_disks.count {
                    0 => "no data disks".to_owned(),
                    1 => "1 data disk (LUN 0)".to_owned(),
                    n => format!("{n} data disks (LUNs 0 to {})", n - 1),
                };
                self.error(
                    disk,
                    format!(
                        "node {:?} lists LUN {lun} but its VM has {has}: raise data_disks' count or drop the disk",
                        node.name
                    ),
                );
            }
        }
        let zone = pick!(zone);
        if zone.is_none() && data_disks.count > 0 && ZONAL_DISK_SKUS.contains(&data_disks.sku.as_str()) {
            let at = match &own {
                Some(own) if own.data_disks.is_some() => own.disks_at.clone(),
                _ => settings.disks_at.clone(),
            };
            if let Some((span, place)) = at {
                self.error_at(
                    span,
                    format!(
                        "node {:?}: {} disks attach only to a VM in an availability zone, and its VM has none: add \
                         zone = \"1\" (or \"2\", \"3\": one where its size offers them) to {place}",
                        node.name, data_disks.sku
                    ),
                );
            }
        }
        Some(AzureVm {
            node: node.name.clone(),
            size: pick!(size).unwrap_or_else(|| DEFAULT_VM_SIZE.to_owned()),
            image: pick!(image).unwrap_or_else(|| image(DEFAULT_IMAGE).expect("the default parses")),
            data_disks,
            accelerated_networking: pick!(accelerated_networking).unwrap_or(false),
            zone,
            proximity_placement_group: pick!(proximity_placement_group),
        })
    }

    /// One `[azure.role.ROLE]` (or a node's `azure = { … }`), each value checked.
    fn settings(&mut self, s: &AzureRoleSection, place: &str) -> Settings {
        let mut out = Settings { accelerated_networking: s.accelerated_networking, ..Settings::default() };
        if let Some(size) = &s.vm_size
            && self.check(size, |v| vm_size(place, v))
        {
            out.size = Some(size.get_ref().clone());
        }
        if let Some(urn) = &s.image {
            match image(urn.get_ref()) {
                Ok(parsed) => out.image = Some(parsed),
                Err(why) => self.error(urn, format!("{place}: {why}")),
            }
        }
        if let Some(disks) = &s.data_disks {
            out.data_disks = self.data_disks(disks, place);
            out.disks_refused = out.data_disks.is_none();
            let span = disks.get_ref().sku.as_ref().map_or(disks.span(), |sku| sku.span());
            out.disks_at = Some((span, place.to_owned()));
        }
        if let Some(zone) = &s.zone {
            if ["1", "2", "3"].contains(&zone.get_ref().as_str()) {
                out.zone = Some(zone.get_ref().clone());
            } else {
                self.error(
                    zone,
                    format!(
                        "{place}: zone {:?} is not an availability zone: use \"1\", \"2\" or \"3\"",
                        zone.get_ref()
                    ),
                );
            }
        }
        if let Some(group) = &s.proximity_placement_group
            && self.check(group, proximity_placement_group)
        {
            out.proximity_placement_group = Some(group.get_ref().clone());
        }
        out
    }

    fn data_disks(&mut self, d: &Spanned<DataDisksSection>, place: &str) -> Option<DataDisks> {
        let d = d.get_ref();
        let mut ok = true;
        let count = *d.count.get_ref();
        if count > MAX_DATA_DISKS {
            self.error(&d.count, format!("{place}: {count} data disks: a VM takes at most {MAX_DATA_DISKS}"));
            ok = false;
        }
        let size_gib = d.size_gib.as_ref().map_or(DEFAULT_DISK_GIB, |s| *s.get_ref());
        if let Some(size) = d.size_gib.as_ref().filter(|s| !DISK_GIB.contains(s.get_ref())) {
            self.error(
                size,
                format!(
                    "{place}: a managed disk is {} to {} GiB, not {}",
                    DISK_GIB.start(),
                    DISK_GIB.end(),
                    size.get_ref()
                ),
            );
            ok = false;
        }
        let sku = d.sku.as_ref().map_or(DEFAULT_DISK_SKU, |s| s.get_ref().as_str());
        if let Some(given) = d.sku.as_ref().filter(|s| !DISK_SKUS.contains(&s.get_ref().as_str())) {
            let hint = closest(given.get_ref(), DISK_SKUS)
                .map(|c| format!("; did you mean {c:?}?"))
                .unwrap_or_default();
            self.error(
                given,
                format!(
                    "{place}: unknown disk SKU {:?}: use one of {}{hint}",
                    given.get_ref(),
                    DISK_SKUS.join(", ")
                ),
            );
            ok = false;
        }
        let caching = match d.caching.as_ref().map(|c| (c, c.get_ref().as_str())) {
            None | Some((_, "None")) => Caching::None,
            Some((_, "ReadOnly")) => Caching::ReadOnly,
            Some((_, "ReadWrite")) => Caching::ReadWrite,
            Some((at, other)) => {
                self.error(
                    at,
                    format!(
                        "{place}: caching {other:?} is not ARM's: use \"None\", \"ReadOnly\" or \"ReadWrite\""
                    ),
                );
                return None;
            }
        };
        if let Some(at) = d.caching.as_ref().filter(|_| caching != Caching::None) {
            // ARM refuses host caching on these rather than ignoring it.
            if sku == "UltraSSD_LRS" || sku == "PremiumV2_LRS" {
                self.error(at, format!("{place}: {sku} disks take no host caching: use caching = \"None\""));
                ok = false;
            } else if size_gib >= 4096 {
                self.error(
                    at,
                    format!("{place}: Azure has no host caching for disks of 4 TiB and larger: use caching = \"None\""),
                );
                ok = false;
            }
        }
        ok.then(|| DataDisks { count, size_gib, sku: sku.to_owned(), caching })
    }

    /// The key line of `ssh_public_key_file`.
    fn ssh_public_key(&mut self, file: &Spanned<String>) -> Option<String> {
        if !self.check(file, |p| crate::grammar::no_control("ssh_public_key_file", p)) {
            return None;
        }
        let given = file.get_ref();
        let path = match given.strip_prefix('~') {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => match self.context.home {
                Some(home) => home.join(rest.trim_start_matches('/')),
                None => {
                    self.error(
                        file,
                        format!("ssh_public_key_file {given:?} starts with ~ but HOME is not set"),
                    );
                    return None;
                }
            },
            Some(_) => {
                self.error(
                    file,
                    format!("ssh_public_key_file {given:?}: only ~/ (your home) is expanded, not ~user"),
                );
                return None;
            }
            None => self.base.join(given),
        };
        let shown = path.display();
        match pvfs_host::local_file::read(&path, PUBLIC_KEY_FILE).map(String::from_utf8) {
            Ok(Ok(text)) => match ssh_public_key(&text) {
                Ok(key) => Some(key),
                Err(why) => {
                    self.error(file, format!("{shown}: {why}"));
                    None
                }
            },
            Ok(Err(_)) => {
                self.error(file, format!("{shown} is not text: give the .pub file of an OpenSSH key"));
                None
            }
            Err(err) => {
                let message = match err.into_io() {
                    Ok(err) => format!(
                        "cannot read ssh_public_key_file {shown}: {err}; make a key with `ssh-keygen -t ed25519` or \
                         name an existing .pub file"
                    ),
                    Err(refused) => refused.to_string(),
                };
                self.error(file, message);
                None
            }
        }
    }
}

/// The most of `ssh_public_key_file` read: an RSA key of 16384 bits is under 3 KiB.
const PUBLIC_KEY_FILE: pvfs_host::local_file::Cap =
    pvfs_host::local_file::Cap { what: "an SSH public key file", bytes: 16 << 10 };

/// A GUID as Azure writes IDs: 8-4-4-4-12 hexadecimal digits.
fn guid(what: &str, v: &str) -> Result<(), String> {
    let groups: Vec<&str> = v.split('-').collect();
    let lengths: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    if lengths == [8, 4, 4, 4, 12] && groups.iter().all(|g| g.chars().all(|c| c.is_ascii_hexdigit())) {
        Ok(())
    } else {
        Err(format!(
            "{what} {v:?} is not a GUID (8-4-4-4-12 hexadecimal digits): `az account show --query id -o tsv` prints it"
        ))
    }
}

/// ARM's resource group names: 1 to 90 letters, digits, '_', '-', '.', '(' and ')', not
/// ending in '.'.
fn resource_group(what: &str, v: &str) -> Result<(), String> {
    let valid = !v.is_empty()
        && v.len() <= 90
        && !v.ends_with('.')
        && v.chars().all(|c| c.is_ascii_alphanumeric() || "_-.()".contains(c));
    if valid {
        Ok(())
    } else {
        Err(format!(
            "{what} {v:?} is not a resource group name (1 to 90 letters, digits, '_', '-', '.', '(' or ')', not ending \
             in '.')"
        ))
    }
}

/// A region as ARM spells it: lowercase letters and digits (`eastus2`, `westeurope`).
fn location(v: &str) -> Result<(), String> {
    if !v.is_empty() && v.len() <= 40 && v.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        Ok(())
    } else {
        let spelled: String =
            v.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
        Err(format!(
            "location {v:?} is not a region as ARM spells it (lowercase letters and digits, e.g. {spelled:?}): \
             `az account list-locations --query [].name` lists them"
        ))
    }
}

/// An ARM resource ID of the form `/subscriptions/GUID/resourceGroups/RG/providers/` followed
/// by `path`'s (type, name) pairs. ARM compares the fixed segments case-insensitively.
fn arm_id(what: &str, v: &str, path: &[&str], example: &str) -> Result<(), String> {
    let fail = |why: &str| Err(format!("{what} {v:?} {why}: give its full ARM ID, {example}"));
    let segments: Vec<&str> = v.split('/').collect();
    let fixed = ["", "subscriptions", "", "resourceGroups", "", "providers"];
    if segments.len() != fixed.len() + path.len() {
        return fail("is not an ARM resource ID of that type");
    }
    for (i, want) in fixed.iter().chain(path).enumerate() {
        if !want.is_empty() && !segments[i].eq_ignore_ascii_case(want) {
            return fail(&format!("has {:?} where {want:?} belongs", segments[i]));
        }
    }
    if guid("", segments[2]).is_err() {
        return fail("does not name a subscription GUID");
    }
    if resource_group("", segments[4]).is_err() {
        return fail("does not name a valid resource group");
    }
    // The names after each type (the blanks of `path`): ARM's common rule for these resources.
    let names = path.iter().enumerate().filter(|(_, p)| p.is_empty()).map(|(i, _)| segments[fixed.len() + i]);
    for name in names {
        let valid = !name.is_empty()
            && name.len() <= 80
            && name.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
        if !valid {
            return fail(&format!(
                "has a name {name:?} that is not 1 to 80 letters, digits, '_', '-' or '.'"
            ));
        }
    }
    Ok(())
}

fn subnet(v: &str) -> Result<(), String> {
    arm_id(
        "subnet",
        v,
        &["Microsoft.Network", "virtualNetworks", "", "subnets", ""],
        "/subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Network/virtualNetworks/VNET/subnets/SUBNET \
         (`az network vnet subnet show -g RG --vnet-name VNET -n SUBNET --query id -o tsv`)",
    )
}

fn proximity_placement_group(v: &str) -> Result<(), String> {
    arm_id(
        "proximity_placement_group",
        v,
        &["Microsoft.Compute", "proximityPlacementGroups", ""],
        "/subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Compute/proximityPlacementGroups/NAME",
    )
}

/// Azure's rules for a Linux VM's administrator: 1 to 32 letters, digits, '_' and '-', not
/// starting with '-' or a digit, and none of the names ARM reserves.
fn admin_user(v: &str) -> Result<(), String> {
    const RESERVED: &[&str] = &[
        "administrator",
        "admin",
        "user",
        "user1",
        "test",
        "user2",
        "test1",
        "user3",
        "admin1",
        "1",
        "123",
        "a",
        "actuser",
        "adm",
        "admin2",
        "aspnet",
        "backup",
        "console",
        "david",
        "guest",
        "john",
        "owner",
        "root",
        "server",
        "sql",
        "support",
        "support_388945a0",
        "sys",
        "test2",
        "test3",
        "user4",
        "user5",
    ];
    let valid = !v.is_empty()
        && v.len() <= 32
        && !v.starts_with(|c: char| c == '-' || c.is_ascii_digit())
        && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid {
        return Err(format!(
            "admin_user {v:?} is not a Linux VM administrator name Azure takes: 1 to 32 letters, digits, '_' or '-', \
             not starting with '-' or a digit"
        ));
    }
    if RESERVED.contains(&v.to_ascii_lowercase().as_str()) {
        return Err(format!("admin_user {v:?} is a name Azure reserves: choose another, e.g. \"azureuser\""));
    }
    Ok(())
}

fn vm_size(place: &str, v: &str) -> Result<(), String> {
    let valid = (v.starts_with("Standard_") || v.starts_with("Basic_"))
        && v.len() <= 64
        && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "{place}: VM size {v:?} is not written as ARM names sizes, e.g. \"Standard_DS14_v2\" \
             (`az vm list-sizes -l LOCATION -o table`)"
        ))
    }
}

/// `publisher:offer:sku:version`, the Azure CLI's image URN.
fn image(v: &str) -> Result<ImageRef, String> {
    let parts: Vec<&str> = v.split(':').collect();
    let word = |w: &str| {
        !w.is_empty() && w.len() <= 128 && w.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    match parts.as_slice() {
        [publisher, offer, sku, version]
            if [publisher, offer, sku].iter().all(|w| word(w))
                && (*version == "latest"
                    || (word(version) && version.chars().all(|c| c.is_ascii_digit() || c == '.'))) =>
        {
            Ok(ImageRef {
                publisher: (*publisher).to_owned(),
                offer: (*offer).to_owned(),
                sku: (*sku).to_owned(),
                version: (*version).to_owned(),
            })
        }
        _ => Err(format!(
            "image {v:?} is not an image URN publisher:offer:sku:version (letters, digits, '-', '_', '.'; the version \
             \"latest\" or dotted numbers), e.g. {DEFAULT_IMAGE:?} (`az vm image list --all -p PUBLISHER -o table`)"
        )),
    }
}

/// The one OpenSSH public key of a `.pub` file, as the line Azure installs: `TYPE BASE64
/// [COMMENT]`, of a type Azure takes (RSA of 2048 bits or more, Ed25519), whose encoded key
/// names the same type.
pub(crate) fn ssh_public_key(text: &str) -> Result<String, String> {
    if text.contains("PRIVATE KEY") {
        return Err("this is a private key: name the public one (the .pub file next to it)".into());
    }
    let lines: Vec<&str> =
        text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let line = match lines.as_slice() {
        [one] => *one,
        [] => {
            return Err("holds no key: give the .pub file of an OpenSSH key (`ssh-keygen -t ed25519`)".into());
        }
        _ => return Err(format!("holds {} keys; Azure installs one: give a file with one key", lines.len())),
    };
    let mut words = line.split_whitespace();
    let (Some(kind), Some(blob)) = (words.next(), words.next()) else {
        return Err("is not an OpenSSH public key line (TYPE BASE64 [COMMENT])".into());
    };
    if !["ssh-rsa", "ssh-ed25519"].contains(&kind) {
        return Err(format!(
            "holds a {kind:?} key; Azure takes ssh-rsa (2048 bits or more) and ssh-ed25519 keys: make one with \
             `ssh-keygen -t ed25519`"
        ));
    }
    let bytes = base64(blob).ok_or("is not an OpenSSH public key line: its key is not base64")?;
    let mut fields = SshFields(&bytes);
    if fields.next() != Some(kind.as_bytes()) {
        return Err(format!("is damaged: its key does not encode a {kind} key"));
    }
    if kind == "ssh-rsa" {
        let (_e, n) = (fields.next(), fields.next().ok_or("is damaged: its RSA key has no modulus")?);
        // An mpint: big-endian, a leading zero byte when the top bit is set.
        let n = &n[n.iter().take_while(|&&b| b == 0).count()..];
        let bits = n.first().map_or(0, |top| (n.len() - 1) * 8 + (8 - top.leading_zeros() as usize));
        if bits < 2048 {
            return Err(format!(
                "holds a {bits}-bit RSA key; Azure takes 2048 bits or more: make one with `ssh-keygen -t ed25519`"
            ));
        }
    } else if fields.next().map(<[u8]>::len) != Some(32) {
        return Err("is damaged: an ed25519 key is 32 bytes".into());
    }
    Ok(line.to_owned())
}

/// The length-prefixed strings of an SSH wire-format key (RFC 4253, section 6.6).
struct SshFields<'a>(&'a [u8]);

impl<'a> Iterator for SshFields<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let len = u32::from_be_bytes(self.0.get(..4)?.try_into().ok()?) as usize;
        let field = self.0.get(4..4 + len)?;
        self.0 = &self.0[4 + len..];
        Some(field)
    }
}

/// Standard base64 with padding, as OpenSSH writes keys; `None` for anything else.
fn base64(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let bytes = text.as_bytes();
    if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
        return None;
    }
    let body = text.trim_end_matches('=');
    if bytes.len() - body.len() > 2 {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0);
    for &c in body.as_bytes() {
        acc = (acc << 6) | u32::from(value(c)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real `ssh-keygen -t ed25519` public key (its private half was thrown away).
    pub(crate) const ED25519: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINAgQPdA2fgB2gs++YENv63NBcKieyO71BfY/pmWwXdD pvfs-test";
    /// `ssh-keygen -t rsa -b 3072`'s.
    const RSA3072: &str = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQCtMg6EPX1290T/FEezWl+JyHgoworIAEjQAn4KBsZVkNYMh00XjtenqGq2rDVdz+FqoP3XBB6H/3kknm+jEW5Zrk94Fmfa6vg0qgJNsK7oq4g48cJ6Td+cOhD1myL7vIuWucjEIgeXOuE2tgXbPQ3UhZMOvcy6NnN7WOswUWo/klowXEi2go34VbOrO50GG8Ae3EIYVHtAIe2XtMFPiR3rmRthBRcI7/vsryq7J2diRmkN30dTD1g/W+bgf1dcFwO24LWpYYsBY2QsB9wrMrnh2GeEMGv2eFS1zT12tuIDBrY+3TKo37BCcQ1k5MH8DEe+dZmC6NbOW0Q4VsM9nYcikyYguMRuyiUwreo/wm6WcYT/EgkQ0kopoN4ayEyhVs2GYg1CRa8PrWopYpIE3Dk1foDgLX4wN7jnes0cA4TOuVt4mz+SqVTNHZeR3cPTH4YI3AnS+xjggrY7AYfq2xcp84H+AnyCK7hM7xjZCtfyQTQJG7ED/gKw0Y72Ggj69XU= pvfs-rsa";

    #[test]
    fn arm_shapes_are_checked() {
        assert!(guid("s", "0123abcd-0000-4000-8000-00000000000f").is_ok());
        assert!(guid("s", "0123abcd-0000-4000-8000-00000000000").is_err());
        assert!(guid("s", "0123abcd00004000800000000000000f").is_err());
        assert!(resource_group("rg", "pvfs-rg_1.(x)").is_ok());
        assert!(resource_group("rg", "pvfs.").is_err());
        assert!(location("eastus2").is_ok());
        assert!(location("East US").unwrap_err().contains("\"eastus\""));
        let sub = "0123abcd-0000-4000-8000-00000000000f";
        let good = format!(
            "/subscriptions/{sub}/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v/subnets/s"
        );
        assert!(subnet(&good).is_ok());
        assert!(subnet(&good.to_ascii_lowercase()).is_ok(), "ARM's fixed segments are case-insensitive");
        assert!(subnet(&good.replace("/subnets/s", "")).is_err());
        assert!(
            subnet(&good.replace("Microsoft.Network", "Microsoft.Compute")).unwrap_err().contains("where")
        );
        assert!(subnet(&good.replace("/s", "/s s")).is_err());
        let ppg = format!(
            "/subscriptions/{sub}/resourceGroups/rg/providers/Microsoft.Compute/proximityPlacementGroups/p"
        );
        assert!(proximity_placement_group(&ppg).is_ok());
        assert!(proximity_placement_group(&good).is_err());
        assert!(admin_user("azureuser").is_ok());
        assert!(admin_user("root").unwrap_err().contains("reserves"));
        assert!(admin_user("1x").is_err());
        assert!(vm_size("p", "Standard_DS14_v2").is_ok());
        assert!(vm_size("p", "DS14v2").is_err());
        assert_eq!(image("OpenLogic:CentOS:7.3:latest").unwrap().to_string(), "OpenLogic:CentOS:7.3:latest");
        assert!(image("Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:22.04.202401010").is_ok());
        assert!(image("OpenLogic:CentOS:7.3").is_err());
        assert!(image("OpenLogic:CentOS:7.3:newest").is_err());
    }

    #[test]
    fn public_keys_are_read_and_checked() {
        assert_eq!(ssh_public_key(&format!("# mine\n{ED25519}\n")).unwrap(), ED25519);
        assert_eq!(ssh_public_key(RSA3072).unwrap(), RSA3072);
        let cases = [
            ("-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n", "private key"),
            ("", "holds no key"),
            (&format!("{ED25519}\n{ED25519}\n"), "holds 2 keys"),
            ("ecdsa-sha2-nistp256 AAAA", "Azure takes ssh-rsa"),
            ("ssh-ed25519 not*base64", "not base64"),
            // An ed25519 blob declared as RSA.
            (&ED25519.replace("ssh-ed25519 ", "ssh-rsa "), "does not encode a ssh-rsa key"),
            // ssh-keygen -t rsa -b 1024's public key.
            (
                "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQCsnotF7RfJM6nN2D93P8dd6vAAZpjsMBgwzGbAeyYsX3OyV85QG4VFtaBAc67znyJkZKMEyn2S1gPY6Sj2FI/BjXvBgoIVHlkjZy2DXUVSdbxa86W3zVKz4bW00oWpIYp6tqUAJvaorhubSA/Fp/WaA5ryDBWJ43zeyVFmimznSw== x",
                "1024-bit RSA key",
            ),
        ];
        for (text, want) in cases {
            let err = ssh_public_key(text).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }

    #[test]
    fn base64_decodes_what_openssh_writes() {
        assert_eq!(base64("AAAAC3NzaC1lZDI1NTE5").unwrap()[4..], *b"ssh-ed25519");
        assert_eq!(base64("YQ==").unwrap(), b"a");
        assert_eq!(base64("YWI=").unwrap(), b"ab");
        assert!(base64("YQ=").is_none() && base64("Y===").is_none() && base64("").is_none());
    }
}
