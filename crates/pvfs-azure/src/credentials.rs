//! Whose Azure identity `provision` acts as: the Azure CLI's login, else a service principal
//! from the environment, else the managed identity of the Azure VM it runs on. The first that
//! yields a token for ARM is used; if none does, one error says what each attempt answered.

use crate::AzureError;
pub use azure_core::auth::TokenCredential;
use azure_identity::{
    AzureCliCredential, EnvironmentCredential, TokenCredentialOptions,
    VirtualMachineManagedIdentityCredential,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// How long one source may take: the managed-identity endpoint does not exist off Azure, and
/// a connection to it can hang rather than fail.
const ATTEMPT: Duration = Duration::from_secs(10);

/// A way to get a credential, by name; `make` fails when the source is not configured at all.
pub struct Source {
    pub name: &'static str,
    pub make: Box<dyn Fn() -> Result<Arc<dyn TokenCredential>, String> + Send + Sync>,
}

/// The sources, in the order they are tried.
pub fn sources() -> Vec<Source> {
    vec![
        Source { name: "Azure CLI (`az login`)", make: Box::new(|| Ok(Arc::new(AzureCliCredential::new()))) },
        Source {
            name: "environment (AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET)",
            make: Box::new(|| {
                EnvironmentCredential::create(TokenCredentialOptions::default())
                    .map(|c| Arc::new(c) as Arc<dyn TokenCredential>)
                    .map_err(|e| format!("not set ({e})"))
            }),
        },
        Source {
            name: "managed identity (Azure VM metadata endpoint)",
            make: Box::new(|| {
                Ok(Arc::new(VirtualMachineManagedIdentityCredential::new(TokenCredentialOptions::default())))
            }),
        },
    ]
}

/// The first of `sources` that yields a token for `scope`.
pub async fn first_working(
    sources: Vec<Source>,
    scope: &str,
) -> Result<Arc<dyn TokenCredential>, AzureError> {
    let mut tried = Vec::new();
    for source in sources {
        let credential = match (source.make)() {
            Ok(c) => c,
            Err(why) => {
                tried.push((source.name.to_string(), why));
                continue;
            }
        };
        let attempt: Pin<Box<dyn Future<Output = _> + Send>> = Box::pin({
            let credential = credential.clone();
            let scope = scope.to_string();
            async move { credential.get_token(&[scope.as_str()]).await }
        });
        match tokio::time::timeout(ATTEMPT, attempt).await {
            Ok(Ok(_)) => {
                tracing::debug!(source = source.name, "Azure credential");
                return Ok(credential);
            }
            Ok(Err(e)) => tried.push((source.name.to_string(), one_line(&e.to_string()))),
            Err(_) => {
                tried.push((source.name.to_string(), format!("no answer within {}s", ATTEMPT.as_secs())))
            }
        }
    }
    Err(AzureError::NoCredentials { tried })
}

/// The default chain, for the ARM endpoint `endpoint`.
pub async fn credential(endpoint: &azure_core::Url) -> Result<Arc<dyn TokenCredential>, AzureError> {
    let scope =
        endpoint.join(".default").map(|u| u.to_string()).unwrap_or_else(|_| format!("{endpoint}.default"));
    first_working(sources(), &scope).await
}

/// A token given outright (tests against a loopback endpoint; a token from elsewhere).
#[derive(Debug)]
pub struct StaticToken(pub String);

#[async_trait::async_trait]
impl TokenCredential for StaticToken {
    async fn get_token(&self, _scopes: &[&str]) -> azure_core::Result<azure_core::auth::AccessToken> {
        Ok(azure_core::auth::AccessToken::new(
            azure_core::auth::Secret::new(self.0.clone()),
            time::OffsetDateTime::now_utc() + time::Duration::hours(1),
        ))
    }

    async fn clear_cache(&self) -> azure_core::Result<()> {
        Ok(())
    }
}

/// Error texts of the identity crate run over several lines (a whole HTTP answer); the report
/// gives one line per source.
fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.len() > 300 { format!("{}…", &line[..line.floor_char_boundary(300)]) } else { line }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Refuses(&'static str);

    #[async_trait::async_trait]
    impl TokenCredential for Refuses {
        async fn get_token(&self, _: &[&str]) -> azure_core::Result<azure_core::auth::AccessToken> {
            Err(azure_core::Error::message(azure_core::error::ErrorKind::Credential, self.0))
        }
        async fn clear_cache(&self) -> azure_core::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn when_nothing_works_each_source_is_named_with_its_answer() {
        let sources = vec![
            Source { name: "one", make: Box::new(|| Ok(Arc::new(Refuses("az: command not found")))) },
            Source { name: "two", make: Box::new(|| Err("not set".into())) },
        ];
        let err =
            first_working(sources, "https://management.azure.com/.default").await.err().unwrap().to_string();
        assert!(err.contains("  one: az: command not found\n  two: not set\n"), "{err}");
        assert!(err.contains("az login"), "{err}");
        let sources = vec![
            Source { name: "one", make: Box::new(|| Err("not set".into())) },
            Source { name: "two", make: Box::new(|| Ok(Arc::new(StaticToken("t".into())))) },
        ];
        assert!(first_working(sources, "s").await.is_ok());
    }
}
