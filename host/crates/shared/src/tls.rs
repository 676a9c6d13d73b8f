//! TLS for the store's connections, with libpq's settings and meaning:
//!
//! - `sslmode` (URL parameter, else `PGSSLMODE`, else `prefer`):
//!   `disable` never encrypts; `prefer` encrypts when the server offers TLS
//!   and goes on unencrypted when it does not (or when the handshake fails);
//!   `require` fails unless the connection is encrypted, without checking the
//!   certificate; `verify-ca` also checks that a trusted CA signed the
//!   server's certificate; `verify-full` also checks that the certificate
//!   names the host connected to.
//! - `sslrootcert` (URL parameter, else `PGSSLROOTCERT`, else
//!   `~/.postgresql/root.crt`): the PEM file of the CA certificates to trust,
//!   or `system` for the operating system's trusted roots (which makes
//!   `verify-full` the default and refuses weaker modes). As in libpq,
//!   `prefer` and `require` check the chain too when that file exists.
//!
//! The TLS stack is rustls with the ring provider, through
//! `tokio-postgres-rustls`; the handshake is PostgreSQL's own (an
//! `SSLRequest` on the plain connection, then TLS).

use std::path::PathBuf;
use std::sync::Arc;

use postgres::config::SslMode as PgSslMode;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

/// libpq's `sslmode` values that code-intel supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    /// The value as written in a URL.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }
}

/// The TLS parameters of a store URL, taken out of it (the PostgreSQL
/// client library reads neither `sslrootcert` nor the `verify-*` modes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsParams {
    pub sslmode: Option<String>,
    pub sslrootcert: Option<String>,
}

/// Parameters of libpq's that name a client certificate: not supported.
const CLIENT_CERT_PARAMS: [&str; 3] = ["sslcert", "sslkey", "sslpassword"];

/// Removes `sslmode` and `sslrootcert` from `url` (a `postgres://` URL or
/// `key=value` pairs) and returns what is left and their values.
///
/// # Errors
/// A client certificate parameter (`sslcert`, `sslkey`, `sslpassword`), or
/// a quoted value that is not closed. The message never repeats the URL.
pub fn take_tls_params(url: &str) -> Result<(String, TlsParams), String> {
    let mut params = TlsParams::default();
    let mut take = |key: &str, value: String| -> Result<bool, String> {
        match key {
            "sslmode" => params.sslmode = Some(value),
            "sslrootcert" => params.sslrootcert = Some(value),
            k if CLIENT_CERT_PARAMS.contains(&k) => {
                return Err(format!(
                    "client certificates ({k}) are not supported; remove {k} from {} / shared_store and let the server authenticate by password",
                    crate::STORE_ENV
                ));
            }
            _ => return Ok(false),
        }
        Ok(true)
    };
    let trimmed = url.trim();
    if trimmed.starts_with("postgres://") || trimmed.starts_with("postgresql://") {
        let Some((base, query)) = trimmed.split_once('?') else {
            return Ok((trimmed.to_string(), params));
        };
        let mut kept = Vec::new();
        for part in query.split('&') {
            let (key, value) = part.split_once('=').unwrap_or((part, ""));
            if !take(&percent_decode(key), percent_decode(value))? {
                kept.push(part);
            }
        }
        let rest = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return Ok((rest, params));
    }
    let mut kept = Vec::new();
    for (key, value) in key_value_pairs(trimmed)? {
        if !take(&key, value.clone())? {
            kept.push(format!(
                "{key}='{}'",
                value.replace('\\', "\\\\").replace('\'', "\\'")
            ));
        }
    }
    Ok((kept.join(" "), params))
}

/// `%XX` escapes decoded (as the URL's parser decodes them).
fn percent_decode(text: &str) -> String {
    let hex = |b: u8| char::from(b).to_digit(16).and_then(|d| u8::try_from(d).ok());
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(hi * 16 + lo);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// libpq's `key=value` pairs: values unquoted up to white space, or in
/// single quotes with `\'` and `\\` escapes.
fn key_value_pairs(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            // The text is not repeated: it may be a password.
            return Err(format!(
                "{} / shared_store is not a PostgreSQL URL (a word without `=`); write it as postgres://USER@HOST:5432/DATABASE",
                crate::STORE_ENV
            ));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    Some('\\') => value.extend(chars.next()),
                    Some('\'') => break,
                    Some(c) => value.push(c),
                    None => {
                        return Err(format!(
                            "a quoted value of {key} is not closed in {} / shared_store",
                            crate::STORE_ENV
                        ));
                    }
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        pairs.push((key, value));
    }
}

/// Where the CA certificates to trust come from.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Roots {
    /// None: the certificate is not checked.
    Unchecked,
    /// A PEM file; `origin` names the setting that gave it.
    File { path: PathBuf, origin: &'static str },
    /// The operating system's trusted roots (`sslrootcert=system`).
    System,
}

/// The TLS settings of one store, resolved.
#[derive(Clone)]
pub struct Tls {
    pub mode: SslMode,
    /// Where `sslmode` came from (`sslmode`, `PGSSLMODE`, or the default).
    mode_origin: &'static str,
    roots: Roots,
    connector: Option<MakeRustlsConnect>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("mode", &self.mode)
            .field("roots", &self.roots)
            .finish_non_exhaustive()
    }
}

impl Tls {
    /// Resolves `params` as libpq would, with `env` giving `PGSSLMODE`,
    /// `PGSSLROOTCERT` and `HOME`, and loads the CA certificates.
    ///
    /// # Errors
    /// An unknown `sslmode`; a weak mode with `sslrootcert=system`; for
    /// `verify-ca` and `verify-full`, a root certificate file that does not
    /// exist, cannot be read or holds no certificate; each saying what to set.
    pub fn resolve(params: &TlsParams, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let (mode_text, mode_origin) = match (&params.sslmode, env("PGSSLMODE")) {
            (Some(m), _) => (Some(m.clone()), "sslmode"),
            (None, Some(m)) => (Some(m), "PGSSLMODE"),
            (None, None) => (None, "the default"),
        };
        let (root_text, root_origin) = match (&params.sslrootcert, env("PGSSLROOTCERT")) {
            (Some(r), _) => (Some(r.clone()), "sslrootcert"),
            (None, Some(r)) => (Some(r), "PGSSLROOTCERT"),
            (None, None) => (None, "the default sslrootcert"),
        };
        let system = root_text.as_deref() == Some("system");
        let mode = match mode_text.as_deref().map(str::trim) {
            None if system => SslMode::VerifyFull,
            None | Some("prefer") => SslMode::Prefer,
            Some("disable") => SslMode::Disable,
            Some("require") => SslMode::Require,
            Some("verify-ca") => SslMode::VerifyCa,
            Some("verify-full") => SslMode::VerifyFull,
            Some("allow") => {
                return Err(format!(
                    "{mode_origin}=allow is not supported; use prefer (encrypt when the server offers TLS) or disable"
                ));
            }
            Some(other) => {
                return Err(format!(
                    "{mode_origin}={other} is not a TLS mode; use disable, prefer, require, verify-ca or verify-full"
                ));
            }
        };
        if system && mode != SslMode::VerifyFull {
            return Err(format!(
                "{mode_origin}={} may not be used with {root_origin}=system (the system's roots are only worth checking with the host name); use sslmode=verify-full",
                mode.as_str()
            ));
        }
        if mode == SslMode::Disable {
            return Ok(Self {
                mode,
                mode_origin,
                roots: Roots::Unchecked,
                connector: None,
            });
        }
        let verify = matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull);
        let roots = if system {
            Roots::System
        } else {
            let path = match root_text {
                Some(path) => Some(PathBuf::from(path)),
                None => env("HOME").map(|home| PathBuf::from(home).join(".postgresql/root.crt")),
            };
            match path {
                Some(path) if path.exists() => Roots::File {
                    path,
                    origin: root_origin,
                },
                // libpq: only the verifying modes need the file.
                _ if !verify => Roots::Unchecked,
                path => {
                    let shown = path.map_or_else(
                        || "~/.postgresql/root.crt".to_string(),
                        |p| p.display().to_string(),
                    );
                    return Err(format!(
                        "sslmode={} needs the CA certificate to check the server's against, and the root certificate file {shown} ({root_origin}) does not exist; set sslrootcert to your provider's CA bundle (PEM), use sslrootcert=system for the system's trusted roots, or sslmode=require to encrypt without checking the certificate",
                        mode.as_str()
                    ));
                }
            }
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier: Arc<dyn ServerCertVerifier> = match &roots {
            Roots::Unchecked => Arc::new(Unchecked(provider.clone())),
            Roots::File { .. } | Roots::System => {
                let store = load_roots(&roots)?;
                let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
                    .build()
                    .map_err(|e| format!("the CA certificates cannot be used: {e}"))?;
                if mode == SslMode::VerifyFull {
                    webpki
                } else {
                    Arc::new(ChainOnly(webpki))
                }
            }
        };
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS cannot be set up: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        // As libpq 17 does: PostgreSQL 17's direct TLS (`sslnegotiation=direct`)
        // needs it, and servers that do not know ALPN ignore it.
        config.alpn_protocols = vec![b"postgresql".to_vec()];
        Ok(Self {
            mode,
            mode_origin,
            roots,
            connector: Some(MakeRustlsConnect::new(config)),
        })
    }

    /// The mode the PostgreSQL client negotiates with: the verifying modes
    /// are `require` to it (the checks are the connector's).
    #[must_use]
    pub fn postgres_mode(&self) -> PgSslMode {
        match self.mode {
            SslMode::Disable => PgSslMode::Disable,
            SslMode::Prefer => PgSslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => PgSslMode::Require,
        }
    }

    /// The connector, `None` with `sslmode=disable`.
    #[must_use]
    pub fn connector(&self) -> Option<MakeRustlsConnect> {
        self.connector.clone()
    }

    /// The mode and where it came from, as shown in messages:
    /// `sslmode=require`, `PGSSLMODE=require`, `sslmode=prefer, the default`.
    fn mode_shown(&self) -> String {
        match self.mode_origin {
            "the default" => format!("sslmode={}, the default", self.mode.as_str()),
            origin => format!("{origin}={}", self.mode.as_str()),
        }
    }

    /// The CA certificates' source as shown in messages.
    fn roots_shown(&self) -> String {
        match &self.roots {
            Roots::Unchecked => "no CA certificates".to_string(),
            Roots::File { path, origin } => format!("{origin} {}", path.display()),
            Roots::System => "the system's trusted roots (sslrootcert=system)".to_string(),
        }
    }

    /// A TLS failure of `e` as one line saying what to fix, `None` when `e`
    /// is no TLS failure. `host` is the host connected to.
    #[must_use]
    pub fn describe(&self, e: &postgres::Error, host: &str) -> Option<String> {
        let text = e.to_string();
        if !text.starts_with("error performing TLS handshake") {
            return None;
        }
        let source = std::error::Error::source(e);
        let source_text = source.map(ToString::to_string).unwrap_or_default();
        if source_text.contains("server does not support TLS") {
            return Some(format!(
                "the server does not offer TLS (it refused the SSL request), and {} needs an encrypted connection; turn on ssl on the server, or set sslmode=prefer or disable to connect unencrypted",
                self.mode_shown()
            ));
        }
        let rustls_error = source
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>());
        let reason = match rustls_error {
            Some(rustls::Error::InvalidCertificate(c)) => match c {
                CertificateError::UnknownIssuer => format!(
                    "the server's certificate is not signed by a CA in {}; set sslrootcert to the CA certificate (PEM) that signed it, e.g. your provider's CA bundle, or sslrootcert=system if a public CA signed it",
                    self.roots_shown()
                ),
                CertificateError::NotValidForName => format!(
                    "the server's certificate is not valid for the host name {host}; connect by a name the certificate holds, or set sslmode=verify-ca to check only that a trusted CA signed it"
                ),
                CertificateError::NotValidForNameContext { presented, .. } => format!(
                    "the server's certificate is not valid for the host name {host} (it names {}); connect by a name the certificate holds, or set sslmode=verify-ca to check only that a trusted CA signed it",
                    if presented.is_empty() {
                        "no host".to_string()
                    } else {
                        presented.iter().map(|n| name_shown(n)).collect::<Vec<_>>().join(", ")
                    }
                ),
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                    "the server's certificate has expired; the server needs a new certificate".to_string()
                }
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                    "the server's certificate is not valid yet; check this machine's clock".to_string()
                }
                other => format!(
                    "the server's certificate was refused ({other:?}); check it against {}",
                    self.roots_shown()
                ),
            },
            Some(other) => format!("the TLS handshake failed: {other}"),
            None => format!("the TLS handshake failed: {source_text}"),
        };
        Some(format!("{reason} ({})", self.mode_shown()))
    }
}

/// A name a certificate presents, as rustls gives it (`DnsName("db")`,
/// `IpAddress(V4(..))`), shown as written (`db`); other forms as they come.
fn name_shown(name: &str) -> String {
    name.strip_prefix("DnsName(\"")
        .and_then(|n| n.strip_suffix("\")"))
        .map_or_else(|| name.to_string(), str::to_string)
}

/// The trusted CA certificates of `roots`.
fn load_roots(roots: &Roots) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match roots {
        Roots::Unchecked => {}
        Roots::File { path, origin } => {
            let unreadable = |e: &dyn std::fmt::Display| {
                format!(
                    "the root certificate file {} ({origin}) cannot be read: {e}; set sslrootcert to a PEM file of CA certificates",
                    path.display()
                )
            };
            let certs = CertificateDer::pem_file_iter(path).map_err(|e| unreadable(&e))?;
            for cert in certs {
                let cert = cert.map_err(|e| unreadable(&e))?;
                store.add(cert).map_err(|e| unreadable(&e))?;
            }
            if store.is_empty() {
                return Err(format!(
                    "the root certificate file {} ({origin}) holds no PEM certificate (-----BEGIN CERTIFICATE-----); set sslrootcert to a PEM file of CA certificates",
                    path.display()
                ));
            }
        }
        Roots::System => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                let errors: Vec<String> = found.errors.iter().map(ToString::to_string).collect();
                return Err(format!(
                    "sslrootcert=system found no trusted roots on this system ({}); install the CA certificates (e.g. the ca-certificates package), set SSL_CERT_FILE, or set sslrootcert to a PEM file",
                    if errors.is_empty() { "none installed".to_string() } else { errors.join("; ") }
                ));
            }
        }
    }
    Ok(store)
}

/// `verify-ca`: the chain must lead to a trusted CA; the host name is not
/// checked (webpki checks the chain before the name, so a name error means
/// the chain passed).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
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
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer` and `require` without a root certificate file: encrypted, the
/// certificate not checked (libpq's meaning); the handshake's signatures
/// are still verified, so the session is bound to the certificate's key.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
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
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn tls_params_leave_the_url_and_keep_the_rest() {
        let (rest, p) = take_tls_params(
            "postgres://ci:s3cret@db:5432/code?sslmode=verify-full&application_name=x&sslrootcert=%2Fetc%2Fca%20b.pem",
        )
        .unwrap();
        assert_eq!(rest, "postgres://ci:s3cret@db:5432/code?application_name=x");
        assert_eq!(p.sslmode.as_deref(), Some("verify-full"));
        assert_eq!(p.sslrootcert.as_deref(), Some("/etc/ca b.pem"));
        let (rest, p) = take_tls_params("postgresql://db/code?sslmode=require").unwrap();
        assert_eq!(rest, "postgresql://db/code");
        assert_eq!(p.sslmode.as_deref(), Some("require"));

        let (rest, p) = take_tls_params(
            r"host=db sslmode = verify-ca password='it\'s' sslrootcert='/a dir/ca.pem' user=o\'k",
        )
        .unwrap();
        assert_eq!(p.sslmode.as_deref(), Some("verify-ca"));
        assert_eq!(p.sslrootcert.as_deref(), Some("/a dir/ca.pem"));
        assert!(!rest.contains("ssl"), "{rest}");
        let config: postgres::Config = rest.parse().unwrap();
        assert_eq!(config.get_user(), Some("o'k"));

        let err = take_tls_params("postgres://ci:s3cret@db/code?sslcert=/c.pem").unwrap_err();
        assert!(err.contains("sslcert") && !err.contains("s3cret"), "{err}");
        assert!(take_tls_params("host=db password='s3cret").unwrap_err().contains("not closed"));
    }

    #[test]
    fn modes_resolve_as_libpq_resolves_them() {
        let params = |mode: Option<&str>, root: Option<&str>| TlsParams {
            sslmode: mode.map(str::to_string),
            sslrootcert: root.map(str::to_string),
        };
        // The default is prefer; the environment gives what the URL does not.
        assert_eq!(Tls::resolve(&params(None, None), &no_env).unwrap().mode, SslMode::Prefer);
        let env = |name: &str| (name == "PGSSLMODE").then(|| "disable".to_string());
        let tls = Tls::resolve(&params(None, None), &env).unwrap();
        assert_eq!((tls.mode, tls.postgres_mode()), (SslMode::Disable, PgSslMode::Disable));
        assert!(tls.connector().is_none());
        let tls = Tls::resolve(&params(Some("require"), None), &env).unwrap();
        assert_eq!((tls.mode, tls.postgres_mode()), (SslMode::Require, PgSslMode::Require));
        assert_eq!(tls.roots, Roots::Unchecked);

        // The verifying modes need the root certificate file.
        let err = Tls::resolve(&params(Some("verify-full"), Some("/nonexistent/ca.pem")), &no_env).unwrap_err();
        assert!(err.contains("/nonexistent/ca.pem") && err.contains("sslrootcert"), "{err}");
        let home = |name: &str| (name == "HOME").then(|| "/nonexistent-home".to_string());
        let err = Tls::resolve(&params(Some("verify-ca"), None), &home).unwrap_err();
        assert!(err.contains("/nonexistent-home/.postgresql/root.crt"), "{err}");
        // require without the file encrypts unchecked.
        let tls = Tls::resolve(&params(Some("require"), Some("/nonexistent/ca.pem")), &no_env).unwrap();
        assert_eq!(tls.roots, Roots::Unchecked);

        // A file that is no certificate.
        let dir = std::env::temp_dir().join(format!("code-intel-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("ca.pem");
        std::fs::write(&file, "not a certificate\n").unwrap();
        let err = Tls::resolve(&params(Some("verify-full"), file.to_str()), &no_env).unwrap_err();
        assert!(err.contains("holds no PEM certificate"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();

        // system: verify-full by default, weaker modes refused.
        let err = Tls::resolve(&params(Some("require"), Some("system")), &no_env).unwrap_err();
        assert!(err.contains("verify-full"), "{err}");
        let root_env = |name: &str| (name == "PGSSLROOTCERT").then(|| "system".to_string());
        match Tls::resolve(&params(None, None), &root_env) {
            Ok(tls) => assert_eq!((tls.mode, tls.roots), (SslMode::VerifyFull, Roots::System)),
            Err(e) => assert!(e.contains("found no trusted roots"), "{e}"),
        }

        for bad in ["allow", "verify_full"] {
            let err = Tls::resolve(&params(Some(bad), None), &no_env).unwrap_err();
            assert!(err.contains(&format!("sslmode={bad}")), "{err}");
        }
    }
}
