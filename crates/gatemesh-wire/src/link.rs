//! The pairing link: one string that tells a device where the server is, which code to
//! spend, and which TLS certificate the server must present.
//!
//! ```text
//! gatemesh://pair?server=https://10.0.0.5:8443&code=7K2QM-X9D4R&fp=sha256:<64 hex digits>
//! ```
//!
//! The server URL is written as is (it may hold `:` and `/`, which a query allows, and never
//! `&`, `?`, `#`, `%`, `=` or a space); the code as the server shows it; `fp` is the SHA-256 of
//! the DER of the server's end-entity certificate, lowercase hex. A link is 115 characters
//! plus the server URL (with an 11-character code): byte mode at level M fits it in a QR
//! symbol of version 9 (53×53 modules) for a URL of up to 65 characters, and a scanner wedge
//! types it like any other code. `fp` is absent only for a plain-HTTP server
//! on loopback (a test or a demo); a gate refuses such a link for any other address.

use std::fmt;

use sha2::{Digest, Sha256};

/// How every link starts.
pub const LINK_PREFIX: &str = "gatemesh://pair?";
/// The longest link read; anything longer is refused before it is parsed.
pub const MAX_LINK_LEN: usize = 512;
const MAX_SERVER_LEN: usize = 256;
const MAX_CODE_LEN: usize = 32;

/// The SHA-256 of a certificate's DER: what a device pins for its server.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CertFingerprint(pub [u8; 32]);

impl CertFingerprint {
    /// The fingerprint of `der`, an end-entity certificate.
    pub fn of(der: &[u8]) -> Self {
        Self(Sha256::digest(der).into())
    }

    /// Reads `sha256:` and 64 hex digits (either case; the prefix may be left out).
    pub fn parse(text: &str) -> Option<Self> {
        let hex = text.trim();
        let hex = hex.strip_prefix("sha256:").unwrap_or(hex);
        if hex.len() != 64 || !hex.is_ascii() {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Self(out))
    }
}

impl std::str::FromStr for CertFingerprint {
    type Err = LinkError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or(LinkError("a fingerprint is sha256: and 64 hex digits"))
    }
}

impl fmt::Display for CertFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sha256:")?;
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for CertFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl serde::Serialize for CertFingerprint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for CertFingerprint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).ok_or_else(|| {
            serde::de::Error::custom("a certificate fingerprint is sha256: and 64 hex digits")
        })
    }
}

/// A parsed pairing link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairingLink {
    /// The server's base URL, `https://HOST:PORT` (or `http://` on loopback).
    pub server: String,
    /// The pairing code, as the server showed it.
    pub code: String,
    /// The server's certificate; `None` only for a plain-HTTP server.
    pub fingerprint: Option<CertFingerprint>,
}

/// Why a string is not a pairing link.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a pairing link ({0}); it looks like {LINK_PREFIX}server=https://…&code=…&fp=sha256:…")]
pub struct LinkError(&'static str);

/// The server URL a link may carry: `http(s)://` and a host, with none of the characters
/// that would end the value early or need escaping.
pub fn valid_server_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    url.len() <= MAX_SERVER_LEN
        && rest.is_some_and(|r| {
            !r.is_empty()
                && !r.starts_with('/')
                && r.bytes()
                    .all(|b| b.is_ascii_graphic() && !matches!(b, b'&' | b'?' | b'#' | b'%' | b'='))
        })
}

fn valid_code(code: &str) -> bool {
    !code.is_empty()
        && code.len() <= MAX_CODE_LEN
        && code.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

impl PairingLink {
    /// A link, when each part is one a link can carry.
    pub fn new(
        server: &str,
        code: &str,
        fingerprint: Option<CertFingerprint>,
    ) -> Result<Self, LinkError> {
        let server = server.trim_end_matches('/');
        if !valid_server_url(server) {
            return Err(LinkError("the server is not an http(s)://HOST:PORT URL"));
        }
        if !valid_code(code) {
            return Err(LinkError("the code is not a pairing code"));
        }
        if fingerprint.is_none() && !server.starts_with("http://") {
            return Err(LinkError(
                "an https:// server needs its certificate's fingerprint",
            ));
        }
        Ok(Self {
            server: server.to_owned(),
            code: code.to_owned(),
            fingerprint,
        })
    }

    /// Reads a link as pasted, typed or scanned (surrounding white space is ignored).
    pub fn parse(text: &str) -> Result<Self, LinkError> {
        let text = text.trim();
        if text.len() > MAX_LINK_LEN {
            return Err(LinkError("too long"));
        }
        let query = text
            .strip_prefix(LINK_PREFIX)
            .ok_or(LinkError("it does not start with gatemesh://pair?"))?;
        let (mut server, mut code, mut fp) = (None, None, None);
        for pair in query.split('&') {
            let (key, value) = pair.split_once('=').ok_or(LinkError("a part has no ="))?;
            let slot = match key {
                "server" => &mut server,
                "code" => &mut code,
                "fp" => &mut fp,
                _ => return Err(LinkError("it has a part other than server, code and fp")),
            };
            if slot.replace(value).is_some() {
                return Err(LinkError("a part appears twice"));
            }
        }
        let fingerprint = match fp {
            Some(fp) if fp.starts_with("sha256:") => Some(
                CertFingerprint::parse(fp)
                    .ok_or(LinkError("fp is not sha256: and 64 hex digits"))?,
            ),
            Some(_) => return Err(LinkError("fp is not sha256: and 64 hex digits")),
            None => None,
        };
        Self::new(
            server.ok_or(LinkError("it names no server"))?,
            code.ok_or(LinkError("it has no code"))?,
            fingerprint,
        )
    }
}

impl fmt::Display for PairingLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{LINK_PREFIX}server={}&code={}", self.server, self.code)?;
        match &self.fingerprint {
            Some(fp) => write!(f, "&fp={fp}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_reads_back_as_written() {
        let fp = CertFingerprint::of(b"certificate");
        let link = PairingLink::new("https://10.0.0.5:8443/", "7K2QM-X9D4R", Some(fp)).unwrap();
        let text = link.to_string();
        assert_eq!(
            text,
            format!("gatemesh://pair?server=https://10.0.0.5:8443&code=7K2QM-X9D4R&fp={fp}")
        );
        assert_eq!(PairingLink::parse(&format!("  {text}\n")).unwrap(), link);
        assert!(text.len() < 160, "{}", text.len());
        assert_eq!(CertFingerprint::parse(&fp.to_string()), Some(fp));
        let plain = PairingLink::parse("gatemesh://pair?code=AB-12&server=http://127.0.0.1:80");
        assert_eq!(plain.unwrap().fingerprint, None);
    }

    #[test]
    fn anything_else_is_refused() {
        let fp = CertFingerprint::of(b"c");
        for bad in [
            String::new(),
            "https://10.0.0.5:8443".into(),
            "gatemesh://pair?server=https://h:1&code=AB".into(),
            format!("gatemesh://pair?server=https://h:1&code=AB&fp={fp}&x=1"),
            format!("gatemesh://pair?server=https://h:1&code=AB&code=CD&fp={fp}"),
            format!("gatemesh://pair?server=https://h:1&code=A B&fp={fp}"),
            format!("gatemesh://pair?server=ftp://h:1&code=AB&fp={fp}"),
            format!("gatemesh://pair?server=https://&code=AB&fp={fp}"),
            "gatemesh://pair?server=https://h:1&code=AB&fp=sha256:00".into(),
            format!(
                "gatemesh://pair?server=https://h:1&code=AB&fp={}",
                &fp.to_string()[7..]
            ),
            format!(
                "gatemesh://pair?server=https://h:1&code=AB&fp={fp}{}",
                "0".repeat(600)
            ),
            "gatemesh://pair?server=https://h:1%26code=X&code=AB".into(),
        ] {
            assert!(PairingLink::parse(&bad).is_err(), "{bad}");
        }
        assert!(CertFingerprint::parse("sha256:ünïcode").is_none());
    }
}
