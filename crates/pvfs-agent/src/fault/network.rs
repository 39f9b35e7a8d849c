//! A node cut off the network for a while (`pvfsctl bench --fault cut-network=NODE`): one
//! interface taken down with `ip link set dev IFACE down` and brought back up by this agent
//! itself when the fault's time is over. The coordinator cannot reach the node meanwhile (the
//! interface cut is usually the one it reaches the node through), so it cannot be the one to
//! restore it: it asks afterwards, and the answer says when the interface went down and came
//! back.
//!
//! Nothing is left down by accident: the cut is written down under [`CUTS_DIR`] before it is
//! made, so an agent that crashed or was killed mid-cut brings the interface back up as soon
//! as systemd restarts it ([`restore_left`]); an agent that stops restores its cuts first
//! ([`Cuts::restore_all`]); and an agent that reads another root than `/` (`--root`, tests)
//! never touches the host's interfaces.
//!
//! The request's answer leaves before the cut ([`CUT_AFTER`]): it may have come in through
//! the interface being cut.

use super::{FaultError, unix_ns};
use pvfs_host::{Command, Root, Runner};
use pvfs_policy::Policy;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// Where the interfaces this agent has cut are written down while they are down (tmpfs:
/// a reboot brings every interface back up anyway).
pub const CUTS_DIR: &str = "/run/pvfs-agent/cut";

/// How long after answering the interface goes down: time for the answer to leave.
pub const CUT_AFTER: Duration = Duration::from_millis(200);

/// `ip link` is quick; one that hangs must not hold a node off the network.
const IP_TIMEOUT: Duration = Duration::from_secs(10);

/// A cut under way or done, until the coordinator has heard how it went.
#[derive(Debug)]
struct Cut {
    /// Wakes the cut's task to bring the interface back up early.
    wake: Arc<Notify>,
    task: JoinHandle<Result<Restored, String>>,
}

/// How a cut went.
#[derive(Debug, Clone)]
pub struct Restored {
    pub interface: String,
    pub down_at: SystemTime,
    pub up_at: SystemTime,
    /// The agent's own timer brought it back (otherwise the coordinator's undo did).
    pub by_timer: bool,
}

impl Restored {
    pub fn describe(&self) -> String {
        let took = self.up_at.duration_since(self.down_at).unwrap_or_default();
        format!(
            "{} was down from {} to {} ({:.1} s), brought back up by {}",
            self.interface,
            pvfs_metrics::line::time_text(unix_ns(self.down_at)),
            pvfs_metrics::line::time_text(unix_ns(self.up_at)),
            took.as_secs_f64(),
            if self.by_timer { "this agent at the end of the fault's time" } else { "the benchmark's undo" }
        )
    }
}

/// This agent's network cuts, by interface.
#[derive(Debug, Default)]
pub struct Cuts {
    held: Mutex<BTreeMap<String, Cut>>,
}

impl Cuts {
    fn held(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Cut>> {
        // Every change is one insert or remove: a poisoned map is still consistent.
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Cuts `interface` (empty: the one holding `local`, the address the request came in on)
    /// for `seconds`, [`CUT_AFTER`] from now. Checked first — the policy's grant and rules,
    /// the agent's root, the interface existing and up, not already cut — and written down
    /// under [`CUTS_DIR`]; then the cut and its undoing run on their own. Returns the
    /// interface and when it goes down.
    pub fn cut<R: Runner + Clone + 'static>(
        self: &Arc<Self>,
        root: &Root,
        runner: &R,
        policy: &Policy,
        interface: &str,
        local: Option<IpAddr>,
        seconds: u32,
    ) -> Result<(String, SystemTime), FaultError> {
        let interface = if interface.is_empty() { interface_of(local)? } else { interface.to_owned() };
        policy.check_fault_network(&interface, seconds)?;
        super::on_this_machine(root, &format!("take the machine's interface {interface} down"))
            .map_err(FaultError::Failed)?;
        match is_up(root, &interface) {
            None => {
                return Err(FaultError::Failed(format!(
                    "no network interface {interface} on this node (/sys/class/net has {})",
                    root.list_dir("/sys/class/net").unwrap_or_default().join(", ")
                )));
            }
            Some(false) => {
                return Err(FaultError::Failed(format!("{interface} is down already: nothing to cut")));
            }
            Some(true) => {}
        }
        let mut held = self.held();
        if held.get(&interface).is_some_and(|c| !c.task.is_finished()) {
            return Err(FaultError::Failed(format!("{interface} is being cut already")));
        }
        let record = format!("{CUTS_DIR}/{interface}");
        root.create_dir_all(CUTS_DIR, 0o700)
            .and_then(|()| root.write_atomic(&record, format!("{seconds}\n").as_bytes(), 0o600))
            .map_err(|e| FaultError::Failed(format!("writing down the cut in {record}: {e}")))?;
        let down_at = SystemTime::now() + CUT_AFTER;
        let wake = Arc::new(Notify::new());
        let task = tokio::spawn(run_cut(
            root.clone(),
            runner.clone(),
            interface.clone(),
            Duration::from_secs(seconds.into()),
            wake.clone(),
        ));
        held.insert(interface.clone(), Cut { wake, task });
        Ok((interface, down_at))
    }

    /// Brings `interface` back up now if this agent's cut of it is still on, and says how the
    /// cut went (also when its time was over before this asked).
    pub async fn restore(
        &self,
        policy: &Policy,
        interface: &str,
        local: Option<IpAddr>,
    ) -> Result<Restored, FaultError> {
        let interface = if interface.is_empty() { interface_of(local)? } else { interface.to_owned() };
        policy.check_fault_network(&interface, 1)?;
        let Some(cut) = self.held().remove(&interface) else {
            return Err(FaultError::Failed(format!("this agent has not cut {interface}")));
        };
        cut.wake.notify_one();
        match cut.task.await {
            Ok(Ok(restored)) => Ok(restored),
            Ok(Err(why)) => Err(FaultError::Failed(why)),
            Err(e) => Err(FaultError::Failed(format!("the cut of {interface} was lost: {e}"))),
        }
    }

    /// Brings every interface this agent has cut back up: the agent is stopping.
    pub async fn restore_all(&self) {
        let cuts: Vec<(String, Cut)> = std::mem::take(&mut *self.held()).into_iter().collect();
        for (interface, cut) in cuts {
            cut.wake.notify_one();
            match cut.task.await {
                Ok(Ok(restored)) => tracing::warn!("{} as the agent stops", restored.describe()),
                Ok(Err(why)) => tracing::error!(interface = %interface, "{why}"),
                Err(e) => tracing::error!(interface = %interface, error = %e, "a network cut was lost"),
            }
        }
    }
}

/// The cut itself: down after [`CUT_AFTER`], up after `time` or when woken, the record gone
/// once it is up.
async fn run_cut(
    root: Root,
    runner: impl Runner,
    interface: String,
    time: Duration,
    wake: Arc<Notify>,
) -> Result<Restored, String> {
    tokio::select! {
        () = tokio::time::sleep(CUT_AFTER) => {}
        // Undone before it was made: nothing to bring back.
        () = wake.notified() => {
            let _ = root.remove_file(&format!("{CUTS_DIR}/{interface}"));
            let now = SystemTime::now();
            return Ok(Restored { interface, down_at: now, up_at: now, by_timer: false });
        }
    }
    if let Err(why) = link(&root, &runner, &interface, false).await {
        // Whatever `ip` did, the interface is asked up again rather than left unknown.
        let _ = link(&root, &runner, &interface, true).await;
        let _ = root.remove_file(&format!("{CUTS_DIR}/{interface}"));
        return Err(why);
    }
    let down_at = SystemTime::now();
    tracing::warn!(interface = %interface, seconds = time.as_secs(), "network interface cut, as a benchmark's fault asked");
    let by_timer = tokio::select! {
        () = tokio::time::sleep(time) => true,
        () = wake.notified() => false,
    };
    // Until it is up again: a node must not stay off the network because one `ip` failed.
    let mut tries = 0;
    loop {
        match link(&root, &runner, &interface, true).await {
            Ok(()) => break,
            Err(why) if tries >= 10 => return Err(format!("{why}; {interface} may still be down")),
            Err(why) => {
                tracing::error!(interface = %interface, "{why}; trying again");
                tries += 1;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
    let _ = root.remove_file(&format!("{CUTS_DIR}/{interface}"));
    let restored = Restored { interface, down_at, up_at: SystemTime::now(), by_timer };
    tracing::warn!("{}", restored.describe());
    Ok(restored)
}

/// Brings back up every interface a previous agent process cut and did not restore (it
/// crashed, or was killed): called as the agent starts.
pub async fn restore_left(root: &Root, runner: &impl Runner) {
    let Ok(left) = root.list_dir(CUTS_DIR) else { return };
    for interface in left {
        // Only names this agent could have written (the policy's grammar); anything else
        // in the directory is not acted on.
        if Policy::new(pvfs_policy::Site { faults: true, ..pvfs_policy::Site::default() })
            .is_ok_and(|p| p.check_fault_network(&interface, 1).is_ok())
        {
            match link(root, runner, &interface, true).await {
                Ok(()) => tracing::warn!(
                    interface = %interface,
                    "brought back up a network interface a previous agent process had cut for a benchmark"
                ),
                Err(why) => tracing::error!(interface = %interface, "{why}"),
            }
        }
        let _ = root.remove_file(&format!("{CUTS_DIR}/{interface}"));
    }
}

/// `ip link set dev IFACE up|down`, then checked in the kernel's flags.
async fn link(root: &Root, runner: &impl Runner, interface: &str, up: bool) -> Result<(), String> {
    let state = if up { "up" } else { "down" };
    let command = Command::new("ip").args(["link", "set", "dev", interface, state]).timeout(IP_TIMEOUT);
    let shown = command.to_string();
    let out = runner.run_action(&command).await.map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(format!("{shown} failed ({:?}): {}", out.code, out.stderr.trim()));
    }
    match is_up(root, interface) {
        Some(now) if now == up => Ok(()),
        Some(_) => {
            Err(format!("{shown} succeeded but the kernel's flags for {interface} do not say {state}"))
        }
        None => Err(format!("{interface} is gone from /sys/class/net")),
    }
}

/// Whether `interface` is administratively up (`IFF_UP` in `/sys/class/net/IFACE/flags`);
/// `None` when there is no such interface.
fn is_up(root: &Root, interface: &str) -> Option<bool> {
    const IFF_UP: u32 = 0x1;
    let flags = root.read_trimmed(&format!("/sys/class/net/{interface}/flags")).ok()?;
    let flags = u32::from_str_radix(flags.trim_start_matches("0x"), 16).ok()?;
    Some(flags & IFF_UP != 0)
}

/// The interface holding `local`, the address a request came in on.
fn interface_of(local: Option<IpAddr>) -> Result<String, FaultError> {
    let Some(local) = local else {
        return Err(FaultError::Failed(
            "the request does not say which address it came in on: name the interface".into(),
        ));
    };
    let addresses = nix::ifaddrs::getifaddrs()
        .map_err(|e| FaultError::Failed(format!("listing this node's interfaces: {e}")))?;
    for entry in addresses {
        let Some(address) = entry.address else { continue };
        let ip = match (address.as_sockaddr_in(), address.as_sockaddr_in6()) {
            (Some(v4), _) => IpAddr::V4(v4.ip()),
            (_, Some(v6)) => IpAddr::V6(v6.ip()),
            _ => continue,
        };
        if ip == local {
            return Ok(entry.interface_name);
        }
    }
    Err(FaultError::Failed(format!(
        "no interface of this node holds {local}, the address the request came in on"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn granted() -> Policy {
        Policy::new(pvfs_policy::Site { faults: true, ..pvfs_policy::Site::default() }).unwrap()
    }

    #[test]
    fn the_interface_of_the_loopback_address_is_lo_and_never_cut() {
        let local = Some(IpAddr::from([127, 0, 0, 1]));
        assert_eq!(interface_of(local).unwrap(), "lo");
        let cuts = Arc::new(Cuts::default());
        let err = cuts.cut(&Root::system(), &pvfs_host::RecordedRunner::new(), &granted(), "", local, 5);
        assert!(
            matches!(&err, Err(FaultError::Refused(e)) if e.rule == "fault-interface"),
            "{:?}",
            err.err()
        );
    }

    /// An agent on another root never acts on this machine's interfaces, whatever it is asked.
    #[test]
    fn an_agent_on_another_root_never_cuts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sys/class/net/eth0")).unwrap();
        std::fs::write(dir.path().join("sys/class/net/eth0/flags"), "0x1003\n").unwrap();
        let runner = pvfs_host::RecordedRunner::new();
        let cuts = Arc::new(Cuts::default());
        let err = cuts.cut(&Root::at(dir.path()), &runner, &granted(), "eth0", None, 5).unwrap_err();
        assert!(err.to_string().contains("--root"), "{err}");
        assert!(runner.calls().is_empty(), "{:?}", runner.calls());
    }

    #[test]
    fn flags_say_up_or_down() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        std::fs::create_dir_all(dir.path().join("sys/class/net/eth0")).unwrap();
        std::fs::write(dir.path().join("sys/class/net/eth0/flags"), "0x1003\n").unwrap();
        assert_eq!(is_up(&root, "eth0"), Some(true));
        std::fs::write(dir.path().join("sys/class/net/eth0/flags"), "0x1002\n").unwrap();
        assert_eq!(is_up(&root, "eth0"), Some(false));
        assert_eq!(is_up(&root, "eth1"), None);
    }

    /// A cut's commands in order, as the runner saw them: down, then up at the end of its time;
    /// the record written while it is down and gone after. The kernel's flags are the test's
    /// file, flipped as `ip` would (the runner records, it does not run).
    #[tokio::test(start_paused = true)]
    async fn a_cut_goes_down_then_up_on_its_own_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let flags = dir.path().join("sys/class/net/eth0/flags");
        std::fs::create_dir_all(flags.parent().unwrap()).unwrap();
        std::fs::write(&flags, "0x1003\n").unwrap();
        let runner = FlagRunner { flags: flags.clone(), calls: Arc::default() };
        let record = dir.path().join("run/pvfs-agent/cut/eth0");
        let restored = run_cut_for_test(&root, &runner, &record, Duration::from_secs(3)).await;
        assert!(restored.by_timer);
        assert_eq!(*runner.calls.lock().unwrap(), ["ip link set dev eth0 down", "ip link set dev eth0 up"]);
        assert!(!record.exists(), "the record goes once the interface is up");
        assert_eq!(is_up(&root, "eth0"), Some(true));
        assert!(restored.describe().starts_with("eth0 was down from "), "{}", restored.describe());
    }

    /// Stands in for `ip`: records the command and sets the flags file as the kernel would.
    #[derive(Clone)]
    struct FlagRunner {
        flags: std::path::PathBuf,
        calls: Arc<Mutex<Vec<String>>>,
    }

    impl Runner for FlagRunner {
        async fn run(&self, command: &Command) -> Result<pvfs_host::Output, pvfs_host::CommandError> {
            let shown = command.to_string();
            let up = shown.ends_with(" up");
            std::fs::write(&self.flags, if up { "0x1003\n" } else { "0x1002\n" }).unwrap();
            self.calls.lock().unwrap().push(shown);
            Ok(pvfs_host::Output { code: Some(0), stdout: String::new(), stderr: String::new() })
        }
    }

    async fn run_cut_for_test(
        root: &Root,
        runner: &FlagRunner,
        record: &std::path::Path,
        time: Duration,
    ) -> Restored {
        std::fs::create_dir_all(record.parent().unwrap()).unwrap();
        std::fs::write(record, "3\n").unwrap();
        let wake = Arc::new(Notify::new());
        let task = tokio::spawn(run_cut(root.clone(), runner.clone(), "eth0".into(), time, wake));
        // While it is down, the record stays.
        tokio::time::sleep(CUT_AFTER + Duration::from_secs(1)).await;
        assert!(record.exists());
        assert_eq!(is_up(root, "eth0"), Some(false));
        task.await.unwrap().unwrap()
    }

    /// An interface a crashed agent left down is brought back up as the next one starts.
    #[tokio::test]
    async fn a_cut_left_by_a_crashed_agent_is_restored_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let flags = dir.path().join("sys/class/net/eth0/flags");
        std::fs::create_dir_all(flags.parent().unwrap()).unwrap();
        std::fs::write(&flags, "0x1002\n").unwrap();
        let left = dir.path().join("run/pvfs-agent/cut");
        std::fs::create_dir_all(&left).unwrap();
        std::fs::write(left.join("eth0"), "10\n").unwrap();
        std::fs::write(left.join("eth0;reboot"), "10\n").unwrap();
        let runner = FlagRunner { flags, calls: Arc::default() };
        restore_left(&root, &runner).await;
        assert_eq!(
            *runner.calls.lock().unwrap(),
            ["ip link set dev eth0 up"],
            "only a name it could have cut"
        );
        assert_eq!(is_up(&root, "eth0"), Some(true));
        assert!(root.list_dir("/run/pvfs-agent/cut").unwrap().is_empty());
    }
}
