//! The API's TLS identity: operator-supplied PEM files, or a self-signed
//! certificate generated once into the data directory so a fresh start needs no set-up.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// Where the certificate comes from.
#[derive(Debug, Clone)]
pub enum TlsSource {
    /// `tls/cert.pem` and `tls/key.pem` in the data directory, generated if absent.
    SelfSigned,
    Files {
        cert: PathBuf,
        key: PathBuf,
    },
}

/// Paths of the self-signed pair inside a data directory (tests trust `cert`).
pub fn self_signed_paths(data_dir: &Path) -> (PathBuf, PathBuf) {
    let dir = data_dir.join("tls");
    (dir.join("cert.pem"), dir.join("key.pem"))
}

pub fn server_config(source: &TlsSource, data_dir: &Path) -> anyhow::Result<Arc<ServerConfig>> {
    let (cert_path, key_path) = match source {
        TlsSource::Files { cert, key } => (cert.clone(), key.clone()),
        TlsSource::SelfSigned => {
            let (cert, key) = self_signed_paths(data_dir);
            if !cert.exists() || !key.exists() {
                generate_self_signed(&cert, &key)?;
            }
            (cert, key)
        }
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert_path)
        .with_context(|| format!("reading TLS certificate {}", cert_path.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("parsing TLS certificate {}", cert_path.display()))?;
    if certs.is_empty() {
        bail!("{} holds no PEM certificate", cert_path.display());
    }
    let key = PrivateKeyDer::from_pem_file(&key_path)
        .with_context(|| format!("reading TLS private key {}", key_path.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("choosing TLS versions")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("the TLS certificate and key do not match")?;
    Ok(Arc::new(config))
}

fn generate_self_signed(cert_path: &Path, key_path: &Path) -> anyhow::Result<()> {
    let names = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    let generated = rcgen::generate_simple_self_signed(names)
        .context("generating a self-signed certificate")?;
    let dir = cert_path.parent().expect("tls paths have a parent");
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    crate::server::admin_token::write_private(
        key_path,
        generated.signing_key.serialize_pem().as_bytes(),
    )?;
    std::fs::write(cert_path, generated.cert.pem())
        .with_context(|| format!("writing {}", cert_path.display()))?;
    tracing::info!(cert = %cert_path.display(), "generated a self-signed TLS certificate for localhost");
    Ok(())
}
