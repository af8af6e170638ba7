//! Reading the issuer's key files, with messages that tell the two apart: `gatemesh keygen`
//! writes `issuer.key.pem` (private: for `issue` only) and `issuer.pub.pem` (public: for
//! `verify`, gates and anyone who checks tickets).

use std::path::Path;

use anyhow::{Context, Result};
use gatemesh_ticket::{IssuerKey, PublicKey};

use crate::exit::{UsageExt, bail_usage};

/// What a PEM file holds, by its first `BEGIN` line.
fn label(text: &str) -> Option<&str> {
    let start = text.find("-----BEGIN ")? + "-----BEGIN ".len();
    let len = text[start..].find("-----")?;
    Some(&text[start..start + len])
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// The issuer's private key in `path`, for `option` (`--key`).
pub fn private(path: &Path, option: &str) -> Result<IssuerKey> {
    let text = read(path)?;
    if label(&text) == Some("PUBLIC KEY") {
        bail_usage!(
            "{} is the issuer's public key; {option} wants the private one \
             (issuer.key.pem from `gatemesh keygen`, kept by whoever issues tickets)",
            path.display()
        );
    }
    IssuerKey::from_pem(&text)
        .with_context(|| format!("{} is not an issuer private key", path.display()))
        .usage()
}

/// The issuer's public keys in `path` (an SPKI PEM, or a JWK Set such as
/// `issuer.jwks.json`), for `option` (`--issuer`).
pub fn public(path: &Path, option: &str) -> Result<Vec<PublicKey>> {
    let text = read(path)?;
    if label(&text).is_some_and(|l| l.ends_with("PRIVATE KEY")) {
        bail_usage!(
            "{} is the issuer's private key; {option} wants the public one \
             (issuer.pub.pem beside it): gates and checkers never need the private key",
            path.display()
        );
    }
    PublicKey::from_file_text(&text)
        .with_context(|| {
            format!(
                "{} is not an issuer public key (an SPKI PEM or a JWK Set)",
                path.display()
            )
        })
        .usage()
}
