//! Issue 27: `serve --gmetad-xml --gmetad-interactive` answer as gmetad's two ports, and a real
//! gmetad (Debian's 3.7.2; CI installs it) polling serve as a `data_source` keeps each host's
//! RRDs and answers its own queries with the same hosts and metrics serve shows.

use super::{OneNode, Serve};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A free loopback port (gmetad 3.7.2 cannot be told an address, only ports).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// What a gmetad port answers: the request line (the interactive port) then everything until
/// it closes; bounded at 20 s.
fn ask(to: SocketAddr, request: Option<&str>) -> String {
    let limit = Duration::from_secs(20);
    let mut stream = std::net::TcpStream::connect_timeout(&to, limit).unwrap();
    stream.set_read_timeout(Some(limit)).unwrap();
    if let Some(request) = request {
        writeln!(stream, "{request}").unwrap();
    }
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// Every host's metrics (name → value) in a Ganglia document.
fn hosts(xml: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let options = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
    let doc = roxmltree::Document::parse_with_options(xml, options).unwrap_or_else(|e| panic!("{e}:\n{xml}"));
    doc.descendants()
        .filter(|n| n.has_tag_name("HOST"))
        .map(|host| {
            let metrics = host
                .children()
                .filter(|m| m.has_tag_name("METRIC"))
                .map(|m| (m.attribute("NAME").unwrap().to_owned(), m.attribute("VAL").unwrap().to_owned()))
                .collect();
            (host.attribute("NAME").unwrap().to_owned(), metrics)
        })
        .collect()
}

/// gmetad, killed and reaped when dropped.
struct Gmetad(std::process::Child);

impl Drop for Gmetad {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The newest finite value among an RRD's last 30 seconds.
fn stored(rrd: &std::path::Path) -> Option<f64> {
    let out =
        Command::new("rrdtool").arg("fetch").arg(rrd).args(["AVERAGE", "--start", "-30"]).output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(": ").and_then(|(_, v)| v.trim().parse::<f64>().ok()))
        .rfind(|v| v.is_finite())
}

#[test]
fn a_real_gmetad_polls_serve_and_keeps_each_hosts_rrds_as_from_gmond() {
    let OneNode { dir, agent, cluster } = OneNode::start();
    let (xml_port, interactive_port) = (free_port(), free_port());
    let xml_flag = format!("127.0.0.1:{xml_port}");
    let interactive_flag = format!("127.0.0.1:{interactive_port}");
    let serve = Serve::start_with(
        &dir,
        &cluster,
        &["--gmetad-xml", &xml_flag, "--gmetad-interactive", &interactive_flag],
    );
    serve.said("gmetad's interactive port", Duration::from_secs(10));
    let (xml, interactive) = (xml_flag.parse().unwrap(), interactive_flag.parse().unwrap());

    // serve's host once the agent's facts are in (asked when the node is first up).
    let deadline = Instant::now() + Duration::from_secs(30);
    let ours = loop {
        let all = hosts(&ask(xml, None));
        if let Some(n1) = all.get("n1").filter(|m| m.contains_key("cpu_num")) {
            break n1.clone();
        }
        assert!(
            Instant::now() < deadline,
            "serve's XML port showed no n1 with its facts within 30 s: {all:?}"
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    let cpus = std::thread::available_parallelism().unwrap().get().to_string();
    assert_eq!(ours["cpu_num"], cpus, "{ours:?}");
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(ours["os_release"], kernel.trim());
    assert!(ours.keys().any(|k| k.starts_with("disk_")), "no disk's iostat columns: {ours:?}");

    // A real gmetad polling serve every second as a data source. `scalable off` makes it keep
    // the hosts of a grid source as its own, as it keeps a gmond's.
    let rrds = dir.path().join("rrds");
    std::fs::create_dir_all(&rrds).unwrap();
    let (g_xml, g_interactive) = (free_port(), free_port());
    let conf = format!(
        "data_source \"pvfs\" 1 127.0.0.1:{xml_port}\nscalable off\nsetuid off\nrrd_rootdir \"{}\"\n\
         xml_port {g_xml}\ninteractive_port {g_interactive}\n",
        rrds.display()
    );
    let conf_path = dir.write("gmetad.conf", &conf);
    let log = dir.path().join("gmetad.log");
    let _gmetad = Gmetad(
        Command::new("gmetad")
            .arg("-c")
            .arg(&conf_path)
            .arg("--debug=1")
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .expect("gmetad (Debian's package gmetad; cargo xtask ci installs it)"),
    );
    // Its RRDs for n1, under the cluster's name, hold real values: the standard metrics and
    // the disks' iostat columns.
    let host_dir = rrds.join("t").join("n1");
    let deadline = Instant::now() + Duration::from_secs(40);
    let disk = loop {
        let disk_rrd = std::fs::read_dir(&host_dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .find(|f| f.starts_with("disk_") && f.ends_with("_r_per_second.rrd"));
        let ready = ["load_one.rrd", "mem_total.rrd", "cpu_idle.rrd"]
            .iter()
            .all(|f| stored(&host_dir.join(f)).is_some());
        if let Some(disk) = disk_rrd.filter(|d| ready && stored(&host_dir.join(d)).is_some()) {
            break disk;
        }
        assert!(
            Instant::now() < deadline,
            "gmetad kept no usable RRDs for n1 within 40 s; its log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let mem_total: f64 = ours["mem_total"].parse().unwrap();
    assert_eq!(stored(&host_dir.join("mem_total.rrd")), Some(mem_total), "{disk}");

    // gmetad's own query port answers the host with the same metrics serve's does.
    // gmetad rebuilds a source's hosts at each poll; asked in the middle, it may not have n1.
    let g_addr = format!("127.0.0.1:{g_interactive}").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let theirs = loop {
        let answer = ask(g_addr, Some("/t/n1"));
        let theirs = hosts(&answer);
        if theirs.contains_key("n1") {
            break theirs;
        }
        assert!(Instant::now() < deadline, "gmetad's query port showed no n1 within 15 s:\n{answer}");
        std::thread::sleep(Duration::from_millis(300));
    };
    let ours = hosts(&ask(interactive, Some("/t/n1")));
    let names = |h: &BTreeMap<String, BTreeMap<String, String>>| -> Vec<String> {
        h.get("n1").map(|m| m.keys().cloned().collect()).unwrap_or_default()
    };
    assert!(!names(&ours).is_empty(), "{ours:?}");
    assert_eq!(names(&theirs), names(&ours));
    for fixed in ["cpu_num", "os_release", "mem_total", "boottime"] {
        assert_eq!(theirs["n1"][fixed], ours["n1"][fixed], "{fixed}");
    }
    // And its summary counts the node up, as serve's does.
    for (who, port) in [("gmetad", g_interactive), ("serve", interactive_port)] {
        let summary = ask(format!("127.0.0.1:{port}").parse().unwrap(), Some("/t?filter=summary"));
        assert!(summary.contains("<HOSTS UP=\"1\" DOWN=\"0\""), "{who}'s summary:\n{summary}");
    }
    drop(agent);
}
