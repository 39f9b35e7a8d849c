//! A node's second as the history keeps it: one value per series, a series being one column
//! of one group (`cpu`, `mem`, `load`) or of one device (`disk` sda, `nic` eth0), named as
//! sysstat names it (`%util`, `rxkB/s`, `%iowait`).

use pvfs_metrics::rates::{Column, Group as Columns, Rates};
use serde::Serialize;

/// What a series belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Group {
    Cpu,
    Mem,
    Load,
    Disk,
    Nic,
}

impl Group {
    /// Its byte in the store.
    pub(crate) fn code(self) -> u8 {
        match self {
            Group::Cpu => 0,
            Group::Mem => 1,
            Group::Load => 2,
            Group::Disk => 3,
            Group::Nic => 4,
        }
    }

    pub(crate) fn from_code(code: u8) -> Option<Group> {
        [Group::Cpu, Group::Mem, Group::Load, Group::Disk, Group::Nic].into_iter().find(|g| g.code() == code)
    }
}

/// One series of a node.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SeriesKey {
    pub group: Group,
    /// The disk or interface; empty for `cpu`, `mem` and `load`.
    pub device: String,
    /// The column as sysstat prints it.
    pub column: String,
}

impl SeriesKey {
    pub fn new(group: Group, device: &str, column: &str) -> SeriesKey {
        SeriesKey { group, device: device.to_owned(), column: column.to_owned() }
    }

    /// Whether this is the series `group`/`device`/`column` (without building one).
    pub fn is(&self, group: Group, device: &str, column: &str) -> bool {
        self.group == group && self.device == device && self.column == column
    }
}

/// Calls `each` with every series of one second: the CPU, memory and load columns, and every
/// column of the disks in `devices` (those `top` shows) and of every interface — the values of
/// the line `top --json` prints for the same second.
pub fn each_value<'r>(
    rates: &'r Rates,
    devices: &[String],
    mut each: impl FnMut(Group, &'r str, &'static str, f64),
) {
    fn group<'r, G: Columns>(
        values: &G,
        group: Group,
        device: &'r str,
        each: &mut impl FnMut(Group, &'r str, &'static str, f64),
    ) {
        for &column in G::Column::BY_NAME {
            each(group, device, column.name(), values.value(column).as_f64());
        }
    }
    group(&rates.cpu, Group::Cpu, "", &mut each);
    group(&rates.mem, Group::Mem, "", &mut each);
    group(&rates.load, Group::Load, "", &mut each);
    // Sorted once, so that a node of many disks is not a search per disk.
    let mut shown: Vec<&str> = devices.iter().map(String::as_str).collect();
    shown.sort_unstable();
    for (name, disk) in rates.disks.iter().filter(|(name, _)| shown.binary_search(&name.as_str()).is_ok()) {
        group(disk, Group::Disk, name, &mut each);
    }
    for (name, nic) in &rates.nics {
        group(nic, Group::Nic, name, &mut each);
    }
}
