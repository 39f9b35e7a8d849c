//! Error lines IOR and mdtest print when a run fails, found anywhere in an output: stdout and
//! stderr are often merged, and with several MPI ranks writing at once a message can start in
//! the middle of another line (`  -Q=1       Error invalid argument: --no-such-option`).

use std::collections::HashSet;

use crate::model::Tool;

/// Where a message starts, and whether it runs from the marker or from the start of the line.
struct Marker {
    text: &'static str,
    /// The marker sits inside a message whose start (program name, timestamp) is earlier in
    /// the line, so the whole line is the message.
    whole_line: bool,
}

const MARKERS: &[Marker] = &[
    // IOR/mdtest 3.3+: `ERROR: <what>, (<file>.c:<line>)`; 3.x: `ior ERROR: …` (see `start`).
    Marker { text: "ERROR:", whole_line: false },
    // IOR 2.x and mdtest 1.9: `ERROR in aiori-POSIX.c (line 256): cannot open file.`
    Marker { text: "ERROR in ", whole_line: false },
    // mdtest 3.x: `<date> <time>: Process 0: FAILED in mdtest.c:1234, <what>: <errno text>`.
    Marker { text: "FAILED in ", whole_line: true },
    // The option parser of IOR/mdtest 3.2+ (one line per argument it could not take).
    Marker { text: "Error invalid argument:", whole_line: false },
    Marker { text: "Invalid options", whole_line: false },
    // IOR's `-O name=value` directives.
    Marker { text: "Unrecognized parameter", whole_line: false },
    // getopt, in IOR before 3.2 and mdtest before 3.0: `ior: invalid option -- 'x'`.
    Marker { text: "invalid option --", whole_line: true },
    Marker { text: "unrecognized option", whole_line: true },
    Marker { text: "option requires an argument", whole_line: true },
];

/// Every distinct error line, in the order first printed, gathered a line at a time. Each MPI
/// rank prints its own copy of a usage error, so repeats are dropped (through a set: an output
/// of a million distinct errors must not cost a million comparisons per line).
#[derive(Debug, Default)]
pub(super) struct Errors {
    found: Vec<String>,
    seen: HashSet<String>,
}

impl Errors {
    pub fn line(&mut self, line: &str) {
        let Some(message) = message(line) else { return };
        if !self.seen.contains(message) {
            self.seen.insert(message.to_owned());
            self.found.push(message.to_owned());
        }
    }

    pub fn into_vec(self) -> Vec<String> {
        self.found
    }
}

/// The error message in `line`, from its earliest marker to the end of the line.
fn message(line: &str) -> Option<&str> {
    let (at, marker) = MARKERS
        .iter()
        .filter_map(|marker| line.find(marker.text).map(|at| (at, marker)))
        .min_by_key(|(at, _)| *at)?;
    let start = if marker.whole_line { 0 } else { start(line, at) };
    let message = line[start..].trim();
    (!message.is_empty()).then_some(message)
}

/// Moves a message's start back over the program name 3.x puts before `ERROR:` (`ior ERROR: …`,
/// `mdtest ERROR: …`), which says which tool failed.
fn start(line: &str, at: usize) -> usize {
    let before = &line[..at];
    ["ior ", "mdtest "].iter().find(|prefix| before.ends_with(*prefix)).map_or(at, |prefix| at - prefix.len())
}

/// What in an output says which tool printed it, when it has no banner (it failed first): the
/// usage text, the source files its errors name, or its messages. Gathered a line at a time;
/// none of the marks spans a line.
#[derive(Debug, Default)]
pub(super) struct Signs {
    mdtest: bool,
    ior: bool,
}

impl Signs {
    pub fn line(&mut self, line: &str) {
        let has = |needle: &str| line.contains(needle);
        if line.trim() == "Synopsis mdtest" || has("(mdtest.c:") || has("mdtest ERROR") {
            self.mdtest = true;
        }
        if line.trim() == "Synopsis ior"
            || has("(ior.c:")
            || has("ior ERROR")
            || has("Unrecognized parameter")
        {
            self.ior = true;
        }
    }

    /// Which tool it was; `None` when nothing in the text is IOR's or mdtest's, so that an
    /// unrelated log with an `ERROR:` line is not taken for a failed run.
    pub fn tool(&self, errors: &[String]) -> Option<Tool> {
        if self.mdtest {
            return Some(Tool::Mdtest);
        }
        if self.ior {
            return Some(Tool::Ior);
        }
        // The rest of the sources (aiori-*.c, utilities.c, option.c) are shared by both tools;
        // IOR is the likelier one to fail before its banner (its checks run first), so it is
        // assumed.
        errors.iter().any(|e| names_source(e) || e.starts_with("Error invalid argument")).then_some(Tool::Ior)
    }
}

/// Whether an error names where in IOR's sources it was raised: `(aiori-POSIX.c:618)`.
fn names_source(error: &str) -> bool {
    error.rfind(".c:").is_some_and(|at| {
        let rest = &error[at + 3..];
        rest.starts_with(|c: char| c.is_ascii_digit()) && error[..at].contains('(')
    })
}

/// What to do about the errors users hit most.
pub(super) fn hint(tool: Tool, error: &str) -> Option<&'static str> {
    let argument = error.strip_prefix("Error invalid argument:").map(str::trim);
    match (tool, argument) {
        (Tool::Ior, Some("-B")) => {
            Some("IOR 3.3.0 removed -B (O_DIRECT): use --posix.odirect or -O useO_DIRECT=1")
        }
        (Tool::Mdtest, Some("-O")) => Some(
            "mdtest has no -O option, so no summaryFormat=JSON: run it without -O and import its text output",
        ),
        (Tool::Ior, None) if error.starts_with("Unrecognized parameter") => {
            Some("an -O directive this IOR version does not know (`ior -h` lists them)")
        }
        _ => None,
    }
}
