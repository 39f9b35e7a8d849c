//! `pvfsctl bench compare BASELINE RUN…`: each run against a baseline, per phase and metric,
//! with a confidence interval over the iterations, so that a site can gate a change on it
//! (warp's `cmp` and elbencho's compare show a change and no interval).
//!
//! Per phase (write, read, each mdtest row) and metric (bandwidth, operations a second, and
//! the median and p99 latency where measured), each iteration is a sample. The change is the
//! difference of the means over the baseline's mean; its 95 % interval is Welch's (unequal
//! variances, the Welch–Satterthwaite degrees of freedom, Student's t), over the baseline's
//! mean too. A metric *regressed* when it got worse by more than the threshold and its interval
//! excludes no change: noise cannot fail a gate, and one iteration a side (no variance) never
//! does. The parameters that differ between the runs are listed, since a change of transfer
//! size explains a change of bandwidth better than the file system does.

use crate::phase::Phase;
use crate::results::RunRecord;
use serde::Serialize;
use std::collections::BTreeMap;

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

/// A metric of a phase, by name as `compare` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    BwMib,
    OpsPerSec,
    LatencyP50Ns,
    LatencyP99Ns,
}

impl Metric {
    pub fn better(self) -> Better {
        match self {
            Metric::BwMib | Metric::OpsPerSec => Better::Higher,
            Metric::LatencyP50Ns | Metric::LatencyP99Ns => Better::Lower,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Metric::BwMib => "MiB/s",
            Metric::OpsPerSec => "ops/s",
            Metric::LatencyP50Ns => "p50 latency (ns)",
            Metric::LatencyP99Ns => "p99 latency (ns)",
        }
    }

    /// The metric's value in one phase record; `None` when not measured (latency under fio).
    fn of(self, phase: &crate::results::PhaseRecord) -> Option<f64> {
        match self {
            // mdtest's phases move no bytes: bandwidth means nothing there.
            Metric::BwMib => matches!(phase.phase, Phase::Ior(_)).then_some(phase.totals.bw_mib),
            Metric::OpsPerSec => Some(phase.totals.ops_per_sec),
            Metric::LatencyP50Ns => phase.latency.as_ref().map(|l| l.all.p50_ns as f64),
            Metric::LatencyP99Ns => phase.latency.as_ref().map(|l| l.all.p99_ns as f64),
        }
    }

    const ALL: [Metric; 4] = [Metric::BwMib, Metric::OpsPerSec, Metric::LatencyP50Ns, Metric::LatencyP99Ns];
}

/// Mean, standard deviation (over n − 1) and count of a metric's samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    pub mean: f64,
    pub sd: f64,
    pub n: usize,
}

impl Sample {
    fn of(values: &[f64]) -> Option<Sample> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let sd = if n > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(Sample { mean, sd, n })
    }
}

/// What a metric did between the baseline and a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Worse by more than the threshold, and the interval excludes no change.
    Regressed,
    /// Better by more than the threshold, and the interval excludes no change.
    Improved,
    /// The interval holds no change, or the change is within the threshold.
    Unchanged,
    /// Fewer than two iterations on a side: no interval can be given.
    Undecided,
}

/// One phase's metric, baseline against run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub phase: String,
    pub metric: Metric,
    pub baseline: Sample,
    pub run: Sample,
    /// (run − baseline) / baseline.
    pub change: f64,
    /// The 95 % interval of `change`, when both sides have two iterations or more.
    pub interval: Option<(f64, f64)>,
    pub verdict: Verdict,
}

/// A setting that differs between the two runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    pub key: String,
    pub baseline: String,
    pub run: String,
}

/// A run against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub baseline: String,
    pub run: String,
    pub differences: Vec<Difference>,
    pub rows: Vec<Row>,
}

impl Comparison {
    pub fn regressed(&self) -> bool {
        self.rows.iter().any(|r| r.verdict == Verdict::Regressed)
    }
}

/// `run` against `baseline`, a metric regressing when worse by more than `threshold` (0.05:
/// 5 %) with significance. Phases in the baseline's order; a phase or metric only one of the
/// runs has is left out.
pub fn compare(baseline: &RunRecord, run: &RunRecord, threshold: f64) -> Comparison {
    let mut labels: Vec<String> = Vec::new();
    for p in &baseline.phases {
        if !labels.contains(&p.name()) {
            labels.push(p.name());
        }
    }
    let rows = labels
        .iter()
        .flat_map(|label| Metric::ALL.map(|metric| (label.as_str(), metric)))
        .filter_map(|(label, metric)| {
            let (a, b) = (values(baseline, label, metric)?, values(run, label, metric)?);
            row(label, metric, &a, &b, threshold)
        })
        .collect();
    Comparison {
        baseline: baseline.run.clone(),
        run: run.run.clone(),
        differences: differences(baseline, run),
        rows,
    }
}

/// A metric's value in each iteration of phase `label`; `None` when never measured.
fn values(record: &RunRecord, label: &str, metric: Metric) -> Option<Vec<f64>> {
    let v: Vec<f64> = record
        .phases
        .iter()
        .filter(|p| p.name() == label)
        .filter_map(|p| metric.of(p))
        .filter(|v| v.is_finite())
        .collect();
    (!v.is_empty()).then_some(v)
}

fn row(phase: &str, metric: Metric, a: &[f64], b: &[f64], threshold: f64) -> Option<Row> {
    let (base, run) = (Sample::of(a)?, Sample::of(b)?);
    if base.mean == 0.0 {
        return None;
    }
    let diff = run.mean - base.mean;
    let change = diff / base.mean;
    let interval = (base.n >= 2 && run.n >= 2).then(|| {
        let (va, vb) = (base.sd.powi(2) / base.n as f64, run.sd.powi(2) / run.n as f64);
        let se = (va + vb).sqrt();
        if se == 0.0 {
            return (change, change);
        }
        // Welch–Satterthwaite.
        let df = (va + vb).powi(2) / (va.powi(2) / (base.n - 1) as f64 + vb.powi(2) / (run.n - 1) as f64);
        let t = t95(df);
        ((diff - t * se) / base.mean, (diff + t * se) / base.mean)
    });
    let verdict = match interval {
        None => Verdict::Undecided,
        Some((lo, hi)) => {
            let (worse, better) = match metric.better() {
                Better::Higher => (change < -threshold && hi < 0.0, change > threshold && lo > 0.0),
                Better::Lower => (change > threshold && lo > 0.0, change < -threshold && hi < 0.0),
            };
            if worse {
                Verdict::Regressed
            } else if better {
                Verdict::Improved
            } else {
                Verdict::Unchanged
            }
        }
    };
    Some(Row { phase: phase.to_owned(), metric, baseline: base, run, change, interval, verdict })
}

/// Student's t for a two-sided 95 % interval with `df` degrees of freedom: the table every
/// statistics text prints, at the whole degrees below `df` (a little wider: conservative).
fn t95(df: f64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042,
    ];
    let whole = df.floor();
    match whole {
        // Below one degree (or NaN): the widest.
        d if d.is_nan() || d < 1.0 => TABLE[0],
        d if d <= 30.0 => TABLE[d as usize - 1],
        d if d < 40.0 => 2.042,
        d if d < 60.0 => 2.021,
        d if d < 120.0 => 2.000,
        _ => 1.980,
    }
}

/// The settings that differ: the engine, launcher, run size and cluster, and each parameter of
/// the workload (`params.transfer`, …).
fn differences(baseline: &RunRecord, run: &RunRecord) -> Vec<Difference> {
    let settings = |r: &RunRecord| -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let Ok(serde_json::Value::Object(all)) = serde_json::to_value(r) else { return out };
        let shown = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        for key in [
            "preset",
            "tool",
            "engine",
            "launcher",
            "tasks_per_client",
            "kind",
            "servers",
            "clients",
            "drop_caches",
        ] {
            out.insert(key.to_owned(), all.get(key).map_or("(none)".to_owned(), shown));
        }
        if let Some(serde_json::Value::Object(params)) = all.get("params") {
            for (key, value) in params {
                out.insert(format!("params.{key}"), shown(value));
            }
        }
        out
    };
    let (a, b) = (settings(baseline), settings(run));
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter_map(|key| {
            let (x, y) = (a.get(key).cloned().unwrap_or_default(), b.get(key).cloned().unwrap_or_default());
            (x != y).then(|| Difference { key: key.clone(), baseline: x, run: y })
        })
        .collect()
}

#[cfg(test)]
mod tests;
