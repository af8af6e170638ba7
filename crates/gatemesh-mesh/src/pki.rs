//! Mesh CA + device enrollment with rcgen 0.14 (ECDSA P-256).

use crate::{Result, invalid};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, SanType,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use time::{Duration, OffsetDateTime};

use crate::identity::PeerId;

/// PEM text of the CA (what `ca-init` writes to disk).
pub struct CaPem {
    /// The self-signed CA certificate.
    pub cert_pem: String,
    /// Its PKCS#8 private key: owner-only on disk.
    pub key_pem: String,
}

/// PEM text of an enrolled device.
pub struct DevicePem {
    /// The device certificate, signed by the mesh CA.
    pub cert_pem: String,
    /// Its PKCS#8 private key: owner-only on disk.
    pub key_pem: String,
}

/// A new self-signed mesh CA for `event`, named `gatemesh mesh CA EVENT`, that may sign
/// device certificates only (path length 0).
pub fn create_ca(event: &str, valid_days: i64) -> Result<CaPem> {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;

    // CertificateParams::default() carries CN "rcgen self signed cert" -> replace the whole DN.
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, format!("gatemesh mesh CA {event}"));
    dn.push(DnType::OrganizationName, "gatemesh");
    params.distinguished_name = dn;
    // pathLen 0: this CA may sign device certs only, no intermediates.
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let now = OffsetDateTime::now_utc();
    params.not_before = now - Duration::hours(1);
    params.not_after = now + Duration::days(valid_days);

    let cert = params.self_signed(&key)?;
    Ok(CaPem {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(), // PKCS#8 "PRIVATE KEY"
    })
}

impl std::fmt::Debug for CaPem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaPem").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for DevicePem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevicePem").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for MeshCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeshCa").finish_non_exhaustive()
    }
}

/// A CA loaded back from PEM, able to issue device certificates.
pub struct MeshCa {
    issuer: Issuer<'static, KeyPair>,
    /// The CA certificate, DER.
    pub cert_der: CertificateDer<'static>,
}

impl MeshCa {
    /// Load CA cert + key from PEM (e.g. read from disk by the `enroll` command).
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self> {
        let key = KeyPair::from_pem(key_pem)?;
        let cert_der = CertificateDer::from_pem_slice(cert_pem.as_bytes())?;

        // rcgen does NOT check that the key belongs to the certificate -> do it ourselves.
        let (_, x509) = x509_parser::parse_x509_certificate(&cert_der)
            .map_err(|e| invalid!("CA certificate: {e}"))?;
        if x509.public_key().subject_public_key.data.as_ref() != key.public_key_raw() {
            return Err(invalid!("CA key does not match CA certificate"));
        }
        if !x509.is_ca() {
            return Err(invalid!("certificate is not a CA"));
        }

        // Needs rcgen feature "x509-parser". Takes subject DN, key usages and the
        // SubjectKeyIdentifier from the cert, so AKI in issued certs matches the CA's SKI.
        let issuer = Issuer::from_ca_cert_der(&cert_der, key)?;
        Ok(Self { issuer, cert_der })
    }

    /// Issues a device certificate for `id`, good for client and server auth. The identity is
    /// carried in:
    /// - the SAN URI `gatemesh://EVENT/ROLE/NAME`: authoritative, checked by the verifiers;
    /// - the subject `CN=NAME, OU=ROLE, O=EVENT`: informational.
    pub fn enroll(&self, id: &PeerId, valid_days: i64) -> Result<DevicePem> {
        id.validate()?;
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;

        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, id.name.as_str());
        dn.push(DnType::OrganizationalUnitName, id.role.as_str());
        dn.push(DnType::OrganizationName, id.event.as_str());
        params.distinguished_name = dn;
        params.subject_alt_names = vec![SanType::URI(id.uri().try_into()?)];
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        // Every gate is both QUIC client and QUIC server.
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.use_authority_key_identifier_extension = true;
        // serial_number: None -> rcgen derives it from SHA-256(SPKI); unique per fresh key.
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::hours(1);
        params.not_after = now + Duration::days(valid_days);

        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(DevicePem {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// Device credentials in the form rustls wants.
pub struct Credentials {
    /// The device certificate first, then any others its PEM holds.
    pub chain: Vec<CertificateDer<'static>>,
    /// The device's private key.
    pub key: PrivateKeyDer<'static>,
}

impl Credentials {
    /// Reads a certificate chain and a private key; a PEM without a certificate is refused.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self> {
        let chain =
            CertificateDer::pem_slice_iter(cert_pem.as_bytes()).collect::<Result<Vec<_>, _>>()?;
        if chain.is_empty() {
            return Err(invalid!("no certificate in PEM"));
        }
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())?;
        Ok(Self { chain, key })
    }

    /// The credentials of a device just enrolled.
    pub fn from_device(d: &DevicePem) -> Result<Self> {
        Self::from_pem(&d.cert_pem, &d.key_pem)
    }
}

/// Trust anchors: the mesh CA certificate (PEM) only.
pub fn ca_cert_from_pem(cert_pem: &str) -> Result<CertificateDer<'static>> {
    Ok(CertificateDer::from_pem_slice(cert_pem.as_bytes())?)
}

/// The mesh CA certificate, in a CA directory and in every device identity directory.
pub const CA_CERT: &str = "ca.pem";
/// The CA's private key (owner-only), in a CA directory.
pub const CA_KEY: &str = "ca.key";
/// The event id the CA is for, in a CA directory.
pub const CA_EVENT: &str = "event";
/// The device certificate, in a device identity directory.
pub const DEVICE_CERT: &str = "device.pem";
/// The device's private key (owner-only), in a device identity directory.
pub const DEVICE_KEY: &str = "device.key";

use crate::fs::{PRIVATE, PUBLIC, create_new};

/// Creates the event's mesh CA in `dir` (`ca.pem`, `ca.key` readable by its owner only,
/// `event`). Never overwrites an existing CA.
pub fn write_new_ca(dir: &std::path::Path, event: &str, valid_days: i64) -> Result<()> {
    crate::identity::PeerId::new(event, crate::identity::Role::Gate, "ca").validate()?;
    std::fs::create_dir_all(dir)?;
    let ca = create_ca(event, valid_days)?;
    create_new(&dir.join(CA_KEY), PRIVATE, &ca.key_pem)?;
    create_new(&dir.join(CA_CERT), PUBLIC, &ca.cert_pem)?;
    create_new(&dir.join(CA_EVENT), PUBLIC, event)?;
    Ok(())
}

/// Enrolls a device under the CA in `ca_dir`: writes `device.pem`, `device.key` and a copy of
/// `ca.pem` into `out_dir`, which must not already hold an identity.
pub fn enroll_into(
    ca_dir: &std::path::Path,
    out_dir: &std::path::Path,
    role: crate::identity::Role,
    name: &str,
    valid_days: i64,
) -> Result<crate::identity::PeerId> {
    let event = std::fs::read_to_string(ca_dir.join(CA_EVENT))?;
    let cert_pem = std::fs::read_to_string(ca_dir.join(CA_CERT))?;
    let ca = MeshCa::from_pem(&cert_pem, &std::fs::read_to_string(ca_dir.join(CA_KEY))?)?;
    let id = crate::identity::PeerId::new(event.trim(), role, name);
    let device = ca.enroll(&id, valid_days)?;
    std::fs::create_dir_all(out_dir)?;
    create_new(&out_dir.join(DEVICE_KEY), PRIVATE, &device.key_pem)?;
    create_new(&out_dir.join(DEVICE_CERT), PUBLIC, &device.cert_pem)?;
    create_new(&out_dir.join(CA_CERT), PUBLIC, &cert_pem)?;
    Ok(id)
}

/// A device's identity as loaded from its directory: who it is, its credentials, and the CA
/// it trusts.
#[derive(Debug, Clone)]
pub struct Identity {
    /// Who this device is, read from its own certificate.
    pub peer: crate::identity::PeerId,
    /// Its certificate chain and key.
    pub creds: std::sync::Arc<Credentials>,
    /// The CA it trusts, for its own event only.
    pub trust: crate::tls::MeshTrust,
    /// The mesh CA certificate itself (records in the ledger are checked against it).
    pub ca: CertificateDer<'static>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("chain", &self.chain.len())
            .finish_non_exhaustive()
    }
}

impl Identity {
    /// Loads `device.pem`, `device.key` and `ca.pem` from `dir`. Who the device is comes
    /// from its certificate, and it trusts peers of that event only.
    pub fn load(dir: &std::path::Path) -> Result<Self> {
        let cert_pem = std::fs::read_to_string(dir.join(DEVICE_CERT))?;
        let creds =
            Credentials::from_pem(&cert_pem, &std::fs::read_to_string(dir.join(DEVICE_KEY))?)?;
        let peer = crate::identity::PeerId::from_cert(&creds.chain[0])?;
        let ca = ca_cert_from_pem(&std::fs::read_to_string(dir.join(CA_CERT))?)?;
        let trust = crate::tls::MeshTrust::new(ca.clone(), &peer.event)?;
        Ok(Self {
            peer,
            creds: std::sync::Arc::new(creds),
            trust,
            ca,
        })
    }
}
