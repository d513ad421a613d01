//! What every HTTP provider holds and does alike: who it is, the URL it posts to, its key, the
//! model, the options of the run, and sending one request whose streamed answer its mapper reads.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::HeaderMap;

use super::auth::Credentials;
use super::{EventStream, Mapper, Options, ProviderError, http};
use crate::providers::Flavor;

pub(crate) struct Endpoint {
    /// The provider's name as the user wrote it (`anthropic`, `ollama`, …).
    pub(crate) name: &'static str,
    pub(crate) flavor: Flavor,
    /// A server on the user's machine (see `providers::Entry::local`).
    pub(crate) local: bool,
    pub(crate) client: reqwest::Client,
    /// The whole URL a request goes to (see `providers::Wire::url`).
    pub(crate) url: String,
    pub(crate) key: Option<String>,
    /// Credentials applied to each request as it is sent (a cloud's), besides or instead of
    /// the key's headers.
    pub(crate) credentials: Option<Arc<dyn Credentials>>,
    /// Headers every request carries besides the wire's and the key's.
    pub(crate) headers: HeaderMap,
    pub(crate) model: String,
    /// How long a response may go without content.
    pub(crate) idle: Duration,
    pub(crate) options: Options,
}

impl Endpoint {
    /// Headers with the key under `header` (`x-api-key`), if there is a key.
    pub(crate) fn key_header(&self, header: &'static str) -> Result<HeaderMap, ProviderError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.key {
            headers.insert(header, http::secret_header(self.name, "the API key", key)?);
        }
        Ok(headers)
    }

    /// Headers with the key as `Authorization: Bearer KEY`, if there is a key.
    pub(crate) fn bearer(&self) -> Result<HeaderMap, ProviderError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.key {
            headers.insert(
                "authorization",
                http::secret_header(self.name, "the API key", &format!("Bearer {key}"))?,
            );
        }
        Ok(headers)
    }

    /// POSTs `wire` and reads the streamed answer through `mapper`.
    pub(crate) async fn send<M: Mapper>(
        &self,
        mut headers: HeaderMap,
        wire: &impl serde::Serialize,
        mapper: M,
    ) -> Result<EventStream, ProviderError> {
        headers.extend(self.headers.clone());
        let response = http::post(
            &self.client,
            self.name,
            &self.url,
            headers,
            wire,
            self.idle,
            self.credentials.as_deref(),
        )
        .await?;
        Ok(super::drive(
            Box::pin(response.bytes_stream()),
            mapper,
            self.idle,
        ))
    }
}
