//! `pvfs-agent metrics`: this machine's rates every interval, like `iostat -dx` + `sar -n DEV`
//! + `sar -u ALL` + `sar -r` + `sar -q` in one, as tables or JSON lines.

use crate::cli::{Align, MetricsArgs};
use crate::view::table;
use crate::{exit, output};
use anyhow::Context;
use pvfs_host::Root;
use pvfs_metrics::line::SecondLine;
use pvfs_metrics::rates::Rates;
use pvfs_metrics::sample::{DeviceFilter, Sampler, until_tick};
use std::time::{Duration, Instant, SystemTime};

pub(crate) fn run(args: MetricsArgs) -> anyhow::Result<u8> {
    let filter = if args.devices.is_empty() {
        DeviceFilter::WholeDevices
    } else {
        DeviceFilter::Named(args.devices.clone())
    };
    let mut sampler = Sampler::new(Root::system(), filter);
    let started = Instant::now();
    // The baseline: like `iostat -y`, the since-boot report is not shown.
    if args.align == Align::WallClock {
        sleep_until_tick(args.interval);
    }
    let mut prev = sampler.sample().context("reading the first sample")?;
    let mut shown = 0;
    while args.count.is_none_or(|n| shown < n) {
        match args.align {
            Align::WallClock => sleep_until_tick(args.interval),
            // Ticks counted from the start, not from the last wake-up, so they do not drift.
            Align::Start => {
                let due = started + args.interval * (shown as u32 + 1);
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            }
        }
        let curr = sampler.sample().context("reading a sample")?;
        let rates = Rates::between(&prev, &curr);
        let devices = curr.visible_devices(!args.devices.is_empty());
        if args.json {
            output::json(&SecondLine::of(&rates, &devices))?;
        } else {
            output::print(&table(&rates, &devices))?;
        }
        prev = curr;
        shown += 1;
    }
    Ok(exit::OK)
}

/// Sleeps to the next multiple of `interval` since the epoch, so that every node's sample is
/// for the same second.
fn sleep_until_tick(interval: Duration) {
    std::thread::sleep(until_tick(SystemTime::now(), interval));
}
