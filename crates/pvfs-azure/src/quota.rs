//! Before anything is created: is each VM size offered in the region (and zone) to this
//! subscription, and is there vCPU quota left for all of them? A plan that cannot finish is
//! refused whole, with the exact shortfall, rather than failing halfway with VMs billed.

use crate::plan::{Action, Plan};
use crate::{Arm, AzureError};
use futures::StreamExt;
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
}

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
            out.push(Sku {
                name: sku.name.unwrap_or_default(),
                family: sku.family.unwrap_or_default(),
                vcpus,
                zones,
                restrictions,
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
}
