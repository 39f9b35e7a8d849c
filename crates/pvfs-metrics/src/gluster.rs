//! GlusterFS's own view of its bricks: what `gluster --xml` says of them, and what the kernel
//! says of each brick process on this node.
//!
//! - [`parse_status`]: `gluster volume status VOL [detail] --xml` (cli-xml-output.c's
//!   `cli_xml_output_vol_status`): each brick's host, path, online state, port and pid, and with
//!   `detail` its size and inodes.
//! - [`parse_profile`]: `gluster volume profile VOL info [incremental|cumulative] --xml`
//!   (`cli_xml_output_vol_profile`): per brick, each file operation's calls and latencies
//!   (nanoseconds), the bytes read and written and the seconds covered, cumulative and/or since
//!   the last `info` call. Profiling costs the bricks a clock read per operation, so it is
//!   started only when asked for.
//! - [`parse_heal_summary`]: `gluster volume heal VOL info summary --xml`: per brick, entries
//!   waiting to heal, in split-brain, possibly healing; a brick that could not be asked has its
//!   status only (GlusterFS 10.3 writes `Failed to process entries completely. (…)` there with
//!   `totalNumberOfEntries0` run into it, and no counts).
//! - [`local_bricks`]: the brick processes of this node, from the pid files glusterd writes
//!   (`/run/gluster/vols/VOL/HOST-BRICK.pid`) and each process's `/proc/PID/cmdline` and
//!   `/proc/PID/io`: up or down (a brick down named by glusterd's record of it), and the bytes
//!   it has read and written, every second, with no call to glusterd and no profiling.
//!
//! In `--xml` mode the CLI exits 0 even when the operation failed; the answer's `opRet` says
//! (-1 with `opErrstr`), and [`GlusterError::Failed`] carries it.

use pvfs_host::Root;
use roxmltree::Node;
use serde::{Deserialize, Serialize};

/// An answer that is not what the command prints.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GlusterError {
    #[error("{what}: not XML: {why}")]
    NotXml { what: &'static str, why: String },
    /// glusterd said no (`opRet` not 0), with its words.
    #[error("{what}: glusterd answered {ret}: {message}")]
    Failed { what: &'static str, ret: i64, message: String },
    #[error("{what}: {why}")]
    Shape { what: &'static str, why: String },
}

/// A brick (or daemon) as `volume status` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BrickStatus {
    /// `gfs1`; for a daemon, its name (`Self-heal Daemon`).
    pub host: String,
    /// `/bricks/b1`; for a daemon, `localhost` or the host it runs on.
    pub path: String,
    pub online: bool,
    pub port: Option<u16>,
    pub pid: Option<u32>,
    /// With `detail`: bytes and inodes of the brick's file system.
    pub size_total: Option<u64>,
    pub size_free: Option<u64>,
    pub inodes_total: Option<u64>,
    pub inodes_free: Option<u64>,
}

impl BrickStatus {
    /// `host:/path`, as volume info and profile name a brick.
    pub fn name(&self) -> String {
        format!("{}:{}", self.host, self.path)
    }

    /// A brick, rather than one of the volume's daemons (self-heal, quota, …), which status
    /// lists with a path that is not absolute.
    pub fn is_brick(&self) -> bool {
        self.path.starts_with('/')
    }
}

/// One volume's status.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VolumeStatus {
    pub name: String,
    pub nodes: Vec<BrickStatus>,
}

impl VolumeStatus {
    pub fn bricks(&self) -> impl Iterator<Item = &BrickStatus> {
        self.nodes.iter().filter(|n| n.is_brick())
    }
}

/// The `<cliOutput>` root, with `opRet` checked.
fn answer<'a, 'i>(
    doc: &'a roxmltree::Document<'i>,
    what: &'static str,
) -> Result<Node<'a, 'i>, GlusterError> {
    let root = doc.root_element();
    if !root.has_tag_name("cliOutput") {
        return Err(GlusterError::Shape {
            what,
            why: format!("<{}> where <cliOutput> was expected", root.tag_name().name()),
        });
    }
    let ret = text(root, "opRet");
    let ret: i64 = ret.parse().map_err(|_| GlusterError::Shape { what, why: format!("opRet {ret:?}") })?;
    if ret != 0 {
        return Err(GlusterError::Failed { what, ret, message: text(root, "opErrstr").to_owned() });
    }
    Ok(root)
}

/// A `gluster --xml` answer that carries nothing but whether it worked (`volume profile VOL
/// start`, `stop`): `Ok` for `opRet` 0, else glusterd's words (`opErrstr`).
pub fn parse_answer(xml: &str) -> Result<(), GlusterError> {
    const WHAT: &str = "gluster --xml";
    let doc = parse_xml(xml, WHAT)?;
    answer(&doc, WHAT).map(|_| ())
}

fn parse_xml<'i>(xml: &'i str, what: &'static str) -> Result<roxmltree::Document<'i>, GlusterError> {
    roxmltree::Document::parse(xml).map_err(|e| GlusterError::NotXml { what, why: e.to_string() })
}

/// The trimmed text of `node`'s first child `name` ("" when it has none).
fn text<'a>(node: Node<'a, '_>, name: &str) -> &'a str {
    node.children().find(|c| c.has_tag_name(name)).and_then(|c| c.text()).unwrap_or_default().trim()
}

/// A child's text as a number; `None` for `N/A`, `-1` (a pid or port not running) or nothing.
fn number<T: std::str::FromStr>(node: Node<'_, '_>, name: &str) -> Option<T> {
    text(node, name).parse().ok()
}

fn child<'a, 'i>(node: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    node.children().find(|c| c.has_tag_name(name))
}

fn children<'a, 'i: 'a>(node: Node<'a, 'i>, name: &'a str) -> impl Iterator<Item = Node<'a, 'i>> + 'a {
    node.children().filter(move |c| c.has_tag_name(name))
}

/// Reads `gluster volume status [VOL|all] [detail] --xml`.
pub fn parse_status(xml: &str) -> Result<Vec<VolumeStatus>, GlusterError> {
    const WHAT: &str = "gluster volume status --xml";
    let doc = parse_xml(xml, WHAT)?;
    let root = answer(&doc, WHAT)?;
    let volumes = child(root, "volStatus")
        .and_then(|s| child(s, "volumes"))
        .ok_or_else(|| GlusterError::Shape { what: WHAT, why: "no <volStatus><volumes>".into() })?;
    Ok(children(volumes, "volume")
        .map(|v| VolumeStatus {
            name: text(v, "volName").to_owned(),
            nodes: children(v, "node")
                .map(|n| BrickStatus {
                    host: text(n, "hostname").to_owned(),
                    path: text(n, "path").to_owned(),
                    online: text(n, "status") == "1",
                    port: number(n, "port"),
                    pid: number::<i64>(n, "pid").and_then(|p| u32::try_from(p).ok()).filter(|p| *p > 0),
                    size_total: number(n, "sizeTotal"),
                    size_free: number(n, "sizeFree"),
                    inodes_total: number(n, "inodesTotal"),
                    inodes_free: number(n, "inodesFree"),
                })
                .collect(),
        })
        .collect())
}

/// One file operation's figures over a profile's span.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fop {
    /// `WRITE`, `LOOKUP`, `CREATE`, ….
    pub name: String,
    pub hits: u64,
    /// Nanoseconds.
    pub avg_latency_ns: f64,
    pub min_latency_ns: f64,
    pub max_latency_ns: f64,
}

/// A brick's profile over one span.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProfileStats {
    /// Seconds the span covers.
    pub duration_s: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// The operations that were called (those never called are not listed).
    pub fops: Vec<Fop>,
    /// Reads and writes by size class (`size` bytes or more, below twice that).
    pub blocks: Vec<(u64, u64, u64)>,
}

impl ProfileStats {
    pub fn fop(&self, name: &str) -> Option<&Fop> {
        self.fops.iter().find(|f| f.name == name)
    }

    /// Every call of every operation.
    pub fn calls(&self) -> u64 {
        self.fops.iter().map(|f| f.hits).sum()
    }
}

/// One brick's profile.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BrickProfile {
    /// `host:/path`.
    pub brick: String,
    /// Since profiling started (`info` and `info cumulative`).
    pub cumulative: Option<ProfileStats>,
    /// Since the last `info` call (`info` and `info incremental`).
    pub interval: Option<ProfileStats>,
}

/// Reads `gluster volume profile VOL info [incremental|cumulative] --xml`: the volume's name and
/// each brick's profile.
pub fn parse_profile(xml: &str) -> Result<(String, Vec<BrickProfile>), GlusterError> {
    const WHAT: &str = "gluster volume profile info --xml";
    let doc = parse_xml(xml, WHAT)?;
    let root = answer(&doc, WHAT)?;
    let profile = child(root, "volProfile")
        .ok_or_else(|| GlusterError::Shape { what: WHAT, why: "no <volProfile>".into() })?;
    let stats = |node: Option<Node<'_, '_>>| -> Result<Option<ProfileStats>, GlusterError> {
        let Some(s) = node else { return Ok(None) };
        let whole = |name: &str| {
            number::<u64>(s, name)
                .ok_or_else(|| GlusterError::Shape { what: WHAT, why: format!("<{name}> is not a count") })
        };
        let real = |node: Node<'_, '_>, name: &str| {
            number::<f64>(node, name)
                .filter(|v| v.is_finite())
                .ok_or_else(|| GlusterError::Shape { what: WHAT, why: format!("<{name}> is not a number") })
        };
        let mut fops = Vec::new();
        for f in child(s, "fopStats").into_iter().flat_map(|f| children(f, "fop")) {
            fops.push(Fop {
                name: text(f, "name").to_owned(),
                hits: number(f, "hits").ok_or_else(|| GlusterError::Shape {
                    what: WHAT,
                    why: "a fop's <hits> is not a count".into(),
                })?,
                avg_latency_ns: real(f, "avgLatency")?,
                min_latency_ns: real(f, "minLatency")?,
                max_latency_ns: real(f, "maxLatency")?,
            });
        }
        let blocks = child(s, "blockStats")
            .into_iter()
            .flat_map(|b| children(b, "block"))
            .filter_map(|b| Some((number(b, "size")?, number(b, "reads")?, number(b, "writes")?)))
            .collect();
        Ok(Some(ProfileStats {
            duration_s: whole("duration")?,
            read_bytes: whole("totalRead")?,
            write_bytes: whole("totalWrite")?,
            fops,
            blocks,
        }))
    };
    let mut bricks = Vec::new();
    for b in children(profile, "brick") {
        bricks.push(BrickProfile {
            brick: text(b, "brickName").to_owned(),
            cumulative: stats(child(b, "cumulativeStats"))?,
            interval: stats(child(b, "intervalStats"))?,
        });
    }
    Ok((text(profile, "volname").to_owned(), bricks))
}

/// One brick's heal summary.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HealCount {
    /// `host:/path`.
    pub brick: String,
    /// `Connected`, or why it could not be asked.
    pub status: String,
    /// Entries that need healing, of which waiting, in split-brain, being healed; `None`
    /// when the brick could not be asked.
    pub total: Option<u64>,
    pub pending: Option<u64>,
    pub split_brain: Option<u64>,
    pub possibly_healing: Option<u64>,
}

impl HealCount {
    pub fn connected(&self) -> bool {
        self.status == "Connected"
    }
}

/// Reads `gluster volume heal VOL info summary --xml`.
pub fn parse_heal_summary(xml: &str) -> Result<Vec<HealCount>, GlusterError> {
    const WHAT: &str = "gluster volume heal info summary --xml";
    let doc = parse_xml(xml, WHAT)?;
    let root = answer(&doc, WHAT)?;
    let bricks = child(root, "healInfo")
        .and_then(|h| child(h, "bricks"))
        .ok_or_else(|| GlusterError::Shape { what: WHAT, why: "no <healInfo><bricks>".into() })?;
    Ok(children(bricks, "brick")
        .map(|b| HealCount {
            brick: text(b, "name").to_owned(),
            // GlusterFS 10.3 runs a stray `totalNumberOfEntries0` into the status text of a
            // brick it could not ask (seen in testdata/gluster/heal-summary-brick-down.xml).
            status: {
                let status = child(b, "status").and_then(|s| s.text()).unwrap_or_default();
                // Not a count of the brick's: glusterfs could not ask it.
                status.split("totalNumberOfEntries").next().unwrap_or_default().trim().to_owned()
            },
            total: number(b, "totalNumberOfEntries"),
            pending: number(b, "numberOfEntriesInHealPending"),
            split_brain: number(b, "numberOfEntriesInSplitBrain"),
            possibly_healing: number(b, "numberOfEntriesPossiblyHealing"),
        })
        .collect())
}

/// A brick of this node, from glusterd's pid file and the kernel.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LocalBrick {
    pub volume: String,
    /// The brick's directory (`--brick-name`); from the pid file's name when it is down.
    pub path: String,
    /// Its `glusterfsd` when running.
    pub pid: Option<u32>,
    pub port: Option<u16>,
    /// `/proc/PID/io`: bytes it read and wrote through system calls (its clients' traffic and
    /// its disk's), and bytes it caused to be read from and written to storage.
    pub rchar: u64,
    pub wchar: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// A brick of this node over one interval, as `top` shows it and a benchmark's record keeps it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BrickRates {
    // Fields in the byte order of their keys, as every line's are.
    pub path: String,
    /// Bytes a second its glusterfsd read and wrote through system calls: its clients'
    /// requests and replies and its files' data together (`rchar`, `wchar`).
    pub rchar_s: f64,
    /// Bytes a second it caused to be read from and written to storage (`read_bytes`,
    /// `write_bytes`: what reached the disk, not the page cache).
    pub read_bytes_s: f64,
    pub up: bool,
    pub volume: String,
    pub wchar_s: f64,
    pub write_bytes_s: f64,
}

impl BrickRates {
    /// Every brick of `curr` over the `seconds` since `prev`. A brick whose process changed
    /// (restarted) or is new counts from zero, as its new process's counters do; one that is
    /// down has no rates.
    pub fn between(prev: &[LocalBrick], curr: &[LocalBrick], seconds: f64) -> Vec<BrickRates> {
        let t = if seconds > 0.0 { seconds } else { 0.01 };
        curr.iter()
            .map(|c| {
                let p = prev.iter().find(|p| p.volume == c.volume && p.path == c.path && p.pid == c.pid);
                let rate = |f: fn(&LocalBrick) -> u64| {
                    if c.pid.is_none() {
                        return 0.0;
                    }
                    let before = p.map_or(0, f);
                    f(c).saturating_sub(before) as f64 / t
                };
                BrickRates {
                    path: c.path.clone(),
                    rchar_s: rate(|b| b.rchar),
                    read_bytes_s: rate(|b| b.read_bytes),
                    up: c.pid.is_some(),
                    volume: c.volume.clone(),
                    wchar_s: rate(|b| b.wchar),
                    write_bytes_s: rate(|b| b.write_bytes),
                }
            })
            .collect()
    }
}

/// Where glusterd writes a brick process's pid (`-p` on its command line); `/var/run` is a
/// link to it on every system that has systemd.
const PID_DIR: &str = "/run/gluster/vols";

/// This node's bricks: one per pid file glusterd keeps, each up when its pid is a `glusterfsd`
/// whose command line names that pid file (a reused pid is not taken for the brick). Empty on a
/// node without GlusterFS bricks (two `stat`s: nothing else is read).
pub fn local_bricks(root: &Root) -> Vec<LocalBrick> {
    let Ok(volumes) = root.list_dir(PID_DIR) else { return Vec::new() };
    let mut bricks = Vec::new();
    for volume in volumes {
        let dir = format!("{PID_DIR}/{volume}");
        let Ok(files) = root.list_dir(&dir) else { continue };
        for file in files.into_iter().filter(|f| f.ends_with(".pid")) {
            let pid_file = format!("{dir}/{file}");
            let mut brick = LocalBrick { volume: volume.clone(), ..LocalBrick::default() };
            let pid = root.read_trimmed(&pid_file).ok().and_then(|p| p.parse::<u32>().ok());
            let running = pid.and_then(|pid| {
                let cmdline = std::fs::read(root.path(&format!("/proc/{pid}/cmdline"))).ok()?;
                let args = brick_args(&cmdline)?;
                // glusterd names the pid file under /var/run; the same file under /run.
                let names_it =
                    args.pid_file.trim_start_matches("/var") == pid_file.trim_start_matches("/var");
                names_it.then_some((pid, args))
            });
            match running {
                Some((pid, args)) => {
                    brick.pid = Some(pid);
                    brick.path = args.brick;
                    brick.port = args.port;
                    if let Ok(io) = root.read_to_string(&format!("/proc/{pid}/io")) {
                        for line in io.lines() {
                            let Some((key, value)) = line.split_once(':') else { continue };
                            let value = value.trim().parse().unwrap_or(0);
                            match key {
                                "rchar" => brick.rchar = value,
                                "wchar" => brick.wchar = value,
                                "read_bytes" => brick.read_bytes = value,
                                "write_bytes" => brick.write_bytes = value,
                                _ => {}
                            }
                        }
                    }
                }
                // Down: named by glusterd's record of the brick its pid file is for.
                None => {
                    let stem = file.trim_end_matches(".pid");
                    brick.path = recorded_path(root, &volume, stem).unwrap_or_else(|| stem.to_owned());
                }
            }
            bricks.push(brick);
        }
    }
    bricks
}

/// glusterd's records of a volume's bricks (`/var/lib/glusterd/vols/VOL/bricks/HOST:-PATH`,
/// `hostname=` and `path=` lines).
const BRICK_INFO_DIR: &str = "/var/lib/glusterd/vols";

/// The path of the brick whose pid file is `stem.pid`: glusterd names that file
/// `HOST` then the path with each `/` made `-`, so the record whose hostname and path make
/// `stem` is the brick's. `None` when no record does (the pid file's name is used instead).
fn recorded_path(root: &Root, volume: &str, stem: &str) -> Option<String> {
    let dir = format!("{BRICK_INFO_DIR}/{volume}/bricks");
    root.list_dir(&dir).ok()?.into_iter().find_map(|file| {
        let text = root.read_to_string(&format!("{dir}/{file}")).ok()?;
        let field = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).map(str::trim);
        let (host, path) = (field("hostname=")?, field("path=")?);
        (format!("{host}{}", path.replace('/', "-")) == stem).then(|| path.to_owned())
    })
}

/// What a brick process's command line says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BrickArgs {
    brick: String,
    pid_file: String,
    port: Option<u16>,
}

/// A `glusterfsd`'s NUL-separated command line; `None` for any other process.
fn brick_args(cmdline: &[u8]) -> Option<BrickArgs> {
    let args: Vec<&str> = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .filter_map(|a| std::str::from_utf8(a).ok())
        .collect();
    let program = args.first()?;
    if !program.ends_with("glusterfsd") {
        return None;
    }
    let value = |flag: &str| args.windows(2).find(|w| w[0] == flag).map(|w| w[1].to_owned());
    Some(BrickArgs {
        brick: value("--brick-name")?,
        pid_file: value("-p")?,
        port: value("--brick-port").and_then(|p| p.parse().ok()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/gluster").join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn status_names_each_brick_up_or_down() {
        let up = parse_status(&fixture("status.xml")).unwrap();
        assert_eq!(up.len(), 1);
        assert_eq!(up[0].name, "fx");
        let bricks: Vec<_> = up[0].bricks().map(|b| (b.name(), b.online, b.port, b.pid)).collect();
        assert_eq!(
            bricks,
            [
                ("vm:/srv/gb1".to_owned(), true, Some(49926), Some(4893)),
                ("vm:/srv/gb2".to_owned(), true, Some(55816), Some(4909)),
            ]
        );
        assert_eq!(up[0].nodes.len(), 3, "and the self-heal daemon");
        assert!(!up[0].nodes[2].is_brick());

        let down = parse_status(&fixture("status-brick-down.xml")).unwrap();
        let gb2 = down[0].bricks().find(|b| b.path == "/srv/gb2").unwrap();
        assert_eq!((gb2.online, gb2.port, gb2.pid), (false, None, None));

        let detail = parse_status(&fixture("status-detail.xml")).unwrap();
        let gb1 = detail[0].bricks().next().unwrap();
        assert_eq!((gb1.size_total, gb1.inodes_free), (Some(270553174016), Some(16335393)));

        let err = parse_status(&fixture("status-no-such-volume.xml")).unwrap_err();
        assert_eq!(
            err,
            GlusterError::Failed {
                what: "gluster volume status --xml",
                ret: -1,
                message: "Volume nosuch does not exist".into()
            }
        );
        assert!(matches!(
            parse_status("Connection failed. Please check if gluster daemon is operational."),
            Err(GlusterError::NotXml { .. })
        ));
    }

    #[test]
    fn a_profile_reads_each_bricks_operations_and_bytes() {
        let (volume, bricks) = parse_profile(&fixture("profile-info.xml")).unwrap();
        assert_eq!((volume.as_str(), bricks.len()), ("fx", 2));
        let gb1 = &bricks[0];
        assert_eq!(gb1.brick, "vm:/srv/gb1");
        let cumulative = gb1.cumulative.as_ref().unwrap();
        assert_eq!(
            (cumulative.duration_s, cumulative.read_bytes, cumulative.write_bytes),
            (7, 401408, 20971661)
        );
        let write = cumulative.fop("WRITE").unwrap();
        assert_eq!(write.hits, 210);
        assert!((write.avg_latency_ns - 595192.052381).abs() < 1e-6 && write.max_latency_ns == 3608985.0);
        assert_eq!(cumulative.fop("READ").map(|f| f.hits), Some(94));
        assert!(
            cumulative.blocks.contains(&(2, 0, 50)),
            "50 writes of 2 to 3 bytes: {:?}",
            cumulative.blocks
        );
        assert!(gb1.interval.is_some());
        // The interval right after: nothing called, no operation listed.
        let (_, idle) = parse_profile(&fixture("profile-incremental.xml")).unwrap();
        assert!(
            idle.iter()
                .all(|b| b.cumulative.is_none() && b.interval.as_ref().is_some_and(|i| i.fops.is_empty()))
        );
        let (_, busy) = parse_profile(&fixture("profile-incremental-busy.xml")).unwrap();
        let interval = busy[0].interval.as_ref().unwrap();
        assert_eq!((interval.duration_s, interval.write_bytes), (44, 4194394));
        assert!(interval.calls() > 0);
    }

    #[test]
    fn heal_counts_and_a_brick_that_could_not_be_asked() {
        let clean = parse_heal_summary(&fixture("heal-summary.xml")).unwrap();
        assert!(clean.iter().all(|h| h.connected() && h.total == Some(0) && h.pending == Some(0)));
        let down = parse_heal_summary(&fixture("heal-summary-brick-down.xml")).unwrap();
        assert_eq!(
            (down[0].brick.as_str(), down[0].total, down[0].pending),
            ("vm:/srv/gb1", Some(31), Some(31))
        );
        assert_eq!(down[1].brick, "vm:/srv/gb2");
        assert!(!down[1].connected());
        assert_eq!(
            down[1].status,
            "Failed to process entries completely. (Transport endpoint is not connected)"
        );
        assert_eq!((down[1].total, down[1].pending), (None, None));
        let after = parse_heal_summary(&fixture("heal-summary-after-restart.xml")).unwrap();
        assert_eq!(after.iter().map(|h| h.pending).collect::<Vec<_>>(), [Some(8), Some(0)]);
    }

    /// A node's bricks from glusterd's pid files: the running one with its kernel counters, a
    /// pid file whose pid is some other process (reused) taken as down, no pid files none.
    #[test]
    fn local_bricks_from_pid_files_and_the_kernel() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        assert!(local_bricks(&root).is_empty());
        let put = |path: &str, bytes: &[u8]| {
            let at = root.path(path);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, bytes).unwrap();
        };
        let cmdline = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/gluster/glusterfsd.cmdline"),
        )
        .unwrap();
        put("/run/gluster/vols/fx/vm-srv-gb1.pid", b"4893\n");
        put("/proc/4893/cmdline", &cmdline);
        put("/proc/4893/io", b"rchar: 22160428\nwchar: 22213982\nsyscr: 5988\nsyscw: 3286\nread_bytes: 24576\nwrite_bytes: 23179264\ncancelled_write_bytes: 16384\n");
        put("/run/gluster/vols/fx/vm-srv-gb2.pid", b"5267\n");
        put("/proc/5267/cmdline", b"/usr/bin/sleep\x0060\x00");
        let bricks = local_bricks(&root);
        assert_eq!(
            bricks,
            [
                LocalBrick {
                    volume: "fx".into(),
                    path: "/srv/gb1".into(),
                    pid: Some(4893),
                    port: Some(49926),
                    rchar: 22160428,
                    wchar: 22213982,
                    read_bytes: 24576,
                    write_bytes: 23179264,
                },
                LocalBrick { volume: "fx".into(), path: "vm-srv-gb2".into(), ..LocalBrick::default() },
            ]
        );
        // With glusterd's record of the brick, the one down is named by its path.
        let info = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/gluster/glusterd-brickinfo.txt"),
        )
        .unwrap();
        put("/var/lib/glusterd/vols/fx/bricks/vm:-srv-gb2", &info);
        assert_eq!(local_bricks(&root)[1].path, "/srv/gb2");
    }

    /// A second's rates: bytes over the interval; a restarted brick (new pid) from zero; a
    /// brick down, none.
    #[test]
    fn a_bricks_rates_over_a_second() {
        let brick = |pid: Option<u32>, bytes: u64| LocalBrick {
            volume: "gv0".into(),
            path: "/bricks/b1".into(),
            pid,
            port: Some(49152),
            rchar: bytes * 2,
            wchar: bytes,
            read_bytes: bytes / 4,
            write_bytes: bytes,
        };
        let rates = BrickRates::between(&[brick(Some(7), 1000)], &[brick(Some(7), 3000)], 0.5);
        assert_eq!(
            rates,
            [BrickRates {
                path: "/bricks/b1".into(),
                rchar_s: 8000.0,
                read_bytes_s: 1000.0,
                up: true,
                volume: "gv0".into(),
                wchar_s: 4000.0,
                write_bytes_s: 4000.0,
            }]
        );
        let restarted = BrickRates::between(&[brick(Some(7), 5000)], &[brick(Some(8), 1000)], 1.0);
        assert_eq!(restarted[0].write_bytes_s, 1000.0);
        let down = BrickRates::between(&[brick(Some(7), 5000)], &[brick(None, 0)], 1.0);
        assert_eq!((down[0].up, down[0].write_bytes_s), (false, 0.0));
    }

    #[test]
    fn garbage_is_refused_not_panicked_on() {
        for text in [
            "",
            "<cliOutput/>",
            "<cliOutput><opRet>x</opRet></cliOutput>",
            "<a><b></a>",
            "<cliOutput><opRet>0</opRet></cliOutput>",
        ] {
            assert!(parse_status(text).is_err(), "{text}");
            assert!(parse_profile(text).is_err(), "{text}");
            assert!(parse_heal_summary(text).is_err(), "{text}");
        }
    }
}
