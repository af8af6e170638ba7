use std::{net::UdpSocket, time::Duration};

use super::*;

/// A prefix no other test process on this machine uses (namespace names are global).
fn prefix(test: &str) -> String {
    format!("gmn{}{test}", std::process::id())
}

fn skip() -> bool {
    let skip = !available();
    if skip {
        eprintln!("SKIPPED: network-namespace tests need root and iproute2");
    }
    skip
}

/// Runs `f` on a thread that entered the namespace; sockets it makes stay in there.
fn inside<T: Send>(ns: &NsHandle, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            ns.enter().unwrap();
            f()
        })
        .join()
        .unwrap()
    })
}

fn listed(name: &str) -> bool {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .any(|n| n == name)
}

/// Whether a datagram from `tx` gets to `rx` (a few tries: a fresh cable may take a moment).
fn reaches(tx: &UdpSocket, rx: &UdpSocket, to: &str, tries: usize) -> bool {
    let mut buf = [0u8; 16];
    (0..tries).any(|_| {
        let _ = tx.send_to(b"hello", to);
        rx.recv(&mut buf).is_ok_and(|n| &buf[..n] == b"hello")
    })
}

#[test]
fn hosts_on_a_bridge_reach_each_other_until_a_cable_is_cut() {
    if skip() {
        return;
    }
    let p = prefix("cable");
    let hub = Namespace::create(format!("{p}hub")).unwrap();
    hub.add_bridge("br0").unwrap();
    let hosts: Vec<Namespace> = (0..2)
        .map(|i| {
            let host = Namespace::create(format!("{p}h{i}")).unwrap();
            let cidr = format!("10.77.0.{}/24", i + 1);
            hub.plug(&format!("hv{i}"), "br0", &host, "eth0", &cidr)
                .unwrap();
            host
        })
        .collect();
    let rx = inside(&hosts[1].handle().unwrap(), || {
        UdpSocket::bind("10.77.0.2:7000").unwrap()
    });
    let tx = inside(&hosts[0].handle().unwrap(), || {
        UdpSocket::bind("10.77.0.1:0").unwrap()
    });
    rx.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();

    assert!(reaches(&tx, &rx, "10.77.0.2:7000", 25), "over the bridge");
    hub.set_link("hv1", false).unwrap();
    assert!(!reaches(&tx, &rx, "10.77.0.2:7000", 3), "the cable is cut");
    hub.set_link("hv1", true).unwrap();
    assert!(reaches(&tx, &rx, "10.77.0.2:7000", 25), "the cable is back");
    // The machine's own namespace has no such address.
    assert!(UdpSocket::bind("10.77.0.2:7000").is_err());
}

#[test]
fn a_thread_enters_and_the_namespace_goes_on_drop() {
    if skip() {
        return;
    }
    let name = format!("{}ns", prefix("drop"));
    let ns = Namespace::create(name.clone()).unwrap();
    assert!(listed(&name));
    let want = ns.id().unwrap();
    assert_ne!(NsId::of_current_thread().unwrap(), want);
    let got = inside(&ns.handle().unwrap(), || NsId::of_current_thread().unwrap());
    assert_eq!(got, want);
    let out = ns
        .command("ip")
        .args(["-o", "link", "show", "lo"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("UP"),
        "lo is up"
    );
    drop(ns);
    assert!(!listed(&name));
}

#[test]
fn a_failed_step_says_which_command() {
    if skip() {
        return;
    }
    let ns = Namespace::create(format!("{}ns", prefix("fail"))).unwrap();
    let e = ns.set_link("nosuchdev", true).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("ip -n {} link set nosuchdev up: ", ns.name())),
        "{e}"
    );
}

#[test]
fn a_throttled_cable_carries_a_trickle_of_a_burst_until_the_limit_is_lifted() {
    if skip() {
        return;
    }
    let p = prefix("slow");
    let hub = Namespace::create(format!("{p}hub")).unwrap();
    hub.add_bridge("br0").unwrap();
    let a = Namespace::create(format!("{p}h0")).unwrap();
    let b = Namespace::create(format!("{p}h1")).unwrap();
    hub.plug("hv0", "br0", &a, "eth0", "10.77.0.1/24").unwrap();
    hub.plug("hv1", "br0", &b, "eth0", "10.77.0.2/24").unwrap();
    let rx = inside(&b.handle().unwrap(), || {
        UdpSocket::bind("10.77.0.2:7000").unwrap()
    });
    let tx = inside(&a.handle().unwrap(), || {
        UdpSocket::bind("10.77.0.1:0").unwrap()
    });
    rx.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(reaches(&tx, &rx, "10.77.0.2:7000", 25), "over the bridge");
    while rx.recv(&mut [0u8; 16]).is_ok() {} // the tries that got through late

    // 100 datagrams of 500 bytes at once: 50 kB, where the limit lets ~2 kB through at once
    // and queues no more than 100 ms of 64 kbit/s.
    let burst = |tx: &UdpSocket| {
        let payload = [7u8; 500];
        for _ in 0..100 {
            tx.send_to(&payload, "10.77.0.2:7000").unwrap();
        }
        let mut buf = [0u8; 600];
        std::iter::from_fn(|| rx.recv(&mut buf).ok()).count()
    };
    hub.throttle("hv1", "64kbit").unwrap();
    let throttled = burst(&tx);
    assert!(
        (1..50).contains(&throttled),
        "a trickle gets through a throttled cable, not the burst: {throttled} of 100"
    );
    hub.unthrottle("hv1").unwrap();
    assert_eq!(burst(&tx), 100, "the whole burst, once the limit is lifted");
    let e = hub.unthrottle("hv1").unwrap_err();
    assert!(e.to_string().starts_with("ip netns exec "), "{e}");
}

#[test]
fn orphan_pids_are_read_from_the_name() {
    assert_eq!(orphan_pid("gmr12345hub", "gmr"), Some(12345));
    assert_eq!(orphan_pid("gmt77x3a", "gmt"), Some(77));
    assert_eq!(orphan_pid("gmrhub", "gmr"), None, "no pid");
    assert_eq!(orphan_pid("gmn12hub", "gmr"), None, "another kind");
    assert_eq!(
        orphan_pid("gmr99999999999999999999x", "gmr"),
        None,
        "no pid is that big"
    );
}

/// A harness killed with SIGKILL leaves its namespaces; the next one clears them, and only
/// them: a living process's stay.
#[test]
fn namespaces_of_a_dead_process_are_removed_and_a_living_ones_are_not() {
    if skip() {
        return;
    }
    // A process that has exited: its id is free (and, so soon, not yet reused).
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let orphan = format!("gmo{dead}x");
    ip(&["netns", "add", &orphan]).unwrap();
    let mine = Namespace::create(format!("gmo{}x", std::process::id())).unwrap();
    let removed = remove_orphans("gmo").unwrap();
    assert!(removed.contains(&orphan), "{removed:?}");
    assert!(!listed(&orphan));
    assert!(listed(mine.name()), "a living process's namespace stays");
    assert!(!removed.iter().any(|n| n == mine.name()));
}
