//! Before anything is created: is each VM size offered in the region (and zone) to this
//! subscription, can it do what the cluster file asks of it (premium disks, that many data
//! disks, accelerated networking, Ultra Disks in its zone), and is there vCPU quota left for
//! all of them? A plan that cannot finish is refused whole, with the exact shortfall, rather
//! than failing halfway with VMs billed.
//!
//! What a size can do is read from the region's resource SKU list (`ResourceSkus_List`), the
//! capabilities its example `ListAvailableResourceSkusForARegion` shows: `PremiumIO`,
//! `MaxDataDiskCount`, `AcceleratedNetworkingEnabled` per size, and `UltraSSDAvailable` per
//! zone (`locationInfo[].zoneDetails`) or for the region (`capabilities`). A capability the list
//! does not give is not guessed at — the plan goes on and ARM decides — except Ultra Disks: a size
//! and zone the list names no `UltraSSDAvailable` for has none (that is how Azure's Ultra Disk
//! documentation says to find where they are offered: an empty answer means not there).

use crate::body::ULTRA;
use crate::plan::{Action, Plan};
use crate::{Arm, AzureError};
use futures::StreamExt;
use pvfs_config::azure::AzureVm;
use std::collections::BTreeMap;

/// A VM size as the region's SKU list gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sku {
    pub name: String,
    pub family: String,
    pub vcpus: u64,
    /// Zones it is offered in, in the location asked about.
    pub zones: Vec<String>,
    /// Restrictions for this subscription: (`Location` or `Zone`, the zones concerned, the reason).
    pub restrictions: Vec<(String, Vec<String>, String)>,
    /// Its capabilities in the region, by name (`PremiumIO` = `True`, `MaxDataDiskCount` = `32`, …).
    pub capabilities: BTreeMap<String, String>,
    /// The zones whose details give it `UltraSSDAvailable` = `True`.
    pub ultra_zones: Vec<String>,
}

impl Sku {
    /// A `True`/`False` capability; `None` when the list does not give it.
    fn flag(&self, name: &str) -> Option<bool> {
        self.capabilities.get(name).map(|v| v.eq_ignore_ascii_case("true"))
    }
}

/// Disk SKUs only sizes with the `PremiumIO` capability take: Premium SSD (LRS and ZRS) and
/// Premium SSD v2 ("Premium SSD v2 can be used with any premium storage-enabled virtual machine
/// size", Azure's "Deploy a Premium SSD v2"). Ultra Disks have a capability of their own.
const PREMIUM_DISKS: &[&str] = &["Premium_LRS", "Premium_ZRS", "PremiumV2_LRS"];

/// One quota of the region (`cores`, or a family such as `standardDSv2Family`).
#[derive(Debug, Clone, PartialEq)]
pub struct Usage {
    pub name: String,
    pub current: i64,
    pub limit: i64,
}

/// The name ARM gives the regional total of vCPUs.
const TOTAL: &str = "cores";

/// The problems that stop `plan` in this region, all of them; empty when it fits. Only VMs to
/// create count against quota (a change of size is checked by ARM when it is made).
pub fn problems(plan: &Plan, skus: &[Sku], usages: &[Usage]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut need: BTreeMap<&str, u64> = BTreeMap::new();
    let mut total = 0;
    for item in &plan.items {
        let counts = matches!(item.action, Action::Create);
        let checked = counts || matches!(item.action, Action::Change(_));
        if !checked {
            continue;
        }
        let vm = &item.vm;
        let Some(sku) = skus.iter().find(|s| s.name.eq_ignore_ascii_case(&vm.size)) else {
            problems.push(format!("{}: size {} is not offered in {}", vm.node, vm.size, plan.location));
            continue;
        };
        for (kind, zones, reason) in &sku.restrictions {
            let hits = kind == "Location" || vm.zone.as_ref().is_some_and(|z| zones.contains(z));
            if hits {
                let place = match (kind.as_str(), &vm.zone) {
                    ("Zone", Some(z)) => format!("zone {z} of {}", plan.location),
                    _ => plan.location.clone(),
                };
                problems.push(format!(
                    "{}: size {} is restricted in {place} for this subscription ({reason})",
                    vm.node, vm.size
                ));
            }
        }
        if let Some(zone) = &vm.zone
            && !sku.zones.contains(zone)
        {
            problems.push(format!(
                "{}: size {} is not offered in zone {zone} of {} (zones: {})",
                vm.node,
                vm.size,
                plan.location,
                if sku.zones.is_empty() { "none".to_string() } else { sku.zones.join(", ") }
            ));
        }
        capabilities(&mut problems, vm, sku, &plan.location);
        if counts {
            *need.entry(&sku.family).or_default() += sku.vcpus;
            total += sku.vcpus;
        }
    }
    let mut check = |name: &str, wanted: u64| {
        if wanted == 0 {
            return;
        }
        match usages.iter().find(|u| u.name.eq_ignore_ascii_case(name)) {
            Some(u) => {
                let left = (u.limit - u.current).max(0) as u64;
                if wanted > left {
                    problems.push(format!(
                        "needs {wanted} vCPUs of {name}, {left} left (limit {}, in use {})",
                        u.limit, u.current
                    ));
                }
            }
            // ARM lists every family a subscription can use; one it does not list has no quota.
            None if name != TOTAL => problems.push(format!(
                "needs {wanted} vCPUs of {name}, 0 left (no quota for it in {})",
                plan.location
            )),
            None => {}
        }
    };
    for (family, wanted) in &need {
        check(family, *wanted);
    }
    check(TOTAL, total);
    problems
}

/// What `vm` asks of its size that `sku` says it cannot do, each naming node, size, capability
/// and what to do instead.
fn capabilities(problems: &mut Vec<String>, vm: &AzureVm, sku: &Sku, location: &str) {
    let (node, size) = (&vm.node, &vm.size);
    let disks = &vm.data_disks;
    if disks.count > 0 && PREMIUM_DISKS.contains(&disks.sku.as_str()) && sku.flag("PremiumIO") == Some(false)
    {
        problems.push(format!(
            "{node}: size {size} cannot attach {} disks (its PremiumIO capability is False): choose a premium-storage \
             size (most have an \"s\" in their name, such as Standard_DS14_v2), or a Standard SSD sku",
            disks.sku
        ));
    }
    if let Some(max) = sku.capabilities.get("MaxDataDiskCount").and_then(|v| v.parse::<u32>().ok())
        && disks.count > max
    {
        problems.push(format!(
            "{node}: {} data disks, and size {size} takes at most {max} (its MaxDataDiskCount): choose a larger size, \
             or fewer, larger disks",
            disks.count
        ));
    }
    if vm.accelerated_networking && sku.flag("AcceleratedNetworkingEnabled") == Some(false) {
        problems.push(format!(
            "{node}: size {size} has no accelerated networking (its AcceleratedNetworkingEnabled capability is \
             False): set accelerated_networking = false, or choose a size that has it"
        ));
    }
    if disks.count > 0 && disks.sku == ULTRA {
        let regional = sku.flag("UltraSSDAvailable") == Some(true);
        match &vm.zone {
            Some(zone) if !(sku.ultra_zones.contains(zone) || sku.ultra_zones.is_empty() && regional) => {
                let instead = if sku.ultra_zones.is_empty() {
                    format!(
                        "it offers them in no zone of {location}: choose another size or region, or another disk sku"
                    )
                } else {
                    format!("use zone = \"{}\"", sku.ultra_zones.join("\" or \""))
                };
                problems.push(format!(
                    "{node}: size {size} offers no Ultra Disks in zone {zone} of {location} (UltraSSDAvailable): {instead}"
                ));
            }
            Some(_) => {}
            None if regional => {}
            None => problems.push(format!(
                "{node}: Ultra Disks attach only to a VM in an availability zone: give it a zone{}",
                if sku.ultra_zones.is_empty() {
                    String::new()
                } else {
                    format!(" where size {size} offers them: {}", sku.ultra_zones.join(", "))
                }
            )),
        }
    }
}

/// Reads the region's SKU list and usage, and refuses `plan` if they do not allow it.
pub async fn check(arm: &Arm, subscription: &str, plan: &Plan) -> Result<(), AzureError> {
    if !plan.items.iter().any(|i| matches!(i.action, Action::Create | Action::Change(_))) {
        return Ok(());
    }
    let (skus, usages) = futures::try_join!(
        skus(arm, subscription, &plan.location),
        usages(arm, subscription, &plan.location)
    )?;
    let problems = problems(plan, &skus, &usages);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(AzureError::Limits { location: plan.location.clone(), problems })
    }
}

/// The VM sizes of `location`.
pub async fn skus(arm: &Arm, subscription: &str, location: &str) -> Result<Vec<Sku>, AzureError> {
    let what = format!("region {location}");
    let mut pages = arm
        .compute
        .resource_skus_client()
        .list(subscription)
        .filter(format!("location eq '{location}'"))
        .into_stream();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| AzureError::from_core(&what, "listing resource SKUs", e))?;
        for sku in page.value {
            if sku.resource_type.as_deref() != Some("virtualMachines") {
                continue;
            }
            let here = |l: &str| l.eq_ignore_ascii_case(location);
            if !sku.locations.iter().any(|l| here(l)) {
                continue;
            }
            let vcpus = sku
                .capabilities
                .iter()
                .find(|c| c.name.as_deref() == Some("vCPUs"))
                .and_then(|c| c.value.as_deref()?.parse().ok())
                .unwrap_or(0);
            let zones = sku
                .location_info
                .iter()
                .filter(|i| i.location.as_deref().is_some_and(here))
                .flat_map(|i| i.zones.clone())
                .collect();
            let restrictions = sku
                .restrictions
                .iter()
                .map(|r| {
                    let text = |v: serde_json::Value| v.as_str().unwrap_or_default().to_string();
                    (
                        text(serde_json::to_value(&r.type_).unwrap_or_default()),
                        r.restriction_info.as_ref().map(|i| i.zones.clone()).unwrap_or_default(),
                        text(serde_json::to_value(&r.reason_code).unwrap_or_default()),
                    )
                })
                .collect();
            let capabilities =
                sku.capabilities.iter().filter_map(|c| Some((c.name.clone()?, c.value.clone()?))).collect();
            let ultra_zones = sku
                .location_info
                .iter()
                .filter(|i| i.location.as_deref().is_some_and(here))
                .flat_map(|i| &i.zone_details)
                .filter(|d| {
                    d.capabilities.iter().any(|c| {
                        c.name.as_deref() == Some("UltraSSDAvailable")
                            && c.value.as_deref().is_some_and(|v| v.eq_ignore_ascii_case("true"))
                    })
                })
                .flat_map(|d| d.name.clone())
                .collect();
            out.push(Sku {
                name: sku.name.unwrap_or_default(),
                family: sku.family.unwrap_or_default(),
                vcpus,
                zones,
                restrictions,
                capabilities,
                ultra_zones,
            });
        }
    }
    Ok(out)
}

/// The compute quotas of `location` and how much of each is used.
pub async fn usages(arm: &Arm, subscription: &str, location: &str) -> Result<Vec<Usage>, AzureError> {
    let what = format!("region {location}");
    let mut pages = arm.compute.usage_client().list(location, subscription).into_stream();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| AzureError::from_core(&what, "listing compute usage", e))?;
        out.extend(page.value.into_iter().map(|u| Usage {
            name: u.name.value.unwrap_or_default(),
            current: i64::from(u.current_value),
            limit: u.limit,
        }));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvfs_config::azure::*;

    fn vm(node: &str, size: &str, zone: Option<&str>) -> AzureVm {
        AzureVm {
            node: node.into(),
            size: size.into(),
            image: ImageRef {
                publisher: "p".into(),
                offer: "o".into(),
                sku: "s".into(),
                version: "latest".into(),
            },
            data_disks: DataDisks {
                count: 0,
                size_gib: 0,
                sku: "Premium_LRS".into(),
                caching: Caching::None,
            },
            accelerated_networking: true,
            zone: zone.map(Into::into),
            proximity_placement_group: None,
        }
    }

    fn plan(vms: Vec<AzureVm>) -> Plan {
        let azure = Azure {
            subscription: "s".into(),
            resource_group: "rg".into(),
            location: "eastus".into(),
            subnet: "/x".into(),
            admin_user: "u".into(),
            ssh_public_key: "k".into(),
            vms,
        };
        Plan::make("c", &azure, &[])
    }

    fn ds14(zones: &[&str]) -> Sku {
        Sku {
            name: "Standard_DS14_v2".into(),
            family: "standardDSv2Family".into(),
            vcpus: 16,
            zones: zones.iter().map(|z| z.to_string()).collect(),
            restrictions: vec![],
            capabilities: [
                ("PremiumIO", "True"),
                ("MaxDataDiskCount", "64"),
                ("AcceleratedNetworkingEnabled", "True"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            ultra_zones: vec!["2".into()],
        }
    }

    #[test]
    fn the_shortfall_is_exact_and_every_problem_is_listed() {
        let vms = (0..20).map(|i| vm(&format!("oss{i:02}"), "Standard_DS14_v2", Some("1"))).collect();
        let usages = [
            Usage { name: "standardDSv2Family".into(), current: 250, limit: 350 },
            Usage { name: "cores".into(), current: 250, limit: 1000 },
        ];
        assert_eq!(
            problems(&plan(vms), &[ds14(&["1", "2"])], &usages),
            ["needs 320 vCPUs of standardDSv2Family, 100 left (limit 350, in use 250)"]
        );
        let vms = vec![vm("a", "Standard_DS14_v2", Some("3")), vm("b", "Standard_HB120rs_v3", None)];
        assert_eq!(
            problems(&plan(vms), &[ds14(&["1", "2"])], &usages),
            [
                "a: size Standard_DS14_v2 is not offered in zone 3 of eastus (zones: 1, 2)",
                "b: size Standard_HB120rs_v3 is not offered in eastus"
            ]
        );
        let mut restricted = ds14(&["1"]);
        restricted.restrictions.push(("Location".into(), vec![], "NotAvailableForSubscription".into()));
        assert_eq!(
            problems(&plan(vec![vm("a", "standard_ds14_v2", None)]), &[restricted], &usages),
            [
                "a: size standard_ds14_v2 is restricted in eastus for this subscription (NotAvailableForSubscription)"
            ]
        );
        assert!(
            problems(&plan(vec![vm("a", "Standard_DS14_v2", Some("2"))]), &[ds14(&["1", "2"])], &usages)
                .is_empty()
        );
    }

    #[test]
    fn a_size_that_cannot_do_what_the_file_asks_is_refused_naming_the_capability() {
        let usages = [
            Usage { name: "standardDSv2Family".into(), current: 0, limit: 350 },
            Usage { name: "standardA0_A7Family".into(), current: 0, limit: 350 },
        ];
        // As the SKU list example gives Standard_A1: no premium storage, two data disks, no
        // accelerated networking, no Ultra Disks.
        let mut a1 = ds14(&["1", "2", "3"]);
        a1.name = "Standard_A1".into();
        a1.family = "standardA0_A7Family".into();
        a1.capabilities =
            [("PremiumIO", "False"), ("MaxDataDiskCount", "2"), ("AcceleratedNetworkingEnabled", "False")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        a1.ultra_zones = vec![];
        let mut small = vm("oss00", "Standard_A1", None);
        small.data_disks.count = 4;
        let mut ultra_zone1 = vm("oss01", "Standard_DS14_v2", Some("1"));
        ultra_zone1.data_disks =
            DataDisks { count: 2, size_gib: 1024, sku: "UltraSSD_LRS".into(), caching: Caching::None };
        let mut ultra_nozone = ultra_zone1.clone();
        ultra_nozone.node = "oss02".into();
        ultra_nozone.zone = None;
        let mut ultra_a1 = ultra_zone1.clone();
        ultra_a1.node = "oss03".into();
        ultra_a1.size = "Standard_A1".into();
        ultra_a1.accelerated_networking = false;
        ultra_a1.data_disks.count = 1;
        let mut fine = ultra_zone1.clone();
        fine.node = "oss04".into();
        fine.zone = Some("2".into());
        expect_test::expect![[r#"
            [
                "oss00: size Standard_A1 cannot attach Premium_LRS disks (its PremiumIO capability is False): choose a premium-storage size (most have an \"s\" in their name, such as Standard_DS14_v2), or a Standard SSD sku",
                "oss00: 4 data disks, and size Standard_A1 takes at most 2 (its MaxDataDiskCount): choose a larger size, or fewer, larger disks",
                "oss00: size Standard_A1 has no accelerated networking (its AcceleratedNetworkingEnabled capability is False): set accelerated_networking = false, or choose a size that has it",
                "oss01: size Standard_DS14_v2 offers no Ultra Disks in zone 1 of eastus (UltraSSDAvailable): use zone = \"2\"",
                "oss02: Ultra Disks attach only to a VM in an availability zone: give it a zone where size Standard_DS14_v2 offers them: 2",
                "oss03: size Standard_A1 offers no Ultra Disks in zone 1 of eastus (UltraSSDAvailable): it offers them in no zone of eastus: choose another size or region, or another disk sku",
            ]
        "#]]
        .assert_debug_eq(&problems(
            &plan(vec![small, ultra_zone1, ultra_nozone, ultra_a1, fine]),
            &[ds14(&["1", "2", "3"]), a1],
            &usages,
        ));
    }
}
