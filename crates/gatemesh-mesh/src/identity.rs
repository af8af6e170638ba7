//! Device identity carried in the SAN URI `gatemesh://<EVENT>/<role>/<node>`.

use crate::{Result, invalid};
use rustls_pki_types::CertificateDer;
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

/// The scheme of the SAN URI that names a device.
pub const URI_PREFIX: &str = "gatemesh://";

/// What a device is: the wire's one role vocabulary.
pub use gatemesh_wire::Role;

/// Who a device is, as its certificate's SAN URI says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerId {
    /// The event id.
    pub event: String,
    /// Gate or observer.
    pub role: Role,
    /// The device name; the mesh keeps one connection per name.
    pub name: String,
}

impl PeerId {
    /// An identity, not yet checked (see [`PeerId::validate`]).
    pub fn new(event: &str, role: Role, name: &str) -> Self {
        Self {
            event: event.into(),
            role,
            name: name.into(),
        }
    }

    /// Checks the event id (1-64 characters of `A-Z a-z 0-9 . _ -`) and the device name
    /// (1-63 of the same), which also keeps the URI free of `/`.
    pub fn validate(&self) -> Result<()> {
        // The same rules as everywhere else: the event id's and the device name's own.
        if gatemesh_ticket::EventId::new(self.event.as_str()).is_err()
            || gatemesh_wire::DeviceName::parse(&self.name).is_none()
        {
            return Err(invalid!(
                "an event id is 1-64 and a device name 1-63 characters of A-Z a-z 0-9 . _ -"
            ));
        }
        Ok(())
    }

    /// The SAN URI: `gatemesh://EVENT/ROLE/NAME`.
    pub fn uri(&self) -> String {
        format!(
            "{URI_PREFIX}{}/{}/{}",
            self.event,
            self.role.as_str(),
            self.name
        )
    }

    /// Reads a SAN URI: exactly what [`PeerId::uri`] writes for a valid identity, nothing else.
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
        let role: Role = role.parse().map_err(|e| invalid!("{e}"))?;
        let id = PeerId::new(event, role, name);
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

#[cfg(test)]
mod tests {
    //! A peer's identity comes from its certificate's SAN URI, read in the TLS handshake:
    //! any URI and any certificate bytes give an identity that names itself exactly, or an
    //! error, never a panic.

    use std::sync::LazyLock;

    use proptest::{prelude::*, sample::Index, test_runner::FileFailurePersistence};

    use super::*;
    use crate::pki::{MeshCa, ca_cert_from_pem, create_ca};

    /// A real device certificate (DER), made once.
    static CERT: LazyLock<Vec<u8>> = LazyLock::new(|| {
        let pem = create_ca("ROCK-2026", 30).unwrap();
        let ca = MeshCa::from_pem(&pem.cert_pem, &pem.key_pem).unwrap();
        let id = PeerId::new("ROCK-2026", Role::Gate, "gate-a");
        let device = ca.enroll(&id, 30).unwrap();
        ca_cert_from_pem(&device.cert_pem).unwrap().to_vec()
    });

    fn uris() -> impl Strategy<Value = String> {
        let label = prop_oneof!["[A-Za-z0-9._-]{0,70}", ".{0,10}", Just(String::new())];
        let role = prop_oneof![
            Just("gate".to_owned()),
            Just("observer".to_owned()),
            ".{0,8}"
        ];
        prop_oneof![
            ".{0,100}",
            (label.clone(), role, label, prop::option::of("/.{0,8}")).prop_map(
                |(event, role, name, extra)| {
                    format!(
                        "gatemesh://{event}/{role}/{name}{}",
                        extra.unwrap_or_default()
                    )
                }
            ),
        ]
    }

    fn certificates() -> impl Strategy<Value = Vec<u8>> {
        let edit = prop_oneof![
            (any::<Index>(), any::<u8>()).prop_map(|(i, b)| (i, Some(b))),
            any::<Index>().prop_map(|i| (i, None)),
        ];
        prop_oneof![
            1 => prop::collection::vec(any::<u8>(), 0..600),
            // The real certificate with bytes changed, or cut short at the first `None`.
            3 => prop::collection::vec(edit, 1..4).prop_map(|edits| {
                let mut der = CERT.clone();
                for (i, byte) in edits {
                    let at = i.index(der.len());
                    match byte {
                        Some(b) => der[at] = b,
                        None => der.truncate(at),
                    }
                    if der.is_empty() {
                        break;
                    }
                }
                der
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 512,
            failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
                "proptest-regressions",
            ))),
            ..ProptestConfig::default()
        })]

        #[test]
        fn a_uri_is_taken_only_as_exactly_what_it_names(uri in uris()) {
            if let Ok(id) = PeerId::parse_uri(&uri) {
                prop_assert!(id.validate().is_ok());
                prop_assert_eq!(id.uri(), uri);
            }
        }

        #[test]
        fn any_certificate_bytes_give_a_valid_identity_or_an_error(der in certificates()) {
            if let Ok(id) = PeerId::from_cert(&CertificateDer::from(der)) {
                prop_assert!(id.validate().is_ok());
                prop_assert_eq!(PeerId::parse_uri(&id.uri()).unwrap(), id);
            }
        }
    }

    #[test]
    fn the_real_certificate_names_its_device() {
        let id = PeerId::from_cert(&CertificateDer::from(CERT.clone())).unwrap();
        assert_eq!(id, PeerId::new("ROCK-2026", Role::Gate, "gate-a"));
    }
}
