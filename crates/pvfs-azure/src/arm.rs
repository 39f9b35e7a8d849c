//! The connection to Azure Resource Manager: the `azure_mgmt_compute` client, and the same HTTP
//! pipeline for the requests that crate does not make (polling a long-running operation,
//! reading a NIC).
//!
//! Why not `create_or_update(..).await`: in `azure_mgmt_compute` 0.21 that future re-sends the
//! PUT in a loop until the body says `Succeeded` and never reads `Azure-AsyncOperation`. pvfs
//! sends each PUT or DELETE once ([`Arm::wait`] after `.send()`) and polls the operation the
//! way ARM documents it, honouring `Retry-After`, with a bound on the total wait.

use crate::AzureError;
use azure_core::auth::TokenCredential;
use azure_core::headers::{AUTHORIZATION, AZURE_ASYNCOPERATION, LOCATION, RETRY_AFTER};
use azure_core::{
    ClientOptions, ExponentialRetryOptions, Method, Pipeline, Request, RetryOptions, TransportOptions, Url,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The public cloud's ARM endpoint.
pub const PUBLIC_ENDPOINT: &str = "https://management.azure.com";
/// The Microsoft.Network API version NICs are read with (and the VM bodies declare for the NICs
/// Compute creates; `2020-11-01` is the one value the 2024-07-01 Compute API accepts there).
pub const NETWORK_API_VERSION: &str = "2024-05-01";

/// How to reach ARM.
#[derive(Debug, Clone)]
pub struct ArmOptions {
    /// The ARM endpoint (scheme and host only); the public cloud by default. Tests point it at
    /// a loopback server.
    pub endpoint: Url,
    /// An extra PEM root certificate to trust (the loopback server's self-signed one).
    pub extra_root_pem: Option<Vec<u8>>,
    /// The longest wait for one long-running operation before giving up on it. Creating a VM
    /// with ten premium disks takes a few minutes; half an hour means something is stuck.
    pub max_wait: Duration,
    /// The poll interval when ARM gives no `Retry-After`.
    pub default_poll: Duration,
}

impl Default for ArmOptions {
    fn default() -> Self {
        ArmOptions {
            endpoint: Url::parse(PUBLIC_ENDPOINT).expect("a valid URL"),
            extra_root_pem: None,
            max_wait: Duration::from_secs(30 * 60),
            default_poll: Duration::from_secs(5),
        }
    }
}

/// A connection to ARM for one subscription's requests.
#[derive(Clone)]
pub struct Arm {
    pub(crate) compute: azure_mgmt_compute::package_2024_07_01::Client,
    pipeline: Pipeline,
    credential: Arc<dyn TokenCredential>,
    scopes: Vec<String>,
    endpoint: Url,
    max_wait: Duration,
    default_poll: Duration,
}

/// How a long-running operation ended well (failures are errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    Succeeded,
    /// A DELETE of something already gone (204, or 404 while polling).
    Gone,
}

impl Arm {
    pub fn new(credential: Arc<dyn TokenCredential>, options: ArmOptions) -> Result<Arm, AzureError> {
        let unexpected = |detail: String| AzureError::Unexpected {
            resource: options.endpoint.to_string(),
            operation: "setting up the HTTPS client".into(),
            detail,
        };
        let mut http = reqwest::Client::builder();
        if let Some(pem) = &options.extra_root_pem {
            let cert = reqwest::Certificate::from_pem(pem).map_err(|e| unexpected(e.to_string()))?;
            http = http.add_root_certificate(cert);
        }
        let http = http.build().map_err(|e| unexpected(e.to_string()))?;
        // Throttling (429) and transient 5xx are retried by the pipeline, which waits at least
        // what `Retry-After` says; bounded so that a region that keeps refusing is reported.
        let retry = RetryOptions::exponential(
            ExponentialRetryOptions::default()
                .max_retries(6u32)
                .initial_delay(Duration::from_millis(500))
                .max_total_elapsed(Duration::from_secs(300)),
        );
        let client_options = ClientOptions::new(TransportOptions::new(Arc::new(http))).retry(retry);
        let scopes =
            vec![options.endpoint.join(".default").map_err(|e| unexpected(e.to_string()))?.to_string()];
        let compute = azure_mgmt_compute::package_2024_07_01::Client::new(
            options.endpoint.clone(),
            credential.clone(),
            scopes.clone(),
            client_options.clone(),
        );
        let pipeline = Pipeline::new(
            option_env!("CARGO_PKG_NAME"),
            option_env!("CARGO_PKG_VERSION"),
            client_options,
            Vec::new(),
            Vec::new(),
        );
        Ok(Arm {
            compute,
            pipeline,
            credential,
            scopes,
            endpoint: options.endpoint,
            max_wait: options.max_wait,
            default_poll: options.default_poll,
        })
    }

    /// GET `url` (absolute, on the ARM endpoint) with this connection's token; the JSON body.
    pub(crate) async fn get_json(
        &self,
        resource: &str,
        operation: &str,
        url: Url,
    ) -> Result<(u16, azure_core::headers::Headers, serde_json::Value), AzureError> {
        // The token goes only to the endpoint it is for, whatever URL a response names.
        if url.host_str() != self.endpoint.host_str()
            || url.port_or_known_default() != self.endpoint.port_or_known_default()
        {
            return Err(AzureError::Unexpected {
                resource: resource.into(),
                operation: operation.into(),
                detail: format!(
                    "ARM named {url}, which is not on {}: not sending the token there",
                    self.endpoint
                ),
            });
        }
        let token = self
            .credential
            .get_token(&self.scopes.iter().map(String::as_str).collect::<Vec<_>>())
            .await
            .map_err(|e| AzureError::from_core(resource, "getting a token", e))?;
        let mut request = Request::new(url, Method::Get);
        request.insert_header(AUTHORIZATION, format!("Bearer {}", token.token.secret()));
        let response = self
            .pipeline
            .send(&azure_core::Context::default(), &mut request)
            .await
            .map_err(|e| AzureError::from_core(resource, operation, e))?;
        let (status, headers, body) = response.deconstruct();
        let bytes = body.collect().await.map_err(|e| AzureError::from_core(resource, operation, e))?;
        let json = if bytes.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_slice(&bytes).map_err(|e| AzureError::Unexpected {
                resource: resource.into(),
                operation: operation.into(),
                detail: format!("the answer is not JSON: {e}"),
            })?
        };
        Ok((u16::from(status), headers, json))
    }

    /// The URL of ARM resource `id` (`/subscriptions/…`) with `api_version`.
    pub(crate) fn resource_url(&self, id: &str, api_version: &str) -> Url {
        let mut url = self.endpoint.clone();
        url.set_path(id);
        url.query_pairs_mut().append_pair("api-version", api_version);
        url
    }

    /// Waits for the long-running operation that `first` (the answer to a PUT or DELETE)
    /// started: polls its `Azure-AsyncOperation` URL, else its `Location` URL, each after the
    /// `Retry-After` it gave (else the default interval), until it ends, for at most
    /// `max_wait`. An answer with neither header finished synchronously.
    pub async fn wait(
        &self,
        resource: &str,
        operation: &str,
        first: &azure_core::Response,
    ) -> Result<Done, AzureError> {
        let status = u16::from(first.status());
        let headers = first.headers();
        if status == 204 {
            return Ok(Done::Gone);
        }
        let parse = |value: String| {
            Url::parse(&value).map_err(|e| AzureError::Unexpected {
                resource: resource.into(),
                operation: operation.into(),
                detail: format!("the operation URL {value:?} is not a URL: {e}"),
            })
        };
        let (url, async_operation) = if let Some(value) = headers.get_optional_string(&AZURE_ASYNCOPERATION) {
            (parse(value)?, true)
        } else if let Some(value) = headers.get_optional_string(&LOCATION) {
            (parse(value)?, false)
        } else {
            return Ok(Done::Succeeded);
        };
        let started = Instant::now();
        let mut delay = self.retry_after(headers);
        loop {
            if started.elapsed() + delay > self.max_wait {
                return Err(AzureError::Timeout {
                    resource: resource.into(),
                    operation: operation.into(),
                    waited: started.elapsed(),
                    url: url.to_string(),
                });
            }
            tokio::time::sleep(delay).await;
            let (status, headers, body) = match self.get_json(resource, operation, url.clone()).await {
                // The thing being deleted is gone: the operation is over.
                Err(AzureError::Arm { status: 404, .. }) if !async_operation => return Ok(Done::Gone),
                other => other?,
            };
            delay = self.retry_after(&headers);
            if async_operation {
                let state = body.get("status").and_then(|s| s.as_str()).unwrap_or("");
                match state {
                    "Succeeded" => return Ok(Done::Succeeded),
                    "Failed" | "Canceled" => {
                        let error = body.get("error").cloned().unwrap_or_default();
                        let text = |key: &str| {
                            error.get(key).and_then(|v| v.as_str()).unwrap_or("(none given)").to_string()
                        };
                        return Err(AzureError::OperationFailed {
                            resource: resource.into(),
                            operation: operation.into(),
                            status: state.into(),
                            code: text("code"),
                            message: text("message"),
                        });
                    }
                    "" => {
                        return Err(AzureError::Unexpected {
                            resource: resource.into(),
                            operation: operation.into(),
                            detail: format!("the operation status at {url} has no `status`: {body}"),
                        });
                    }
                    // InProgress, Accepted, Running, …: not finished.
                    _ => {}
                }
            } else if status != 202 {
                // The Location protocol: 202 while running, then the final answer.
                return Ok(Done::Succeeded);
            }
        }
    }

    /// `Retry-After` in seconds (ARM's form), else the default interval; capped at a minute so
    /// that a misbehaving answer cannot park the command.
    fn retry_after(&self, headers: &azure_core::headers::Headers) -> Duration {
        headers
            .get_optional_str(&RETRY_AFTER)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|s| Duration::from_secs(s.min(60)))
            .unwrap_or(self.default_poll)
    }
}
