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
//! - `sslcert` and `sslkey` (PEM files, both or neither): a client certificate for servers that
//!   authenticate with `cert` or `clientcert=verify-full` in pg_hba.conf. Unlike libpq, there is
//!   no default under `~/.postgresql/`: a certificate is only sent when the URL names one.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::Config;
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

/// What the connection must be.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Protection {
    Plain,
    /// TLS without checking who answers.
    Encrypted,
    /// TLS with a certificate that chains to these roots and names the host.
    Verified(Roots),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Roots {
    System,
    File(PathBuf),
}

/// A client certificate chain and its private key, both PEM files.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Identity {
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
}

/// How to set up TLS: who the server must be, and who we are.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tls {
    pub(crate) protection: Protection,
    pub(crate) identity: Option<Identity>,
}

/// The TLS parameters taken out of a URL, as given.
#[derive(Default)]
struct TlsParams {
    sslmode: Option<String>,
    rootcert: Option<String>,
    cert: Option<String>,
    key: Option<String>,
}

/// What is wrong with a store URL; nothing was tried yet.
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    #[error("it is empty")]
    Empty,
    #[error("sslcert and sslkey go together: give both or neither")]
    HalfIdentity,
    #[error(
        "unknown sslmode {0:?} (known: disable, allow, prefer, require, verify-ca, verify-full)"
    )]
    UnknownSslMode(String),
    /// tokio-postgres could not read the rest of it.
    #[error("{}", super::postgres::describe_error(.0))]
    Unreadable(#[source] tokio_postgres::Error),
}

/// Why TLS could not be set up for a connection, naming the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot set up TLS: {0}")]
    Setup(#[source] rustls::Error),
    #[error("cannot load the platform's root certificates: {0}")]
    PlatformRoots(#[source] rustls::Error),
    #[error("sslrootcert {}: {problem}", path.display())]
    RootCert {
        path: PathBuf,
        #[source]
        problem: PemProblem,
    },
    #[error("sslcert {}: {problem}", path.display())]
    ClientCert {
        path: PathBuf,
        #[source]
        problem: PemProblem,
    },
    #[error("sslkey {}: {problem}", path.display())]
    ClientKey {
        path: PathBuf,
        #[source]
        problem: PemProblem,
    },
    #[error("sslcert {} with sslkey {}: {source}", cert.display(), key.display())]
    ClientIdentity {
        cert: PathBuf,
        key: PathBuf,
        #[source]
        source: rustls::Error,
    },
}

/// What is wrong with one PEM file.
#[derive(Debug, thiserror::Error)]
pub enum PemProblem {
    #[error("{0}")]
    Unreadable(#[from] rustls::pki_types::pem::Error),
    #[error("{0}")]
    Rejected(#[from] rustls::Error),
    #[error("{0}")]
    NoVerifier(#[from] rustls::client::VerifierBuilderError),
    #[error("no certificates in it")]
    NoCertificates,
}

/// Parses a store URL (or key-value connection string) into the tokio-postgres configuration and
/// the protection its sslmode asks for.
pub(crate) fn parse(url: &str) -> Result<(Config, Tls), UrlError> {
    let (rest, params) = take_tls_params(url);
    let TlsParams {
        sslmode,
        rootcert,
        cert,
        key,
    } = params;
    let identity = match (cert, key) {
        (Some(cert), Some(key)) => Some(Identity {
            cert: cert.into(),
            key: key.into(),
        }),
        (None, None) => None,
        _ => return Err(UrlError::HalfIdentity),
    };
    let mut config: Config = rest.parse().map_err(UrlError::Unreadable)?;
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
        (other, _) => return Err(UrlError::UnknownSslMode(other.to_owned())),
    };
    config.ssl_mode(ssl_mode);
    Ok((
        config,
        Tls {
            protection,
            identity,
        },
    ))
}

/// Removes the TLS parameters from a URL's query, returning their decoded values. A key-value
/// connection string is returned as it is (tokio-postgres reads its sslmode).
fn take_tls_params(url: &str) -> (Cow<'_, str>, TlsParams) {
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let Some((base, query)) = url.split_once('?').filter(|_| is_url) else {
        return (Cow::Borrowed(url), TlsParams::default());
    };
    let mut params = TlsParams::default();
    let mut kept = Vec::new();
    for param in query.split('&') {
        let Some((key, value)) = form_urlencoded::parse(param.as_bytes()).next() else {
            kept.push(param);
            continue;
        };
        let slot = match key.as_ref() {
            "sslmode" => &mut params.sslmode,
            "sslrootcert" => &mut params.rootcert,
            "sslcert" => &mut params.cert,
            "sslkey" => &mut params.key,
            _ => {
                kept.push(param);
                continue;
            }
        };
        *slot = Some(value.into_owned());
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    (Cow::Owned(rest), params)
}

/// The TLS connector for a protection other than `Plain`, presenting `identity` if there is one.
pub(crate) fn connector(tls: &Tls) -> Result<MakeRustlsConnect, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Setup)?;
    let verified = match &tls.protection {
        Protection::Verified(Roots::System) => {
            use rustls_platform_verifier::BuilderVerifierExt;
            builder
                .with_platform_verifier()
                .map_err(TlsError::PlatformRoots)?
        }
        Protection::Verified(Roots::File(path)) => {
            let verifier =
                roots_verifier(path, provider).map_err(|problem| TlsError::RootCert {
                    path: path.clone(),
                    problem,
                })?;
            builder.with_webpki_verifier(verifier)
        }
        Protection::Encrypted | Protection::Plain => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(EncryptOnly(provider))),
    };
    let config = match &tls.identity {
        None => verified.with_no_client_auth(),
        Some(Identity { cert, key }) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| TlsError::ClientCert {
                    path: cert.clone(),
                    problem: e.into(),
                })?;
            if chain.is_empty() {
                return Err(TlsError::ClientCert {
                    path: cert.clone(),
                    problem: PemProblem::NoCertificates,
                });
            }
            let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::ClientKey {
                path: key.clone(),
                problem: e.into(),
            })?;
            verified
                .with_client_auth_cert(chain, key_der)
                .map_err(|source| TlsError::ClientIdentity {
                    cert: cert.clone(),
                    key: key.clone(),
                    source,
                })?
        }
    };
    Ok(MakeRustlsConnect::new(config))
}

/// A verifier that accepts only certificates chaining to the roots in the PEM file at `path`.
fn roots_verifier(
    path: &Path,
    provider: Arc<CryptoProvider>,
) -> Result<Arc<WebPkiServerVerifier>, PemProblem> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path)? {
        roots.add(cert?)?;
    }
    if roots.is_empty() {
        return Err(PemProblem::NoCertificates);
    }
    Ok(WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build()?)
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
    use std::path::Path;

    fn protection(url: &str) -> Result<(SslMode, Protection), String> {
        parse(url)
            .map(|(config, tls)| (config.get_ssl_mode(), tls.protection))
            .map_err(|e| e.to_string())
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
    fn a_client_certificate_takes_both_files_and_leaves_the_url() {
        let (config, tls) =
            parse("postgres://u@h/db?sslcert=%2Fc%20c.pem&application_name=x&sslkey=/k.pem")
                .unwrap();
        assert_eq!(
            tls.identity,
            Some(Identity {
                cert: "/c c.pem".into(),
                key: "/k.pem".into()
            })
        );
        assert_eq!(config.get_application_name(), Some("x"));
        assert_eq!(parse("postgres://u@h/db").unwrap().1.identity, None);
        for half in [
            "postgres://h/db?sslcert=/c.pem",
            "postgres://h/db?sslkey=/k.pem",
        ] {
            let err = parse(half).unwrap_err();
            assert!(matches!(err, UrlError::HalfIdentity), "{half}: {err}");
        }
    }

    #[test]
    fn unreadable_client_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not PEM\n").unwrap();
        let missing = dir.path().join("missing.pem");
        let with = |cert: &Path, key: &Path| Tls {
            protection: Protection::Encrypted,
            identity: Some(Identity {
                cert: cert.into(),
                key: key.into(),
            }),
        };
        let err = |tls: Tls| connector(&tls).err().unwrap().to_string();
        assert!(err(with(&missing, &junk)).starts_with(&format!("sslcert {}", missing.display())));
        assert_eq!(
            err(with(&junk, &junk)),
            format!("sslcert {}: no certificates in it", junk.display())
        );
    }

    #[test]
    fn a_missing_or_empty_root_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.pem");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        for path in [missing, empty] {
            let tls = Tls {
                protection: Protection::Verified(Roots::File(path.clone())),
                identity: None,
            };
            let Err(e) = connector(&tls) else {
                panic!("{} was accepted", path.display())
            };
            assert!(
                matches!(&e, TlsError::RootCert { path: p, .. } if *p == path),
                "{e}"
            );
            assert!(
                e.to_string()
                    .starts_with(&format!("sslrootcert {}", path.display())),
                "{e}"
            );
        }
        let encrypted = Tls {
            protection: Protection::Encrypted,
            identity: None,
        };
        assert!(connector(&encrypted).is_ok());
    }
}
