use std::{fmt, str::FromStr};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use p256::{
    ecdsa::{Signature, SigningKey, VerifyingKey, signature::Signer},
    pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey, LineEnding},
};
use rand_core::OsRng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Claims, InvalidField, SignError, claims::is_plain_ident, verify::Format};

/// Names an issuer key, so gates can hold several at once (rotation).
///
/// When none is chosen, the id is derived from the public key: the first 16 characters of its
/// RFC 7638 JWK thumbprint, which any JOSE library can recompute.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct KeyId(String);

impl KeyId {
    /// `s` as a key id, when it is 1-64 characters of `A-Z a-z 0-9 . _ -`.
    pub fn new(s: impl Into<String>) -> Result<Self, InvalidField> {
        let s = s.into();
        if is_plain_ident(&s) {
            Ok(Self(s))
        } else {
            Err(InvalidField::KeyId(s))
        }
    }

    /// The default id of `key`: the first 16 characters of its RFC 7638 JWK thumbprint.
    pub(crate) fn derived(key: &VerifyingKey) -> Self {
        let point = key.to_encoded_point(false);
        // Both coordinates are present in an uncompressed point of a valid key.
        let (x, y) = match (point.x(), point.y()) {
            (Some(x), Some(y)) => (URL_SAFE_NO_PAD.encode(x), URL_SAFE_NO_PAD.encode(y)),
            _ => unreachable!("uncompressed P-256 points carry both coordinates"),
        };
        // RFC 7638: the required members in lexicographic order, no whitespace.
        let jwk = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
        let thumb = URL_SAFE_NO_PAD.encode(Sha256::digest(jwk.as_bytes()));
        Self(thumb[..16].to_owned())
    }

    /// The 3-byte tag that GM1 carries instead of the whole id.
    pub fn tag(&self) -> [u8; 3] {
        let h = Sha256::digest(self.0.as_bytes());
        [h[0], h[1], h[2]]
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for KeyId {
    type Error = InvalidField;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

impl From<KeyId> for String {
    fn from(k: KeyId) -> Self {
        k.0
    }
}

impl FromStr for KeyId {
    type Err = InvalidField;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Reading a key file failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The text has no `-----BEGIN` line at all.
    #[error("no PEM block found (expected -----BEGIN {expected}-----)")]
    NoPemBlock {
        /// The label the block should have had (`PUBLIC KEY`, `PRIVATE KEY`).
        expected: &'static str,
    },
    /// A private key block that is not a P-256 key, or a key that cannot be written as
    /// PKCS#8.
    #[error("not a P-256 {what} in PEM form")]
    Pem {
        /// The form that was expected (`PKCS#8 private key`, `SEC1 private key`).
        what: &'static str,
        /// Why the block was refused.
        #[source]
        source: p256::pkcs8::Error,
    },
    /// A public key block that is not a P-256 key in SPKI form.
    #[error("not a P-256 public key in SPKI PEM form")]
    Spki {
        /// Why the block was refused.
        #[source]
        source: p256::pkcs8::spki::Error,
    },
    /// The `kid:` line before the block names an id that breaks the [`KeyId`] rule.
    #[error("the key file names its key id {0:?}, which is not a valid key id")]
    BadKeyId(String),
    /// A keyring was given two different keys under one id.
    #[error("key id {0} appears twice with different keys")]
    DuplicateKeyId(KeyId),
    /// A JWK Set that holds no usable issuer key.
    #[error("not a JWK Set of P-256 issuer keys: {0}")]
    Jwks(#[from] crate::jwk::JwksError),
}

/// Splits the RFC 7468 "explanatory text" before the PEM block (where we keep `kid: …`) from
/// the block itself. Parsers must ignore such text, so the files stay readable by OpenSSL
/// and JOSE libraries.
fn split_pem<'a>(
    text: &'a str,
    expected: &'static str,
) -> Result<(Option<&'a str>, &'a str), KeyError> {
    let start = text
        .find("-----BEGIN")
        .ok_or(KeyError::NoPemBlock { expected })?;
    let kid = text[..start]
        .lines()
        .find_map(|line| line.trim().strip_prefix("kid:"))
        .map(str::trim);
    Ok((kid, text[start..].trim_end()))
}

fn kid_or_derived(named: Option<&str>, key: &VerifyingKey) -> Result<KeyId, KeyError> {
    match named {
        Some(k) => KeyId::new(k).map_err(|_| KeyError::BadKeyId(k.to_owned())),
        None => Ok(KeyId::derived(key)),
    }
}

/// An issuer's public key and its id: what a gate holds.
///
/// Signatures are checked with `ring`, which verifies P-256 about 3.7 times faster than the
/// pure-Rust `p256` on our gate hardware (93 µs against 343 µs, see BENCHMARKS.md); `p256`
/// keeps doing what it does well: key files and signing.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    kid: KeyId,
    key: VerifyingKey,
    /// The uncompressed SEC1 point, the form `ring` takes.
    point: [u8; 65],
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublicKey")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl PublicKey {
    /// Reads an SPKI PEM public key. A `kid: ID` line before the block names the key;
    /// without one the id is derived from the key.
    pub fn from_pem(text: &str) -> Result<Self, KeyError> {
        let (kid, block) = split_pem(text, "PUBLIC KEY")?;
        let key =
            VerifyingKey::from_public_key_pem(block).map_err(|source| KeyError::Spki { source })?;
        Ok(Self::new(kid_or_derived(kid, &key)?, key))
    }

    pub(crate) fn from_parts(kid: KeyId, key: VerifyingKey) -> Self {
        Self::new(kid, key)
    }

    pub(crate) fn verifying_key(&self) -> &VerifyingKey {
        &self.key
    }

    fn new(kid: KeyId, key: VerifyingKey) -> Self {
        let mut point = [0u8; 65];
        point.copy_from_slice(key.to_encoded_point(false).as_bytes());
        Self { kid, key, point }
    }

    /// The SPKI PEM text, with a `kid:` line before the block, as [`PublicKey::from_pem`]
    /// reads it (how pairing hands keys to gates: the id travels with the key).
    pub fn to_pem(&self) -> String {
        format!("kid: {}\n{}", self.kid, self.to_spki_pem())
    }

    /// The plain SPKI PEM block, nothing before it: what `jose`'s `importSPKI` and every
    /// PEM reader take. It does not carry the id; read back it gets the derived one, so a
    /// key with a chosen id travels as a JWK Set ([`PublicKey::to_jwk`]) instead.
    pub fn to_spki_pem(&self) -> String {
        // SPKI encoding of a valid P-256 key cannot fail.
        self.key
            .to_public_key_pem(LineEnding::LF)
            .unwrap_or_default()
    }

    /// Whether [`PublicKey::to_spki_pem`] read back names this key by the same id (its id
    /// is the derived one).
    pub fn kid_is_derived(&self) -> bool {
        self.kid == KeyId::derived(&self.key)
    }

    /// The key's id.
    pub fn kid(&self) -> &KeyId {
        &self.kid
    }

    /// Whether `sig` (`r ‖ s`) is this key's ECDSA P-256 / SHA-256 signature of `msg`.
    pub(crate) fn verifies(&self, msg: &[u8], sig: &[u8; 64]) -> bool {
        use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &self.point[..])
            .verify(msg, sig)
            .is_ok()
    }
}

/// An issuer's private key. It signs tickets and never leaves this crate except as the PEM
/// text that `gatemesh keygen` writes to a file only its owner can read.
pub struct IssuerKey {
    kid: KeyId,
    key: SigningKey,
}

impl fmt::Debug for IssuerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuerKey")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl IssuerKey {
    /// A fresh key from the operating system's generator, named `kid` or, without one, by
    /// its derived id.
    pub fn generate(kid: Option<KeyId>) -> Self {
        let key = SigningKey::random(&mut OsRng);
        let kid = kid.unwrap_or_else(|| KeyId::derived(key.verifying_key()));
        Self { kid, key }
    }

    /// Reads a PKCS#8 PEM private key (`BEGIN PRIVATE KEY`), or the SEC1 form
    /// (`BEGIN EC PRIVATE KEY`) that `openssl ecparam -genkey` writes.
    pub fn from_pem(text: &str) -> Result<Self, KeyError> {
        let (kid, block) = split_pem(text, "PRIVATE KEY")?;
        let key = if block.starts_with("-----BEGIN EC PRIVATE KEY-----") {
            p256::SecretKey::from_sec1_pem(block)
                .map(SigningKey::from)
                .map_err(|_| KeyError::Pem {
                    what: "SEC1 private key",
                    source: p256::pkcs8::Error::KeyMalformed,
                })?
        } else {
            SigningKey::from_pkcs8_pem(block).map_err(|source| KeyError::Pem {
                what: "PKCS#8 private key",
                source,
            })?
        };
        Ok(Self {
            kid: kid_or_derived(kid, key.verifying_key())?,
            key,
        })
    }

    /// The PKCS#8 PEM text, with a `kid:` line before the block.
    pub fn to_pem(&self) -> Result<String, KeyError> {
        let pem = self
            .key
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(|source| KeyError::Pem {
                what: "PKCS#8 private key",
                source,
            })?;
        Ok(format!("kid: {}\n{}", self.kid, pem.as_str()))
    }

    /// The key's id, which every ticket it signs names (JWT) or tags (GM1).
    pub fn kid(&self) -> &KeyId {
        &self.kid
    }

    /// The public half, under the same id: what gates are given.
    pub fn public(&self) -> PublicKey {
        PublicKey::new(self.kid.clone(), *self.key.verifying_key())
    }

    /// Signs `claims` into a code of the given format.
    pub fn sign(&self, claims: &Claims, format: Format) -> Result<String, SignError> {
        match format {
            Format::Jwt => Ok(crate::jwt::encode(self, claims)),
            Format::Gm1 => crate::gm1::encode(self, claims),
        }
    }

    pub(crate) fn sign_raw(&self, msg: &[u8]) -> [u8; 64] {
        let sig: Signature = self.key.sign(msg);
        sig.to_bytes().into()
    }
}

/// The issuer keys a gate accepts. Several may be valid at once while keys rotate.
#[derive(Debug, Clone, Default)]
pub struct Keyring {
    keys: Vec<PublicKey>,
}

impl Keyring {
    /// A keyring of `keys`, refused as [`Keyring::add`] refuses.
    pub fn from_keys(keys: impl IntoIterator<Item = PublicKey>) -> Result<Self, KeyError> {
        let mut ring = Self::default();
        for key in keys {
            ring.add(key)?;
        }
        Ok(ring)
    }

    /// Adds a key; the same key twice is fine, two keys under one id are not.
    pub fn add(&mut self, key: PublicKey) -> Result<(), KeyError> {
        match self.by_kid(&key.kid) {
            Some(existing) if existing.key == key.key => Ok(()),
            Some(_) => Err(KeyError::DuplicateKeyId(key.kid)),
            None => {
                self.keys.push(key);
                Ok(())
            }
        }
    }

    /// The key named `kid`, if the ring holds it.
    pub fn by_kid(&self, kid: &KeyId) -> Option<&PublicKey> {
        self.keys.iter().find(|k| &k.kid == kid)
    }

    pub(crate) fn by_str_kid(&self, kid: &str) -> Option<&PublicKey> {
        self.keys.iter().find(|k| k.kid.as_str() == kid)
    }

    pub(crate) fn by_tag(&self, tag: [u8; 3]) -> impl Iterator<Item = &PublicKey> {
        self.keys.iter().filter(move |k| k.kid.tag() == tag)
    }

    /// Every key, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = &PublicKey> {
        self.keys.iter()
    }

    /// Whether the ring holds no key (a verifier with it refuses every code as
    /// `unknown_key` or `bad_signature`).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_round_trip_keeps_kid() {
        let key = IssuerKey::generate(Some(KeyId::new("door-2026").unwrap()));
        let back = IssuerKey::from_pem(&key.to_pem().unwrap()).unwrap();
        assert_eq!(back.kid().as_str(), "door-2026");
        assert_eq!(back.public(), key.public());
        let public = PublicKey::from_pem(&key.public().to_pem()).unwrap();
        assert_eq!(public, key.public());
    }

    #[test]
    fn derived_kid_without_kid_line() {
        let key = IssuerKey::generate(None);
        let pem = key.public().to_pem();
        let block = &pem[pem.find("-----BEGIN").unwrap()..];
        let public = PublicKey::from_pem(block).unwrap();
        assert_eq!(public.kid(), key.kid());
        assert_eq!(public.kid().as_str().len(), 16);
    }

    #[test]
    fn rfc7638_thumbprint_matches_the_rfc_example_shape() {
        // The thumbprint is base64url of a SHA-256: 43 characters, we keep 16.
        let key = IssuerKey::generate(None);
        assert!(
            key.kid()
                .as_str()
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
    }

    #[test]
    fn keyring_refuses_two_keys_under_one_kid() {
        let kid = KeyId::new("k1").unwrap();
        let a = IssuerKey::generate(Some(kid.clone()));
        let b = IssuerKey::generate(Some(kid));
        let mut ring = Keyring::from_keys([a.public(), a.public()]).unwrap();
        assert!(matches!(
            ring.add(b.public()),
            Err(KeyError::DuplicateKeyId(_))
        ));
    }

    #[test]
    fn garbage_pem_is_an_error() {
        assert!(matches!(
            PublicKey::from_pem("hello"),
            Err(KeyError::NoPemBlock { .. })
        ));
        assert!(
            PublicKey::from_pem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
                .is_err()
        );
        assert!(
            IssuerKey::from_pem("-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----").is_err()
        );
        assert!(matches!(
            PublicKey::from_pem(&format!(
                "kid: not ok!\n{}",
                IssuerKey::generate(None).public().to_pem()
            )),
            Err(KeyError::BadKeyId(_))
        ));
    }
}
