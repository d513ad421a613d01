//! How the store's connection is protected, with libpq's meaning for the URL's `sslmode` and
//! `sslrootcert`, so that a URL that works with psql works here. tokio-postgres itself knows only
//! disable, prefer and require and no root certificates, so these two parameters are taken out of
//! the URL and applied to a rustls connector (with ring, the provider the HTTP client uses).
//!
//! - `disable`: plain TCP.
//! - `allow`, `prefer` (the default): TLS when the server offers it, else plain, and the
//!   certificate is not checked. That is libpq's meaning: protection against eavesdropping, not
//!   against an impostor. It is also what makes a stock Debian server, whose certificate is
//!   self-signed, work without configuration.
//! - `require`: TLS or no connection; the certificate is checked only when `sslrootcert` is given.
//! - `verify-ca`, `verify-full`: TLS, and the certificate must chain to the roots of
//!   `sslrootcert` (a PEM file) or, without it or with `sslrootcert=system`, to the platform's
//!   roots, and it must name the host (verify-ca is checked as strictly as verify-full).
//!
//! Client certificates (`sslcert`, `sslkey`) are not supported; tokio-postgres rejects them as
//! unknown options.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::Config;
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

/// What the connection must be.
#[derive(Debug, Clone, PartialEq)]
pub enum Protection {
    Plain,
    /// TLS without checking who answers.
    Encrypted,
    /// TLS with a certificate that chains to these roots and names the host.
    Verified(Roots),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Roots {
    System,
    File(PathBuf),
}

/// Parses a store URL (or key-value connection string) into the tokio-postgres configuration and
/// the protection its sslmode asks for.
pub fn parse(url: &str) -> Result<(Config, Protection), String> {
    let (rest, sslmode, rootcert) = take_tls_params(url);
    let mut config: Config = rest
        .parse()
        .map_err(|e: tokio_postgres::Error| super::postgres::describe_error(&e))?;
    let mode = sslmode.unwrap_or(match config.get_ssl_mode() {
        SslMode::Disable => "disable".into(),
        SslMode::Require => "require".into(),
        _ => "prefer".into(),
    });
    let roots = rootcert.map(|r| match r.as_str() {
        "system" => Roots::System,
        path => Roots::File(path.into()),
    });
    let (ssl_mode, protection) = match (mode.as_str(), roots) {
        ("disable", _) => (SslMode::Disable, Protection::Plain),
        ("allow" | "prefer", _) => (SslMode::Prefer, Protection::Encrypted),
        ("require", None) => (SslMode::Require, Protection::Encrypted),
        ("require" | "verify-ca" | "verify-full", Some(roots)) => {
            (SslMode::Require, Protection::Verified(roots))
        }
        ("verify-ca" | "verify-full", None) => {
            (SslMode::Require, Protection::Verified(Roots::System))
        }
        (other, _) => {
            return Err(format!(
                "unknown sslmode {other:?} (known: disable, allow, prefer, require, verify-ca, \
                 verify-full)"
            ));
        }
    };
    config.ssl_mode(ssl_mode);
    Ok((config, protection))
}

/// Removes `sslmode` and `sslrootcert` from a URL's query, returning their decoded values. A
/// key-value connection string is returned as it is (tokio-postgres reads its sslmode).
fn take_tls_params(url: &str) -> (Cow<'_, str>, Option<String>, Option<String>) {
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let Some((base, query)) = url.split_once('?').filter(|_| is_url) else {
        return (Cow::Borrowed(url), None, None);
    };
    let (mut sslmode, mut rootcert) = (None, None);
    let mut kept = Vec::new();
    for param in query.split('&') {
        match form_urlencoded::parse(param.as_bytes()).next() {
            Some((key, value)) if key == "sslmode" => sslmode = Some(value.into_owned()),
            Some((key, value)) if key == "sslrootcert" => rootcert = Some(value.into_owned()),
            _ => kept.push(param),
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    (Cow::Owned(rest), sslmode, rootcert)
}

/// The TLS connector for a protection other than `Plain`.
pub fn connector(protection: &Protection) -> Result<MakeRustlsConnect, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?;
    let config = match protection {
        Protection::Verified(Roots::System) => {
            use rustls_platform_verifier::BuilderVerifierExt;
            builder
                .with_platform_verifier()
                .map_err(|e| format!("cannot load the platform's root certificates: {e}"))?
                .with_no_client_auth()
        }
        Protection::Verified(Roots::File(path)) => {
            let unreadable =
                |e: &dyn std::fmt::Display| format!("sslrootcert {}: {e}", path.display());
            let mut roots = RootCertStore::empty();
            for cert in CertificateDer::pem_file_iter(path).map_err(|e| unreadable(&e))? {
                roots
                    .add(cert.map_err(|e| unreadable(&e))?)
                    .map_err(|e| unreadable(&e))?;
            }
            if roots.is_empty() {
                return Err(unreadable(&"no certificates in it"));
            }
            let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| unreadable(&e))?;
            builder.with_webpki_verifier(verifier).with_no_client_auth()
        }
        Protection::Encrypted | Protection::Plain => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(EncryptOnly(provider)))
            .with_no_client_auth(),
    };
    Ok(MakeRustlsConnect::new(config))
}

/// Accepts any certificate (libpq's prefer and require) but still checks that the server holds
/// the key of the certificate it presented, as every TLS handshake must.
#[derive(Debug)]
struct EncryptOnly(Arc<CryptoProvider>);

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protection(url: &str) -> Result<(SslMode, Protection), String> {
        parse(url).map(|(config, p)| (config.get_ssl_mode(), p))
    }

    #[test]
    fn sslmodes_mean_what_they_mean_to_libpq() {
        use Protection::*;
        let file = |p: &str| Verified(Roots::File(p.into()));
        for (url, expected) in [
            ("postgres://h/db", (SslMode::Prefer, Encrypted)),
            ("postgres://h/db?sslmode=disable", (SslMode::Disable, Plain)),
            (
                "postgres://h/db?sslmode=allow",
                (SslMode::Prefer, Encrypted),
            ),
            (
                "postgres://h/db?sslmode=require",
                (SslMode::Require, Encrypted),
            ),
            (
                "postgres://h/db?sslmode=require&sslrootcert=/ca.pem",
                (SslMode::Require, file("/ca.pem")),
            ),
            (
                "postgres://h/db?sslmode=verify-full",
                (SslMode::Require, Verified(Roots::System)),
            ),
            (
                "postgres://h/db?sslrootcert=%2Fetc%2Fca%20x.pem&sslmode=verify-ca&user=u",
                (SslMode::Require, file("/etc/ca x.pem")),
            ),
            (
                "postgres://h/db?sslmode=verify-full&sslrootcert=system",
                (SslMode::Require, Verified(Roots::System)),
            ),
            ("host=h sslmode=disable", (SslMode::Disable, Plain)),
            ("host=h sslmode=require", (SslMode::Require, Encrypted)),
        ] {
            assert_eq!(protection(url), Ok(expected), "{url}");
        }
        let (config, _) = parse("postgres://h/db?sslmode=verify-ca&user=u").unwrap();
        assert_eq!(config.get_user(), Some("u"));
        let err = protection("postgres://h/db?sslmode=sometimes").unwrap_err();
        assert!(err.contains("unknown sslmode \"sometimes\""), "{err}");
    }

    #[test]
    fn a_missing_or_empty_root_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.pem");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        for path in [missing, empty] {
            let Err(e) = connector(&Protection::Verified(Roots::File(path.clone()))) else {
                panic!("{} was accepted", path.display())
            };
            assert!(
                e.starts_with(&format!("sslrootcert {}", path.display())),
                "{e}"
            );
        }
        assert!(connector(&Protection::Encrypted).is_ok());
    }
}
