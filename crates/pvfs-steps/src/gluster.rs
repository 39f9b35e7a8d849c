//! GlusterFS: the trusted pool and the volume, read through `gluster --xml`.
//!
//! In `--xml` mode the CLI exits 0 even when the operation failed: the answer is `<opRet>`
//! (-1 on failure) with `<opErrstr>`, so every XML answer is checked there, never by exit code.
//! Changes use `--mode=script` so no confirmation prompt (replica 2 split-brain warnings,
//! volume stop) can wait for a terminal.

use crate::{Action, Assessment, Host, StepError};
use pvfs_host::{Command, Runner};
use std::fmt;
use std::time::Duration;

/// glusterd answers in milliseconds; a volume create or start touches every brick's node.
const GLUSTER_TIMEOUT: Duration = Duration::from_secs(120);

/// The answer of `gluster --xml …`, parsed, with `opRet` checked.
pub(crate) struct CliOutput {
    text: String,
}

impl CliOutput {
    /// Runs `gluster --xml ARGS`; `Err` for a CLI that could not reach glusterd, an answer that
    /// is not XML, or (unless `allow_failure`) `opRet` != 0.
    pub(crate) async fn run<R: Runner>(
        host: &Host<R>,
        args: &[&str],
        allow_failure: bool,
    ) -> Result<(CliOutput, Option<String>), StepError> {
        let command =
            Command::new("gluster").arg("--xml").args(args.iter().copied()).timeout(GLUSTER_TIMEOUT);
        let shown = command.to_string();
        let out = host.probe(command).await?;
        if !out.stdout.trim_start().starts_with("<?xml") && !out.stdout.trim_start().starts_with("<cliOutput")
        {
            let said = crate::error_tail(&out);
            let hint = said
                .contains("Connection failed")
                .then(|| "glusterd is not running on this node: systemctl start glusterd".to_owned());
            return Err(StepError::Command { command: shown, code: out.code, stderr: said, hint });
        }
        let parsed = CliOutput { text: out.stdout };
        let (ret, errstr) = {
            let doc = parsed.doc(&shown)?;
            let root = doc.root_element();
            (child_text(root, "opRet").parse::<i32>().unwrap_or(-1), child_text(root, "opErrstr"))
        };
        if ret != 0 {
            if allow_failure {
                return Ok((parsed, Some(errstr)));
            }
            return Err(StepError::Command { command: shown, code: Some(ret), stderr: errstr, hint: None });
        }
        Ok((parsed, None))
    }

    pub(crate) fn doc(&self, command: &str) -> Result<roxmltree::Document<'_>, StepError> {
        roxmltree::Document::parse(&self.text)
            .map_err(|e| StepError::Unexpected { command: command.to_owned(), message: e.to_string() })
    }
}

/// The text of `node`'s first child element called `name` ("" if none).
pub(crate) fn child_text(node: roxmltree::Node<'_, '_>, name: &str) -> String {
    node.children()
        .find(|c| c.has_tag_name(name))
        .and_then(|c| c.text())
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// All descendants called `name`.
fn descendants<'a, 'i>(
    node: roxmltree::Node<'a, 'i>,
    name: &'a str,
) -> impl Iterator<Item = roxmltree::Node<'a, 'i>> {
    node.descendants().filter(move |n| n.has_tag_name(name))
}

/// A peer as `pool list` / `peer status` show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Peer {
    pub names: Vec<String>,
    pub connected: bool,
    pub state: String,
}

impl Peer {
    pub(crate) fn in_cluster(&self) -> bool {
        self.connected && self.state == "Peer in Cluster"
    }
}

/// The peers glusterd knows (without this node: `peer status` leaves it out).
pub(crate) async fn peers<R: Runner>(host: &Host<R>) -> Result<Vec<Peer>, StepError> {
    let (out, _) = CliOutput::run(host, &["peer", "status"], false).await?;
    let doc = out.doc("gluster --xml peer status")?;
    Ok(descendants(doc.root_element(), "peer")
        .map(|p| {
            let mut names = vec![child_text(p, "hostname")];
            if let Some(list) = p.children().find(|c| c.has_tag_name("hostnames")) {
                names.extend(
                    list.children().filter(|c| c.is_element()).filter_map(|c| c.text()).map(str::to_owned),
                );
            }
            names.dedup();
            Peer { names, connected: child_text(p, "connected") == "1", state: child_text(p, "stateStr") }
        })
        .collect())
}

/// The trusted pool holds these servers (probed from the node this runs on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlusterPeers {
    /// The other servers, as the bricks name them (IP or host name).
    pub peers: Vec<String>,
}

impl GlusterPeers {
    pub(crate) async fn assess<R: Runner>(&self, host: &Host<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        let known = peers(host).await?;
        for peer in &self.peers {
            if !known.iter().any(|k| k.names.contains(peer)) {
                // `peer probe` is idempotent (an existing peer answers "already in peer list"),
                // so a probe repeated after a crash does no harm.
                a.change(
                    format!("{peer} is not in the trusted pool"),
                    Action::Run(
                        Command::new("gluster")
                            .args(["--mode=script", "peer", "probe", peer])
                            .timeout(GLUSTER_TIMEOUT),
                    ),
                );
            }
        }
        Ok(a)
    }
}

impl fmt::Display for GlusterPeers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "trusted pool with {}", self.peers.join(", "))
    }
}

/// How a volume places files on bricks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GlusterLayout {
    /// Whole files spread over bricks (the seed's choice).
    Distribute,
    /// Each file on `replica` bricks.
    Replicate { replica: u32 },
    /// Erasure-coded over `disperse` bricks, surviving `redundancy` losses.
    Disperse { disperse: u32, redundancy: u32 },
}

impl GlusterLayout {
    /// Bricks per subvolume: bricks are added in multiples of this.
    pub fn set_size(self) -> usize {
        match self {
            GlusterLayout::Distribute => 1,
            GlusterLayout::Replicate { replica } => replica as usize,
            GlusterLayout::Disperse { disperse, .. } => disperse as usize,
        }
    }

    fn create_args(self) -> Vec<String> {
        match self {
            GlusterLayout::Distribute => vec![],
            GlusterLayout::Replicate { replica } => vec!["replica".into(), replica.to_string()],
            GlusterLayout::Disperse { disperse, redundancy } => {
                vec!["disperse".into(), disperse.to_string(), "redundancy".into(), redundancy.to_string()]
            }
        }
    }

    /// Whether gluster's `typeStr` is this layout (with one or several subvolumes).
    fn matches(self, type_str: &str) -> bool {
        let base = type_str.trim_start_matches("Distributed-");
        match self {
            GlusterLayout::Distribute => type_str == "Distribute",
            GlusterLayout::Replicate { .. } => base == "Replicate",
            GlusterLayout::Disperse { .. } => base == "Disperse",
        }
    }
}

impl fmt::Display for GlusterLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GlusterLayout::Distribute => f.write_str("distribute"),
            GlusterLayout::Replicate { replica } => write!(f, "replicate {replica}"),
            GlusterLayout::Disperse { disperse, redundancy } => {
                write!(f, "disperse {disperse} redundancy {redundancy}")
            }
        }
    }
}

/// A volume exists with these bricks, in this order, and is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlusterVolume {
    pub name: String,
    pub layout: GlusterLayout,
    /// `host:/path`, in order: replica sets are consecutive bricks.
    pub bricks: Vec<String>,
    /// `gluster volume set` options.
    pub options: Vec<(String, String)>,
}

/// What `volume info` says of an existing volume.
struct VolumeInfo {
    type_str: String,
    status: String,
    bricks: Vec<String>,
    options: Vec<(String, String)>,
}

impl GlusterVolume {
    fn cli(&self, args: &[&str]) -> Command {
        Command::new("gluster").arg("--mode=script").args(args.iter().copied()).timeout(GLUSTER_TIMEOUT)
    }

    async fn info<R: Runner>(&self, host: &Host<R>) -> Result<Option<VolumeInfo>, StepError> {
        let (out, failed) = CliOutput::run(host, &["volume", "info", &self.name], true).await?;
        if let Some(errstr) = failed {
            // opRet -1, opErrno 30806: "Volume gv0 does not exist".
            if errstr.contains("does not exist") {
                return Ok(None);
            }
            return Err(StepError::Command {
                command: format!("gluster --xml volume info {}", self.name),
                code: Some(-1),
                stderr: errstr,
                hint: None,
            });
        }
        let doc = out.doc("gluster --xml volume info")?;
        let volume = descendants(doc.root_element(), "volume")
            .find(|v| child_text(*v, "name") == self.name)
            .ok_or_else(|| StepError::Unexpected {
                command: format!("gluster --xml volume info {}", self.name),
                message: "no <volume> of that name".into(),
            })?;
        let bricks = volume
            .children()
            .find(|c| c.has_tag_name("bricks"))
            .map(|b| {
                b.children().filter(|c| c.has_tag_name("brick")).map(|c| child_text(c, "name")).collect()
            })
            .unwrap_or_default();
        let options =
            descendants(volume, "option").map(|o| (child_text(o, "name"), child_text(o, "value"))).collect();
        Ok(Some(VolumeInfo {
            type_str: child_text(volume, "typeStr"),
            status: child_text(volume, "statusStr"),
            bricks,
            options,
        }))
    }

    pub(crate) async fn assess<R: Runner>(&self, host: &Host<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        let bricks: Vec<&str> = self.bricks.iter().map(String::as_str).collect();
        let Some(info) = self.info(host).await? else {
            let mut create = vec!["volume", "create", &self.name];
            let layout = self.layout.create_args();
            create.extend(layout.iter().map(String::as_str));
            create.extend(["transport", "tcp"]);
            create.extend(&bricks);
            a.change(format!("volume {} does not exist", self.name), Action::Run(self.cli(&create)));
            a.change(
                format!("volume {} is not started", self.name),
                Action::Run(self.cli(&["volume", "start", &self.name])),
            );
            for (key, value) in &self.options {
                a.change(
                    format!("{key} is not {value}"),
                    Action::Run(self.cli(&["volume", "set", &self.name, key, value])),
                );
            }
            return Ok(a);
        };
        if !self.layout.matches(&info.type_str) {
            return Err(StepError::Refused {
                reason: format!(
                    "volume {} exists as {}, not {}; pvfs does not convert volumes",
                    self.name, info.type_str, self.layout
                ),
            });
        }
        if info.bricks != self.bricks {
            let grows = info.bricks.len() < self.bricks.len() && self.bricks.starts_with(&info.bricks);
            let added = &bricks[info.bricks.len().min(bricks.len())..];
            if !grows || !added.len().is_multiple_of(self.layout.set_size()) {
                return Err(StepError::Refused {
                    reason: format!(
                        "volume {} has bricks {} but the cluster file lists {}; pvfs only adds bricks at the end \
                         (in whole replica/disperse sets), it never removes or reorders them",
                        self.name,
                        info.bricks.join(" "),
                        self.bricks.join(" ")
                    ),
                });
            }
            let mut add = vec!["volume", "add-brick", &self.name];
            add.extend(added);
            a.change(
                format!("volume {} lacks bricks {}", self.name, added.join(" ")),
                Action::Run(self.cli(&add)),
            );
            // New bricks get no files until the layout is fixed (the seed's step 4d).
            a.actions.push(Action::Run(self.cli(&[
                "volume",
                "rebalance",
                &self.name,
                "fix-layout",
                "start",
            ])));
        }
        if info.status != "Started" {
            a.change(
                format!("volume {} is {}", self.name, info.status),
                Action::Run(self.cli(&["volume", "start", &self.name])),
            );
        }
        for (key, value) in &self.options {
            let have = info.options.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
            if have != Some(value.as_str()) {
                a.change(
                    format!("{key} is {}, not {value}", have.unwrap_or("unset")),
                    Action::Run(self.cli(&["volume", "set", &self.name, key, value])),
                );
            }
        }
        Ok(a)
    }

    /// Brick processes of this volume that are not online, from `volume status`; empty when
    /// every brick is up.
    pub(crate) async fn offline_bricks<R: Runner>(&self, host: &Host<R>) -> Result<Vec<String>, StepError> {
        let (out, failed) = CliOutput::run(host, &["volume", "status", &self.name], true).await?;
        if let Some(errstr) = failed {
            return Ok(vec![format!("volume status: {errstr}")]);
        }
        let doc = out.doc("gluster --xml volume status")?;
        let online: Vec<String> = descendants(doc.root_element(), "node")
            .filter(|n| child_text(*n, "status") == "1")
            .map(|n| format!("{}:{}", child_text(n, "hostname"), child_text(n, "path")))
            .collect();
        Ok(self.bricks.iter().filter(|b| !online.contains(b)).cloned().collect())
    }
}

impl fmt::Display for GlusterVolume {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gluster volume {} ({}, {} bricks)", self.name, self.layout, self.bricks.len())
    }
}

#[cfg(test)]
mod tests;
