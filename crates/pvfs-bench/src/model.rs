//! Result shapes. Values a given tool version does not print are `None` (JSON `null`), never
//! invented.

use serde::{Deserialize, Serialize};

/// Which tool produced an output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tool {
    Ior,
    Mdtest,
}

/// Which tool an imported run came from: an output [`Tool`] reads, or an io500 run (read by
/// `io500`, not by `parse`). Serialised as `Tool` is, so old records read unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImportedTool {
    Ior,
    Mdtest,
    Io500,
}

impl From<Tool> for ImportedTool {
    fn from(tool: Tool) -> ImportedTool {
        match tool {
            Tool::Ior => ImportedTool::Ior,
            Tool::Mdtest => ImportedTool::Mdtest,
        }
    }
}

/// One row of IOR's "Summary of all tests" (or its JSON `summary[]`): one operation over all
/// iterations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IorSummary {
    /// "write" or "read".
    pub operation: String,
    pub bw_max_mib: Option<f64>,
    pub bw_min_mib: Option<f64>,
    pub bw_mean_mib: Option<f64>,
    pub bw_std_mib: Option<f64>,
    pub ops_max: Option<f64>,
    pub ops_min: Option<f64>,
    pub ops_mean: Option<f64>,
    pub ops_std: Option<f64>,
    pub mean_time_s: Option<f64>,
    pub tasks: Option<u64>,
    pub iterations: Option<u64>,
    pub block_bytes: Option<u64>,
    pub transfer_bytes: Option<u64>,
    pub file_per_proc: Option<bool>,
}

/// One row of IOR's per-iteration "Results" table (or JSON `tests[].Results[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IorIteration {
    pub operation: String,
    pub iteration: u64,
    pub bw_mib: Option<f64>,
    pub iops: Option<f64>,
    pub latency_s: Option<f64>,
    pub block_kib: Option<f64>,
    pub xfer_kib: Option<f64>,
    pub open_s: Option<f64>,
    pub wrrd_s: Option<f64>,
    pub close_s: Option<f64>,
    pub total_s: Option<f64>,
}

/// One row of mdtest's SUMMARY table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MdtestSummary {
    /// As mdtest prints it: "File creation", "Directory stat", "Tree removal", …
    pub operation: String,
    pub max: Option<f64>,
    pub min: Option<f64>,
    pub mean: Option<f64>,
    pub std: Option<f64>,
    /// "ops/sec" for a rate table; "sec" for a time table (`-Z`, `-P`): the seconds each phase
    /// took. mdtest 4.1 heads that table "(in ms/op)", but its values are phase times (see
    /// `parse::mdtest`).
    pub unit: String,
}

/// What an output file says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parsed {
    pub tool: Tool,
    /// "4.1.0+dev", "3.2.1", … when the output names it.
    pub version: Option<String>,
    /// The command line the output reports.
    pub command: Option<String>,
    /// IOR summary rows (empty for mdtest).
    pub ior: Vec<IorSummary>,
    /// IOR per-iteration rows (empty for mdtest, or when the format has none).
    pub iterations: Vec<IorIteration>,
    /// mdtest summary rows (empty for IOR).
    pub mdtest: Vec<MdtestSummary>,
    /// Error lines the tool printed (IOR's `ERROR: …`, usage errors), in order; a run with
    /// errors and no summary failed.
    pub errors: Vec<String>,
}
