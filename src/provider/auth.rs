//! Credentials that are not a fixed key: a cloud's signature over the whole request (AWS SigV4)
//! or a bearer token that expires and is fetched again (Google's and Microsoft's). A provider
//! holding them has its request authorized just before each attempt is sent, so a long run
//! picks up refreshed credentials without knowing they changed.

use async_trait::async_trait;

use super::ProviderError;

#[async_trait]
pub(crate) trait Credentials: Send + Sync {
    /// Makes a fully built request (method, URL, headers, whole body) carry the caller's
    /// identity: a header, or a signature over all of it. Implementations cache what they
    /// fetch and refresh it ahead of its expiry.
    async fn authorize(&self, request: &mut reqwest::Request) -> Result<(), ProviderError>;
}
