//! Issuer public keys as a JSON Web Key Set (RFC 7517): what `gatemesh keygen` writes beside
//! the PEM (`issuer.jwks.json`) and the server serves at `/.well-known/jwks.json`, so JOSE
//! libraries (`jose`'s `createLocalJWKSet`, …) verify our tickets with the key id in hand.
//!
//! Only what an issuer key can be is read: `kty` `EC`, `crv` `P-256`, `x` and `y` (base64url
//! of 32 bytes each); `alg` must be `ES256` and `use` `sig` when given; a key without `kid`
//! gets the derived id. A key with private members (`d`) is refused: a gate is never handed
//! what signs tickets.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use p256::ecdsa::VerifyingKey;
use serde_json::{Map, Value, json};

use crate::keys::{KeyError, KeyId, PublicKey};

/// Why a JWK Set was refused (inside [`KeyError::Jwks`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JwksError {
    /// The text is not JSON at all.
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// JSON, but not an object with a `keys` array.
    #[error("a JWK Set is a JSON object with a \"keys\" array")]
    NotASet,
    /// The set holds no key.
    #[error("the JWK Set holds no key")]
    Empty,
    /// Key `index` is not a JSON object.
    #[error("key {index} is not a JSON object")]
    NotAnObject {
        /// Position in `keys`, from 0.
        index: usize,
    },
    /// Key `index` lacks a member an issuer key needs.
    #[error("key {index} has no {member:?} member")]
    Missing {
        /// Position in `keys`, from 0.
        index: usize,
        /// The missing member (`kty`, `crv`, `x`, `y`).
        member: &'static str,
    },
    /// A member of key `index` has a value an issuer key cannot have.
    #[error("key {index}: {member} is {found}, an issuer key has {expected}")]
    Unsupported {
        /// Position in `keys`, from 0.
        index: usize,
        /// The member (`kty`, `crv`, `alg`, `use`, `kid`).
        member: &'static str,
        /// What it holds (as JSON).
        found: String,
        /// What it must hold.
        expected: &'static str,
    },
    /// A coordinate of key `index` is not base64url of 32 bytes.
    #[error("key {index}: {member} is not base64url of 32 bytes")]
    BadCoordinate {
        /// Position in `keys`, from 0.
        index: usize,
        /// `x` or `y`.
        member: &'static str,
    },
    /// The coordinates of key `index` name no point of P-256.
    #[error("key {index}: (x, y) is not a point of P-256")]
    NotOnCurve {
        /// Position in `keys`, from 0.
        index: usize,
    },
    /// Key `index` carries private members.
    #[error("key {index} carries the private key (\"d\"): give gates only public keys")]
    Private {
        /// Position in `keys`, from 0.
        index: usize,
    },
}

impl PublicKey {
    /// The key as a JWK: `kty`, `crv`, `x`, `y`, `kid`, `alg` `ES256`, `use` `sig`.
    pub fn to_jwk(&self) -> Value {
        let point = self.verifying_key().to_encoded_point(false);
        let coord = |c: Option<&p256::FieldBytes>| c.map(|c| URL_SAFE_NO_PAD.encode(c));
        json!({
            "kty": "EC",
            "crv": "P-256",
            "x": coord(point.x()),
            "y": coord(point.y()),
            "kid": self.kid().as_str(),
            "alg": "ES256",
            "use": "sig",
        })
    }

    /// Reads the keys of a JWK Set (`{"keys": [...]}`), refusing the whole set when one key
    /// is not a P-256 public issuer key.
    pub fn from_jwks(text: &str) -> Result<Vec<Self>, KeyError> {
        let set: Value =
            serde_json::from_str(text).map_err(|e| KeyError::Jwks(JwksError::NotJson(e)))?;
        let keys = set
            .get("keys")
            .and_then(Value::as_array)
            .ok_or(KeyError::Jwks(JwksError::NotASet))?;
        if keys.is_empty() {
            return Err(KeyError::Jwks(JwksError::Empty));
        }
        keys.iter()
            .enumerate()
            .map(|(index, key)| {
                let key = key
                    .as_object()
                    .ok_or(JwksError::NotAnObject { index })
                    .map_err(KeyError::Jwks)?;
                from_jwk(index, key)
            })
            .collect()
    }

    /// Reads the public keys in an issuer file: a JWK Set (text starting with `{`) or an
    /// SPKI PEM (with or without a `kid:` line before the block).
    pub fn from_file_text(text: &str) -> Result<Vec<Self>, KeyError> {
        if text.trim_start().starts_with('{') {
            Self::from_jwks(text)
        } else {
            Self::from_pem(text).map(|k| vec![k])
        }
    }
}

/// A JWK Set of `keys`, as [`PublicKey::from_jwks`] reads it.
pub fn jwks<'a>(keys: impl IntoIterator<Item = &'a PublicKey>) -> Value {
    json!({ "keys": keys.into_iter().map(PublicKey::to_jwk).collect::<Vec<_>>() })
}

fn from_jwk(index: usize, key: &Map<String, Value>) -> Result<PublicKey, KeyError> {
    let e = KeyError::Jwks;
    let unsupported = |member: &'static str, found: &Value, expected: &'static str| {
        e(JwksError::Unsupported {
            index,
            member,
            found: found.to_string(),
            expected,
        })
    };
    let required = |member: &'static str| {
        key.get(member)
            .ok_or(e(JwksError::Missing { index, member }))
    };
    if key.contains_key("d") {
        return Err(e(JwksError::Private { index }));
    }
    let kty = required("kty")?;
    if kty != "EC" {
        return Err(unsupported("kty", kty, "\"EC\""));
    }
    let crv = required("crv")?;
    if crv != "P-256" {
        return Err(unsupported("crv", crv, "\"P-256\""));
    }
    if let Some(alg) = key.get("alg").filter(|a| *a != "ES256") {
        return Err(unsupported("alg", alg, "\"ES256\""));
    }
    if let Some(usage) = key.get("use").filter(|u| *u != "sig") {
        return Err(unsupported("use", usage, "\"sig\""));
    }
    let coordinate = |member: &'static str| -> Result<Vec<u8>, KeyError> {
        required(member)?
            .as_str()
            .and_then(|s| URL_SAFE_NO_PAD.decode(s).ok())
            .filter(|b| b.len() == 32)
            .ok_or(e(JwksError::BadCoordinate { index, member }))
    };
    let mut point = vec![0x04];
    point.extend(coordinate("x")?);
    point.extend(coordinate("y")?);
    let verifying =
        VerifyingKey::from_sec1_bytes(&point).map_err(|_| e(JwksError::NotOnCurve { index }))?;
    let kid = match key.get("kid") {
        None => KeyId::derived(&verifying),
        Some(kid) => kid
            .as_str()
            .and_then(|k| KeyId::new(k).ok())
            .ok_or_else(|| unsupported("kid", kid, "1-64 characters of A-Z a-z 0-9 . _ -"))?,
    };
    Ok(PublicKey::from_parts(kid, verifying))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IssuerKey;

    fn set_with(f: impl FnOnce(&mut Map<String, Value>)) -> String {
        let mut jwk = IssuerKey::generate(None).public().to_jwk();
        f(jwk.as_object_mut().unwrap());
        json!({ "keys": [jwk] }).to_string()
    }

    fn refused(text: &str) -> JwksError {
        match PublicKey::from_jwks(text) {
            Err(KeyError::Jwks(e)) => e,
            other => panic!("expected a JWKS error, got {other:?}"),
        }
    }

    #[test]
    fn round_trip_keeps_kid_and_key() {
        let a = IssuerKey::generate(Some(KeyId::new("door-2026").unwrap())).public();
        let b = IssuerKey::generate(None).public();
        let text = serde_json::to_string_pretty(&jwks([&a, &b])).unwrap();
        assert_eq!(PublicKey::from_jwks(&text).unwrap(), vec![a.clone(), b]);
        assert_eq!(PublicKey::from_file_text(&text).unwrap()[0], a);
    }

    #[test]
    fn without_kid_the_id_is_the_derived_one() {
        let key = IssuerKey::generate(None);
        let text = set_with(|k| {
            k.remove("kid");
            k.remove("alg");
            k.remove("use");
        });
        assert_eq!(
            PublicKey::from_jwks(&text).unwrap()[0].kid().as_str().len(),
            16
        );
        let own = json!({ "keys": [key.public().to_jwk()] }).to_string();
        assert_eq!(PublicKey::from_jwks(&own).unwrap()[0].kid(), key.kid());
    }

    #[test]
    fn bad_sets_get_typed_errors() {
        assert!(matches!(refused("{not json"), JwksError::NotJson(_)));
        assert!(matches!(refused("[]"), JwksError::NotASet));
        assert!(matches!(refused(r#"{"keys": {}}"#), JwksError::NotASet));
        assert!(matches!(refused(r#"{"keys": []}"#), JwksError::Empty));
        assert!(matches!(
            refused(r#"{"keys": [1]}"#),
            JwksError::NotAnObject { index: 0 }
        ));
        let e = refused(&set_with(|k| {
            k.insert("crv".into(), "P-384".into());
        }));
        assert!(
            matches!(e, JwksError::Unsupported { member: "crv", .. }),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "key 0: crv is \"P-384\", an issuer key has \"P-256\""
        );
        let e = refused(&set_with(|k| {
            k.remove("x");
        }));
        assert!(matches!(e, JwksError::Missing { member: "x", .. }), "{e}");
        assert!(matches!(
            refused(&set_with(|k| {
                k.insert("kty".into(), "RSA".into());
            })),
            JwksError::Unsupported { member: "kty", .. }
        ));
        assert!(matches!(
            refused(&set_with(|k| {
                k.insert("alg".into(), "none".into());
            })),
            JwksError::Unsupported { member: "alg", .. }
        ));
        assert!(matches!(
            refused(&set_with(|k| {
                k.insert("use".into(), "enc".into());
            })),
            JwksError::Unsupported { member: "use", .. }
        ));
        assert!(matches!(
            refused(&set_with(|k| {
                k.insert("kid".into(), "not ok!".into());
            })),
            JwksError::Unsupported { member: "kid", .. }
        ));
        assert!(matches!(
            refused(&set_with(|k| {
                k.insert("y".into(), "AAAA".into());
            })),
            JwksError::BadCoordinate { member: "y", .. }
        ));
        // 32 bytes, but (x, y) off the curve.
        assert!(matches!(
            refused(&set_with(|k| {
                k.insert("y".into(), URL_SAFE_NO_PAD.encode([7u8; 32]).into());
            })),
            JwksError::NotOnCurve { index: 0 }
        ));
        assert!(matches!(
            refused(&set_with(|k| {
                k.insert("d".into(), URL_SAFE_NO_PAD.encode([7u8; 32]).into());
            })),
            JwksError::Private { index: 0 }
        ));
        // One bad key refuses the whole set.
        let good = IssuerKey::generate(None).public().to_jwk();
        let text = json!({ "keys": [good, { "kty": "EC" }] }).to_string();
        assert!(matches!(
            refused(&text),
            JwksError::Missing {
                index: 1,
                member: "crv"
            }
        ));
    }
}
