//! Device identity carried in the SAN URI `gatemesh://<EVENT>/<role>/<node>`.

use crate::{Result, invalid};
use rustls_pki_types::CertificateDer;
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

pub const URI_PREFIX: &str = "gatemesh://";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Gate,
    Observer,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Gate => "gate",
            Role::Observer => "observer",
        }
    }
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "gate" => Ok(Role::Gate),
            "observer" => Ok(Role::Observer),
            _ => Err(invalid!("unknown role {s:?}")),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerId {
    pub event: String,
    pub role: Role,
    pub name: String,
}

/// Event ids and device names: 1..=63 characters of `A-Z a-z 0-9 . _ -`, so the URI is
/// unambiguous.
fn valid_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
}

impl PeerId {
    pub fn new(event: &str, role: Role, name: &str) -> Self {
        Self {
            event: event.into(),
            role,
            name: name.into(),
        }
    }

    pub fn validate(&self) -> Result<()> {
        if !valid_label(&self.event) || !valid_label(&self.name) {
            return Err(invalid!(
                "event id and device name must be 1-63 characters of A-Z a-z 0-9 . _ -"
            ));
        }
        Ok(())
    }

    pub fn uri(&self) -> String {
        format!(
            "{URI_PREFIX}{}/{}/{}",
            self.event,
            self.role.as_str(),
            self.name
        )
    }

    pub fn parse_uri(uri: &str) -> Result<Self> {
        let rest = uri
            .strip_prefix(URI_PREFIX)
            .ok_or_else(|| invalid!("not a gatemesh URI"))?;
        let mut it = rest.split('/');
        let (Some(event), Some(role), Some(name), None) =
            (it.next(), it.next(), it.next(), it.next())
        else {
            return Err(invalid!("malformed gatemesh URI {uri:?}"));
        };
        let id = PeerId::new(event, Role::parse(role)?, name);
        id.validate()?;
        Ok(id)
    }

    /// Extract the identity from a DER end-entity certificate: exactly one gatemesh:// SAN URI.
    /// (Does NOT verify the certificate: call only on certs already verified by rustls/webpki.)
    pub fn from_cert(cert: &CertificateDer<'_>) -> Result<Self> {
        let (_, x509) = X509Certificate::from_der(cert.as_ref())
            .map_err(|e| invalid!("cannot parse certificate: {e}"))?;
        let san = x509
            .subject_alternative_name()
            .map_err(|e| invalid!("bad SAN extension: {e}"))?
            .ok_or_else(|| invalid!("certificate has no SAN"))?;
        let mut found = None;
        for gn in &san.value.general_names {
            if let GeneralName::URI(uri) = gn
                && uri.starts_with(URI_PREFIX)
            {
                if found.is_some() {
                    return Err(invalid!("more than one gatemesh URI in SAN"));
                }
                found = Some(PeerId::parse_uri(uri)?);
            }
        }
        found.ok_or_else(|| invalid!("no gatemesh:// URI in SAN"))
    }
}
