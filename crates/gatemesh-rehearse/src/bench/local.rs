//! An event made up on this machine for a bench: a scratch directory holding its mesh CA
//! (`ca/`) and its gates' identities (`id-NAME/`), and an issuer key for its tickets.

use std::path::{Path, PathBuf};

use anyhow::Result;
use gatemesh_mesh::session::MeshConfig;
use gatemesh_node::Config;
use gatemesh_ticket::{Claims, EventId, Format, IssuerKey, Keyring, TicketId};
use rayon::prelude::*;

pub(crate) struct LocalEvent {
    pub(crate) dir: PathBuf,
    pub(crate) event: EventId,
    pub(crate) key: IssuerKey,
}

impl LocalEvent {
    /// The event `event` in `dir`, with a new mesh CA and issuer key.
    pub(crate) fn create(dir: PathBuf, event: &str) -> Result<Self> {
        let made = Self {
            dir,
            event: EventId::new(event)?,
            key: IssuerKey::generate(None),
        };
        gatemesh_mesh::pki::write_new_ca(&made.dir.join("ca"), made.event.as_str(), 1)?;
        Ok(made)
    }

    /// Gate `name` keeping its ledger in `data`, enrolled under the event's CA on first use:
    /// it signs its records from its first scan.
    pub(crate) fn config(&self, name: &str, data: &Path) -> Result<Config> {
        use gatemesh_mesh::{identity::Role, pki};
        let id = self.dir.join(format!("id-{name}"));
        if !id.exists() {
            pki::enroll_into(&self.dir.join("ca"), &id, Role::Gate, name, 1)?;
        }
        let mut config = Config::new(data.to_path_buf(), self.event.clone(), name.into());
        config.keyring = Keyring::from_keys([self.key.public()])?;
        config.identity = Some(pki::Identity::load(&id)?);
        Ok(config)
    }

    /// Gate `name`'s mesh on loopback, dialling `peers` (no discovery).
    pub(crate) fn mesh(&self, name: &str, peers: Vec<std::net::SocketAddr>) -> Result<MeshConfig> {
        Ok(MeshConfig {
            identity: gatemesh_mesh::pki::Identity::load(&self.dir.join(format!("id-{name}")))?,
            bind: "127.0.0.1:0".parse()?,
            static_peers: peers,
            discovery: None,
            exchange_peers: false,
        })
    }

    /// `n` new GM1 tickets of the event, signed in parallel.
    pub(crate) fn codes(&self, n: usize) -> Result<Vec<(TicketId, String)>> {
        Ok((0..n)
            .into_par_iter()
            .map(|_| {
                let tid = TicketId::generate();
                let claims = Claims {
                    tid: tid.clone(),
                    eid: self.event.clone(),
                    seat: None,
                    iat: None,
                    nbf: None,
                    exp: None,
                    product: None,
                };
                self.key.sign(&claims, Format::Gm1).map(|code| (tid, code))
            })
            .collect::<Result<_, _>>()?)
    }
}

/// Admits each of `codes` at `node`, 16 at a time (a set-up, not measured: its commits
/// share their fsyncs); each must be admitted.
pub(crate) async fn admit_all(
    node: &gatemesh_node::Node,
    codes: Vec<(TicketId, String)>,
) -> Result<()> {
    use futures_util::StreamExt;
    let scans = futures_util::stream::iter(codes.into_iter().map(|(_, code)| {
        let node = node.clone();
        async move {
            node.scan(&code, "bench", gatemesh_ledger::Direction::Entry)
                .await
        }
    }))
    .buffer_unordered(16)
    .collect::<Vec<_>>()
    .await;
    for r in scans {
        let r = r?;
        anyhow::ensure!(
            r.verdict == gatemesh_ledger::Verdict::Admit,
            "a new ticket was not admitted: {r:?}"
        );
    }
    Ok(())
}

/// A gate's own runtime, shut down without waiting when dropped (a runtime dropped inside
/// another's task would panic).
pub(crate) struct Runtime(pub(crate) Option<tokio::runtime::Runtime>);

impl Runtime {
    pub(crate) fn enter(&self) -> Option<tokio::runtime::EnterGuard<'_>> {
        self.0.as_ref().map(tokio::runtime::Runtime::enter)
    }

    /// Runs `task` on this runtime and waits for it.
    pub(crate) async fn spawn<T: Send + 'static>(
        &self,
        task: impl std::future::Future<Output = T> + Send + 'static,
    ) -> Result<T> {
        let rt = self
            .0
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("a gate's runtime is gone"))?;
        Ok(rt.spawn(task).await?)
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}
