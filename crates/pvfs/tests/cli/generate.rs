//! `pvfsctl generate`: completions for every name of the binary, and one man page per command.

use crate::util::{TestDir, text};

/// Issue 25, item 14: 121 pages, 45 of them `pvfs-ctl-*` copies and `*-help-help` pages, and
/// no completions for `pvfs`. Now: a page per command of pvfsctl and pvfs-agent, `pvfs.1` for
/// the third name, no `help` pages, completions for all three names.
#[test]
fn one_page_per_command_and_completions_for_every_name() {
    let dir = TestDir::new();
    let out = dir.ctl(&["generate", "--out", "gen"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let names = |sub: &str| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir.path().join("gen").join(sub))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let pages = names("man");
    assert!(pages.iter().all(|p| !p.contains("-help")), "help pages: {pages:?}");
    assert!(pages.iter().all(|p| !p.starts_with("pvfs-ctl")), "pvfs ctl copies: {pages:?}");
    for page in [
        "pvfsctl.1",
        "pvfsctl-nodes.1",
        "pvfsctl-ca-issue.1",
        "pvfsctl-bench-import.1",
        "pvfs-agent.1",
        "pvfs-agent-engine.1",
        "pvfs.1",
    ] {
        assert!(pages.contains(&page.to_owned()), "{page} missing from {pages:?}");
    }
    // Every visible pvfsctl command has its page: `pvfsctl --help` lists them.
    let help = text(&dir.ctl(&["--help"]).stdout);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A command's line; its description's continuation lines are indented further.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 10, "{help}");
    for command in commands {
        assert!(pages.contains(&format!("pvfsctl-{command}.1")), "no page for {command}: {pages:?}");
    }
    let completions = names("completions");
    for name in ["pvfs", "pvfsctl", "pvfs-agent"] {
        for file in [format!("{name}.bash"), format!("_{name}"), format!("{name}.fish")] {
            assert!(completions.contains(&file), "{file} missing from {completions:?}");
        }
    }
}
