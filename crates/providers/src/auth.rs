//! Credentials that are not a fixed key: a cloud's signature over the whole request (AWS SigV4)
//! or a bearer token that expires and is fetched again (Google's and Microsoft's). A provider
//! holding them has its request authorized just before each attempt is sent, so a long run
//! picks up refreshed credentials without knowing they changed.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use async_trait::async_trait;

use super::ProviderError;

#[async_trait]
pub(crate) trait Credentials: Send + Sync {
    /// Makes a fully built request (method, URL, headers, whole body) carry the caller's
    /// identity: a header, or a signature over all of it. Implementations cache what they
    /// fetch and refresh it ahead of its expiry.
    async fn authorize(&self, request: &mut reqwest::Request) -> Result<(), ProviderError>;
}

/// Credentials shared by the runs of one process that would make the same ones (a batch's jobs
/// over one cloud): one token exchange and one refresh for all of them, not one per job, which
/// a token service would throttle. `key` holds everything that decides them (the variables and
/// files read, the region, a key); what fails to be made is not kept, so the next run tries
/// again.
pub(crate) fn shared<T, E>(key: &str, make: impl FnOnce() -> Result<T, E>) -> Result<Arc<T>, E>
where
    T: Send + Sync + 'static,
{
    type Made = HashMap<String, Arc<dyn Any + Send + Sync>>;
    static MADE: OnceLock<Mutex<Made>> = OnceLock::new();
    let made = MADE.get_or_init(Mutex::default);
    let found = {
        let map = made.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(key).cloned()
    };
    if let Some(found) = found.and_then(|f| f.downcast::<T>().ok()) {
        return Ok(found);
    }
    let new = Arc::new(make()?);
    let mut map = made.lock().unwrap_or_else(PoisonError::into_inner);
    let kept = map
        .entry(key.to_owned())
        .or_insert_with(|| new.clone())
        .clone();
    Ok(kept.downcast::<T>().unwrap_or(new))
}

/// A credential from the variable `name`, as it will be sent: trimmed (`net::credential`), or
/// `None` when the variable is unset or blank. `Err` names the variable and why no header can
/// carry its value, never the value: a setup error, found before any request.
pub(crate) fn env_credential(
    env: &dyn Fn(&str) -> Option<String>,
    name: &str,
) -> Result<Option<String>, UnsendableCredential> {
    let Some(value) = env(name).filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    crate::net::credential(&value)
        .map(|v| Some(v.to_owned()))
        .map_err(|why| UnsendableCredential {
            name: name.to_owned(),
            why,
        })
}

/// A credential in the variable `name` that no HTTP header can carry (never its value).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{name}: the credential {why}, which cannot be sent in an HTTP header (surrounding \
     whitespace is dropped; what is left must be visible ASCII)"
)]
pub(crate) struct UnsendableCredential {
    name: String,
    why: crate::net::Unsendable,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_key_shares_one_and_a_failure_is_not_kept() {
        let a = shared("auth-test-a", || Ok::<_, ()>(String::from("first")));
        let b = shared("auth-test-a", || Ok::<_, ()>(String::from("second")));
        assert!(Arc::ptr_eq(&a.unwrap(), &b.unwrap()));
        let c = shared("auth-test-b", || Ok::<_, ()>(String::from("other")));
        assert_eq!(c.unwrap().as_str(), "other");
        assert!(shared::<String, _>("auth-test-c", || Err("no")).is_err());
        let d = shared("auth-test-c", || Ok::<_, ()>(String::from("later")));
        assert_eq!(d.unwrap().as_str(), "later");
    }
}
