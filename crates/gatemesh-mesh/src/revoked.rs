//! The device certificates this mesh refuses: the SHA-256 of each revoked certificate's
//! DER, as the ledger's revocations (signed by the event's CA) name them. The ledger's owner
//! updates the set; the mesh refuses a revoked peer right after the handshake, before any
//! sync, and closes a connection to a peer the moment it is revoked. A device that finds its
//! own certificate in the set stops syncing altogether.

use std::{collections::HashSet, sync::Arc};

use sha2::{Digest, Sha256};
use tokio::sync::watch;

/// A shared, watchable set of revoked certificates; cheap to clone.
#[derive(Debug, Clone)]
pub struct Revoked(watch::Sender<Arc<HashSet<[u8; 32]>>>);

impl Default for Revoked {
    fn default() -> Self {
        Self(watch::Sender::new(Arc::default()))
    }
}

impl Revoked {
    /// Makes the set exactly `certs` (SHA-256 of DER); wakes the mesh when it changed.
    pub fn set(&self, certs: &HashSet<[u8; 32]>) {
        self.0.send_if_modified(|held| {
            if held.as_ref() == certs {
                false
            } else {
                *held = Arc::new(certs.clone());
                true
            }
        });
    }

    /// Whether the certificate with this DER is revoked.
    pub fn contains(&self, cert_der: &[u8]) -> bool {
        self.0.borrow().contains(&fingerprint(cert_der))
    }

    /// Whether the certificate with this SHA-256 is revoked.
    pub(crate) fn contains_fingerprint(&self, fingerprint: &[u8; 32]) -> bool {
        self.0.borrow().contains(fingerprint)
    }

    /// Wakes on every change of the set.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Arc<HashSet<[u8; 32]>>> {
        self.0.subscribe()
    }
}

/// The SHA-256 of a certificate's DER.
pub fn fingerprint(cert_der: &[u8]) -> [u8; 32] {
    Sha256::digest(cert_der).into()
}
