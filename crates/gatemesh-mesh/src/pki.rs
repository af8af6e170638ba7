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

    /// Issues a device certificate for `id`, good for client and server auth, with a key made
    /// here (for `gatemesh enroll`, where CA and device are one operator's). The identity is
    /// carried in:
    /// - the SAN URI `gatemesh://EVENT/ROLE/NAME`: authoritative, checked by the verifiers;
    /// - the subject `CN=NAME, OU=ROLE, O=EVENT`: informational.
    pub fn enroll(&self, id: &PeerId, valid_days: i64) -> Result<DevicePem> {
        id.validate()?;
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
        let not_after = OffsetDateTime::now_utc() + Duration::days(valid_days);
        let cert = device_params(id, not_after)?.signed_by(&key, &self.issuer)?;
        Ok(DevicePem {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// Issues a device certificate for `id`, valid until `not_after`, for the public key of a
    /// signing request the device made ([`DeviceRequest`]): the device's private key never
    /// reaches the CA. The request's signature must verify and its key be P-256; everything
    /// else in it (subject, SANs, extensions) is ignored — who the device is comes from `id`,
    /// which the caller vouches for, and the certificate gets exactly what [`MeshCa::enroll`]
    /// gives. Returns the certificate, PEM.
    pub fn enroll_csr(
        &self,
        id: &PeerId,
        csr_pem: &str,
        not_after: OffsetDateTime,
    ) -> Result<String> {
        id.validate()?;
        let csr = parse_request(csr_pem)?;
        let cert = device_params(id, not_after)?.signed_by(&csr.public_key, &self.issuer)?;
        Ok(cert.pem())
    }
}

/// Reads a device's signing request: PEM of one `CERTIFICATE REQUEST`, at most 4 KiB, signed
/// by a P-256 key. Call it before spending anything on the request's behalf.
pub fn check_request(csr_pem: &str) -> Result<()> {
    parse_request(csr_pem).map(|_| ())
}

fn parse_request(csr_pem: &str) -> Result<rcgen::CertificateSigningRequestParams> {
    if csr_pem.len() > 4096 {
        return Err(invalid!("a signing request of {} bytes", csr_pem.len()));
    }
    // Checks the request's signature (proof the device holds the key).
    let csr = rcgen::CertificateSigningRequestParams::from_pem(csr_pem)
        .map_err(|e| invalid!("not a signing request: {e}"))?;
    if csr.public_key.algorithm() != &PKCS_ECDSA_P256_SHA256 {
        return Err(invalid!("the signing request's key is not ECDSA P-256"));
    }
    Ok(csr)
}

/// A device certificate's parameters: the same rules for a key made here or on the device.
fn device_params(id: &PeerId, not_after: OffsetDateTime) -> Result<CertificateParams> {
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
    params.not_before = OffsetDateTime::now_utc() - Duration::hours(1);
    if not_after <= params.not_before {
        return Err(invalid!(
            "a device certificate that would end before it starts"
        ));
    }
    params.not_after = not_after;
    Ok(params)
}

/// A key made on a device and its signing request, for enrollment by a CA elsewhere (the
/// server, when a device pairs): only `csr_pem` leaves the device.
pub struct DeviceRequest {
    key: KeyPair,
    /// The PKCS#10 request, PEM: the public key, signed by the private one.
    pub csr_pem: String,
}

impl std::fmt::Debug for DeviceRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceRequest").finish_non_exhaustive()
    }
}

impl DeviceRequest {
    /// A fresh P-256 key and its request. The request names no one (its subject is a
    /// placeholder): the CA decides who the certificate is for.
    pub fn new() -> Result<Self> {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "gatemesh device");
        params.distinguished_name = dn;
        let csr_pem = params.serialize_request(&key)?.pem()?;
        Ok(Self { key, csr_pem })
    }

    /// The private key, PKCS#8 PEM, for the device's own disk (owner-only).
    pub fn key_pem(&self) -> String {
        self.key.serialize_pem()
    }

    /// Checks that `cert_pem` certifies this request's key.
    pub fn certified_by(&self, cert_pem: &str) -> Result<()> {
        let der = CertificateDer::from_pem_slice(cert_pem.as_bytes())?;
        let (_, x509) =
            x509_parser::parse_x509_certificate(&der).map_err(|e| invalid!("certificate: {e}"))?;
        if x509.public_key().subject_public_key.data.as_ref() != self.key.public_key_raw() {
            return Err(invalid!("the certificate is not for this device's key"));
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::Role;

    fn ca() -> MeshCa {
        let pem = create_ca("ev1", 10).unwrap();
        MeshCa::from_pem(&pem.cert_pem, &pem.key_pem).unwrap()
    }

    #[test]
    fn a_request_is_certified_as_the_ca_says_never_as_it_says() {
        let ca = ca();
        // A request that claims to be another event's server: its claims are ignored.
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let mut claims = CertificateParams::new(vec![]).unwrap();
        claims.subject_alt_names = vec![SanType::URI(
            "gatemesh://other/gate/boss".try_into().unwrap(),
        )];
        let csr = claims.serialize_request(&key).unwrap().pem().unwrap();
        let id = PeerId::new("ev1", Role::Gate, "North-1");
        let until = OffsetDateTime::now_utc() + Duration::days(2);
        let cert = ca.enroll_csr(&id, &csr, until).unwrap();
        let der = CertificateDer::from_pem_slice(cert.as_bytes()).unwrap();
        assert_eq!(PeerId::from_cert(&der).unwrap(), id);
        let (_, x509) = x509_parser::parse_x509_certificate(&der).unwrap();
        assert_eq!(
            x509.subject_alternative_name()
                .unwrap()
                .unwrap()
                .value
                .general_names
                .len(),
            1
        );
        assert_eq!(
            x509.validity().not_after.timestamp(),
            until.unix_timestamp()
        );
        assert!(!x509.is_ca());

        let request = DeviceRequest::new().unwrap();
        let cert = ca.enroll_csr(&id, &request.csr_pem, until).unwrap();
        request.certified_by(&cert).unwrap();
        assert!(DeviceRequest::new().unwrap().certified_by(&cert).is_err());
        assert!(!request.csr_pem.contains("PRIVATE KEY"));
    }

    #[test]
    fn a_request_that_is_not_a_devices_own_is_refused() {
        let ca = ca();
        let id = PeerId::new("ev1", Role::Gate, "North-1");
        let until = OffsetDateTime::now_utc() + Duration::days(2);
        let good = DeviceRequest::new().unwrap().csr_pem;
        // A signature that does not verify: a character of the signed body changed.
        let mut tampered = good.clone().into_bytes();
        let at = good.find('\n').unwrap() + 60;
        tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        let ed = KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        let ed = CertificateParams::new(vec![])
            .unwrap()
            .serialize_request(&ed)
            .unwrap()
            .pem()
            .unwrap();
        for bad in [
            String::new(),
            "garbage".into(),
            tampered,
            ed,
            "A".repeat(5000),
        ] {
            assert!(ca.enroll_csr(&id, &bad, until).is_err());
            assert!(check_request(&bad).is_err());
        }
        // The identity rules hold as for `enroll`, and the end comes after the start.
        assert!(
            ca.enroll_csr(&PeerId::new("ev1", Role::Gate, "a b"), &good, until)
                .is_err()
        );
        let past = OffsetDateTime::now_utc() - Duration::days(1);
        assert!(ca.enroll_csr(&id, &good, past).is_err());
    }
}
