//! Spending a pairing code at the server: what a gate receives (its mesh identity, the
//! issuer keys, its uplink credential) and how its identity is kept on disk. Shared by
//! `gatemesh pair` and the desktop app's set-up.

use std::path::Path;

use anyhow::{Context, Result};

/// What the server gave for a pairing code.
#[derive(Debug, Clone)]
pub struct Paired {
    pub server: String,
    pub event: String,
    pub name: String,
    /// `gate` or `observer`.
    pub role: String,
    /// The device's credential for the uplink.
    pub token: String,
    /// Issuer public keys (SPKI PEM).
    pub issuer_pems: Vec<String>,
    pub device_key_pem: String,
    pub device_cert_pem: String,
    pub ca_pem: String,
}

/// Spends `code` at `server` (`POST /v1/pair`).
pub async fn pair(server: &str, code: &str) -> Result<Paired> {
    let server = server.trim_end_matches('/').to_owned();
    let response = reqwest::Client::new()
        .post(format!("{server}/v1/pair"))
        .timeout(std::time::Duration::from_secs(30))
        .json(&serde_json::json!({ "code": code }))
        .send()
        .await
        .with_context(|| format!("reaching {server}"))?;
    let status = response.status();
    let answer: serde_json::Value = response.json().await.unwrap_or_default();
    if !status.is_success() {
        anyhow::bail!(
            "the server refused the code: {}",
            answer["error"]["message"]
                .as_str()
                .unwrap_or(status.as_str())
        );
    }
    let text = |v: &serde_json::Value, what: &str| -> Result<String> {
        v.as_str()
            .map(str::to_owned)
            .with_context(|| format!("the server's answer lacks {what}"))
    };
    let issuer_pems: Vec<String> = answer["keys"]
        .as_array()
        .map(|k| {
            k.iter()
                .filter_map(|k| k["pem"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    anyhow::ensure!(
        !issuer_pems.is_empty(),
        "the server's answer lacks the issuer keys"
    );
    Ok(Paired {
        event: text(&answer["event"], "the event")?,
        name: text(&answer["name"], "the device name")?,
        role: text(&answer["role"], "the role")?,
        token: text(&answer["token"], "the credential")?,
        issuer_pems,
        device_key_pem: text(&answer["identity"]["device_key"], "the device key")?,
        device_cert_pem: text(&answer["identity"]["device_pem"], "the certificate")?,
        ca_pem: text(&answer["identity"]["ca_pem"], "the CA certificate")?,
        server,
    })
}

/// Writes the device identity into `dir` (the layout `gatemesh enroll` makes; the key
/// readable by its owner only) and checks that it loads.
pub fn write_identity(dir: &Path, paired: &Paired) -> Result<()> {
    use gatemesh_mesh::pki::{CA_CERT, DEVICE_CERT, DEVICE_KEY};
    std::fs::create_dir_all(dir)?;
    crate::desk::write_private(&dir.join(DEVICE_KEY), &paired.device_key_pem)?;
    std::fs::write(dir.join(DEVICE_CERT), &paired.device_cert_pem)?;
    std::fs::write(dir.join(CA_CERT), &paired.ca_pem)?;
    gatemesh_mesh::pki::Identity::load(dir).context("loading the new identity")?;
    Ok(())
}
