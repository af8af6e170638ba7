//! Finding the event's other devices on the LAN by mDNS (`_gatemesh._udp.local.`).
//!
//! Each device advertises its mesh endpoint with TXT keys `event`, `node` (device name),
//! `fp` (a fingerprint of its certificate) and `v` (protocol version), and browses for the
//! others. Only a hint: whoever is found is dialed, and the mutual-TLS handshake decides.
//! A peer whose link is cut is not waited for here (its record lingers for minutes); the
//! QUIC connection's loss is what counts.

use std::{collections::HashSet, net::SocketAddr};

use mdns_sd::{IfKind, ServiceDaemon, ServiceEvent, ServiceInfo};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use crate::{Result, invalid};

/// The mDNS service every device announces and browses for.
pub const SERVICE_TYPE: &str = "_gatemesh._udp.local.";
/// The `v` TXT value; devices that announce another are not dialed.
pub const PROTOCOL_VERSION: &str = "3";

/// Interface names never used for discovery unless named explicitly: container bridges,
/// VPN tunnels and virtual-machine networks, where no gate lives.
const VIRTUAL_PREFIXES: [&str; 11] = [
    "docker",
    "br-",
    "virbr",
    "veth",
    "tun",
    "tap",
    "wg",
    "zt",
    "tailscale",
    "vboxnet",
    "vmnet",
];

/// Which interfaces to announce on and listen on.
#[derive(Debug, Clone, Default)]
pub enum Interfaces {
    /// Every physical interface (the virtual kinds above are skipped).
    #[default]
    Physical,
    /// Only these, by name.
    Named(Vec<String>),
}

/// What to announce, and where.
#[derive(Debug, Clone)]
pub(crate) struct DiscoveryConfig {
    /// Only devices of this event are reported.
    pub event: String,
    /// This device's name; its own announcement is not reported.
    pub name: String,
    /// The mesh endpoint's UDP port.
    pub port: u16,
    /// DER of this device's certificate, for the `fp` TXT key.
    pub cert_der: Vec<u8>,
    /// Where to announce and listen.
    pub interfaces: Interfaces,
}

/// A running announcer and browser; stops when dropped. Private to the crate, so the only
/// way to start mDNS is [`crate::session::Mesh::start`] with discovery asked for.
pub(crate) struct Discovery {
    daemon: ServiceDaemon,
}

impl std::fmt::Debug for Discovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Discovery").finish_non_exhaustive()
    }
}

impl Drop for Discovery {
    fn drop(&mut self) {
        let _ = self.daemon.shutdown();
    }
}

fn fingerprint(der: &[u8]) -> String {
    Sha256::digest(der)
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// How long a host's IPv4 address is asked for by name ([`ask_addresses`]).
const ASK_ADDRESSES_FOR_MS: u64 = 60_000;

/// Asks mDNS for `host`'s addresses (queries go out, spaced, for
/// [`ASK_ADDRESSES_FOR_MS`]) and sends each IPv4 one found, with `port`, on `found`.
fn ask_addresses(
    daemon: &ServiceDaemon,
    host: String,
    port: u16,
    found: mpsc::UnboundedSender<SocketAddr>,
) {
    let events = match daemon.resolve_hostname(&host, Some(ASK_ADDRESSES_FOR_MS)) {
        Ok(events) => events,
        Err(e) => return tracing::info!("mDNS: could not ask for {host}'s address: {e}"),
    };
    let spawned = std::thread::Builder::new()
        .name("mdns-host".into())
        .spawn(move || {
            while let Ok(event) = events.recv() {
                let mdns_sd::HostnameResolutionEvent::AddressesFound(_, ips) = event else {
                    continue;
                };
                for ip in ips {
                    let ip = ip.to_ip_addr();
                    if ip.is_ipv4()
                        && !ip.is_loopback()
                        && found.send(SocketAddr::new(ip, port)).is_err()
                    {
                        return;
                    }
                }
            }
        });
    if let Err(e) = spawned {
        tracing::info!("mDNS: could not ask for {host}'s address: {e}");
    }
}

impl Discovery {
    /// Starts announcing and browsing; every peer address found is sent on `found`
    /// (possibly more than once).
    pub fn start(
        config: DiscoveryConfig,
        found: mpsc::UnboundedSender<SocketAddr>,
    ) -> Result<Self> {
        let daemon = ServiceDaemon::new().map_err(|e| invalid!("mDNS: {e}"))?;
        match &config.interfaces {
            Interfaces::Physical => {
                let is_virtual = |name: &str| VIRTUAL_PREFIXES.iter().any(|p| name.starts_with(p));
                let virtual_ifaces =
                    IfKind::Predicate(mdns_sd::IfPredicate::new(move |i| is_virtual(&i.name)));
                daemon
                    .disable_interface(virtual_ifaces)
                    .map_err(|e| invalid!("mDNS: {e}"))?;
            }
            Interfaces::Named(names) => {
                daemon
                    .disable_interface(IfKind::All)
                    .map_err(|e| invalid!("mDNS: {e}"))?;
                for name in names {
                    daemon
                        .enable_interface(IfKind::Name(name.clone()))
                        .map_err(|e| invalid!("mDNS: {e}"))?;
                }
            }
        }
        let fp = fingerprint(&config.cert_der);
        let properties = [
            ("event", config.event.as_str()),
            ("node", config.name.as_str()),
            ("fp", fp.as_str()),
            ("v", PROTOCOL_VERSION),
        ];
        let host = format!("{}.local.", config.name);
        let info = ServiceInfo::new(
            SERVICE_TYPE,
            &config.name,
            &host,
            "",
            config.port,
            &properties[..],
        )
        .map_err(|e| invalid!("mDNS: {e}"))?
        .enable_addr_auto();
        daemon.register(info).map_err(|e| invalid!("mDNS: {e}"))?;
        let events = daemon
            .browse(SERVICE_TYPE)
            .map_err(|e| invalid!("mDNS: {e}"))?;
        let (event, me) = (config.event.clone(), config.name.clone());
        let resolver = daemon.clone();
        std::thread::Builder::new()
            .name("mdns-browse".into())
            .spawn(move || {
                let mut announced = HashSet::new();
                // Hosts whose IPv4 address is being asked for by name.
                let mut asking = HashSet::new();
                while let Ok(ev) = events.recv() {
                    let ServiceEvent::ServiceResolved(service) = ev else {
                        continue;
                    };
                    let props = &service.txt_properties;
                    if props.get_property_val_str("event") != Some(event.as_str())
                        || props.get_property_val_str("node") == Some(me.as_str())
                        || props.get_property_val_str("v") != Some(PROTOCOL_VERSION)
                    {
                        continue;
                    }
                    // Loopback addresses only count when nothing else is offered (a single-host
                    // setup); elsewhere they would lead back to the dialer itself.
                    let v4: Vec<_> = service.get_addresses_v4().into_iter().collect();
                    let usable: Vec<_> = match v4
                        .iter()
                        .filter(|ip| !ip.is_loopback())
                        .copied()
                        .collect::<Vec<_>>()
                    {
                        remote if !remote.is_empty() => remote,
                        _ => v4,
                    };
                    if usable.is_empty() {
                        // Resolved without an IPv4 address: the packet that carried it was
                        // lost (32 gates starting at once overflow a receiver's socket), and
                        // the responders leave the service out of their answers to the next
                        // browse, which names it as known. Ask for the host's addresses.
                        let host = service.get_hostname().to_owned();
                        if asking.insert(host.clone()) {
                            ask_addresses(&resolver, host, service.port, found.clone());
                        }
                        continue;
                    }
                    for ip in usable {
                        let addr = SocketAddr::new(ip.into(), service.port);
                        if announced.insert(addr) && found.send(addr).is_err() {
                            return;
                        }
                    }
                }
            })?;
        Ok(Self { daemon })
    }
}
