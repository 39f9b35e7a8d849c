//! Booting the node into an installed kernel, when a coordinator asks (`Reboot`) because a
//! step said the node must (a Lustre server's patched kernel) and the operator allowed it.
//!
//! Everything is checked before anything changes: the site's policy lets pvfs reboot the node
//! and the release is a kernel release; the node does not run it already (then nothing
//! happens); `/boot/vmlinuz-RELEASE` is there. Then the boot loader's default is set with
//! `grubby` (the boot loader tool of the Enterprise Linux servers Lustre's kernels are built
//! for) and read back: a reboot into the old kernel would only loop. The agent answers after
//! that, and reboots the node a moment later, so that the caller hears the answer before its
//! connection drops.

use pvfs_host::{Command, CommandError, Root, RootError, Runner};
use pvfs_policy::{Policy, PolicyError};
use std::time::Duration;

const OSRELEASE: &str = "/proc/sys/kernel/osrelease";
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// Between the answer and the reboot: long enough for the answer to reach the caller; a lost
/// answer is harmless (the caller waits for a new boot id either way).
pub(crate) const DELAY: Duration = Duration::from_secs(1);

/// What `prepare` found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Prepared {
    /// The node runs the kernel already: nothing to do.
    AlreadyRunning { boot_id: String },
    /// The boot loader's default is the kernel; reboot with [`command`].
    Ready { boot_id: String },
}

/// Why the node is not rebooted. Nothing was changed, except for `Verify` (the default was set
/// but reads back otherwise) — and then it does not reboot either.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RebootError {
    #[error("the agent's policy refuses the reboot: {}: {} ({})", .0.problem, .0.fix, .0.rule)]
    Refused(#[from] PolicyError),
    #[error(
        "kernel {kernel} is not installed on this node ({image} is missing): install it first \
         (`pvfsctl up` installs the pinned kernel), then reboot"
    )]
    NotInstalled { kernel: String, image: String },
    #[error("cannot read {0}")]
    Read(#[from] RootError),
    #[error(
        "cannot make {image} the boot default: `{command}` {detail}; set the default kernel by \
         hand, reboot the node, then run `pvfsctl up` again"
    )]
    BootLoader { image: String, command: String, detail: String },
}

impl RebootError {
    /// Whether the caller asked for something this node does not allow (rather than a state
    /// of the node that can be fixed).
    pub(crate) fn is_refusal(&self) -> bool {
        matches!(self, RebootError::Refused(_))
    }
}

/// Checks everything and makes `kernel` the boot default; see the module's documentation.
pub(crate) async fn prepare(
    root: &Root,
    runner: &impl Runner,
    policy: &Policy,
    kernel: &str,
) -> Result<Prepared, RebootError> {
    policy.check_reboot(kernel)?;
    let boot_id = root.read_trimmed(BOOT_ID)?;
    if root.read_trimmed(OSRELEASE)? == kernel {
        return Ok(Prepared::AlreadyRunning { boot_id });
    }
    // The policy's grammar keeps this one file name under /boot.
    let image = format!("/boot/vmlinuz-{kernel}");
    if !root.exists(&image) {
        return Err(RebootError::NotInstalled { kernel: kernel.to_owned(), image });
    }
    let set = Command::new("grubby").arg(format!("--set-default={image}"));
    let output = runner.run_action(&set).await.map_err(|err| boot_loader(&image, &set, &err))?;
    if output.code != Some(0) {
        let detail = format!("exited {:?}: {}", output.code, output.stderr.trim());
        return Err(RebootError::BootLoader { image, command: set.to_string(), detail });
    }
    let get = Command::new("grubby").arg("--default-kernel");
    let output = runner.run(&get).await.map_err(|err| boot_loader(&image, &get, &err))?;
    let default = output.stdout.trim();
    if output.code != Some(0) || default != image {
        let detail = format!("prints {default:?} (exit {:?}) after setting it", output.code);
        return Err(RebootError::BootLoader { image, command: get.to_string(), detail });
    }
    Ok(Prepared::Ready { boot_id })
}

/// A boot loader command that could not run (most often: no grubby, not an EL node).
fn boot_loader(image: &str, command: &Command, err: &CommandError) -> RebootError {
    RebootError::BootLoader { image: image.to_owned(), command: command.to_string(), detail: err.to_string() }
}

/// The reboot itself: systemd's orderly one (services stop, file systems unmount).
pub(crate) fn command() -> Command {
    Command::new("systemctl").arg("reboot")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvfs_host::RecordedRunner;

    const LUSTRE: &str = "3.10.0-514.el7_lustre.x86_64";

    /// A node running the stock EL7.3 kernel with the Lustre kernel installed beside it.
    fn node() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let put = |rel: &str, text: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        put("proc/sys/kernel/osrelease", "3.10.0-514.el7.x86_64\n");
        put("proc/sys/kernel/random/boot_id", "7b4c9e0e-2a61-4f0c-9a53-5d1c0e8b2f14\n");
        put(&format!("boot/vmlinuz-{LUSTRE}"), "");
        dir
    }

    fn set_default() -> String {
        format!("grubby --set-default=/boot/vmlinuz-{LUSTRE}")
    }

    #[tokio::test]
    async fn the_default_is_set_and_read_back_before_a_reboot() {
        let dir = node();
        let runner = RecordedRunner::new()
            .record(&set_default(), 0, "", "")
            // grubby --default-kernel prints the default's image path (grubby(8)).
            .record("grubby --default-kernel", 0, &format!("/boot/vmlinuz-{LUSTRE}\n"), "");
        let prepared = prepare(&Root::at(dir.path()), &runner, &Policy::default(), LUSTRE).await.unwrap();
        assert_eq!(prepared, Prepared::Ready { boot_id: "7b4c9e0e-2a61-4f0c-9a53-5d1c0e8b2f14".into() });
        assert_eq!(runner.calls(), [set_default(), "grubby --default-kernel".to_owned()]);
    }

    #[tokio::test]
    async fn a_default_that_reads_back_otherwise_stops_the_reboot() {
        let dir = node();
        let runner = RecordedRunner::new().record(&set_default(), 0, "", "").record(
            "grubby --default-kernel",
            0,
            "/boot/vmlinuz-3.10.0-514.el7.x86_64\n",
            "",
        );
        let err = prepare(&Root::at(dir.path()), &runner, &Policy::default(), LUSTRE).await.unwrap_err();
        let message = err.to_string();
        assert!(message.contains("prints \"/boot/vmlinuz-3.10.0-514.el7.x86_64\""), "{message}");
        assert!(message.contains("set the default kernel by hand"), "{message}");
    }

    #[tokio::test]
    async fn nothing_changes_for_a_running_or_missing_kernel_or_a_bad_name() {
        let dir = node();
        let root = Root::at(dir.path());
        let runner = RecordedRunner::new();
        let running = prepare(&root, &runner, &Policy::default(), "3.10.0-514.el7.x86_64").await.unwrap();
        assert!(matches!(running, Prepared::AlreadyRunning { .. }));
        let missing =
            prepare(&root, &runner, &Policy::default(), "3.10.0-957.el7_lustre.x86_64").await.unwrap_err();
        assert!(
            missing.to_string().contains("/boot/vmlinuz-3.10.0-957.el7_lustre.x86_64 is missing"),
            "{missing}"
        );
        let bad = prepare(&root, &runner, &Policy::default(), "../../etc/passwd").await.unwrap_err();
        assert!(bad.is_refusal(), "{bad}");
        assert!(runner.calls().is_empty(), "{:?}", runner.calls());
    }

    #[tokio::test]
    async fn a_node_without_grubby_is_told_what_to_do() {
        let dir = node();
        // Nothing recorded: the runner cannot run grubby, as on a node without it.
        let err = prepare(&Root::at(dir.path()), &RecordedRunner::new(), &Policy::default(), LUSTRE)
            .await
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with(&format!("cannot make /boot/vmlinuz-{LUSTRE} the boot default")),
            "{message}"
        );
        assert!(message.contains("grubby --set-default="), "{message}");
    }
}
