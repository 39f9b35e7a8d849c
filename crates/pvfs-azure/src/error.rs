//! What can go wrong talking to Azure, each with the resource it concerns.

use std::time::Duration;

/// Why a provision or deprovision step failed. Every variant names the resource (a VM, a NIC,
/// the region) and, where ARM gave one, its error code, because that code is what the Azure
/// documentation and support are searched by.
#[derive(Debug, thiserror::Error)]
pub enum AzureError {
    #[error(
        "no Azure credentials worked; tried:\n{}\nLog in with `az login`, or set AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET (a service principal), or run on an Azure VM with a managed identity",
        tried.iter().map(|(name, why)| format!("  {name}: {why}")).collect::<Vec<_>>().join("\n")
    )]
    NoCredentials { tried: Vec<(String, String)> },
    /// ARM answered with an error status (400, 403, 404, 409, a 429 that outlived the retries, …).
    #[error("{resource}: {operation}: ARM answered {status} {code}: {message}")]
    Arm { resource: String, operation: String, status: u16, code: String, message: String },
    /// The request did not get an answer (connection, TLS, a body that is not ARM's).
    #[error("{resource}: {operation}: {source}")]
    Transport {
        resource: String,
        operation: String,
        #[source]
        source: azure_core::Error,
    },
    /// A long-running operation ended `Failed` or `Canceled`.
    #[error("{resource}: {operation} ended {status}: {code}: {message}")]
    OperationFailed { resource: String, operation: String, status: String, code: String, message: String },
    #[error(
        "{resource}: {operation} had not finished after {}s (polling {url}); it may still complete: look at the resource group in the portal, then run the command again",
        waited.as_secs()
    )]
    Timeout { resource: String, operation: String, waited: Duration, url: String },
    /// ARM answered in a shape pvfs does not understand.
    #[error("{resource}: {operation}: {detail}")]
    Unexpected { resource: String, operation: String, detail: String },
    /// Quota or SKU limits of the region refuse the plan; nothing was created.
    #[error(
        "the limits of {location} refuse this plan (nothing was created):\n{}",
        problems.iter().map(|p| format!("  {p}")).collect::<Vec<_>>().join("\n")
    )]
    Limits { location: String, problems: Vec<String> },
    /// Some planned VMs cannot be made to match the cluster file in place; nothing was changed.
    #[error(
        "the plan cannot be carried out (nothing was changed):\n{}",
        problems.iter().map(|p| format!("  {p}")).collect::<Vec<_>>().join("\n")
    )]
    Refused { problems: Vec<String> },
    #[error(transparent)]
    State(#[from] pvfs_config::azure::StateError),
    /// Several VMs failed; the others were carried out.
    #[error(
        "{} of {total} VMs failed (the others are done):\n{}",
        errors.len(),
        errors.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n")
    )]
    Some { total: usize, errors: Vec<AzureError> },
}

impl AzureError {
    /// The error of `operation` on `resource`, with ARM's status, code and message when the
    /// pipeline got an error response.
    pub(crate) fn from_core(resource: &str, operation: &str, error: azure_core::Error) -> AzureError {
        if let Some(http) = error.as_http_error() {
            return AzureError::Arm {
                resource: resource.to_string(),
                operation: operation.to_string(),
                status: u16::from(http.status()),
                code: http.error_code().unwrap_or("(no code)").to_string(),
                message: http.error_message().unwrap_or("(no message)").to_string(),
            };
        }
        AzureError::Transport {
            resource: resource.to_string(),
            operation: operation.to_string(),
            source: error,
        }
    }
}
