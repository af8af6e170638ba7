//! The demo event, set up on first start: keys, a printable batch of tickets, a mesh CA, and
//! a second gate on loopback (static peers, never mDNS) so the mesh and the dashboard have
//! something to show. Its check-in lists: the main entrance takes general admission, a
//! backstage list the crew (the last [`DEMO_CREW`] tickets), so a crew pass at the main
//! entrance is refused `not_on_list`; its ticket list names every holder and order, so staff
//! can find a guest by name.

use std::path::Path;

use anyhow::{Context, Result};
use gatemesh_mesh::fs::write_private;
use gatemesh_ticket::{EventId, TicketId};

use crate::{DeskConfig, StaffEntry, StaffRole};

/// The demo's staff: name, role, PIN (shown on its sign-in screen).
pub const DEMO_STAFF: [(&str, StaffRole, &str); 3] = [
    ("Sam", StaffRole::Staff, "1111"),
    ("Kim", StaffRole::Supervisor, "2222"),
    ("Alex", StaffRole::Manager, "3333"),
];
/// Tickets in the demo batch.
pub const DEMO_TICKETS: usize = 200;
/// Of them, the crew's (the last ones), which the main entrance does not take.
pub const DEMO_CREW: usize = 10;

/// The demo's holders: every first name with every last name, two tickets an order.
const FIRST_NAMES: [&str; 20] = [
    "Ada",
    "Alan",
    "Grace",
    "Edsger",
    "Barbara",
    "Donald",
    "Frances",
    "John",
    "Katherine",
    "Dennis",
    "Radia",
    "Ken",
    "Margaret",
    "Tim",
    "Hedy",
    "Linus",
    "Shafi",
    "Leslie",
    "Sophie",
    "Niklaus",
];
const LAST_NAMES: [&str; 10] = [
    "Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen", "Backus", "Johnson",
    "Ritchie",
];

/// The demo's lists file: general admission at the main entrance, the crew backstage.
fn demo_lists(event: &str) -> serde_json::Value {
    serde_json::json!({
        "event": event, "time_zone": "UTC", "default_product": "GA",
        "products": [
            {"code": "GA", "number": 1, "name": "General admission"},
            {"code": "CREW", "number": 2, "name": "Crew"}
        ],
        "lists": [
            {"id": "main", "name": "Main entrance", "products": ["GA"]},
            {"id": "backstage", "name": "Backstage", "products": ["CREW"]}
        ]
    })
}

pub(crate) fn demo_side_config(root: &Path) -> Result<DeskConfig> {
    let main = DeskConfig::load(root)?.context("the demo is not set up")?;
    let side: DeskConfig = serde_json::from_str(
        &std::fs::read_to_string(root.join("side-gate.json")).context("reading side-gate.json")?,
    )?;
    anyhow::ensure!(
        side.event == main.event,
        "side-gate.json is for another event"
    );
    Ok(side)
}

/// Sets up the demo in `root`: an issuer key, the event, a batch of tickets with a printable
/// PDF and their list, a mesh CA and two gates that find each other on loopback (static
/// peers; no mDNS).
pub fn set_up_demo(root: &Path) -> Result<()> {
    use gatemesh_mesh::identity::Role;
    std::fs::create_dir_all(root)?;
    let date = time::OffsetDateTime::now_utc().date();
    let event = format!(
        "DEMO-{}{:02}{:02}",
        date.year(),
        u8::from(date.month()),
        date.day()
    );
    let eid = EventId::new(&event)?;
    let key = gatemesh_ticket::IssuerKey::generate(None);
    write_private(&root.join("issuer.key.pem"), &key.to_pem()?)?;
    let public = key.public().to_pem();
    std::fs::write(root.join("issuer.pub.pem"), &public)?;

    // The batch: every ticket signed here, listed in tickets.csv, printed in tickets.pdf.
    let tickets = root.join("tickets");
    std::fs::create_dir_all(&tickets)?;
    let mut sheet = gatemesh_qr::SheetWriter::new(&format!("{event} tickets"));
    let lists = demo_lists(&event);
    std::fs::write(
        root.join("lists.json"),
        serde_json::to_string_pretty(&lists)?,
    )?;
    let mut csv = String::from("tid,eid,seat,format,code,product,holder,order\n");
    let iat = time::OffsetDateTime::now_utc().unix_timestamp();
    for i in 0..DEMO_TICKETS {
        let crew = i >= DEMO_TICKETS - DEMO_CREW;
        let seat = gatemesh_ticket::Seat::new(format!(
            "{}-{}",
            (b'A' + (i / 20) as u8) as char,
            i % 20 + 1
        ))?;
        let claims = gatemesh_ticket::Claims {
            tid: TicketId::generate(),
            eid: eid.clone(),
            seat: Some(seat),
            iat: Some(iat),
            nbf: None,
            exp: None,
            product: Some(gatemesh_ticket::Product::Number(
                gatemesh_ticket::ProductNumber::new(if crew { 2 } else { 1 })?,
            )),
        };
        let code = key.sign(&claims, gatemesh_ticket::Format::Gm1)?;
        let symbol = gatemesh_qr::Symbol::encode(&code)?;
        let seat = claims.seat.as_ref().map(|s| s.to_string());
        sheet.add(
            &symbol,
            &gatemesh_qr::TicketLabel {
                event: &event,
                seat: seat.as_deref(),
                tid: claims.tid.as_str(),
                format: "gm1",
            },
        );
        let holder = format!(
            "{} {}",
            FIRST_NAMES[i % FIRST_NAMES.len()],
            LAST_NAMES[(i / FIRST_NAMES.len()) % LAST_NAMES.len()]
        );
        csv.push_str(&format!(
            "{},{},{},gm1,{},{},{holder},D-{}\n",
            claims.tid,
            event,
            seat.unwrap_or_default(),
            code,
            if crew { "CREW" } else { "GA" },
            1000 + i / 2
        ));
    }
    std::fs::write(tickets.join("tickets.csv"), csv)?;
    std::fs::write(tickets.join("tickets.pdf"), sheet.finish())?;

    // The mesh: a CA and two gates on loopback that dial each other.
    let ca = root.join("mesh-ca");
    gatemesh_mesh::pki::write_new_ca(&ca, &event, 30)?;
    gatemesh_mesh::pki::enroll_into(&ca, &root.join("identity"), Role::Gate, "Main-Entrance", 30)?;
    gatemesh_mesh::pki::enroll_into(
        &ca,
        &root.join("side-identity"),
        Role::Gate,
        "Side-Door",
        30,
    )?;
    // Two free loopback UDP ports, both held while they are chosen so they differ.
    let (a, b) = (
        std::net::UdpSocket::bind(("127.0.0.1", 0))?,
        std::net::UdpSocket::bind(("127.0.0.1", 0))?,
    );
    let (main_mesh, side_mesh) = (a.local_addr()?, b.local_addr()?);
    drop((a, b));
    let staff: Vec<StaffEntry> = DEMO_STAFF
        .iter()
        .map(|(name, role, pin)| StaffEntry::new(name, *role, pin))
        .collect::<Result<_, _>>()?;
    // Loopback and static peers: the demo never starts mDNS.
    let main = DeskConfig {
        capacity: Some(DEMO_TICKETS as u32),
        identity_dir: Some(root.join("identity")),
        mesh_bind: main_mesh,
        peers: vec![side_mesh],
        discovery: false,
        demo: true,
        check_in: Some(serde_json::from_value(lists)?),
        lists: vec![gatemesh_wire::ListId::parse("main").context("the main list's id")?],
        manifest: Some(tickets.join("tickets.csv")),
        ..DeskConfig::new_event(
            event.clone(),
            "Main-Entrance".into(),
            vec![public.clone()],
            staff.clone(),
        )
    };
    let side = DeskConfig {
        gate_name: "Side-Door".into(),
        identity_dir: Some(root.join("side-identity")),
        mesh_bind: side_mesh,
        peers: vec![main_mesh],
        demo: false,
        ..main.clone()
    };
    std::fs::write(
        root.join("side-gate.json"),
        serde_json::to_string_pretty(&side)?,
    )?;
    main.save(root)?;
    Ok(())
}
