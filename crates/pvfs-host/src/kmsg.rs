//! The kernel's log, as `/dev/kmsg` gives it: what a kernel module said while a command ran.
//!
//! A failed `mount -t lustre` says little more than "Input/output error"; why it failed (the MGS
//! did not answer, it has no file system of that name, the servers are in recovery) is only in
//! the kernel's log. [`KernelLog::watch`] opens `/dev/kmsg` and moves to its end before the
//! command runs; [`KernelLog::since`] then reads the records logged since, and nothing older,
//! so an earlier mount's errors are never shown as this one's.
//!
//! The format is the kernel's ABI (Documentation/ABI/testing/dev-kmsg): each read returns one
//! record, `PRIORITY,SEQUENCE,TIMESTAMP_US,FLAGS[,…];MESSAGE\n`, where PRIORITY is the syslog
//! facility × 8 + level, followed by zero or more continuation lines that start with a space
//! (` SUBSYSTEM=…`, ` DEVICE=…`); unprintable bytes in MESSAGE are escaped as `\xNN`. A read
//! whose records were overwritten in the ring meanwhile fails with EPIPE and the next read
//! goes on from the oldest record still there. In tests the file is a regular file under the
//! [`Root`], whose one read returns many records: the parser takes any number.

use crate::Root;
use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;

/// Where the kernel's log is read.
pub const PATH: &str = "/dev/kmsg";

/// The kernel refuses a read into a buffer smaller than the record (EINVAL); a record's text
/// is at most 1 KiB before escaping (LOG_LINE_MAX, printk), its dictionary a little more.
const READ_BUFFER: usize = 8192;

/// At most this many bytes are read per [`KernelLog::since`]: a command that floods the log
/// must not grow the agent without bound. The newest records are what explain a failure, but
/// the first ones are kept: a mount's error comes before the noise its cleanup makes.
const READ_CAP: usize = 256 * 1024;

/// One record of the kernel's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// syslog level, 0 (emerg) to 7 (debug): 3 is an error, 4 a warning.
    pub level: u8,
    /// The record's sequence number: consecutive unless records were lost.
    pub sequence: u64,
    /// Microseconds since boot, as the kernel stamped it.
    pub micros: u64,
    /// The message, its `\xNN` escapes left as they are (they are printable).
    pub message: String,
}

/// The kernel log from a point on.
#[derive(Debug)]
pub struct KernelLog {
    file: File,
}

impl KernelLog {
    /// Opens the log at its end: [`KernelLog::since`] returns only what is logged after this.
    /// Fails where the log cannot be read (no /dev/kmsg in a container, `dmesg_restrict` for a
    /// user that is not root): a caller says so rather than showing nothing.
    pub fn watch(root: &Root) -> std::io::Result<KernelLog> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            // A read with nothing new must answer EAGAIN, not wait for the next record.
            .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
            .open(root.path(PATH))?;
        // /dev/kmsg's llseek: SEEK_END is "after the newest record", for the next read.
        file.seek(SeekFrom::End(0))?;
        Ok(KernelLog { file })
    }

    /// The records logged since [`KernelLog::watch`] (or the last call), oldest first.
    pub fn since(&mut self) -> std::io::Result<Vec<Record>> {
        let mut text = Vec::new();
        let mut buf = vec![0u8; READ_BUFFER];
        while text.len() < READ_CAP {
            match self.file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => text.extend_from_slice(&buf[..n]),
                Err(err) if err.kind() == ErrorKind::WouldBlock => break,
                // Records overwritten before they were read: the next read starts at the
                // oldest one left. What was lost is lost; what is left is still worth showing.
                Err(err) if err.raw_os_error() == Some(nix::libc::EPIPE) => continue,
                Err(err) if err.kind() == ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            }
        }
        Ok(parse(&String::from_utf8_lossy(&text)))
    }
}

/// The records in `text` (one or many, in /dev/kmsg's format). A line that is neither a
/// record nor a continuation is skipped: a reader of diagnostics must not fail on them.
pub fn parse(text: &str) -> Vec<Record> {
    text.lines()
        // Continuation lines (the record's dictionary) say nothing a person needs here.
        .filter(|line| !line.starts_with(' '))
        .filter_map(record)
        .collect()
}

fn record(line: &str) -> Option<Record> {
    let (prefix, message) = line.split_once(';')?;
    let mut fields = prefix.split(',');
    let priority: u32 = fields.next()?.parse().ok()?;
    let sequence = fields.next()?.parse().ok()?;
    let micros = fields.next()?.parse().ok()?;
    // The flags field: `-` for a record, `c` for a continued one (kernels before 4.9), and
    // further comma-separated fields may follow; their presence is the format.
    fields.next()?;
    Some(Record { level: (priority & 7) as u8, sequence, micros, message: message.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records in the ABI document's own examples (Documentation/ABI/testing/dev-kmsg, Linux
    /// 6.x): a plain one, one with a dictionary, and a userspace one (facility 1, level 4).
    const ABI: &str = "7,160,424069,-;pci_root PNP0A03:00: host bridge window [io  0x0000-0x0cf7] (ignored)\n \
SUBSYSTEM=acpi\n DEVICE=+acpi:PNP0A03:00\n6,339,5140900,-;NET: Registered protocol family 10\n\
30,340,5690716,-;udevd[80]: starting version 181\n12,341,6000000,-,caller=T1;LustreError: \\x1b[0m one\n";

    #[test]
    fn records_continuations_and_priorities_read_as_the_abi_says() {
        let records = parse(ABI);
        assert_eq!(records.len(), 4);
        assert_eq!(records[0].level, 7);
        assert_eq!(records[0].sequence, 160);
        assert_eq!(records[0].micros, 424_069);
        assert!(records[0].message.starts_with("pci_root PNP0A03:00"));
        assert_eq!(records[1].message, "NET: Registered protocol family 10");
        assert_eq!((records[2].level, records[2].sequence), (6, 340));
        // Later kernels add fields after the flags; the escape is kept as text.
        assert_eq!(records[3].level, 4);
        assert_eq!(records[3].message, "LustreError: \\x1b[0m one");
    }

    #[test]
    fn lines_that_are_not_records_are_skipped() {
        let records = parse("garbage\n;no prefix\nx,1,2,-;bad priority\n3,1,2;no flags\n3,9,10,-;kept\n");
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].message, "kept");
    }

    #[test]
    fn a_watch_reads_only_what_came_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        std::fs::create_dir_all(dir.path().join("dev")).unwrap();
        let log = dir.path().join("dev/kmsg");
        std::fs::write(&log, "3,1,100,-;LustreError: an earlier mount's error\n").unwrap();
        let mut watch = KernelLog::watch(&root).unwrap();
        assert!(watch.since().unwrap().is_empty());
        let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        std::io::Write::write_all(&mut file, b"3,2,200,-;LustreError: this one\n").unwrap();
        let records = watch.since().unwrap();
        assert_eq!(records.iter().map(|r| r.message.as_str()).collect::<Vec<_>>(), ["LustreError: this one"]);
    }

    /// The real /dev/kmsg of the machine the tests run on: root may write a record into it
    /// (as `echo > /dev/kmsg` does), and a watch opened before sees that record and not the
    /// boot messages before it.
    #[test]
    fn the_real_kernel_log_is_read_from_the_watch_on() {
        let root = Root::system();
        let mut watch =
            KernelLog::watch(&root).expect("/dev/kmsg: the tests run as root on a machine with one");
        let mark = format!("pvfs-host kmsg test {}", std::process::id());
        std::fs::OpenOptions::new()
            .write(true)
            .open(PATH)
            .and_then(|mut f| std::io::Write::write_all(&mut f, format!("<3>{mark}\n").as_bytes()))
            .unwrap();
        let records = watch.since().unwrap();
        let ours: Vec<&Record> = records.iter().filter(|r| r.message.contains(&mark)).collect();
        assert_eq!(ours.len(), 1, "{records:?}");
        assert_eq!(ours[0].level, 3);
        assert!(records.iter().all(|r| !r.message.starts_with("Linux version")), "{records:?}");
    }
}
