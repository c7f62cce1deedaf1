//! TLS for the store's connection, as libpq's `sslmode` asks for it:
//!
//! | sslmode | encrypted | the server's certificate |
//! |---|---|---|
//! | `disable` | never | - |
//! | `allow`, `prefer` (the default) | when the server offers it | as `require` |
//! | `require` | always | not checked, unless a root certificate file exists: then as `verify-ca` |
//! | `verify-ca` | always | signed by a root in `sslrootcert` |
//! | `verify-full` | always | signed by a root in `sslrootcert`, and names the host connected to |
//!
//! The root certificates come from `sslrootcert` in the URL, else `PGSSLROOTCERT`, else
//! `~/.postgresql/root.crt` when it exists. The TLS is rustls with the ring provider.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};
use tokio_postgres_rustls::MakeRustlsConnect;

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub fn parse(text: &str) -> Option<SslMode> {
        Some(match text {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    /// The driver's own setting: whether TLS is tried, and whether it must be had.
    pub fn driver(self) -> postgres::config::SslMode {
        use postgres::config::SslMode as Driver;
        match self {
            SslMode::Disable => Driver::Disable,
            SslMode::Allow | SslMode::Prefer => Driver::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => Driver::Require,
        }
    }
}

/// How the connection is to be secured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    pub mode: SslMode,
    /// The root certificates (PEM) the server's certificate must be signed by.
    pub root_cert: Option<PathBuf>,
}

/// What is checked of the server's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Nothing,
    Chain,
    ChainAndName,
}

impl Tls {
    fn check(&self) -> Result<Check, String> {
        let needs_roots = |what: &str| {
            format!(
                "sslmode={what} checks the server's certificate against root certificates: \
                 name their file with sslrootcert=FILE in the URL, or PGSSLROOTCERT, or put it \
                 at ~/.postgresql/root.crt"
            )
        };
        Ok(match (self.mode, &self.root_cert) {
            (SslMode::VerifyFull, Some(_)) => Check::ChainAndName,
            (SslMode::VerifyFull, None) => return Err(needs_roots("verify-full")),
            (SslMode::VerifyCa, Some(_)) => Check::Chain,
            (SslMode::VerifyCa, None) => return Err(needs_roots("verify-ca")),
            (_, Some(_)) => Check::Chain,
            (_, None) => Check::Nothing,
        })
    }
}

/// The connector for `tls`; `None` when the connection is never encrypted.
pub fn connector(tls: &Tls) -> Result<Option<MakeRustlsConnect>, String> {
    if tls.mode == SslMode::Disable {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match tls.check()? {
        Check::ChainAndName => webpki(tls, &provider)?,
        Check::Chain => Arc::new(Lenient {
            chain: Some(webpki(tls, &provider)?),
            provider: provider.clone(),
        }),
        Check::Nothing => Arc::new(Lenient {
            chain: None,
            provider: provider.clone(),
        }),
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Some(MakeRustlsConnect::new(config)))
}

/// A bundle of every public root is about 200 KiB; nothing a user names comes near this.
const ROOT_CERTS_CAP: u64 = 4 * 1024 * 1024;

/// The certificates of a PEM file.
fn roots(path: &Path) -> Result<Arc<RootCertStore>, String> {
    let shown = path.display();
    // Read with a cap, and only a regular file (a link to one is fine): a URL naming
    // `sslrootcert=/dev/zero` or a FIFO must neither hang nor fill memory.
    let bytes = match crate::read::read_named(path, ROOT_CERTS_CAP) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return Err(format!(
                "cannot read the root certificates in {shown}: no such file"
            ));
        }
        Err(e) => {
            return Err(format!(
                "cannot read the root certificates: {e}; name a PEM file of at most {} KiB with sslrootcert=FILE",
                ROOT_CERTS_CAP / 1024
            ));
        }
    };
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot read the root certificates in {shown}: {e}"))?;
    let mut store = RootCertStore::empty();
    let (added, _) = store.add_parsable_certificates(certs);
    if added == 0 {
        return Err(format!(
            "{shown} holds no certificate: it must be PEM (-----BEGIN CERTIFICATE-----)"
        ));
    }
    Ok(Arc::new(store))
}

/// The standard check: the chain up to one of the root certificates, and the host's name.
fn webpki(tls: &Tls, provider: &Arc<CryptoProvider>) -> Result<Arc<WebPkiServerVerifier>, String> {
    let path = tls.root_cert.as_deref().unwrap_or(Path::new(""));
    WebPkiServerVerifier::builder_with_provider(roots(path)?, provider.clone())
        .build()
        .map_err(|e| {
            format!(
                "cannot use the root certificates in {}: {e}",
                path.display()
            )
        })
}

/// Less than the standard check: with `chain`, the chain but not the host's name
/// (`verify-ca`); without, no look at the certificate at all (`require` without root
/// certificates, as libpq). The handshake's signatures are checked either way.
#[derive(Debug)]
struct Lenient {
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_each_mode_checks() {
        let tls = |mode, root: Option<&str>| Tls {
            mode,
            root_cert: root.map(PathBuf::from),
        };
        assert_eq!(tls(SslMode::Require, None).check(), Ok(Check::Nothing));
        assert_eq!(tls(SslMode::Prefer, None).check(), Ok(Check::Nothing));
        assert_eq!(tls(SslMode::Require, Some("r")).check(), Ok(Check::Chain));
        assert_eq!(tls(SslMode::VerifyCa, Some("r")).check(), Ok(Check::Chain));
        assert_eq!(
            tls(SslMode::VerifyFull, Some("r")).check(),
            Ok(Check::ChainAndName)
        );
        let refused = tls(SslMode::VerifyFull, None).check().unwrap_err();
        assert!(refused.contains("sslrootcert"), "{refused}");
        assert!(tls(SslMode::VerifyCa, None).check().is_err());
        assert!(connector(&tls(SslMode::Disable, None)).unwrap().is_none());
        let missing = connector(&tls(SslMode::VerifyCa, Some("/nonexistent/root.crt")));
        assert!(
            missing.err().unwrap().contains("/nonexistent/root.crt"),
            "names the file"
        );
    }

    /// `sslrootcert=/dev/zero` (or a FIFO) is refused at once, naming the file, never read.
    #[test]
    fn a_root_certificate_file_that_is_no_regular_file_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for path in [Path::new("/dev/zero"), &fifo] {
            let refused = roots(path).err().unwrap();
            assert!(
                refused.contains(&path.display().to_string())
                    && refused.contains("not a regular file"),
                "{refused}"
            );
        }
    }
}
