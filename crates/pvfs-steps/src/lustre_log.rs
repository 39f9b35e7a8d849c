//! Why a Lustre mount failed, in the kernel's words.
//!
//! `mount.lustre` reports an errno and a guess ("Input/output error / Is the MGS running?"); the
//! Lustre modules log what happened (lustre/obdclass/obd_mount.c `lustre_process_log`,
//! LCONSOLE_ERROR_MSG 0x15b/0x15c; lustre/llite/super25.c `lustre_fill_super` "Unable to mount
//! … rc = N"; lustre/ptlrpc/client.c "Request sent has timed out"). The Mount step watches the
//! kernel's log across a Lustre mount ([`pvfs_host::kmsg`]) and, when the mount fails, shows the
//! Lustre and LNet lines logged meanwhile with what their error codes mean: a timeout (-110) is
//! an MGS that does not answer, -2 a file system name the MGS does not know, a refused or
//! unreachable host (-111, -113) the network, -16 servers still starting.
//!
//! The meaning is read from the errno the kernel names, never from one message's wording: the
//! wording changed across releases (2.10's "The configuration from log 'X-client' failed (-2)"
//! is 2.15's "Confguration from log X-client failed from MGS -2", typo included).

use pvfs_host::kmsg::{KernelLog, Record};

/// Lines shown at most: the first errors (the cause) and the last (where it gave up).
const SHOWN: usize = 8;
/// A line longer than this is cut: the kernel's lines carry request dumps.
const LINE_MAX: usize = 240;

/// A failed action's error with what the kernel logged meanwhile, when there is something.
pub(crate) fn explain_failure(
    err: crate::StepError,
    log: &mut Result<KernelLog, std::io::Error>,
) -> crate::StepError {
    let said = match log {
        Ok(log) => match log.since() {
            Ok(records) => explain(&records),
            Err(err) => Some(format!("the kernel's log could not be read ({err})")),
        },
        Err(err) => Some(format!("the kernel's log could not be read ({}: {err})", pvfs_host::kmsg::PATH)),
    };
    match (err, said) {
        (crate::StepError::Command { command, code, stderr, hint }, Some(said)) => {
            let hint = Some(match hint {
                Some(h) => format!("{h}; {said}"),
                None => said,
            });
            crate::StepError::Command { command, code, stderr, hint }
        }
        (err, _) => err,
    }
}

/// The Lustre and LNet lines among `records` and what they mean; `None` when there are none.
pub(crate) fn explain(records: &[Record]) -> Option<String> {
    let lines: Vec<&Record> = records.iter().filter(|r| is_lustre(&r.message)).collect();
    if lines.is_empty() {
        return None;
    }
    let codes: Vec<i32> = lines.iter().flat_map(|r| errnos(&r.message)).collect();
    let timed_out = lines.iter().any(|r| r.message.contains("timed out") || r.message.contains("Timed out"));
    let meaning = meaning(&codes, timed_out);
    let shown: Vec<String> = pick(&lines).iter().map(|r| cut(&r.message)).collect();
    let mut text = format!("kernel log: {}", shown.join(" | "));
    if let Some(meaning) = meaning {
        text = format!("{meaning}; {text}");
    }
    Some(text)
}

fn is_lustre(message: &str) -> bool {
    ["Lustre", "LNet", "LDISKFS"].iter().any(|p| message.starts_with(p))
}

/// The errors first (they say why), then the rest, at most [`SHOWN`], in the log's order.
fn pick<'a>(lines: &[&'a Record]) -> Vec<&'a Record> {
    if lines.len() <= SHOWN {
        return lines.to_vec();
    }
    let mut keep: Vec<&Record> = lines.iter().copied().filter(|r| r.level <= 3).take(SHOWN).collect();
    for r in lines.iter().rev() {
        if keep.len() >= SHOWN {
            break;
        }
        if !keep.iter().any(|k| std::ptr::eq(*k, *r)) {
            keep.push(r);
        }
    }
    keep.sort_by_key(|r| r.sequence);
    keep
}

fn cut(message: &str) -> String {
    match message.char_indices().nth(LINE_MAX) {
        Some((at, _)) => format!("{}…", &message[..at]),
        None => message.to_owned(),
    }
}

/// The negative error codes a Lustre line names: `rc = -5`, `(-2)`, `failed with -110`, `from
/// MGS -5`, `: -113`. Numbers in other places (pids, line numbers, NIDs) are not errnos.
fn errnos(message: &str) -> Vec<i32> {
    let bytes = message.as_bytes();
    let mut found = Vec::new();
    for (at, _) in message.match_indices('-') {
        let digits: String = message[at + 1..].chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() || digits.len() > 3 {
            continue;
        }
        let before = message[..at].trim_end();
        let after = bytes.get(at + 1 + digits.len()).copied();
        let led = before.ends_with("rc =")
            || before.ends_with("rc=")
            || before.ends_with('(')
            || before.ends_with("with")
            || before.ends_with("MGS")
            || before.ends_with(':');
        let ended = matches!(after, None | Some(b')' | b'.' | b' ' | b',' | b'\n'));
        if led
            && ended
            && let Ok(n) = digits.parse::<i32>()
        {
            found.push(-n);
        }
    }
    found
}

/// What the codes mean for a mount, the most telling first.
fn meaning(codes: &[i32], timed_out: bool) -> Option<String> {
    let has = |c: i32| codes.contains(&c);
    let text = if has(-2) {
        "the MGS has no configuration for this file system (-2, ENOENT): the file system name is wrong, \
         or its MDT was never mounted against this MGS"
    } else if has(-111) || has(-113) || has(-101) || has(-107) || has(-108) {
        "the MGS could not be reached (connection refused, no route, or not connected): check that LNet \
         is up on both nodes (`lctl ping` the MGS NID) and that nothing between them drops 988/tcp"
    } else if has(-110) || timed_out {
        "the MGS did not answer in time (-110, ETIMEDOUT): it is down, its LNet is not up, or a firewall \
         drops 988/tcp on the way"
    } else if has(-22) {
        "the MGS refused the request (-22, EINVAL): client and servers may run incompatible Lustre versions"
    } else if has(-16) {
        "a server is busy (-16, EBUSY): still starting or in recovery; try again once recovery ends"
    } else if has(-19) {
        "the Lustre modules are not loaded (-19, ENODEV): the lustre kernel module must match the running kernel"
    } else if has(-5) {
        "the file system's configuration could not be read from the MGS (-5, EIO): most often the MGS \
         is not reachable over LNet or not running"
    } else {
        return None;
    };
    Some(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &str) -> Vec<Record> {
        pvfs_host::kmsg::parse(text)
    }

    /// Kernel lines as read from /dev/kmsg, from the fixtures (testdata/kmsg/*.txt, each with
    /// its source in its header lines, which start with `#`).
    fn fixture(name: &str) -> Vec<Record> {
        let path = format!("{}/testdata/kmsg/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        records(&text.lines().filter(|l| !l.starts_with('#')).map(|l| format!("{l}\n")).collect::<String>())
    }

    #[test]
    fn an_mgs_that_cannot_send_the_configuration_reads_as_eio() {
        let said = explain(&fixture("al2023-client-eio.txt")).unwrap();
        assert!(
            said.starts_with("the file system's configuration could not be read from the MGS (-5"),
            "{said}"
        );
        assert!(said.contains("Confguration from log jxlwlxxv-client failed from MGS -5"), "{said}");
        assert!(said.contains("Unable to mount <unknown>: rc = -5"), "{said}");
    }

    #[test]
    fn a_wrong_fsname_reads_as_enoent_in_either_wording() {
        let said = explain(&fixture("wrong-fsname-2.10.txt")).unwrap();
        assert!(said.starts_with("the MGS has no configuration for this file system (-2"), "{said}");
        let said = explain(&fixture("wrong-fsname-2.15.txt")).unwrap();
        assert!(said.starts_with("the MGS has no configuration for this file system (-2"), "{said}");
    }

    #[test]
    fn an_mgs_that_does_not_answer_reads_as_a_timeout() {
        let said = explain(&fixture("mgs-timeout-2.12.txt")).unwrap();
        assert!(said.starts_with("the MGS did not answer in time (-110"), "{said}");
    }

    #[test]
    fn lines_of_other_subsystems_are_not_shown_and_nothing_lustre_says_nothing() {
        assert_eq!(explain(&records("6,1,10,-;e1000: eth0 NIC Link is Up\n")), None);
        let said = explain(&records("6,1,10,-;e1000: eth0 up\n3,2,20,-;LustreError: rc = -16\n")).unwrap();
        assert!(!said.contains("e1000"), "{said}");
        assert!(said.starts_with("a server is busy (-16"), "{said}");
    }

    #[test]
    fn errnos_are_read_where_lustre_puts_them_and_not_from_pids_or_nids() {
        assert_eq!(
            errnos(
                "LustreError: 26110:0:(mgc_request.c:252:do_config_log_add()) MGC172.31.84.120@tcp: failed processing log, type 1: rc = -5"
            ),
            [-5]
        );
        assert_eq!(
            errnos(
                "LustreError: 15c-8: MGC10.0.0.4@tcp: The configuration from log 'x-client' failed (-2). This"
            ),
            [-2]
        );
        assert_eq!(
            errnos("LustreError: 11-0: MGC10.0.0.4@tcp: operation mgs_connect failed with -110."),
            [-110]
        );
        assert_eq!(errnos("failed processing log: -5"), [-5]);
        assert!(
            errnos("Lustre: 3553:0:(client.c:2295:ptlrpc_expire_one_request()) 10.0.0.4@tcp-OST0000-osc")
                .is_empty()
        );
    }

    #[test]
    fn many_lines_keep_the_errors_and_the_last() {
        let mut text = String::new();
        for i in 0..30 {
            let level = if i == 3 { 3 } else { 6 };
            text += &format!("{level},{i},{i}0,-;Lustre: line {i}\n");
        }
        let said = explain(&records(&text)).unwrap();
        assert!(said.contains("line 3 |"), "{said}");
        assert!(said.ends_with("line 29"), "{said}");
        assert_eq!(said.matches(" | ").count(), SHOWN - 1, "{said}");
    }

    #[test]
    fn a_failed_command_keeps_its_own_words_and_gains_the_kernels() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("dev")).unwrap();
        std::fs::write(dir.path().join("dev/kmsg"), "3,1,1,-;LustreError: old (-2)\n").unwrap();
        let mut log = KernelLog::watch(&pvfs_host::Root::at(dir.path()));
        std::fs::write(
            dir.path().join("dev/kmsg"),
            "3,1,1,-;LustreError: old (-2)\n3,2,2,-;LustreError: rc = -110\n",
        )
        .unwrap();
        let err = crate::StepError::Command {
            command: "mount -t lustre".into(),
            code: Some(5),
            stderr: "Input/output error".into(),
            hint: None,
        };
        let text = explain_failure(err, &mut log).to_string();
        assert!(text.contains("Input/output error"), "{text}");
        assert!(text.contains("did not answer in time (-110"), "{text}");
        assert!(!text.contains("old"), "{text}");
        // Without a log to read, it says so rather than nothing.
        let err = crate::StepError::Command {
            command: "mount".into(),
            code: Some(5),
            stderr: String::new(),
            hint: None,
        };
        let mut none = KernelLog::watch(&pvfs_host::Root::at("/nonexistent"));
        assert!(explain_failure(err, &mut none).to_string().contains("the kernel's log could not be read"));
    }
}
