//! `pvfsctl down`: `--wipe` lists what it would destroy and refuses, before it contacts any
//! node, unless the cluster's name is given.

use crate::util::{TestDir, text};
use std::path::Path;

fn e2e_cluster() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../config/glusterfs-e2e.toml")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn wipe_lists_the_devices_and_refuses_without_the_clusters_name() {
    let dir = TestDir::new();
    let cluster = e2e_cluster();
    // No terminal (stdin is closed) and no --yes-wipe: the listing, then a refusal, exit 2.
    let out = dir.ctl(&["down", &cluster, "--wipe"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--wipe destroys everything on these devices of cluster gluster-e2e"),
        "{stderr}"
    );
    assert!(
        stderr.contains("  gfs1: /dev/pvfs-disk0\n") && stderr.contains("  gfs2: /dev/pvfs-disk0\n"),
        "{stderr}"
    );
    assert!(stderr.contains("pass --yes-wipe=gluster-e2e to confirm (nothing was changed)"), "{stderr}");
    assert!(out.stdout.is_empty(), "steps were sent: {}", text(&out.stdout));

    let out = dir.ctl(&["down", &cluster, "--wipe", "--yes-wipe=gluster-e2"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("\"gluster-e2\" is not the cluster's name (gluster-e2e); nothing was changed"),
        "{stderr}"
    );

    // --yes-wipe alone is not a wipe: clap asks for --wipe.
    let out = dir.ctl(&["down", &cluster, "--yes-wipe=gluster-e2e"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--wipe"), "{}", text(&out.stderr));
}

/// Issue 25, item 16: on a `local` cluster `down` planned nothing and said "the cluster is
/// down" while `up` reported every node converged. It says what it leaves and why, and sends
/// nothing (no agent is running for this file: it does not dial any).
#[test]
fn a_local_cluster_says_down_has_nothing_to_take_apart() {
    let dir = TestDir::new();
    let cluster = dir.write(
        "local.toml",
        "[cluster]\nname = \"loc\"\nkind = \"local\"\n[local]\nmount = \"/srv/pvfs-nowhere\"\n\
         [[node]]\nname = \"n1\"\naddress = \"127.0.0.1:1\"\nroles = [\"server\", \"client\"]\n",
    );
    for extra in [&[][..], &["--plan"], &["--wipe"]] {
        let mut argv = vec!["down", cluster.to_str().unwrap()];
        argv.extend_from_slice(extra);
        let out = dir.ctl(&argv);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {stderr}");
        assert!(stderr.contains("cluster loc (kind local) has nothing for down to take apart"), "{stderr}");
        assert!(!stderr.contains("the cluster is down"), "{stderr}");
    }
}
